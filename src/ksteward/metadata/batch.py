"""Kafka v2 record batches (``DefaultRecordBatch`` / ``DefaultRecord``), encoded and decoded here.

kio has a batch codec too (``kio.records``), but it truncates record timestamps to whole seconds
and pays a native call plus a data class per field of every record. Loading a 1,000,000-record
snapshot at start-up goes through this module, so it is written with ``struct`` and inline varint
decoding over one ``bytes`` copy per batch, and CRC32C from the ``crc32c`` package.

Batch layout (big-endian; the CRC is CRC32C over ``attributes`` .. end)::

    baseOffset i64 | batchLength i32 | partitionLeaderEpoch i32 | magic i8 (2) | crc u32
    attributes i16 | lastOffsetDelta i32 | baseTimestamp i64 | maxTimestamp i64
    producerId i64 | producerEpoch i16 | baseSequence i32 | recordCount i32 | records...

Record layout (all varints zig-zag, as in Kafka's ``ByteUtils.writeVarint``)::

    length varint | attributes i8 | timestampDelta varlong | offsetDelta varint
    keyLength varint (-1 = null) | key | valueLength varint (-1 = null) | value
    headerCount varint | headers (keyLength varint, key, valueLength varint, value)...

Attributes: bits 0-2 compression (only none and gzip are read here), bit 3 log-append time,
bit 4 transactional, bit 5 control batch.
"""

from __future__ import annotations

import struct
import zlib
from array import array
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias

import crc32c

MAGIC = 2
LOG_OVERHEAD = 12  # baseOffset + batchLength
RECORD_BATCH_OVERHEAD = 61
_CRC_START = 21  # offset of ``attributes``: the CRC covers everything from here
_MIN_BATCH_LENGTH = RECORD_BATCH_OVERHEAD - LOG_OVERHEAD

COMPRESSION_MASK = 0x07
TIMESTAMP_TYPE_FLAG = 0x08
TRANSACTIONAL_FLAG = 0x10
CONTROL_FLAG = 0x20
_GZIP = 1

_HEAD = struct.Struct(">qiib")  # baseOffset, batchLength, partitionLeaderEpoch, magic
_CRC = struct.Struct(">I")
_TAIL = struct.Struct(">hiqqqhii")  # attributes .. recordCount
_FULL = struct.Struct(">qiibIhiqqqhii")

RecordTuple: TypeAlias = tuple[int, int, bytes | None, bytes | None]
"""``(offset, timestamp_ms, key, value)``."""


class CorruptBatchError(ValueError):
    """A batch that fails its CRC, has an impossible length, or whose records do not add up."""

    def __init__(self, position: int, reason: str) -> None:
        super().__init__(f"corrupt record batch at position {position}: {reason}")
        self.position = position
        self.reason = reason


class UnsupportedCompressionError(ValueError):
    """A valid batch compressed with a codec this module does not decode (snappy, lz4, zstd)."""


@dataclass(frozen=True, slots=True)
class Batch:
    base_offset: int
    last_offset: int
    leader_epoch: int
    timestamp_ms: int
    """The batch's maxTimestamp."""
    is_control: bool
    records: tuple[RecordTuple, ...]
    file_position: int
    size: int


# --- encoding ----------------------------------------------------------------------------------


def _zigzag_bytes(value: int) -> bytes:
    value = (value << 1) ^ (value >> 63)
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


# Record lengths, offset deltas and value lengths are almost always small: precompute them.
_ZZ_CACHE: tuple[bytes, ...] = tuple(_zigzag_bytes(i) for i in range(1 << 14))
_NULL_LENGTH = _zigzag_bytes(-1)


def _zz(value: int) -> bytes:
    return _ZZ_CACHE[value] if 0 <= value < 16384 else _zigzag_bytes(value)


