"""AlterConfigs and IncrementalAlterConfigs on a real cluster (issue 14; docs/forwarding.md, "AlterConfigs and
IncrementalAlterConfigs on a broker"): a broker-only node preprocesses them as Kafka's KafkaApis does, answers
what it can itself (duplicates, another broker's id, BROKER_LOGGER), forwards only the rest, and answers one
entry per original resource in request order; a controller listener runs ControllerApis' part only.

One controller (node 1, with an audit log: it shows what reached it) and two brokers (2 and 3), with
kafka-python, confluent-kafka and raw frames where a client will not send what the test needs (a duplicate
resource in one IncrementalAlterConfigs, a BROKER resource sent to another broker, an exact response order).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from clients import Auth, confluent_admin, kafka_python_admin
from harness import Cluster, ClusterNode, ksteward_cli, wait_for
from rawkafka import connect

from ksteward.protocol.apis import ApiKey

TOPIC, BROKER, BROKER_LOGGER = 2, 4, 8
SET = 0
INVALID_REQUEST, UNSUPPORTED_VERSION = 42, 35
DUPLICATE = "Each resource must appear at most once."
LOGGER = "ksteward.broker.envelope"  # a logger on every node that logs only refused envelopes


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    workdir = tmp_path_factory.mktemp("cluster-configs")
    made = Cluster(workdir)
    made.controller.extra_overrides["audit.log.dir"] = str(workdir / "controller-audit")
    try:
        yield made.start()
    finally:
        made.kill()


def audit_methods(cluster: Cluster, method: str) -> list[dict[str, Any]]:
    """The controller's audit events of ``method`` written so far (the writer flushes about every second)."""
    events = []
    for path in sorted(Path(cluster.controller.extra_overrides["audit.log.dir"]).glob("audit*.log")):
        for line in path.read_text().splitlines():
            try:
                event = json.loads(line)
            except ValueError:  # a line being written right now
                continue
            if event["data"]["methodName"] == method:
                events.append(event)
    return events


def forwarded_lines(cluster: Cluster, method: str, resource: str) -> list[dict[str, Any]]:
    """The controller's audit events of ``method`` about ``resource`` that a broker forwarded."""
    return [
        e for e in audit_methods(cluster, method)
        if "forwardedBy" in e["data"]["ksteward"] and resource in json.dumps(e["data"]["authorizationInfo"])
    ]  # fmt: skip


def config_records(node: ClusterNode, *needles: str) -> list[dict[str, Any]]:
    """The ConfigRecords in ``node``'s metadata log that mention every needle (``ksteward metadata dump``)."""
    dump = ksteward_cli("metadata", "dump", str(node.data_dir))
    assert dump.returncode == 0, dump.stderr
    payloads = [json.loads(line).get("payload", {}) for line in dump.stdout.splitlines() if line.strip()]
    return [
        p["data"] for p in payloads
        if p.get("type") == "CONFIG_RECORD" and all(n in json.dumps(p["data"]) for n in needles)
    ]  # fmt: skip


def incremental(node: ClusterNode, *resources: tuple[int, str, list[tuple[str, str | None]]]) -> list[Any]:
    """One raw IncrementalAlterConfigs v1 (SET ops); the response entries as (type, name, code, message)."""
    body = {
        "resources": [
            {"resource_type": t, "resource_name": n,
             "configs": [{"name": k, "config_operation": SET, "value": v} for k, v in configs]}
            for t, n, configs in resources
        ],
        "validate_only": False,
    }  # fmt: skip
    with connect(node.address) as conn:
        response = conn.request(ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, body).body
    return [(int(r.resource_type), r.resource_name, int(r.error_code), r.error_message) for r in response.responses]


def legacy(node: ClusterNode, *resources: tuple[int, str, dict[str, str]]) -> list[Any]:
    """One raw AlterConfigs v2; the response entries as (type, name, code, message)."""
    body = {
        "resources": [
            {"resource_type": t, "resource_name": n, "configs": [{"name": k, "value": v} for k, v in c.items()]}
            for t, n, c in resources
        ],
        "validate_only": False,
    }
    with connect(node.address) as conn:
        response = conn.request(ApiKey.ALTER_CONFIGS, 2, body).body
    return [(int(r.resource_type), r.resource_name, int(r.error_code), r.error_message) for r in response.responses]


def logger_level(node: ClusterNode, name: str, logger: str) -> str | None:
    """DescribeConfigs BROKER_LOGGER ``name`` on ``node`` (raw: the controller is not in any client's metadata)."""
    body = {"resources": [{"resource_type": BROKER_LOGGER, "resource_name": name, "configuration_keys": [logger]}]}
    with connect(node.address) as conn:
        (result,) = conn.request(ApiKey.DESCRIBE_CONFIGS, 4, body).body.results
    assert int(result.error_code) == 0, result
    return next((c.value for c in result.configs if c.name == logger), None)


