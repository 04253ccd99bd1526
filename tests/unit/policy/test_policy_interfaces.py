"""The policy interfaces and their request metadata: Kafka's shapes, frozen, with KIP-934's and KIP-935's fields."""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Mapping

import pytest

from ksteward.policy import (
    AlterConfigPolicy,
    AlterConfigRequestMetadata,
    ConfigResource,
    ConfigResourceType,
    CreateTopicPolicy,
    CreateTopicRequestMetadata,
    DeleteTopicPolicy,
    DeleteTopicRequestMetadata,
    PolicyViolation,
)


def test_config_keys_are_kafkas() -> None:
    assert CreateTopicPolicy.CONFIG_KEY == "create.topic.policy.class.name"
    assert AlterConfigPolicy.CONFIG_KEY == "alter.config.policy.class.name"
    assert DeleteTopicPolicy.CONFIG_KEY == "delete.topic.policy.class.name"


def test_request_metadata_is_reachable_as_in_kafka() -> None:
    assert CreateTopicPolicy.RequestMetadata is CreateTopicRequestMetadata
    assert AlterConfigPolicy.RequestMetadata is AlterConfigRequestMetadata
    assert DeleteTopicPolicy.RequestMetadata is DeleteTopicRequestMetadata


@pytest.mark.parametrize("interface", [CreateTopicPolicy, AlterConfigPolicy, DeleteTopicPolicy])
def test_validate_is_abstract_configure_and_close_are_optional(interface: type) -> None:
    with pytest.raises(TypeError):
        interface()

    class Minimal(interface):  # type: ignore[misc, valid-type]
        def validate(self, request_metadata: object) -> None:
            raise PolicyViolation("no")

    policy = Minimal()
    policy.configure({"a": "b"})
    policy.close()
    with pytest.raises(PolicyViolation, match="no"):
        policy.validate(None)


def test_metadata_is_frozen_and_its_maps_are_read_only() -> None:
    assignments = {0: (1, 2)}
    configs = {"retention.ms": "1"}
    create = CreateTopicRequestMetadata("t", None, None, assignments, configs)
    assignments[1] = (3,)
    configs["x"] = "y"
    assert dict(create.replicas_assignments or {}) == {0: (1, 2)} and dict(create.configs) == {"retention.ms": "1"}
    with pytest.raises(TypeError):
        create.configs["z"] = "w"  # type: ignore[index]
    with pytest.raises(dataclasses.FrozenInstanceError):
        create.topic = "u"  # type: ignore[misc]

    alter = AlterConfigRequestMetadata(
        ConfigResource(ConfigResourceType.TOPIC, "t"), {"a": None, "b": "2"}, {"b": "2", "c": "3"}
    )
    assert isinstance(alter.configs, Mapping) and alter.configs["a"] is None
    with pytest.raises(TypeError):
        alter.resulting_configs["d"] = "4"  # type: ignore[index]


def test_create_metadata_has_kafkas_two_layouts() -> None:
    automatic = CreateTopicRequestMetadata("t", 3, 2, None, {})
    assert automatic.replicas_assignments is None and (automatic.num_partitions, automatic.replication_factor) == (3, 2)


def test_delete_metadata_carries_name_and_id() -> None:
    metadata = DeleteTopicRequestMetadata("orders", uuid.UUID(int=9))
    assert (metadata.topic, metadata.topic_id) == ("orders", uuid.UUID(int=9))


def test_config_resource_types_are_kafkas_ids() -> None:
    assert [(t.name, int(t)) for t in ConfigResourceType] == [
        ("UNKNOWN", 0), ("TOPIC", 2), ("BROKER", 4), ("BROKER_LOGGER", 8), ("CLIENT_METRICS", 16), ("GROUP", 32),
    ]  # fmt: skip
