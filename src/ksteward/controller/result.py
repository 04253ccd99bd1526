"""What every controller operation produces, as Kafka's ``ControllerResult<T>``: the records to commit
atomically, and the response, of one type per operation. Failures are values, not exceptions: an
:class:`ApiError` per resource, as Kafka's ``ApiError`` carries an error code and a message.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from ksteward.protocol.api_error import NO_ERROR, ApiError

# One user operation may write at most this many records, all or nothing (KAFKA-14996).
MAX_RECORDS_PER_USER_OP = 10_000
# What Kafka's controller answers when one operation would write more (BoundedList, KAFKA-14996).
EXCESSIVELY_LARGE_BATCH = "Unable to perform excessively large batch operation."

__all__ = [
    "EXCESSIVELY_LARGE_BATCH",
    "MAX_RECORDS_PER_USER_OP",
    "NO_ERROR",
    "ApiError",
    "ConcurrentAclChange",
    "ControllerResult",
    "NotControllerError",
]

T = TypeVar("T")


class ConcurrentAclChange(Exception):
    """Another batch changed the ACLs while a large ACL batch was being prepared in a worker thread (the
    committer's ``append_in_thread``): nothing was written."""


class NotControllerError(Exception):
    """This node is not the active controller, or stopped being it before a write committed (Kafka's
    ``NotControllerException``): every entry of the request is answered NOT_CONTROLLER. For a write that was
    already appended the outcome is unknown: a new leader may still commit it (docs/cluster.md, "Quorum")."""


@dataclass(frozen=True, slots=True)
class ControllerResult(Generic[T]):
    """The records of one operation (appended as one batch, or none) and its response."""

    records: Sequence[Any]
    response: T
