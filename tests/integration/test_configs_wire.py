"""Config administration (KIP-133) through real clients and raw frames: DescribeConfigs, AlterConfigs,
IncrementalAlterConfigs, BROKER_LOGGER, validate_only, the AlterConfigPolicy, restarts and secrets."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from clients import Auth, confluent_admin, kafka_python_admin, kafkajs
from harness import KstewardServer, ksteward_cli
from rawkafka import RawConnection, connect

from ksteward.protocol.apis import ApiKey

PLAINTEXT = Auth()
TOPIC, BROKER, BROKER_LOGGER = 2, 4, 8
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
# DescribeConfigs' ConfigSource
TOPIC_CONFIG, DYNAMIC_BROKER_CONFIG, DYNAMIC_DEFAULT, STATIC, DEFAULT_CONFIG, LOGGER_CONFIG = 1, 2, 3, 4, 5, 6
INVALID_REQUEST, INVALID_CONFIG, POLICY_VIOLATION, UNKNOWN_TOPIC, INVALID_TOPIC = 42, 40, 44, 3, 17
WEEK_MS = "604800000"
GUARD = {
    "alter.config.policy.class.name": "ksteward.policy.builtin.ConfigGuardPolicy",
    "config.guard.policy.protected.keys": "unclean.leader.election.enable",
    "config.guard.policy.max.retention.ms": "864000000",  # ten days
}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KstewardServer]:
    s = KstewardServer(tmp_path_factory.mktemp("configs"), "server", GUARD, name="configs")
    try:
        yield s.start()
    finally:
        s.kill()


def create_topic(bootstrap: str, name: str, configs: dict[str, str] | None = None) -> None:
    from confluent_kafka.admin import NewTopic

    admin = confluent_admin(bootstrap, PLAINTEXT)
    admin.create_topics([NewTopic(name, 1, 1, config=configs or {})], request_timeout=10)[name].result()


def raw_describe(
    conn: RawConnection, resources: list[tuple[int, str, list[str] | None]], version: int = 4, **flags: bool
) -> Any:
    body = {
        "resources": [{"resource_type": t, "resource_name": n, "configuration_keys": k} for t, n, k in resources],
        "include_synonyms": flags.get("synonyms", False),
        "include_documentation": flags.get("documentation", False),
    }
    return conn.request(ApiKey.DESCRIBE_CONFIGS, version, body).body


def raw_incremental(
    conn: RawConnection,
    resources: list[tuple[int, str, list[tuple[str, int, str | None]]]],
    validate_only: bool = False,
) -> list[tuple[int, str | None]]:
    body = {
        "resources": [
            {
                "resource_type": t,
                "resource_name": n,
                "configs": [{"name": k, "config_operation": op, "value": v} for k, op, v in ops],
            }
            for t, n, ops in resources
        ],
        "validate_only": validate_only,
    }
    responses = conn.request(ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, body).body.responses
    return [(int(r.error_code), r.error_message) for r in responses]


def entries(result: Any) -> dict[str, Any]:
    return {c.name: c for c in result.configs}


# ---------------------------------------------------------------------------------------- real clients


def confluent_round_trip(bootstrap: str, topic: str) -> tuple[dict[str, Any], dict[str, Any]]:
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

    admin = confluent_admin(bootstrap, PLAINTEXT)
    resource = ConfigResource(ResourceType.TOPIC, topic)
    before = admin.describe_configs([resource], request_timeout=10)[resource].result()
    change = ConfigResource(
        ResourceType.TOPIC,
        topic,
        incremental_configs=[ConfigEntry("retention.ms", "3600000", incremental_operation=AlterConfigOpType.SET)],
    )
    admin.incremental_alter_configs([change], request_timeout=10)[change].result()
    after = admin.describe_configs([resource], request_timeout=10)[resource].result()

    def view(entry: Any) -> dict[str, Any]:
        return {"value": entry.value, "source": int(entry.source), "default": entry.is_default, "synonyms": None}

    return view(before["retention.ms"]), view(after["retention.ms"])


def kafka_python_round_trip(bootstrap: str, topic: str) -> tuple[dict[str, Any], dict[str, Any]]:
    from kafka.admin import ConfigResource, ConfigResourceType

    kp = kafka_python_admin(bootstrap, PLAINTEXT)
    try:

        def describe() -> dict[str, Any]:
            resource = ConfigResource(ConfigResourceType.TOPIC, topic, configs=["retention.ms"])
            got = kp.describe_configs([resource], include_synonyms=True, config_filter="all")["topic"][topic]
            entry = got["retention.ms"]
            codes = {"DYNAMIC_TOPIC_CONFIG": TOPIC_CONFIG, "DEFAULT_CONFIG": DEFAULT_CONFIG}  # kafka-python's names
            source = codes[entry["config_source"]]
            synonyms = [(s["name"], codes[s["source"]]) for s in entry["synonyms"]]
            return {
                "value": entry["value"],
                "source": source,
                "default": source == DEFAULT_CONFIG,
                "synonyms": synonyms,
            }

        before = describe()
        result = kp.alter_configs(
            [ConfigResource(ConfigResourceType.TOPIC, topic, configs={"retention.ms": "3600000"})]
        )
        assert result == {"topic": {topic: "OK"}}, result
        return before, describe()
    finally:
        kp.close()


def kafkajs_round_trip(bootstrap: str, topic: str) -> tuple[dict[str, Any], dict[str, Any]]:
    def describe() -> dict[str, Any]:
        job = {
            "brokers": [bootstrap],
            "action": "describeConfigs",
            "args": {
                "includeSynonyms": True,
                "resources": [{"type": TOPIC, "name": topic, "configNames": ["retention.ms"]}],
            },
        }
        result = kafkajs(job)
        assert result["ok"], result
        (entry,) = result["result"]["resources"][0]["configEntries"]
        synonyms = [(s["configName"], s["configSource"]) for s in entry["configSynonyms"]]
        return {"value": entry["configValue"], "source": entry["configSource"], "default": entry["isDefault"],
                "synonyms": synonyms}  # fmt: skip

    before = describe()
    entries_ = [{"name": "retention.ms", "value": "3600000"}]
    job = {"brokers": [bootstrap], "action": "alterConfigs",
           "args": {"resources": [{"type": TOPIC, "name": topic, "configEntries": entries_}]}}  # fmt: skip
    assert kafkajs(job)["ok"]
    return before, describe()


@pytest.mark.parametrize("client", ["confluent-kafka", "kafka-python", "kafkajs"])
def test_describe_alter_describe(server: KstewardServer, client: str) -> None:
    topic = f"round-trip-{client}"
    create_topic(server.bootstrap, topic)
    trip = {"confluent-kafka": confluent_round_trip, "kafka-python": kafka_python_round_trip,
            "kafkajs": kafkajs_round_trip}[client]  # fmt: skip
    before, after = trip(server.bootstrap, topic)
    assert (before["value"], before["source"], before["default"]) == (WEEK_MS, DEFAULT_CONFIG, True)
    assert (after["value"], after["source"], after["default"]) == ("3600000", TOPIC_CONFIG, False)
    if before["synonyms"] is not None:  # librdkafka does not ask for synonyms
        # Kafka's synonym trimming (docs/topics-and-configs.md): only log.retention.hours is set (by default), which is
        # not the primary synonym log.retention.ms, so every broker synonym is dropped.
        assert before["synonyms"] == []
        assert after["synonyms"] == [("retention.ms", TOPIC_CONFIG)]


def test_append_and_subtract_cleanup_policy(server: KstewardServer) -> None:
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

    create_topic(server.bootstrap, "lists")
    admin = confluent_admin(server.bootstrap, PLAINTEXT)

    def change(op: Any, value: str) -> str:
        entry = ConfigEntry("cleanup.policy", value, incremental_operation=op)
        resource = ConfigResource(ResourceType.TOPIC, "lists", incremental_configs=[entry])
        admin.incremental_alter_configs([resource], request_timeout=10)[resource].result()
        described = ConfigResource(ResourceType.TOPIC, "lists")
        return str(admin.describe_configs([described], request_timeout=10)[described].result()["cleanup.policy"].value)

    # The base of an unset list key is the topic default, "delete" (docs/topics-and-configs.md).
    assert change(AlterConfigOpType.APPEND, "compact") == "delete,compact"
    assert change(AlterConfigOpType.APPEND, "compact") == "delete,compact"  # already there
    assert change(AlterConfigOpType.SUBTRACT, "delete") == "compact"
    assert change(AlterConfigOpType.SUBTRACT, "missing") == "compact"
    # APPEND on a key that is not a list is refused.
    entry = ConfigEntry("retention.ms", "1", incremental_operation=AlterConfigOpType.APPEND)
    resource = ConfigResource(ResourceType.TOPIC, "lists", incremental_configs=[entry])
    with pytest.raises(Exception, match="because its type is not LIST") as failure:
        admin.incremental_alter_configs([resource], request_timeout=10)[resource].result()
    assert failure.value.args[0].code() == INVALID_CONFIG


def test_validate_only_changes_nothing(server: KstewardServer) -> None:
    create_topic(server.bootstrap, "dry-run")
    with connect(server.address) as conn:
        before = raw_describe(conn, [(TOPIC, "dry-run", None)]).results[0]
        assert raw_incremental(conn, [(TOPIC, "dry-run", [("retention.ms", SET, "1000")])], validate_only=True) == [
            (0, None)
        ]
        # validate_only still runs every check, the policy included.
        refused = raw_incremental(conn, [(TOPIC, "dry-run", [("retention.ms", SET, "-1")])], validate_only=True)
        assert refused[0][0] == POLICY_VIOLATION
        after = raw_describe(conn, [(TOPIC, "dry-run", None)]).results[0]
    assert entries(after)["retention.ms"].value == WEEK_MS
    assert [(c.name, c.value, c.config_source) for c in after.configs] == [
        (c.name, c.value, c.config_source) for c in before.configs
    ]


def test_policy_violation_reaches_the_client(server: KstewardServer) -> None:
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

    create_topic(server.bootstrap, "guarded")
    admin = confluent_admin(server.bootstrap, PLAINTEXT)
    entry = ConfigEntry("unclean.leader.election.enable", "true", incremental_operation=AlterConfigOpType.SET)
    resource = ConfigResource(ResourceType.TOPIC, "guarded", incremental_configs=[entry])
    with pytest.raises(Exception, match=r"listed in config\.guard\.policy\.protected\.keys") as failure:
        admin.incremental_alter_configs([resource], request_timeout=10)[resource].result()
    assert failure.value.args[0].code() == POLICY_VIOLATION
    # kafka-python sees the same code and message.
    from kafka.admin import ConfigResource as KpResource
    from kafka.admin import ConfigResourceType

    kp = kafka_python_admin(server.bootstrap, PLAINTEXT)
    try:  # kafka-python reports per-resource errors as the error's text
        result = kp.alter_configs([KpResource(ConfigResourceType.TOPIC, "guarded", configs={"retention.ms": "-1"})])
    finally:
        kp.close()
    outcome = result["topic"]["guarded"]
    assert outcome.startswith("[Error 44] PolicyViolationError"), outcome
    assert "retention.ms=-1 of topic 'guarded' exceeds config.guard.policy.max.retention.ms=864000000." in outcome


def test_legacy_alter_configs_replaces_the_whole_set(server: KstewardServer) -> None:
    create_topic(server.bootstrap, "legacy", {"retention.ms": "1000", "segment.ms": "60000"})
    with connect(server.address) as conn:
        body = {
            "resources": [{"resource_type": TOPIC, "resource_name": "legacy",
                           "configs": [{"name": "max.message.bytes", "value": "2000"}]}],
            "validate_only": False,
        }  # fmt: skip
        (response,) = conn.request(ApiKey.ALTER_CONFIGS, 2, body).body.responses
        assert int(response.error_code) == 0
        overrides = {
            c.name: c.value for c in raw_describe(conn, [(TOPIC, "legacy", None)]).results[0].configs
            if c.config_source == TOPIC_CONFIG
        }  # fmt: skip
    assert overrides == {"max.message.bytes": "2000"}


# ---------------------------------------------------------------------------------------- raw semantics


def test_per_resource_errors_and_order(server: KstewardServer) -> None:
    create_topic(server.bootstrap, "errors-a")
    with connect(server.address) as conn:
        outcomes = raw_incremental(
            conn,
            [
                (TOPIC, "errors-a", [("retention.ms", SET, "5000")]),
                (TOPIC, "dup", [("retention.ms", SET, "1")]),
                (TOPIC, "dup", [("retention.ms", SET, "2")]),
                (TOPIC, "ghost", [("retention.ms", SET, "1")]),
                (TOPIC, "errors-a", [("retention.ms", SET, "1"), ("retention.ms", DELETE, None)]),
                (TOPIC, "bad name!", [("retention.ms", SET, "1")]),
                (BROKER, "7", [("log.cleaner.threads", SET, "2")]),
                (99, "x", [("a", SET, "1")]),
            ],
        )
        assert outcomes == [
            (INVALID_REQUEST, "Each resource must appear at most once."),
            (INVALID_REQUEST, "Each resource must appear at most once."),
            (INVALID_REQUEST, "Each resource must appear at most once."),
            (UNKNOWN_TOPIC, "The topic 'ghost' does not exist."),
            (INVALID_REQUEST, "Each resource must appear at most once."),
            (INVALID_TOPIC, "Topic name is invalid: 'bad name!' contains one or more characters other than "
                            "ASCII alphanumerics, '.', '_' and '-'"),
            (INVALID_REQUEST, "Unexpected broker id, expected 1, but received 7"),
            (INVALID_REQUEST, "Unknown resource type 99"),
        ]  # fmt: skip
        # Not transactional: a good resource succeeds beside a bad one.
        outcomes = raw_incremental(
            conn, [(TOPIC, "errors-a", [("retention.ms", SET, "5000")]), (TOPIC, "ghost", [("retention.ms", SET, "1")])]
        )
        assert [code for code, _ in outcomes] == [0, UNKNOWN_TOPIC]
        assert entries(raw_describe(conn, [(TOPIC, "errors-a", ["retention.ms"])]).results[0])[
            "retention.ms"
        ].value == ("5000")
        # DescribeConfigs: an unknown topic gets the error with an empty message; a key filter keeps only
        # the keys named, silently ignoring unknown ones.
        ghost, known = raw_describe(
            conn, [(TOPIC, "ghost", None), (TOPIC, "errors-a", ["retention.ms", "nope"])]
        ).results
        assert (int(ghost.error_code), ghost.error_message, list(ghost.configs)) == (UNKNOWN_TOPIC, "", [])
        assert (int(known.error_code), known.error_message, list(entries(known))) == (0, "", ["retention.ms"])


# Every validator kind of the catalogs, over the wire: (resource, key, value, code, message fragment).
BAD_VALUES = [
    (TOPIC, "retention.ms", "abc", INVALID_CONFIG, "Invalid value abc for configuration retention.ms"),
    (TOPIC, "min.insync.replicas", "0", INVALID_CONFIG, "Value must be at least 1"),
    (TOPIC, "segment.bytes", "1", INVALID_CONFIG, "Value must be at least"),
    (TOPIC, "min.cleanable.dirty.ratio", "2", INVALID_CONFIG, "Value must be no more than 1"),
    (TOPIC, "unclean.leader.election.enable", "maybe", INVALID_CONFIG, "Expected value to be either true or false"),
    (TOPIC, "cleanup.policy", "shred", INVALID_CONFIG, "String must be one of: compact, delete"),
    (TOPIC, "compression.type", "zip", INVALID_CONFIG, "String must be one of"),
    (TOPIC, "message.timestamp.type", "Wall", INVALID_CONFIG, "String must be one of: CreateTime, LogAppendTime"),
    (TOPIC, "no.such.key", "1", INVALID_CONFIG, "Unknown topic config name: no.such.key"),
    (BROKER, "node.id", "3", INVALID_REQUEST, "Cannot update these configs dynamically: Set(node.id)"),
    (
        BROKER,
        "log.cleaner.threads",
        "lots",
        INVALID_REQUEST,
        "Invalid value lots for configuration log.cleaner.threads",
    ),
    (BROKER, "ssl.keystore.password", "x", INVALID_REQUEST, "using the listener prefix"),
]


@pytest.mark.parametrize(("rtype", "key", "value", "code", "fragment"), BAD_VALUES)
def test_bad_values_get_kafkas_codes(
    server: KstewardServer, rtype: int, key: str, value: str, code: int, fragment: str
) -> None:
    create_topic_once(server, "bad-values")
    name = "bad-values" if rtype == TOPIC else "1"
    with connect(server.address) as conn:
        ((got, message),) = raw_incremental(conn, [(rtype, name, [(key, SET, value)])])
    assert got == code, message
    assert message is not None and fragment in message, message


_CREATED: set[tuple[str, str]] = set()


def create_topic_once(server: KstewardServer, name: str) -> None:
    if (server.bootstrap, name) not in _CREATED:
        create_topic(server.bootstrap, name)
        _CREATED.add((server.bootstrap, name))


def test_broker_resources(server: KstewardServer) -> None:
    with connect(server.address) as conn:
        # Cluster default, then this node: the default leads the node's synonyms below its own value.
        assert raw_incremental(conn, [(BROKER, "", [("log.cleaner.threads", SET, "2")])]) == [(0, None)]
        assert raw_incremental(conn, [(BROKER, "1", [("log.retention.ms", SET, "7200000")])]) == [(0, None)]
        default, node = raw_describe(conn, [(BROKER, "", None), (BROKER, "1", None)], synonyms=True).results
        assert {c.name: (c.value, c.config_source) for c in default.configs} == {
            "log.cleaner.threads": ("2", DYNAMIC_DEFAULT)
        }
        by_name = entries(node)
        cleaner = by_name["log.cleaner.threads"]
        assert (cleaner.value, cleaner.config_source, cleaner.read_only) == ("2", DYNAMIC_DEFAULT, False)
        assert [(s.name, s.source) for s in cleaner.synonyms] == [
            ("log.cleaner.threads", DYNAMIC_DEFAULT),
            ("log.cleaner.threads", DEFAULT_CONFIG),
        ]
        assert by_name["node.id"].read_only and by_name["node.id"].config_source == STATIC
        # A topic inherits the node's log.retention.ms, reported with its synonym chain.
        create_topic_once(server, "inherits")
        topic = entries(raw_describe(conn, [(TOPIC, "inherits", ["retention.ms"])], synonyms=True).results[0])
        assert topic["retention.ms"].value == "7200000"
        assert topic["retention.ms"].config_source == DYNAMIC_BROKER_CONFIG
        # Another node's id: refused, as Kafka refuses it.
        (other,) = raw_describe(conn, [(BROKER, "2", None)]).results
        assert (int(other.error_code), other.error_message) == (
            INVALID_REQUEST,
            "Unexpected broker id, expected 1 or empty string, but received 2",
        )
        # Documentation and config types only when asked, for v3+.
        (documented,) = raw_describe(conn, [(TOPIC, "inherits", ["retention.ms"])], documentation=True).results
        assert documented.configs[0].documentation and documented.configs[0].config_type == 5  # LONG
        (plain,) = raw_describe(conn, [(TOPIC, "inherits", ["retention.ms"])]).results
        assert plain.configs[0].documentation is None
        # Clean up the node-level change so other tests see defaults.
        assert raw_incremental(
            conn,
            [
                (BROKER, "1", [("log.retention.ms", DELETE, None)]),
                (BROKER, "", [("log.cleaner.threads", DELETE, None)]),
            ],
        ) == [(0, None), (0, None)]


def test_broker_logger_through_kafka_python(server: KstewardServer) -> None:
    from kafka.admin import ConfigResource, ConfigResourceType

    kp = kafka_python_admin(server.bootstrap, PLAINTEXT)
    try:
        change = ConfigResource(ConfigResourceType.BROKER_LOGGER, "1", configs={"ksteward.server.connection": "TRACE"})
        assert kp.alter_configs([change]) == {"broker_logger": {"1": "OK"}}
        asked = ConfigResource(ConfigResourceType.BROKER_LOGGER, "1", configs=["ksteward.server.connection"])
        got = kp.describe_configs([asked], config_filter="all")["broker_logger"]["1"]["ksteward.server.connection"]
        assert (got["value"], got["config_source"], got["read_only"]) == (
            "TRACE",
            "DYNAMIC_BROKER_LOGGER_CONFIG",
            False,
        )
        reset = ConfigResource(
            ConfigResourceType.BROKER_LOGGER, "1", configs={"ksteward.server.connection": ("DELETE", None)}
        )
        assert kp.alter_configs([reset]) == {"broker_logger": {"1": "OK"}}
    finally:
        kp.close()


def test_broker_logger(server: KstewardServer) -> None:
    with connect(server.address) as conn:
        (described,) = raw_describe(conn, [(BROKER_LOGGER, "1", None)]).results
        levels = {c.name: c.value for c in described.configs}
        assert "root" in levels and "ksteward.server.app" in levels
        assert all(
            c.config_source == LOGGER_CONFIG and not c.read_only and not c.is_sensitive for c in described.configs
        )
        assert raw_incremental(conn, [(BROKER_LOGGER, "1", [("ksteward.server.app", SET, "DEBUG")])]) == [(0, None)]
        (after,) = raw_describe(conn, [(BROKER_LOGGER, "1", ["ksteward.server.app"])]).results
        assert [(c.name, c.value) for c in after.configs] == [("ksteward.server.app", "DEBUG")]
        refusals = raw_incremental(
            conn,
            [
                (BROKER_LOGGER, "1", [("root", DELETE, None)]),
                (BROKER_LOGGER, "2", [("root", SET, "INFO")]),
                (BROKER_LOGGER, "x", [("root", SET, "INFO")]),
            ],
        )
        assert refusals == [
            (INVALID_REQUEST, "Removing the log level of the root logger is not allowed"),
            (INVALID_REQUEST, "Unexpected node id. Expected 1, but received 2"),  # RuntimeLoggerManager's words
            (INVALID_REQUEST, "Node id must be an integer, but it is: x"),
        ]
        assert raw_incremental(conn, [(BROKER_LOGGER, "1", [("no.such.logger", SET, "INFO")])]) == [
            (INVALID_CONFIG, "Logger no.such.logger does not exist!")
        ]
        assert raw_incremental(conn, [(BROKER_LOGGER, "1", [("root", SET, "VERBOSE")])])[0][0] == INVALID_CONFIG
        assert raw_incremental(conn, [(BROKER_LOGGER, "1", [("root", APPEND, "INFO")])]) == [
            (INVALID_REQUEST, "APPEND operation is not allowed for the BROKER_LOGGER resource")
        ]
        # Legacy AlterConfigs never supports loggers.
        body = {"resources": [{"resource_type": BROKER_LOGGER, "resource_name": "1",
                               "configs": [{"name": "root", "value": "INFO"}]}], "validate_only": False}  # fmt: skip
        (legacy,) = conn.request(ApiKey.ALTER_CONFIGS, 2, body).body.responses
        assert (int(legacy.error_code), legacy.error_message) == (INVALID_REQUEST, "Unknown resource type 8")
        # DELETE gives the logger back its parent's level.
        assert raw_incremental(conn, [(BROKER_LOGGER, "1", [("ksteward.server.app", DELETE, None)])]) == [(0, None)]
        (reset,) = raw_describe(conn, [(BROKER_LOGGER, "1", ["ksteward.server.app", "root"])]).results
        values = {c.name: c.value for c in reset.configs}
        assert values["ksteward.server.app"] == values["root"]


# ---------------------------------------------------------------------------------------- durability and secrets


def test_changes_survive_restart_and_snapshot(server_factory: Any) -> None:
    s = server_factory("server").start()
    create_topic(s.bootstrap, "durable")
    with connect(s.address) as conn:
        assert raw_incremental(
            conn,
            [(TOPIC, "durable", [("retention.ms", SET, "123456")]), (BROKER, "", [("log.cleaner.threads", SET, "2")])],
        ) == [(0, None), (0, None)]
    s.restart()  # SIGTERM writes a snapshot; the restart loads it
    with connect(s.address) as conn:
        topic, default = raw_describe(conn, [(TOPIC, "durable", ["retention.ms"]), (BROKER, "", None)]).results
    assert entries(topic)["retention.ms"].value == "123456"
    assert {c.name: c.value for c in default.configs} == {"log.cleaner.threads": "2"}
    s.restart(hard=True)  # kill -9: the log itself carries the change
    with connect(s.address) as conn:
        (topic,) = raw_describe(conn, [(TOPIC, "durable", ["retention.ms"])]).results
    assert entries(topic)["retention.ms"].value == "123456"
    s.stop()
    shell = ksteward_cli("metadata", "shell", str(s.data_dir), "-c", "cat /configs/Topic/durable/retention.ms")
    assert "123456" in shell.stdout, shell


SECRET = "s3cret-keystore-pass"


def test_sensitive_broker_config_is_never_visible(server_factory: Any) -> None:
    s = server_factory("server").start()
    key = "listener.name.plaintext.ssl.key.password"
    with connect(s.address) as conn:
        assert raw_incremental(conn, [(BROKER, "1", [(key, SET, SECRET)])]) == [(0, None)]
        response = conn.request(
            ApiKey.DESCRIBE_CONFIGS, 4,
            {"resources": [{"resource_type": BROKER, "resource_name": "1", "configuration_keys": None}],
             "include_synonyms": True, "include_documentation": True},
        )  # fmt: skip
    entry = entries(response.body.results[0])[key]
    assert (entry.value, entry.is_sensitive, entry.config_source) == (None, True, DYNAMIC_BROKER_CONFIG)
    assert all(s_.value is None for s_ in entry.synonyms)
    assert SECRET.encode() not in response.raw
    s.stop()
    assert SECRET not in s.log_text()
    shell = ksteward_cli("metadata", "shell", str(s.data_dir), "-c", f"cat /configs/Broker/1/{key}")
    assert shell.returncode == 0, shell
    assert SECRET not in shell.stdout + shell.stderr
    dump = ksteward_cli("metadata", "dump", str(s.data_dir))
    assert key in dump.stdout and SECRET not in dump.stdout


# ---------------------------------------------------------------------------------------- authorization

ADMIN = Auth("PLAIN", "admin", "admin-secret")
TOPIC_AUTHORIZATION_FAILED, CLUSTER_AUTHORIZATION_FAILED = 29, 31


def login(server: KstewardServer, user: str, password: str) -> RawConnection:
    conn = connect(server.address)
    assert int(conn.sasl_plain(user, password).body.error_code) == 0
    return conn


def test_config_authorization(sasl_server: KstewardServer) -> None:
    from acl_clients import acl_client

    with login(sasl_server, "admin", "admin-secret") as admin:
        topics = [{"name": n, "num_partitions": 1, "replication_factor": 1, "assignments": [], "configs": []}
                  for n in ("visible", "hidden")]  # fmt: skip
        body = {"topics": topics, "timeout": timedelta(seconds=10), "validate_only": False}
        assert all(int(t.error_code) == 0 for t in admin.request(19, 7, body).body.topics)
    acls = acl_client("kafka-python", sasl_server.bootstrap)
    describe = ("TOPIC", "visible", "LITERAL", "User:alice", "*", "DESCRIBE_CONFIGS", "ALLOW")
    acls.create(ADMIN, [describe])
    with login(sasl_server, "alice", "alice-secret") as alice:
        # Authorized resources are answered first, then the refused ones (Kafka's order).
        results = raw_describe(
            alice, [(TOPIC, "hidden", None), (BROKER, "1", None), (TOPIC, "visible", ["retention.ms"])]
        )
        assert [(r.resource_name, int(r.error_code), r.error_message) for r in results.results] == [
            ("visible", 0, ""),
            ("hidden", TOPIC_AUTHORIZATION_FAILED, "Topic authorization failed."),
            ("1", CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed."),
        ]
        # DESCRIBE_CONFIGS does not allow altering.
        assert raw_incremental(alice, [(TOPIC, "visible", [("retention.ms", SET, "1000")])]) == [
            (TOPIC_AUTHORIZATION_FAILED, "Topic authorization failed.")
        ]
        assert raw_incremental(alice, [(BROKER, "", [("log.cleaner.threads", SET, "2")])]) == [
            (CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed.")
        ]
        assert raw_incremental(alice, [(BROKER_LOGGER, "1", [("root", SET, "INFO")])]) == [
            (CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed.")
        ]
        # ALTER_CONFIGS allows altering, and implies DESCRIBE_CONFIGS.
        alter = ("TOPIC", "hidden", "LITERAL", "User:alice", "*", "ALTER_CONFIGS", "ALLOW")
        acls.create(ADMIN, [alter])
        assert raw_incremental(alice, [(TOPIC, "hidden", [("retention.ms", SET, "1000")])]) == [(0, None)]
        (hidden,) = raw_describe(alice, [(TOPIC, "hidden", ["retention.ms"])]).results
        assert entries(hidden)["retention.ms"].value == "1000"
    acls.delete(ADMIN, [describe, alter])
    # The shipped SASL config holds PLAIN passwords in a listener-prefixed sasl.jaas.config: never shown.
    with login(sasl_server, "admin", "admin-secret") as admin:
        response = admin.request(
            ApiKey.DESCRIBE_CONFIGS, 4,
            {"resources": [{"resource_type": BROKER, "resource_name": "1", "configuration_keys": None}],
             "include_synonyms": True, "include_documentation": False},
        )  # fmt: skip
    jaas = entries(response.body.results[0])["listener.name.sasl_plaintext.plain.sasl.jaas.config"]
    assert (jaas.value, jaas.is_sensitive, jaas.config_source) == (None, True, STATIC)
    assert b"admin-secret" not in response.raw and b"alice-secret" not in response.raw
