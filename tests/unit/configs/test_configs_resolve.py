"""Effective values, sources and synonyms (docs/topics-and-configs.md)."""

from __future__ import annotations

from typing import Any

import pytest

from ksteward.configs.broker_catalog import BROKER_CONFIGS, BROKER_QUOTA_CONFIGS
from ksteward.configs.catalog import ConfigResourceType, ConfigSource, ConfigType
from ksteward.configs.resolve import ConfigResolver, ConfigSynonym, describe_resource, resolve
from ksteward.configs.topic_catalog import TOPIC_CONFIGS

TOPIC, BROKER = ConfigResourceType.TOPIC, ConfigResourceType.BROKER
S = ConfigSource


def syn(name: str, value: str | None, source: ConfigSource) -> ConfigSynonym:
    return ConfigSynonym(name, value, source)


# Each level is added on top of the previous ones: the highest one present wins.
LEVELS = [
    ({}, "-1", S.DEFAULT_CONFIG),
    ({"static": {"log.retention.bytes": "10"}}, "10", S.STATIC_BROKER_CONFIG),
    ({"cluster_defaults": {"log.retention.bytes": "20"}}, "20", S.DYNAMIC_DEFAULT_BROKER_CONFIG),
    ({"broker_configs": {"log.retention.bytes": "30"}}, "30", S.DYNAMIC_BROKER_CONFIG),
    ({"topic_configs": {"retention.bytes": "40"}}, "40", S.TOPIC_CONFIG),
]


@pytest.mark.parametrize("depth", range(len(LEVELS)), ids=[lvl[2].name for lvl in LEVELS])
def test_topic_resolution_order_over_every_source(depth: int) -> None:
    layers: dict[str, Any] = {}
    for extra, _, _ in LEVELS[: depth + 1]:
        for section, values in extra.items():
            layers[section] = values
    entry = resolve(TOPIC, "t", "retention.bytes", **layers)
    _, value, source = LEVELS[depth]
    assert (entry.value, entry.source) == (value, source)
    assert entry.is_default is (source is S.DEFAULT_CONFIG)
    assert entry.read_only is False


@pytest.mark.parametrize("depth", range(len(LEVELS) - 1), ids=[lvl[2].name for lvl in LEVELS[:-1]])
def test_broker_resolution_order_over_every_source(depth: int) -> None:
    layers: dict[str, Any] = {}
    for extra, _, _ in LEVELS[: depth + 1]:
        layers.update(extra)
    entry = resolve(BROKER, "1", "log.retention.bytes", **layers)
    _, value, source = LEVELS[depth]
    assert (entry.value, entry.source, entry.read_only) == (value, source, False)


def test_full_synonym_chain_in_kafkas_order() -> None:
    layers: dict[str, Any] = {
        "topic_configs": {"retention.ms": "1"},
        "broker_configs": {"log.retention.ms": "2"},
        "cluster_defaults": {"log.retention.ms": "3"},
        "static": {"log.retention.ms": "4", "log.retention.minutes": "5", "log.retention.hours": "6"},
    }
    entry = resolve(TOPIC, "t", "retention.ms", include_synonyms=True, **layers)
    assert entry.synonyms == (
        syn("retention.ms", "1", S.TOPIC_CONFIG),
        syn("log.retention.ms", "2", S.DYNAMIC_BROKER_CONFIG),
        syn("log.retention.ms", "3", S.DYNAMIC_DEFAULT_BROKER_CONFIG),
        syn("log.retention.ms", "4", S.STATIC_BROKER_CONFIG),
        syn("log.retention.minutes", "5", S.STATIC_BROKER_CONFIG),
        syn("log.retention.hours", "6", S.STATIC_BROKER_CONFIG),
        syn("log.retention.hours", "168", S.DEFAULT_CONFIG),  # log.retention.ms has no built-in default
    )
    without = resolve(TOPIC, "t", "retention.ms", **layers)
    assert without.synonyms == () and without.source is S.TOPIC_CONFIG


def test_synonyms_before_the_primary_name_are_dropped() -> None:
    # Kafka's synonym trimming (docs/topics-and-configs.md): only log.retention.hours is set, so every synonym of
    # retention.ms goes, and the source says DEFAULT_CONFIG although the value comes from the static hours setting
    entry = resolve(TOPIC, "t", "retention.ms", static={"log.retention.hours": "24"}, include_synonyms=True)
    assert (entry.value, entry.source, entry.synonyms) == ("86400000", S.DEFAULT_CONFIG, ())
    # describing the broker key itself drops the leading log.retention.ms entries
    broker = resolve(
        BROKER, "1", "log.retention.hours", static={"log.retention.ms": "1000", "log.retention.hours": "24"},
        include_synonyms=True,
    )  # fmt: skip
    assert broker.synonyms == (
        syn("log.retention.hours", "24", S.STATIC_BROKER_CONFIG),
        syn("log.retention.hours", "168", S.DEFAULT_CONFIG),
    )
    assert (broker.value, broker.source, broker.read_only) == ("24", S.STATIC_BROKER_CONFIG, True)


