"""A policy's request metadata prints no secret, and a policy that raises gets no secret into the log, at
any level: not through the metadata, not through its exception's message or traceback."""

from __future__ import annotations

import logging
import uuid

import pytest
from kio.schema.errors import ErrorCode

from ksteward.controller.result import ApiError
from ksteward.policy import (
    AlterConfigPolicy,
    AlterConfigRequestMetadata,
    ConfigResource,
    ConfigResourceType,
    CreateTopicPolicy,
    CreateTopicRequestMetadata,
    DeleteTopicPolicy,
    DeleteTopicRequestMetadata,
    Policies,
    policy_error,
)

PASSWORD_KEY = "listener.name.plaintext.ssl.key.password"
SECRETS = {PASSWORD_KEY: "HUNTER2", "my.vault.token": "S3CR3T", "sasl.jaas.config": "JAAS-PW"}
BROKER = ConfigResource(ConfigResourceType.BROKER, "1")


def broker_metadata() -> AlterConfigRequestMetadata:
    return AlterConfigRequestMetadata(
        BROKER, {**SECRETS, "num.io.threads": "8", "log.cleaner.threads": None}, {**SECRETS, "num.io.threads": "8"}
    )


def assert_no_secret(text: str) -> None:
    for secret in [*SECRETS.values(), "T0PIC-SECRET"]:
        assert secret not in text, text


def test_alter_config_metadata_prints_secrets_hidden() -> None:
    metadata = broker_metadata()
    for text in (repr(metadata), str(metadata), repr(metadata.configs), str(metadata.resulting_configs)):
        assert_no_secret(text)
        assert f"'{PASSWORD_KEY}': '[hidden]'" in text and "'my.vault.token': '[hidden]'" in text
        assert "'num.io.threads': '8'" in text
    assert "'log.cleaner.threads': None" in repr(metadata)
    # The policy itself reads the values in clear.
    assert (
        metadata.configs[PASSWORD_KEY] == "HUNTER2" and dict(metadata.resulting_configs)["my.vault.token"] == "S3CR3T"
    )
    # Sensitivity follows the resource type: nothing of BROKER_LOGGER is secret.
    logger = AlterConfigRequestMetadata(ConfigResource(ConfigResourceType.BROKER_LOGGER, "1"), {"root": "DEBUG"})
    assert "'root': 'DEBUG'" in repr(logger)


def test_create_topic_metadata_prints_secrets_hidden() -> None:
    metadata = CreateTopicRequestMetadata("t", 1, 1, None, {"retention.ms": "1000", "vault.token": "T0PIC-SECRET"})
    for text in (repr(metadata), str(metadata)):
        assert_no_secret(text)
        assert "'vault.token': '[hidden]'" in text and "'retention.ms': '1000'" in text
    assert metadata.configs["vault.token"] == "T0PIC-SECRET"


def test_delete_topic_metadata_has_nothing_to_hide() -> None:
    metadata = DeleteTopicRequestMetadata("orders", uuid.UUID(int=7))
    assert "orders" in repr(metadata) and "[hidden]" not in repr(metadata)


class RaisesKeyError(AlterConfigPolicy):
    def validate(self, request_metadata: AlterConfigRequestMetadata) -> None:
        raise KeyError(request_metadata.configs[PASSWORD_KEY])


class RaisesWithValue(AlterConfigPolicy):
    def validate(self, request_metadata: AlterConfigRequestMetadata) -> None:
        try:
            int(request_metadata.configs["my.vault.token"])
        except ValueError as exc:  # chained: the context's message holds the value too
            raise ValueError(f"bad {request_metadata.configs['sasl.jaas.config']}") from exc


class TopicRaises(CreateTopicPolicy):
    def validate(self, request_metadata: CreateTopicRequestMetadata) -> None:
        raise RuntimeError(request_metadata.configs["vault.token"])


@pytest.mark.parametrize("policy", [RaisesKeyError(), RaisesWithValue()], ids=type)
def test_a_failing_alter_config_policy_logs_no_secret(
    policy: AlterConfigPolicy, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.DEBUG, logger="ksteward.policy.loader"):
        assert policy_error(policy, broker_metadata()) == ApiError(ErrorCode.unknown_server_error)
    assert_no_secret(caplog.text)
    errors = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    name = type(policy).__qualname__
    kind = "KeyError" if isinstance(policy, RaisesKeyError) else "ValueError"
    assert errors == [f"Unknown server error in {name}.validate for BROKER resource '1': {kind} "
                      "(message withheld: it may quote the request or a config value)"]  # fmt: skip
    # At DEBUG: where it broke (the policy's source line is code, not a value).
    debug = "\n".join(r.getMessage() for r in caplog.records if r.levelno == logging.DEBUG)
    assert "in validate" in debug and __file__ in debug
    if kind == "ValueError":
        assert "caused by:\nValueError (message withheld)" in debug


def test_a_failing_create_topic_policy_logs_no_secret(caplog: pytest.LogCaptureFixture) -> None:
    metadata = CreateTopicRequestMetadata("t", 1, 1, None, {"vault.token": "T0PIC-SECRET"})
    with caplog.at_level(logging.DEBUG, logger="ksteward.policy.loader"):
        assert policy_error(TopicRaises(), metadata) == ApiError(ErrorCode.unknown_server_error)
    assert_no_secret(caplog.text)
    assert "Unknown server error in TopicRaises.validate for topic 't': RuntimeError" in caplog.text


class CloseRaises(DeleteTopicPolicy):
    def validate(self, request_metadata: DeleteTopicRequestMetadata) -> None:
        pass

    def close(self) -> None:
        raise RuntimeError(SECRETS[PASSWORD_KEY])  # a value it was configured with


def test_a_failing_close_logs_no_message(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.DEBUG, logger="ksteward.policy.loader"):
        Policies(delete_topic=CloseRaises()).close()
    assert "closing CloseRaises failed: RuntimeError" in caplog.text
    assert_no_secret(caplog.text)
