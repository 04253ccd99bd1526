"""The requests and results of the topic RPCs as the controller sees them, and its topic settings.

Inputs are plain frozen dataclasses, with ``from_kio`` constructors for the kio request entities of
the served versions (CreateTopics v2-v7, DeleteTopics v1-v7, CreatePartitions v0-v3). Results carry
an :class:`ApiError` (Kafka's code and message) and the fields of the response entry; the wire
handler copies them into the response of the request's version.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Collection, Mapping, Sequence, Set
from dataclasses import dataclass
from typing import Any

from kio.schema.errors import ErrorCode

from ksteward.configs.catalog import ConfigResourceType
from ksteward.configs.sensitive import loggable_value
from ksteward.controller.result import NO_ERROR, ApiError


@dataclass(frozen=True, slots=True)
class TopicSettings:
    """The controller's static settings that shape topic administration (docs/topics-and-configs.md, "Controller-side
    static settings")."""

    default_num_partitions: int = 1
    default_replication_factor: int = 1
    delete_topic_enable: bool = True

    @classmethod
    def from_config(cls, static: Mapping[str, str]) -> TopicSettings:
        """``num.partitions``, ``default.replication.factor``, ``delete.topic.enable``; ValueError names a bad key."""

        def number(key: str, default: int, maximum: int) -> int:
            raw = static.get(key, str(default)).strip()
            try:
                value = int(raw)
            except ValueError:
                raise ValueError(f"Invalid value {raw} for configuration {key}: expected an integer") from None
            if not 1 <= value <= maximum:
                raise ValueError(f"Invalid value {raw} for configuration {key}: must be between 1 and {maximum}")
            return value

        enable = static.get("delete.topic.enable", "true").strip().lower()
        if enable not in ("true", "false"):
            raise ValueError(f"Invalid value {enable} for configuration delete.topic.enable: expected true or false")
        return cls(
            default_num_partitions=number("num.partitions", 1, 2**31 - 1),
            default_replication_factor=number("default.replication.factor", 1, 2**15 - 1),
            delete_topic_enable=enable == "true",
        )


@dataclass(frozen=True, slots=True)
class NewTopic:
    """One CreateTopics entry. -1 partitions or replication factor: the server default (or a manual
    assignment is given). ``assignments``: (partition index, broker ids) pairs; empty for automatic
    placement. ``configs``: (name, value) pairs as sent, None values included (they are refused)."""

    name: str
    num_partitions: int = -1
    replication_factor: int = -1
    assignments: tuple[tuple[int, tuple[int, ...]], ...] = ()
    configs: tuple[tuple[str, str | None], ...] = ()

    @classmethod
    def from_kio(cls, topic: Any) -> NewTopic:
        """From a kio ``CreatableTopic`` of CreateTopics v2-v7."""
        return cls(
            name=topic.name,
            num_partitions=int(topic.num_partitions),
            replication_factor=int(topic.replication_factor),
            assignments=tuple((int(a.partition_index), tuple(int(b) for b in a.broker_ids)) for a in topic.assignments),
            configs=tuple((c.name, c.value) for c in topic.configs),
        )

    def __repr__(self) -> str:
        # The request's config values as a log line may show them: secrets hidden.
        configs = tuple((k, loggable_value(ConfigResourceType.TOPIC, k, v)) for k, v in self.configs)
        return (
            f"NewTopic(name={self.name!r}, num_partitions={self.num_partitions}, "
            f"replication_factor={self.replication_factor}, assignments={self.assignments!r}, configs={configs!r})"
        )


@dataclass(frozen=True, slots=True)
class TopicRef:
    """One DeleteTopics entry: a name (v1-v5, or v6+ with no id) or a topic id (v6+, name None)."""

    name: str | None = None
    topic_id: uuid.UUID | None = None

    @staticmethod
    def list_from_kio(request: Any) -> list[TopicRef]:
        """The entries of a kio DeleteTopics request: ``topic_names`` (v1-v5) or ``topics`` (v6+).
        kio reads the zero uuid ("no id") as None."""
        if hasattr(request, "topics"):
            return [TopicRef(t.name, t.topic_id) for t in request.topics]
        return [TopicRef(name) for name in request.topic_names]


@dataclass(frozen=True, slots=True)
class NewPartitions:
    """One CreatePartitions entry: the new total ``count``, and optionally the replicas of each new partition."""

    name: str
    count: int
    assignments: tuple[tuple[int, ...], ...] | None = None

    @classmethod
    def from_kio(cls, topic: Any) -> NewPartitions:
        """From a kio ``CreatePartitionsTopic`` of CreatePartitions v0-v3."""
        assignments = topic.assignments
        return cls(
            name=topic.name,
            count=int(topic.count),
            assignments=None
            if assignments is None
            else tuple(tuple(int(b) for b in a.broker_ids) for a in assignments),
        )


@dataclass(frozen=True, slots=True)
class CreatedTopicConfig:
    """One config of a created topic, for the CreateTopics v5+ response (``CreatableTopicConfigs``)."""

    name: str
    value: str | None
    read_only: bool
    config_source: int
    is_sensitive: bool


@dataclass(frozen=True, slots=True)
class CreateTopicResult:
    """``CreatableTopicResult``. On success: the topic id (fresh even for validate-only), and, when the
    caller may DESCRIBE_CONFIGS the topic, its partition count, replication factor and configs;
    otherwise ``topic_config_error_code`` is TOPIC_AUTHORIZATION_FAILED (v5+)."""

    name: str
    error: ApiError = NO_ERROR
    topic_id: uuid.UUID | None = None
    num_partitions: int = -1
    replication_factor: int = -1
    configs: tuple[CreatedTopicConfig, ...] = ()
    topic_config_error_code: ErrorCode = ErrorCode.none


@dataclass(frozen=True, slots=True)
class DeleteTopicResult:
    """``DeletableTopicResult``: ``name`` is None when the caller may not learn it, ``topic_id`` None for "no id"."""

    name: str | None
    topic_id: uuid.UUID | None
    error: ApiError = NO_ERROR


@dataclass(frozen=True, slots=True)
class CreatePartitionsResult:
    name: str
    error: ApiError = NO_ERROR


ConfigValidator = Callable[[str, Mapping[str, str | None]], ApiError | None]
"""(topic, configs) -> why the configs of a new topic are invalid, else None."""
ConfigDescriber = Callable[[str, Mapping[str, str]], Sequence[CreatedTopicConfig]]
"""(topic, creation configs) -> the topic's full effective config, sorted by name (v5+ response)."""
NameFilter = Callable[[Collection[str]], Set[str]]
"""An authorization decision: the names, among those given, the caller is allowed the operation on."""
QuotaCharge = Callable[[int], ApiError | None]
"""Charges that many partitions to the controller mutation quota (KIP-599); an error refuses the topic."""


def allowed(names: Collection[str], decide: NameFilter | None) -> Set[str]:
    """The names ``decide`` allows among ``names``; None allows all."""
    return set(names) if decide is None else set(decide(names)) & set(names)
