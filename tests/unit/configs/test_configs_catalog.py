"""The catalogs against Kafka 4.x's definitions and the Java formatting rules they rely on."""

from __future__ import annotations

import doctest
import importlib

import pytest

from ksteward.configs.broker_catalog import (
    BROKER_CONFIGS,
    DYNAMIC_SECURITY_CONFIGS,
    broker_config_key,
    broker_synonyms,
)
from ksteward.configs.catalog import (
    ConfigResourceType,
    ConfigSource,
    ConfigType,
    Range,
    UpdateMode,
    java_double_str,
    java_split,
)
from ksteward.configs.topic_catalog import TOPIC_CONFIGS

KAFKA_4_TOPIC_CONFIGS = [
    "segment.bytes", "segment.ms", "segment.jitter.ms", "segment.index.bytes", "flush.messages", "flush.ms",
    "retention.bytes", "retention.ms", "max.message.bytes", "index.interval.bytes", "delete.retention.ms",
    "min.compaction.lag.ms", "max.compaction.lag.ms", "file.delete.delay.ms", "min.cleanable.dirty.ratio",
    "cleanup.policy", "unclean.leader.election.enable", "min.insync.replicas", "compression.type",
    "compression.gzip.level", "compression.lz4.level", "compression.zstd.level", "preallocate",
    "message.timestamp.type", "message.timestamp.before.max.ms", "message.timestamp.after.max.ms",
    "leader.replication.throttled.replicas", "follower.replication.throttled.replicas", "remote.storage.enable",
    "local.retention.ms", "local.retention.bytes", "remote.log.copy.disable", "remote.log.delete.on.disable",
]  # fmt: skip

# Kafka's dynamic broker keys, less the keys Kafka 4.0 removed (log.message.format.version,
# log.message.timestamp.difference.max.ms, log.message.downconversion.enable).
LOG_DEFAULTS = {
    "log.segment.bytes", "log.roll.ms", "log.roll.jitter.ms", "log.index.size.max.bytes", "log.flush.interval.messages",
    "log.flush.interval.ms", "log.retention.bytes", "log.retention.ms", "message.max.bytes", "log.index.interval.bytes",
    "log.cleaner.delete.retention.ms", "log.cleaner.min.compaction.lag.ms", "log.cleaner.max.compaction.lag.ms",
    "log.segment.delete.delay.ms", "log.cleaner.min.cleanable.ratio", "log.cleanup.policy",
    "unclean.leader.election.enable", "min.insync.replicas", "compression.type", "compression.gzip.level",
    "compression.lz4.level", "compression.zstd.level", "log.preallocate", "log.message.timestamp.type",
    "log.message.timestamp.before.max.ms", "log.message.timestamp.after.max.ms", "log.local.retention.ms",
    "log.local.retention.bytes",
}  # fmt: skip
CLUSTER_WIDE = LOG_DEFAULTS | {
    "log.cleaner.threads", "log.cleaner.dedupe.buffer.size", "log.cleaner.io.buffer.load.factor",
    "log.cleaner.io.buffer.size", "log.cleaner.io.max.bytes.per.second", "log.cleaner.backoff.ms",
    "num.io.threads", "num.replica.fetchers", "num.recovery.threads.per.data.dir", "background.threads",
    "num.network.threads", "max.connections", "max.connection.creation.rate", "max.connections.per.ip",
    "max.connections.per.ip.overrides", "metric.reporters", "producer.id.expiration.ms",
    "transaction.partition.verification.enable", "remote.log.index.file.cache.total.size.bytes",
    "remote.fetch.max.wait.ms", "remote.log.manager.copy.max.bytes.per.second",
    "remote.log.manager.fetch.max.bytes.per.second", "remote.list.offsets.request.timeout.ms",
    "remote.log.manager.copier.thread.pool.size", "remote.log.manager.expiration.thread.pool.size",
    "remote.log.reader.threads", "leader.replication.throttled.rate", "follower.replication.throttled.rate",
    "replica.alter.log.dirs.io.max.bytes.per.second",
}  # fmt: skip
PER_BROKER = DYNAMIC_SECURITY_CONFIGS | {
    "listeners", "listener.security.protocol.map", "principal.builder.class",
    "ssl.protocol", "ssl.provider", "ssl.cipher.suites", "ssl.enabled.protocols", "ssl.keymanager.algorithm",
    "ssl.trustmanager.algorithm", "ssl.endpoint.identification.algorithm", "ssl.secure.random.implementation",
    "ssl.client.auth", "ssl.engine.factory.class", "sasl.mechanism.inter.broker.protocol", "sasl.jaas.config",
    "sasl.enabled.mechanisms", "sasl.kerberos.service.name", "sasl.kerberos.kinit.cmd",
    "sasl.kerberos.ticket.renew.window.factor", "sasl.kerberos.ticket.renew.jitter",
    "sasl.kerberos.min.time.before.relogin", "sasl.kerberos.principal.to.local.rules",
    "sasl.login.refresh.window.factor", "sasl.login.refresh.window.jitter", "sasl.login.refresh.min.period.seconds",
    "sasl.login.refresh.buffer.seconds",
}  # fmt: skip
STATIC_ADMIN = {  # docs/topics-and-configs.md, "Controller-side static settings"
    "num.partitions", "default.replication.factor", "delete.topic.enable", "auto.create.topics.enable",
    "create.topic.policy.class.name", "alter.config.policy.class.name", "controller.socket.timeout.ms",
    "request.timeout.ms", "controller.listener.names",
}  # fmt: skip


