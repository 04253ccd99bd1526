"""What a controller operation produces: records to commit atomically, and the response values."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class ControllerResult:
    records: list[Any] = field(default_factory=list)
    response: dict[str, Any] = field(default_factory=dict)