def encode_batch(
    base_offset: int,
    values: Sequence[bytes],
    *,
    timestamp_ms: int,
    leader_epoch: int,
    control: bool = False,
    keys: Sequence[bytes | None] | None = None,
) -> bytes:
    """One uncompressed v2 batch of ``values`` at offsets ``base_offset``.. with one timestamp.

    ``keys`` defaults to all-null (metadata records have no key); control batches need keys (see
    ``records.control.encode_control_record``). Producer id, epoch and sequence are -1.
    """
    count = len(values)
    if count == 0:
        raise ValueError("a record batch needs at least one record")
    if keys is not None and len(keys) != count:
        raise ValueError("keys and values differ in length")
    zz = _ZZ_CACHE
    parts: list[bytes] = []
    append = parts.append
    for delta, value in enumerate(values):
        key = None if keys is None else keys[delta]
        # attributes 0 and timestampDelta 0, then offsetDelta.
        head = b"\x00\x00" + (zz[delta] if delta < 16384 else _zigzag_bytes(delta))
        if key is None:
            head += _NULL_LENGTH
        else:
            head += _zz(len(key)) + key
        vlen = len(value)
        vlen_bytes = zz[vlen] if vlen < 16384 else _zigzag_bytes(vlen)
        size = len(head) + len(vlen_bytes) + vlen + 1  # + headerCount 0
        append(zz[size] if size < 16384 else _zigzag_bytes(size))
        append(head)
        append(vlen_bytes)
        append(value)
        append(b"\x00")
    records = b"".join(parts)
    attributes = CONTROL_FLAG if control else 0
    tail = _TAIL.pack(attributes, count - 1, timestamp_ms, timestamp_ms, -1, -1, -1, count)
    crc = crc32c.crc32c(records, crc32c.crc32c(tail))
    batch_length = RECORD_BATCH_OVERHEAD - LOG_OVERHEAD + len(records)
    return _HEAD.pack(base_offset, batch_length, leader_epoch, MAGIC) + _CRC.pack(crc) + tail + records


# --- decoding ----------------------------------------------------------------------------------


def _varint_slow(data: bytes, pos: int) -> tuple[int, int]:
    """Zig-zag varint/varlong starting at ``pos``; returns ``(value, next_pos)``."""
    raw = shift = 0
    while True:
        byte = data[pos]
        pos += 1
        raw |= (byte & 0x7F) << shift
        if byte < 0x80:
            return (raw >> 1) ^ -(raw & 1), pos
        shift += 7
        if shift > 63:
            raise ValueError("varint too long")


def _parse_records(
    data: bytes, count: int, base_offset: int, base_ts: int, log_append_ts: int | None
) -> tuple[RecordTuple, ...]:
    # Hot loop. Varints of one and two bytes (values below 8192 after zig-zag, which covers
    # record lengths, offset deltas and value lengths of metadata records) are decoded inline;
    # longer ones go through _varint_slow. Zig-zag: raw ``r`` decodes to ``(r >> 1) ^ -(r & 1)``.
    out: list[RecordTuple] = []
    append = out.append
    pos = RECORD_BATCH_OVERHEAD
    end = len(data)
    for _ in range(count):
        b = data[pos]
        if b < 0x80:
            length = (b >> 1) ^ -(b & 1)
            pos += 1
        elif data[pos + 1] < 0x80:
            b = (b & 0x7F) | (data[pos + 1] << 7)
            length = (b >> 1) ^ -(b & 1)
            pos += 2
        else:
            length, pos = _varint_slow(data, pos)
        record_end = pos + length
        if length < 6 or record_end > end:
            raise ValueError(f"impossible record length {length}")
        pos += 1  # the attributes byte
        b = data[pos]
        if b == 0:
            ts = base_ts
            pos += 1
        else:
            ts_delta, pos = _varint_slow(data, pos)
            ts = base_ts + ts_delta
        b = data[pos]
        if b < 0x80:
            offset_delta = (b >> 1) ^ -(b & 1)
            pos += 1
        elif data[pos + 1] < 0x80:
            b = (b & 0x7F) | (data[pos + 1] << 7)
            offset_delta = (b >> 1) ^ -(b & 1)
            pos += 2
        else:
            offset_delta, pos = _varint_slow(data, pos)
        b = data[pos]
        if b == 1:  # -1: the null key of every metadata record
            key = None
            pos += 1
        else:
            klen, pos = _varint_slow(data, pos)
            if klen < 0:
                key = None
            else:
                key = data[pos : pos + klen]
                pos += klen
        b = data[pos]
        if b < 0x80:
            vlen = (b >> 1) ^ -(b & 1)
            pos += 1
        elif data[pos + 1] < 0x80:
            b = (b & 0x7F) | (data[pos + 1] << 7)
            vlen = (b >> 1) ^ -(b & 1)
            pos += 2
        else:
            vlen, pos = _varint_slow(data, pos)
        if vlen >= 0:
            value: bytes | None = data[pos : pos + vlen]
            pos += vlen
        else:
            value = None
        if data[pos] == 0:  # no headers: the only case Kafka's KRaft writes
            pos += 1
        else:
            pos = _skip_headers(data, pos)
        if pos != record_end:
            raise ValueError("record fields do not add up to the record length")
        append((base_offset + offset_delta, ts if log_append_ts is None else log_append_ts, key, value))
    if pos != end:
        raise ValueError(f"{end - pos} byte(s) after the last record")
    return tuple(out)


