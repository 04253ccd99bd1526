"""server.properties parsing and validation."""

from __future__ import annotations

from pathlib import Path

import pytest

from ksteward.configs.properties import parse_override, parse_properties
from ksteward.configs.server_config import ConfigError, parse_server_config
from ksteward.protocol.addresses import java_host_address

BASE = {
    "process.roles": "broker,controller",
    "node.id": "1",
    "listeners": "PLAINTEXT://localhost:9092,CONTROLLER://localhost:9093",
    "controller.listener.names": "CONTROLLER",
    "metadata.log.dir": "/tmp/x",
}


def test_properties_syntax() -> None:
    text = "# comment\n! also\na=1\nb : 2\nc 3\nd=multi \\\n    line\\\n  end\ne=x\\=y\\u0041\n\n"
    assert parse_properties(text) == {"a": "1", "b": "2", "c": "3", "d": "multi lineend", "e": "x=yA"}


def test_shipped_configs_parse() -> None:
    root = Path(__file__).resolve().parents[2]
    for name in ("server.properties", "sasl.properties"):
        from ksteward.configs.properties import load_properties

        cfg = parse_server_config(load_properties(root / "config" / name))
        assert cfg.node_id == 1
        assert cfg.is_broker and cfg.is_controller
        assert next(str(e) for e in cfg.advertised_listeners).endswith("localhost:9092")


def test_defaults_and_unknown_keys() -> None:
    cfg = parse_server_config({**BASE, "num.io.threads": "8"})
    assert cfg.static["num.io.threads"] == "8"
    assert cfg.socket_request_max_bytes == 104857600
    assert cfg.allow_everyone_if_no_acl_found is False
    assert cfg.inter_broker_listener_name == "PLAINTEXT"
    assert [str(e) for e in cfg.advertised_listeners] == ["PLAINTEXT://localhost:9092"]
    assert cfg.listeners[1].security_protocol == "PLAINTEXT"  # an unmapped controller listener


