"""Config validation: every validator kind and type parser, with Kafka's error codes and exact messages."""

from __future__ import annotations

import pytest
from kio.schema.errors import ErrorCode

from ksteward.configs.broker_catalog import validate_broker_configs, validate_broker_reconfiguration
from ksteward.configs.catalog import (
    ConfigKey,
    ConfigResourceType,
    ConfigType,
    NonEmptyString,
)
from ksteward.configs.resolve import validate
from ksteward.configs.topic_catalog import validate_topic_configs
from ksteward.controller.result import ApiError

TOPIC, BROKER = ConfigResourceType.TOPIC, ConfigResourceType.BROKER
INVALID_CONFIG, INVALID_REQUEST = ErrorCode.invalid_config, ErrorCode.invalid_request
ONE_OF_COMPRESSION = "String must be one of: uncompressed, zstd, lz4, snappy, gzip, producer"
ONE_OF_POLICY = "String must be one of: compact, delete"
THROTTLED = (
    "leader.replication.throttled.replicas must be the literal '*' or a list of replicas in the following "
    "format: [partitionId]:[brokerId],[partitionId]:[brokerId],..."
)


def bad(key: str, value: str, rule: str) -> str:
    return f"Invalid value {value} for configuration {key}: {rule}"


class Rule(str):
    """Expect Kafka's ``Invalid value <value> for configuration <key>: <rule>``, with INVALID_CONFIG for a
    topic and INVALID_REQUEST for a broker (KAFKA-13609). ``shown`` is the value as Kafka prints it."""

    shown: str | None = None

    @classmethod
    def of(cls, rule: str, shown: str) -> Rule:
        made = cls(rule)
        made.shown = shown
        return made


