"""Length-prefixed frames: a four-byte big-endian size, then that many bytes.

Sans-IO: :class:`FrameDecoder` is fed whatever bytes arrive and hands back whole frames.
"""

from __future__ import annotations

import struct

from ksteward.protocol.errors import FrameError

_SIZE = struct.Struct(">i")
DEFAULT_MAX_FRAME_BYTES = 104_857_600  # Kafka's socket.request.max.bytes default (100 MiB)


def frame(payload: bytes) -> bytes:
    """Prefix ``payload`` with its length."""
    return _SIZE.pack(len(payload)) + payload


def check_frame_size(size: int, max_bytes: int, limit_name: str = "socket.request.max.bytes") -> None:
    """Raise :class:`FrameError` for a size Kafka would refuse, before any of the frame is read.

    Kafka's ``NetworkReceive`` rejects negative sizes and sizes above its limit: ``socket.request.max.bytes``,
    or ``sasl.server.max.receive.size`` while a SASL connection has not yet authenticated. An empty
    frame cannot hold a request header either.
    """
    if size <= 0:
        raise FrameError(f"invalid frame size {size}")
    if size > max_bytes:
        raise FrameError(f"frame of {size} bytes is larger than {limit_name} ({max_bytes})")


class FrameDecoder:
    """Accumulates bytes and yields complete frames (without their length prefix)."""

    def __init__(self, max_bytes: int = DEFAULT_MAX_FRAME_BYTES) -> None:
        self._max = max_bytes
        self._buf = bytearray()

    def feed(self, data: bytes) -> list[bytes]:
        self._buf += data
        frames: list[bytes] = []
        while len(self._buf) >= 4:
            (size,) = _SIZE.unpack_from(self._buf, 0)
            check_frame_size(size, self._max)
            if len(self._buf) < 4 + size:
                break
            frames.append(bytes(self._buf[4 : 4 + size]))
            del self._buf[: 4 + size]
        return frames

    @property
    def buffered(self) -> int:
        return len(self._buf)
