"""A real ``ksteward serve`` subprocess on free loopback ports, with its own data directory and log file."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import time
from collections.abc import Mapping
from pathlib import Path

from bench._harness.cpu import process_cpu_seconds, process_status_kib
from bench._harness.wire import CLIENT_ID, HOST, FrameClient, encode_request, free_ports
from ksteward.protocol.apis import ApiKey

REPO = Path(__file__).resolve().parents[2]
CONFIG_FILE = REPO / "config" / "server.properties"  # PLAINTEXT, no authorizer
SASL_CONFIG = REPO / "config" / "sasl.properties"  # SASL_PLAINTEXT, StandardAuthorizer, super user admin
READY_LINE = "is serving on"


class ServerError(RuntimeError):
    """The server exited early, did not become ready in time, or did not stop cleanly."""


class ServerProcess:
    """One ``ksteward serve`` process on 127.0.0.1 with its own data directory and log file.

    The process is started directly (``python -m ksteward.cli.main``), so its pid is the server's
    and ``/proc/<pid>`` describes the server itself. Its stderr is drained into ``log_path`` by a
    task that also notices the ``is serving on`` line, and when each ``watch`` text first appears
    (``seen``). ``sasl`` runs ``config/sasl.properties`` on a SASL_PLAINTEXT listener;
    ``advertise_port`` makes the node advertise another port (a counting proxy's), so that clients
    which follow the Metadata answer keep going through the proxy.
    """

    def __init__(
        self,
        workdir: Path,
        name: str,
        *,
        data_dir: Path | None = None,
        ports: tuple[int, int] | None = None,
        overrides: Mapping[str, str] | None = None,
        sasl: bool = False,
        advertise_port: int | None = None,
        watch: tuple[str, ...] = (),
    ) -> None:
        self.name = name
        self.workdir = workdir
        self.data_dir = data_dir or workdir / f"{name}-data"
        self.log_path = workdir / f"{name}.log"
        port, controller_port = ports or free_ports(2)
        self.port, self.controller_port = port, controller_port
        self.extra = dict(overrides or {})
        self.sasl = sasl
        self.advertise_port = advertise_port
        self.watch = watch
        self.python_args: tuple[str, ...] = ()  # before ``-m ksteward.cli.main`` (``--profile``: cProfile)
        self.seen: dict[str, float] = {}  # each ``watch`` text: seconds from spawn to its first log line
        self.proc: asyncio.subprocess.Process | None = None
        self.spawned_at = 0.0
        self._ready = asyncio.Event()
        self._drain: asyncio.Task[None] | None = None

    @property
    def bootstrap(self) -> str:
        return f"{HOST}:{self.advertise_port or self.port}"

    def command(self) -> list[str]:
        protocol = "SASL_PLAINTEXT" if self.sasl else "PLAINTEXT"
        overrides = {
            "listeners": f"{protocol}://{HOST}:{self.port},CONTROLLER://{HOST}:{self.controller_port}",
            "advertised.listeners": f"{protocol}://{self.bootstrap}",
            "metadata.log.dir": str(self.data_dir),
            **self.extra,
        }
        config = SASL_CONFIG if self.sasl else CONFIG_FILE
        cmd = [sys.executable, *self.python_args, "-m", "ksteward.cli.main", "serve", "--config", str(config)]
        for key, value in overrides.items():
            cmd += ["--override", f"{key}={value}"]
        return cmd

    @property
    def pid(self) -> int:
        assert self.proc is not None, "not started"
        return self.proc.pid

    async def spawn(self) -> None:
        self._ready = asyncio.Event()
        self.seen = {}
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        self.spawned_at = time.perf_counter()
        self.proc = await asyncio.create_subprocess_exec(
            *self.command(),
            cwd=self.workdir,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE,
            env=env,
        )
        _LIVE.add(self)
        self._drain = asyncio.get_running_loop().create_task(self._drain_stderr(self.proc))

    async def _drain_stderr(self, proc: asyncio.subprocess.Process) -> None:
        assert proc.stderr is not None
        with open(self.log_path, "ab") as log:
            log.write(f"===== {' '.join(self.command())}\n".encode())
            while True:
                line = await proc.stderr.readline()
                if not line:
                    return
                log.write(line)
                log.flush()
                if READY_LINE.encode() in line:
                    self._ready.set()
                for text in self.watch:
                    if text not in self.seen and text.encode() in line:
                        self.seen[text] = time.perf_counter() - self.spawned_at

    async def wait_ready(self, timeout: float) -> float:
        """Seconds from spawn until the ``is serving on`` line; ServerError if it exits or times out."""
        assert self.proc is not None and self._drain is not None
        ready = asyncio.ensure_future(self._ready.wait())
        exited = asyncio.ensure_future(self.proc.wait())
        try:
            done, _ = await asyncio.wait({ready, exited}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        finally:
            ready.cancel()
            if not exited.done():
                exited.cancel()
        if self._ready.is_set():
            return time.perf_counter() - self.spawned_at
        if exited in done:
            await self._drain
            raise ServerError(f"{self.name} exited with {self.proc.returncode} before it was ready:\n{self.log_tail()}")
        raise ServerError(f"{self.name} was not ready after {timeout:.0f}s:\n{self.log_tail()}")

    async def start(self, timeout: float = 60.0, *, probe: bool = True) -> float:
        """Spawn and wait for the ready line; returns the seconds that took. With ``probe`` (the
        default), also wait for an ApiVersions round trip: the server installs its SIGTERM handler
        only after it prints the ready line, so a SIGTERM sent on the line alone can kill it."""
        await self.spawn()
        ready_s = await self.wait_ready(timeout)
        if probe:
            await self.api_versions(timeout)
        return ready_s

    async def api_versions(self, timeout: float = 60.0) -> None:
        """One ApiVersions v3 round trip on a new connection; ServerError unless it succeeds."""
        client = await FrameClient.connect(self.port)
        try:
            values = {"client_software_name": CLIENT_ID, "client_software_version": "1"}
            payload = await client.request(encode_request(ApiKey.API_VERSIONS, 3, values), timeout)
        finally:
            await client.aclose()
        if payload[4:6] != b"\x00\x00":
            raise ServerError(f"{self.name}: ApiVersions failed with error code {payload[4:6].hex()}")

    def cpu_seconds(self) -> float:
        """User plus system CPU time of the server process (all its threads) so far."""
        return process_cpu_seconds(self.pid)

    def status_kib(self, key: str) -> int:
        """A ``/proc/<pid>/status`` memory line (``VmHWM``, ``VmRSS``) in KiB."""
        return process_status_kib(self.pid, key)

    async def stop(self, timeout: float = 180.0) -> float:
        """SIGTERM and wait; returns the seconds it took. Kills it and raises if it does not exit 0."""
        if self.proc is None or self.proc.returncode is not None:
            return 0.0
        started = time.perf_counter()
        os.kill(self.pid, signal.SIGTERM)
        try:
            rc = await asyncio.wait_for(self.proc.wait(), timeout)
        except TimeoutError:
            self.kill()
            raise ServerError(f"{self.name} did not stop within {timeout:.0f}s after SIGTERM") from None
        finally:
            await self._drained()
        _LIVE.discard(self)
        if rc != 0:
            raise ServerError(f"{self.name} exited with {rc} after SIGTERM:\n{self.log_tail()}")
        return time.perf_counter() - started

    async def crash(self) -> None:
        """SIGKILL and reap (a crash: nothing is flushed or snapshotted on the way out)."""
        self.kill()
        assert self.proc is not None
        await asyncio.wait_for(self.proc.wait(), 60)
        await self._drained()

    async def _drained(self) -> None:
        if self._drain is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._drain, 5)

    def kill(self) -> None:
        """SIGKILL if still running (the last resort of cleanup)."""
        if self.proc is not None and self.proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self.proc.kill()
        _LIVE.discard(self)

    def pause(self) -> None:
        """SIGSTOP: the process keeps its sockets and files but takes no CPU until :meth:`resume`."""
        assert self.proc is not None and self.proc.returncode is None
        self.proc.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        """SIGCONT after :meth:`pause`."""
        if self.proc is not None and self.proc.returncode is None:
            self.proc.send_signal(signal.SIGCONT)

    def log_errors(self) -> list[str]:
        """The server's ERROR and CRITICAL log lines so far, without timestamps, each distinct line
        once with its count (a clean run has none)."""
        if not self.log_path.exists():
            return []
        counts: dict[str, int] = {}
        for line in self.log_path.read_text(errors="replace").splitlines():
            if " ERROR " in line or " CRITICAL " in line:
                text = line.split("] ", 1)[-1][:160]
                counts[text] = counts.get(text, 0) + 1
        return [f"{n}x {text}" for text, n in counts.items()]

    def log_tail(self, lines: int = 30) -> str:
        if not self.log_path.exists():
            return ""
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])


_LIVE: set[ServerProcess] = set()


def kill_all_servers() -> None:
    """Kill every server this process started and did not stop (called on the way out)."""
    for server in list(_LIVE):
        server.kill()