def _skip_headers(data: bytes, pos: int) -> int:
    count, pos = _varint_slow(data, pos)
    for _ in range(count):
        for _field in range(2):
            size, pos = _varint_slow(data, pos)
            if size > 0:
                pos += size
    return pos


def _decode(data: bytes, position: int) -> Batch:
    """Parse one whole, CRC-checked batch held in ``data``."""
    (base_offset, _length, epoch, _magic, _crc, attributes, last_delta, base_ts, max_ts, _pid, _pe, _seq,
     count) = _FULL.unpack_from(data)  # fmt: skip
    codec = attributes & COMPRESSION_MASK
    if codec:
        if codec != _GZIP:
            raise UnsupportedCompressionError(f"batch at position {position} uses compression codec {codec}")
        data = data[:RECORD_BATCH_OVERHEAD] + zlib.decompress(data[RECORD_BATCH_OVERHEAD:], 31)
    log_append_ts = max_ts if attributes & TIMESTAMP_TYPE_FLAG else None
    try:
        records = _parse_records(data, count, base_offset, base_ts, log_append_ts) if count else ()
    except (IndexError, ValueError) as exc:
        raise CorruptBatchError(position, f"bad records: {exc}") from exc
    if count < 0 or (records and records[-1][0] > base_offset + last_delta):
        raise CorruptBatchError(position, "record offsets beyond lastOffsetDelta")
    return Batch(
        base_offset=base_offset,
        last_offset=base_offset + last_delta,
        leader_epoch=epoch,
        timestamp_ms=max_ts,
        is_control=bool(attributes & CONTROL_FLAG),
        records=records,
        file_position=position,
        size=LOG_OVERHEAD + _length,
    )


def _check(buf: Any, pos: int, limit: int) -> tuple[int, int] | None:
    """Validate the batch at ``pos``: ``(size, batchLength)``, or None at a clean end or torn tail.

    Raises CorruptBatchError for an impossible length, a wrong magic or a CRC mismatch.
    """
    remaining = limit - pos
    if remaining < LOG_OVERHEAD:
        return None
    batch_length = int.from_bytes(buf[pos + 8 : pos + 12], "big", signed=True)
    if batch_length < _MIN_BATCH_LENGTH:
        raise CorruptBatchError(pos, f"impossible batch length {batch_length}")
    size = LOG_OVERHEAD + batch_length
    if size > remaining:
        return None
    magic = buf[pos + 16]
    if magic != MAGIC:
        raise CorruptBatchError(pos, f"magic {magic}, expected {MAGIC}")
    stored = int.from_bytes(buf[pos + 17 : pos + 21], "big")
    actual = crc32c.crc32c(buf[pos + _CRC_START : pos + size])
    if stored != actual:
        raise CorruptBatchError(pos, f"CRC mismatch (stored {stored:#010x}, computed {actual:#010x})")
    return size, batch_length


