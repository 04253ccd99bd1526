"""What a controller operation produces: records to commit atomically, and the response values."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# One user operation may write at most this many records, all or nothing (KAFKA-14996).
MAX_RECORDS_PER_USER_OP = 10_000


@dataclass(frozen=True, slots=True)
class ControllerResult:
    records: list[Any] = field(default_factory=list)
    response: dict[str, Any] = field(default_factory=dict)
