"""Partition reassignment and leader elections on a real cluster (issue 20): one controller and brokers 2, 3 and 4,
driven by kafka-python (alter / list reassignments, elect_leaders, describe_topics), kafkajs (alter / list
reassignments), confluent-kafka (Metadata, elect_leaders) and the raw wire (DescribeTopicPartitions at each step,
errors, authorization); docs/reassignment.md."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from clients import Auth, confluent_admin, kafka_python_admin, kafkajs
from harness import Cluster, ClusterNode, KstewardServer, wait_for
from kio.schema.errors import ErrorCode
from rawkafka import connect

from ksteward.protocol.apis import ApiKey

ADMIN = Auth("PLAIN", "admin", "admin-secret")
ALICE = Auth("PLAIN", "alice", "alice-secret")
PartitionView = tuple[tuple[int, ...], tuple[int, ...], int]  # replicas, ISR, leader


@pytest.fixture
def cluster3(tmp_path: Path) -> Iterator[Cluster]:
    cluster = Cluster(tmp_path, brokers=3)
    try:
        yield cluster.start()
    finally:
        cluster.kill()


def confluent_view(node: ClusterNode, topic: str, pid: int = 0) -> PartitionView | None:
    """Replicas, ISR and leader as confluent-kafka's Metadata shows them on ``node``."""
    md = confluent_admin(node.bootstrap, Auth()).list_topics(topic=topic, timeout=10)
    p = md.topics[topic].partitions.get(pid)
    return None if p is None else (tuple(p.replicas), tuple(p.isrs), p.leader)


def kafka_python_view(node: ClusterNode, topic: str, pid: int = 0) -> PartitionView:
    admin = kafka_python_admin(node.bootstrap, Auth())
    try:
        [described] = admin.describe_topics([topic])
    finally:
        admin.close()
    p = next(p for p in described["partitions"] if p["partition_index"] == pid)
    return tuple(p["replica_nodes"]), tuple(p["isr_nodes"]), p["leader_id"]


def dtp_view(node: ClusterNode, topic: str, pid: int = 0) -> PartitionView:
    """Replicas, ISR and leader as DescribeTopicPartitions (api 75, KIP-966) shows them on ``node``."""
    with connect(node.address) as conn:
        body = conn.request(ApiKey.DESCRIBE_TOPIC_PARTITIONS, 0, {"topics": [{"name": topic}],
                                                                   "response_partition_limit": 2000,
                                                                   "cursor": None}).body  # fmt: skip
    [described] = body.topics
    p = next(p for p in described.partitions if p.partition_index == pid)
    return tuple(p.replica_nodes), tuple(p.isr_nodes), int(p.leader_id)


def leader_epoch(node: ClusterNode, topic: str) -> int:
    with connect(node.address) as conn:
        body = conn.request(ApiKey.METADATA, 12, {"topics": [{"name": topic, "topic_id": None}],
                                                  "allow_auto_topic_creation": False,
                                                  "include_topic_authorized_operations": False}).body  # fmt: skip
    return int(body.topics[0].partitions[0].leader_epoch)


def create_topic(node: ClusterNode, name: str, replicas: list[int]) -> None:
    from kafka.admin import NewTopic

    admin = kafka_python_admin(node.bootstrap, Auth())
    try:
        admin.create_topics([NewTopic(name, replica_assignments={0: replicas})])
    finally:
        admin.close()


def shows(nodes: list[ClusterNode], topic: str, view: PartitionView) -> bool:
    return all(confluent_view(n, topic) == view for n in nodes)


def wait_shows(nodes: list[ClusterNode], topic: str, view: PartitionView, what: str) -> None:
    wait_for(lambda: shows(nodes, topic, view), 20, what)


