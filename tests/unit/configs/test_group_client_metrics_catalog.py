"""GROUP (Kafka's GroupConfig) and CLIENT_METRICS (KIP-714) config catalogs: validation, alter and describe."""

from __future__ import annotations

import pytest
from kio.schema.errors import ErrorCode

from ksteward.configs.alter import AlterConfigOp, AlterConfigOpType, AlterResult, apply_incremental
from ksteward.configs.catalog import ConfigResourceType, ConfigSource
from ksteward.configs.client_metrics_catalog import validate_client_metrics
from ksteward.configs.group_catalog import GROUP_CONFIGS, GroupBrokerSettings, validate_group_configs
from ksteward.configs.resolve import config_key, describe_client_metrics, describe_group

DEFAULTS = GroupBrokerSettings.from_static({})
BAD_CONFIG, BAD_REQUEST = ErrorCode.invalid_config, ErrorCode.invalid_request


@pytest.mark.parametrize(
    ("configs", "message"),
    [
        ({"consumer.session.timeout.ms": "50000", "consumer.heartbeat.interval.ms": "6000"}, None),
        ({"share.auto.offset.reset": "by_duration:P1DT2H30M10.5S"}, None),
        ({"share.auto.offset.reset": "EARLIEST", "share.isolation.level": "read_committed"}, None),
        ({"streams.num.standby.replicas": "2"}, None),
        ({"foo": "1"}, "Unknown group config name: foo"),
        ({"consumer.session.timeout.ms": "x"},
         "Invalid value x for configuration consumer.session.timeout.ms: Not a number of type INT"),
        ({"consumer.session.timeout.ms": "0"},
         "Invalid value 0 for configuration consumer.session.timeout.ms: Value must be at least 1"),
        ({"consumer.session.timeout.ms": "44999"},
         "consumer.session.timeout.ms must be greater than or equal to group.consumer.min.session.timeout.ms"),
        ({"consumer.session.timeout.ms": "60001"},
         "consumer.session.timeout.ms must be less than or equal to group.consumer.max.session.timeout.ms"),
        ({"consumer.heartbeat.interval.ms": "15001"},
         "consumer.heartbeat.interval.ms must be less than or equal to group.consumer.max.heartbeat.interval.ms"),
        ({"share.record.lock.duration.ms": "14000"},
         "share.record.lock.duration.ms must be greater than or equal to group.share.min.record.lock.duration.ms"),
        ({"streams.num.standby.replicas": "3"},
         "streams.num.standby.replicas must be less than or equal to group.streams.max.standby.replicas"),
        ({"share.isolation.level": "dirty"},
         "Invalid value dirty for configuration share.isolation.level: String must be one of: read_committed, "
         "read_uncommitted"),
        ({"share.auto.offset.reset": "by_duration:-PT1H"},
         "Invalid value by_duration:-PT1H for configuration share.auto.offset.reset: Invalid value "
         "`by_duration:-PT1H` for configuration share.auto.offset.reset. The value must be either 'earliest', "
         "'latest' or of the format 'by_duration:<PnDTnHnMn.nS.>'."),
    ],
)  # fmt: skip
def test_group_validation(configs: dict[str, str], message: str | None) -> None:
    error = validate_group_configs(configs, DEFAULTS)
    assert (error and (error.code, error.message)) == (message and (BAD_CONFIG, message))


def test_group_bounds_and_defaults_come_from_the_broker() -> None:
    static = {"group.consumer.min.session.timeout.ms": "10000", "group.consumer.session.timeout.ms": "20000",
              "group.consumer.heartbeat.interval.ms": "x"}  # fmt: skip
    settings = GroupBrokerSettings.from_static(static)
    assert validate_group_configs({"consumer.session.timeout.ms": "10000"}, settings) is None
    # The session must stay above the heartbeat, missing keys taking the broker's defaults.
    error = validate_group_configs({"consumer.session.timeout.ms": "5000"}, settings)
    assert error is not None and "greater than or equal to group.consumer.min.session.timeout.ms" in error.message
    error = validate_group_configs({"consumer.heartbeat.interval.ms": "15000", "consumer.session.timeout.ms": "12000"},
                                   settings)  # fmt: skip
    assert (
        error is not None
        and error.message == "consumer.session.timeout.ms must be greater than consumer.heartbeat.interval.ms"
    )
    entries = {e.name: e for e in describe_group({}, settings, include_synonyms=True)}
    session = entries["consumer.session.timeout.ms"]
    assert (session.value, session.source) == ("20000", ConfigSource.STATIC_BROKER_CONFIG)
    assert [(s.name, s.value, s.source) for s in session.synonyms] == [
        ("group.consumer.session.timeout.ms", "20000", ConfigSource.STATIC_BROKER_CONFIG),
        ("group.consumer.session.timeout.ms", "45000", ConfigSource.DEFAULT_CONFIG),
    ]
    # An unparsable broker value is ignored, as if unset.
    assert entries["consumer.heartbeat.interval.ms"].value == "5000"


