"""Length-prefixed frames: a four-byte big-endian size, then that many bytes.

Sans-IO: :class:`FrameDecoder` is given whatever bytes arrive and hands back whole frames.
"""

from __future__ import annotations

import struct

from ksteward.protocol.errors import FrameError

_SIZE = struct.Struct(">i")
_HEADER_V2 = struct.Struct(">hhih")  # api key, api version, correlation id, client id length
DEFAULT_MAX_FRAME_BYTES = 104_857_600  # Kafka's socket.request.max.bytes default (100 MiB)


class FrameParts(list[bytes]):
    """A frame as consecutive parts, the size prefix first: a large answer (Metadata of 100,000 topics is
    12 MiB) is written a slice at a time from its parts, never joined whole on the event loop."""

    def joined(self) -> bytes:
        return b"".join(self)


def frame_bytes(whole: bytes | FrameParts) -> bytes:
    """``whole`` as one ``bytes``."""
    return whole if isinstance(whole, bytes) else whole.joined()


def frame(payload: bytes) -> bytes:
    """Prefix ``payload`` with its length."""
    return _SIZE.pack(len(payload)) + payload


def request_header_v2(api_key: int, api_version: int, correlation_id: int, client_id: str | None) -> bytes:
    """A flexible request header (v2) with no tagged fields: the fixed fields, the client id as a nullable
    INT16-length string (not compact: Kafka's RequestHeader keeps it so), and an empty tag section."""
    if client_id is None:
        return _HEADER_V2.pack(api_key, api_version, correlation_id, -1) + b"\x00"
    raw = client_id.encode()
    return _HEADER_V2.pack(api_key, api_version, correlation_id, len(raw)) + raw + b"\x00"


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
    """Accumulates bytes and hands back complete frames (without their length prefix), one at a time.

    The size limit is given per frame, because it changes as a connection logs in: a frame's size is
    checked against the limit in force when the frame is taken, as soon as its four size bytes are here,
    so an oversized frame is refused before any of its body is buffered.
    """

    def __init__(self) -> None:
        self._buf = bytearray()

    def receive(self, data: bytes) -> None:
        self._buf += data

    def next_frame(self, max_bytes: int, limit_name: str = "socket.request.max.bytes") -> bytes | None:
        """The next complete frame, or None until more bytes arrive. Raises :class:`FrameError`."""
        if len(self._buf) < _SIZE.size:
            return None
        (size,) = _SIZE.unpack_from(self._buf, 0)
        check_frame_size(size, max_bytes, limit_name)
        end = _SIZE.size + size
        if len(self._buf) < end:
            return None
        with memoryview(self._buf) as view:
            payload = bytes(view[_SIZE.size : end])
        del self._buf[:end]
        return payload

    @property
    def buffered(self) -> int:
        return len(self._buf)