@pytest.mark.parametrize(
    ("topic_key", "static", "value"),
    [
        ("retention.ms", {"log.retention.minutes": "5"}, "300000"),
        ("retention.ms", {"log.retention.minutes": "5", "log.retention.ms": "7"}, "7"),
        ("retention.ms", {"log.retention.ms": "-5"}, "-1"),  # any negative is unlimited
        ("segment.ms", {"log.roll.hours": "2"}, "7200000"),
        ("segment.jitter.ms", {"log.roll.jitter.hours": "1"}, "3600000"),
        ("flush.ms", {"log.flush.scheduler.interval.ms": "500"}, "500"),
        ("flush.ms", {"log.flush.scheduler.interval.ms": "500", "log.flush.interval.ms": "9"}, "9"),
        ("max.message.bytes", {"message.max.bytes": " 2000 "}, "2000"),
        ("cleanup.policy", {"log.cleanup.policy": "compact , delete"}, "compact,delete"),
        ("min.cleanable.dirty.ratio", {"log.cleaner.min.cleanable.ratio": "1"}, "1.0"),
        ("unclean.leader.election.enable", {"unclean.leader.election.enable": "TRUE"}, "true"),
        ("segment.bytes", {"log.segment.bytes": "oops"}, "1073741824"),  # unparseable: as if unset
    ],
)
def test_inherited_values_use_synonyms_and_units(topic_key: str, static: dict[str, str], value: str) -> None:
    assert resolve(TOPIC, "t", topic_key, static=static).value == value


def test_a_synonym_set_statically_beats_a_later_synonym_set_dynamically() -> None:
    # KafkaConfig reads log.retention.ms from the merged layers before it looks at minutes
    entry = resolve(
        TOPIC, "t", "retention.ms", static={"log.retention.ms": "7"}, broker_configs={"log.retention.minutes": "1"}
    )
    assert entry.value == "7"


def test_topic_override_values_are_reported_parsed() -> None:
    overrides = {"cleanup.policy": " compact ,delete", "preallocate": "TRUE", "min.cleanable.dirty.ratio": "1"}
    entries = {e.name: e for e in describe_resource(TOPIC, "t", topic_configs=overrides)}
    assert entries["cleanup.policy"].value == "compact,delete"
    assert entries["preallocate"].value == "true"
    assert entries["min.cleanable.dirty.ratio"].value == "1.0"


def test_dynamic_layers_ignore_what_a_broker_would_ignore() -> None:
    resolver = ConfigResolver(
        cluster_defaults={"log.retention.hours": "1", "listeners": "PLAINTEXT://:1", "log.retention.bytes": "5"},
        broker_configs={"ssl.keystore.location": "/x", "num.partitions": "9", "custom.key": "c"},
    )
    assert resolver.topic_entry("retention.ms", {}).value == "604800000"
    assert [e.name for e in resolver.describe_broker(cluster_default=True)] == ["log.retention.bytes"]
    entries = {e.name: e for e in resolver.describe_broker()}
    assert entries["listeners"].value == "PLAINTEXT://:9092"
    assert entries["ssl.keystore.location"].value is None
    assert entries["num.partitions"].source is S.DEFAULT_CONFIG
    assert entries["custom.key"].source is S.DYNAMIC_BROKER_CONFIG


def test_cluster_default_describe_lists_only_its_keys_with_its_source() -> None:
    entries = describe_resource(
        BROKER, "", cluster_defaults={"log.cleanup.policy": "compact , delete", "min.insync.replicas": "2"},
        broker_configs={"min.insync.replicas": "3"}, static={"min.insync.replicas": "4"}, include_synonyms=True,
    )  # fmt: skip
    assert [(e.name, e.value, e.source) for e in entries] == [
        ("log.cleanup.policy", "compact , delete", S.DYNAMIC_DEFAULT_BROKER_CONFIG),  # raw, as stored
        ("min.insync.replicas", "2", S.DYNAMIC_DEFAULT_BROKER_CONFIG),
    ]
    assert entries[1].synonyms == (syn("min.insync.replicas", "2", S.DYNAMIC_DEFAULT_BROKER_CONFIG),)


def test_resolve_on_the_cluster_default_reads_that_level_only() -> None:
    layers = {"cluster_defaults": {"min.insync.replicas": "2"}, "broker_configs": {"min.insync.replicas": "3"}}
    entry = resolve(BROKER, "", "min.insync.replicas", include_synonyms=True, **layers)
    assert (entry.value, entry.source) == ("2", S.DYNAMIC_DEFAULT_BROKER_CONFIG)
    assert resolve(BROKER, "1", "min.insync.replicas", **layers).value == "3"


