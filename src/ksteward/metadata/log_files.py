"""The files of a metadata log and the batches of one file, for the tools that read a log without owning it.

``ksteward metadata dump`` and the pipeline's ``read_metadata`` both take a path an operator gives (a data
dir, a ``__cluster_metadata-0`` directory, a directory of segments, or one ``.log`` / ``.checkpoint`` file),
read every file under it, and report damage instead of stopping at it. This module is that one walk:

    for path in log_files(data_dir):                 # snapshots, then segments, each by offset
        for item in file_batches(path):              # Batch, then at most one TornTail or UnreadableBatch
            ...

The pipeline reads the files through Spark's file sources instead (any Hadoop file system), so both halves
also exist without a local path: :func:`log_file_names` picks and orders one directory's entries,
:func:`buffer_batches` walks one file's bytes. ``log_files`` and ``file_batches`` are those two on a local
path.

The server's own reads go through ``MetadataLog``, which repairs a torn tail; nothing here writes.
"""

from __future__ import annotations

import mmap
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from ksteward.metadata.batch import Batch, CorruptBatchError, UnsupportedCompressionError, iter_batches
from ksteward.metadata.log import PARTITION_DIR_NAME, partition_dir
from ksteward.metadata.segments import parse_segment_name
from ksteward.metadata.snapshot_file import parse_snapshot_name

__all__ = [
    "LOG_FILE_SUFFIXES",
    "NotAMetadataLogError",
    "TornTail",
    "UnreadableBatch",
    "buffer_batches",
    "file_batches",
    "log_file_names",
    "log_files",
]

#: The suffixes of the two kinds of file a metadata log holds: segments and snapshots.
LOG_FILE_SUFFIXES = (".log", ".checkpoint")


class NotAMetadataLogError(ValueError):
    """The path is neither a directory nor a ``.log`` / ``.checkpoint`` file."""

    def __init__(self, path: Path) -> None:
        super().__init__(f"{path}: not a metadata log directory, a .log segment or a .checkpoint snapshot")
        self.path = path


@dataclass(frozen=True, slots=True)
class TornTail:
    """Bytes at the end of a file that do not form a whole batch (a write cut short): ``size`` bytes at
    ``position``. What comes before them is whole."""

    position: int
    size: int


@dataclass(frozen=True, slots=True)
class UnreadableBatch:
    """A batch at ``position`` that cannot be read: corrupt (CRC, length, magic, records) or compressed with a
    codec ``metadata.batch`` does not decode. The rest of the file cannot be framed and is not read."""

    position: int
    error: CorruptBatchError | UnsupportedCompressionError


def log_files(path: str | os.PathLike[str]) -> list[Path]:
    """The files under ``path``: its snapshots then its segments, each in offset order; ``[path]`` for one
    ``.log`` or ``.checkpoint`` file.

    A directory is a data dir (its ``__cluster_metadata-0`` is read), that partition directory itself, or
    any directory holding segments directly. Raises :class:`NotAMetadataLogError` for anything else."""
    p = Path(path)
    if p.is_file() and p.suffix in LOG_FILE_SUFFIXES:
        return [p]
    if not p.is_dir():
        raise NotAMetadataLogError(p)
    directory = partition_dir(p)
    if not directory.is_dir() and p.name != PARTITION_DIR_NAME:
        directory = p  # a directory holding segments directly
    return [directory / name for name in log_file_names(os.listdir(directory))]


def log_file_names(names: Iterable[str]) -> list[str]:
    """Of one directory's entry names, the log's files in :func:`log_files` order: the snapshots by end offset
    and epoch, then the segments by base offset. Other names (``quorum-state``, ``.index``, ``.lock``,
    ``.checkpoint.part``) are not the log's."""
    names = list(names)
    snapshots = sorted((key, name) for name in names if (key := parse_snapshot_name(name)) is not None)
    segments = sorted((base, name) for name in names if (base := parse_segment_name(name)) is not None)
    return [name for _, name in snapshots] + [name for _, name in segments]


def file_batches(path: Path) -> Iterator[Batch | TornTail | UnreadableBatch]:
    """The batches of one segment or snapshot file in file order, then a :class:`TornTail` or an
    :class:`UnreadableBatch` if the file ends in one (nothing follows it). An empty file has none.

    The file is memory-mapped for the walk; each batch is a copy, valid after the file is closed. OSError
    (a file that cannot be opened) is raised, for the caller to report."""
    size = path.stat().st_size
    if size == 0:
        return
    with open(path, "rb") as f, mmap.mmap(f.fileno(), size, access=mmap.ACCESS_READ) as buf:
        yield from buffer_batches(buf)


def buffer_batches(buf: bytes | bytearray | mmap.mmap) -> Iterator[Batch | TornTail | UnreadableBatch]:
    """:func:`file_batches` on a file's bytes already in memory (each batch is a copy)."""
    size = len(buf)
    batches = iter_batches(buf)
    while True:
        try:
            batch = next(batches)
        except StopIteration:
            if batches.torn:
                yield TornTail(batches.valid_bytes, size - batches.valid_bytes)
            return
        except (CorruptBatchError, UnsupportedCompressionError) as exc:
            yield UnreadableBatch(getattr(exc, "position", batches.valid_bytes), exc)
            return
        yield batch
