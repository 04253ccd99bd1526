"""Topic administration through the four real clients: create (with configs), list, delete,
validate_only, name rules, CreatePartitions, policies whose messages reach the client, restarts."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from clients import Auth, confluent_admin, kafka_python_admin, kafkajs
from harness import KstewardServer

PLAINTEXT = Auth()
# Kafka's codes (librdkafka names 17 TOPIC_EXCEPTION, so compare numbers).
INVALID_TOPIC, TOPIC_ALREADY_EXISTS, INVALID_PARTITIONS, POLICY_VIOLATION = 17, 36, 37, 44
CLIENTS = ["confluent-kafka", "kafka-python", "aiokafka", "kafkajs"]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KstewardServer]:
    s = KstewardServer(tmp_path_factory.mktemp("topics"), "server", name="topics")
    try:
        yield s.start()
    finally:
        s.kill()


def topics_of(bootstrap: str) -> dict[str, int]:
    """Topic name -> partition count, as confluent-kafka's Metadata shows them."""
    metadata = confluent_admin(bootstrap, PLAINTEXT).list_topics(timeout=10)
    return {name: len(t.partitions) for name, t in metadata.topics.items()}


def create(client: str, bootstrap: str, name: str, partitions: int, configs: dict[str, str]) -> None:
    if client == "confluent-kafka":
        from confluent_kafka.admin import NewTopic

        admin = confluent_admin(bootstrap, PLAINTEXT)
        admin.create_topics([NewTopic(name, partitions, 1, config=configs)], request_timeout=10)[name].result()
    elif client == "kafka-python":
        from kafka.admin import NewTopic as KpNewTopic

        kp = kafka_python_admin(bootstrap, PLAINTEXT)
        try:
            kp.create_topics([KpNewTopic(name, partitions, 1, topic_configs=configs)])
        finally:
            kp.close()
    elif client == "aiokafka":
        from aiokafka.admin import AIOKafkaAdminClient
        from aiokafka.admin import NewTopic as AioNewTopic

        async def run() -> None:
            aio = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
            await aio.start()
            try:
                response = await aio.create_topics([AioNewTopic(name, partitions, 1, topic_configs=configs)])
                errors = [err for _, err, *_ in response.topic_errors if err]
                assert not errors, response
            finally:
                await aio.close()

        asyncio.run(run())
    else:
        entries = [{"name": k, "value": v} for k, v in configs.items()]
        job: dict[str, Any] = {
            "brokers": [bootstrap],
            "action": "createTopics",
            "args": {"topics": [{"topic": name, "numPartitions": partitions, "configEntries": entries}]},
        }
        result = kafkajs(job)
        assert result["ok"] and result["result"] is True, result


def delete(client: str, bootstrap: str, name: str) -> None:
    if client == "confluent-kafka":
        admin = confluent_admin(bootstrap, PLAINTEXT)  # must outlive its futures
        admin.delete_topics([name], request_timeout=10)[name].result()
    elif client == "kafka-python":
        kp = kafka_python_admin(bootstrap, PLAINTEXT)
        try:
            kp.delete_topics([name])
        finally:
            kp.close()
    elif client == "aiokafka":
        from aiokafka.admin import AIOKafkaAdminClient

        async def run() -> None:
            aio = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
            await aio.start()
            try:
                await aio.delete_topics([name])
            finally:
                await aio.close()

        asyncio.run(run())
    else:
        result = kafkajs({"brokers": [bootstrap], "action": "deleteTopics", "args": {"topics": [name]}})
        assert result["ok"], result


@pytest.mark.parametrize("client", CLIENTS)
def test_create_list_delete(server: KstewardServer, client: str) -> None:
    name = f"orders-{client}"
    create(client, server.bootstrap, name, 3, {"cleanup.policy": "compact", "retention.ms": "60000"})
    assert topics_of(server.bootstrap)[name] == 3
    delete(client, server.bootstrap, name)
    assert name not in topics_of(server.bootstrap)


def test_validate_only_leaves_nothing(server: KstewardServer) -> None:
    from confluent_kafka.admin import NewTopic

    admin = confluent_admin(server.bootstrap, PLAINTEXT)
    admin.create_topics([NewTopic("dry-run", 2, 1)], validate_only=True, request_timeout=10)["dry-run"].result()
    assert "dry-run" not in topics_of(server.bootstrap)


