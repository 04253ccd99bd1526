"""``ksteward configs``' pure logic against Kafka's ConfigCommand: entity flags, the ``--add-config`` grammar,
SCRAM credential values (never echoed), the users/clients/ips key rules, and the describe line formats."""

from __future__ import annotations

import argparse

import pytest

from ksteward.cli.admin_common import UsageError
from ksteward.cli.configs import entry_line, header_line, quota_line
from ksteward.cli.configs_backend import Entry, Synonym
from ksteward.cli.configs_entities import (
    ACTION_RULE,
    FORMAT_RULE,
    Entities,
    check_options,
    parse_add_config,
    parse_delete_config,
    parse_scram,
    resolve_entities,
    split_quota_changes,
)
from ksteward.cli.main import build_parser


def parse(*flags: str) -> argparse.Namespace:
    return build_parser().parse_args(["configs", "--bootstrap-server", "b:9092", *flags])


def entities(*flags: str) -> Entities:
    args = parse(*flags)
    check_options(args)
    return resolve_entities(args)


def test_generic_and_specific_entity_flags() -> None:
    assert entities("--describe", "--entity-type", "topics", "--entity-name", "orders") == Entities(
        ["topics"], ["orders"]
    )
    assert entities("--describe", "--topic", "orders") == Entities(["topics"], ["orders"])
    assert entities("--describe", "--entity-type", "users") == Entities(["users"], [])
    both = entities(
        "--alter",
        "--entity-type",
        "users",
        "--entity-default",
        "--entity-type",
        "clients",
        "--entity-name",
        "app",
        "--add-config",
        "producer_byte_rate=10",
    )
    assert both == Entities(["users", "clients"], ["", "app"])
    assert entities("--alter", "--user", "u", "--client", "c", "--add-config", "a=1") == Entities(
        ["clients", "users"], ["c", "u"]
    )
    assert entities("--describe", "--broker-defaults") == Entities(["brokers"], [""])
    assert entities("--describe", "--ip", "10.0.0.1") == Entities(["ips"], ["10.0.0.1"])
    assert entities("--describe", "--broker-logger", "1") == Entities(["broker-loggers"], ["1"])


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--entity-type", "topics"], ACTION_RULE),
        (["--describe", "--alter", "--topic", "t"], ACTION_RULE),
        (["--describe"], "At least one entity type must be specified"),
        (
            ["--describe", "--entity-type", "users", "--entity-type", "users"],
            "Duplicate entity type(s) specified: users",
        ),
        (
            [
                "--alter",
                "--entity-type",
                "users",
                "--entity-type",
                "clients",
                "--entity-name",
                "u",
                "--add-config",
                "a=1",
            ],
            "An entity name must be specified for every entity type",
        ),
        (
            ["--describe", "--entity-type", "topics", "--user", "u"],
            "--entity-{type,name,default} should not be used in conjunction with specific entity flags",
        ),
        (
            ["--describe", "--topic", "t", "--user", "u"],
            "Only 'users' and 'clients' entity types may be specified together",
        ),
        (
            ["--describe", "--broker", "one"],
            "The entity name for brokers must be a valid integer broker id, but it is: one",
        ),
        (
            ["--describe", "--ip", "not-an-ip"],
            "The entity name for ips must be a valid IP or resolvable host, but it is: not-an-ip",
        ),
        (
            ["--describe", "--entity-type", "topics", "--entity-default"],
            "--entity-default must not be specified with --describe of topics",
        ),
        (
            ["--describe", "--entity-type", "broker-loggers"],
            "An entity name must be specified with --describe of broker-loggers",
        ),
        (
            ["--alter", "--entity-type", "users", "--add-config", "a=1"],
            "An entity-name or default entity must be specified with --alter of users, clients, brokers or ips",
        ),
        (
            ["--alter", "--entity-type", "topics", "--add-config", "a=1"],
            "An entity name must be specified with --alter of topics",
        ),
        (
            ["--alter", "--topic", "t"],
            "At least one of --add-config, --add-config-file, or --delete-config must be specified with --alter",
        ),
        (
            ["--alter", "--topic", "t", "--add-config", "a=1", "--add-config-file", "f"],
            "Only one of --add-config or --add-config-file must be specified",
        ),
        (
            ["--alter", "--topic", "t", "--add-config", "a=1", "--all"],
            'Option "[all]" can\'t be used with option "[alter]"',
        ),
        (
            ["--describe", "--topic", "t", "--delete-config", "a"],
            'Option "[describe]" can\'t be used with option "[delete-config]"',
        ),
    ],
)
def test_entity_rules_carry_kafkas_messages(flags: list[str], message: str) -> None:
    with pytest.raises(UsageError) as caught:
        entities(*flags)
    assert str(caught.value) == message


def test_add_config_grammar() -> None:
    assert parse_add_config("k1=v1,k2=[a,b,c],k3=,k4 = v4") == {"k1": "v1", "k2": "a,b,c", "k3": "", "k4": "v4"}
    assert parse_add_config("leader.replication.throttled.replicas=[0:1,1:2]") == {
        "leader.replication.throttled.replicas": "0:1,1:2"
    }
    assert parse_add_config("SCRAM-SHA-256=[iterations=8192,password=p,w=d]") == {
        "SCRAM-SHA-256": "iterations=8192,password=p,w=d"
    }
    for bad in ("k1", "k1=v1,k2", "a=b=c"):
        with pytest.raises(UsageError) as caught:
            parse_add_config(bad)
        assert str(caught.value) == FORMAT_RULE
    with pytest.raises(UsageError, match=r"^Invalid character found for config key: bad key!$"):
        parse_add_config("bad key!=1")
    assert parse_add_config("kafka.Foo$Bar=DEBUG") == {"kafka.Foo$Bar": "DEBUG"}  # an inner class's logger
    assert parse_delete_config(["a,b", " c "]) == ["a", "b", "c"]


