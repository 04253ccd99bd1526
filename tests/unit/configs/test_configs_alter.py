"""AlterConfigs (whole-set replacement) and IncrementalAlterConfigs (SET/DELETE/APPEND/SUBTRACT)."""

from __future__ import annotations

import pytest
from kio.schema.errors import ErrorCode

from ksteward.configs.alter import (
    AlterConfigOp,
    AlterConfigOpType,
    AlterResult,
    ConfigChange,
    apply_incremental,
    apply_legacy,
    check_incremental_request,
    check_legacy_request,
)
from ksteward.configs.catalog import ConfigResourceType
from ksteward.controller.result import ApiError

TOPIC, BROKER, GROUP = ConfigResourceType.TOPIC, ConfigResourceType.BROKER, ConfigResourceType.GROUP
SET, DELETE, APPEND, SUBTRACT = (
    AlterConfigOpType.SET, AlterConfigOpType.DELETE, AlterConfigOpType.APPEND, AlterConfigOpType.SUBTRACT,
)  # fmt: skip


def incremental(
    current: dict[str, str], *ops: tuple[str, int, str | None], resource: ConfigResourceType = TOPIC
) -> AlterResult:
    result = apply_incremental(resource, current, [AlterConfigOp(*op) for op in ops])
    assert isinstance(result, AlterResult), result
    return result


@pytest.mark.parametrize(
    ("current", "op", "value", "stored"),
    [
        ({}, APPEND, "compact", "delete,compact"),  # the base is the topic default, not log.cleanup.policy
        ({"cleanup.policy": "compact"}, APPEND, "delete", "compact,delete"),
        ({"cleanup.policy": "delete,compact"}, APPEND, "compact", "delete,compact"),  # already there
        ({"cleanup.policy": "delete"}, APPEND, "compact,delete,compact", "delete,compact"),
        ({"cleanup.policy": ""}, APPEND, "compact", "compact"),  # empty items are dropped from the base
        ({"cleanup.policy": "delete,compact"}, SUBTRACT, "delete", "compact"),
        ({"cleanup.policy": "compact"}, SUBTRACT, "delete", "compact"),  # missing: ignored
        ({"cleanup.policy": "delete,compact,delete"}, SUBTRACT, "delete", "compact,delete"),  # first occurrence
        ({"cleanup.policy": "delete"}, SUBTRACT, "delete", ""),  # the empty list is stored, not deleted
        ({}, SUBTRACT, "delete", ""),
        ({"cleanup.policy": "delete"}, APPEND, ",compact", "delete,,compact"),  # Kafka adds the empty item too
    ],
)
def test_append_and_subtract_on_cleanup_policy(current: dict[str, str], op: int, value: str, stored: str) -> None:
    result = incremental(current, ("cleanup.policy", op, value))
    assert result.configs == {"cleanup.policy": stored}
    changed = current.get("cleanup.policy") != stored
    assert result.changes == ((ConfigChange("cleanup.policy", stored),) if changed else ())


def test_append_of_a_present_item_to_an_unset_key_stores_the_default_as_an_override() -> None:
    # null -> "delete" is a change for the controller, so a record is written
    result = incremental({}, ("cleanup.policy", APPEND, "delete"))
    assert result.changes == (ConfigChange("cleanup.policy", "delete"),)


@pytest.mark.parametrize("op", [APPEND, SUBTRACT])
@pytest.mark.parametrize("key", ["retention.ms", "compression.type", "no.such.key"])
def test_append_and_subtract_refuse_keys_that_are_not_lists(op: AlterConfigOpType, key: str) -> None:
    result = apply_incremental(
        TOPIC, {}, [AlterConfigOp("cleanup.policy", APPEND, "compact"), AlterConfigOp(key, op, "1")]
    )
    assert result == ApiError(ErrorCode.invalid_config, f"Can't {op.name} to key {key} because its type is not LIST.")


def test_group_keys_are_never_lists() -> None:
    result = apply_incremental(GROUP, {}, [AlterConfigOp("consumer.session.timeout.ms", APPEND, "1")])
    assert result == ApiError(
        ErrorCode.invalid_config, "Can't APPEND to key consumer.session.timeout.ms because its type is not LIST."
    )


def test_broker_preprocess_refusals() -> None:
    ops = [AlterConfigOp("num.io.threads", SUBTRACT, "1")]
    assert apply_incremental(BROKER, {}, ops, broker_preprocess=True) == ApiError(
        ErrorCode.invalid_config, "Config value subtract is not allowed for config key: num.io.threads"
    )
    assert apply_incremental(BROKER, {}, ops) == ApiError(
        ErrorCode.invalid_config, "Can't SUBTRACT to key num.io.threads because its type is not LIST."
    )
    unknown = apply_incremental(BROKER, {}, [AlterConfigOp("custom.key", APPEND, "x")], broker_preprocess=True)
    assert isinstance(unknown, ApiError) and unknown.code == ErrorCode.unknown_server_error


