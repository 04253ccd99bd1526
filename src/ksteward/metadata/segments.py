"""One segment file of the metadata log, as ``MetadataLog`` tracks it, and the file-name rules of segments.

Split out of ``log`` so that the leader-side writes (``log``) and the follower-side writes
(``log_replica``) share them.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from .batch import ScanResult

__all__ = ["Segment", "delete_segment_files", "list_segments", "parse_segment_name", "segment_file_name"]

_SEGMENT_RE = re.compile(r"^(\d{20})\.log$")


@dataclass(slots=True)
class Segment:
    base_offset: int
    path: Path
    size: int
    next_offset: int
    scan: ScanResult  # its arrays grow with every append: the in-memory offset index
    fd: int | None = None

    def batch_end(self, index: int, count: int | None = None) -> tuple[int, int]:
        """``(end position, next offset)`` of batch ``index`` among the first ``count`` batches."""
        positions, bases = self.scan.positions, self.scan.base_offsets
        count = len(positions) if count is None else count
        if index + 1 < count:
            return positions[index + 1], bases[index + 1]
        return self.size, self.next_offset


def segment_file_name(base_offset: int) -> str:
    return f"{base_offset:020d}.log"


def parse_segment_name(name: str) -> int | None:
    """The base offset of a segment file name (``%020d.log``); None for any other name."""
    match = _SEGMENT_RE.match(name)
    return int(match[1]) if match else None


def list_segments(directory: Path) -> list[Path]:
    """Segment files of a partition directory in offset order."""
    names = sorted(e.name for e in os.scandir(directory) if _SEGMENT_RE.match(e.name))
    return [directory / n for n in names]


def delete_segment_files(path: Path, *, keep_log: bool = False) -> None:
    """The segment and the index files Kafka may have left beside it (stale once we change it)."""
    for suffix in (".index", ".timeindex", ".txnindex") if keep_log else (".log", ".index", ".timeindex", ".txnindex"):
        path.with_suffix(suffix).unlink(missing_ok=True)
