"""GROUP and CLIENT_METRICS configs on a real cluster (issue 20): a broker-only node forwards them to the
controller like every config mutation, the controller validates and commits the ConfigRecords, and every broker
describes them from its own image."""

from __future__ import annotations

import json
from typing import Any

import pytest
from clients import Auth, confluent_admin, kafka_python_admin
from harness import Cluster, ClusterNode, ksteward_cli, wait_for
from rawkafka import connect

from ksteward.protocol.apis import ApiKey

CLIENT_METRICS, GROUP = 16, 32
SET = 0
INVALID_CONFIG = 40


def described(node: ClusterNode, rtype: int, name: str, key: str) -> tuple[str | None, int] | None:
    body = {"resources": [{"resource_type": rtype, "resource_name": name, "configuration_keys": [key]}]}
    with connect(node.address) as conn:
        (result,) = conn.request(ApiKey.DESCRIBE_CONFIGS, 4, body).body.results
    return next(((c.value, int(c.config_source)) for c in result.configs), None)


def config_records(node: ClusterNode, resource_type: int, name: str) -> list[dict[str, Any]]:
    dump = ksteward_cli("metadata", "dump", str(node.data_dir))
    assert dump.returncode == 0, dump.stderr
    payloads = [json.loads(line).get("payload", {}) for line in dump.stdout.splitlines() if line.strip()]
    return [
        p["data"] for p in payloads
        if p.get("type") == "CONFIG_RECORD" and p["data"]["resourceType"] == resource_type
        and p["data"]["resourceName"] == name
    ]  # fmt: skip


def test_group_and_client_metrics_configs_are_forwarded(cluster: Cluster) -> None:
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType
    from kafka.admin import ConfigResource as KpResource
    from kafka.admin import ConfigResourceType

    first, second = cluster.brokers
    admin = confluent_admin(first.bootstrap, Auth())

    def set_session(value: str) -> None:
        entry = ConfigEntry("consumer.session.timeout.ms", value, incremental_operation=AlterConfigOpType.SET)
        resource = ConfigResource(ResourceType.GROUP, "fwd-group", incremental_configs=[entry])
        admin.incremental_alter_configs([resource])[resource].result(15)

    with connect(first.address) as conn:  # a validate_only change is forwarded too, and writes nothing
        body = {
            "resources": [{"resource_type": CLIENT_METRICS, "resource_name": "fwd-sub",
                           "configs": [{"name": "match", "config_operation": SET, "value": "client_id=["}]}],
            "validate_only": True,
        }  # fmt: skip
        (response,) = conn.request(ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, body).body.responses
    assert (int(response.error_code), response.error_message) == (
        INVALID_CONFIG, "Illegal client matching pattern: client_id=[",
    )  # fmt: skip
    with pytest.raises(KafkaException, match=r"group\.consumer\.max\.session\.timeout\.ms"):
        set_session("70000")
    set_session("50000")
    kp = kafka_python_admin(second.bootstrap, Auth())
    try:
        subscription = KpResource(ConfigResourceType.CLIENT_METRICS, "fwd-sub", configs={"interval.ms": "60000"})
        assert kp.alter_configs([subscription]) == {"client_metrics": {"fwd-sub": "OK"}}
    finally:
        kp.close()
    # Each broker answers from its own image once the controller's records reach it.
    wait_for(lambda: described(second, GROUP, "fwd-group", "consumer.session.timeout.ms") == ("50000", 8), 20.0,
             "the group config on broker 3")  # fmt: skip
    wait_for(lambda: described(first, CLIENT_METRICS, "fwd-sub", "interval.ms") == ("60000", 7), 20.0,
             "the subscription on broker 2")  # fmt: skip
    assert [r["value"] for r in config_records(cluster.controller, GROUP, "fwd-group")] == ["50000"]
    assert [(r["name"], r["value"]) for r in config_records(cluster.controller, CLIENT_METRICS, "fwd-sub")] == [
        ("interval.ms", "60000")
    ]
