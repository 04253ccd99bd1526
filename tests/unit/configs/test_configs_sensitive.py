"""Secrets never leave the config layer: not in values, synonyms, messages or reprs."""

from __future__ import annotations

import pytest

from ksteward.configs.alter import AlterConfigOp, AlterConfigOpType, AlterResult, apply_incremental, apply_legacy
from ksteward.configs.broker_catalog import BROKER_CONFIGS, validate_broker_configs
from ksteward.configs.catalog import ConfigKey, ConfigResourceType, ConfigType, ValidString
from ksteward.configs.resolve import ConfigResolver, describe_resource, is_sensitive, loggable_value
from ksteward.configs.topic_catalog import TOPIC_CONFIGS

SECRET = "s3cr3t-Value"
TOPIC, BROKER = ConfigResourceType.TOPIC, ConfigResourceType.BROKER
SECRET_KEYS = [
    "ssl.keystore.password",
    "ssl.key.password",
    "sasl.jaas.config",
    "listener.name.ext.ssl.key.password",
    "listener.name.ext.plain.sasl.jaas.config",
    "custom.plugin.token",  # undeclared: Kafka hides what it cannot type
]


# Names of Kafka's PASSWORD-typed configs: the rule goes by the catalog's types, so the catalog must type
# every key with such a name PASSWORD, and no other key.
_SECRET_SUFFIXES = (
    "password", "sasl.jaas.config", "ssl.keystore.key", "ssl.keystore.certificate.chain",
    "ssl.truststore.certificates", "client.secret", "private.key.passphrase", "delegation.token.secret.key",
    "password.encoder.secret", "password.encoder.old.secret",
)  # fmt: skip


def test_the_catalogs_type_every_secret_key_password() -> None:
    for key in [*TOPIC_CONFIGS.values(), *BROKER_CONFIGS.values()]:
        assert key.name.endswith(_SECRET_SUFFIXES) is (key.type is ConfigType.PASSWORD), key.name


@pytest.mark.parametrize("name", SECRET_KEYS)
def test_describe_never_carries_a_secret(name: str) -> None:
    layers = {
        "static": {name: SECRET},
        "broker_configs": {name: SECRET},
        "cluster_defaults": {name: SECRET},
    }
    for resource in ("1", ""):
        for entry in describe_resource(BROKER, resource, include_synonyms=True, include_documentation=True, **layers):
            assert SECRET not in repr(entry)
            if entry.name == name:
                assert entry.is_sensitive and entry.value is None
                assert all(s.value is None for s in entry.synonyms)
    assert is_sensitive(BROKER, name)
    assert loggable_value(BROKER, name, SECRET) == "[hidden]"


def test_a_password_key_that_is_set_still_reports_its_source() -> None:
    entry = ConfigResolver(broker_configs={"listener.name.ext.ssl.key.password": SECRET}).broker_entry(
        "listener.name.ext.ssl.key.password", include_synonyms=True
    )
    assert entry.value is None and entry.synonyms[0].value is None
    assert entry.source.name == "DYNAMIC_BROKER_CONFIG"


def test_unknown_keys_stored_on_a_topic_are_hidden() -> None:
    entries = describe_resource(TOPIC, "t", topic_configs={"legacy.secret": SECRET}, include_synonyms=True)
    assert SECRET not in repr(entries)
    assert is_sensitive(TOPIC, "legacy.secret") and not is_sensitive(TOPIC, "retention.ms")
    assert loggable_value(TOPIC, "retention.ms", "5") == "5"


def test_validation_messages_name_the_key_not_the_secret() -> None:
    key = ConfigKey("x.password", ConfigType.PASSWORD, None, ValidString(("a",)))
    error = key.check(SECRET)
    assert error is not None
    assert error.message == "Invalid value [hidden] for configuration x.password: String must be one of: a"
    for config in ({"ssl.keystore.password": SECRET}, {"ssl.key.password": SECRET, "num.partitions": "1"}):
        for cluster_default in (True, False):
            result = validate_broker_configs(config, cluster_default=cluster_default)
            assert result is not None and SECRET not in result.message
    result = validate_broker_configs({"listener.name.ext.ssl.key.password": SECRET}, cluster_default=True)
    assert result is not None and SECRET not in result.message


def test_alter_results_and_ops_keep_secrets_out_of_repr() -> None:
    name = "listener.name.ext.ssl.keystore.password"
    op = AlterConfigOp(name, AlterConfigOpType.SET, SECRET)
    result = apply_incremental(BROKER, {"sasl.jaas.config": SECRET}, [op])
    assert isinstance(result, AlterResult)
    assert result.configs[name] == SECRET  # the record itself carries the value: KRaft stores it in clear
    assert SECRET not in repr(result) and SECRET not in repr(result.changes[0]) and SECRET not in repr(op)
    assert "[hidden]" in repr(result)
    legacy = apply_legacy(BROKER, {}, {"custom.token": SECRET, "num.io.threads": "8"})
    assert SECRET not in repr(legacy) and "'num.io.threads': '8'" in repr(legacy)


def test_sensitivity_of_resource_types_without_a_catalog() -> None:
    # Kafka's loggableValue: logger levels and client-metrics subscriptions are never secret, a GROUP key is
    # typed by GroupConfig (an unknown one is hidden), anything this layer cannot type is hidden
    assert not is_sensitive(ConfigResourceType.BROKER_LOGGER, "kafka.server")
    assert not is_sensitive(ConfigResourceType.CLIENT_METRICS, "metrics")
    assert not is_sensitive(ConfigResourceType.GROUP, "consumer.session.timeout.ms")
    assert is_sensitive(ConfigResourceType.GROUP, "my.group.token")
    assert is_sensitive(ConfigResourceType.UNKNOWN, "anything")
    assert loggable_value(ConfigResourceType.GROUP, "x", None) is None
