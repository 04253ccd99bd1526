"""The leader-epoch history of a metadata log: where each leader epoch starts, derived from batch headers.

Kafka keeps this as the ``leader-epoch-checkpoint`` file (``LeaderEpochFileCache``). ksteward derives it
from the ``partitionLeaderEpoch`` of every batch when the log is opened, so it needs no file of its own and
survives a restart with the segments. KRaft uses it to decide whether a fetcher's log diverged
(``ReplicatedLog.validateOffsetAndEpoch``) and where a follower truncates (``truncateToEndOffset``).

Pure values: no I/O.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

__all__ = ["EpochHistory", "OffsetAndEpoch"]


@dataclass(frozen=True, slots=True, order=True)
class OffsetAndEpoch:
    """Kafka's ``OffsetAndEpoch``; as a snapshot id, ``offset`` is the exclusive end offset."""

    offset: int
    epoch: int


class EpochHistory:
    """``(epoch, start offset)`` for each leader epoch present in the log, in increasing order."""

    def __init__(self) -> None:
        self._epochs: list[int] = []
        self._starts: list[int] = []

    def __len__(self) -> int:
        return len(self._epochs)

    def entries(self) -> list[tuple[int, int]]:
        return list(zip(self._epochs, self._starts, strict=True))

    @property
    def latest_epoch(self) -> int | None:
        return self._epochs[-1] if self._epochs else None

    def observe(self, epoch: int, base_offset: int) -> None:
        """A batch of ``epoch`` starts at ``base_offset``. Only a higher epoch opens an entry: batches of a
        lower epoch after a higher one do not happen in a KRaft log (a leader's epoch only grows)."""
        if not self._epochs or epoch > self._epochs[-1]:
            self._epochs.append(epoch)
            self._starts.append(base_offset)

    def truncate_from_end(self, end_offset: int) -> None:
        """Forget the epochs that start at or after ``end_offset`` (the log was cut there)."""
        keep = bisect.bisect_left(self._starts, end_offset)
        del self._epochs[keep:], self._starts[keep:]

    def clear(self) -> None:
        self._epochs.clear()
        self._starts.clear()

    def end_offset_for(self, epoch: int, log_end_offset: int) -> OffsetAndEpoch | None:
        """Kafka's ``LeaderEpochFileCache.endOffsetFor``: the largest epoch <= ``epoch`` and where it ends
        (the next epoch's start, or the log end for the latest epoch); None for an epoch above every
        known one. An epoch below every known one gives ``(epoch, start of the first known epoch)``."""
        if epoch < 0 or not self._epochs:
            return None
        if epoch == self._epochs[-1]:
            return OffsetAndEpoch(log_end_offset, epoch)
        higher = bisect.bisect_right(self._epochs, epoch)
        if higher == len(self._epochs):
            return None
        if higher == 0:
            return OffsetAndEpoch(self._starts[0], epoch)
        return OffsetAndEpoch(self._starts[higher], self._epochs[higher - 1])
