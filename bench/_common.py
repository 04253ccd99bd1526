"""Shared pieces of the benchmarks: a ``ksteward serve`` subprocess, a lean asyncio wire client,
request encoding, closed-loop load, statistics, tables and machine facts.

The client is deliberately thin so that the load generator (which shares the machine's cores with
the server) costs as little as possible: requests are encoded with kio once, before the clock
starts, and the client only writes bytes, splits response frames and compares correlation ids.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import io
import os
import platform
import resource
import signal
import socket
import struct
import sys
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from kio.index import load_request_schema, load_response_schema
from kio.serial import entity_reader, entity_writer

from ksteward.protocol.build import build

REPO = Path(__file__).resolve().parents[1]
CONFIG_FILE = REPO / "config" / "server.properties"
HOST = "127.0.0.1"
READY_LINE = "is serving on"
CLIENT_ID = "ksteward-bench"
_SIZE = struct.Struct(">i")
_CLK_TCK = os.sysconf("SC_CLK_TCK")


# --- ports and processes ---------------------------------------------------------------------------


def free_ports(count: int) -> list[int]:
    """Distinct ports that were free on 127.0.0.1 a moment ago."""
    socks: list[socket.socket] = []
    try:
        for _ in range(count):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind((HOST, 0))
            socks.append(s)
        return [int(s.getsockname()[1]) for s in socks]
    finally:
        for s in socks:
            s.close()


class ServerError(RuntimeError):
    """The server exited early, did not become ready in time, or did not stop cleanly."""


class ServerProcess:
    """One ``ksteward serve`` process on 127.0.0.1 with its own data directory and log file.

    The process is started directly (``python -m ksteward.cli.main``), so its pid is the server's
    and ``/proc/<pid>`` describes the server itself. Its stderr is drained into ``log_path`` by a
    task that also notices the ``is serving on`` line.
    """

    def __init__(
        self,
        workdir: Path,
        name: str,
        *,
        data_dir: Path | None = None,
        ports: tuple[int, int] | None = None,
        overrides: Mapping[str, str] | None = None,
    ) -> None:
        self.name = name
        self.workdir = workdir
        self.data_dir = data_dir or workdir / f"{name}-data"
        self.log_path = workdir / f"{name}.log"
        port, controller_port = ports or free_ports(2)
        self.port, self.controller_port = port, controller_port
        self.extra = dict(overrides or {})
        self.proc: asyncio.subprocess.Process | None = None
        self.spawned_at = 0.0
        self._ready = asyncio.Event()
        self._drain: asyncio.Task[None] | None = None

    def command(self) -> list[str]:
        overrides = {
            "listeners": f"PLAINTEXT://{HOST}:{self.port},CONTROLLER://{HOST}:{self.controller_port}",
            "advertised.listeners": f"PLAINTEXT://{HOST}:{self.port}",
            "metadata.log.dir": str(self.data_dir),
            **self.extra,
        }
        cmd = [sys.executable, "-m", "ksteward.cli.main", "serve", "--config", str(CONFIG_FILE)]
        for key, value in overrides.items():
            cmd += ["--override", f"{key}={value}"]
        return cmd

    @property
    def pid(self) -> int:
        assert self.proc is not None, "not started"
        return self.proc.pid

    async def spawn(self) -> None:
        self._ready = asyncio.Event()
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
            frame = encode_request(18, 3, {"client_software_name": CLIENT_ID, "client_software_version": "1"})
            payload = await client.request(frame, timeout)
        finally:
            await client.aclose()
        if payload[4:6] != b"\x00\x00":
            raise ServerError(f"{self.name}: ApiVersions failed with error code {payload[4:6].hex()}")

    def cpu_seconds(self) -> float:
        """User plus system CPU time of the server process (all its threads) so far."""
        fields = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / _CLK_TCK

    def status_kib(self, key: str) -> int:
        """A ``/proc/<pid>/status`` memory line (``VmHWM``, ``VmRSS``) in KiB."""
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1])
        raise KeyError(key)

    async def stop(self, timeout: float = 180.0) -> float:
        """SIGTERM and wait; returns the seconds it took. Kills it and raises if it does not exit 0."""
        if self.proc is None or self.proc.returncode is not None:
            return 0.0
        started = time.perf_counter()
        self.proc.send_signal(signal.SIGTERM)
        try:
            rc = await asyncio.wait_for(self.proc.wait(), timeout)
        except TimeoutError:
            self.kill()
            raise ServerError(f"{self.name} did not stop within {timeout:.0f}s after SIGTERM") from None
        finally:
            if self._drain is not None:
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(self._drain, 5)
        _LIVE.discard(self)
        if rc != 0:
            raise ServerError(f"{self.name} exited with {rc} after SIGTERM:\n{self.log_tail()}")
        return time.perf_counter() - started

    def kill(self) -> None:
        """SIGKILL if still running (the last resort of cleanup)."""
        if self.proc is not None and self.proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self.proc.kill()
        _LIVE.discard(self)

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


# --- encoding --------------------------------------------------------------------------------------


@cache
def _writer(cls: Any) -> Any:
    return entity_writer(cls)


@cache
def _reader(cls: Any) -> Any:
    return entity_reader(cls)


def encode_request(api_key: int, api_version: int, values: Mapping[str, Any], correlation_id: int = 0) -> bytes:
    """A whole request frame: int32 length, header (v1 or v2 as the version dictates), body."""
    cls: Any = load_request_schema(api_key, api_version)
    header_cls: Any = cls.__header_schema__
    out = io.BytesIO()
    _writer(header_cls)(
        out,
        header_cls(
            request_api_key=api_key,
            request_api_version=api_version,
            correlation_id=correlation_id,
            client_id=CLIENT_ID,
        ),
    )
    _writer(cls)(out, build(cls, values))
    payload = out.getvalue()
    return _SIZE.pack(len(payload)) + payload


def with_correlation_id(frame: bytes, correlation_id: int) -> bytes:
    """``frame`` with its correlation id (bytes 4..8 of the header, 8..12 of the frame) replaced."""
    return frame[:8] + _SIZE.pack(correlation_id) + frame[12:]


def decode_response(api_key: int, api_version: int, payload: bytes) -> tuple[int, Any]:
    """(correlation id, body) of one response payload (the frame without its length)."""
    cls: Any = load_response_schema(api_key, api_version)
    header, offset = _reader(cls.__header_schema__)(payload, 0)
    body, _ = _reader(cls)(payload, offset)
    return int(header.correlation_id), body


# --- the client ------------------------------------------------------------------------------------


class FrameClient(asyncio.Protocol):
    """One connection; requests are answered in order, so pending futures form a FIFO queue."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self._buf = bytearray()
        self._need = 4
        self._pending: deque[asyncio.Future[bytes]] = deque()
        self._closed: BaseException | None = None
        self._lost = asyncio.Event()

    @classmethod
    async def connect(cls, port: int, host: str = HOST) -> FrameClient:
        loop = asyncio.get_running_loop()
        _, protocol = await loop.create_connection(cls, host, port)
        return protocol

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        sock = transport.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def data_received(self, data: bytes) -> None:
        buf = self._buf
        buf += data
        while len(buf) >= self._need:
            (size,) = _SIZE.unpack_from(buf, 0)
            if len(buf) < 4 + size:
                self._need = 4 + size
                return
            payload = bytes(buf[4 : 4 + size])
            del buf[: 4 + size]
            self._need = 4
            if self._pending:
                fut = self._pending.popleft()
                if not fut.done():
                    fut.set_result(payload)

    def connection_lost(self, exc: Exception | None) -> None:
        self._closed = exc or ConnectionError("connection closed")
        self._lost.set()
        while self._pending:
            fut = self._pending.popleft()
            if not fut.done():
                fut.set_exception(self._closed)

    def send(self, frame: bytes) -> asyncio.Future[bytes]:
        """Write one request frame; the future resolves with the response payload."""
        fut: asyncio.Future[bytes] = asyncio.get_running_loop().create_future()
        if self._closed is not None:
            fut.set_exception(self._closed)
            return fut
        self._pending.append(fut)
        assert self.transport is not None
        self.transport.write(frame)
        return fut

    async def request(self, frame: bytes, timeout: float = 60.0) -> bytes:
        return await asyncio.wait_for(self.send(frame), timeout)

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()

    async def aclose(self, timeout: float = 10.0) -> None:
        """Close and wait until the socket is closed on our side (so the server sees the FIN before
        anything the caller does next, such as stopping the server)."""
        self.close()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._lost.wait(), timeout)


