"""The Raft view of a metadata log, and Kafka's rule for where a fetcher's log stands against it.

``validate_offset_and_epoch`` is Kafka's ``ReplicatedLog.validateOffsetAndEpoch``: a Fetch at
``(offset, last fetched epoch)`` is VALID (records follow), DIVERGING (the fetcher truncates to the
returned epoch end) or SNAPSHOT (the fetcher downloads the returned snapshot). ``end_offset_for_epoch``
is ``KafkaMetadataLog.endOffsetForEpoch`` and ``truncation_offset`` is ``ReplicatedLog.truncateToEndOffset``.

``MetadataLogView`` adapts a ``metadata.log.MetadataLog``. Where Kafka moves its log start offset to a
snapshot's end offset, ksteward deletes whole segments, so its first segment may start below the
oldest snapshot it still needs; the epoch of the record just before such a start is unknown. The view
therefore starts the Raft log at the first snapshot end offset at or after the first segment (or at the
first segment when it starts at 0 or exactly at a snapshot), which restores Kafka's invariant "the log
start offset is the oldest snapshot's end offset". A fetcher below that start gets the snapshot.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from ksteward.metadata.epochs import OffsetAndEpoch
from ksteward.metadata.log import MetadataLog, SnapshotId
from ksteward.metadata.snapshot_file import read_snapshot_chunk

__all__ = [
    "BOOTSTRAP_SNAPSHOT_ID",
    "FetchValidity",
    "LogView",
    "MetadataLogView",
    "ValidOffsetAndEpoch",
    "end_offset_for_epoch",
    "truncation_offset",
    "validate_offset_and_epoch",
]

#: Written by Kafka's storage tool (KIP-853); never offered to a fetcher.
BOOTSTRAP_SNAPSHOT_ID = OffsetAndEpoch(0, 0)


class LogView(Protocol):
    """What both sides read of a log. ``end_offset`` is what may be served (leader) or the log end (observer)."""

    @property
    def start_offset(self) -> int: ...
    @property
    def end_offset(self) -> int: ...
    @property
    def log_end_offset(self) -> int: ...
    @property
    def last_fetched_epoch(self) -> int: ...
    def epoch_end(self, epoch: int) -> OffsetAndEpoch | None: ...
    def earliest_snapshot(self) -> OffsetAndEpoch | None: ...
    def latest_snapshot(self) -> OffsetAndEpoch | None: ...
    def read(self, offset: int, max_bytes: int) -> bytes: ...
    def snapshot_chunk(self, snapshot: OffsetAndEpoch, position: int, max_bytes: int) -> tuple[int, bytes] | None: ...


class FetchValidity(enum.Enum):
    VALID = "valid"
    DIVERGING = "diverging"
    SNAPSHOT = "snapshot"


@dataclass(frozen=True, slots=True)
class ValidOffsetAndEpoch:
    kind: FetchValidity
    offset_and_epoch: OffsetAndEpoch


def end_offset_for_epoch(log: LogView, epoch: int) -> OffsetAndEpoch:
    """The largest epoch <= ``epoch`` in ``log`` and where it ends; the log end and last fetched epoch when
    ``epoch`` is above every known one; the oldest snapshot when the log begins right at it."""
    found = log.epoch_end(epoch)
    if found is None:
        return OffsetAndEpoch(log.log_end_offset, log.last_fetched_epoch)
    earliest = log.earliest_snapshot()
    if earliest is not None and found.offset == earliest.offset and found.epoch < epoch:
        return earliest
    return found


def validate_offset_and_epoch(log: LogView, offset: int, epoch: int) -> ValidOffsetAndEpoch:
    """Kafka's rule, with its 4.0 addition: an empty fetcher gets the newest snapshot when there is one."""
    latest = log.latest_snapshot()
    if offset == 0 and latest is not None:
        return ValidOffsetAndEpoch(FetchValidity.SNAPSHOT, latest)
    start = log.start_offset
    if start == 0 and offset == 0:
        return ValidOffsetAndEpoch(FetchValidity.VALID, OffsetAndEpoch(0, 0))
    earliest = log.earliest_snapshot()
    if (
        earliest is not None
        and latest is not None
        and (offset < start or (offset == start and epoch != earliest.epoch) or epoch < earliest.epoch)
    ):
        return ValidOffsetAndEpoch(FetchValidity.SNAPSHOT, latest)
    end = end_offset_for_epoch(log, epoch)
    if end.epoch != epoch or end.offset < offset:
        return ValidOffsetAndEpoch(FetchValidity.DIVERGING, end)
    return ValidOffsetAndEpoch(FetchValidity.VALID, OffsetAndEpoch(offset, epoch))


