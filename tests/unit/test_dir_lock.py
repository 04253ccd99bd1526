"""The data-directory lock: one process per directory, as Kafka's ``LogManager.lockLogDirs``.

Other processes are real child processes holding the lock, synchronised on a line they print.
"""

from __future__ import annotations

import argparse
import io
import logging
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from ksteward.cli.metadata import add_parser
from ksteward.metadata.dir_lock import (
    LOCK_FILE_NAME,
    DirectoryLockedError,
    DirectoryLockError,
    held_here,
    lock_directories,
    lock_directory,
)
from ksteward.metadata.loader import load
from ksteward.metadata.log import PARTITION_DIR_NAME, MetadataLog
from ksteward.pipeline.readers.metadata import metadata_files

LOGGER = logging.getLogger("test.dir_lock")

# A child that locks argv[1], says so, and holds the lock until its stdin closes (or it is killed).
HOLDER = """
import sys
from ksteward.metadata.dir_lock import lock_directory
lock = lock_directory(sys.argv[1])
print("locked", flush=True)
sys.stdin.read()
lock.release()
"""


class Holder:
    def __init__(self, directory: Path) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", HOLDER, str(directory)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        assert line == "locked\n", f"the child did not take the lock: {line!r}"

    def let_go(self) -> None:
        """Close the child's stdin: it releases the lock and exits."""
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        assert self.proc.wait(timeout=30) == 0

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait(timeout=30)


@pytest.fixture
def holder(tmp_path: Path) -> Iterator[Holder]:
    """Another process holding the lock on ``tmp_path / "data"``."""
    h = Holder(tmp_path / "data")
    try:
        yield h
    finally:
        h.kill()


def test_a_second_lock_on_the_same_directory_is_refused(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with lock_directory(data):
        with pytest.raises(DirectoryLockedError, match=f"lock on file .lock in {data}") as caught:
            lock_directory(data)
        assert caught.value.directory == data and caught.value.by_this_process
        assert held_here(data)


def test_release_allows_a_new_lock(tmp_path: Path) -> None:
    first = lock_directory(tmp_path)
    first.release()
    first.release()  # idempotent
    assert not first.held and not held_here(tmp_path)
    with lock_directory(tmp_path) as again:
        assert again.held
    assert (tmp_path / LOCK_FILE_NAME).is_file(), "the lock file stays (deleting it would race)"


def test_a_lock_held_by_another_process_blocks_this_one(tmp_path: Path, holder: Holder) -> None:
    data = tmp_path / "data"
    with pytest.raises(DirectoryLockedError) as caught:
        lock_directory(data)
    message = str(caught.value)
    assert str(data) in message and "another process" in message and not caught.value.by_this_process
    assert not held_here(data)
    holder.let_go()
    lock_directory(data).release()


def test_the_kernel_releases_the_lock_of_a_killed_process(tmp_path: Path, holder: Holder) -> None:
    holder.kill()  # SIGKILL: no release, no cleanup; nothing stale remains
    lock_directory(tmp_path / "data").release()


def test_lock_directories_takes_all_or_none(tmp_path: Path, holder: Holder) -> None:
    free = tmp_path / "free"
    with pytest.raises(DirectoryLockedError, match=str(tmp_path / "data")):
        lock_directories([free, tmp_path / "data"])
    assert not held_here(free)


def test_two_spellings_of_one_directory_are_locked_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "data").mkdir()
    locks = lock_directories([Path("data"), tmp_path / "data", tmp_path / "data" / "..", tmp_path])
    try:
        assert [lock.directory for lock in locks] == [Path("data"), tmp_path / "data" / ".."]
    finally:
        for lock in locks:
            lock.release()


def test_a_file_is_not_a_directory(tmp_path: Path) -> None:
    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("x")
    with pytest.raises(DirectoryLockError, match=f"data directory {not_a_dir} is not a directory"):
        lock_directory(not_a_dir)
    with pytest.raises(DirectoryLockError, match=str(not_a_dir / "data")):
        lock_directory(not_a_dir / "data")
    assert not_a_dir.read_text() == "x"


# --- writers of the metadata log take the lock; readers do not -----------------------------------


def leftover(data: Path) -> Path:
    """A snapshot in progress, as a live node has it while it writes one."""
    MetadataLog.open(data).close()
    part = data / PARTITION_DIR_NAME / "00000000000000000000-0000000000.checkpoint.part"
    part.write_bytes(b"half a snapshot")
    return part


def test_a_writable_open_is_refused_while_another_process_holds_the_directory(tmp_path: Path) -> None:
    data = tmp_path / "data"
    part = leftover(data)
    holder = Holder(data)
    try:
        with pytest.raises(DirectoryLockedError, match=str(data)):
            MetadataLog.open(data)
        with pytest.raises(DirectoryLockedError, match=str(data)):
            MetadataLog.open(data / PARTITION_DIR_NAME)  # named by its partition directory
        assert part.read_bytes() == b"half a snapshot", "a refused open must not remove leftovers"
        with MetadataLog.open(data, read_only=True) as log:  # tools read a live node's log
            assert log.next_offset == 0
        _image, log = load(data, LOGGER, read_only=True)
        log.close()
    finally:
        holder.kill()


def test_a_writable_open_takes_the_lock_until_close(tmp_path: Path) -> None:
    with MetadataLog.open(tmp_path):
        assert held_here(tmp_path)
        MetadataLog.open(tmp_path, read_only=True).close()
        assert held_here(tmp_path)
    assert not held_here(tmp_path)
    lock_directory(tmp_path).release()


def test_a_writable_open_uses_the_lock_its_process_already_holds(tmp_path: Path) -> None:
    with lock_directory(tmp_path):  # what a server does first
        _image, log = load(tmp_path, LOGGER)
        log.close()
        assert held_here(tmp_path), "closing the log must not release the server's lock"
    assert not held_here(tmp_path)


def test_the_lock_file_does_not_confuse_readers(tmp_path: Path) -> None:
    with MetadataLog.open(tmp_path) as log:
        log.append([b"x"], timestamp_ms=0)
    with lock_directory(tmp_path):
        segment = tmp_path / PARTITION_DIR_NAME / "00000000000000000000.log"
        assert metadata_files(tmp_path) == [segment]
        assert metadata_files(tmp_path / PARTITION_DIR_NAME) == [segment]
        parser = argparse.ArgumentParser(prog="ksteward")
        add_parser(parser.add_subparsers(required=True))
        args = parser.parse_args(["metadata", "dump", str(tmp_path)])
        out = io.StringIO()
        assert args.func(args, out=out) == 0
        assert LOCK_FILE_NAME not in out.getvalue() and str(segment) in out.getvalue()