def test_scram_values_and_no_secret_in_errors() -> None:
    up = parse_scram("SCRAM-SHA-256", "iterations=8192,password=s3cr,et")
    assert (up.mechanism, up.iterations, up.password) == ("SCRAM-SHA-256", 8192, "s3cr,et")
    assert "s3cr" not in repr(up)
    assert parse_scram("SCRAM-SHA-512", "password=x").iterations == 4096
    for bad in ("iterations=8192,pasword=hunter2", "hunter2"):
        with pytest.raises(UsageError) as caught:
            parse_scram("SCRAM-SHA-256", bad)
        assert "hunter2" not in str(caught.value)
    with pytest.raises(UsageError, match=r"^Iterations 100 is less than the minimum 4096 required for SCRAM-SHA-256$"):
        parse_scram("SCRAM-SHA-256", "iterations=100,password=hunter2")


def test_users_clients_and_ips_accept_kafkas_keys_only() -> None:
    users, pair, ips = Entities(["users"], ["u"]), Entities(["users", "clients"], ["u", "c"]), Entities(["ips"], [""])
    changes = split_quota_changes(users, {"producer_byte_rate": "1024"}, ["consumer_byte_rate"])
    assert (changes.quota_sets, changes.quota_deletes) == ({"producer_byte_rate": 1024.0}, ["consumer_byte_rate"])
    scram = split_quota_changes(users, {"SCRAM-SHA-256": "password=x"}, ["SCRAM-SHA-512"])
    assert ([u.mechanism for u in scram.scram_upserts], scram.scram_deletes) == (["SCRAM-SHA-256"], ["SCRAM-SHA-512"])
    with pytest.raises(UsageError, match=r"Cannot alter both quota and SCRAM credential configs simultaneously"):
        split_quota_changes(users, {"SCRAM-SHA-256": "password=x", "producer_byte_rate": "1"}, [])
    with pytest.raises(UsageError, match=r"Only quota configs can be added for 'clients'.*SCRAM-SHA-256"):
        split_quota_changes(pair, {"SCRAM-SHA-256": "password=x"}, [])
    with pytest.raises(UsageError, match=r"Unexpected config names: retention.ms"):
        split_quota_changes(users, {"retention.ms": "1"}, [])
    with pytest.raises(UsageError, match=r"--entity-default or --user-defaults is not allowed with User SCRAM"):
        split_quota_changes(Entities(["users"], [""]), {}, ["SCRAM-SHA-256"])
    with pytest.raises(UsageError, match=r"Only connection quota configs can be added for 'ips'"):
        split_quota_changes(ips, {"producer_byte_rate": "1"}, [])
    with pytest.raises(UsageError, match=r"^Cannot parse quota configuration value for producer_byte_rate: fast$"):
        split_quota_changes(users, {"producer_byte_rate": "fast"}, [])


def test_describe_line_formats() -> None:
    entry = Entry(
        "retention.ms",
        "1000",
        False,
        "DYNAMIC_TOPIC_CONFIG",
        [
            Synonym("DYNAMIC_TOPIC_CONFIG", "retention.ms", "1000"),
            Synonym("STATIC_BROKER_CONFIG", "log.retention.hours", "168"),
        ],
    )
    assert entry_line(entry) == (
        "  retention.ms=1000 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:retention.ms=1000, "
        "STATIC_BROKER_CONFIG:log.retention.hours=168}"
    )
    secret = Entry(
        "ssl.key.password",
        "leaked?",
        True,
        "DYNAMIC_BROKER_CONFIG",
        [Synonym("DYNAMIC_BROKER_CONFIG", "ssl.key.password", "leaked?")],
    )
    assert (
        entry_line(secret)
        == "  ssl.key.password=null sensitive=true synonyms={DYNAMIC_BROKER_CONFIG:ssl.key.password=null}"
    )
    assert header_line("topics", "orders", False) == "Dynamic configs for topic orders are:"
    assert header_line("brokers", "1", True) == "All configs for broker 1 are:"
    assert header_line("brokers", "", False) == "Default configs for brokers in the cluster are:"
    assert header_line("broker-loggers", "1", False) == "Dynamic configs for broker-logger 1 are:"
    assert quota_line(
        {"user": "alice", "client-id": None}, {"producer_byte_rate": 1048576.0, "consumer_byte_rate": 2e7}
    ) == (
        "Quota configs for user-principal 'alice', the default client-id are producer_byte_rate=1048576.0, "
        "consumer_byte_rate=2.0E7"
    )
    assert quota_line({"ip": "10.0.0.1"}, {"connection_creation_rate": 10}) == (
        "Quota configs for ip '10.0.0.1' are connection_creation_rate=10.0"
    )


def test_protect_principal_must_name_a_user(tmp_path: object) -> None:
    from ksteward.cli.admin_common import connection
    from ksteward.cli.configs import protected_users

    args = parse("--alter", "--user", "bob", "--delete-config", "SCRAM-SHA-256", "--protect-principal", "User:bob",
                 "--protect-principal", "User:carol")  # fmt: skip
    assert protected_users(args, connection(args)) == {
        "bob": "it is listed with --protect-principal",
        "carol": "it is listed with --protect-principal",
    }
    for bad in ("bob", "Group:ops", "User:"):
        args = parse("--describe", "--user", "bob", "--protect-principal", bad)
        with pytest.raises(UsageError, match="expected User:NAME"):
            protected_users(args, connection(args))