def test_topic_catalog_is_kafka_4s_in_definition_order() -> None:
    assert list(TOPIC_CONFIGS) == KAFKA_4_TOPIC_CONFIGS
    lists = {name for name, key in TOPIC_CONFIGS.items() if key.is_list}
    assert lists == {
        "cleanup.policy",
        "leader.replication.throttled.replicas",
        "follower.replication.throttled.replicas",
    }
    assert TOPIC_CONFIGS["message.timestamp.after.max.ms"].default == "3600000"  # KIP-1030
    assert str(TOPIC_CONFIGS["segment.bytes"].validator) == "[1048576,...]"


def test_broker_update_modes_match_the_spec() -> None:
    by_mode = {mode: {n for n, k in BROKER_CONFIGS.items() if k.update_mode is mode} for mode in UpdateMode}
    assert by_mode[UpdateMode.CLUSTER_WIDE] == CLUSTER_WIDE
    assert by_mode[UpdateMode.PER_BROKER] == PER_BROKER
    assert by_mode[UpdateMode.READ_ONLY] >= STATIC_ADMIN
    assert {"log.retention.hours", "log.retention.minutes", "log.roll.hours", "log.roll.jitter.hours"} <= by_mode[
        UpdateMode.READ_ONLY
    ]


@pytest.mark.parametrize("name", KAFKA_4_TOPIC_CONFIGS)
def test_topic_synonyms_are_broker_keys_and_the_first_is_dynamic(name: str) -> None:
    key = TOPIC_CONFIGS[name]
    if not key.synonyms:
        assert name.startswith("remote.") or name.endswith("throttled.replicas")
        return
    assert broker_synonyms(key.synonyms[0]) == key.synonyms
    assert key.synonyms[0] in LOG_DEFAULTS
    for synonym in key.synonyms:
        assert synonym in BROKER_CONFIGS
        broker = BROKER_CONFIGS[synonym]
        assert broker.type is key.type or (synonym.endswith((".hours", ".minutes")) and broker.type is ConfigType.INT)


