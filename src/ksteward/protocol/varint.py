"""Unsigned varints, as Kafka's ``ByteUtils.writeUnsignedVarint`` and ``readUnsignedVarint`` code them.

Seven bits a byte, least significant group first, the high bit set on every byte but the last. Compact
lengths, tagged-field headers and the metadata record frame all use them. kio has a writer too
(``kio.serial.writers.write_unsigned_varint``), but it writes a byte at a time into a stream, and the
metadata encoder and the fast response encoders want bytes they can join; this is the one copy.
"""

from __future__ import annotations

from ksteward.protocol.errors import InvalidRequestError

_MAX_VARINT_BYTES = 5  # a 32-bit unsigned varint, as Kafka's ByteUtils.readUnsignedVarint
_ONE_BYTE = tuple(bytes((i,)) for i in range(0x80))  # most lengths and every record frame fit one byte


def write_uvarint(value: int) -> bytes:
    """``value`` (>= 0) as an unsigned varint."""
    if value < 0x80:
        return _ONE_BYTE[value]
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def read_uvarint(buf: bytes, pos: int, end: int | None = None) -> tuple[int, int]:
    """Return (value, new position) of an unsigned 32-bit varint at ``pos`` (at most five bytes).

    Raises :class:`InvalidRequestError` for a varint cut off at ``end`` (default: the end of ``buf``)
    or longer than five bytes, as Kafka's reader refuses it.
    """
    limit = len(buf) if end is None else end
    value = shift = 0
    for _ in range(_MAX_VARINT_BYTES):
        if pos >= limit:
            raise InvalidRequestError("truncated varint")
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value, pos
        shift += 7
    raise InvalidRequestError("varint is longer than five bytes")
