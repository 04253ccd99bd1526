"""Snapshot files of the ``__cluster_metadata-0`` directory, as Kafka's ``Snapshots`` and
``RecordsSnapshotWriter`` lay them out: ``%020d-%010d.checkpoint`` (end offset, exclusive, and epoch),
a SnapshotHeader control batch, the image's records in batches, a SnapshotFooter control batch.

A snapshot is written to ``.checkpoint.part``, fsynced, renamed and its directory fsynced, so a crash
leaves either the whole file or a ``.part`` that the next open removes. A snapshot downloaded from the
KRaft leader in FetchSnapshot chunks (KIP-630) goes the same way: ``SnapshotDownload`` appends each chunk
to the ``.part`` file and only a complete, valid file is renamed; ``read_snapshot_chunk`` is the
leader's side of it. Reading validates the whole
file (every CRC, the header first and the footer last) before it yields a record.
"""

from __future__ import annotations

import mmap
import os
import re
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from kio.static.primitive import i16, i64

from .batch import CorruptBatchError, UnsupportedCompressionError, encode_batch, iter_batches, scan_batches
from .files import fsync_dir, map_prefix, unmap
from .records.control import (
    ControlRecordType,
    SnapshotFooterRecord,
    SnapshotHeaderRecord,
    control_type_id,
    encode_control_record,
)

__all__ = [
    "SNAPSHOT_BATCH_BYTES",
    "SNAPSHOT_BATCH_RECORDS",
    "CorruptSnapshotError",
    "SnapshotDownload",
    "SnapshotId",
    "check_snapshot",
    "list_snapshots",
    "parse_snapshot_name",
    "read_snapshot",
    "read_snapshot_chunk",
    "snapshot_file_name",
    "write_snapshot_file",
]

SNAPSHOT_BATCH_RECORDS = 2000
SNAPSHOT_BATCH_BYTES = 1 << 20

_SNAPSHOT_RE = re.compile(r"^(\d{20})-(\d{10})\.checkpoint$")


class CorruptSnapshotError(ValueError):
    """A snapshot file fails a CRC, is cut short, or lacks its header or footer."""


@dataclass(frozen=True, slots=True, order=True)
class SnapshotId:
    end_offset: int
    """Exclusive: the first offset the snapshot does not contain."""
    epoch: int
    path: Path = field(compare=False)


def snapshot_file_name(end_offset: int, epoch: int) -> str:
    return f"{end_offset:020d}-{epoch:010d}.checkpoint"


def parse_snapshot_name(name: str) -> tuple[int, int] | None:
    """``(end_offset, epoch)`` of a snapshot file name (``%020d-%010d.checkpoint``); None for any other name."""
    match = _SNAPSHOT_RE.match(name)
    return (int(match[1]), int(match[2])) if match else None


def list_snapshots(directory: Path) -> list[SnapshotId]:
    """Snapshot files of a partition directory, by name only, newest (highest end offset) first."""
    found = []
    for entry in os.scandir(directory):
        match = _SNAPSHOT_RE.match(entry.name)
        if match:
            found.append(SnapshotId(int(match[1]), int(match[2]), Path(entry.path)))
    return sorted(found, reverse=True)


def write_snapshot_file(
    directory: Path,
    end_offset: int,
    epoch: int,
    values: Iterable[bytes],
    *,
    last_contained_timestamp_ms: int,
    timestamp_ms: int | None = None,
) -> Path:
    """Write ``values`` (framed records) as snapshot ``end_offset``-``epoch`` of ``directory``, durably.
    Raises FileExistsError if that snapshot exists."""
    final = directory / snapshot_file_name(end_offset, epoch)
    if final.exists():
        raise FileExistsError(final)
    part = final.with_name(final.name + ".part")
    now = int(time.time() * 1000) if timestamp_ms is None else timestamp_ms
    try:
        with open(part, "xb") as out:
            offset = _write_control(out, 0, epoch, now, SnapshotHeaderRecord(
                version=i16(0), last_contained_log_timestamp=i64(last_contained_timestamp_ms)))  # fmt: skip
            chunk: list[bytes] = []
            chunk_bytes = 0
            for value in values:
                chunk.append(value)
                chunk_bytes += len(value)
                if len(chunk) >= SNAPSHOT_BATCH_RECORDS or chunk_bytes >= SNAPSHOT_BATCH_BYTES:
                    out.write(encode_batch(offset, chunk, timestamp_ms=now, leader_epoch=epoch))
                    offset += len(chunk)
                    chunk, chunk_bytes = [], 0
            if chunk:
                out.write(encode_batch(offset, chunk, timestamp_ms=now, leader_epoch=epoch))
                offset += len(chunk)
            _write_control(out, offset, epoch, now, SnapshotFooterRecord(version=i16(0)))
            out.flush()
            os.fsync(out.fileno())
        os.replace(part, final)
        fsync_dir(directory)
    except BaseException:
        part.unlink(missing_ok=True)
        raise
    return final


def _write_control(out: BinaryIO, offset: int, epoch: int, now: int, message: object) -> int:
    key, value = encode_control_record(message)
    out.write(encode_batch(offset, [value], keys=[key], timestamp_ms=now, leader_epoch=epoch, control=True))
    return offset + 1


