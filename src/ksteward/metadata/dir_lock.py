"""One process per data directory: an exclusive lock on ``<dir>/.lock``, held for the process's life.

    locks = lock_directories([metadata_log_dir, *log_dirs])   # before anything in them is read
    ...
    for lock in locks:
        lock.release()                                         # at clean shutdown

Kafka does the same: ``LogManager.lockLogDirs`` takes a ``FileLock`` on ``.lock`` in every log
directory (and ``KafkaRaftManager`` on the metadata log directory when it is a separate one) before
it loads anything, and a second process stops with "Failed to acquire lock on file .lock in <dir>.
A Kafka instance in another process or thread is using this directory." Without it, two processes
on one directory append to the same segments, truncate each other's "torn" tails at start-up and
delete each other's snapshots in progress: acknowledged writes are lost.

The lock is ``flock(LOCK_EX | LOCK_NB)``. It belongs to the open file description, so the kernel
drops it when the process dies, even on SIGKILL (no stale lock to detect or clean up), and closing
some other descriptor of the file does not drop it (it would drop a POSIX ``fcntl`` lock). Note
that on Linux ``flock`` locks and POSIX locks do not see each other: Kafka's ``FileLock`` (Java's
``FileChannel.tryLock``) is a POSIX lock, so this excludes ksteward processes from each other,
not a Kafka broker from ksteward.

The lock file is never deleted: a process may have opened it just before the unlink and would
then lock a file nobody else can find. Its descriptor is not inherited by child processes
(``os.open`` makes it non-inheritable); a bare ``os.fork`` would share it, and the lock with it.

Within one process a second lock on the same directory is refused as well (flock on a second
descriptor conflicts with the first); :func:`held_here` tells whether this process holds it, for
writers such as ``MetadataLog.open`` that take the lock only when nobody in the process has.
"""

from __future__ import annotations

import errno
import fcntl
import os
import threading
from collections.abc import Iterable
from pathlib import Path
from types import TracebackType

LOCK_FILE_NAME = ".lock"


class DirectoryLockError(OSError):
    """A data directory cannot be locked: it is not a directory, cannot be created, or the lock
    file cannot be opened. The message names the directory."""


class DirectoryLockedError(DirectoryLockError):
    """Another process (or this one, through another lock) holds the directory's lock."""

    def __init__(self, directory: Path, *, by_this_process: bool = False) -> None:
        self.directory = directory
        self.by_this_process = by_this_process
        if by_this_process:
            message = f"Failed to acquire lock on file {LOCK_FILE_NAME} in {directory}: this process already holds it."
        else:
            message = (
                f"Failed to acquire lock on file {LOCK_FILE_NAME} in {directory}. A ksteward node or tool "
                "in another process is using this directory."
            )
        super().__init__(message)


# Locks this process holds, by resolved directory path.
_held: dict[Path, DirectoryLock] = {}
_held_guard = threading.Lock()


def _key(directory: Path) -> Path:
    return directory.resolve()


class DirectoryLock:
    """A held lock on ``directory``; :meth:`release` (or leaving a ``with`` block) gives it up."""

    def __init__(self, directory: Path, key: Path, fd: int) -> None:
        # Use ``lock_directory``; this only sets fields.
        self.directory = directory
        self._key = key
        self._fd: int | None = fd

    @property
    def held(self) -> bool:
        return self._fd is not None

    def release(self) -> None:
        """Unlock and close the lock file (which stays). Idempotent."""
        with _held_guard:
            fd, self._fd = self._fd, None
            if fd is None:
                return
            if _held.get(self._key) is self:
                del _held[self._key]
            try:
                fcntl.flock(fd, fcntl.LOCK_UN)
            finally:
                os.close(fd)

    def __enter__(self) -> DirectoryLock:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.release()

    def __repr__(self) -> str:
        return f"<DirectoryLock {self.directory} {'held' if self.held else 'released'}>"


def lock_directory(directory: str | os.PathLike[str]) -> DirectoryLock:
    """Create ``directory`` if needed and lock it, without waiting.

    Raises DirectoryLockedError if any process, this one included, holds the lock, and
    DirectoryLockError if the directory cannot be created or the lock file cannot be opened.
    Nothing in the directory is read or changed besides creating an empty ``.lock``.
    """
    path = Path(directory)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise DirectoryLockError(f"data directory {path} is not a directory") from None
    except OSError as exc:
        raise DirectoryLockError(f"cannot use data directory {path}: {exc.strerror or exc}") from None
    key = _key(path)
    with _held_guard:
        if key in _held:
            raise DirectoryLockedError(path, by_this_process=True)
        try:
            fd = os.open(key / LOCK_FILE_NAME, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise DirectoryLockError(f"cannot use data directory {path}: {exc.strerror or exc}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(fd)
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
                raise DirectoryLockedError(path) from None
            raise DirectoryLockError(f"cannot lock data directory {path}: {exc.strerror or exc}") from None
        lock = DirectoryLock(path, key, fd)
        _held[key] = lock
        return lock


def lock_directories(directories: Iterable[str | os.PathLike[str]]) -> list[DirectoryLock]:
    """Lock every directory, in order, or none: on a failure the ones taken are released.

    Two spellings of one directory (``./data`` and ``/srv/data``) are locked once.
    """
    locks: list[DirectoryLock] = []
    seen: set[Path] = set()
    try:
        for directory in directories:
            path = Path(directory)
            if _key(path) in seen:
                continue
            locks.append(lock_directory(path))
            seen.add(_key(path))
    except BaseException:
        for lock in reversed(locks):
            lock.release()
        raise
    return locks


def held_here(directory: str | os.PathLike[str]) -> bool:
    """Whether this process holds the lock on ``directory``."""
    key = _key(Path(directory))
    with _held_guard:
        return key in _held
