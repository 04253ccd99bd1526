"""One rule decides what is secret (``configs.sensitive``): DescribeConfigs, the records the tools print and
the pipeline reads, and every repr agree with it."""

from __future__ import annotations

import pytest

from ksteward.broker.configs import _logger_entries
from ksteward.configs.catalog import ConfigResourceType
from ksteward.configs.resolve import ConfigResolver
from ksteward.configs.sensitive import (
    HIDDEN,
    SECRET_BEARING_RECORD_TYPES,
    is_sensitive,
    loggable_configs,
    redact_record_json,
    redacted_record_json,
)
from ksteward.metadata.records import (
    ConfigRecord,
    DelegationTokenRecord,
    RemoveDelegationTokenRecord,
    UserScramCredentialRecord,
)

TOPIC, BROKER, BROKER_LOGGER = ConfigResourceType.TOPIC, ConfigResourceType.BROKER, ConfigResourceType.BROKER_LOGGER
SECRET = "S3CR3T"


def described_as_sensitive(resource_type: ConfigResourceType, name: str) -> bool:
    """What this node's DescribeConfigs answers for ``name`` when it is set."""
    if resource_type is TOPIC:
        return ConfigResolver().topic_entry(name, {name: SECRET}).is_sensitive
    if resource_type is BROKER:
        return ConfigResolver(broker_configs={name: SECRET}).broker_entry(name).is_sensitive
    (entry,) = _logger_entries([name])
    return entry.is_sensitive


@pytest.mark.parametrize(
    ("resource_type", "name", "sensitive"),
    [
        (BROKER, "ssl.keystore.password", True),  # a PASSWORD key
        (BROKER, "listener.name.plaintext.ssl.key.password", True),  # its base key is a PASSWORD
        (BROKER, "listener.name.plaintext.ssl.keystore.location", False),  # its base key is not
        (BROKER, "my.vault.token", True),  # a custom key: Kafka cannot type it, so it hides it
        (BROKER, "num.io.threads", False),
        (TOPIC, "retention.ms", False),
        (TOPIC, "legacy.secret", True),  # a topic key the catalog does not know
        (BROKER_LOGGER, "root", False),  # log levels are never secret
    ],
)
def test_the_rule_is_what_describe_configs_answers(
    resource_type: ConfigResourceType, name: str, sensitive: bool
) -> None:
    assert is_sensitive(resource_type, name) is sensitive
    assert described_as_sensitive(resource_type, name) is sensitive


@pytest.mark.parametrize(
    ("resource_type", "name", "shown"),
    [
        (4, "my.vault.token", HIDDEN),  # custom broker key
        (4, "listener.name.plaintext.ssl.key.password", HIDDEN),
        (4, "num.io.threads", "v"),
        (2, "retention.ms", "v"),
        (2, "legacy.secret", HIDDEN),
        (8, "kafka.server", "v"),  # BROKER_LOGGER
        (16, "metrics", "v"),  # CLIENT_METRICS
        (32, "consumer.session.timeout.ms", "v"),  # GROUP: typed by GroupConfig
        (32, "my.group.token", HIDDEN),  # GROUP: a key GroupConfig does not define
        (0, "anything", HIDDEN),  # UNKNOWN
        (99, "anything", HIDDEN),  # a code Kafka does not define
    ],
)
def test_config_records_are_hidden_by_the_rule_of_their_resource_type(
    resource_type: int, name: str, shown: str
) -> None:
    record = ConfigRecord(resource_type=resource_type, resource_name="1", name=name, value="v")
    rendered = redacted_record_json(record)
    assert rendered["type"] == "CONFIG_RECORD"
    assert rendered["data"] == {"resourceType": resource_type, "resourceName": "1", "name": name, "value": shown}
    deleted = ConfigRecord(resource_type=resource_type, resource_name="1", name=name, value=None)
    assert redacted_record_json(deleted)["data"]["value"] is None  # a deletion has nothing to hide


def test_scram_salts_and_keys_are_hidden_and_other_records_untouched() -> None:
    scram = UserScramCredentialRecord(
        name="alice", mechanism=1, salt=b"s4lt", stored_key=b"st0red", server_key=b"s3rver", iterations=4096
    )
    data = redacted_record_json(scram)["data"]
    assert data["salt"] == data["storedKey"] == data["serverKey"] == HIDDEN
    assert (data["name"], data["iterations"]) == ("alice", 4096)
    assert redact_record_json(18, {"resourceName": "orders"}) == {"resourceName": "orders"}


def test_delegation_token_records_are_hidden_whole_as_kafkas_metadata_tools_hide_them() -> None:
    token = DelegationTokenRecord(owner="User:alice", requester="User:admin", renewers=("User:bob",),
                                  issue_timestamp=1, max_timestamp=3, expiration_timestamp=2,
                                  token_id="t-1")  # fmt: skip
    assert set(redacted_record_json(token)["data"].values()) == {HIDDEN}
    assert redacted_record_json(RemoveDelegationTokenRecord(token_id="t-1"))["data"] == {"tokenId": HIDDEN}
    assert {10, 26} <= SECRET_BEARING_RECORD_TYPES  # undecodable ones are not shown as bytes either


def test_loggable_configs() -> None:
    shown = loggable_configs(BROKER, {"my.vault.token": SECRET, "num.io.threads": "8", "x.password": None})
    assert shown == {"my.vault.token": HIDDEN, "num.io.threads": "8", "x.password": None}