def test_a_replica_moves_and_the_isr_follows(cluster3: Cluster) -> None:
    from kafka import TopicPartition

    two, three, four = cluster3.brokers
    create_topic(two, "moving", [2])
    four.stop()  # controlled shutdown: broker 4 is fenced, so it cannot join an ISR yet
    wait_for(lambda: 4 not in {b.id for b in confluent_admin(two.bootstrap, Auth()).list_topics(timeout=10)
                               .brokers.values()}, 20, "broker 4 to leave Metadata")  # fmt: skip
    epoch_before = leader_epoch(two, "moving")
    admin = kafka_python_admin(two.bootstrap, Auth())
    tp = TopicPartition("moving", 0)
    assert admin.alter_partition_reassignments({tp: [3, 4]}) == {tp: None}
    # Broker 3 is added to the ISR by the leader (broker 2); broker 4 is down, so the move waits for it.
    step = ((3, 4, 2), (2, 3), 2)
    wait_shows([two, three], "moving", step, "the ISR to take broker 3 while broker 4 is down")
    assert kafka_python_view(three, "moving") == step
    assert dtp_view(three, "moving") == step
    assert admin.list_partition_reassignments() == {
        tp: {"replicas": [3, 4, 2], "adding_replicas": [3, 4], "removing_replicas": [2]}
    }
    assert leader_epoch(two, "moving") == epoch_before  # neither step moved the leader
    four.restart()
    done = ((3, 4), (3, 4), 3)
    wait_shows([two, three, four], "moving", done, "the move to complete once broker 4 is back")
    assert kafka_python_view(four, "moving") == done
    assert dtp_view(four, "moving") == done
    assert admin.list_partition_reassignments() == {}
    assert leader_epoch(three, "moving") == epoch_before + 1  # the removed leader handed over
    admin.close()


def test_cancel_reverts_an_ongoing_reassignment(cluster3: Cluster) -> None:
    from kafka import TopicPartition
    from kafka.errors import NoReassignmentInProgressError

    two, three, four = cluster3.brokers
    create_topic(two, "cancelled", [2, 3])
    four.stop()
    admin = kafka_python_admin(three.bootstrap, Auth())
    tp = TopicPartition("cancelled", 0)
    wait_for(lambda: admin.alter_partition_reassignments({tp: [2, 4]}) == {tp: None}, 20, "the reassignment")
    wait_shows([two, three], "cancelled", ((2, 4, 3), (2, 3), 2), "the pending move")
    # kafkajs lists it (it asks the broker Metadata names controller; the broker forwards).
    out = kafkajs({"brokers": [two.bootstrap], "action": "listPartitionReassignments", "args": {}})
    assert out["ok"], out
    assert out["result"]["topics"] == [
        {"name": "cancelled", "partitions": [
            {"partition": 0, "replicas": [2, 4, 3], "addingReplicas": [4], "removingReplicas": [3]}]}
    ]  # fmt: skip
    assert admin.alter_partition_reassignments({tp: None}) == {tp: None}
    wait_shows([two, three], "cancelled", ((2, 3), (2, 3), 2), "the cancelled move")
    assert admin.list_partition_reassignments({"cancelled": [0]}) == {}
    assert admin.alter_partition_reassignments({tp: None}) == {tp: NoReassignmentInProgressError}
    # kafkajs's own call (a flexible request; kafkajs misreads response header tags, and gets none it did not ask for).
    moves = [{"topic": "cancelled", "partitionAssignment": [{"partition": 0, "replicas": [2, 4]}]}]
    out = kafkajs({"brokers": [two.bootstrap], "action": "alterPartitionReassignments", "args": {"topics": moves}})
    assert out["ok"], out
    wait_shows([two, three], "cancelled", ((2, 4, 3), (2, 3), 2), "kafkajs's pending move")
    assert admin.alter_partition_reassignments({tp: None}) == {tp: None}
    admin.close()


def reassign_raw(node: ClusterNode, topic: str, pid: int, replicas: list[int] | None) -> tuple[int, str | None]:
    with connect(node.address) as conn:
        body = conn.request(ApiKey.ALTER_PARTITION_REASSIGNMENTS, 0, {
            "timeout": timedelta(seconds=10),
            "topics": [{"name": topic, "partitions": [{"partition_index": pid, "replicas": replicas}]}],
        }).body  # fmt: skip
    assert int(body.error_code) == 0
    partition = body.responses[0].partitions[0]
    return int(partition.error_code), partition.error_message