def test_a_topic_default_is_its_broker_default_in_topic_units() -> None:
    # why a topic that inherits nothing set reports the topic default whichever synonym supplies it
    units = {"log.roll.hours": 3_600_000, "log.roll.jitter.hours": 3_600_000, "log.retention.hours": 3_600_000}
    for name, key in TOPIC_CONFIGS.items():
        broker = next((BROKER_CONFIGS[s] for s in key.synonyms if BROKER_CONFIGS[s].default is not None), None)
        if broker is None:
            continue
        assert broker.default is not None
        value = broker.default
        if broker.name in units:
            value = str(int(value) * units[broker.name])
        assert value == key.default, name


@pytest.mark.parametrize("key", [*TOPIC_CONFIGS.values(), *BROKER_CONFIGS.values()], ids=lambda k: k.name)
def test_defaults_are_valid_and_written_as_kafka_writes_them(key: object) -> None:
    from ksteward.configs.catalog import ConfigKey

    assert isinstance(key, ConfigKey)
    if key.default is None:
        return
    assert key.check(key.default) is None
    assert key.canonical(key.default) == key.default
    assert key.doc and "\n" not in key.doc


def test_broker_synonyms() -> None:
    assert broker_synonyms("log.retention.hours") == (
        "log.retention.ms",
        "log.retention.minutes",
        "log.retention.hours",
    )
    assert broker_synonyms("log.flush.interval.ms") == ("log.flush.interval.ms", "log.flush.scheduler.interval.ms")
    assert broker_synonyms("listener.name.ext.ssl.keystore.location") == (
        "listener.name.ext.ssl.keystore.location", "ssl.keystore.location",
    )  # fmt: skip
    assert broker_synonyms("listener.name.ext.scram-sha-256.sasl.jaas.config") == (
        "listener.name.ext.scram-sha-256.sasl.jaas.config", "sasl.jaas.config",
    )  # fmt: skip
    assert broker_synonyms("num.io.threads") == ("num.io.threads",)
    key = broker_config_key("listener.name.ext.scram-sha-256.sasl.jaas.config")
    assert key is not None and key.type is ConfigType.PASSWORD
    assert broker_config_key("unknown.key") is None


def test_wire_codes() -> None:
    assert [int(t) for t in ConfigType] == list(range(10))
    assert ConfigSource.DYNAMIC_TOPIC_CONFIG is ConfigSource.TOPIC_CONFIG
    assert [int(s) for s in ConfigSource] == list(range(9))
    assert [int(t) for t in ConfigResourceType] == [0, 2, 4, 8, 16, 32]
    assert ConfigResourceType.from_code(3) is ConfigResourceType.UNKNOWN
    assert ConfigResourceType.from_code(4) is ConfigResourceType.BROKER


@pytest.mark.parametrize(
    ("value", "text"),
    [(0.5, "0.5"), (1.0, "1.0"), (0.0, "0.0"), (-0.0, "-0.0"), (1e7, "1.0E7"), (9999999.0, "9999999.0"),
     (0.001, "0.001"), (1e-4, "1.0E-4"), (1.7976931348623157e308, "1.7976931348623157E308"), (-2.5e-10, "-2.5E-10"),
     (float("nan"), "NaN"), (float("-inf"), "-Infinity")],
)  # fmt: skip
def test_java_double_str(value: float, text: str) -> None:
    assert java_double_str(value) == text


def test_java_split() -> None:
    assert java_split("") == [""]
    assert java_split(",") == []
    assert java_split("a,,b,,") == ["a", "", "b"]
    assert java_split(",a") == ["", "a"]


def test_valid_values_text() -> None:
    assert [str(Range.at_least(1)), str(Range.between(0, 1)), str(Range())] == ["[1,...]", "[0,...,1]", "[...]"]
    assert str(TOPIC_CONFIGS["compression.gzip.level"].validator) == "[1,...,9] or -1"
    assert str(TOPIC_CONFIGS["cleanup.policy"].validator) == "[compact, delete]"


@pytest.mark.parametrize("module", ["catalog", "topic_catalog", "broker_catalog", "alter", "resolve"])
def test_docstring_examples(module: str) -> None:
    result = doctest.testmod(importlib.import_module(f"ksteward.configs.{module}"))
    assert result.failed == 0