class BatchIterator:
    """Iterates the batches of ``buf[start:end]``; see ``iter_batches``.

    After iteration stops, ``valid_bytes`` is the position just past the last whole, valid batch
    and ``torn`` tells whether bytes remained that do not form a whole batch. When a batch is
    corrupt, ``next()`` raises CorruptBatchError and ``valid_bytes`` is that batch's position.
    """

    def __init__(self, buf: Any, start: int = 0, end: int | None = None) -> None:
        self._buf = buf
        self._limit = len(buf) if end is None else end
        self.valid_bytes = start
        self.torn = False

    def __iter__(self) -> Iterator[Batch]:
        return self

    def __next__(self) -> Batch:
        pos = self.valid_bytes
        checked = _check(self._buf, pos, self._limit)
        if checked is None:
            self.torn = pos < self._limit
            raise StopIteration
        size, _ = checked
        batch = _decode(bytes(self._buf[pos : pos + size]), pos)
        self.valid_bytes = pos + size
        return batch


def iter_batches(buf: Any, start: int = 0, end: int | None = None) -> BatchIterator:
    """Decode the batches of a buffer (bytes, mmap, ...) from ``start``.

    Stops cleanly at a torn tail (a partial batch at the end); raises CorruptBatchError, with the
    position, for a CRC mismatch or an impossible length.
    """
    return BatchIterator(buf, start, end)


@dataclass(slots=True)
class ScanResult:
    """Headers of every valid batch of a buffer, as compact arrays (a log may hold millions)."""

    base_offsets: array[int]
    positions: array[int]
    leader_epochs: array[int]
    next_offset: int | None
    """lastOffset + 1 of the last valid batch; None when there was none."""
    last_timestamp_ms: int
    valid_bytes: int
    torn: bool
    error: CorruptBatchError | None

    @property
    def clean(self) -> bool:
        return not self.torn and self.error is None


def scan_batches(buf: Any, start: int = 0, end: int | None = None, *, expected_offset: int | None = None) -> ScanResult:
    """Validate every batch (length, magic, CRC, offset continuity) without parsing records.

    Never raises for bad data: the first problem is reported in ``error`` (or ``torn``) and
    ``valid_bytes`` says where the good prefix ends. ``expected_offset``, when given, is the base
    offset the first batch must have.
    """
    limit = len(buf) if end is None else end
    result = ScanResult(array("q"), array("q"), array("i"), None, -1, start, False, None)
    pos = start
    next_offset = expected_offset
    while True:
        try:
            checked = _check(buf, pos, limit)
        except CorruptBatchError as exc:
            result.error = exc
            break
        if checked is None:
            result.torn = pos < limit
            break
        size, _ = checked
        (base_offset, _l, epoch, _m, _c, _a, last_delta, _bt, max_ts, _p, _e, _s, count) = _FULL.unpack_from(buf, pos)
        if next_offset is not None and base_offset != next_offset:
            result.error = CorruptBatchError(pos, f"base offset {base_offset}, expected {next_offset}")
            break
        if last_delta < 0 or count < 0:
            result.error = CorruptBatchError(pos, f"lastOffsetDelta {last_delta}, record count {count}")
            break
        result.base_offsets.append(base_offset)
        result.positions.append(pos)
        result.leader_epochs.append(epoch)
        next_offset = base_offset + last_delta + 1
        result.next_offset = next_offset
        result.last_timestamp_ms = max_ts
        pos += size
        result.valid_bytes = pos
    return result
