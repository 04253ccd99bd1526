"""Stopping the process at once on a fault it must not run past: Kafka's ``ProcessTerminatingFaultHandler``.

A voter of a controller quorum whose metadata log or ``quorum-state`` file fails to write or fsync cannot keep
voting. Its next Fetch would report an offset that is not durable, which the leader counts toward the high
watermark. A leader that keeps leading cannot write, and no other voter takes over. A single controller whose
fsync failed can never write again either.

In Kafka every exception in the Raft IO thread goes to the raft manager's fatal fault handler
(``KafkaRaftClientDriver``, ``SharedServer.raftManagerFaultHandler``), which logs it and halts the JVM. ``halt``
does the same here: a CRITICAL line with the reason, the log handlers flushed, and ``os._exit(1)``. No shutdown
code runs, and nothing more is written to a disk that just failed. The data directory's lock goes with the
process, and the other voters elect a leader without this one (docs/raft.md, "A voter whose disk fails").
"""

from __future__ import annotations

import contextlib
import logging
import os
from typing import TYPE_CHECKING, NoReturn

if TYPE_CHECKING:
    from ksteward.metadata.log import MetadataLog

__all__ = ["halt", "halt_if_the_disk_failed"]

log = logging.getLogger(__name__)

#: The exit status of a halted process (Kafka's ``Exit.halt(1)``).
HALT_STATUS = 1


def halt(reason: str, error: BaseException) -> NoReturn:
    """Log ``reason`` and ``error`` as CRITICAL, flush every log handler, and exit with status 1 at once."""
    log.critical("fatal: %s (%s: %s); stopping now", reason, type(error).__name__, error)
    for handler in [*logging.getLogger().handlers, *log.handlers]:
        with contextlib.suppress(Exception):  # nothing is left to report it to; the exit matters more
            handler.flush()
    os._exit(HALT_STATUS)


def halt_if_the_disk_failed(reason: str, error: Exception, metadata_log: MetadataLog) -> None:
    """``halt`` when ``error``, raised by a write to ``metadata_log``, came from the disk: an OSError, or any refusal
    of a log whose fsync failed (``MetadataLog.failed``). A batch a working log refuses (a ``MetadataLogError``) is
    not a disk failure: this returns, and the caller handles it."""
    if isinstance(error, OSError) or metadata_log.failed is not None:
        halt(reason, error)