def test_reassignment_errors_through_a_broker(cluster3: Cluster) -> None:
    two, three, _ = cluster3.brokers
    create_topic(two, "errs", [2])
    assert reassign_raw(three, "nope", 0, [2]) == (
        ErrorCode.unknown_topic_or_partition,
        "Unable to find a topic named nope.",
    )
    assert reassign_raw(three, "errs", 3, [2]) == (
        ErrorCode.unknown_topic_or_partition,
        "Unable to find partition errs:3.",
    )
    assert reassign_raw(three, "errs", 0, [2, 9]) == (
        ErrorCode.invalid_replica_assignment,
        "The manual partition assignment includes broker 9, but no such broker is registered.",
    )
    assert reassign_raw(three, "errs", 0, [3, 3])[0] == ErrorCode.invalid_replica_assignment
    assert reassign_raw(three, "errs", 0, [])[0] == ErrorCode.invalid_replica_assignment
    assert reassign_raw(three, "errs", 0, None) == (
        ErrorCode.no_reassignment_in_progress,
        "No partition reassignment is in progress.",
    )
    assert confluent_view(two, "errs") == ((2,), (2,), 2)  # nothing changed
    # Asked for (-1: nothing to wait for), the read-your-writes offset tags the answer to the mutation, not the
    # list (a read).
    with connect(three.address) as conn:
        altered = conn.request(ApiKey.ALTER_PARTITION_REASSIGNMENTS, 0, {"timeout": SECOND, "topics": [
            {"name": "errs", "partitions": [{"partition_index": 0, "replicas": [2]}]}]}, min_offset=-1)  # fmt: skip
        listed = conn.request(ApiKey.LIST_PARTITION_REASSIGNMENTS, 0, {"timeout": SECOND, "topics": None},
                              min_offset=-1)  # fmt: skip
    assert altered.metadata_offset is not None and listed.metadata_offset is None


def test_preferred_election_after_a_leader_change(cluster3: Cluster) -> None:
    from confluent_kafka import ElectionType, TopicPartition

    two, three, four = cluster3.brokers
    create_topic(three, "pref", [2, 3])
    two.stop()  # leadership moves to broker 3, which stays the leader when broker 2 comes back
    wait_shows([three, four], "pref", ((2, 3), (3,), 3), "broker 3 to lead")
    two.restart()
    wait_shows([two, three, four], "pref", ((2, 3), (3, 2), 3), "broker 2 back in the ISR")
    admin = confluent_admin(four.bootstrap, Auth())
    tp = TopicPartition("pref", 0)
    result = admin.elect_leaders(ElectionType.PREFERRED, [tp]).result(10)
    assert {(t.topic, t.partition, t.error) for t in result} == {("pref", 0, None)}
    wait_shows([two, three, four], "pref", ((2, 3), (3, 2), 2), "the preferred replica to lead")
    again = admin.elect_leaders(ElectionType.PREFERRED, [tp]).result(10)
    assert [t.error.code() for t in again] == [ErrorCode.election_not_needed]
    unknown = admin.elect_leaders(ElectionType.PREFERRED, [TopicPartition("pref", 5)]).result(10)
    assert [t.error.code() for t in unknown] == [ErrorCode.unknown_topic_or_partition]


def test_unclean_election(cluster3: Cluster) -> None:
    from kafka.errors import PreferredLeaderNotAvailableError

    two, three, four = cluster3.brokers
    create_topic(two, "unclean", [3, 4])
    three.stop()
    wait_shows([two], "unclean", ((3, 4), (4,), 4), "broker 4 to lead")
    four.stop()  # the last in-sync replica stays in the ISR of a leaderless partition
    wait_shows([two], "unclean", ((3, 4), (4,), -1), "no leader")
    three.restart()  # back, but out of the ISR: a clean election cannot pick it
    wait_for(lambda: confluent_view(three, "unclean") == ((3, 4), (4,), -1), 20, "broker 3 to see no leader")
    admin = kafka_python_admin(two.bootstrap, Auth())
    response = admin.elect_leaders(0, {"unclean": [0]}, raise_errors=False)
    assert [p.error_code for r in response.replica_election_results for p in r.partition_result] == [
        PreferredLeaderNotAvailableError.errno
    ]
    response = admin.elect_leaders(1, {"unclean": [0]})
    assert [p.error_code for r in response.replica_election_results for p in r.partition_result] == [0]
    wait_shows([two, three], "unclean", ((3, 4), (3,), 3), "broker 3 to lead uncleanly")
    four.restart()  # the leader (recovered at once: no log) takes broker 4 back into the ISR
    wait_shows([two, three, four], "unclean", ((3, 4), (3, 4), 3), "broker 4 back in the ISR")
    admin.close()