def truncation_offset(log: LogView, diverging: OffsetAndEpoch) -> int:
    """Where a follower cuts its log for the leader's ``DivergingEpoch``."""
    if diverging.epoch == 0:
        return min(diverging.offset, log.log_end_offset)
    local = end_offset_for_epoch(log, diverging.epoch)
    if local.epoch == diverging.epoch:
        return min(local.offset, diverging.offset)
    return local.offset


class MetadataLogView:
    """A ``MetadataLog`` as ``LogView``. ``served_end`` (the leader's durable end) bounds what is read;
    without it the view is a follower's own log, whose end is its log end offset."""

    def __init__(self, log: MetadataLog, served_end: Callable[[], int] | None = None) -> None:
        self.log = log
        self._served_end = served_end
        self._listed: tuple[int, tuple[SnapshotId, ...]] = (-1, ())  # (snapshot generation, its _snapshots)
        #: ``_start_and_earliest`` for (snapshot generation, first segment's base offset): both checked first.
        self._start: tuple[int, int, tuple[int, SnapshotId | None]] = (-1, -1, (0, None))

    def _snapshots(self) -> tuple[SnapshotId, ...]:
        """Snapshots oldest first, without the bootstrap checkpoint. Kept until a snapshot is added or removed
        (``MetadataLog.snapshot_generation``): a leader validates every Fetch against them several times. The
        generation is read before the listing, so a listing that raced with a change is taken again."""
        generation = self.log.snapshot_generation
        listed_at, snapshots = self._listed
        if listed_at != generation:
            snapshots = tuple(s for s in reversed(self.log.snapshots()) if (s.end_offset, s.epoch) != (0, 0))
            self._listed = (generation, snapshots)
        return snapshots

    def _start_and_earliest(self) -> tuple[int, SnapshotId | None]:
        """(log start offset, earliest usable snapshot), kept while neither the snapshots nor the first segment
        change: a leader validates every Fetch with it, three times over (``validate_offset_and_epoch``)."""
        first_segment = self.log.log_start_offset
        generation = self.log.snapshot_generation
        at_generation, at_first, found = self._start
        if at_generation == generation and at_first == first_segment:
            return found
        usable = [s for s in self._snapshots() if s.end_offset >= first_segment]
        if not usable:
            found = (first_segment, None)
        elif first_segment == 0 or usable[0].end_offset == first_segment:
            found = (first_segment, usable[0])
        else:
            found = (usable[0].end_offset, usable[0])
        self._start = (generation, first_segment, found)
        return found

    @property
    def start_offset(self) -> int:
        return self._start_and_earliest()[0]

    @property
    def log_end_offset(self) -> int:
        return self.log.next_offset

    @property
    def end_offset(self) -> int:
        return self._served_end() if self._served_end is not None else self.log.next_offset

    @property
    def last_fetched_epoch(self) -> int:
        return self.log.last_fetched_epoch

    def epoch_end(self, epoch: int) -> OffsetAndEpoch | None:
        return self.log.epoch_history.end_offset_for(epoch, self.log.next_offset)

    def earliest_snapshot(self) -> OffsetAndEpoch | None:
        earliest = self._start_and_earliest()[1]
        return None if earliest is None else OffsetAndEpoch(earliest.end_offset, earliest.epoch)

    def latest_snapshot(self) -> OffsetAndEpoch | None:
        snapshots = self._snapshots()
        return OffsetAndEpoch(snapshots[-1].end_offset, snapshots[-1].epoch) if snapshots else None

    def read(self, offset: int, max_bytes: int) -> bytes:
        end = self.end_offset
        if offset >= end:  # nothing to serve yet: every parked Fetch reads here once before it waits
            return b""
        return self.log.read_raw(offset, max_bytes, end_offset=end)

    def snapshot_chunk(self, snapshot: OffsetAndEpoch, position: int, max_bytes: int) -> tuple[int, bytes] | None:
        for found in self._snapshots():
            if (found.end_offset, found.epoch) == (snapshot.offset, snapshot.epoch):
                try:
                    return read_snapshot_chunk(found.path, position, max_bytes)
                except FileNotFoundError:  # deleted after the listing: as if it never existed
                    return None
        return None
