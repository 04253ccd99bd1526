"""GROUP and CLIENT_METRICS config resources (issue 20; docs/topics-and-configs.md, "Group configs" and "Client
metrics subscriptions") through real clients and raw frames: describe, alter, incremental alter, validate_only,
the AlterConfigPolicy, every error path, authorization, and persistence across restarts.

confluent-kafka has GROUP config resources but no CLIENT_METRICS; kafka-python has both; aiokafka (TOPIC and
BROKER only) and kafkajs (TOPIC, BROKER, BROKER_LOGGER) refuse the other types before sending, so the raw wire
covers what they cannot send.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from clients import Auth, confluent_admin, kafka_python_admin
from harness import KstewardServer, ksteward_cli
from rawkafka import RawConnection, connect

from ksteward.protocol.apis import ApiKey

PLAINTEXT = Auth()
CLIENT_METRICS, GROUP = 16, 32
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
CLIENT_METRICS_CONFIG, GROUP_CONFIG, STATIC, DEFAULT_CONFIG = 7, 8, 4, 5
INVALID_CONFIG, INVALID_REQUEST, POLICY_VIOLATION = 40, 42, 44
GROUP_AUTHORIZATION_FAILED, CLUSTER_AUTHORIZATION_FAILED = 30, 31
SETTINGS = {
    "group.consumer.max.session.timeout.ms": "50000",  # the broker's bound, narrower than Kafka's 60000
    "group.share.record.lock.duration.ms": "20000",  # the broker's default for every group
    "alter.config.policy.class.name": "ksteward.policy.builtin.ConfigGuardPolicy",
    "config.guard.policy.protected.keys": "share.isolation.level,interval.ms",
}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KstewardServer]:
    s = KstewardServer(tmp_path_factory.mktemp("group-configs"), "server", SETTINGS, name="group-configs")
    try:
        yield s.start()
    finally:
        s.kill()


def describe(conn: RawConnection, rtype: int, name: str, keys: list[str] | None = None, **flags: bool) -> Any:
    body = {
        "resources": [{"resource_type": rtype, "resource_name": name, "configuration_keys": keys}],
        "include_synonyms": flags.get("synonyms", False),
        "include_documentation": flags.get("documentation", False),
    }
    (result,) = conn.request(ApiKey.DESCRIBE_CONFIGS, 4, body).body.results
    return result


def incremental(
    conn: RawConnection, rtype: int, name: str, ops: list[tuple[str, int, str | None]], validate_only: bool = False
) -> tuple[int, str | None]:
    body = {
        "resources": [{"resource_type": rtype, "resource_name": name,
                       "configs": [{"name": k, "config_operation": op, "value": v} for k, op, v in ops]}],
        "validate_only": validate_only,
    }  # fmt: skip
    (response,) = conn.request(ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, body).body.responses
    return int(response.error_code), response.error_message


def legacy(conn: RawConnection, rtype: int, name: str, configs: dict[str, str]) -> tuple[int, str | None]:
    body = {
        "resources": [{"resource_type": rtype, "resource_name": name,
                       "configs": [{"name": k, "value": v} for k, v in configs.items()]}],
        "validate_only": False,
    }  # fmt: skip
    (response,) = conn.request(ApiKey.ALTER_CONFIGS, 2, body).body.responses
    return int(response.error_code), response.error_message


def values(result: Any) -> dict[str, tuple[str | None, int]]:
    assert int(result.error_code) == 0, result
    return {c.name: (c.value, int(c.config_source)) for c in result.configs}


# ---------------------------------------------------------------------------------------- real clients


def test_group_configs_through_confluent_kafka(server: KstewardServer) -> None:
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

    admin = confluent_admin(server.bootstrap, PLAINTEXT)
    change = ConfigResource(
        ResourceType.GROUP, "cf-group",
        incremental_configs=[ConfigEntry("consumer.session.timeout.ms", "48000",
                                         incremental_operation=AlterConfigOpType.SET)],
    )  # fmt: skip
    admin.incremental_alter_configs([change], request_timeout=10)[change].result()
    resource = ConfigResource(ResourceType.GROUP, "cf-group")
    got = admin.describe_configs([resource], request_timeout=10)[resource].result()
    session, heartbeat = got["consumer.session.timeout.ms"], got["consumer.heartbeat.interval.ms"]
    assert (session.value, int(session.source), session.is_read_only) == ("48000", GROUP_CONFIG, False)
    assert (heartbeat.value, int(heartbeat.source)) == ("5000", DEFAULT_CONFIG)
    # Above the broker's group.consumer.max.session.timeout.ms (50000 here): INVALID_CONFIG with Kafka's words.
    too_long = ConfigResource(
        ResourceType.GROUP, "cf-group",
        incremental_configs=[ConfigEntry("consumer.session.timeout.ms", "55000",
                                         incremental_operation=AlterConfigOpType.SET)],
    )  # fmt: skip
    with pytest.raises(Exception, match=r"must be less than or equal to group\.consumer\.max\.session\.timeout\.ms"):
        admin.incremental_alter_configs([too_long], request_timeout=10)[too_long].result()


def test_group_and_client_metrics_through_kafka_python(server: KstewardServer) -> None:
    from kafka.admin import ConfigResource, ConfigResourceType

    kp = kafka_python_admin(server.bootstrap, PLAINTEXT)
    try:
        result = kp.alter_configs(
            [ConfigResource(ConfigResourceType.CLIENT_METRICS, "kp-sub",
                            configs={"metrics": "org.apache.kafka.producer.",
                                     "match": "client_software_name=kafka-python"}),
             ConfigResource(ConfigResourceType.GROUP, "kp-group", configs={"share.auto.offset.reset": "earliest"})],
        )  # fmt: skip
        assert result == {"client_metrics": {"kp-sub": "OK"}, "group": {"kp-group": "OK"}}, result
        got = kp.describe_configs(
            [ConfigResource(ConfigResourceType.CLIENT_METRICS, "kp-sub"),
             ConfigResource(ConfigResourceType.GROUP, "kp-group")],
            include_synonyms=True, config_filter="all",
        )  # fmt: skip
        sub, group = got["client_metrics"]["kp-sub"], got["group"]["kp-group"]
        assert {k: (v["value"], v["config_source"]) for k, v in sub.items()} == {
            "metrics": ("org.apache.kafka.producer.", "DYNAMIC_CLIENT_METRICS_CONFIG"),
            "interval.ms": ("300000", "DEFAULT_CONFIG"),
            "match": ("client_software_name=kafka-python", "DYNAMIC_CLIENT_METRICS_CONFIG"),
        }
        reset = group["share.auto.offset.reset"]
        assert (reset["value"], reset["config_source"]) == ("earliest", "DYNAMIC_GROUP_CONFIG")
        assert [(s["name"], s["source"]) for s in reset["synonyms"]] == [
            ("share.auto.offset.reset", "DYNAMIC_GROUP_CONFIG"), ("share.auto.offset.reset", "DEFAULT_CONFIG"),
        ]  # fmt: skip
        bad = kp.alter_configs(
            [ConfigResource(ConfigResourceType.CLIENT_METRICS, "kp-sub", configs={"interval.ms": "50"})],
        )
        assert "interval must be between 100 and 3600000 (1 hour)" in str(bad["client_metrics"]["kp-sub"])
    finally:
        kp.close()


# ---------------------------------------------------------------------------------------- raw wire


def test_describe_shows_broker_derived_defaults_and_documentation(server: KstewardServer) -> None:
    with connect(server.address) as conn:
        group = describe(conn, GROUP, "never-configured", synonyms=True, documentation=True)
        sub = describe(conn, CLIENT_METRICS, "never-configured", ["interval.ms"], documentation=True)
        empty_group = describe(conn, GROUP, "")
        empty_sub = describe(conn, CLIENT_METRICS, "")
    entries = {c.name: c for c in group.configs}
    assert len(entries) == 10 and all(not c.read_only and not c.is_sensitive for c in entries.values())
    session = entries["consumer.session.timeout.ms"]
    assert (session.value, int(session.config_source), int(session.config_type)) == ("45000", DEFAULT_CONFIG, 3)
    assert session.documentation == "The timeout to detect client failures when using the consumer group protocol."
    # the broker's group.consumer.max.session.timeout.ms is a bound, not a synonym; the default is
    assert [(s.name, s.value, int(s.source)) for s in session.synonyms] == [
        ("group.consumer.session.timeout.ms", "45000", DEFAULT_CONFIG)
    ]
    lock = entries["share.record.lock.duration.ms"]
    assert (lock.value, int(lock.config_source)) == ("20000", STATIC)
    assert [(s.name, s.value, int(s.source)) for s in lock.synonyms] == [
        ("group.share.record.lock.duration.ms", "20000", STATIC),
        ("group.share.record.lock.duration.ms", "30000", DEFAULT_CONFIG),
    ]
    assert values(sub) == {"interval.ms": ("300000", DEFAULT_CONFIG)}
    assert sub.configs[0].documentation == "Metrics push interval in milliseconds"
    assert (int(empty_group.error_code), empty_group.error_message) == (INVALID_REQUEST, "Group name must not be empty")
    assert (int(empty_sub.error_code), empty_sub.error_message) == (
        INVALID_REQUEST, "Client metrics subscription name must not be empty",
    )  # fmt: skip


@pytest.mark.parametrize(
    ("rtype", "name", "ops", "code", "message"),
    [
        (GROUP, "g-err", [("consumer.session.timeout.ms", SET, "44000")], INVALID_CONFIG,
         "consumer.session.timeout.ms must be greater than or equal to group.consumer.min.session.timeout.ms"),
        (GROUP, "g-err", [("consumer.heartbeat.interval.ms", SET, "abc")], INVALID_CONFIG,
         "Invalid value abc for configuration consumer.heartbeat.interval.ms: Not a number of type INT"),
        (GROUP, "g-err", [("share.record.lock.duration.ms", SET, "999")], INVALID_CONFIG,
         "Invalid value 999 for configuration share.record.lock.duration.ms: Value must be at least 1000"),
        (GROUP, "g-err", [("streams.session.timeout.ms", SET, "46000"),
                          ("streams.heartbeat.interval.ms", SET, "15000")], None, None),
        (GROUP, "g-err2", [("consumer.heartbeat.interval.ms", SET, "15000"), ("consumer.session.timeout.ms", SET,
         "45000")], None, None),
        (GROUP, "g-err", [("group.id", SET, "x")], INVALID_CONFIG, "Unknown group config name: group.id"),
        (GROUP, "", [("consumer.session.timeout.ms", SET, "46000")], INVALID_REQUEST,
         "Default group resources are not allowed."),
        (GROUP, "g-err", [("consumer.session.timeout.ms", APPEND, "1")], INVALID_CONFIG,
         "Can't APPEND to key consumer.session.timeout.ms because its type is not LIST."),
        (CLIENT_METRICS, "s-err", [("interval", SET, "1000")], INVALID_REQUEST,
         "Unknown client metrics configuration: interval"),
        (CLIENT_METRICS, "s-err", [("interval.ms", SET, "3600001")], INVALID_REQUEST,
         "Invalid value 3600001 for interval.ms, interval must be between 100 and 3600000 (1 hour)"),
        (CLIENT_METRICS, "s-err", [("match", SET, "client_id=(unclosed")], INVALID_CONFIG,
         "Illegal client matching pattern: client_id=(unclosed"),
        (CLIENT_METRICS, "s-err", [("match", SET, "client_rack=a")], INVALID_CONFIG,
         "Illegal client matching pattern: client_rack=a"),
        (CLIENT_METRICS, "", [("metrics", SET, "*")], INVALID_REQUEST, "Subscription name can't be empty"),
    ],
)  # fmt: skip
def test_error_paths(
    server: KstewardServer, rtype: int, name: str, ops: list[tuple[str, int, str]], code: int | None, message: str
) -> None:
    with connect(server.address) as conn:
        assert incremental(conn, rtype, name, ops) == ((code, message) if code else (0, None))


def test_append_subtract_delete_and_legacy_replace(server: KstewardServer) -> None:
    with connect(server.address) as conn:
        assert incremental(conn, CLIENT_METRICS, "lists", [("metrics", APPEND, "a.,b.")]) == (0, None)
        assert incremental(conn, CLIENT_METRICS, "lists", [("metrics", APPEND, "c."), ("match", APPEND,
                           "client_id=x")]) == (0, None)  # fmt: skip
        assert incremental(conn, CLIENT_METRICS, "lists", [("metrics", SUBTRACT, "a.")]) == (0, None)
        assert values(describe(conn, CLIENT_METRICS, "lists", ["metrics", "match"])) == {
            "metrics": ("b.,c.", CLIENT_METRICS_CONFIG), "match": ("client_id=x", CLIENT_METRICS_CONFIG),
        }  # fmt: skip
        assert incremental(conn, CLIENT_METRICS, "lists", [("match", DELETE, None)]) == (0, None)
        assert values(describe(conn, CLIENT_METRICS, "lists", ["match"])) == {"match": ("", DEFAULT_CONFIG)}
        # Legacy AlterConfigs replaces the whole set: metrics is gone, match is set.
        assert legacy(conn, CLIENT_METRICS, "lists", {"match": "client_id=y"}) == (0, None)
        assert values(describe(conn, CLIENT_METRICS, "lists")) == {
            "interval.ms": ("300000", DEFAULT_CONFIG), "match": ("client_id=y", CLIENT_METRICS_CONFIG),
            "metrics": ("", DEFAULT_CONFIG),
        }  # fmt: skip
        assert legacy(conn, GROUP, "lg", {"consumer.session.timeout.ms": "99"}) == (
            INVALID_CONFIG, "consumer.session.timeout.ms must be greater than or equal to "
            "group.consumer.min.session.timeout.ms",
        )  # fmt: skip


def test_validate_only_and_the_policy(server: KstewardServer) -> None:
    with connect(server.address) as conn:
        op = [("share.heartbeat.interval.ms", SET, "6000")]
        assert incremental(conn, GROUP, "vo-group", op, validate_only=True) == (0, None)
        assert values(describe(conn, GROUP, "vo-group", ["share.heartbeat.interval.ms"])) == {
            "share.heartbeat.interval.ms": ("5000", DEFAULT_CONFIG)
        }
        assert incremental(conn, CLIENT_METRICS, "vo-sub", [("interval.ms", SET, "1")], validate_only=True) == (
            INVALID_REQUEST, "Invalid value 1 for interval.ms, interval must be between 100 and 3600000 (1 hour)",
        )  # fmt: skip
        # The AlterConfigPolicy sees GROUP and CLIENT_METRICS resources, with their type, validate_only or not.
        for validate_only in (True, False):
            assert incremental(conn, GROUP, "pg", [("share.isolation.level", SET, "read_committed")],
                               validate_only) == (
                POLICY_VIOLATION, "share.isolation.level of GROUP 'pg' may not be changed: listed in "
                "config.guard.policy.protected.keys.",
            )  # fmt: skip
            assert incremental(conn, CLIENT_METRICS, "ps", [("interval.ms", SET, "1000")], validate_only) == (
                POLICY_VIOLATION, "interval.ms of CLIENT_METRICS 'ps' may not be changed: listed in "
                "config.guard.policy.protected.keys.",
            )  # fmt: skip
        assert values(describe(conn, GROUP, "pg", ["share.isolation.level"])) == {
            "share.isolation.level": ("read_uncommitted", DEFAULT_CONFIG)
        }


def test_changes_survive_restart(server_factory: Any) -> None:
    s = server_factory("server").start()
    with connect(s.address) as conn:
        assert incremental(conn, GROUP, "durable", [("streams.num.standby.replicas", SET, "1")]) == (0, None)
        assert incremental(conn, CLIENT_METRICS, "durable", [("metrics", SET, "org.apache.kafka.")]) == (0, None)
    s.restart()  # SIGTERM writes a snapshot; the restart loads it
    s.restart(hard=True)  # kill -9: the log replays on top of it
    with connect(s.address) as conn:
        assert values(describe(conn, GROUP, "durable", ["streams.num.standby.replicas"])) == {
            "streams.num.standby.replicas": ("1", GROUP_CONFIG)
        }
        assert values(describe(conn, CLIENT_METRICS, "durable", ["metrics"])) == {
            "metrics": ("org.apache.kafka.", CLIENT_METRICS_CONFIG)
        }
    s.stop()
    dump = ksteward_cli("metadata", "dump", str(s.data_dir))
    records = [line for line in dump.stdout.splitlines() if "CONFIG_RECORD" in line and "durable" in line]
    assert any('"resourceType":32' in r and "streams.num.standby.replicas" in r for r in records), records
    assert any('"resourceType":16' in r and "org.apache.kafka." in r for r in records), records


# ---------------------------------------------------------------------------------------- authorization


def login(server: KstewardServer, user: str, password: str) -> RawConnection:
    conn = connect(server.address)
    assert int(conn.sasl_plain(user, password).body.error_code) == 0
    return conn


def test_authorization(sasl_server: KstewardServer) -> None:
    from acl_clients import acl_client

    admin_auth = Auth("PLAIN", "admin", "admin-secret")
    acls = acl_client("kafka-python", sasl_server.bootstrap)
    describe_group = ("GROUP", "auth-g", "LITERAL", "User:alice", "*", "DESCRIBE_CONFIGS", "ALLOW")
    alter_group = ("GROUP", "auth-g", "LITERAL", "User:alice", "*", "ALTER_CONFIGS", "ALLOW")
    alter_cluster = ("CLUSTER", "kafka-cluster", "LITERAL", "User:alice", "*", "ALTER_CONFIGS", "ALLOW")
    group_denied = (GROUP_AUTHORIZATION_FAILED, "Group authorization failed.")
    cluster_denied = (CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed.")
    op = [("consumer.heartbeat.interval.ms", SET, "6000")]
    with login(sasl_server, "alice", "alice-secret") as alice:
        result = describe(alice, GROUP, "auth-g")
        assert (int(result.error_code), result.error_message) == group_denied
        result = describe(alice, CLIENT_METRICS, "auth-s")
        assert (int(result.error_code), result.error_message) == cluster_denied
        assert incremental(alice, GROUP, "auth-g", op) == group_denied
        assert incremental(alice, CLIENT_METRICS, "auth-s", [("interval.ms", SET, "1000")]) == cluster_denied
        acls.create(admin_auth, [describe_group])
        assert int(describe(alice, GROUP, "auth-g").error_code) == 0
        assert incremental(alice, GROUP, "auth-g", op) == group_denied  # DESCRIBE_CONFIGS does not allow altering
        acls.create(admin_auth, [alter_group, alter_cluster])
        assert incremental(alice, GROUP, "auth-g", op) == (0, None)
        # ALTER_CONFIGS on a group is not on another group; on the cluster it covers subscriptions.
        assert incremental(alice, GROUP, "other-g", op) == group_denied
        assert incremental(alice, CLIENT_METRICS, "auth-s", [("interval.ms", SET, "1000")]) == (0, None)
        assert int(describe(alice, CLIENT_METRICS, "auth-s").error_code) == 0  # ALTER_CONFIGS implies DESCRIBE_CONFIGS
    acls.delete(admin_auth, [describe_group, alter_group, alter_cluster])


# ---------------------------------------------------------------------------------------- operator CLI


def test_cli_groups_and_client_metrics(server: KstewardServer) -> None:
    def configs(*flags: str) -> Any:
        return ksteward_cli("configs", "--bootstrap-server", server.bootstrap, *flags)

    done = configs("--alter", "--group", "cli-group", "--add-config", "consumer.heartbeat.interval.ms=6000")
    assert (done.returncode, done.stdout.strip()) == (0, "Completed updating config for group cli-group."), done
    subscription = "metrics=[org.apache.kafka.producer.,org.apache.kafka.consumer.],match=[client_id=cli-.*]"
    done = configs(
        "--alter", "--entity-type", "client-metrics", "--entity-name", "cli-sub", "--add-config", subscription
    )
    assert done.returncode == 0, done
    shown = configs("--describe", "--entity-type", "groups", "--entity-name", "cli-group")
    assert shown.stdout.splitlines() == [
        "Dynamic configs for group cli-group are:",
        "  consumer.heartbeat.interval.ms=6000 sensitive=false synonyms={DYNAMIC_GROUP_CONFIG:"
        "consumer.heartbeat.interval.ms=6000, DEFAULT_CONFIG:group.consumer.heartbeat.interval.ms=5000}",
    ], shown
    shown = configs("--describe", "--client-metrics", "cli-sub", "--all")
    assert "  interval.ms=300000 sensitive=false synonyms={}" in shown.stdout.splitlines(), shown
    assert (
        "  metrics=org.apache.kafka.producer.,org.apache.kafka.consumer. sensitive=false "
        "synonyms={DYNAMIC_CLIENT_METRICS_CONFIG:metrics=org.apache.kafka.producer.,org.apache.kafka.consumer.}"
    ) in shown.stdout.splitlines(), shown
    deleted = configs("--alter", "--group", "cli-group", "--delete-config", "consumer.heartbeat.interval.ms", "--force")
    assert deleted.returncode == 0, deleted
    assert configs("--describe", "--group", "cli-group").stdout.splitlines() == [
        "Dynamic configs for group cli-group are:"
    ]
    # Kafka's error through the tool, one line, exit 1; bad usage exits 2.
    refused = configs("--alter", "--group", "cli-group", "--add-config", "consumer.session.timeout.ms=1000")
    assert refused.returncode == 1 and "group.consumer.min.session.timeout.ms" in refused.stderr, refused
    assert len(refused.stderr.strip().splitlines()) == 1, refused.stderr
    unnamed = configs("--describe", "--entity-type", "groups")
    assert unnamed.returncode == 2 and "An entity name must be specified with --describe of groups" in unnamed.stderr
