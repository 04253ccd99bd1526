"""Test-only disk fault for ``ksteward serve`` subprocesses (tests/integration/test_disk_faults.py).

A server started with this directory on ``PYTHONPATH`` and ``KSTEWARD_TEST_FSYNC_FAULT_DIR`` set imports this
module at start-up (Python's ``site``). From then on, once a file named after the process id exists in that
directory, every ``os.fsync`` of the process fails with EIO, as a failing disk's would; if that file holds the word
``write``, every ``os.write`` fails too (a broker never fsyncs its copy of the metadata log, but writes it). Only
files are written with ``os.write`` here: sockets go through ``send``. Nothing of ksteward is replaced: only the
operating-system calls below it.
"""

from __future__ import annotations

import errno
import os

_DIRECTORY = os.environ.get("KSTEWARD_TEST_FSYNC_FAULT_DIR")


def _armed(trigger: str, call: str) -> bool:
    try:
        with open(trigger) as f:
            return call == "fsync" or call in f.read()
    except FileNotFoundError:
        return False


if _DIRECTORY:
    _real_fsync = os.fsync
    _real_write = os.write
    _trigger = os.path.join(_DIRECTORY, str(os.getpid()))

    def _fsync(fd: int) -> None:
        if _armed(_trigger, "fsync"):
            raise OSError(errno.EIO, "Input/output error (injected by the test)")
        _real_fsync(fd)

    def _write(fd: int, data: bytes | memoryview) -> int:
        if _armed(_trigger, "write"):
            raise OSError(errno.EIO, "Input/output error (injected by the test)")
        return _real_write(fd, data)

    os.fsync = _fsync
    os.write = _write  # type: ignore[assignment]
