"""Which login the forwarding channel uses toward the controller, from the node's configuration."""

from __future__ import annotations

import pytest

from ksteward.configs.server_config import ConfigError, parse_server_config
from ksteward.server.controller_channel import controller_login

BASE = {
    "process.roles": "broker,controller",
    "node.id": "1",
    "listeners": "PLAINTEXT://localhost:9092,CONTROLLER://localhost:9093",
    "controller.listener.names": "CONTROLLER",
    "metadata.log.dir": "/tmp/x",
}
SASL = {
    "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:SASL_PLAINTEXT",
    "sasl.enabled.mechanisms": "PLAIN",
    "sasl.mechanism.controller.protocol": "PLAIN",
    "listener.name.controller.plain.sasl.jaas.config": "org.apache.kafka.common.security.plain.PlainLoginModule "
    'required username="broker" password="broker-secret" user_broker="broker-secret";',
}


NO_CLIENT_LOGIN = 'org.apache.kafka.common.security.plain.PlainLoginModule required user_broker="broker-secret";'


def test_a_plaintext_controller_listener_needs_no_login() -> None:
    assert controller_login(parse_server_config(BASE)) is None


def test_sasl_plain_uses_the_username_and_password_of_the_listeners_jaas_entry() -> None:
    assert controller_login(parse_server_config({**BASE, **SASL})) == ("broker", "broker-secret")


def test_a_broker_without_the_controller_listener_reads_the_protocol_map() -> None:
    broker_only = {**BASE, **SASL, "process.roles": "broker", "listeners": "PLAINTEXT://localhost:9092",
                   "controller.quorum.bootstrap.servers": "localhost:9093"}  # fmt: skip
    assert controller_login(parse_server_config(broker_only)) == ("broker", "broker-secret")


@pytest.mark.parametrize(
    "change",
    [
        {"sasl.mechanism.controller.protocol": "GSSAPI"},
        {"sasl.mechanism.controller.protocol": ""},
        {"listener.name.controller.plain.sasl.jaas.config": NO_CLIENT_LOGIN},
    ],
)
def test_what_the_channel_cannot_do_is_a_config_error(change: dict[str, str]) -> None:
    with pytest.raises(ConfigError):
        controller_login(parse_server_config({**BASE, **SASL, **change}))
