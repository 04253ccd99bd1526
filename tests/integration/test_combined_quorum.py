"""Three combined nodes (``process.roles=broker,controller``) in one quorum: Kafka's combined mode
(``server.combined_quorum``), as real processes on loopback, driven by real clients."""

from __future__ import annotations

from pathlib import Path

from clients import Auth, confluent_admin, kafka_python_admin
from cluster_helpers import acl_names, create_topic_acl, metadata_brokers
from harness import Cluster, ClusterNode, wait_for


def _others(cluster: Cluster, node: ClusterNode) -> list[ClusterNode]:
    return [n for n in cluster.controllers if n is not node]


def _bootstrap(nodes: list[ClusterNode]) -> str:
    return ",".join(n.bootstrap for n in nodes)


def test_combined_voters_serve_clients_forward_to_the_leader_and_outlive_it(tmp_path: Path) -> None:
    from confluent_kafka.admin import (
        AclBinding,
        AclOperation,
        AclPermissionType,
        NewTopic,
        ResourcePatternType,
        ResourceType,
    )

    cluster = Cluster(tmp_path, brokers=0, controllers=3, combined=True).start()
    try:
        everyone = {1, 2, 3}
        leader = cluster.wait_for_leader()
        # Each node's broker registered with the active controller and was unfenced: every node lists all three.
        for node in cluster.controllers:
            wait_for(lambda node=node: metadata_brokers(node) == everyone, 20.0, f"{node.name} lists 3 brokers")

        # Writes sent to a node that does not lead are forwarded to the one that does (confluent-kafka).
        standbys = _others(cluster, leader)
        admin = confluent_admin(standbys[0].bootstrap, Auth())
        admin.create_topics([NewTopic("orders", 3, 3)])["orders"].result(15)
        binding = AclBinding(ResourceType.TOPIC, "orders", ResourcePatternType.LITERAL, "User:alice", "*",
                             AclOperation.READ, AclPermissionType.ALLOW)  # fmt: skip
        admin.create_acls([binding])[binding].result(15)
        # Every node answers reads from its own committed image (kafka-python).
        for node in cluster.controllers:
            wait_for(lambda node=node: "orders" in acl_names(node), 20.0, f"{node.name} has the ACL")
            reader = kafka_python_admin(node.bootstrap, Auth())
            try:
                wait_for(lambda reader=reader: "orders" in reader.list_topics(), 20.0, f"{node.name} lists orders")
            finally:
                reader.close()

        # The active controller's process dies: the other two elect a leader, fence the dead broker and take writes.
        leader.kill()
        new_leader = cluster.wait_for_leader(other_than=leader)
        survivors = _others(cluster, leader)
        create_topic_acl(next(n for n in survivors if n is not new_leader), "after-failover")
        for node in survivors:
            wait_for(lambda node=node: metadata_brokers(node) == everyone - {leader.cluster_node_id}, 20.0,
                     f"{node.name} fenced broker {leader.cluster_node_id}")  # fmt: skip
            wait_for(lambda node=node: "after-failover" in acl_names(node), 20.0, f"{node.name} has the new ACL")

        # The killed node comes back as a voter and a broker, with everything committed while it was away.
        leader.restart()
        wait_for(lambda: metadata_brokers(leader) == everyone, 20.0, "the restarted node lists 3 brokers")
        wait_for(lambda: "after-failover" in acl_names(leader), 20.0, "the restarted node has the new ACL")
        topics = confluent_admin(_bootstrap(cluster.controllers), Auth()).list_topics(timeout=10).topics
        assert len(topics["orders"].partitions) == 3

        # SIGTERM on the active controller: its broker shuts down through the controller, then it resigns.
        stopping = cluster.wait_for_leader()
        mark = stopping.log_size()
        assert stopping.stop() == 0
        log = stopping.log_text()[mark:]
        assert "controlled shutdown complete" in log, log[-3000:]
        assert "resigns as leader" in log, log[-3000:]
        cluster.wait_for_leader(other_than=stopping)
        rest = _others(cluster, stopping)
        create_topic_acl(rest[0], "after-resignation")
        wait_for(lambda: "after-resignation" in acl_names(rest[1]), 20.0, "the last node has the ACL")
    finally:
        cluster.kill()
