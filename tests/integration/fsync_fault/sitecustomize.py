"""Test-only disk fault for ``ksteward serve`` subprocesses (tests/integration/test_disk_faults.py).

A server started with this directory on ``PYTHONPATH`` and ``KSTEWARD_TEST_FSYNC_FAULT_DIR`` set imports this
module at start-up (Python's ``site``). From then on, once a file named after the process id exists in that
directory, every ``os.fsync`` of the process fails with EIO, as a failing disk's would. Nothing of ksteward is
replaced: only the operating-system call below it.
"""

from __future__ import annotations

import errno
import os

_DIRECTORY = os.environ.get("KSTEWARD_TEST_FSYNC_FAULT_DIR")

if _DIRECTORY:
    _real_fsync = os.fsync
    _trigger = os.path.join(_DIRECTORY, str(os.getpid()))

    def _fsync(fd: int) -> None:
        if os.path.exists(_trigger):
            raise OSError(errno.EIO, "Input/output error (injected by the test)")
        _real_fsync(fd)

    os.fsync = _fsync
