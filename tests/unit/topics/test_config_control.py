"""AlterConfigs / IncrementalAlterConfigs on the controller (``ConfigurationControlManager``), the
ConfigGuardPolicy and BROKER_LOGGER levels."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from kio.schema.errors import ErrorCode
from topic_support import apply, cluster, with_topic

from ksteward.broker.loggers import alter_logger_levels, logger_levels
from ksteward.configs.alter import AlterConfigOp, AlterConfigOpType
from ksteward.configs.catalog import ConfigResourceType
from ksteward.controller.configs import ConfigAlteration, ConfigControlManager
from ksteward.controller.result import ApiError
from ksteward.policy import AlterConfigPolicy, AlterConfigRequestMetadata, ConfigResource, Policies, PolicyViolation
from ksteward.policy.builtin import ConfigGuardPolicy

T, B = ConfigResourceType.TOPIC, ConfigResourceType.BROKER
SET, DELETE, APPEND = AlterConfigOpType.SET, AlterConfigOpType.DELETE, AlterConfigOpType.APPEND


class Recording(AlterConfigPolicy):
    def __init__(self, refuse: str | None = None) -> None:
        self.seen: list[AlterConfigRequestMetadata] = []
        self.refuse = refuse

    def configure(self, configs: Any) -> None: ...

    def validate(self, request_metadata: AlterConfigRequestMetadata) -> None:
        self.seen.append(request_metadata)
        if self.refuse is not None and request_metadata.resource.name == self.refuse:
            raise PolicyViolation(f"no changes to {self.refuse}")


def image() -> Any:
    return with_topic(with_topic(cluster(), "orders", configs={"retention.ms": "5000"}), "payments")


def incremental(rtype: ConfigResourceType, name: str, *ops: tuple[str, int, str | None]) -> ConfigAlteration:
    return ConfigAlteration(rtype, name, ops=[AlterConfigOp(k, op, v) for k, op, v in ops])


def test_records_for_every_successful_resource_and_errors_per_resource() -> None:
    policy = Recording(refuse="payments")
    manager = ConfigControlManager(node_id=1, static={}, policies=Policies(alter_config=policy))
    done = manager.alter(
        image(),
        [
            incremental(T, "orders", ("cleanup.policy", APPEND, "compact"), ("retention.ms", DELETE, None)),
            incremental(T, "payments", ("retention.ms", SET, "1")),
            incremental(T, "ghost", ("retention.ms", SET, "1")),
            incremental(T, "orders2", ("retention.ms", SET, "x")),
            incremental(T, "", ("retention.ms", SET, "1")),
            incremental(B, "-1", ("log.cleaner.threads", SET, "2")),
            incremental(B, "abc", ("log.cleaner.threads", SET, "2")),
            incremental(B, "2147483648", ("log.cleaner.threads", SET, "2")),  # past int32, as Integer.valueOf
            incremental(B, "9", ("log.cleaner.threads", SET, "2")),
            incremental(B, "", ("log.cleaner.threads", SET, "2")),
        ],
    )
    records, errors = done.records, done.response
    assert errors == [
        None,
        ApiError(ErrorCode.policy_violation, "no changes to payments"),
        ApiError(ErrorCode.unknown_topic_or_partition, "The topic 'ghost' does not exist."),
        # the validator runs before the existence check, so an unknown topic with a bad value says INVALID_CONFIG
        ApiError(ErrorCode.invalid_config, "Invalid value x for configuration retention.ms: Not a number of type LONG"),
        ApiError(ErrorCode.invalid_request, "Default topic resources are not allowed."),
        ApiError(ErrorCode.invalid_request, "Invalid negative broker ID."),
        ApiError(ErrorCode.invalid_request, "Unable to parse broker name as a base 10 number."),
        ApiError(ErrorCode.invalid_request, "Unable to parse broker name as a base 10 number."),
        ApiError(ErrorCode.broker_id_not_registered, "No node with id 9 found."),
        None,
    ]
    assert [(r.resource_type, r.resource_name, r.name, r.value) for r in records] == [
        (2, "orders", "cleanup.policy", "delete,compact"),
        (2, "orders", "retention.ms", None),
        (4, "", "log.cleaner.threads", "2"),
    ]
    # The policy saw the changed keys (None for a deletion) and the resulting full set.
    orders = policy.seen[0]
    assert orders.resource == ConfigResource(T, "orders")
    assert dict(orders.configs) == {"cleanup.policy": "delete,compact", "retention.ms": None}
    assert dict(orders.resulting_configs) == {"cleanup.policy": "delete,compact"}
    # Applied, the records give the new state.
    after = apply(image(), records)
    assert after.configs[(2, "orders")] == {"cleanup.policy": "delete,compact"}


def test_legacy_replaces_the_whole_set_and_unchanged_topic_keys_write_nothing() -> None:
    manager = ConfigControlManager(node_id=1, static={})
    done = manager.alter(
        image(), [ConfigAlteration(T, "orders", configs={"retention.ms": "5000", "segment.ms": "60000"})]
    )
    records, errors = done.records, done.response
    assert errors == [None]
    assert [(r.name, r.value) for r in records] == [("segment.ms", "60000")]
    done = manager.alter(image(), [ConfigAlteration(T, "orders", configs={})])
    records, errors = done.records, done.response
    assert [(r.name, r.value) for r in records] == [("retention.ms", None)]


def test_more_than_ten_thousand_records_fail_the_whole_request() -> None:
    manager = ConfigControlManager(node_id=1, static={})
    exactly = [incremental(B, "", *[(f"k{j}", SET, "v") for j in range(5000)]), incremental(B, "1", *[
        (f"k{j}", SET, "v") for j in range(5000)])]  # fmt: skip
    done = manager.alter(image(), exactly)
    records, errors = done.records, done.response
    assert len(records) == 10_000 and errors == [None, None]
    huge = [incremental(B, "", *[(f"k{i}.{j}", SET, "v") for j in range(5001)]) for i in range(2)]
    done = manager.alter(image(), huge)
    records, errors = done.records, done.response
    too_large = ApiError(ErrorCode.policy_violation, "Unable to perform excessively large batch operation.")
    assert records == [] and errors == [too_large, too_large]


def test_resolver_is_shared_until_the_configs_change() -> None:
    manager = ConfigControlManager(node_id=1, static={"log.retention.hours": "1"})
    first = image()
    assert manager.resolver(first) is manager.resolver(first)
    done = manager.alter(first, [incremental(B, "1", ("log.retention.ms", SET, "1000"))])
    records, _ = done.records, done.response
    second = apply(first, records)
    assert manager.resolver(second) is not manager.resolver(first)
    assert manager.resolver(second).topic_log_defaults()["retention.ms"] == "1000"


# ---------------------------------------------------------------------------------------- ConfigGuardPolicy


def guard(**props: str) -> ConfigGuardPolicy:
    policy = ConfigGuardPolicy()
    policy.configure({f"config.guard.policy.{k.replace('_', '.')}": v for k, v in props.items()})
    return policy


def change(configs: dict[str, str | None], resulting: dict[str, str], rtype: ConfigResourceType = T) -> Any:
    return AlterConfigRequestMetadata(ConfigResource(rtype, "orders" if rtype is T else "1"), configs, resulting)


def test_guard_protected_keys_on_any_resource() -> None:
    policy = guard(protected_keys=" min.insync.replicas , unclean.leader.election.enable")
    policy.validate(change({"retention.ms": "1"}, {"retention.ms": "1"}))
    with pytest.raises(PolicyViolation, match=r"^min.insync.replicas of TOPIC 'orders' may not be changed"):
        policy.validate(change({"min.insync.replicas": None}, {}))
    with pytest.raises(PolicyViolation, match="of BROKER '1'"):
        policy.validate(change({"unclean.leader.election.enable": "true"}, {}, B))


@pytest.mark.parametrize(
    ("resulting", "refused"),
    [({"retention.ms": "1000"}, False), ({"retention.ms": "2000"}, True), ({"retention.ms": "-1"}, True), ({}, False)],
)
def test_guard_judges_the_resulting_retention(resulting: dict[str, str], refused: bool) -> None:
    policy = guard(max_retention_ms="1000")
    metadata = change({"segment.ms": "5"}, {**resulting, "segment.ms": "5"})
    if refused:
        with pytest.raises(PolicyViolation, match=r"exceeds config\.guard\.policy\.max\.retention\.ms=1000"):
            policy.validate(metadata)
    else:
        policy.validate(metadata)


def test_guard_rejects_a_bad_ceiling() -> None:
    with pytest.raises(ValueError, match=r"config\.guard\.policy\.max\.retention\.ms"):
        guard(max_retention_ms="soon")


# ---------------------------------------------------------------------------------------- BROKER_LOGGER


def test_logger_levels_set_validate_only_and_delete() -> None:
    name = "ksteward.tests.config_control"
    logger = logging.getLogger(name)
    try:
        assert logger_levels()[name] == logger_levels()["ksteward"]
        assert alter_logger_levels([AlterConfigOp(name, SET, "TRACE")], validate_only=True) is None
        assert logger.level == logging.NOTSET
        assert alter_logger_levels([AlterConfigOp(name, SET, "TRACE")], validate_only=False) is None
        assert logger_levels()[name] == "TRACE" and logger.isEnabledFor(5)
        # The first failure wins and nothing is applied.
        error = alter_logger_levels(
            [AlterConfigOp(name, SET, "WARN"), AlterConfigOp("ksteward.nope", SET, "INFO")], validate_only=False
        )
        assert error == ApiError(ErrorCode.invalid_config, "Logger ksteward.nope does not exist!")
        assert logger_levels()[name] == "TRACE"
        assert alter_logger_levels([AlterConfigOp(name, DELETE, None)], validate_only=False) is None
        assert logger.level == logging.NOTSET
        assert alter_logger_levels([AlterConfigOp(name, 7, "INFO")], validate_only=False) == ApiError(
            ErrorCode.invalid_request, "Unknown operation type 7 is not allowed for the BROKER_LOGGER resource"
        )
    finally:
        logger.setLevel(logging.NOTSET)