def test_node_values_of_defined_keys_are_reported_parsed() -> None:
    entries = describe_resource(BROKER, "1", static={"num.io.threads": " 4 ", "log.cleanup.policy": "compact , delete"})
    values = {e.name: e.value for e in entries}
    assert (values["num.io.threads"], values["log.cleanup.policy"]) == ("4", "compact,delete")


def test_node_describe_lists_every_defined_key_and_every_set_key() -> None:
    entries = describe_resource(
        BROKER, "1", static={"custom.thing": "x", "listener.name.ext.ssl.keystore.location": "/k"},
        broker_configs={"leader.replication.throttled.rate": "100"},
    )  # fmt: skip
    names = [e.name for e in entries]
    assert names == sorted(names)
    expected = (BROKER_CONFIGS.keys() - BROKER_QUOTA_CONFIGS) | {
        "custom.thing", "listener.name.ext.ssl.keystore.location", "leader.replication.throttled.rate",
    }  # fmt: skip
    assert set(names) == expected
    by_name = {e.name: e for e in entries}
    prefixed = by_name["listener.name.ext.ssl.keystore.location"]
    assert (prefixed.value, prefixed.config_type, prefixed.read_only, prefixed.is_sensitive) == (
        "/k", ConfigType.STRING, True, False,
    )  # fmt: skip
    quota = by_name["leader.replication.throttled.rate"]
    assert (quota.value, quota.config_type, quota.read_only, quota.source) == (
        "100", ConfigType.LONG, False, S.DYNAMIC_BROKER_CONFIG,
    )  # fmt: skip
    assert by_name["log.retention.ms"].value is None  # defined, no default, not set
    assert by_name["num.partitions"].read_only and not by_name["num.io.threads"].read_only


def test_topic_describe_is_the_full_list_plus_stored_keys() -> None:
    entries = describe_resource(TOPIC, "t", topic_configs={"retention.ms": "5", "old.key": "v"})
    assert {e.name for e in entries} == set(TOPIC_CONFIGS) | {"old.key"}
    assert len(entries) == 34
    old = next(e for e in entries if e.name == "old.key")
    assert (old.value, old.is_sensitive, old.config_type, old.source) == (
        None,
        True,
        ConfigType.UNKNOWN,
        S.TOPIC_CONFIG,
    )
    assert all(not e.read_only for e in entries)


def test_keys_filter_ignores_unknown_names_and_empty_means_all() -> None:
    picked = describe_resource(TOPIC, "t", keys=["retention.ms", "no.such.key"])
    assert [e.name for e in picked] == ["retention.ms"]
    assert len(describe_resource(TOPIC, "t", keys=[])) == len(TOPIC_CONFIGS)
    assert [e.name for e in describe_resource(BROKER, "1", keys=["num.io.threads"])] == ["num.io.threads"]


def test_documentation_and_types_are_reported() -> None:
    plain = resolve(TOPIC, "t", "cleanup.policy")
    documented = resolve(TOPIC, "t", "cleanup.policy", include_documentation=True)
    assert plain.documentation is None
    assert documented.documentation == TOPIC_CONFIGS["cleanup.policy"].doc != ""
    assert documented.config_type is ConfigType.LIST and int(documented.config_type) == 7
    assert resolve(BROKER, "1", "ssl.key.password", include_documentation=True).config_type is ConfigType.PASSWORD
    assert resolve(BROKER, "1", "num.io.threads", include_documentation=True).documentation


def test_one_resolver_serves_many_topics() -> None:
    resolver = ConfigResolver(static={"log.retention.bytes": "7"})
    a = resolver.describe_topic({"retention.bytes": "1"}, include_synonyms=True)
    b = resolver.describe_topic({}, include_synonyms=True)
    c = resolver.describe_topic({"retention.bytes": "2"}, include_synonyms=True)
    value = {
        name: next(e.value for e in d if e.name == "retention.bytes") for name, d in (("a", a), ("b", b), ("c", c))
    }
    assert value == {"a": "1", "b": "7", "c": "2"}
    assert b[0] is resolver.describe_topic({}, include_synonyms=True)[0]  # shared, immutable views
    assert resolver.topic_log_defaults()["retention.bytes"] == "7"


def test_broker_values_are_the_effective_values() -> None:
    resolver = ConfigResolver(static={"num.io.threads": "4"}, broker_configs={"background.threads": "3"})
    values = resolver.broker_values()
    assert (values["num.io.threads"], values["background.threads"], values["num.network.threads"]) == ("4", "3", "3")
    assert "log.retention.ms" not in values
