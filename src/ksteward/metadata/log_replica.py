"""The replication side of ``MetadataLog``: what a KRaft leader serves and what a follower writes.

Kafka's ``KafkaMetadataLog`` gives the Raft client ``read`` (whole batches from an offset, at least one),
``appendAsFollower`` (batches that keep the leader's offsets and epochs), ``truncateTo`` and
``truncateToLatestSnapshot``, and ``lastFetchedEpoch``. ``MetadataLog`` inherits them from this mixin;
the bookkeeping it uses (segments, offsets, the epoch history, the locks) is ``MetadataLog``'s, declared
below for the type checker. The files keep ``log``'s rules: one writer, nothing reported durable before
an fsync, a torn tail cut at the next open.
"""

from __future__ import annotations

import bisect
import logging
import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from .batch import scan_batches
from .epochs import EpochHistory
from .files import fsync_dir
from .segments import Segment, delete_segment_files
from .snapshot_file import SnapshotDownload, SnapshotId

__all__ = ["ReplicaLogMixin"]


class ReplicaLogMixin:
    directory: Path
    _segments: list[Segment]
    _next_offset: int
    _durable_offset: int
    _last_epoch: int
    _epochs: EpochHistory
    _bytes_since_snapshot: int
    _newest: tuple[int, int, bytes] | None
    _lock: threading.Lock
    _flush_lock: threading.Lock
    _logger: logging.Logger

    if TYPE_CHECKING:  # provided by MetadataLog

        def snapshots(self) -> list[SnapshotId]: ...
        def _check_writable(self) -> None: ...
        def _write_batch(self, data: bytes) -> Segment: ...
        def _bytes_from(self, offset: int) -> int: ...
        def _prune_snapshots(self) -> None: ...
        def _snapshots_changed(self) -> None: ...
        @property
        def log_start_offset(self) -> int: ...

    @property
    def epoch_history(self) -> EpochHistory:
        """Where each leader epoch starts in this log (read it from the owner thread only)."""
        return self._epochs

    @property
    def last_fetched_epoch(self) -> int:
        """Kafka's ``ReplicatedLog.lastFetchedEpoch``: the epoch of the last batch; for a log with no batch,
        the epoch of the snapshot it starts at; 0 for an empty log."""
        if self._last_epoch >= 0:
            return self._last_epoch
        for snapshot in self.snapshots():
            if snapshot.end_offset == self._next_offset:
                return snapshot.epoch
        return 0

    def read_raw(self, from_offset: int, max_bytes: int, *, end_offset: int | None = None) -> bytes:
        """Whole batches, as stored, from the one holding ``from_offset``: at most ``max_bytes`` of them but
        always the first (Kafka's ``minOneMessage``), and none holding an offset at or past ``end_offset``.

        Raises ``OffsetOutOfRangeError`` below the log start offset, or when a segment was deleted
        meanwhile (the log start moved: the caller looks again).
        """
        from .log import OffsetOutOfRangeError  # log imports this module

        if from_offset < self.log_start_offset and from_offset < self._next_offset:
            raise OffsetOutOfRangeError(f"offset {from_offset} is below the log start offset {self.log_start_offset}")
        with self._lock:
            limit = self._next_offset if end_offset is None else min(end_offset, self._next_offset)
            newest = self._newest
            if newest is not None and newest[0] <= from_offset < newest[1] <= limit:
                return newest[2]  # the newest batch alone: the one holding from_offset, and nothing after it
            view = [(s, s.size, len(s.scan.positions), s.next_offset) for s in self._segments
                    if s.next_offset > from_offset and s.base_offset < limit]  # fmt: skip
        chunks: list[bytes] = []
        total = 0
        for segment, size, count, next_offset in view:
            positions, bases = segment.scan.positions, segment.scan.base_offsets
            index = max(bisect.bisect_right(bases, from_offset, 0, count) - 1, 0)
            start = stop = positions[index] if count else 0
            full = False
            while index < count:
                end_pos, end_offset_of_batch = (
                    (positions[index + 1], bases[index + 1]) if index + 1 < count else (size, next_offset)
                )
                if end_offset_of_batch > limit or (total + end_pos - start > max_bytes and (chunks or stop > start)):
                    full = True
                    break
                stop = end_pos
                index += 1
            if stop > start:
                try:
                    chunk = _pread(segment.path, start, stop - start)
                except FileNotFoundError:
                    raise OffsetOutOfRangeError(f"segment {segment.path.name} was deleted while being read") from None
                chunks.append(chunk)
                total += len(chunk)
            if full:
                break
        return b"".join(chunks)

    def append_raw(self, data: bytes) -> tuple[int, int]:
        """Append whole batches received from the leader, keeping their offsets and epochs
        (``appendAsFollower``); returns ``(first offset, last offset)``. Each batch's CRC is checked, the
        first must start at ``next_offset`` and each following one where the previous ends, and epochs
        never go down; otherwise ``MetadataLogError`` and nothing is written. Not fsynced: ``flush``."""
        from .log import MetadataLogError

        self._check_writable()
        scan = scan_batches(data, expected_offset=self._next_offset)
        if scan.error is not None:
            raise MetadataLogError(f"refusing batches from the leader: {scan.error}")
        if scan.torn or not scan.positions or scan.next_offset is None:
            raise MetadataLogError("refusing batches from the leader: not a sequence of whole batches")
        epochs = list(scan.leader_epochs)
        if any(b < a for a, b in zip([self._last_epoch, *epochs], epochs, strict=False)):
            raise MetadataLogError(f"refusing batches from the leader: epochs {epochs} after epoch {self._last_epoch}")
        first = self._next_offset
        count = len(scan.positions)
        for i in range(count):
            start = scan.positions[i]
            end = scan.positions[i + 1] if i + 1 < count else scan.valid_bytes
            chunk = data[start:end]
            segment = self._write_batch(chunk)
            base = scan.base_offsets[i]
            next_offset = scan.base_offsets[i + 1] if i + 1 < count else scan.next_offset
            with self._lock:
                segment.scan.base_offsets.append(base)
                segment.scan.positions.append(segment.size)
                segment.scan.leader_epochs.append(epochs[i])
                segment.size += len(chunk)
                segment.next_offset = self._next_offset = next_offset
                self._newest = (base, next_offset, chunk)
                self._last_epoch = epochs[i]
                self._epochs.observe(epochs[i], base)
                self._bytes_since_snapshot += len(chunk)
        return first, self._next_offset - 1

    def truncate_to(self, offset: int) -> int:
        """Remove every batch holding an offset >= ``offset``, durably; returns the new end offset.

        A batch is removed whole (Kafka's ``LogSegment.truncateTo``), so the end may land below
        ``offset``. Truncating below the log start offset is refused. Not concurrent with ``flush``.
        """
        from .log import MetadataLogError

        self._check_writable()
        if offset >= self._next_offset:
            return self._next_offset
        if offset < self.log_start_offset:
            raise MetadataLogError(f"cannot truncate to {offset}, below the log start offset {self.log_start_offset}")
        with self._flush_lock:
            with self._lock:
                keep = max(bisect.bisect_right([s.base_offset for s in self._segments], offset) - 1, 0)
                segment, doomed = self._segments[keep], self._segments[keep + 1 :]
                scan = segment.scan
                batch = max(bisect.bisect_right(scan.base_offsets, offset) - 1, 0)
                cut = scan.positions[batch] if scan.positions else 0
                new_end = scan.base_offsets[batch] if scan.positions else segment.base_offset
                del self._segments[keep + 1 :]
                del scan.base_offsets[batch:], scan.positions[batch:], scan.leader_epochs[batch:]
                segment.size, segment.next_offset = cut, new_end
                self._next_offset = new_end
                self._newest = None
                self._durable_offset = min(self._durable_offset, new_end)
                self._epochs.truncate_from_end(new_end)
                self._last_epoch = next((s.scan.leader_epochs[-1] for s in reversed(self._segments)
                                         if s.scan.leader_epochs), -1)  # fmt: skip
            for gone in doomed:
                if gone.fd is not None:
                    os.close(gone.fd)
                    gone.fd = None
                delete_segment_files(gone.path)
            os.truncate(segment.path, cut)
            fd = os.open(segment.path, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
            delete_segment_files(segment.path, keep_log=True)
            fsync_dir(self.directory)
        snapshots = self.snapshots()
        with self._lock:
            self._bytes_since_snapshot = self._bytes_from(snapshots[0].end_offset if snapshots else 0)
        self._logger.info("truncated the metadata log to offset %d (asked: %d)", new_end, offset)
        return new_end

    def begin_snapshot_download(self, end_offset: int, epoch: int) -> SnapshotDownload:
        """A snapshot file to fill with the chunks FetchSnapshot returns (``snapshot_file.SnapshotDownload``)."""
        self._check_writable()
        return SnapshotDownload(self.directory, end_offset, epoch, on_complete=self._snapshots_changed)

    def truncate_to_latest_snapshot(self) -> bool:
        """Kafka's ``truncateToLatestSnapshot``: when the newest snapshot is past this log (a higher epoch
        than the last batch's, or the same epoch and a higher end offset), delete every segment and start
        the log at the snapshot's end offset. Returns whether it did."""
        self._check_writable()
        snapshots = self.snapshots()
        if not snapshots:
            return False
        newest = snapshots[0]
        last_epoch = max(self._last_epoch, 0)
        if not (newest.epoch > last_epoch or (newest.epoch == last_epoch and newest.end_offset > self._next_offset)):
            return False
        with self._flush_lock:
            with self._lock:
                doomed = list(self._segments)
                self._segments.clear()
                self._next_offset = self._durable_offset = newest.end_offset
                self._newest = None
                self._last_epoch = -1
                self._epochs.clear()
                self._bytes_since_snapshot = 0
            for gone in doomed:
                if gone.fd is not None:
                    os.close(gone.fd)
                    gone.fd = None
                delete_segment_files(gone.path)
            fsync_dir(self.directory)
        self._prune_snapshots()
        self._logger.info("the metadata log now starts at snapshot %s", newest.path.name)
        return True


def _pread(path: Path, position: int, size: int) -> bytes:
    """``size`` bytes of ``path`` from ``position``: three system calls, without a Python file object (a
    Raft leader reads the newest batch for every follower's Fetch)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        chunks = []
        while size > 0:  # a regular file returns short only at its end
            chunk = os.pread(fd, size, position)
            if not chunk:
                break
            chunks.append(chunk)
            position += len(chunk)
            size -= len(chunk)
        return b"".join(chunks) if len(chunks) != 1 else chunks[0]
    finally:
        os.close(fd)