def test_append_on_a_broker_list_key_uses_the_broker_default() -> None:
    result = incremental({}, ("log.cleanup.policy", APPEND, "compact"), resource=BROKER)
    assert result.configs == {"log.cleanup.policy": "delete,compact"}


def test_set_and_delete_on_a_topic() -> None:
    current = {"retention.ms": "100", "segment.ms": "200"}
    result = incremental(
        current,
        ("retention.ms", SET, "100"),  # unchanged: no record
        ("segment.ms", DELETE, "ignored"),  # DELETE ignores its value (KAFKA-13490)
        ("flush.ms", DELETE, None),  # absent: fine, nothing to write
        ("max.message.bytes", SET, "5"),
    )
    assert result.configs == {"retention.ms": "100", "max.message.bytes": "5"}
    assert result.changes == (ConfigChange("segment.ms", None), ConfigChange("max.message.bytes", "5"))
    assert result.policy_configs == {"segment.ms": None, "max.message.bytes": "5"}
    assert current == {"retention.ms": "100", "segment.ms": "200"}  # the input is not touched


def test_a_broker_resource_rewrites_every_named_key() -> None:
    # KAFKA-14136: records even for unchanged values and absent deletions, so brokers reload
    result = incremental(
        {"num.io.threads": "8"}, ("num.io.threads", SET, "8"), ("log.retention.ms", DELETE, None), resource=BROKER
    )
    assert result.changes == (ConfigChange("num.io.threads", "8"), ConfigChange("log.retention.ms", None))
    assert result.configs == {"num.io.threads": "8"}


def test_legacy_alter_replaces_the_whole_set() -> None:
    current = {"retention.ms": "1", "segment.ms": "2", "flush.ms": "3"}
    result = apply_legacy(TOPIC, current, {"retention.ms": "1", "segment.ms": "20", "cleanup.policy": "compact"})
    assert result.configs == {"retention.ms": "1", "segment.ms": "20", "cleanup.policy": "compact"}
    assert result.changes == (
        ConfigChange("segment.ms", "20"),
        ConfigChange("cleanup.policy", "compact"),
        ConfigChange("flush.ms", None, implicit=True),
    )
    # KAFKA-14195: the policy does not see the implicit deletion
    assert result.policy_configs == {"segment.ms": "20", "cleanup.policy": "compact"}


def test_legacy_alter_on_a_broker_rewrites_unchanged_keys_and_deletes_the_rest() -> None:
    result = apply_legacy(BROKER, {"num.io.threads": "8", "background.threads": "4"}, {"num.io.threads": "8"})
    assert result.changes == (
        ConfigChange("num.io.threads", "8"),
        ConfigChange("background.threads", None, implicit=True),
    )


def test_legacy_alter_null_deletes() -> None:
    result = apply_legacy(TOPIC, {"retention.ms": "1"}, {"retention.ms": None})
    assert result.configs == {}
    assert result.changes == (ConfigChange("retention.ms", None),)


@pytest.mark.parametrize(
    ("ops", "message"),
    [
        ([("a", SET, "1"), ("a", DELETE, None)], "Error due to duplicate config keys"),
        ([("a", SET, None), ("b", DELETE, None), ("c", APPEND, None)], "Null value not supported for : a, c"),
        ([("a", SET, "1"), ("b", 7, "x")], "Unknown operations type 7"),
    ],
)
def test_incremental_request_checks(ops: list[tuple[str, int, str | None]], message: str) -> None:
    assert check_incremental_request([AlterConfigOp(*op) for op in ops]) == ApiError(ErrorCode.invalid_request, message)


def test_a_well_formed_incremental_request_passes() -> None:
    assert check_incremental_request([AlterConfigOp("a", SET, "1"), AlterConfigOp("b", DELETE)]) is None


def test_legacy_request_checks() -> None:
    assert check_legacy_request([("a", "1"), ("a", "2")]) == ApiError(
        ErrorCode.invalid_request, "Error due to duplicate config keys"
    )
    assert check_legacy_request([("a", None), ("b", "1"), ("c", None)]) == ApiError(
        ErrorCode.invalid_request, "Null value not supported for : a, c"
    )
    assert check_legacy_request([("a", "1")]) is None