def topic_config(node: ClusterNode, topic: str, key: str) -> str | None:
    from confluent_kafka.admin import ConfigResource, ResourceType

    resource = ConfigResource(ResourceType.TOPIC, topic)
    admin = confluent_admin(node.bootstrap, Auth())  # held: a destroyed handle fails its futures
    entries = admin.describe_configs([resource])[resource].result(10)
    return entries[key].value if key in entries else None


def create_topic(node: ClusterNode, name: str) -> None:
    from confluent_kafka.admin import NewTopic

    admin = confluent_admin(node.bootstrap, Auth())
    admin.create_topics([NewTopic(name, 1, 1)])[name].result(15)


def test_a_broker_answers_duplicates_and_another_brokers_id_itself(cluster: Cluster) -> None:
    from kafka.admin import ConfigResource, ConfigResourceType

    first, second = cluster.brokers
    create_topic(first, "dup-orders")
    # The audit writer keeps the order of events: once the CreateTopics' own line is there, so is every envelope
    # before it.
    wait_for(lambda: forwarded_lines(cluster, "kafka.CreateTopics", "dup-orders"), 20.0, "the CreateTopics audit")
    envelopes_before = len(audit_methods(cluster, "kafka.Envelope"))

    # kafka-python sends a topic named twice as it is given: both copies are refused, by the broker.
    kp = kafka_python_admin(first.bootstrap, Auth())
    try:
        twice = [ConfigResource(ConfigResourceType.TOPIC, "dup-orders", configs={"retention.ms": "1000"})] * 2
        for use_incremental in (True, False):
            result = kp.alter_configs(twice, raise_on_unknown=False, incremental=use_incremental)
            assert DUPLICATE in result["topic"]["dup-orders"], result
    finally:
        kp.close()
    # A BROKER resource must name the receiving broker (clients route it there; raw frames need not).
    assert incremental(first, (BROKER, "3", [("log.retention.ms", "1000")]), (BROKER, "x", [])) == [
        (BROKER, "3", INVALID_REQUEST, "Unexpected broker id, expected 2, but received 3"),
        (BROKER, "x", INVALID_REQUEST, "Node id must be an integer, but it is: x"),
    ]
    assert legacy(first, (BROKER, "3", {"log.retention.ms": "1000"})) == [
        (BROKER, "3", INVALID_REQUEST, "Unexpected broker id, expected 2, but received 3")
    ]
    # A request with no resource leaves nothing to forward: the broker answers it (Kafka's KafkaApis).
    assert incremental(first) == []

    # Then one good change through the same broker: forwarded, applied once, seen from the other broker.
    assert incremental(first, (TOPIC, "dup-orders", [("retention.ms", "4321")])) == [(TOPIC, "dup-orders", 0, None)]
    wait_for(lambda: topic_config(second, "dup-orders", "retention.ms") == "4321", 20.0, "the change on broker 3")
    # One broker forwards in FIFO order, so had a refused request been forwarded, its envelope would stand before
    # the good change's: exactly one more envelope reached the controller. No record for the refused ones either.
    wait_for(lambda: forwarded_lines(cluster, "kafka.IncrementalAlterConfigs", "dup-orders"), 20.0, "its audit")
    assert len(audit_methods(cluster, "kafka.Envelope")) == envelopes_before + 1
    assert [r["value"] for r in config_records(cluster.controller, "dup-orders")] == ["4321"]
    assert not config_records(cluster.controller, "log.retention.ms", "1000")


def test_broker_logger_changes_the_receiving_broker_only(cluster: Cluster) -> None:
    from kafka.admin import ConfigResource, ConfigResourceType

    first, second = cluster.brokers
    kp = kafka_python_admin(first.bootstrap, Auth())
    try:
        change = ConfigResource(ConfigResourceType.BROKER_LOGGER, "2", configs={LOGGER: "TRACE"})
        assert kp.alter_configs([change]) == {"broker_logger": {"2": "OK"}}  # kafka-python sends it to broker 2
        asked = ConfigResource(ConfigResourceType.BROKER_LOGGER, "2", configs=[LOGGER])
        described = kp.describe_configs([asked], config_filter="all")["broker_logger"]["2"][LOGGER]
        assert (described["value"], described["config_source"]) == ("TRACE", "DYNAMIC_BROKER_LOGGER_CONFIG")
    finally:
        kp.close()
    assert logger_level(first, "2", LOGGER) == "TRACE"
    assert logger_level(second, "3", LOGGER) != "TRACE"
    assert logger_level(cluster.controller, "1", LOGGER) != "TRACE"  # had it been forwarded, it would be


