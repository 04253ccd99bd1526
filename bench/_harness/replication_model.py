"""A minimal model of one commit's path, to measure what this machine allows (``bench.failover``'s ``floor``).

Four small asyncio processes replay the shape of a KRaft commit with none of ksteward's code: a single voter
(read a request, do ``leader_us`` of CPU work, append, fdatasync, answer); and a leader of three (the same work,
then the record pushed to two followers, its own fdatasync, and the answer once one follower acknowledged it)
with two followers (``follower_us`` of CPU work, append, fdatasync, acknowledge). ``ack_us`` is CPU work the
leader does per acknowledgement (ksteward's leader decodes and answers a Fetch there). The work is a busy loop,
so it takes a core as Python code would. The ratio of the two medians, with no work at all on the followers,
is the floor of the three-voter / one-voter commit latency on this machine; adding work shows how fast it grows.

Run a process: ``python -m bench._harness.replication_model single|leader|follower ...`` (``measure`` does).
"""

from __future__ import annotations

import asyncio
import os
import socket
import statistics
import struct
import subprocess
import sys
import time
from pathlib import Path

from bench._harness.wire import free_ports

_REQUEST = b"x" * 16
_HEADER = struct.Struct(">qi")  # offset, record length
_ACK = struct.Struct(">q")


def _busy(seconds: float) -> None:
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


class _Log:
    def __init__(self, path: str) -> None:
        self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND, 0o644)
        self.end = 0

    def append_and_sync(self, record: bytes) -> int:
        os.write(self.fd, record)
        os.fdatasync(self.fd)
        self.end += 1
        return self.end


async def _single(port: int, directory: str, work_s: float) -> None:
    log = _Log(f"{directory}/single.log")

    class Server(asyncio.Protocol):
        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            self.transport: asyncio.Transport = transport  # type: ignore[assignment]

        def data_received(self, data: bytes) -> None:
            _busy(work_s)
            log.append_and_sync(data * 12)
            self.transport.write(_REQUEST)

    server = await asyncio.get_running_loop().create_server(Server, "127.0.0.1", port)
    await server.serve_forever()


async def _leader(port: int, follower_port: int, directory: str, work_s: float, ack_s: float) -> None:
    log = _Log(f"{directory}/leader.log")
    followers: list[asyncio.Transport] = []
    waiting: dict[int, asyncio.Transport] = {}
    state = {"flushed": 0, "acked": 0}

    def commit() -> None:
        high_watermark = min(state["flushed"], state["acked"])  # the leader and one follower: a majority of 3
        for offset in [o for o in waiting if o <= high_watermark]:
            waiting.pop(offset).write(_REQUEST)

    class Follower(asyncio.Protocol):
        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            followers.append(transport)  # type: ignore[arg-type]
            self.buffer = b""

        def data_received(self, data: bytes) -> None:
            self.buffer += data
            while len(self.buffer) >= _ACK.size:
                (offset,) = _ACK.unpack_from(self.buffer)
                self.buffer = self.buffer[_ACK.size :]
                _busy(ack_s)
                state["acked"] = max(state["acked"], offset)
                commit()

    class Client(asyncio.Protocol):
        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            self.transport: asyncio.Transport = transport  # type: ignore[assignment]

        def data_received(self, data: bytes) -> None:
            _busy(work_s)
            record = data * 12
            offset = log.end + 1
            waiting[offset] = self.transport
            frame = _HEADER.pack(offset, len(record)) + record
            for follower in followers:
                follower.write(frame)  # pushed before the leader's own fsync, as ksteward's leader does
            state["flushed"] = log.append_and_sync(record)
            commit()

    loop = asyncio.get_running_loop()
    clients = await loop.create_server(Client, "127.0.0.1", port)
    peers = await loop.create_server(Follower, "127.0.0.1", follower_port)
    await asyncio.gather(clients.serve_forever(), peers.serve_forever())