# --- closed-loop load ------------------------------------------------------------------------------


def client_cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


@dataclass
class LoadResult:
    """One measured cell: successes only count towards throughput and latency."""

    requests: int  # sent (and answered)
    truncated: bool  # the time budget ran out before every request was sent
    ok: int
    failed: int
    wall_s: float
    latencies_ns: list[int]
    client_cpu_s: float
    server_cpu_s: float

    @property
    def rate(self) -> float:
        return self.ok / self.wall_s if self.wall_s > 0 else 0.0


async def closed_loop(
    server: ServerProcess,
    work: Sequence[Sequence[bytes]],
    *,
    check: Callable[[bytes], bool] | None = None,
    budget_s: float = 120.0,
) -> LoadResult:
    """Drive ``len(work)`` connections at once; connection ``i`` sends the frames of ``work[i]``
    one at a time (send, await the response, repeat: one request in flight per connection, as the
    server handles a connection's requests one by one anyway).

    A response is a success when its correlation id matches the request's and, if given,
    ``check(payload)`` is true; ``check`` runs after the clock stops, so it costs the measurement
    nothing. Failures count in ``failed`` and their latencies are left out. After ``budget_s`` no
    connection sends another request (``truncated`` says so); one response that takes longer
    than the budget plus a minute is an error.
    """
    clients = [await FrameClient.connect(server.port) for _ in work]
    go = asyncio.Event()
    samples: list[tuple[list[int], list[bytes]]] = [([], []) for _ in work]
    deadline_ns = 0

    async def one(client: FrameClient, frames: Sequence[bytes], latencies: list[int], payloads: list[bytes]) -> None:
        clock = time.perf_counter_ns
        await go.wait()
        for frame in frames:
            started = clock()
            if started > deadline_ns:
                return
            payload = await client.send(frame)
            latencies.append(clock() - started)
            payloads.append(payload)

    tasks = [
        asyncio.ensure_future(one(c, w, lat, pay)) for c, w, (lat, pay) in zip(clients, work, samples, strict=True)
    ]
    try:
        server_cpu0, client_cpu0 = server.cpu_seconds(), client_cpu_seconds()
        started = time.perf_counter()
        deadline_ns = time.perf_counter_ns() + int(budget_s * 1e9)
        go.set()
        await asyncio.wait_for(asyncio.gather(*tasks), budget_s + 60)
        wall = time.perf_counter() - started
        server_cpu, client_cpu = server.cpu_seconds() - server_cpu0, client_cpu_seconds() - client_cpu0
    finally:
        for t in tasks:
            t.cancel()
        await asyncio.gather(*(c.aclose() for c in clients))
    ok_latencies: list[int] = []
    failed = 0
    for frames, (latencies, payloads) in zip(work, samples, strict=True):
        for frame, latency, payload in zip(frames, latencies, payloads, strict=False):
            if payload[:4] == frame[8:12] and (check is None or check(payload)):
                ok_latencies.append(latency)
            else:
                failed += 1
    sent = sum(len(lat) for lat, _ in samples)
    return LoadResult(
        requests=sent,
        truncated=sent < sum(len(w) for w in work),
        ok=len(ok_latencies),
        failed=failed,
        wall_s=wall,
        latencies_ns=ok_latencies,
        client_cpu_s=client_cpu,
        server_cpu_s=server_cpu,
    )


