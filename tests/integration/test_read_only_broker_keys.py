"""``advertised.listeners`` is read-only since Kafka 4.0 (KAFKA-18405): DescribeConfigs reports it read-only, and an
AlterConfigs or IncrementalAlterConfigs that sets it is refused with Kafka's INVALID_REQUEST "Cannot update these
configs dynamically" through every client with a config call (confluent-kafka, kafka-python, kafkajs, aiokafka),
on the combined node and on a broker-only node of a cluster. The remote log thread pools became dynamic in the same
release (KAFKA-17928) and are accepted."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from clients import Auth, aiokafka_admin, confluent_admin, kafka_python_admin, kafkajs
from harness import Cluster, KstewardServer
from rawkafka import connect

from ksteward.protocol.apis import ApiKey

BROKER, SET = 4, 0
INVALID_REQUEST = 42
REFUSAL = "Cannot update these configs dynamically: Set(advertised.listeners)"
NEW_VALUE = "PLAINTEXT://elsewhere.example:9092"


def raw_incremental(address: tuple[str, int], node_id: str, key: str, value: str) -> tuple[int, str | None]:
    body = {"resources": [{"resource_type": BROKER, "resource_name": node_id,
                           "configs": [{"name": key, "config_operation": SET, "value": value}]}],
            "validate_only": False}  # fmt: skip
    with connect(address) as conn:
        (result,) = conn.request(ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, body).body.responses
    return int(result.error_code), result.error_message


def test_describe_configs_reports_it_read_only(plaintext_server: KstewardServer) -> None:
    body = {"resources": [{"resource_type": BROKER, "resource_name": "1", "configuration_keys": None}],
            "include_synonyms": False, "include_documentation": False}  # fmt: skip
    with connect(plaintext_server.address) as conn:
        (result,) = conn.request(ApiKey.DESCRIBE_CONFIGS, 4, body).body.results
    by_name = {c.name: c for c in result.configs}
    advertised = by_name["advertised.listeners"]
    assert advertised.read_only and advertised.value == f"PLAINTEXT://{plaintext_server.bootstrap}"
    assert not by_name["listeners"].read_only  # still dynamic in Kafka 4.x
    assert not by_name["remote.log.reader.threads"].read_only


def _confluent(bootstrap: str) -> str:
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

    admin = confluent_admin(bootstrap, Auth())
    entry = ConfigEntry("advertised.listeners", NEW_VALUE, incremental_operation=AlterConfigOpType.SET)
    (future,) = admin.incremental_alter_configs([ConfigResource(ResourceType.BROKER, "1", incremental_configs=[entry])],
                                                request_timeout=10).values()  # fmt: skip
    with pytest.raises(Exception) as refused:
        future.result()
    return str(refused.value)


def _kafka_python(bootstrap: str) -> str:
    from kafka.admin import ConfigResource, ConfigResourceType

    admin = kafka_python_admin(bootstrap, Auth())
    try:
        resource = ConfigResource(ConfigResourceType.BROKER, "1", configs={"advertised.listeners": NEW_VALUE})
        # kafka-python first checks the key against DescribeConfigs' dynamic keys, and it is not one any more
        with pytest.raises(ValueError, match="Unrecognized configs"):
            admin.alter_configs([resource])
        resource = ConfigResource(ConfigResourceType.BROKER, "1", configs={"advertised.listeners": NEW_VALUE})
        return str(admin.alter_configs([resource], raise_on_unknown=False))
    finally:
        admin.close()


def _kafkajs(bootstrap: str) -> str:
    entries = [{"name": "advertised.listeners", "value": NEW_VALUE}]
    job = {"brokers": [bootstrap], "action": "alterConfigs",
           "args": {"resources": [{"type": BROKER, "name": "1", "configEntries": entries}]}}  # fmt: skip
    result = kafkajs(job)
    assert not result["ok"], result
    assert result["error"]["type"] == "INVALID_REQUEST", result  # kafkajs shows the code, not the message
    return REFUSAL


def _aiokafka(bootstrap: str) -> str:
    from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType

    async def run() -> Any:
        admin = aiokafka_admin(bootstrap, Auth())
        await admin.start()
        try:
            resource = ConfigResource(ConfigResourceType.BROKER, "1", configs={"advertised.listeners": NEW_VALUE})
            return await admin.alter_configs([resource])
        finally:
            await admin.close()

    return str(asyncio.run(run()))


@pytest.mark.parametrize("client", ["confluent-kafka", "kafka-python", "kafkajs", "aiokafka"])
def test_every_client_is_refused_a_change(plaintext_server: KstewardServer, client: str) -> None:
    alter = {"confluent-kafka": _confluent, "kafka-python": _kafka_python, "kafkajs": _kafkajs,
             "aiokafka": _aiokafka}[client]  # fmt: skip
    assert REFUSAL in alter(plaintext_server.bootstrap)
    code, message = raw_incremental(plaintext_server.address, "1", "advertised.listeners", NEW_VALUE)
    assert (code, message) == (INVALID_REQUEST, REFUSAL)
    with connect(plaintext_server.address) as conn:  # nothing was stored
        body = {"resources": [{"resource_type": BROKER, "resource_name": "1",
                               "configuration_keys": ["advertised.listeners"]}],
                "include_synonyms": False, "include_documentation": False}  # fmt: skip
        (result,) = conn.request(ApiKey.DESCRIBE_CONFIGS, 4, body).body.results
    assert [c.value for c in result.configs] == [f"PLAINTEXT://{plaintext_server.bootstrap}"]


def test_the_remote_log_thread_pools_are_dynamic(plaintext_server: KstewardServer) -> None:
    assert raw_incremental(plaintext_server.address, "1", "remote.log.reader.threads", "12") == (0, None)
    code, message = raw_incremental(plaintext_server.address, "1", "remote.log.reader.threads", "100")
    assert code == INVALID_REQUEST and message is not None and "should not be greater than double" in message


def test_a_broker_only_node_refuses_it_too(cluster: Cluster) -> None:
    broker = cluster.brokers[0]
    node_id = str(broker.cluster_node_id)
    assert raw_incremental(broker.address, node_id, "advertised.listeners", NEW_VALUE) == (INVALID_REQUEST, REFUSAL)
