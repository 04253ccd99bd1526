"""A real cluster (issue 14): one ``process.roles=controller`` node and broker-only nodes that follow its
metadata log, register, heartbeat and forward mutations (docs/cluster.md)."""

from __future__ import annotations

import pytest

from ksteward.configs.server_config import ConfigError, QuorumVoter, parse_server_config

BROKER_ONLY = {
    "process.roles": "broker",
    "node.id": "2",
    "listeners": "PLAINTEXT://localhost:9092",
    "controller.listener.names": "CONTROLLER",
    "metadata.log.dir": "/tmp/x",
}


# --- configuration (Kafka's KafkaConfig.validateValues for the quorum keys) ---------------------------------


def test_quorum_keys_in_kafkas_formats() -> None:
    cfg = parse_server_config({**BROKER_ONLY, "controller.quorum.voters": "1@ctl:9093,3@[::1]:9094"})
    assert cfg.quorum_voters == (QuorumVoter(1, "ctl", 9093), QuorumVoter(3, "::1", 9094))
    assert cfg.controller_quorum_addresses == (("ctl", 9093), ("::1", 9094))
    cfg = parse_server_config(
        {**BROKER_ONLY, "controller.quorum.voters": "1@ctl:9093", "controller.quorum.bootstrap.servers": "a:1,b:2"}
    )
    assert cfg.controller_quorum_addresses == (("a", 1), ("b", 2))  # bootstrap servers win for discovery
    assert cfg.is_broker_only


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ({}, "needs controller.quorum.bootstrap.servers or controller.quorum.voters"),
        ({"controller.quorum.voters": "2@ctl:9093"}, "node.id 2 is in controller.quorum.voters"),
        ({"controller.quorum.voters": "ctl:9093"}, "must look like id@host:port"),
        ({"controller.quorum.voters": "1@ctl:9093,1@ctl:9094"}, "names node 1 twice"),
        ({"controller.quorum.bootstrap.servers": "ctl"}, "must look like host:port"),
        (
            {"controller.quorum.bootstrap.servers": "ctl:1", "controller.listener.names": ""},
            "controller.listener.names",
        ),
        (
            {"controller.quorum.bootstrap.servers": "ctl:1", "listeners": "PLAINTEXT://:1,CONTROLLER://:2"},
            "names the controller listener CONTROLLER",
        ),
    ],
)
def test_a_broker_only_node_must_know_its_controllers(override: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_server_config({**BROKER_ONLY, **override})


def test_a_controller_listing_voters_must_be_one() -> None:
    controller = {**BROKER_ONLY, "process.roles": "controller", "listeners": "CONTROLLER://localhost:9093"}
    with pytest.raises(ConfigError, match=r"node\.id 2 must be in"):
        parse_server_config({**controller, "controller.quorum.voters": "1@localhost:9093"})
    assert parse_server_config({**controller, "controller.quorum.voters": "2@localhost:9093"}).quorum_voters