# (kind, resource type, key, value, expected: None, a Rule, or a whole ApiError)
CASES: list[tuple[str, ConfigResourceType, str, str, Rule | ApiError | None]] = [
    # Range.at_least
    ("range-min", TOPIC, "segment.bytes", "1048576", None),
    ("range-min", TOPIC, "segment.bytes", "1048575", Rule("Value must be at least 1048576")),
    ("range-min", TOPIC, "retention.ms", "-1", None),
    ("range-min", TOPIC, "retention.ms", "-2", Rule("Value must be at least -1")),
    ("range-min", TOPIC, "local.retention.bytes", "-3", Rule("Value must be at least -2")),
    ("range-min", TOPIC, "min.insync.replicas", "0", Rule("Value must be at least 1")),
    ("range-min", BROKER, "log.segment.bytes", "14", Rule("Value must be at least 1048576")),
    # Range.between
    ("range-between", TOPIC, "min.cleanable.dirty.ratio", "1", None),
    ("range-between", TOPIC, "min.cleanable.dirty.ratio", "1.5", Rule("Value must be no more than 1")),
    ("range-between", TOPIC, "min.cleanable.dirty.ratio", "-0.1", Rule("Value must be at least 0")),
    ("range-between", TOPIC, "compression.lz4.level", "17", None),
    ("range-between", TOPIC, "compression.lz4.level", "18", Rule("Value must be no more than 17")),
    ("range-between", TOPIC, "compression.zstd.level", "-131072", None),
    ("range-between", TOPIC, "compression.zstd.level", "-131073", Rule("Value must be at least -131072")),
    # ValidString (case-sensitive)
    ("valid-string", TOPIC, "compression.type", "zstd", None),
    ("valid-string", TOPIC, "compression.type", "brotli", Rule(ONE_OF_COMPRESSION)),
    ("valid-string", TOPIC, "message.timestamp.type", " LogAppendTime ", None),
    ("valid-string", TOPIC, "message.timestamp.type", "createtime",
     Rule("String must be one of: CreateTime, LogAppendTime")),
    # ValidList: each item is checked, the empty list passes
    ("valid-list", TOPIC, "cleanup.policy", "compact , delete", None),
    ("valid-list", TOPIC, "cleanup.policy", "", None),
    ("valid-list", TOPIC, "cleanup.policy", "compact,Delete", Rule.of(ONE_OF_POLICY, "Delete")),
    ("valid-list", TOPIC, "cleanup.policy", "compact,,delete", Rule.of(ONE_OF_POLICY, "")),
    ("valid-list", BROKER, "log.cleanup.policy", "delete,bogus", Rule.of(ONE_OF_POLICY, "bogus")),
    # ThrottledReplicaList: a pattern per item, or the wildcard alone
    ("regex-list", TOPIC, "leader.replication.throttled.replicas", "*", None),
    ("regex-list", TOPIC, "leader.replication.throttled.replicas", "0:1, 1:2", None),
    ("regex-list", TOPIC, "leader.replication.throttled.replicas", "0:x", Rule.of(THROTTLED, "[0:x]")),
    ("regex-list", TOPIC, "leader.replication.throttled.replicas", "*,0:1", Rule.of(THROTTLED, "[*, 0:1]")),
    # LambdaValidator (custom): gzip levels 1..9 or -1
    ("custom", TOPIC, "compression.gzip.level", "-1", None),
    ("custom", TOPIC, "compression.gzip.level", "9", None),
    ("custom", TOPIC, "compression.gzip.level", "0", Rule("Value must be between 1 and 9 or equal to -1")),
    ("custom", TOPIC, "compression.gzip.level", "10", Rule("Value must be between 1 and 9 or equal to -1")),
    # Type parsing (ConfigDef.parseType)
    ("boolean", TOPIC, "preallocate", " TRUE ", None),
    ("boolean", TOPIC, "preallocate", "yes", Rule("Expected value to be either true or false")),
    ("int", TOPIC, "max.message.bytes", " +42 ", None),
    ("int", TOPIC, "max.message.bytes", "1.5", Rule("Not a number of type INT")),
    ("int", TOPIC, "max.message.bytes", "1_000", Rule("Not a number of type INT")),
    ("int", TOPIC, "max.message.bytes", "2147483648", Rule("Not a number of type INT")),
    ("int", BROKER, "num.io.threads", "many", Rule("Not a number of type INT")),
    ("long", TOPIC, "retention.bytes", "-9223372036854775808", None),
    ("long", TOPIC, "retention.bytes", "9223372036854775808", Rule("Not a number of type LONG")),
    ("long", TOPIC, "retention.bytes", "", Rule("Not a number of type LONG")),
    ("double", TOPIC, "min.cleanable.dirty.ratio", "5e-1", None),
    ("double", TOPIC, "min.cleanable.dirty.ratio", "0.5d", None),
    ("double", TOPIC, "min.cleanable.dirty.ratio", "half", Rule("Not a number of type DOUBLE")),
    ("short", BROKER, "sasl.login.refresh.buffer.seconds", "32767", None),
    ("short", BROKER, "sasl.login.refresh.buffer.seconds", "32768", Rule("Not a number of type SHORT")),
    # a listener-prefixed key is checked, and named, as its base key
    ("class", BROKER, "listener.name.ext.principal.builder.class", "com.example.Builder$Inner", None),
    ("class", BROKER, "listener.name.ext.principal.builder.class", "not a class", ApiError(
        INVALID_REQUEST, bad("principal.builder.class", "not a class", "Class not a class could not be found."))),
    ("valid-string", BROKER, "listener.name.ext.ssl.client.auth", "maybe", ApiError(
        INVALID_REQUEST, bad("ssl.client.auth", "maybe", "String must be one of: required, requested, none"))),
    # Names: unknown topic keys are refused, unknown broker keys are custom configs
    ("name", TOPIC, "retention.hours", "1", ApiError(INVALID_CONFIG, "Unknown topic config name: retention.hours")),
    ("name", TOPIC, "message.format.version", "3.0",
     ApiError(INVALID_CONFIG, "Unknown topic config name: message.format.version")),
    ("name", BROKER, "my.custom.plugin.setting", "anything", None),
    # Broker rules (docs/topics-and-configs.md, "Dynamic broker configs")
    ("read-only", BROKER, "log.retention.hours", "1",
     ApiError(INVALID_REQUEST, "Cannot update these configs dynamically: Set(log.retention.hours)")),
    ("read-only", BROKER, "num.partitions", "3",
     ApiError(INVALID_REQUEST, "Cannot update these configs dynamically: Set(num.partitions)")),
    ("listener-prefix", BROKER, "ssl.keystore.location", "/k", ApiError(INVALID_REQUEST,
     "These security configs can be dynamically updated only per-listener using the listener prefix: "
     "Set(ssl.keystore.location)")),
    ("listener-prefix", BROKER, "listener.name.ext.ssl.keystore.location", "/k", None),
    # only dynamic keys are type-checked: a listener-prefixed read-only key is a custom config to Kafka
    ("listener-prefix", BROKER, "listener.name.ext.num.partitions", "abc", None),
]  # fmt: skip