def test_metadata_log_dir_falls_back_to_first_log_dir() -> None:
    props = {k: v for k, v in BASE.items() if k != "metadata.log.dir"}
    cfg = parse_server_config({**props, "log.dirs": "/a,/b"})
    assert str(cfg.metadata_log_dir) == "/a"


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ({"node.id": "abc"}, "node.id must be an integer"),
        ({"process.roles": ""}, "process.roles is required"),
        ({"process.roles": "broker,zookeeper"}, "unknown roles: zookeeper"),
        ({"listeners": "PLAINTEXT//localhost:9092"}, "must look like NAME://host:port"),
        ({"listeners": "FOO://localhost:1,CONTROLLER://:2"}, "does not map"),
        ({"controller.listener.names": "CTRL"}, "CTRL"),
        ({"sasl.enabled.mechanisms": "GSSAPI"}, "GSSAPI"),
        ({"super.users": "admin"}, "super.users entry 'admin'"),
        ({"authorizer.class.name": "kafka.security.authorizer.AclAuthorizer"}, "not supported"),
        ({"allow.everyone.if.no.acl.found": "yes"}, "true or false"),
        ({"socket.request.max.bytes": "0"}, "at least 1"),
        ({"listeners": "PLAINTEXT://localhost:99999,CONTROLLER://:1"}, "above 65535"),
    ],
)
def test_bad_configs_name_the_key(override: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_server_config({**BASE, **override})


def test_override_syntax() -> None:
    assert parse_override("a.b=c=d") == ("a.b", "c=d")
    with pytest.raises(ValueError, match="key=value"):
        parse_override("novalue")


def test_listener_prefixed_keys_win() -> None:
    cfg = parse_server_config(
        {**BASE, "ssl.client.auth": "none", "listener.name.plaintext.ssl.client.auth": "required"}
    )
    assert cfg.listener_props("PLAINTEXT")["ssl.client.auth"] == "required"
    assert cfg.listener_props("CONTROLLER")["ssl.client.auth"] == "none"


@pytest.mark.parametrize(
    ("peer", "java"),
    [
        ("127.0.0.1", "127.0.0.1"),
        ("::1", "0:0:0:0:0:0:0:1"),
        ("fe80::1%eth0", "fe80:0:0:0:0:0:0:1"),
        ("2001:db8::ab:0", "2001:db8:0:0:0:0:ab:0"),
        ("::ffff:10.1.2.3", "10.1.2.3"),
    ],
)
def test_client_addresses_in_java_text_form(peer: str, java: str) -> None:
    assert java_host_address(peer) == java


def test_a_controller_advertises_its_controller_listener_apart_from_the_brokers() -> None:
    """KIP-853: advertised.listeners may name a controller listener; it is what fetchers are told, and never
    a broker endpoint (registration, Metadata)."""
    cfg = parse_server_config(
        {
            **BASE,
            "listeners": "PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093",
            "advertised.listeners": "PLAINTEXT://broker.example:9092,CONTROLLER://proxy.example:19093",
        }
    )
    assert [(e.name, e.host, e.port) for e in cfg.advertised_listeners] == [("PLAINTEXT", "broker.example", 9092)]
    assert [(e.name, e.host, e.port) for e in cfg.advertised_controller_listeners] == [
        ("CONTROLLER", "proxy.example", 19093)
    ]
    assert parse_server_config(BASE).read_your_writes_timeout_ms == 30_000


CONTROLLER_ONLY = {
    "process.roles": "controller",
    "node.id": "1",
    "listeners": "CONTROLLER://127.0.0.1:9093",
    "controller.listener.names": "CONTROLLER",
    "metadata.log.dir": "/tmp/x",
}


BOOTSTRAP = "controller.quorum.bootstrap.servers"


@pytest.mark.parametrize(
    "override",
    [
        # Kafka 4.x's config/kraft/reconfig-server.properties, formatted --standalone: a quorum of one
        {**BASE, "listeners": "PLAINTEXT://:9092,CONTROLLER://:9093", BOOTSTRAP: "localhost:9093"},
        {**CONTROLLER_ONLY, BOOTSTRAP: "localhost:9093"},
        {**CONTROLLER_ONLY, BOOTSTRAP: "127.0.0.1:9093"},
        {**CONTROLLER_ONLY, "listeners": "CONTROLLER://0.0.0.0:9093", BOOTSTRAP: "ctl1.example:9093"},
        {**CONTROLLER_ONLY, "advertised.listeners": "CONTROLLER://ctl1.example:9093", BOOTSTRAP: "ctl1.example:9093"},
        # static voters: the bootstrap servers only help find the leader
        {**CONTROLLER_ONLY, "controller.quorum.voters": "1@127.0.0.1:9093,2@127.0.0.1:9094,3@127.0.0.1:9095",
         BOOTSTRAP: "127.0.0.1:9093,127.0.0.1:9094,127.0.0.1:9095"},
    ],
)  # fmt: skip
def test_a_controller_may_bootstrap_from_its_own_listener_alone(override: dict[str, str]) -> None:
    assert parse_server_config(override).is_controller


@pytest.mark.parametrize(
    ("bootstrap", "named"),
    [
        ("127.0.0.1:9093,127.0.0.1:9094,127.0.0.1:9095", "127.0.0.1:9094, 127.0.0.1:9095"),  # --initial-controllers
        ("127.0.0.1:9094", "127.0.0.1:9094"),  # --no-initial-controllers: joins through AddRaftVoter
        ("10.0.0.7:9093", "10.0.0.7:9093"),
    ],
)
def test_a_controller_whose_voters_would_come_from_the_log_is_refused(bootstrap: str, named: str) -> None:
    """Kafka 4.x takes these voters from the metadata log (KIP-853); ksteward's are static. Before, each such
    controller started as a quorum of one, with its own cluster id: three controllers, three clusters."""
    with pytest.raises(ConfigError) as info:
        parse_server_config({**CONTROLLER_ONLY, BOOTSTRAP: bootstrap})
    assert str(info.value).startswith(f"controller.quorum.bootstrap.servers names {named} but controller.quorum.voters")
    assert "KIP-853" in str(info.value) and "id@host:port" in str(info.value)