def merge(parts: Sequence[LoadResult]) -> LoadResult:
    """One result from several rounds of the same cell: counts, times and samples add up."""
    return LoadResult(
        requests=sum(r.requests for r in parts),
        truncated=any(r.truncated for r in parts),
        ok=sum(r.ok for r in parts),
        failed=sum(r.failed for r in parts),
        wall_s=sum(r.wall_s for r in parts),
        latencies_ns=[x for r in parts for x in r.latencies_ns],
        client_cpu_s=sum(r.client_cpu_s for r in parts),
        server_cpu_s=sum(r.server_cpu_s for r in parts),
    )


def split(items: Sequence[bytes], parts: int) -> list[list[bytes]]:
    """Deal ``items`` round-robin into ``parts`` lists."""
    return [list(items[i::parts]) for i in range(parts)]


# --- statistics, tables, facts ---------------------------------------------------------------------


def percentile_ms(latencies_ns: Sequence[int], q: float) -> float:
    """Nearest-rank percentile (``q`` in 0..100) of nanosecond samples, in milliseconds."""
    if not latencies_ns:
        return float("nan")
    ordered = sorted(latencies_ns)
    rank = max(1, min(len(ordered), round(q / 100 * len(ordered) + 0.5)))
    return ordered[rank - 1] / 1e6


