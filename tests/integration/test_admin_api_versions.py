"""ApiVersions advertises issue 20's APIs only on the listeners where Kafka serves them (the ``listeners`` of each
API's message schema, ``ApiMessageType``), in Kafka 4.x's version ranges: on a combined node's client and
controller listeners, and on a cluster's broker-only and controller-only nodes. docs/admin-apis.md, "Which listener
serves what"."""

from __future__ import annotations

from harness import Cluster, KstewardServer
from rawkafka import connect

from ksteward.protocol.apis import ApiKey

# api key -> (versions, served on broker listeners, served on controller listeners)
KAFKA_LISTENERS = {
    ApiKey.UPDATE_FEATURES: ((0, 2), True, True),
    ApiKey.LIST_CONFIG_RESOURCES: ((0, 1), True, False),
    ApiKey.DESCRIBE_TOPIC_PARTITIONS: ((0, 0), True, False),
}


def advertised(address: tuple[str, int]) -> dict[int, tuple[int, int]]:
    with connect(address) as conn:
        body = conn.api_versions(3).body
    assert int(body.error_code) == 0
    return {int(k.api_key): (int(k.min_version), int(k.max_version)) for k in body.api_keys}


def expected(on_controller: bool) -> dict[int, tuple[int, int]]:
    return {
        key: versions
        for key, (versions, broker, controller) in KAFKA_LISTENERS.items()
        if (controller if on_controller else broker)
    }


def new_apis(versions: dict[int, tuple[int, int]]) -> dict[int, tuple[int, int]]:
    return {key: v for key, v in versions.items() if key in KAFKA_LISTENERS}


def test_combined_node_advertises_each_api_on_its_listeners(plaintext_server: KstewardServer) -> None:
    assert new_apis(advertised(plaintext_server.address)) == expected(on_controller=False)
    controller = (plaintext_server.address[0], plaintext_server.controller_port)
    assert new_apis(advertised(controller)) == expected(on_controller=True)


def test_cluster_nodes_advertise_each_api_on_their_listeners(cluster: Cluster) -> None:
    for broker in cluster.brokers:
        assert new_apis(advertised(broker.address)) == expected(on_controller=False), broker
    assert new_apis(advertised(cluster.controller.address)) == expected(on_controller=True)
