"""The built-in policies: ProtectInternalTopics (KIP-934's first use case) and TopicNamingPolicy."""

from __future__ import annotations

import uuid

import pytest

from ksteward.policy import (
    CreateTopicPolicy,
    CreateTopicRequestMetadata,
    DeleteTopicPolicy,
    DeleteTopicRequestMetadata,
    Policies,
    PolicyLoadError,
    PolicyViolation,
    load_policy,
)
from ksteward.policy.builtin import ProtectInternalTopics, TopicNamingPolicy

TOPIC_ID = uuid.UUID(int=5)


def protect(props: dict[str, str] | None = None) -> ProtectInternalTopics:
    policy = ProtectInternalTopics()
    policy.configure(props or {})
    return policy


def deleting(topic: str) -> DeleteTopicRequestMetadata:
    return DeleteTopicRequestMetadata(topic, TOPIC_ID)


@pytest.mark.parametrize("topic", ["__consumer_offsets", "__transaction_state", "__share_group_state"])
def test_internal_topics_are_protected(topic: str) -> None:
    with pytest.raises(PolicyViolation) as info:
        protect().validate(deleting(topic))
    assert str(info.value) == f"Topic '{topic}' is an internal topic; ProtectInternalTopics refuses to delete it."


@pytest.mark.parametrize("topic", ["orders", "__cluster_metadata_", "_consumer_offsets", "connect-offsets"])
def test_other_topics_may_be_deleted(topic: str) -> None:
    protect().validate(deleting(topic))


def test_regex_protects_whole_name_matches_only() -> None:
    policy = protect({"protect.internal.topics.regex": "connect-(configs|offsets|status)"})
    with pytest.raises(PolicyViolation) as info:
        policy.validate(deleting("connect-offsets"))
    assert str(info.value) == (
        "Topic 'connect-offsets' matches protect.internal.topics.regex 'connect-(configs|offsets|status)'; "
        "ProtectInternalTopics refuses to delete it."
    )
    policy.validate(deleting("connect-offsets-old"))  # a partial match does not protect
    policy.validate(deleting("my-connect-offsets"))
    with pytest.raises(PolicyViolation):
        policy.validate(deleting("__consumer_offsets"))  # still protected with a regex set


def test_blank_regex_protects_only_internal_topics() -> None:
    protect({"protect.internal.topics.regex": "  "}).validate(deleting("anything"))


def test_invalid_regex_refuses_to_configure() -> None:
    with pytest.raises(ValueError, match=r"^Invalid value '\(' for protect\.internal\.topics\.regex: not a valid"):
        protect({"protect.internal.topics.regex": "("})


def test_invalid_regex_stops_the_loader_with_the_key() -> None:
    with pytest.raises(PolicyLoadError) as info:
        Policies.from_config(
            {
                "delete.topic.policy.class.name": "ksteward.policy.builtin.ProtectInternalTopics",
                "protect.internal.topics.regex": "[",
            }
        )
    message = str(info.value)
    assert message.startswith(
        "Invalid value ksteward.policy.builtin.ProtectInternalTopics for configuration "
        "delete.topic.policy.class.name: configure() failed: ValueError: Invalid value '[' for "
        "protect.internal.topics.regex"
    )


def naming(**props: str) -> TopicNamingPolicy:
    policy = load_policy(
        "ksteward.policy.builtin.TopicNamingPolicy",
        CreateTopicPolicy,
        {f"topic.naming.policy.{k.replace('_', '.')}": v for k, v in props.items()},
    )
    assert isinstance(policy, TopicNamingPolicy)
    return policy


def creating(topic: str = "team.orders", partitions: int = 6, rf: int = 3) -> CreateTopicRequestMetadata:
    return CreateTopicRequestMetadata(topic, partitions, rf, None, {})


def refusal(policy: TopicNamingPolicy, metadata: CreateTopicRequestMetadata) -> str:
    with pytest.raises(PolicyViolation) as info:
        policy.validate(metadata)
    return str(info.value)


def test_naming_policy_without_properties_accepts_everything() -> None:
    naming().validate(creating("X", 1, 1))


def test_naming_regex() -> None:
    policy = naming(regex=r"[a-z]+\.[a-z]+")
    policy.validate(creating("team.orders"))
    assert refusal(policy, creating("Team.orders")) == (
        r"Topic name 'Team.orders' does not match topic.naming.policy.regex '[a-z]+\.[a-z]+'."
    )
    assert "does not match" in refusal(policy, creating("team.orders.v2"))  # whole-name match


def test_partition_bounds() -> None:
    policy = naming(min_partitions="3", max_partitions="12")
    policy.validate(creating(partitions=3))
    policy.validate(creating(partitions=12))
    assert refusal(policy, creating(partitions=2)) == (
        "Topic 'team.orders' would have 2 partition(s), fewer than topic.naming.policy.min.partitions=3."
    )
    assert refusal(policy, creating(partitions=13)) == (
        "Topic 'team.orders' would have 13 partition(s), more than topic.naming.policy.max.partitions=12."
    )


def test_min_replication_factor() -> None:
    policy = naming(min_replication_factor="3")
    policy.validate(creating(rf=3))
    assert refusal(policy, creating(rf=2)) == (
        "Topic 'team.orders' would have replication factor 2, below topic.naming.policy.min.replication.factor=3."
    )


def test_manual_assignments_count_partitions_and_replicas() -> None:
    policy = naming(min_partitions="2", min_replication_factor="2")
    policy.validate(CreateTopicRequestMetadata("t", None, None, {0: (1, 2), 1: (2, 3)}, {}))
    message = refusal(policy, CreateTopicRequestMetadata("t", None, None, {0: (1,), 1: (2,)}, {}))
    assert "replication factor 1" in message
    assert "1 partition(s)" in refusal(policy, CreateTopicRequestMetadata("t", None, None, {0: (1, 2)}, {}))


@pytest.mark.parametrize(
    ("props", "match"),
    [
        ({"min_partitions": "two"},
         r"^Invalid value 'two' for topic\.naming\.policy\.min\.partitions: expected an integer$"),
        ({"max_partitions": "0"},
         r"^Invalid value '0' for topic\.naming\.policy\.max\.partitions: must be at least 1$"),
        ({"min_replication_factor": "-1"}, r"min\.replication\.factor: must be at least 1$"),
        ({"min_partitions": "5", "max_partitions": "4"},
         r"^topic\.naming\.policy\.min\.partitions=5 is greater than topic\.naming\.policy\.max\.partitions=4$"),
        ({"regex": "*"}, r"^Invalid value '\*' for topic\.naming\.policy\.regex: not a valid regular expression"),
    ],
)  # fmt: skip
def test_invalid_naming_properties(props: dict[str, str], match: str) -> None:
    policy = TopicNamingPolicy()
    with pytest.raises(ValueError, match=match):
        policy.configure({f"topic.naming.policy.{k.replace('_', '.')}": v for k, v in props.items()})


def test_builtins_implement_the_right_interfaces() -> None:
    assert issubclass(ProtectInternalTopics, DeleteTopicPolicy)
    assert issubclass(TopicNamingPolicy, CreateTopicPolicy)