def median(values: Sequence[float]) -> float:
    ordered = sorted(values)
    n = len(ordered)
    return ordered[n // 2] if n % 2 else (ordered[n // 2 - 1] + ordered[n // 2]) / 2


def table(title: str, columns: Sequence[tuple[str, str]], rows: Sequence[Mapping[str, object]]) -> str:
    """A plain text table of ``rows`` (dicts); ``columns`` are (header, key) pairs; numbers right-aligned."""
    cells = [[_fmt(row.get(key, "")) for _, key in columns] for row in rows]
    headers = [h for h, _ in columns]
    widths = [max(len(h), *(len(r[i]) for r in cells)) for i, h in enumerate(headers)]
    lines = [title, "  ".join(h.rjust(w) for h, w in zip(headers, widths, strict=True))]
    lines.append("  ".join("-" * w for w in widths))
    for row in cells:
        lines.append("  ".join(c.rjust(w) for c, w in zip(row, widths, strict=True)))
    return "\n".join(lines)


def _fmt(value: object) -> str:
    if value is None or isinstance(value, bool):
        return "-" if value is None else "yes" if value else "no"
    if isinstance(value, float):
        if value != value:  # NaN
            return "-"
        if abs(value) >= 1000:
            return f"{value:,.0f}"
        if abs(value) >= 100:
            return f"{value:.1f}"
        return f"{value:.3g}" if abs(value) < 1 else f"{value:.2f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def machine_facts() -> dict[str, Any]:
    model = ""
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    mem_kib = 0
    with contextlib.suppress(OSError, ValueError, IndexError):
        mem_kib = int(Path("/proc/meminfo").read_text().splitlines()[0].split()[1])
    return {
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "cpu_count": os.cpu_count(),
        "cpu_affinity": len(os.sched_getaffinity(0)),
        "cpu_model": model,
        "mem_total_mib": mem_kib // 1024,
        "python": sys.version.split()[0],
        "python_implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "loadavg_at_start": list(os.getloadavg()),
    }


def git_dirty() -> bool | None:
    """Whether the working tree differs from HEAD (the run then measured uncommitted code)."""
    import subprocess

    try:
        out = subprocess.run(["git", "status", "--porcelain"], cwd=REPO, capture_output=True, text=True,
                             timeout=30, check=True).stdout  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return None
    return bool(out.strip())


def git_head() -> str | None:
    """The commit the run measured, read from ``.git`` without running git."""
    head = REPO / ".git" / "HEAD"
    try:
        ref = head.read_text().strip()
        return (head.parent / ref[5:]).read_text().strip() if ref.startswith("ref: ") else ref
    except OSError:
        return None
