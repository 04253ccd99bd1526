"""Policy classes that the loader tests name by dotted path (this directory is on sys.path under pytest)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from ksteward.policy import AlterConfigPolicy, CreateTopicPolicy, DeleteTopicPolicy, PolicyViolation

closed: list[str] = []


class Tracking:
    """Remembers its configs and records ``close`` in the module-level ``closed`` list."""

    label: ClassVar[str] = "?"

    def configure(self, configs: Mapping[str, str]) -> None:
        self.configs = dict(configs)

    def close(self) -> None:
        closed.append(self.label)


class Create(Tracking, CreateTopicPolicy):
    label = "create"

    def validate(self, request_metadata: Any) -> None:
        if request_metadata.topic == "bad":
            raise PolicyViolation("bad topic")


class Delete(Tracking, DeleteTopicPolicy):
    label = "delete"

    def validate(self, request_metadata: Any) -> None:
        pass


class Alter(Tracking, AlterConfigPolicy):
    label = "alter"

    def validate(self, request_metadata: Any) -> None:
        pass


class CloseFails(Delete):
    def close(self) -> None:
        raise RuntimeError("close failed")


class Abstract(CreateTopicPolicy):
    """Forgets to implement validate."""


class ConstructorFails(Create):
    def __init__(self) -> None:
        raise RuntimeError("no database")


class ConfigureFails(Alter):
    def configure(self, configs: Mapping[str, str]) -> None:
        raise ValueError("Invalid value 'x' for retention.policy.max.ms:\n expected an integer")


class NotAPolicy:
    pass


NOT_A_CLASS = 42
