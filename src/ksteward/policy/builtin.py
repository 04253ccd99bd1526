"""Built-in policies, configured by server properties.

``ProtectInternalTopics`` (a :class:`DeleteTopicPolicy`, KIP-934's first use case)::

    delete.topic.policy.class.name=ksteward.policy.builtin.ProtectInternalTopics
    protect.internal.topics.regex=connect-(configs|offsets|status)|_schemas

``TopicNamingPolicy`` (a :class:`CreateTopicPolicy`)::

    create.topic.policy.class.name=ksteward.policy.builtin.TopicNamingPolicy
    topic.naming.policy.regex=[a-z0-9]+(\\.[a-z0-9-]+)+
    topic.naming.policy.min.partitions=3
    topic.naming.policy.max.partitions=64
    topic.naming.policy.min.replication.factor=3

``ConfigGuardPolicy`` (an :class:`AlterConfigPolicy`)::

    alter.config.policy.class.name=ksteward.policy.builtin.ConfigGuardPolicy
    config.guard.policy.protected.keys=min.insync.replicas,unclean.leader.election.enable
    config.guard.policy.max.retention.ms=604800000

Regexes are Python ``re`` patterns that must match the **whole** topic name (as Java's
``Matcher.matches`` does). An invalid property value raises ``ValueError`` from ``configure``, so the
server refuses to start with a message naming the property.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from .interfaces import (
    AlterConfigPolicy,
    AlterConfigRequestMetadata,
    ConfigResourceType,
    CreateTopicPolicy,
    CreateTopicRequestMetadata,
    DeleteTopicPolicy,
    DeleteTopicRequestMetadata,
    PolicyViolation,
)

PROTECT_REGEX = "protect.internal.topics.regex"
NAMING_REGEX = "topic.naming.policy.regex"
NAMING_MIN_PARTITIONS = "topic.naming.policy.min.partitions"
NAMING_MAX_PARTITIONS = "topic.naming.policy.max.partitions"
NAMING_MIN_REPLICATION_FACTOR = "topic.naming.policy.min.replication.factor"
GUARD_PROTECTED_KEYS = "config.guard.policy.protected.keys"
GUARD_MAX_RETENTION_MS = "config.guard.policy.max.retention.ms"


def _regex(configs: Mapping[str, str], key: str) -> re.Pattern[str] | None:
    raw = configs.get(key)
    if raw is None or not raw.strip():
        return None
    try:
        return re.compile(raw.strip())
    except re.error as exc:
        raise ValueError(f"Invalid value {raw!r} for {key}: not a valid regular expression ({exc})") from None


def _positive_int(configs: Mapping[str, str], key: str) -> int | None:
    raw = configs.get(key)
    if raw is None or not raw.strip():
        return None
    try:
        value = int(raw.strip())
    except ValueError:
        raise ValueError(f"Invalid value {raw!r} for {key}: expected an integer") from None
    if value < 1:
        raise ValueError(f"Invalid value {raw!r} for {key}: must be at least 1")
    return value


class ProtectInternalTopics(DeleteTopicPolicy):
    """Refuses to delete Kafka's internal topics, and the topics ``protect.internal.topics.regex`` matches.

    Protected always: ``__consumer_offsets``, ``__transaction_state`` and ``__share_group_state`` (the
    topics Kafka 4.x treats as internal). The policy runs after authorization, so it also stops a super
    user or a principal with DELETE on the cluster.

    Properties:
      ``protect.internal.topics.regex``: optional; a topic whose whole name matches is protected too,
      for example Kafka Connect's internal topics: ``connect-(configs|offsets|status)``.
    """

    INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state", "__share_group_state"})

    def __init__(self) -> None:
        self.pattern: re.Pattern[str] | None = None

    def configure(self, configs: Mapping[str, str]) -> None:
        self.pattern = _regex(configs, PROTECT_REGEX)

    def validate(self, request_metadata: DeleteTopicRequestMetadata) -> None:
        topic = request_metadata.topic
        if topic in self.INTERNAL_TOPICS:
            raise PolicyViolation(f"Topic '{topic}' is an internal topic; ProtectInternalTopics refuses to delete it.")
        if self.pattern is not None and self.pattern.fullmatch(topic):
            raise PolicyViolation(
                f"Topic '{topic}' matches {PROTECT_REGEX} '{self.pattern.pattern}'; "
                "ProtectInternalTopics refuses to delete it."
            )


class TopicNamingPolicy(CreateTopicPolicy):
    """Enforces a naming pattern, a partition count range and a minimum replication factor on new topics.

    Properties (each optional; an unset one is not checked):
      ``topic.naming.policy.regex``: the whole topic name must match this pattern;
      ``topic.naming.policy.min.partitions`` / ``topic.naming.policy.max.partitions``: the partition
      count must lie within these bounds (integers >= 1, min <= max);
      ``topic.naming.policy.min.replication.factor``: the replication factor must be at least this.

    With a manual assignment, the partition count is the number of partitions assigned and the
    replication factor the size of their replica lists. Internal topics never reach a create policy.
    """

    def __init__(self) -> None:
        self.pattern: re.Pattern[str] | None = None
        self.min_partitions: int | None = None
        self.max_partitions: int | None = None
        self.min_replication_factor: int | None = None

    def configure(self, configs: Mapping[str, str]) -> None:
        self.pattern = _regex(configs, NAMING_REGEX)
        self.min_partitions = _positive_int(configs, NAMING_MIN_PARTITIONS)
        self.max_partitions = _positive_int(configs, NAMING_MAX_PARTITIONS)
        self.min_replication_factor = _positive_int(configs, NAMING_MIN_REPLICATION_FACTOR)
        low, high = self.min_partitions, self.max_partitions
        if low is not None and high is not None and low > high:
            raise ValueError(f"{NAMING_MIN_PARTITIONS}={low} is greater than {NAMING_MAX_PARTITIONS}={high}")

    def validate(self, request_metadata: CreateTopicRequestMetadata) -> None:
        topic = request_metadata.topic
        if self.pattern is not None and not self.pattern.fullmatch(topic):
            raise PolicyViolation(f"Topic name '{topic}' does not match {NAMING_REGEX} '{self.pattern.pattern}'.")
        partitions, replication_factor = _layout(request_metadata)
        if self.min_partitions is not None and partitions < self.min_partitions:
            raise PolicyViolation(
                f"Topic '{topic}' would have {partitions} partition(s), "
                f"fewer than {NAMING_MIN_PARTITIONS}={self.min_partitions}."
            )
        if self.max_partitions is not None and partitions > self.max_partitions:
            raise PolicyViolation(
                f"Topic '{topic}' would have {partitions} partition(s), "
                f"more than {NAMING_MAX_PARTITIONS}={self.max_partitions}."
            )
        if self.min_replication_factor is not None and replication_factor < self.min_replication_factor:
            raise PolicyViolation(
                f"Topic '{topic}' would have replication factor {replication_factor}, "
                f"below {NAMING_MIN_REPLICATION_FACTOR}={self.min_replication_factor}."
            )


def _layout(metadata: CreateTopicRequestMetadata) -> tuple[int, int]:
    """(partition count, replication factor), from the numbers or from the manual assignment."""
    assignments = metadata.replicas_assignments
    if assignments is not None:
        sizes = [len(replicas) for replicas in assignments.values()]
        return len(assignments), min(sizes, default=0)
    return metadata.num_partitions or 0, metadata.replication_factor or 0


class ConfigGuardPolicy(AlterConfigPolicy):
    """Refuses config changes to protected keys, and topic retention above a ceiling.

    Properties (each optional):
      ``config.guard.policy.protected.keys``: comma-separated keys that no AlterConfigs or
      IncrementalAlterConfigs may set or delete, on any resource (CreateTopics configs included);
      ``config.guard.policy.max.retention.ms``: a topic's resulting ``retention.ms`` override must not
      exceed this, nor be -1 (unlimited). It judges the resulting config (``resulting_configs``, a
      ksteward addition), so a change of another key on a topic whose retention is already too high
      is refused too; a topic without a ``retention.ms`` override is not judged.
    """

    def __init__(self) -> None:
        self.protected: frozenset[str] = frozenset()
        self.max_retention_ms: int | None = None

    def configure(self, configs: Mapping[str, str]) -> None:
        raw = configs.get(GUARD_PROTECTED_KEYS) or ""
        self.protected = frozenset(k.strip() for k in raw.split(",") if k.strip())
        self.max_retention_ms = _positive_int(configs, GUARD_MAX_RETENTION_MS)

    def validate(self, request_metadata: AlterConfigRequestMetadata) -> None:
        resource = request_metadata.resource
        touched = sorted(self.protected & request_metadata.configs.keys())
        if touched:
            raise PolicyViolation(
                f"{', '.join(touched)} of {resource.type.name} '{resource.name}' may not be changed: "
                f"listed in {GUARD_PROTECTED_KEYS}."
            )
        ceiling = self.max_retention_ms
        retention = request_metadata.resulting_configs.get("retention.ms")
        if ceiling is None or resource.type is not ConfigResourceType.TOPIC or retention is None:
            return
        try:
            value = int(retention.strip())
        except ValueError:
            return  # not a number: the config validator has refused it already
        if value == -1 or value > ceiling:
            raise PolicyViolation(
                f"retention.ms={retention} of topic '{resource.name}' exceeds {GUARD_MAX_RETENTION_MS}={ceiling}."
            )