def test_a_controller_listener_runs_only_the_controllers_part(cluster: Cluster) -> None:
    """KIP-919 clients reach ControllerApis: BROKER_LOGGER is the controller's own (CLUSTER_ACTION), an unknown type
    is UNSUPPORTED_VERSION, a duplicate is answered once."""
    controller = cluster.controller
    assert incremental(controller, (BROKER_LOGGER, "1", [(LOGGER, "DEBUG")]), (99, "x", [])) == [
        (BROKER_LOGGER, "1", 0, None),
        (99, "x", UNSUPPORTED_VERSION, "Unknown resource type 99."),
    ]
    assert logger_level(controller, "1", LOGGER) == "DEBUG"
    assert logger_level(cluster.brokers[0], "2", LOGGER) != "DEBUG"
    three_copies = [(TOPIC, "nope", [("retention.ms", "1")]), (TOPIC, "nope", []), (TOPIC, "nope", [])]
    assert incremental(controller, *three_copies) == [(TOPIC, "nope", INVALID_REQUEST, "Duplicate resource.")]
    assert legacy(controller, (BROKER_LOGGER, "1", {LOGGER: "DEBUG"})) == [
        (BROKER_LOGGER, "1", INVALID_REQUEST, "Unexpected resource type BROKER_LOGGER.")
    ]
    assert incremental(controller, (BROKER_LOGGER, "1", [(LOGGER, "INFO")])) == [(BROKER_LOGGER, "1", 0, None)]


def test_a_mixed_request_comes_back_in_the_original_order(cluster: Cluster) -> None:
    first, second = cluster.brokers
    create_topic(second, "mixed-orders")  # committed on the controller, which is what the change below needs
    answer = incremental(
        first,
        (TOPIC, "mixed-dup", [("retention.ms", "1")]),
        (TOPIC, "mixed-orders", [("retention.ms", "7777")]),
        (BROKER_LOGGER, "2", [(LOGGER, "WARN")]),
        (TOPIC, "mixed-dup", [("retention.ms", "2")]),
        (BROKER, "2", [("log.retention.ms", "86400000")]),
        (BROKER, "3", [("log.retention.ms", "86400000")]),
        (TOPIC, "mixed-missing", [("retention.ms", "1")]),
    )
    assert answer == [
        (TOPIC, "mixed-dup", INVALID_REQUEST, DUPLICATE),
        (TOPIC, "mixed-orders", 0, None),
        (BROKER_LOGGER, "2", 0, None),
        (TOPIC, "mixed-dup", INVALID_REQUEST, DUPLICATE),
        (BROKER, "2", 0, None),  # this broker's own id: checked here, stored by the controller
        (BROKER, "3", INVALID_REQUEST, "Unexpected broker id, expected 2, but received 3"),
        (TOPIC, "mixed-missing", 3, "The topic 'mixed-missing' does not exist."),
    ]
    assert logger_level(first, "2", LOGGER) == "WARN"
    wait_for(lambda: topic_config(second, "mixed-orders", "retention.ms") == "7777", 20.0, "the change on broker 3")
    assert [r["value"] for r in config_records(cluster.controller, "mixed-orders")] == ["7777"]
    assert len(config_records(cluster.controller, "log.retention.ms", "86400000")) == 1


def test_a_broker_config_is_validated_by_the_broker_that_receives_it(cluster: Cluster) -> None:
    """A BROKER change goes to the broker it names (confluent-kafka routes it there); that broker validates it as a
    dynamic broker config change (a failure is INVALID_REQUEST, KAFKA-13609), and the controller stores it."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

    second = cluster.brokers[1]
    admin = confluent_admin(second.bootstrap, Auth())

    def change(key: str, value: str) -> None:
        entry = ConfigEntry(key, value, incremental_operation=AlterConfigOpType.SET)
        resource = ConfigResource(ResourceType.BROKER, "3", incremental_configs=[entry])
        admin.incremental_alter_configs([resource])[resource].result(15)

    with pytest.raises(KafkaException, match="INVALID_REQUEST"):
        change("num.io.threads", "0")
    change("log.cleaner.backoff.ms", "12345")

    def on_broker_3() -> str | None:
        resource = ConfigResource(ResourceType.BROKER, "3")
        entries = admin.describe_configs([resource])[resource].result(10)
        return entries["log.cleaner.backoff.ms"].value

    wait_for(lambda: on_broker_3() == "12345", 20.0, "broker 3's dynamic config")
    assert len(config_records(cluster.controller, "log.cleaner.backoff.ms", "12345")) == 1
    assert not config_records(cluster.controller, "num.io.threads")
