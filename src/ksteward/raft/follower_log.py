"""Carry out a ``RaftObserver``'s actions on a follower's own ``MetadataLog``.

The observer decides; this applies: batches are appended as received (``append_raw``), a diverging log is
cut (``truncate_to``), a snapshot arrives chunk by chunk into a ``.part`` file and, once whole, is
renamed into place before the log is restarted at its end offset (``truncate_to_latest_snapshot``). The
file I/O is ``MetadataLog``'s; this module keeps no socket and no clock. Brokers need not fsync each
appended batch (Kafka's observers do not, unless they also hold the controller role); ``flush_appends``
chooses.
"""

from __future__ import annotations

import logging

from ksteward.metadata.log import MetadataLog
from ksteward.metadata.snapshot_file import SnapshotDownload

from .log_view import MetadataLogView
from .observer import (
    AbortSnapshotDownload,
    Action,
    AppendBatches,
    HighWatermarkUpdated,
    InstallSnapshot,
    StartSnapshotDownload,
    TruncateTo,
    WriteSnapshotChunk,
)

__all__ = ["FollowerLog"]

log = logging.getLogger(__name__)


class FollowerLog:
    """A follower's log and the committed offset it has learnt. ``view`` is what the observer reads."""

    def __init__(self, metadata_log: MetadataLog, *, flush_appends: bool = False) -> None:
        self.log = metadata_log
        self.view = MetadataLogView(metadata_log)
        self.flush_appends = flush_appends
        self.high_watermark: int | None = None
        self.installed: list[InstallSnapshot] = []
        self._download: SnapshotDownload | None = None

    def apply(self, actions: list[Action]) -> None:
        for action in actions:
            self.apply_one(action)

    def apply_one(self, action: Action) -> None:
        if isinstance(action, AppendBatches):
            self.log.append_raw(action.records)
            if self.flush_appends:
                self.log.flush()
        elif isinstance(action, TruncateTo):
            self.log.truncate_to(action.offset)
        elif isinstance(action, StartSnapshotDownload):
            self._drop_download()
            self._download = self.log.begin_snapshot_download(action.snapshot.offset, action.snapshot.epoch)
        elif isinstance(action, WriteSnapshotChunk):
            if self._download is None:
                raise RuntimeError(f"a chunk of snapshot {action.snapshot} with no download open")
            self._download.append(action.position, action.data)
        elif isinstance(action, InstallSnapshot):
            if self._download is None:
                raise RuntimeError(f"snapshot {action.snapshot} complete with no download open")
            path = self._download.complete()
            self._download = None
            self.log.truncate_to_latest_snapshot()
            self.installed.append(action)
            log.info("installed metadata snapshot %s from the leader", path.name)
        elif isinstance(action, AbortSnapshotDownload):
            self._drop_download()
        elif isinstance(action, HighWatermarkUpdated):
            self.high_watermark = action.offset

    def _drop_download(self) -> None:
        if self._download is not None:
            self._download.abort()
            self._download = None

    def close(self) -> None:
        self._drop_download()
        self.log.close()
