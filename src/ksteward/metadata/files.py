"""The file primitives the metadata log and its snapshots share: whole writes, mapped reads, and the
directory fsync that makes a created, renamed or deleted file durable (as Kafka's ``Utils.flushDir``)."""

from __future__ import annotations

import mmap
import os
from pathlib import Path

__all__ = ["fsync_dir", "map_prefix", "unmap", "write_all"]


def fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def map_prefix(path: Path, size: int) -> mmap.mmap | bytes:
    """The first ``size`` bytes of a file, mapped read-only (mmap keeps its own descriptor)."""
    if size == 0:
        return b""
    with open(path, "rb") as f:
        return mmap.mmap(f.fileno(), size, access=mmap.ACCESS_READ)


def unmap(buf: mmap.mmap | bytes) -> None:
    if isinstance(buf, mmap.mmap):
        buf.close()
