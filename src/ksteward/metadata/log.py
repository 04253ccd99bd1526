"""The ``__cluster_metadata-0`` directory: log segments and snapshots in Kafka's on-disk layout.

Layout (Kafka's ``UnifiedLog`` and ``Snapshots``)::

    <metadata.log.dir>/__cluster_metadata-0/
        00000000000000000000.log                      segments, named by base offset (%020d)
        00000000000000001234-0000000003.checkpoint    snapshots, endOffset (exclusive) and epoch
        ...checkpoint.part                            a snapshot being written (removed at open)

This module owns the segments; ``snapshot_file`` writes and reads the snapshot files (its names are
re-exported here), and ``files`` holds the fsync and mmap helpers both use.

No ``.index``/``.timeindex`` files are written: Kafka rebuilds them, and ksteward keeps a per-batch
offset index in memory. When a segment is truncated or deleted here its index files are deleted too,
so Kafka never trusts a stale one.

One process at a time writes a log directory: a writable open requires the directory's ``.lock``
(``dir_lock``, Kafka's ``LogManager.lockLogDirs``) and takes it if this process does not hold it yet.
A read-only open takes no lock and changes nothing, so tools can read a live node's log.

A follower of the KRaft leader (a broker, KIP-595 / KIP-630) also uses ``read_raw`` (whole batches for a
Fetch response), ``append_raw`` (batches received with their own offsets and epochs), ``truncate_to``
(a diverging epoch) and ``truncate_to_snapshot`` (a downloaded snapshot); ``epoch_history`` is the
leader-epoch history those rely on (``epochs``), rebuilt from the batch headers at every open.

Thread contract: one thread (the controller's event loop) calls ``append``, ``append_raw``,
``truncate_to``, ``truncate_to_snapshot``, ``read``, ``read_raw`` and ``close``.
``flush`` may run in one other thread at a time (the group-commit worker) while appends go on, and
``write_snapshot`` / ``delete_segments_before`` in a worker thread too (one at a time): they only
add and remove files the appender does not write (the active segment is never deleted). ``_lock``
guards only the bookkeeping these share (the segment list, which descriptors need an fsync, the
offsets); fsyncs and file writes run outside it. ``close`` must not race any of them.
"""

from __future__ import annotations

import bisect
import logging
import os
import threading
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from types import TracebackType

from .batch import Batch, encode_batch, iter_batches, scan_batches
from .dir_lock import DirectoryLock, held_here, lock_directory
from .epochs import EpochHistory
from .files import fsync_dir, map_prefix, unmap, write_all
from .log_replica import ReplicaLogMixin
from .segments import Segment, delete_segment_files, list_segments, segment_file_name
from .snapshot_file import (
    SNAPSHOT_BATCH_RECORDS,
    CorruptSnapshotError,
    SnapshotId,
    list_snapshots,
    read_snapshot,
    snapshot_file_name,
    write_snapshot_file,
)

__all__ = [  # the snapshot names are re-exported: readers of the directory find them all here
    "DEFAULT_SEGMENT_BYTES",
    "PARTITION_DIR_NAME",
    "SNAPSHOTS_TO_KEEP",
    "SNAPSHOT_BATCH_RECORDS",
    "CorruptSnapshotError",
    "MetadataLog",
    "MetadataLogError",
    "OffsetOutOfRangeError",
    "SnapshotId",
    "fsync_dir",
    "list_segments",
    "list_snapshots",
    "partition_dir",
    "read_snapshot",
    "segment_file_name",
    "snapshot_file_name",
]

PARTITION_DIR_NAME = "__cluster_metadata-0"
DEFAULT_SEGMENT_BYTES = 1 << 30
SNAPSHOTS_TO_KEEP = 2

_LEFTOVER_SUFFIXES = (".checkpoint.part", ".checkpoint.deleted", ".log.deleted")


class MetadataLogError(Exception):
    """The log cannot do what was asked (read-only, closed, failed fsync, bad argument)."""


class OffsetOutOfRangeError(MetadataLogError):
    """The offset is below the log start offset: those batches were deleted after a snapshot."""


