"""What the cluster tests (issue 14) read from a running node: the brokers it lists, its ACLs, topics and
configs, and a quorum leader's committed log end. Shared by the cluster, quorum and disk-fault tests; the
``cluster`` fixture is in conftest.py."""

from __future__ import annotations

from clients import Auth, confluent_admin
from harness import ClusterNode, KstewardServer
from kio.schema.errors import ErrorCode
from rawkafka import connect, metadata_body, quorum_partition

from ksteward.protocol.apis import ApiKey

ANY_TOPIC_ACL = {
    "resource_type_filter": 2,  # TOPIC
    "resource_name_filter": None,
    "pattern_type_filter": 1,  # ANY
    "principal_filter": None,
    "host_filter": None,
    "operation": 1,  # ANY
    "permission_type": 1,  # ANY
}


def metadata_brokers(node: ClusterNode) -> set[int]:
    with connect(node.address) as conn:
        body = conn.request(ApiKey.METADATA, 12, metadata_body(12, [])).body
    return {int(b.node_id) for b in body.brokers}


def acl_names(node: KstewardServer) -> set[str]:
    """The names of the TOPIC ACLs the node's DescribeAcls returns."""
    with connect(node.address) as conn:
        body = conn.request(ApiKey.DESCRIBE_ACLS, 3, ANY_TOPIC_ACL).body
    assert int(body.error_code) == 0, body
    return {r.resource_name for r in body.resources}


def topic_acl_errors(node: KstewardServer, topic: str) -> list[int]:
    """CreateAcls v3 of one ALLOW READ binding for User:alice on ``topic``; the result's error codes."""
    creation = {"resource_type": 2, "resource_name": topic, "resource_pattern_type": 3, "principal": "User:alice",
                "host": "*", "operation": 3, "permission_type": 3}  # fmt: skip
    with connect(node.address) as conn:
        body = conn.request(ApiKey.CREATE_ACLS, 3, {"creations": [creation]}).body
    return [int(r.error_code) for r in body.results]


def create_topic_acl(node: ClusterNode, topic: str) -> None:
    errors = topic_acl_errors(node, topic)
    assert errors == [0], errors


def caught_up(node: ClusterNode) -> tuple[int, int] | None:
    """(epoch, log end offset) of the leader once its whole log is committed, else None."""
    partition = quorum_partition(node.address)
    if partition.error_code != ErrorCode.none:
        return None
    end = int(partition.current_voters[0].log_end_offset)  # the leader comes first
    return (int(partition.leader_epoch), end) if int(partition.high_watermark) == end else None


def topic_partitions(node: ClusterNode) -> dict[str, int]:
    admin = confluent_admin(node.bootstrap, Auth())
    metadata = admin.list_topics(timeout=10)
    return {name: len(t.partitions) for name, t in metadata.topics.items()}


def topic_config(node: ClusterNode, topic: str, key: str) -> str | None:
    from confluent_kafka.admin import ConfigResource, ResourceType

    resource = ConfigResource(ResourceType.TOPIC, topic)
    admin = confluent_admin(node.bootstrap, Auth())
    entries = admin.describe_configs([resource])[resource].result(10)
    return entries[key].value if key in entries else None
