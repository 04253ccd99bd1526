"""Kafka v2 record batches: layout, round trips (also against kio's reader), torn tails, bit flips."""

from __future__ import annotations

import struct
import zlib

import crc32c
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kio.records.readers import read_batch

from ksteward.metadata.batch import (
    CONTROL_FLAG,
    CorruptBatchError,
    UnsupportedCompressionError,
    encode_batch,
    iter_batches,
    scan_batches,
)

VALUES = st.lists(st.binary(max_size=300), min_size=1, max_size=40)


def _zigzag(value: int) -> bytes:
    raw = (value << 1) ^ (value >> 63)
    out = bytearray()
    while raw >= 0x80:
        out.append(raw & 0x7F | 0x80)
        raw >>= 7
    out.append(raw)
    return bytes(out)


def build_batch(
    base_offset: int,
    records: list[tuple[int, int, bytes | None, bytes | None, list[tuple[bytes, bytes | None]]]],
    *,
    base_ts: int,
    max_ts: int,
    attributes: int = 0,
    epoch: int = 0,
    compress: bool = False,
) -> bytes:
    """An independent batch writer for the reader tests: per-record timestamp and offset deltas,
    keys, null values, headers, and gzip, which ``encode_batch`` never produces."""
    body = bytearray()
    for ts_delta, offset_delta, key, value, headers in records:
        rec = bytearray(b"\x00") + _zigzag(ts_delta) + _zigzag(offset_delta)
        rec += _zigzag(-1) if key is None else _zigzag(len(key)) + key
        rec += _zigzag(-1) if value is None else _zigzag(len(value)) + value
        rec += _zigzag(len(headers))
        for hkey, hvalue in headers:
            rec += _zigzag(len(hkey)) + hkey
            rec += _zigzag(-1) if hvalue is None else _zigzag(len(hvalue)) + hvalue
        body += _zigzag(len(rec)) + rec
    payload = bytes(body)
    if compress:
        z = zlib.compressobj(wbits=31)
        payload = z.compress(payload) + z.flush()
        attributes |= 1
    last_delta = max(r[1] for r in records)
    tail = struct.pack(">hiqqqhii", attributes, last_delta, base_ts, max_ts, -1, -1, -1, len(records)) + payload
    head = struct.pack(">qiib", base_offset, len(tail) + 9, epoch, 2)
    return head + struct.pack(">I", crc32c.crc32c(tail)) + tail


def test_layout_matches_kafka() -> None:
    data = encode_batch(42, [b"abc", b"de"], timestamp_ms=1_700_000_000_123, leader_epoch=7)
    base, length, epoch, magic, crc, attrs, last_delta, base_ts, max_ts, pid, pepoch, seq, count = struct.unpack_from(
        ">qiibIhiqqqhii", data
    )
    assert (base, epoch, magic, attrs, last_delta, count) == (42, 7, 2, 0, 1, 2)
    assert (base_ts, max_ts, pid, pepoch, seq) == (1_700_000_000_123, 1_700_000_000_123, -1, -1, -1)
    assert length == len(data) - 12
    assert crc == crc32c.crc32c(data[21:])
    # First record: length, attributes 0, timestampDelta 0, offsetDelta 0, null key, value, no headers.
    assert data[61:].startswith(bytes([2 * 9]) + b"\x00\x00\x00\x01\x06abc\x00")


@settings(max_examples=60, deadline=None)
@given(
    base=st.integers(0, 2**40),
    values=VALUES,
    ts=st.integers(0, 2**42),
    epoch=st.integers(0, 2**31 - 1),
    control=st.booleans(),
    with_keys=st.booleans(),
)
def test_round_trip_and_kio_agrees(
    base: int, values: list[bytes], ts: int, epoch: int, control: bool, with_keys: bool
) -> None:
    keys = [bytes([i % 7]) * (i % 3) for i in range(len(values))] if with_keys else None
    data = encode_batch(base, values, timestamp_ms=ts, leader_epoch=epoch, control=control, keys=keys)
    (batch,) = list(iter_batches(data))
    assert (batch.base_offset, batch.last_offset) == (base, base + len(values) - 1)
    assert (batch.leader_epoch, batch.timestamp_ms, batch.is_control) == (epoch, ts, control)
    assert (batch.file_position, batch.size) == (0, len(data))
    expected_keys = keys or [None] * len(values)
    assert batch.records == tuple((base + i, ts, expected_keys[i], v) for i, v in enumerate(values))
    # kio's own batch reader (CRC-checked) reads the same offsets, keys and values.
    kio_batch, size = read_batch(data, 0)
    assert size == len(data)
    assert [(r.offset, r.key, r.value) for r in kio_batch.records] == [(r[0], r[2], r[3]) for r in batch.records]
    assert bool(kio_batch.attributes & CONTROL_FLAG) == control


