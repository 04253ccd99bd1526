"""``--profile``, a diagnosis and not a measurement: a ksteward ``Server`` in a thread of this process,
profiled with cProfile on the server's thread alone while the benchmark sends it requests."""

from __future__ import annotations

import asyncio
import cProfile
import io
import os
import pstats
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import kio

import ksteward
from bench._harness.server import CONFIG_FILE, SASL_CONFIG, ServerError
from bench._harness.wire import HOST, REQUEST_TIMEOUT_S, FrameClient, free_ports

NOT_A_MEASUREMENT = ("PROFILE, NOT A MEASUREMENT: the server runs in this process, in a thread, under cProfile. "
                     "Its times are inflated; only the split between functions means something.")  # fmt: skip


class InProcessServer:
    """PROFILING ONLY: a ksteward ``Server`` in a thread of this process, so cProfile can see inside it.

    It shares this process's GIL with the load generator, and cProfile slows every Python call, so its
    times are not measurements; only the split between functions means something."""

    name = "in-process (profiling only)"

    def __init__(self, workdir: Path, *, sasl: bool) -> None:
        from ksteward.cli.serve import load_config

        self.port, self.controller_port = free_ports(2)
        protocol = "SASL_PLAINTEXT" if sasl else "PLAINTEXT"
        overrides = [
            f"listeners={protocol}://{HOST}:{self.port},CONTROLLER://{HOST}:{self.controller_port}",
            f"advertised.listeners={protocol}://{HOST}:{self.port}",
            f"metadata.log.dir={workdir / 'in-process-data'}",
        ]
        self.config = load_config(str(SASL_CONFIG if sasl else CONFIG_FILE), overrides)
        self.loop: asyncio.AbstractEventLoop | None = None
        self.server: Any = None
        self.thread_id = 0
        self.failure: BaseException | None = None
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, name="in-process-ksteward", daemon=True)

    def start(self, timeout: float = 120.0) -> None:
        self._thread.start()
        if not self._ready.wait(timeout) or self.failure is not None:
            raise ServerError(f"the in-process server did not start: {self.failure!r}")

    def _run(self) -> None:
        from ksteward.server.app import Server

        async def serve() -> None:
            self.loop = asyncio.get_running_loop()
            self.server = Server(self.config)
            await self.server.start()
            self.thread_id = threading.get_ident()
            self._ready.set()
            await self.server.serve_until_stopped()

        try:
            asyncio.run(serve())
        except BaseException as exc:  # reported by start() or stop()
            self.failure = exc
            self._ready.set()

    def cpu_seconds(self) -> float:
        """CPU time of the server's thread alone."""
        return time.clock_gettime(time.pthread_getcpuclockid(self.thread_id))

    def in_thread(self, fn: Callable[[], Any]) -> None:
        """Run ``fn`` on the server's thread (cProfile's enable and disable act on the calling thread)."""
        assert self.loop is not None
        done = threading.Event()

        def call() -> None:
            try:
                fn()
            finally:
                done.set()

        self.loop.call_soon_threadsafe(call)
        if not done.wait(30):
            raise ServerError("the in-process server's loop did not respond")

    def stop(self) -> None:
        if self.loop is not None and self.server is not None and self._thread.is_alive():
            self.loop.call_soon_threadsafe(self.server.request_stop)
        self._thread.join(120)


def profile_text(profile: cProfile.Profile | Path, lines: int) -> str:
    """The top ``lines`` functions by own time and by cumulative time, with shorter paths."""
    out = io.StringIO()
    stats = pstats.Stats(str(profile) if isinstance(profile, Path) else profile, stream=out)
    stats.sort_stats("tottime").print_stats(lines)
    stats.sort_stats("cumulative").print_stats(lines)
    text = out.getvalue()
    # Shorter paths: ksteward/..., kio/..., asyncio/... (strip_dirs would drop the package and make
    # broker/acls.py and controller/acls.py look alike).
    prefixes = {str(Path(ksteward.__file__).parent.parent), str(Path(os.__file__).parent)}
    prefixes |= {str(Path(m.__file__).parent.parent) for m in (kio,) if m.__file__}
    for prefix in sorted(prefixes, key=len, reverse=True):
        text = text.replace(prefix + "/", "")
    return "\n".join(line for line in text.splitlines() if line.strip())


async def profile_steps(
    server: InProcessServer, client: FrameClient, steps: Sequence[tuple[str, Sequence[bytes]]], lines: int
) -> None:
    """Per step, profile the server's thread while ``client`` sends the step's frames one after the
    other; print the wall time, the server thread's CPU and the profile."""
    for title, frames in steps:
        profile = cProfile.Profile()
        await asyncio.to_thread(server.in_thread, profile.enable)
        t0, cpu0 = time.perf_counter(), server.cpu_seconds()
        payload = b""
        for frame in frames:
            payload = await client.request(frame, REQUEST_TIMEOUT_S)
            if payload[:4] != frame[8:12]:
                raise ServerError("correlation id mismatch")
        wall, cpu = time.perf_counter() - t0, server.cpu_seconds() - cpu0
        await asyncio.to_thread(server.in_thread, profile.disable)
        print(f"\n== PROFILE: {title}: {wall:.3f}s under cProfile, server thread CPU {cpu:.3f}s, "
              f"response {len(payload) + 4:,} bytes", flush=True)  # fmt: skip
        print(profile_text(profile, lines))