def partition_dir(path: str | os.PathLike[str]) -> Path:
    """``path`` itself when it is a ``__cluster_metadata-0`` directory, else ``path/__cluster_metadata-0``."""
    p = Path(path)
    return p if p.name == PARTITION_DIR_NAME else p / PARTITION_DIR_NAME


class MetadataLog(ReplicaLogMixin):
    """Segments and snapshots of one ``__cluster_metadata-0`` directory; see the module docstring."""

    def __init__(self, directory: Path, *, segment_bytes: int, logger: logging.Logger, read_only: bool) -> None:
        # Use ``MetadataLog.open``; this only sets fields.
        self.directory = directory
        self.segment_bytes = segment_bytes
        self.read_only = read_only
        self._logger = logger
        self._segments: list[Segment] = []
        self._next_offset = 0
        self._durable_offset = 0
        self._last_epoch = -1
        self._epochs = EpochHistory()
        self._bytes_since_snapshot = 0
        self._snapshot_list: list[SnapshotId] | None = None  # snapshots(), cached
        self._snapshot_generation = 0
        self._lock = threading.Lock()
        self._flush_lock = threading.Lock()
        self._retired_fds: list[int] = []
        self._dir_dirty = False
        self._failed: BaseException | None = None
        self._closed = False
        self._dir_lock: DirectoryLock | None = None  # taken by ``open``, when no one here held it
        #: The newest batch as written: (base offset, next offset, bytes). ``read_raw`` serves it from memory:
        #: a Raft leader reads it once for every follower's Fetch of each new record.
        self._newest: tuple[int, int, bytes] | None = None

    @classmethod
    def open(
        cls,
        directory: str | os.PathLike[str],
        *,
        segment_bytes: int = DEFAULT_SEGMENT_BYTES,
        logger: logging.Logger | None = None,
        read_only: bool = False,
    ) -> MetadataLog:
        """Open (creating unless ``read_only``) the partition directory under ``directory``.

        Unless ``read_only``, the log directory (the partition directory's parent) must be locked
        by this process (see ``dir_lock``): if it is not, the lock is taken here and released by
        ``close``; DirectoryLockedError if another process holds it.

        Every batch of every segment is validated. A torn or corrupt tail is truncated (and the
        segments after it deleted), each with a warning naming the file, position and reason.
        ``read_only`` touches nothing on disk: the bad tail is only left out of the bookkeeping.
        """
        if segment_bytes <= 0:
            raise ValueError("segment_bytes must be positive")
        pdir = partition_dir(directory)
        log = cls(pdir, segment_bytes=segment_bytes, logger=logger or logging.getLogger(__name__),
                  read_only=read_only)  # fmt: skip
        if read_only:
            if not pdir.is_dir():
                raise FileNotFoundError(f"no metadata log directory at {pdir}")
            log._recover()
            return log
        # A writer owns the log directory: the lock comes before anything in it is read or changed.
        # A server locks its directories first (and keeps them); any other writer gets the lock here.
        lock = None if held_here(pdir.parent) else lock_directory(pdir.parent)
        try:
            created = not pdir.exists()
            pdir.mkdir(parents=True, exist_ok=True)
            if created:
                fsync_dir(pdir.parent)
            log._remove_leftovers()
            log._recover()
        except BaseException:
            if lock is not None:
                lock.release()
            raise
        log._dir_lock = lock
        return log

    def _remove_leftovers(self) -> None:
        removed = False
        for entry in os.scandir(self.directory):
            if entry.name.endswith(_LEFTOVER_SUFFIXES):
                self._logger.info("removing leftover file %s", entry.path)
                os.unlink(entry.path)
                removed = True
        if removed:
            fsync_dir(self.directory)

    def _recover(self) -> None:
        paths = list_segments(self.directory)
        expected: int | None = None
        for index, path in enumerate(paths):
            base = int(path.stem)
            if expected is not None and base != expected:
                # A gap (or overlap) between segments: nothing from here on can be trusted.
                scan = scan_batches(b"")
                reason = f"segment base offset {base} does not follow offset {expected - 1}"
            else:
                buf = map_prefix(path, path.stat().st_size)
                try:
                    scan = scan_batches(buf, expected_offset=base)
                finally:
                    unmap(buf)
                reason = scan.error.reason if scan.error else "torn batch at the end" if scan.torn else ""
            end = scan.next_offset if scan.next_offset is not None else base
            self._segments.append(Segment(base, path, scan.valid_bytes, end, scan))
            if reason:
                self._cut_tail(index, paths, scan.valid_bytes, reason)
                break
            expected = end
        self._next_offset = self._segments[-1].next_offset if self._segments else 0
        newest = self.snapshots()
        if newest and newest[0].end_offset > self._next_offset:
            # As Kafka does: a log that ends before the newest snapshot restarts at its end offset.
            self._logger.warning(
                "metadata log ends at offset %d, before snapshot %s: starting the log at %d",
                self._next_offset, newest[0].path.name, newest[0].end_offset,
            )  # fmt: skip
            if not self.read_only:
                for segment in self._segments:
                    delete_segment_files(segment.path)
                if self._segments:
                    fsync_dir(self.directory)
            self._segments.clear()
            self._next_offset = newest[0].end_offset
        self._durable_offset = self._next_offset
        for segment in self._segments:
            for base, epoch in zip(segment.scan.base_offsets, segment.scan.leader_epochs, strict=True):
                self._epochs.observe(epoch, base)
                self._last_epoch = epoch
        self._bytes_since_snapshot = self._bytes_from(newest[0].end_offset if newest else 0)

    def _cut_tail(self, index: int, paths: list[Path], valid_bytes: int, reason: str) -> None:
        path = paths[index]
        action = "ignoring (read-only)" if self.read_only else "truncating"
        self._logger.warning(
            "metadata log %s: %s at position %d; %s the rest of the file", path, reason, valid_bytes, action
        )
        later = paths[index + 1 :]
        for other in later:
            self._logger.warning("metadata log %s: after a bad batch in %s; %s it", other, path.name,
                                 "ignoring" if self.read_only else "deleting")  # fmt: skip
        if self.read_only:
            return
        with open(path, "r+b") as f:
            f.truncate(valid_bytes)
            os.fsync(f.fileno())
        delete_segment_files(path, keep_log=True)
        for other in later:
            delete_segment_files(other)
        fsync_dir(self.directory)

    @property
    def next_offset(self) -> int:
        """The offset the next appended record gets (the log end offset)."""
        return self._next_offset

    @property
    def log_start_offset(self) -> int:
        return self._segments[0].base_offset if self._segments else self._next_offset

    @property
    def durable_offset(self) -> int:
        """Every offset below this one has been fsynced."""
        return self._durable_offset

    @property
    def failed(self) -> BaseException | None:
        """The error of a failed fsync, after which the log refuses every write and flush; else None."""
        return self._failed

    @property
    def last_epoch(self) -> int:
        """Leader epoch of the last batch in the log, -1 when the log is empty."""
        return self._last_epoch

    @property
    def bytes_since_snapshot(self) -> int:
        """Bytes of the batches at or after the newest snapshot's end offset."""
        return self._bytes_since_snapshot

    def _bytes_from(self, offset: int) -> int:
        total = 0
        for segment in self._segments:
            if segment.next_offset <= offset:
                continue
            if segment.base_offset >= offset:
                total += segment.size
            else:
                index = bisect.bisect_left(segment.scan.base_offsets, offset)
                if index < len(segment.scan.positions):
                    total += segment.size - segment.scan.positions[index]
        return total

    def _check_writable(self) -> None:
        if self._closed:
            raise MetadataLogError("the metadata log is closed")
        if self.read_only:
            raise MetadataLogError("the metadata log was opened read-only")
        if self._failed is not None:
            raise MetadataLogError(f"the metadata log failed earlier: {self._failed!r}") from self._failed

    def append(
        self,
        values: Sequence[bytes],
        *,
        timestamp_ms: int,
        leader_epoch: int = 0,
        control: bool = False,
        keys: Sequence[bytes | None] | None = None,
    ) -> tuple[int, int]:
        """Write ``values`` as one batch; returns ``(base_offset, last_offset)``.

        The batch is handed to the OS, not fsynced: call ``flush`` before telling anyone it is
        committed. If the write fails the file is cut back and the offsets are not consumed.
        """
        self._check_writable()
        base = self._next_offset
        data = encode_batch(base, values, timestamp_ms=timestamp_ms, leader_epoch=leader_epoch,
                            control=control, keys=keys)  # fmt: skip
        segment = self._write_batch(data)
        last = base + len(values) - 1
        with self._lock:
            scan = segment.scan
            scan.base_offsets.append(base)
            scan.positions.append(segment.size)
            scan.leader_epochs.append(leader_epoch)
            segment.size += len(data)
            segment.next_offset = self._next_offset = last + 1
            self._newest = (base, last + 1, data)
            self._last_epoch = leader_epoch
            self._epochs.observe(leader_epoch, base)
            self._bytes_since_snapshot += len(data)
        return base, last

    def _write_batch(self, data: bytes) -> Segment:
        """Write one whole batch at the end of the active segment (rolling first if it is full) and return
        that segment; if the write fails the file is cut back to where it was, so no partial batch stays."""
        segment = self._segment_for(len(data))
        assert segment.fd is not None
        try:
            write_all(segment.fd, data)
        except BaseException:
            os.ftruncate(segment.fd, segment.size)
            raise
        return segment

    def _segment_for(self, size: int) -> Segment:
        active = self._segments[-1] if self._segments else None
        if active is not None and (active.size == 0 or active.size + size <= self.segment_bytes):
            if active.fd is None:
                active.fd = os.open(active.path, os.O_WRONLY | os.O_APPEND)
            return active
        path = self.directory / segment_file_name(self._next_offset)
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_EXCL, 0o644)
        empty = scan_batches(b"")
        segment = Segment(self._next_offset, path, 0, self._next_offset, empty, fd)
        with self._lock:
            if active is not None and active.fd is not None:
                self._retired_fds.append(active.fd)  # fsynced and closed by the next flush
                active.fd = None
            self._segments.append(segment)
            self._dir_dirty = True
        return segment

    def flush(self) -> None:
        """Fsync everything appended so far, and the directory if a segment was created.

        Safe to call from a worker thread while the owner thread appends (see module docstring).
        """
        with self._flush_lock:
            with self._lock:
                if self._failed is not None:
                    raise MetadataLogError(f"the metadata log failed earlier: {self._failed!r}")
                target = self._next_offset
                retired = list(self._retired_fds)
                active = self._segments[-1].fd if self._segments else None
                dir_dirty, self._dir_dirty = self._dir_dirty, False
            try:
                for fd in [*retired, *([active] if active is not None else [])]:
                    os.fsync(fd)
                if dir_dirty:
                    fsync_dir(self.directory)
            except OSError as exc:
                # After a failed fsync the page cache may have dropped the data: never retry it
                # and report success (the "fsyncgate" lesson). The log stays failed.
                with self._lock:
                    self._failed = exc
                raise
            with self._lock:
                for fd in retired:
                    self._retired_fds.remove(fd)
                    os.close(fd)
                self._durable_offset = max(self._durable_offset, target)

    def read(self, from_offset: int) -> Iterator[Batch]:
        """Batches holding offsets >= ``from_offset`` (the first may start before it), in order.

        Raises OffsetOutOfRangeError when ``from_offset`` is below the log start offset.
        """
        if from_offset < self.log_start_offset and from_offset < self._next_offset:
            raise OffsetOutOfRangeError(f"offset {from_offset} is below the log start offset {self.log_start_offset}")
        with self._lock:
            # (segment, size, batch count) as of now; appends after this are not read.
            view = [(s, s.size, len(s.scan.positions)) for s in self._segments if s.next_offset > from_offset]
        return self._read(view, from_offset)

    def _read(self, view: list[tuple[Segment, int, int]], from_offset: int) -> Iterator[Batch]:
        for segment, size, count in view:
            index = max(bisect.bisect_right(segment.scan.base_offsets, from_offset, 0, count) - 1, 0)
            start = segment.scan.positions[index] if count else 0
            buf = map_prefix(segment.path, size)
            try:
                for batch in iter_batches(buf, start, size):
                    if batch.last_offset >= from_offset:
                        yield batch
            finally:
                unmap(buf)

    def snapshots(self) -> list[SnapshotId]:
        """Snapshots by file name, newest first. Their content is checked by ``read_snapshot``.

        The list is cached: a leader consults it several times per Fetch, and listing the directory each time
        was a third of a Fetch's cost. Everything that adds or removes a snapshot file goes through this
        class (``write_snapshot``, ``_prune_snapshots``, a completed ``begin_snapshot_download``), which calls
        ``_snapshots_changed``; the generation check keeps a listing that raced with a change from being kept.
        """
        with self._lock:
            cached, generation = self._snapshot_list, self._snapshot_generation
        if cached is None:
            cached = list_snapshots(self.directory)
            with self._lock:
                if generation == self._snapshot_generation:
                    self._snapshot_list = cached
        return list(cached)

    @property
    def snapshot_generation(self) -> int:
        """Changes whenever a snapshot file is added or removed: a cached view of ``snapshots`` is valid while
        this has not moved since it was taken."""
        return self._snapshot_generation

    def _snapshots_changed(self) -> None:
        with self._lock:
            self._snapshot_list = None
            self._snapshot_generation += 1

    read_snapshot = staticmethod(read_snapshot)

    def write_snapshot(
        self,
        end_offset: int,
        epoch: int,
        values: Iterable[bytes],
        *,
        last_contained_timestamp_ms: int,
        timestamp_ms: int | None = None,
    ) -> Path:
        """Write ``values`` (framed records of an image) as snapshot ``end_offset``-``epoch``.

        Written to ``.checkpoint.part``, fsynced, renamed, and the directory fsynced; then all but
        the newest ``SNAPSHOTS_TO_KEEP`` snapshots are deleted. ``end_offset`` is exclusive and at
        most ``next_offset``. Raises FileExistsError if that snapshot exists.
        """
        self._check_writable()
        if not 0 <= end_offset <= self._next_offset:
            raise MetadataLogError(f"snapshot end offset {end_offset} outside [0, {self._next_offset}]")
        try:
            final = write_snapshot_file(
                self.directory, end_offset, epoch, values,
                last_contained_timestamp_ms=last_contained_timestamp_ms, timestamp_ms=timestamp_ms,
            )  # fmt: skip
        finally:
            self._snapshots_changed()
        self._prune_snapshots()
        newest = self.snapshots()[0].end_offset
        with self._lock:
            self._bytes_since_snapshot = self._bytes_from(newest)
        return final

    def _prune_snapshots(self) -> None:
        stale = self.snapshots()[SNAPSHOTS_TO_KEEP:]
        for snapshot in stale:
            self._logger.info("deleting old snapshot %s", snapshot.path.name)
            snapshot.path.unlink(missing_ok=True)
            self._snapshots_changed()
        if stale:
            fsync_dir(self.directory)

    def delete_segments_before(self, offset: int) -> int:
        """Delete the segments holding only offsets below ``offset`` and below the newest
        snapshot's end offset. The active segment is kept. Returns how many were deleted."""
        self._check_writable()
        snapshots = self.snapshots()
        if not snapshots:
            return 0
        limit = min(offset, snapshots[0].end_offset)
        with self._lock:
            doomed = []
            for segment in self._segments[:-1]:
                if segment.next_offset > limit:
                    break
                doomed.append(segment)
            del self._segments[: len(doomed)]
        for segment in doomed:
            self._logger.info("deleting metadata log segment %s (below snapshot)", segment.path.name)
            delete_segment_files(segment.path)
        if doomed:
            fsync_dir(self.directory)
        return len(doomed)

    def close(self) -> None:
        """Flush (unless read-only or failed) and release file descriptors. Idempotent."""
        if self._closed:
            return
        try:
            if not self.read_only and self._failed is None:
                self.flush()
        finally:
            with self._flush_lock, self._lock:
                for fd in self._retired_fds:
                    os.close(fd)
                self._retired_fds.clear()
                for segment in self._segments:
                    if segment.fd is not None:
                        os.close(segment.fd)
                        segment.fd = None
                self._closed = True
            if self._dir_lock is not None:
                self._dir_lock.release()

    def __enter__(self) -> MetadataLog:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
