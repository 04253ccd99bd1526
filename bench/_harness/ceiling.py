"""The ceiling of request serving on this machine (issue 17): the least an asyncio server can do per request.

It answers every request frame with one pre-encoded response (ksteward's own ApiVersions v3 answer, fetched
once from a real node so that the bytes on the wire are the same size), with only the correlation id patched
in: no decoding, no handler, no authorization, no logging. Whatever ksteward does per request costs on top
of this, so ``ksteward / ceiling`` is the share of the language's and machine's limit that ksteward reaches.

    python -m bench._harness.ceiling --port PORT --response FILE [--loop asyncio|uvloop]

``CeilingProcess`` runs it as a subprocess with the interface the load helpers measure (``port``,
``cpu_seconds``).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import struct
import sys
from pathlib import Path

from bench._harness.cpu import process_cpu_seconds
from bench._harness.wire import HOST, free_ports

_SIZE = struct.Struct(">i")
READY = "ceiling server ready"


class CeilingProtocol(asyncio.Protocol):
    """Frames in, the same answer out: ``size + correlation id + body`` for each request frame."""

    def __init__(self, body: bytes) -> None:
        self.prefix = _SIZE.pack(len(body) + 4)
        self.body = body
        self.buf = bytearray()
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]  # uvloop's transports are not asyncio's classes

    def data_received(self, data: bytes) -> None:
        buf = self.buf
        buf += data
        out = []
        while len(buf) >= 4:
            (size,) = _SIZE.unpack_from(buf, 0)
            if len(buf) < 4 + size:
                break
            out.append(self.prefix + bytes(buf[8:12]) + self.body)  # header v0: correlation id at 4..8 of it
            del buf[: 4 + size]
        if out:
            assert self.transport is not None
            self.transport.write(b"".join(out))


async def serve(port: int, body: bytes) -> None:
    loop = asyncio.get_running_loop()
    server = await loop.create_server(lambda: CeilingProtocol(body), HOST, port)
    stop = asyncio.Event()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    print(READY, flush=True)
    async with server:
        await stop.wait()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--response", type=Path, required=True, help="a response payload (without its size)")
    parser.add_argument("--loop", choices=("asyncio", "uvloop"), default="asyncio")
    args = parser.parse_args()
    payload = args.response.read_bytes()
    body = payload[4:]  # without the correlation id, patched per request
    if args.loop == "uvloop":
        import uvloop

        uvloop.run(serve(args.port, body))
    else:
        asyncio.run(serve(args.port, body))
    return 0


class CeilingProcess:
    """The ceiling server as a subprocess: ``port`` and ``cpu_seconds`` as ``ServerProcess`` has them."""

    def __init__(self, workdir: Path, response_payload: bytes, *, loop: str = "asyncio") -> None:
        self.name = f"ceiling ({loop})"
        (self.port,) = free_ports(1)
        self.response_file = workdir / f"ceiling-response-{self.port}.bin"
        self.response_file.write_bytes(response_payload)
        self.loop = loop
        self.proc: asyncio.subprocess.Process | None = None

    async def start(self) -> None:
        cmd = [sys.executable, "-m", "bench._harness.ceiling", "--port", str(self.port),
               "--response", str(self.response_file), "--loop", self.loop]  # fmt: skip
        self.proc = await asyncio.create_subprocess_exec(*cmd, stdout=asyncio.subprocess.PIPE)
        assert self.proc.stdout is not None
        line = await asyncio.wait_for(self.proc.stdout.readline(), 60)
        if READY not in line.decode():
            raise RuntimeError(f"the ceiling server did not start: {line!r}")

    def cpu_seconds(self) -> float:
        assert self.proc is not None
        return process_cpu_seconds(self.proc.pid)

    async def stop(self) -> None:
        if self.proc is None or self.proc.returncode is not None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            await asyncio.wait_for(self.proc.wait(), 30)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                self.proc.kill()
            await self.proc.wait()


if __name__ == "__main__":
    sys.exit(main())
