"""A lean asyncio wire client: requests encoded with kio once, before the clock starts; the client only
writes bytes, splits response frames and compares correlation ids, so that the load generator (which
shares the machine's cores with the server) costs as little as possible."""

from __future__ import annotations

import asyncio
import contextlib
import io
import socket
import struct
import time
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

from kio.index import load_request_schema, load_response_schema
from kio.serial import entity_reader, entity_writer

from bench._harness.cpu import CpuMeter, Measured
from ksteward.protocol.build import build
from ksteward.protocol.varint import read_uvarint

HOST = "127.0.0.1"
CLIENT_ID = "ksteward-bench"
REQUEST_TIMEOUT_S = 120.0
_SIZE = struct.Struct(">i")


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
    header = header_cls(request_api_key=api_key, request_api_version=api_version, correlation_id=correlation_id,
                        client_id=CLIENT_ID)  # fmt: skip
    _writer(header_cls)(out, header)
    _writer(cls)(out, build(cls, values))
    payload = out.getvalue()
    return _SIZE.pack(len(payload)) + payload


def decode_request(payload: bytes) -> tuple[int, int, Any]:
    """(API key, API version, body) of one request payload (the frame without its length)."""
    api_key, api_version = struct.unpack_from(">hh", payload, 0)
    cls: Any = load_request_schema(api_key, api_version)
    _, offset = _reader(cls.__header_schema__)(payload, 0)
    body, _ = _reader(cls)(payload, offset)
    return api_key, api_version, body


def with_correlation_id(frame: bytes, correlation_id: int) -> bytes:
    """``frame`` with its correlation id (bytes 4..8 of the header, 8..12 of the frame) replaced."""
    return frame[:8] + _SIZE.pack(correlation_id) + frame[12:]


def decode_response(api_key: int, api_version: int, payload: bytes) -> tuple[int, Any]:
    """(correlation id, body) of one response payload (the frame without its length). A flexible header's
    tagged fields are skipped (kio's reader refuses tags it does not know, such as ksteward's read-your-writes
    offset on a mutation's answer)."""
    cls: Any = load_response_schema(api_key, api_version)
    if cls.__header_schema__.__flexible__:
        (correlation_id,) = _SIZE.unpack_from(payload, 0)
        offset = _skip_tags(payload, 4)
    else:
        header, offset = _reader(cls.__header_schema__)(payload, 0)
        correlation_id = int(header.correlation_id)
    body, _ = _reader(cls)(payload, offset)
    return correlation_id, body


def _skip_tags(buf: bytes, pos: int) -> int:
    """The position after the tagged-field section at ``pos``."""
    count, pos = read_uvarint(buf, pos)
    for _ in range(count):
        _tag, pos = read_uvarint(buf, pos)
        size, pos = read_uvarint(buf, pos)
        pos += size
    return pos


# --- the client ------------------------------------------------------------------------------------


class FrameClient(asyncio.Protocol):
    """One connection; requests are answered in order, so pending futures form a FIFO queue. It also
    notes when the first byte of a response arrived (``first_byte_ns``)."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.first_byte_ns = 0
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
        if not self.first_byte_ns:
            self.first_byte_ns = time.perf_counter_ns()
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


# --- one request at a time, timed -------------------------------------------------------------------


class CorrelationError(RuntimeError):
    """A response carried another correlation id than its request."""


@dataclass
class Timing:
    """One timed request: its response, wall and first-byte seconds, and the CPU used meanwhile."""

    payload: bytes
    wall_s: float
    first_byte_s: float
    cpu: dict[str, float]  # CpuMeter.read()
    request_bytes: int

    @property
    def server_cpu_s(self) -> float:
        return self.cpu["server_cpu_s"]

    def row(self) -> dict[str, Any]:
        return {"s": round(self.wall_s, 4), "first_byte_s": round(self.first_byte_s, 4), **self.cpu,
                "request_bytes": self.request_bytes, "response_bytes": len(self.payload) + 4}  # fmt: skip


class TimedConnection:
    """One connection for pre-encoded frames, each request timed to the first and to the last response
    byte, with the CPU seconds of the server, of this process and of the machine's other processes."""

    def __init__(self, server: Measured, client: FrameClient, first_cid: int) -> None:
        self.server = server
        self.client = client
        self._cid = first_cid

    @classmethod
    async def open(cls, server: Measured, first_cid: int = 10) -> TimedConnection:
        return cls(server, await FrameClient.connect(server.port), first_cid)

    def next_cid(self) -> int:
        self._cid += 1
        return self._cid

    @property
    def last_cid(self) -> int:
        return self._cid

    async def request(self, frame: bytes, timeout: float = REQUEST_TIMEOUT_S) -> bytes:
        """One untimed round trip (a check, or a step of a login)."""
        return await self.client.request(frame, timeout)

    async def timed(self, frame: bytes, timeout: float = REQUEST_TIMEOUT_S) -> Timing:
        """Send one pre-encoded frame (its correlation id already set) and time its response."""
        client = self.client
        meter = CpuMeter(self.server)
        client.first_byte_ns = 0
        started = time.perf_counter_ns()
        payload = await client.request(frame, timeout)
        ended = time.perf_counter_ns()
        cpu = meter.read()
        if payload[:4] != frame[8:12]:
            raise CorrelationError(f"{self.server.name}: correlation id {payload[:4].hex()}, "
                                   f"expected {frame[8:12].hex()}")  # fmt: skip
        return Timing(payload, (ended - started) / 1e9, (client.first_byte_ns - started) / 1e9, cpu, len(frame))

    async def aclose(self) -> None:
        await self.client.aclose()