@pytest.mark.parametrize(
    ("name", "code"),
    [(".", INVALID_TOPIC), ("..", INVALID_TOPIC), ("bad/name", INVALID_TOPIC), ("x" * 250, INVALID_TOPIC)],
)  # fmt: skip
def test_name_rules_get_kafkas_codes(server: KstewardServer, name: str, code: int) -> None:
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import NewTopic

    admin = confluent_admin(server.bootstrap, PLAINTEXT)
    with pytest.raises(KafkaException) as info:
        admin.create_topics([NewTopic(name, 1, 1)], request_timeout=10)[name].result()
    assert info.value.args[0].code() == code


def test_duplicate_and_colliding_names(server: KstewardServer) -> None:
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import NewTopic

    admin = confluent_admin(server.bootstrap, PLAINTEXT)
    admin.create_topics([NewTopic("a.b", 1, 1)], request_timeout=10)["a.b"].result()
    for name, code in (("a.b", TOPIC_ALREADY_EXISTS), ("a_b", INVALID_TOPIC)):
        with pytest.raises(KafkaException) as info:
            admin.create_topics([NewTopic(name, 1, 1)], request_timeout=10)[name].result()
        assert info.value.args[0].code() == code


def test_create_partitions(server: KstewardServer) -> None:
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import NewPartitions, NewTopic

    admin = confluent_admin(server.bootstrap, PLAINTEXT)
    admin.create_topics([NewTopic("grow", 2, 1)], request_timeout=10)["grow"].result()
    admin.create_partitions([NewPartitions("grow", 5)], request_timeout=10)["grow"].result()
    assert topics_of(server.bootstrap)["grow"] == 5
    with pytest.raises(KafkaException) as info:
        admin.create_partitions([NewPartitions("grow", 4)], request_timeout=10)["grow"].result()
    assert info.value.args[0].code() == INVALID_PARTITIONS


def test_policies_refuse_with_their_message(server_factory) -> None:  # type: ignore[no-untyped-def]
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import NewTopic

    policed = server_factory(
        "server",
        {
            "create.topic.policy.class.name": "ksteward.policy.builtin.TopicNamingPolicy",
            "topic.naming.policy.regex": "team-[a-z]+",
            "delete.topic.policy.class.name": "ksteward.policy.builtin.ProtectInternalTopics",
            "protect.internal.topics.regex": "team-keep",
        },
    ).start()
    admin = confluent_admin(policed.bootstrap, PLAINTEXT)
    admin.create_topics([NewTopic("team-ok", 1, 1)], request_timeout=10)["team-ok"].result()
    with pytest.raises(KafkaException) as info:
        admin.create_topics([NewTopic("Loose_Name", 1, 1)], request_timeout=10)["Loose_Name"].result()
    assert info.value.args[0].code() == POLICY_VIOLATION
    assert "team-[a-z]+" in info.value.args[0].str()
    admin.create_topics([NewTopic("team-keep", 1, 1)], request_timeout=10)["team-keep"].result()
    with pytest.raises(KafkaException) as info:
        admin.delete_topics(["team-keep"], request_timeout=10)["team-keep"].result()
    assert info.value.args[0].code() == POLICY_VIOLATION
    assert "team-keep" in topics_of(policed.bootstrap)


def test_a_policy_that_cannot_load_stops_the_start(server_factory) -> None:  # type: ignore[no-untyped-def]
    bad = server_factory("server", {"create.topic.policy.class.name": "no.such.module.Policy"})
    code, output = bad.run_to_exit()
    lines = [line for line in output.splitlines() if line.startswith("ksteward:")]
    assert code != 0 and len(lines) == 1 and "create.topic.policy.class.name" in lines[0], output


def test_topics_survive_restart_and_snapshot(server_factory) -> None:  # type: ignore[no-untyped-def]
    from confluent_kafka.admin import NewTopic

    s = server_factory("server").start()
    admin = confluent_admin(s.bootstrap, PLAINTEXT)
    admin.create_topics([NewTopic("kept", 4, 1), NewTopic("gone", 1, 1)], request_timeout=10)["kept"].result()
    admin.delete_topics(["gone"], request_timeout=10)["gone"].result()
    s.restart()  # SIGTERM writes a snapshot; the restart loads it
    assert topics_of(s.bootstrap).get("kept") == 4 and "gone" not in topics_of(s.bootstrap)
    s.restart(hard=True)
    assert topics_of(s.bootstrap).get("kept") == 4