def expected_error(resource_type: ConfigResourceType, key: str, value: str, expected: object) -> ApiError | None:
    if not isinstance(expected, Rule):
        assert expected is None or isinstance(expected, ApiError)
        return expected
    code = INVALID_CONFIG if resource_type is TOPIC else INVALID_REQUEST
    return ApiError(code, bad(key, value if expected.shown is None else expected.shown, expected))


@pytest.mark.parametrize(
    ("kind", "resource_type", "key", "value", "expected"), CASES, ids=[f"{c[0]}:{c[2]}={c[3]!r}" for c in CASES]
)
def test_validator_table(
    kind: str, resource_type: ConfigResourceType, key: str, value: str, expected: Rule | ApiError | None
) -> None:
    assert validate(resource_type, key, value) == expected_error(resource_type, key, value, expected)


def test_table_covers_every_validator_kind_with_good_and_bad_values() -> None:
    kinds = {c[0] for c in CASES}
    for kind in kinds:
        outcomes = {c[4] is None for c in CASES if c[0] == kind}
        if kind not in ("name", "read-only"):
            assert outcomes == {True, False}, kind
    assert {"range-min", "range-between", "valid-string", "valid-list", "regex-list", "custom"} <= kinds


def test_non_empty_string_validator() -> None:
    # Kafka's NonEmptyString guards no topic or dynamic broker key; checked on a key of its own.
    key = ConfigKey("x.name", ConfigType.STRING, None, NonEmptyString())
    assert key.check("a") is None
    assert key.check("  ") == ApiError(
        INVALID_CONFIG, "Invalid value  for configuration x.name: String must be non-empty"
    )
    assert str(NonEmptyString()) == "non-empty string"


def test_per_broker_keys_are_refused_at_the_cluster_default_only() -> None:
    message = "Cannot update these configs at default cluster level, broker id must be specified: Set({})"
    for key in ("listeners", "sasl.enabled.mechanisms", "listener.name.ext.ssl.keystore.location"):
        assert validate(BROKER, key, "PLAINTEXT://:9092") is None
        assert validate(BROKER, key, "PLAINTEXT://:9092", cluster_default=True) == ApiError(
            INVALID_REQUEST, message.format(key)
        )
    # the cluster-level listener configs may be set per listener at the default level
    assert validate(BROKER, "listener.name.ext.max.connections", "10", cluster_default=True) is None
    assert validate(BROKER, "log.retention.ms", "1000", cluster_default=True) is None


def test_broker_checks_run_in_kafkas_order_and_name_every_offending_key() -> None:
    both = {"num.partitions": "3", "log.retention.hours": "1", "ssl.key.password": "x", "num.io.threads": "zero"}
    assert validate_broker_configs(both, cluster_default=False) == ApiError(
        INVALID_REQUEST, "Cannot update these configs dynamically: Set(num.partitions, log.retention.hours)"
    )
    assert validate_broker_configs({"num.io.threads": "zero", "listeners": "x"}, cluster_default=True) == ApiError(
        INVALID_REQUEST, bad("num.io.threads", "zero", "Not a number of type INT")
    )


def test_topic_names_are_checked_before_values_and_values_in_kafkas_definition_order() -> None:
    assert validate_topic_configs({"retention.ms": "x", "nope": "1"}) == ApiError(
        INVALID_CONFIG, "Unknown topic config name: nope"
    )
    # segment.bytes is defined before retention.ms
    assert validate_topic_configs({"retention.ms": "x", "segment.bytes": "1"}) == ApiError(
        INVALID_CONFIG, bad("segment.bytes", "1", "Value must be at least 1048576")
    )


