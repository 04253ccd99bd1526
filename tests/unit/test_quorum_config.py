"""``ServerConfig.quorum``: Kafka's ``controller.quorum.*`` timeouts (``QuorumConfig``), parsed on every node whatever
its roles, as Kafka's ``KafkaConfig`` does. A bad value names its key."""

from __future__ import annotations

import re

import pytest

from ksteward.configs.quorum_config import QuorumConfig
from ksteward.configs.server_config import ConfigError, parse_server_config

SINGLE = {
    "process.roles": "broker,controller",
    "node.id": "1",
    "listeners": "PLAINTEXT://localhost:9092,CONTROLLER://localhost:9093",
    "controller.listener.names": "CONTROLLER",
    "metadata.log.dir": "/tmp/x",
}
BROKER = {
    "process.roles": "broker",
    "node.id": "2",
    "listeners": "PLAINTEXT://localhost:9094",
    "controller.listener.names": "CONTROLLER",
    "controller.quorum.voters": "1@localhost:9093",
    "metadata.log.dir": "/tmp/y",
}
CONTROLLER = {
    "process.roles": "controller",
    "node.id": "1",
    "listeners": "CONTROLLER://localhost:9093",
    "controller.listener.names": "CONTROLLER",
    "controller.quorum.voters": "1@localhost:9093,3@localhost:9095,4@localhost:9096",
    "metadata.log.dir": "/tmp/z",
}
ROLES = pytest.mark.parametrize("base", [SINGLE, BROKER, CONTROLLER], ids=["single", "broker", "controller"])


@ROLES
def test_kafkas_defaults_when_nothing_is_set(base: dict[str, str]) -> None:
    assert parse_server_config(base).quorum == QuorumConfig()
    assert parse_server_config({**base, "controller.quorum.request.timeout.ms": " "}).quorum == QuorumConfig()


@ROLES
def test_each_key_is_read(base: dict[str, str]) -> None:
    config = parse_server_config({
        **base,
        "controller.quorum.election.timeout.ms": "500",
        "controller.quorum.fetch.timeout.ms": "1000",
        "controller.quorum.election.backoff.max.ms": "700",
        "controller.quorum.request.timeout.ms": "1500",
        "controller.quorum.retry.backoff.ms": "30",
    }).quorum  # fmt: skip
    assert (config.election_timeout_ms, config.fetch_timeout_ms, config.election_backoff_max_ms,
            config.request_timeout_ms, config.retry_backoff_ms) == (500, 1000, 700, 1500, 30)  # fmt: skip


@ROLES
@pytest.mark.parametrize("key", ["election.timeout.ms", "fetch.timeout.ms", "request.timeout.ms"])
@pytest.mark.parametrize(("raw", "message"), [("soon", "an integer"), ("1.5", "an integer"), ("-1", "at least 0")])
def test_a_bad_value_names_its_key(base: dict[str, str], key: str, raw: str, message: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(f"controller.quorum.{key} must be {message}")):
        parse_server_config({**base, f"controller.quorum.{key}": raw})