def read_snapshot(path: str | os.PathLike[str]) -> tuple[int, int, Iterator[bytes]]:
    """``(end_offset, epoch, record values)`` of a snapshot file.

    The whole file is validated first (every CRC, a SnapshotHeader as the first record and a
    SnapshotFooter as the last), so CorruptSnapshotError is raised here, before any value is read.
    Control batches are skipped by the iterator.
    """
    path = Path(path)
    match = _SNAPSHOT_RE.match(path.name)
    if not match:
        raise ValueError(f"{path.name} is not a snapshot file name (%020d-%010d.checkpoint)")
    end_offset, epoch = int(match[1]), int(match[2])
    buf = map_prefix(path, path.stat().st_size)
    try:
        _check_whole(buf, path)
    except BaseException:
        unmap(buf)
        raise
    return end_offset, epoch, _snapshot_values(buf, path)


def _first_control_type(buf: mmap.mmap | bytes | bytearray, position: int, path: Path, *, last: bool) -> int:
    """Control type of the first (or last) record of the batch at ``position``; -1 if not control."""
    try:
        batch = next(iter_batches(buf, position))
        if not batch.is_control or not batch.records:
            return -1
        return control_type_id(batch.records[-1 if last else 0][2])
    except (CorruptBatchError, UnsupportedCompressionError) as exc:
        raise CorruptSnapshotError(f"{path}: {exc}") from exc
    except ValueError:
        return -1


def _snapshot_values(buf: mmap.mmap | bytes, path: Path) -> Iterator[bytes]:
    """Values of the data batches; owns ``buf`` and unmaps it when done."""
    try:
        for batch in iter_batches(buf):
            if not batch.is_control:
                yield from (record[3] for record in batch.records if record[3] is not None)
    except (CorruptBatchError, UnsupportedCompressionError) as exc:
        raise CorruptSnapshotError(f"{path}: {exc}") from exc
    finally:
        unmap(buf)


def read_snapshot_chunk(path: Path, position: int, max_bytes: int) -> tuple[int, bytes]:
    """``(file size, bytes from position)``: at most ``max_bytes`` of them (FetchSnapshot's chunk, which
    need not end on a batch boundary). FileNotFoundError when the snapshot was deleted."""
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if 0 <= position < size:
            f.seek(position)
            return size, f.read(max(0, min(max_bytes, size - position)))
        return size, b""


class SnapshotDownload:
    """One snapshot being received from the leader: ``append`` chunks in order, then ``complete``.

    The bytes go to ``<id>.checkpoint.part``; ``complete`` fsyncs it, checks the whole file as
    ``read_snapshot`` does (CRCs, header first, footer last) and renames it into place, so a snapshot
    file that exists is whole. ``abort`` (or a crash: the next open removes ``.part`` files) leaves
    nothing behind.
    """

    def __init__(
        self, directory: Path, end_offset: int, epoch: int, on_complete: Callable[[], None] | None = None
    ) -> None:
        self.end_offset = end_offset
        self._on_complete = on_complete  # told once the snapshot is in place (the log's snapshot list changed)
        self.epoch = epoch
        self.final = directory / snapshot_file_name(end_offset, epoch)
        self.part = self.final.with_name(self.final.name + ".part")
        self._fd: int | None = os.open(self.part, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        self.size = 0

    def append(self, position: int, data: bytes) -> None:
        """Write the chunk that starts at ``position``, which must be the size written so far."""
        if self._fd is None:
            raise ValueError(f"snapshot download {self.final.name} is closed")
        if position != self.size:
            raise ValueError(f"snapshot chunk at position {position}, expected {self.size}")
        view = memoryview(data)
        while view:
            view = view[os.write(self._fd, view) :]
        self.size += len(data)

    def complete(self) -> Path:
        """Make the snapshot durable and visible; CorruptSnapshotError (the download is dropped) if the
        bytes do not form a valid snapshot."""
        if self._fd is None:
            raise ValueError(f"snapshot download {self.final.name} is closed")
        try:
            os.fsync(self._fd)
            os.close(self._fd)
            self._fd = None
            _validate(self.part)
            os.replace(self.part, self.final)
            fsync_dir(self.final.parent)
        except BaseException:
            self.abort()
            raise
        finally:
            if self._on_complete is not None:
                self._on_complete()
        return self.final

    def abort(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        self.part.unlink(missing_ok=True)


def _validate(path: Path) -> None:
    """``read_snapshot``'s whole-file checks on a ``.part`` file (whose name is not a snapshot name)."""
    buf = map_prefix(path, path.stat().st_size)
    try:
        _check_whole(buf, path)
    finally:
        unmap(buf)


def check_snapshot(buf: mmap.mmap | bytes | bytearray, label: str) -> None:
    """``read_snapshot``'s whole-file checks on a snapshot's bytes (read by another file system than the
    local one: the pipeline's Spark readers); CorruptSnapshotError names ``label``."""
    _check_whole(buf, Path(label))


def _check_whole(buf: mmap.mmap | bytes | bytearray, path: Path) -> None:
    """Every CRC, a SnapshotHeader as the first record and a SnapshotFooter as the last."""
    scan = scan_batches(buf)
    if scan.error is not None:
        raise CorruptSnapshotError(f"{path}: {scan.error}")
    if scan.torn or not scan.positions:
        raise CorruptSnapshotError(f"{path}: cut short at position {scan.valid_bytes}")
    if _first_control_type(buf, scan.positions[0], path, last=False) != ControlRecordType.SNAPSHOT_HEADER:
        raise CorruptSnapshotError(f"{path}: does not start with a SnapshotHeader control record")
    if _first_control_type(buf, scan.positions[-1], path, last=True) != ControlRecordType.SNAPSHOT_FOOTER:
        raise CorruptSnapshotError(f"{path}: does not end with a SnapshotFooter control record")
