"""The policy interfaces: Kafka's ``CreateTopicPolicy`` (KIP-108) and ``AlterConfigPolicy`` (KIP-133),
and the ``DeleteTopicPolicy`` that KIP-934 proposes.

A policy is a class the operator names in the controller's configuration. The controller builds one
instance at start-up, calls ``configure(configs)`` once with every static server property, calls
``validate(request_metadata)`` for each topic or resource a request touches (validate-only requests
included), and ``close()`` at shutdown. ``validate`` rejects by raising :class:`PolicyViolation`; the
client gets POLICY_VIOLATION (44) with the exception's message, for that topic or resource only.

Policies run on the controller's single writer, one request at a time: ``validate`` needs no locking,
but must not block for long (every admin mutation waits behind it).
"""

from __future__ import annotations

import uuid
from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import ClassVar, TypeVar, cast

from ksteward.configs.catalog import ConfigResourceType
from ksteward.configs.sensitive import loggable_configs


class PolicyViolation(Exception):
    """Raised by ``validate`` to refuse a request: POLICY_VIOLATION (44) with ``str(exc)`` as the message."""


@dataclass(frozen=True, slots=True)
class ConfigResource:
    """A config resource: its type (the configs catalog's ``ConfigResourceType``, Kafka's ``ConfigResource.Type``)
    and name (a topic name, a broker id as text, ``""`` for the cluster default)."""

    type: ConfigResourceType
    name: str


K = TypeVar("K")
V = TypeVar("V")


def _frozen(mapping: Mapping[K, V]) -> Mapping[K, V]:
    return MappingProxyType(dict(mapping))


class ConfigsView(Mapping[str, V]):
    """The read-only configs of a request metadata. The policy reads every value in clear; ``repr`` and
    ``str`` show a sensitive one (``ksteward.configs.sensitive.is_sensitive`` for the resource's type) as
    ``[hidden]``, so that a policy, or the server, that logs the metadata or its configs leaks no secret."""

    __slots__ = ("_data", "_resource_type")

    def __init__(self, resource_type: ConfigResourceType, configs: Mapping[str, V]) -> None:
        self._resource_type = resource_type
        self._data: dict[str, V] = dict(configs)

    def __getitem__(self, key: str) -> V:
        return self._data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __repr__(self) -> str:
        return repr(loggable_configs(self._resource_type, cast("Mapping[str, str | None]", self._data)))


@dataclass(frozen=True, slots=True)
class CreateTopicRequestMetadata:
    """What ``CreateTopicPolicy.validate`` sees for one topic (Kafka's ``CreateTopicPolicy.RequestMetadata``).

    Exactly one of the two layouts is set: ``num_partitions`` and ``replication_factor`` (with -1 already
    replaced by the server defaults) when the placement was automatic, or ``replicas_assignments``
    (partition -> broker ids, in preferred order) when the request gave a manual assignment. ``configs``
    are the topic configs of the request only, without broker defaults. Its ``repr`` hides the sensitive
    config values (:class:`ConfigsView`).
    """

    topic: str
    num_partitions: int | None
    replication_factor: int | None
    replicas_assignments: Mapping[int, tuple[int, ...]] | None
    configs: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.replicas_assignments is not None:
            object.__setattr__(self, "replicas_assignments", _frozen(self.replicas_assignments))
        object.__setattr__(self, "configs", ConfigsView(ConfigResourceType.TOPIC, self.configs))


@dataclass(frozen=True, slots=True)
class AlterConfigRequestMetadata:
    """What ``AlterConfigPolicy.validate`` sees for one resource (Kafka's ``AlterConfigPolicy.RequestMetadata``
    plus ``resulting_configs``).

    ``configs`` holds only the keys the request changes, with their new value (KIP-133; docs/topics-and-configs.md):
    ``None`` means the key is being deleted, APPEND and SUBTRACT appear as the resulting list. ``resulting_configs``
    is a ksteward addition that KIP-935 asks for: the resource's own config entries as they will be
    after the change (the topic's overrides, or the broker's or cluster default's dynamic entries),
    deleted keys absent. Values inherited from other levels or built-in defaults are not included.
    For a topic being created both maps hold the creation configs. Both maps' ``repr`` hides the values
    that are sensitive for ``resource.type`` (:class:`ConfigsView`).
    """

    resource: ConfigResource
    configs: Mapping[str, str | None]
    resulting_configs: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "configs", ConfigsView(self.resource.type, self.configs))
        object.__setattr__(self, "resulting_configs", ConfigsView(self.resource.type, self.resulting_configs))


@dataclass(frozen=True, slots=True)
class DeleteTopicRequestMetadata:
    """What ``DeleteTopicPolicy.validate`` sees for one topic: its name and id, as KIP-934 specifies (no
    config values: its ``repr`` is safe to log as it is)."""

    topic: str
    topic_id: uuid.UUID


class _Policy(ABC):
    CONFIG_KEY: ClassVar[str]
    """The server property that names the class (used in load errors)."""

    def configure(self, configs: Mapping[str, str]) -> None:  # noqa: B027 - optional hook
        """Called once, before any ``validate``, with every static server property. Raise ``ValueError``
        with a clear message for invalid settings: the server refuses to start."""

    def close(self) -> None:  # noqa: B027 - optional hook
        """Called once at shutdown."""


class CreateTopicPolicy(_Policy):
    """``create.topic.policy.class.name``: checked for every topic a CreateTopics request would create,
    after the request's own checks and the replica placement, except for internal topics (KIP-590)."""

    CONFIG_KEY: ClassVar[str] = "create.topic.policy.class.name"
    RequestMetadata: ClassVar[type[CreateTopicRequestMetadata]] = CreateTopicRequestMetadata

    @abstractmethod
    def validate(self, request_metadata: CreateTopicRequestMetadata) -> None:
        """Return to accept; raise :class:`PolicyViolation` to refuse."""


class AlterConfigPolicy(_Policy):
    """``alter.config.policy.class.name``: checked for every resource an AlterConfigs or
    IncrementalAlterConfigs request changes (not BROKER_LOGGER), and for every topic a CreateTopics
    request creates with configs."""

    CONFIG_KEY: ClassVar[str] = "alter.config.policy.class.name"
    RequestMetadata: ClassVar[type[AlterConfigRequestMetadata]] = AlterConfigRequestMetadata

    @abstractmethod
    def validate(self, request_metadata: AlterConfigRequestMetadata) -> None:
        """Return to accept; raise :class:`PolicyViolation` to refuse."""


class DeleteTopicPolicy(_Policy):
    """``delete.topic.policy.class.name`` (KIP-934): checked for every topic a DeleteTopics request would
    delete, after authorization, for validate-only requests (DeleteTopics v7) too."""

    CONFIG_KEY: ClassVar[str] = "delete.topic.policy.class.name"
    RequestMetadata: ClassVar[type[DeleteTopicRequestMetadata]] = DeleteTopicRequestMetadata

    @abstractmethod
    def validate(self, request_metadata: DeleteTopicRequestMetadata) -> None:
        """Return to accept; raise :class:`PolicyViolation` to refuse."""