def test_null_topic_values_are_refused() -> None:
    assert validate_topic_configs({"retention.ms": None, "segment.ms": "5", "flush.ms": None}) == ApiError(
        INVALID_CONFIG, "Null value not supported for topic configs: retention.ms,flush.ms"
    )


def test_min_insync_replicas_is_not_checked_against_anything_else() -> None:
    # Kafka accepts min.insync.replicas above the replication factor; only >= 1 is enforced
    assert validate_topic_configs({"min.insync.replicas": "100"}) is None


COMPACTION = "conflict topic config setting min.compaction.lag.ms ({}) > max.compaction.lag.ms ({})"
TIERED_OFF = (
    "Tiered Storage functionality is disabled in the broker. Topic cannot be configured with remote log storage."
)
COMPACTED = "Remote log storage is unsupported for the compacted topics"
COPY_DISABLED = (
    "When `remote.log.copy.disable` is set to true, the `local.retention.{0}` and `retention.{0}` must be set to "
    "the identical value because there will be no more logs copied to the remote storage."
)
DISABLE_REMOTE = (
    "It is invalid to disable remote storage without deleting remote data. If you want to keep the remote data and "
    "turn to read only, please set `remote.storage.enable=true,remote.log.copy.disable=true`. If you want to disable "
    "remote storage and delete all remote data, please set "
    "`remote.storage.enable=false,remote.log.delete.on.disable=true`."
)
NOT_UNLIMITED = "Value must not be -1 as retention.{} value is set as {}."
NOT_ABOVE = "Value must not be more than retention.{} property value: {}"
REMOTE = {"remote.storage.enable": "true"}
COPY_OFF = {**REMOTE, "remote.log.copy.disable": "true"}

# (case, topic configs, context: inherited log defaults, plus "system" and "existing", expected message)
CROSS_FIELD = [
    ("lag-ok", {"min.compaction.lag.ms": "5", "max.compaction.lag.ms": "5"}, {}, None),
    ("lag", {"min.compaction.lag.ms": "10", "max.compaction.lag.ms": "5"}, {}, COMPACTION.format(10, 5)),
    ("lag-from-broker", {"max.compaction.lag.ms": "5"}, {"min.compaction.lag.ms": "60000"},
     COMPACTION.format(60000, 5)),
    ("tiered-disabled", {"remote.storage.enable": "true"}, {"system": False}, TIERED_OFF),
    ("tiered-ok", REMOTE, {}, None),
    ("tiered-compact", {**REMOTE, "cleanup.policy": "delete,compact"}, {}, COMPACTED),
    ("tiered-compact-inherited", REMOTE, {"cleanup.policy": "compact"}, COMPACTED),
    ("local-bytes-unlimited", {**REMOTE, "retention.bytes": "100", "local.retention.bytes": "-1"}, {},
     bad("local.retention.bytes", "-1", NOT_UNLIMITED.format("bytes", 100))),
    ("local-bytes-above", {**REMOTE, "retention.bytes": "100", "local.retention.bytes": "101"}, {},
     bad("local.retention.bytes", "101", NOT_ABOVE.format("bytes", 100))),
    ("local-bytes-ok", {**REMOTE, "retention.bytes": "100", "local.retention.bytes": "100"}, {}, None),
    ("local-bytes-unbounded-total", {**REMOTE, "retention.bytes": "-1", "local.retention.bytes": "500"}, {}, None),
    ("local-ms-unlimited", {**REMOTE, "local.retention.ms": "-1"}, {},
     bad("local.retention.ms", "-1", NOT_UNLIMITED.format("ms", 604800000))),
    ("local-ms-above", {**REMOTE, "retention.ms": "1000", "local.retention.ms": "1001"}, {},
     bad("local.retention.ms", "1001", NOT_ABOVE.format("ms", 1000))),
    ("copy-disabled-bytes", {**COPY_OFF, "retention.bytes": "100", "local.retention.bytes": "50"}, {},
     COPY_DISABLED.format("bytes")),
    ("copy-disabled-ms", {**COPY_OFF, "local.retention.ms": "50"}, {}, COPY_DISABLED.format("ms")),
    ("copy-disabled-ok", {**COPY_OFF, "local.retention.ms": "604800000"}, {}, None),
    ("turn-off", {}, {"existing": {"remote.storage.enable": "true"}}, DISABLE_REMOTE),
    ("turn-off-any-case", {}, {"existing": {"remote.storage.enable": "True"}}, DISABLE_REMOTE),
    ("turn-off-deleting", {"remote.log.delete.on.disable": "true"}, {"existing": {"remote.storage.enable": "TRUE"}},
     None),
]  # fmt: skip