def test_describe_group_lists_every_key_with_its_source() -> None:
    entries = describe_group({"share.auto.offset.reset": "earliest"}, DEFAULTS, include_documentation=True)
    assert [e.name for e in entries] == sorted(GROUP_CONFIGS)
    by_name = {e.name: e for e in entries}
    reset = by_name["share.auto.offset.reset"]
    assert (reset.value, reset.source, reset.synonyms) == ("earliest", ConfigSource.GROUP_CONFIG, ())
    assert reset.documentation and reset.documentation.startswith("The strategy to initialize")
    level = describe_group({}, DEFAULTS, include_synonyms=True, keys=["share.isolation.level"])
    assert [(s.name, s.value, s.source) for s in level[0].synonyms] == [
        ("share.isolation.level", "read_uncommitted", ConfigSource.DEFAULT_CONFIG)
    ]
    assert not any(e.is_sensitive or e.read_only for e in entries)


@pytest.mark.parametrize(
    ("name", "configs", "code", "message"),
    [
        ("s", {"metrics": "org.apache.kafka.producer.", "interval.ms": "100", "match": "client_id=app-.*"}, None, None),
        ("s", {"match": "client_software_name = Java, client_software_version = 11.1.*"}, None, None),
        ("s", {"interval.ms": "3600000", "metrics": "*"}, None, None),
        ("", {}, BAD_REQUEST, "Subscription name can't be empty"),
        ("s", {"metric": "x"}, BAD_REQUEST, "Unknown client metrics configuration: metric"),
        ("s", {"interval.ms": "99"}, BAD_REQUEST,
         "Invalid value 99 for interval.ms, interval must be between 100 and 3600000 (1 hour)"),
        ("s", {"interval.ms": "3600001"}, BAD_REQUEST,
         "Invalid value 3600001 for interval.ms, interval must be between 100 and 3600000 (1 hour)"),
        ("s", {"interval.ms": "soon"}, BAD_CONFIG,
         "Invalid value soon for configuration interval.ms: Not a number of type INT"),
        ("s", {"match": "client_rack=a"}, BAD_CONFIG, "Illegal client matching pattern: client_rack=a"),
        ("s", {"match": "client_id"}, BAD_CONFIG, "Illegal client matching pattern: client_id"),
        ("s", {"match": "client_id=a=b"}, BAD_CONFIG, "Illegal client matching pattern: client_id=a=b"),
        ("s", {"match": "client_id=[a-"}, BAD_CONFIG, "Illegal client matching pattern: client_id=[a-"),
    ],
)  # fmt: skip
def test_client_metrics_validation(
    name: str, configs: dict[str, str], code: ErrorCode | None, message: str | None
) -> None:
    error = validate_client_metrics(name, configs)
    assert (error and (error.code, error.message)) == (code and (code, message))


def test_describe_client_metrics() -> None:
    entries = describe_client_metrics({"metrics": "a , b"}, include_synonyms=True, include_documentation=True)
    assert [(e.name, e.value, e.source) for e in entries] == [
        ("interval.ms", "300000", ConfigSource.DEFAULT_CONFIG),
        ("match", "", ConfigSource.DEFAULT_CONFIG),
        ("metrics", "a,b", ConfigSource.CLIENT_METRICS_CONFIG),
    ]
    assert [(s.name, s.source) for s in entries[2].synonyms] == [("metrics", ConfigSource.CLIENT_METRICS_CONFIG)]
    assert entries[0].synonyms == () and entries[0].documentation == "Metrics push interval in milliseconds"


def test_append_and_subtract_work_on_subscription_lists_only() -> None:
    cm = ConfigResourceType.CLIENT_METRICS
    result = apply_incremental(cm, {"metrics": "a"}, [AlterConfigOp("metrics", AlterConfigOpType.APPEND, "b,a")])
    assert isinstance(result, AlterResult) and result.configs["metrics"] == "a,b"
    result = apply_incremental(cm, {}, [AlterConfigOp("match", AlterConfigOpType.APPEND, "client_id=x")])
    assert isinstance(result, AlterResult) and result.configs["match"] == "client_id=x"
    error = apply_incremental(ConfigResourceType.GROUP, {}, [AlterConfigOp("consumer.session.timeout.ms", 2, "1")])
    assert not isinstance(error, AlterResult)
    assert error.message == "Can't APPEND to key consumer.session.timeout.ms because its type is not LIST."
    key = config_key(ConfigResourceType.GROUP, "share.isolation.level")
    assert key is not None and config_key(cm, "interval.ms") is not None
