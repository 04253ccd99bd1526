"""The ``/metrics`` endpoint: a minimal HTTP/1.1 server on the node's own event loop.

Served from the loop, not from prometheus-client's server thread, so that a scrape never runs beside the request
path: the recorders are plain ints and lists with no lock, and a collector reads them between two requests. A
scrape of a large node (100,000 ACLs, 10,000 topics) holds the loop for a few milliseconds (bench/metrics.py).
Only ``GET /metrics`` (any query string) is answered; the request is bounded (8 KiB a line, 100 header lines,
10 seconds) and the connection closed after each answer.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from prometheus_client.registry import CollectorRegistry

log = logging.getLogger(__name__)

_LINE_BYTES = 8192
_MAX_HEADERS = 100
_TIMEOUT_S = 10.0


class MetricsEndpoint:
    def __init__(self, registry: CollectorRegistry) -> None:
        self._registry = registry
        self._server: asyncio.Server | None = None

    async def start(self, host: str, port: int) -> None:
        """Listen on ``host:port``; OSError if it cannot (port in use, address not local)."""
        self._server = await asyncio.start_server(self._serve, host=host, port=port, limit=_LINE_BYTES,
                                                  reuse_address=True)  # fmt: skip

    @property
    def port(self) -> int:
        assert self._server is not None
        return int(self._server.sockets[0].getsockname()[1])

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            async with asyncio.timeout(_TIMEOUT_S):
                status, body, content_type = await self._answer(reader)
            head = (f"HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {len(body)}\r\n"
                    "Connection: close\r\n\r\n")  # fmt: skip
            writer.write(head.encode() + body)
            await writer.drain()
        except (TimeoutError, ConnectionError, asyncio.LimitOverrunError, ValueError):
            pass  # a slow, oversized or vanished scraper: close its connection, nothing else
        finally:
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def _answer(self, reader: asyncio.StreamReader) -> tuple[str, bytes, str]:
        request_line = (await reader.readline()).decode("latin-1").split()
        for _ in range(_MAX_HEADERS):
            if (await reader.readline()) in (b"\r\n", b"\n", b""):
                break
        else:
            return "431 Request Header Fields Too Large", b"", "text/plain"
        if len(request_line) != 3:
            return "400 Bad Request", b"", "text/plain"
        method, target, _ = request_line
        if target.split("?", 1)[0] != "/metrics":
            return "404 Not Found", b"only /metrics is served\n", "text/plain"
        if method != "GET":
            return "405 Method Not Allowed", b"", "text/plain"
        return "200 OK", generate_latest(self._registry), CONTENT_TYPE_LATEST

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 1.0)