@pytest.mark.parametrize(("case", "configs", "context", "expected"), CROSS_FIELD, ids=[c[0] for c in CROSS_FIELD])
def test_cross_field_rules(
    case: str, configs: dict[str, str], context: dict[str, object], expected: str | None
) -> None:
    context = dict(context)
    system = bool(context.pop("system", True))
    existing = context.pop("existing", {})
    assert isinstance(existing, dict)
    log_defaults = {k: str(v) for k, v in context.items()}
    result = validate_topic_configs(
        configs, log_defaults=log_defaults, existing=existing, remote_storage_system_enabled=system
    )
    assert result == (None if expected is None else ApiError(INVALID_CONFIG, expected))


def test_an_invalid_inherited_value_does_not_fail_the_topic() -> None:
    assert validate_topic_configs({}, log_defaults={"segment.bytes": "12"}) is None


THREADS = (
    "Invalid value org.apache.kafka.common.config.ConfigException: {} for configuration Invalid dynamic configuration"
)


@pytest.mark.parametrize(
    ("current", "proposed", "message"),
    [
        ({"num.io.threads": "8"}, {"num.io.threads": "16"}, None),
        ({"num.io.threads": "8"}, {"num.io.threads": "4"}, None),
        ({"num.io.threads": "8"}, {"num.io.threads": "17"}, "Dynamic thread count update validation failed for "
         "num.io.threads=17, value should not be greater than double the current value 8"),
        ({"num.io.threads": "8"}, {"num.io.threads": "3"}, "Dynamic thread count update validation failed for "
         "num.io.threads=3, value should be at least half the current value 8"),
        # the remote log pools, dynamic since Kafka 4.0 (KAFKA-17928), from their default of 10
        ({}, {"remote.log.reader.threads": "20"}, None),
        ({}, {"remote.log.manager.copier.thread.pool.size": "21"}, "Dynamic thread count update validation failed "
         "for remote.log.manager.copier.thread.pool.size=21, value should not be greater than double the current "
         "value 10"),
        ({}, {"remote.log.manager.expiration.thread.pool.size": "4"}, "Dynamic thread count update validation "
         "failed for remote.log.manager.expiration.thread.pool.size=4, value should be at least half the current "
         "value 10"),
        # num.replica.fetchers has no ConfigDef bound, so only this check stops 0 (the others fail earlier)
        ({}, {"num.replica.fetchers": "0"}, "Dynamic thread count update validation failed for "
         "num.replica.fetchers=0, value should be at least 1"),
        ({"log.cleaner.threads": "2"}, {"log.cleaner.threads": "5"},
         "Log cleaner threads cannot be increased to more than double the current value 2"),
        ({"log.cleaner.threads": "4"}, {"log.cleaner.threads": "1"},
         "Log cleaner threads cannot be reduced to less than half the current value 4"),
        # a cleaner change re-checks the thread count even when the count itself did not change
        ({"log.cleaner.threads": "0"}, {"log.cleaner.threads": "0", "log.cleaner.backoff.ms": "5"},
         "Log cleaner threads should be at least 1"),
        ({"log.cleaner.threads": "0"}, {"log.cleaner.threads": "0"}, None),
    ],
)  # fmt: skip
def test_thread_pool_reconfiguration(current: dict[str, str], proposed: dict[str, str], message: str | None) -> None:
    expected = None if message is None else ApiError(INVALID_REQUEST, THREADS.format(message))
    assert validate_broker_reconfiguration(current, proposed) == expected


def test_resource_types_without_a_catalog_are_the_callers_to_route() -> None:
    with pytest.raises(ValueError, match="GROUP"):
        validate(ConfigResourceType.GROUP, "consumer.session.timeout.ms", "45000")
