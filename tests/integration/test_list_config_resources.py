"""ListConfigResources (KIP-1142; ListClientMetricsResources before Kafka 4.1) through kafka-python's
``list_config_resources`` (the only client of the four with a call for it) and the raw wire: v0 and v1, the
resource-type filter, UNSUPPORTED_VERSION for a type Kafka does not list, DESCRIBE_CONFIGS on the cluster, the
controller listener that does not serve it, and a broker-only node answering from its own image."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from acl_clients import acl_client
from clients import Auth, confluent_admin, kafka_python_admin
from harness import Cluster, KstewardServer, wait_for
from rawkafka import RawConnection, connect

from ksteward.protocol.apis import ApiKey

ADMIN = Auth("PLAIN", "admin", "admin-secret")
ALICE = Auth("PLAIN", "alice", "alice-secret")
TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP = 2, 4, 8, 16, 32
UNSUPPORTED_VERSION, CLUSTER_AUTHORIZATION_FAILED = 35, 31


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KstewardServer]:
    s = KstewardServer(tmp_path_factory.mktemp("lcr"), "sasl", name="lcr")
    try:
        s.start()
        from confluent_kafka.admin import NewTopic

        admin = confluent_admin(s.bootstrap, ADMIN)
        futures = admin.create_topics([NewTopic("lcr-b", 1, 1), NewTopic("lcr-a", 1, 1)], request_timeout=15)
        for future in futures.values():
            future.result()
        yield s
    finally:
        s.kill()


def login(server: KstewardServer, auth: Auth) -> RawConnection:
    conn = connect(server.address)
    assert int(conn.sasl_plain(auth.username, auth.password).body.error_code) == 0
    return conn


def listing(conn: RawConnection, version: int, types: list[int] | None = None) -> Any:
    body = {"resource_types": types or []} if version >= 1 else {}
    return conn.request(ApiKey.LIST_CONFIG_RESOURCES, version, body).body


def test_kafka_python_lists_every_type_and_filters(server: KstewardServer) -> None:
    admin = kafka_python_admin(server.bootstrap, ADMIN)
    try:
        assert admin.list_config_resources() == {
            "broker_logger": ["1"],
            "broker": ["1"],
            "topic": ["lcr-a", "lcr-b"],
        }
        assert admin.list_config_resources(["TOPIC"]) == {"topic": ["lcr-a", "lcr-b"]}
        assert admin.list_config_resources(["GROUP", "CLIENT_METRICS"]) == {}
    finally:
        admin.close()


def test_raw_versions_and_unsupported_types(server: KstewardServer) -> None:
    with login(server, ADMIN) as conn:
        v0 = listing(conn, 0)
        assert (int(v0.error_code), list(v0.config_resources)) == (0, [])  # v0: CLIENT_METRICS only, none kept
        v1 = listing(conn, 1, [BROKER, TOPIC, BROKER])
        assert int(v1.error_code) == 0
        assert [(int(r.resource_type), r.resource_name) for r in v1.config_resources] == [
            (BROKER, "1"),
            (TOPIC, "lcr-a"),
            (TOPIC, "lcr-b"),
        ]
        for bad in ([1], [TOPIC, 64], [0]):  # UNKNOWN, a type Kafka does not have, ANY-like 0
            refused = listing(conn, 1, bad)
            assert (int(refused.error_code), list(refused.config_resources)) == (UNSUPPORTED_VERSION, []), bad


def test_describe_configs_on_the_cluster_is_required(server: KstewardServer) -> None:
    with login(server, ALICE) as conn:
        for version in (0, 1):
            denied = listing(conn, version)
            assert (int(denied.error_code), list(denied.config_resources)) == (CLUSTER_AUTHORIZATION_FAILED, [])
    grant = ("CLUSTER", "kafka-cluster", "LITERAL", "User:alice", "*", "DESCRIBE_CONFIGS", "ALLOW")
    acl_client("kafka-python", server.bootstrap).create(ADMIN, [grant])
    try:
        alice = kafka_python_admin(server.bootstrap, ALICE)
        try:
            # Topic names come with the cluster grant alone (Kafka checks nothing per topic here).
            assert alice.list_config_resources(["TOPIC"]) == {"topic": ["lcr-a", "lcr-b"]}
        finally:
            alice.close()
    finally:
        acl_client("kafka-python", server.bootstrap).delete(ADMIN, [grant])


def test_not_served_on_the_controller_listener(server: KstewardServer) -> None:
    with connect((server.address[0], server.controller_port)) as conn:
        assert ApiKey.LIST_CONFIG_RESOURCES not in {int(k.api_key) for k in conn.api_versions().body.api_keys}
        conn.send_request(ApiKey.LIST_CONFIG_RESOURCES, 1, {"resource_types": []})
        assert conn.read_until_closed() == b""
    with login(server, ADMIN) as conn:
        versions = {int(k.api_key): (int(k.min_version), int(k.max_version)) for k in conn.api_versions().body.api_keys}
    assert versions[ApiKey.LIST_CONFIG_RESOURCES] == (0, 1)


def test_a_broker_only_node_lists_the_registered_brokers(cluster: Cluster) -> None:
    second = cluster.brokers[1]
    expected = sorted(str(b.cluster_node_id) for b in cluster.brokers)

    def listed() -> Any:
        admin = kafka_python_admin(second.bootstrap, Auth())
        try:
            found = admin.list_config_resources(["BROKER", "TOPIC"])
        finally:
            admin.close()
        return found if found.get("broker") == expected else None

    assert wait_for(listed, 15, "both brokers listed") == {"broker": expected}
    with connect(cluster.controller.address) as conn:
        assert ApiKey.LIST_CONFIG_RESOURCES not in {int(k.api_key) for k in conn.api_versions().body.api_keys}