async def _follower(leader_port: int, directory: str, index: int, work_s: float) -> None:
    log = _Log(f"{directory}/follower-{index}.log")

    class Replica(asyncio.Protocol):
        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            self.transport: asyncio.Transport = transport  # type: ignore[assignment]
            self.buffer = b""

        def data_received(self, data: bytes) -> None:
            self.buffer += data
            while len(self.buffer) >= _HEADER.size:
                offset, size = _HEADER.unpack_from(self.buffer)
                if len(self.buffer) < _HEADER.size + size:
                    return
                record = self.buffer[_HEADER.size : _HEADER.size + size]
                self.buffer = self.buffer[_HEADER.size + size :]
                _busy(work_s)
                log.append_and_sync(record)  # durable before it is acknowledged, as a voter's Fetch
                self.transport.write(_ACK.pack(offset))

    loop = asyncio.get_running_loop()
    deadline = loop.time() + 10.0
    while True:
        try:
            await loop.create_connection(Replica, "127.0.0.1", leader_port)
            break
        except OSError:
            if loop.time() > deadline:
                raise
            await asyncio.sleep(0.01)
    print("connected", flush=True)  # measure() waits for both followers before the first commit
    await asyncio.Event().wait()


def _connect(port: int, timeout_s: float = 10.0) -> socket.socket:
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            sock = socket.create_connection(("127.0.0.1", port), timeout=timeout_s)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            return sock
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.01)


def _round(sock: socket.socket, commits: int) -> list[float]:
    out = []
    for _ in range(commits):
        started = time.perf_counter()
        sock.sendall(_REQUEST)
        got = b""
        while len(got) < len(_REQUEST):
            chunk = sock.recv(64)
            if not chunk:
                raise ConnectionError("a model process went away")
            got += chunk
        out.append((time.perf_counter() - started) * 1000)
    return out


def measure(directory: Path, *, leader_us: float, follower_us: float, ack_us: float, commits: int,
            rounds: int) -> tuple[float, float]:  # fmt: skip
    """Median commit latency in ms of (one voter, three voters), in ``rounds`` interleaved rounds."""
    directory.mkdir(parents=True, exist_ok=True)
    single_port, leader_port, follower_port = free_ports(3)
    run = [sys.executable, "-m", "bench._harness.replication_model"]
    d = str(directory)
    leader_args = ["leader", str(leader_port), str(follower_port), d, str(leader_us), str(ack_us)]
    procs = [subprocess.Popen([*run, "single", str(single_port), d, str(leader_us)]),
             subprocess.Popen([*run, *leader_args])]  # fmt: skip
    try:
        single, leader = _connect(single_port), _connect(leader_port)
        followers = [subprocess.Popen([*run, "follower", str(follower_port), d, str(i), str(follower_us)],
                                      stdout=subprocess.PIPE, text=True) for i in (0, 1)]  # fmt: skip
        procs += followers
        for follower in followers:  # both connected before the first record, which only connected ones get
            assert follower.stdout is not None and follower.stdout.readline().strip() == "connected"
        _round(leader, 50)  # warm
        samples: dict[str, list[float]] = {"1": [], "3": []}
        for r in range(rounds):
            for kind in ("3", "1") if r % 2 == 0 else ("1", "3"):
                samples[kind] += _round(leader if kind == "3" else single, commits)
        single.close()
        leader.close()
        return statistics.median(samples["1"]), statistics.median(samples["3"])
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()


def _main(argv: list[str]) -> None:
    role, *rest = argv
    if role == "single":
        asyncio.run(_single(int(rest[0]), rest[1], float(rest[2]) / 1e6))
    elif role == "leader":
        asyncio.run(_leader(int(rest[0]), int(rest[1]), rest[2], float(rest[3]) / 1e6, float(rest[4]) / 1e6))
    elif role == "follower":
        asyncio.run(_follower(int(rest[0]), rest[1], int(rest[2]), float(rest[3]) / 1e6))
    else:
        raise SystemExit(f"unknown role {role!r}")


if __name__ == "__main__":
    _main(sys.argv[1:])
