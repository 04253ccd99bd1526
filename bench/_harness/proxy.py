"""A counting TCP proxy: it records every request frame a client sends through it, so a benchmark can
say what a client library put on the wire (how many requests, which versions, how many entries)."""

from __future__ import annotations

import asyncio
import contextlib
import struct
from collections.abc import Callable, Collection, Mapping
from typing import Any

from bench._harness.wire import HOST, decode_request
from ksteward.protocol.apis import api_name

# Per API key: what one request body counts (ACL entries, topics), as the text of a table cell.
Counter = Callable[[Any, int], str]


class WireLog:
    """A TCP proxy that records every request frame a client sends (API key, version, size), each under
    the ``tag`` set at the time (the call the client was making)."""

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.frames: list[tuple[str, int, int, bytes]] = []  # (tag, api key, api version, payload)
        self.tag = ""
        self._server: asyncio.Server | None = None

    async def start(self, port: int) -> None:
        self._server = await asyncio.start_server(self._connected, HOST, port)

    async def _connected(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection(HOST, self.target_port)
        try:
            await asyncio.gather(self._requests(reader, up_writer), self._copy(up_reader, writer))
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()
            up_writer.close()

    async def _requests(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            try:
                head = await reader.readexactly(4)
            except asyncio.IncompleteReadError:
                writer.close()
                return
            payload = await reader.readexactly(struct.unpack(">i", head)[0])
            api_key, api_version = struct.unpack_from(">hh", payload, 0)
            self.frames.append((self.tag, api_key, api_version, payload))
            writer.write(head + payload)
            await writer.drain()

    @staticmethod
    async def _copy(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while chunk := await reader.read(1 << 16):
            writer.write(chunk)
            await writer.drain()
        writer.close()

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 10)

    def report(self, tag: str, column: str, counters: Mapping[int, Counter]) -> list[dict[str, Any]]:
        """One row per request kind the client sent under ``tag``: count, bytes, and in ``column`` what
        each request's body counts, for the API keys ``counters`` knows."""
        rows: dict[tuple[int, int], dict[str, Any]] = {}
        for t, key, version, payload in self.frames:
            if t != tag:
                continue
            row = rows.setdefault(
                (key, version), {"api": f"{api_name(key)} v{version}", "requests": 0, "bytes": 0, column: []}
            )
            row["requests"] += 1
            row["bytes"] += len(payload) + 4
            if key in counters:
                _, _, body = decode_request(payload)
                row[column].append(counters[key](body, version))
        return [{**r, column: ", ".join(r[column]) or "-"} for r in rows.values()]

    def requests(self, keys: Collection[int]) -> list[tuple[str, int, int, int]]:
        """(tag, API key, version, correlation id) of every request of ``keys`` sent."""
        return [
            (t, key, version, int.from_bytes(payload[4:8], "big", signed=True))
            for t, key, version, payload in self.frames
            if key in keys
        ]