def test_reads_what_encode_batch_never_writes() -> None:
    records = [
        (0, 0, b"k", b"v1", []),
        (5, 1, None, None, [(b"h", b"x"), (b"n", None)]),
        (-3, 3, b"", b"x" * 5000, []),  # offset gap, negative timestamp delta, multi-byte lengths
    ]
    for compress in (False, True):
        data = build_batch(100, records, base_ts=1000, max_ts=1005, compress=compress)
        (batch,) = list(iter_batches(data))
        assert batch.last_offset == 103
        assert batch.records == (
            (100, 1000, b"k", b"v1"),
            (101, 1005, None, None),
            (103, 997, b"", b"x" * 5000),
        )
    # LOG_APPEND_TIME: every record takes the batch's max timestamp.
    data = build_batch(0, records, base_ts=1000, max_ts=2000, attributes=0x08)
    assert {r[1] for r in next(iter_batches(data)).records} == {2000}


def test_unsupported_compression_is_not_corruption() -> None:
    data = build_batch(0, [(0, 0, None, b"v", [])], base_ts=0, max_ts=0, attributes=3)  # lz4
    assert scan_batches(data).clean
    with pytest.raises(UnsupportedCompressionError):
        list(iter_batches(data))


def test_empty_batch_is_rejected() -> None:
    with pytest.raises(ValueError):
        encode_batch(0, [], timestamp_ms=0, leader_epoch=0)


def _log(sizes: list[int]) -> tuple[bytes, list[int]]:
    """Consecutive batches; returns the bytes and each batch's end position."""
    chunks, ends, offset = [], [], 0
    for n in sizes:
        chunks.append(encode_batch(offset, [b"v%d" % i for i in range(n)], timestamp_ms=offset, leader_epoch=1))
        offset += n
        ends.append(sum(map(len, chunks)))
    return b"".join(chunks), ends


@settings(max_examples=80, deadline=None)
@given(sizes=st.lists(st.integers(1, 5), min_size=1, max_size=6), data=st.data())
def test_torn_tail_stops_cleanly(sizes: list[int], data: st.DataObject) -> None:
    buf, ends = _log(sizes)
    cut = data.draw(st.integers(0, len(buf)))
    whole = [e for e in ends if e <= cut]
    iterator = iter_batches(buf[:cut])
    batches = list(iterator)
    assert len(batches) == len(whole)
    assert iterator.valid_bytes == (whole[-1] if whole else 0)
    assert iterator.torn == (cut not in [0, *ends])
    scan = scan_batches(buf[:cut])
    assert scan.valid_bytes == iterator.valid_bytes and scan.torn == iterator.torn and scan.error is None
    assert scan.next_offset == (sum(sizes[: len(whole)]) if whole else None)


@settings(max_examples=80, deadline=None)
@given(sizes=st.lists(st.integers(1, 5), min_size=2, max_size=6), data=st.data())
def test_bit_flip_is_reported_at_its_batch(sizes: list[int], data: st.DataObject) -> None:
    buf, ends = _log(sizes)
    starts = [0, *ends[:-1]]
    victim = data.draw(st.integers(0, len(sizes) - 1))
    # Anywhere from the magic byte to the end of the batch: magic, CRC, or CRC-covered bytes.
    position = data.draw(st.integers(starts[victim] + 16, ends[victim] - 1))
    bit = data.draw(st.integers(0, 7))
    flipped = bytearray(buf)
    flipped[position] ^= 1 << bit
    iterator = iter_batches(bytes(flipped))
    with pytest.raises(CorruptBatchError) as info:
        for _ in range(len(sizes)):
            next(iterator)
    assert info.value.position == starts[victim]
    assert iterator.valid_bytes == starts[victim]
    scan = scan_batches(bytes(flipped))
    assert scan.error is not None and scan.error.position == starts[victim]
    assert scan.valid_bytes == starts[victim] and len(scan.positions) == victim


def test_impossible_length_is_corrupt() -> None:
    buf, _ = _log([2, 2])
    bad = bytearray(buf)
    bad[8:12] = struct.pack(">i", 10)
    with pytest.raises(CorruptBatchError, match="impossible batch length 10"):
        list(iter_batches(bytes(bad)))


def test_scan_checks_offset_continuity() -> None:
    first = encode_batch(0, [b"a", b"b"], timestamp_ms=0, leader_epoch=0)
    gap = encode_batch(5, [b"c"], timestamp_ms=0, leader_epoch=0)
    scan = scan_batches(first + gap, expected_offset=0)
    assert scan.error is not None and scan.error.position == len(first)
    assert list(scan.base_offsets) == [0] and scan.next_offset == 2
    assert scan_batches(first, expected_offset=1).error is not None


def test_iter_from_start_and_end() -> None:
    buf, ends = _log([1, 2, 3])
    assert [b.base_offset for b in iter_batches(buf, ends[0])] == [1, 3]
    assert [b.base_offset for b in iter_batches(buf, ends[0], ends[1])] == [1]