# --- authorization (a SASL combined node: alice has no ACL, admin is a super user) ---------------------------


def sasl_raw(server: KstewardServer, auth: Auth, api_key: int, version: int, body: dict[str, Any]) -> Any:
    with connect(server.address) as conn:
        conn.api_versions()
        assert int(conn.sasl_plain(auth.username or "", auth.password or "").body.error_code) == 0
        return conn.request(api_key, version, body).body


SECOND = timedelta(seconds=1)
REASSIGN = {
    "timeout": timedelta(seconds=1),
    "topics": [{"name": "t", "partitions": [{"partition_index": 0, "replicas": [1]}]}],
}
LIST = {"timeout": SECOND, "topics": None}
ELECT = {"election_type": 0, "topic_partitions": [{"topic": "t", "partitions": [0]}], "timeout": SECOND}


def grant_cluster(server: KstewardServer, operation: str) -> None:
    from kafka.admin import ACL, ACLOperation, ACLPermissionType, ACLResourcePatternType, ResourcePattern, ResourceType

    admin = kafka_python_admin(server.bootstrap, ADMIN)
    acl = ACL("User:alice", "*", getattr(ACLOperation, operation), ACLPermissionType.ALLOW,
              ResourcePattern(ResourceType.CLUSTER, "kafka-cluster", ACLResourcePatternType.LITERAL))  # fmt: skip
    result = admin.create_acls([acl])
    assert not result["failed"], result
    admin.close()


def test_authorization(sasl_server: KstewardServer) -> None:
    denied = int(ErrorCode.cluster_authorization_failed)
    body = sasl_raw(sasl_server, ALICE, ApiKey.ALTER_PARTITION_REASSIGNMENTS, 0, REASSIGN)
    assert int(body.error_code) == denied and int(body.responses[0].partitions[0].error_code) == denied
    assert int(sasl_raw(sasl_server, ALICE, ApiKey.LIST_PARTITION_REASSIGNMENTS, 0, LIST).error_code) == denied
    body = sasl_raw(sasl_server, ALICE, ApiKey.ELECT_LEADERS, 2, ELECT)
    assert int(body.error_code) == denied
    assert int(body.replica_election_results[0].partition_result[0].error_code) == denied
    grant_cluster(sasl_server, "DESCRIBE")  # listing needs DESCRIBE, changing needs ALTER
    body = sasl_raw(sasl_server, ALICE, ApiKey.LIST_PARTITION_REASSIGNMENTS, 0, LIST)
    assert int(body.error_code) == 0 and list(body.topics) == []
    assert int(sasl_raw(sasl_server, ALICE, ApiKey.ALTER_PARTITION_REASSIGNMENTS, 0, REASSIGN).error_code) == denied
    grant_cluster(sasl_server, "ALTER")
    body = sasl_raw(sasl_server, ALICE, ApiKey.ALTER_PARTITION_REASSIGNMENTS, 0, REASSIGN)
    assert int(body.error_code) == 0
    assert int(body.responses[0].partitions[0].error_code) == ErrorCode.unknown_topic_or_partition
    body = sasl_raw(sasl_server, ALICE, ApiKey.ELECT_LEADERS, 2, ELECT)
    assert int(body.replica_election_results[0].partition_result[0].error_code) == ErrorCode.unknown_topic_or_partition
    # AlterPartition is a broker's request: only on the controller listener, with CLUSTER_ACTION (ANONYMOUS has not).
    with connect(("localhost", sasl_server.controller_port)) as conn:
        body = conn.request(ApiKey.ALTER_PARTITION, 3, {"broker_id": 1, "broker_epoch": 0, "topics": [
            {"topic_id": uuid.uuid4(), "partitions": []}]}).body  # fmt: skip
        assert int(body.error_code) == denied and list(body.topics) == []
    with connect(sasl_server.address) as conn:  # a client listener does not serve it at all
        versions = {int(k.api_key) for k in conn.api_versions().body.api_keys}
    assert ApiKey.ALTER_PARTITION not in versions
    assert {ApiKey.ELECT_LEADERS, ApiKey.ALTER_PARTITION_REASSIGNMENTS, ApiKey.LIST_PARTITION_REASSIGNMENTS} <= versions
