"""DescribeQuorum and ``ksteward metadata quorum describe`` on a quorum of three controllers (issue 18): only the
leader describes the quorum, the other voters answer NOT_LEADER_OR_FOLLOWER as Kafka's
``KafkaRaftClient.handleDescribeQuorumRequest`` does, a broker forwards to whichever leads, and after the leader
is killed the answer names the new one in a higher epoch. AddRaftVoter and RemoveRaftVoter on the same quorum
(KIP-853 at kraft.version 0): refused by the leader, forwarded by brokers."""

from __future__ import annotations

import datetime
import importlib.util
import inspect
import signal
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from harness import Cluster, ClusterNode, ksteward_cli, wait_for
from kio.schema.errors import ErrorCode
from rawkafka import connect, quorum_partition

from ksteward.protocol.apis import ApiKey

# The voters' server side and the harness's Cluster(controllers=N) come with the quorum piece of issue 18.
if (
    importlib.util.find_spec("ksteward.server.quorum") is None
    or "controllers" not in inspect.signature(Cluster).parameters
):
    pytest.skip("needs the controller quorum (ksteward.server.quorum, Cluster(controllers=N))", allow_module_level=True)


def settled(cluster: Cluster, controllers: list[ClusterNode]) -> tuple[ClusterNode, Any] | None:
    """The one of ``controllers`` that describes the quorum, once the others and every broker fetched from it
    (a voter that is not running never does); else None."""
    running = {c.cluster_node_id for c in controllers}
    for node in controllers:
        partition = quorum_partition(node.address)
        if partition.error_code != ErrorCode.none:
            continue
        fetched = all(v.last_fetch_timestamp > 0 for v in partition.current_voters if v.replica_id in running)
        observers = {int(o.replica_id) for o in partition.observers}
        if fetched and observers == {b.cluster_node_id for b in cluster.brokers}:
            return node, partition
    return None


@pytest.fixture
def quorum(tmp_path: Path) -> Iterator[Cluster]:
    made = Cluster(tmp_path, brokers=2, controllers=3)  # type: ignore[call-arg]  # with the quorum piece
    try:
        yield made.start()
    finally:
        made.kill()


def test_only_the_leader_describes_and_a_new_leader_after_a_kill(quorum: Cluster) -> None:
    controllers = list(quorum.controllers)  # type: ignore[attr-defined]
    found = wait_for(lambda: settled(quorum, controllers), 30.0, "a leader every voter and broker fetched from")
    assert isinstance(found, tuple)
    leader, partition = found
    assert partition.leader_id == leader.cluster_node_id
    assert int(partition.current_voters[0].replica_id) == leader.cluster_node_id  # the leader first
    assert sorted(int(v.replica_id) for v in partition.current_voters) == [1, 2, 3]
    for other in controllers:
        if other is not leader:
            refused = quorum_partition(other.address)
            assert (refused.error_code, refused.current_voters) == (ErrorCode.not_leader_or_follower, ())
    forwarded = quorum_partition(quorum.brokers[0].address)
    assert (forwarded.error_code, forwarded.leader_id) == (ErrorCode.none, leader.cluster_node_id)

    everyone = ",".join(c.bootstrap for c in controllers)
    status = ksteward_cli("metadata", "quorum", "--bootstrap-controller", everyone, "describe", "--status")
    assert status.returncode == 0, status.stderr
    lines = status.stdout.splitlines()
    assert lines[1] == f"LeaderId:               {leader.cluster_node_id}"
    assert lines[6].count('"id"') == 3 and lines[7] == 'CurrentObservers:       [{"id": 4}, {"id": 5}]'
    replication = ksteward_cli("metadata", "quorum", "--bootstrap-server", quorum.brokers[1].bootstrap,
                               "describe", "--replication")  # fmt: skip
    assert replication.returncode == 0, replication.stderr
    statuses = [line.rstrip("\t").split("\t")[-1].strip() for line in replication.stdout.splitlines()[1:]]
    assert statuses == ["Leader", "Follower", "Follower", "Observer", "Observer"]

    epoch = partition.leader_epoch
    leader.send_signal(signal.SIGKILL)
    survivors = [c for c in controllers if c is not leader]
    after = wait_for(lambda: settled(quorum, survivors) if all(c.running for c in survivors) else None, 60.0,
                     "a new leader after the kill")  # fmt: skip
    assert isinstance(after, tuple)
    new_leader, described = after
    assert new_leader is not leader and described.leader_epoch > epoch
    broker = quorum.brokers[0].address
    by_broker = wait_for(lambda: quorum_partition(broker).leader_id == new_leader.cluster_node_id, 60.0,
                         "the broker forwarding to the new leader")  # fmt: skip
    assert by_broker


def voter_change(node: ClusterNode, api_key: int) -> tuple[int, str | None]:
    values: dict[str, Any] = {"cluster_id": None, "voter_id": 3, "voter_directory_id": uuid.UUID(int=9)}
    if api_key == ApiKey.ADD_RAFT_VOTER:
        values.update(voter_id=4, timeout=datetime.timedelta(seconds=30), ack_when_committed=True,
                      listeners=[{"name": "CONTROLLER", "host": "127.0.0.1", "port": 1}])  # fmt: skip
    with connect(node.address) as conn:
        body = conn.request(api_key, 1 if api_key == ApiKey.ADD_RAFT_VOTER else 0, values).body
    return int(body.error_code), body.error_message


def test_a_static_quorum_refuses_voter_changes_on_the_leader_and_through_a_broker(quorum: Cluster) -> None:
    """KIP-853 on a quorum at kraft.version 0: the leader answers UNSUPPORTED_VERSION with Kafka's message, the
    other voters NOT_LEADER_OR_FOLLOWER, and a broker forwards both RPCs to the leader (KafkaApis
    ``forwardToControllerOrFail``); ``metadata quorum remove-controller`` finds the leader among the controllers."""
    controllers = list(quorum.controllers)  # type: ignore[attr-defined]
    found = wait_for(lambda: settled(quorum, controllers), 30.0, "a leader every voter and broker fetched from")
    assert isinstance(found, tuple)
    leader = found[0]
    adding = (int(ErrorCode.unsupported_version),
              "Cluster doesn't support adding voter because the kraft.version feature is 0")  # fmt: skip
    removing = (int(ErrorCode.unsupported_version),
                "Cluster doesn't support removing voter because the kraft.version feature is 0")  # fmt: skip
    assert voter_change(leader, ApiKey.ADD_RAFT_VOTER) == adding
    assert voter_change(leader, ApiKey.REMOVE_RAFT_VOTER) == removing
    for other in controllers:
        if other is not leader:
            for api_key in (ApiKey.ADD_RAFT_VOTER, ApiKey.REMOVE_RAFT_VOTER):
                assert voter_change(other, api_key) == (int(ErrorCode.not_leader_or_follower), None)
    for broker in quorum.brokers:
        assert voter_change(broker, ApiKey.ADD_RAFT_VOTER) == adding
        assert voter_change(broker, ApiKey.REMOVE_RAFT_VOTER) == removing

    everyone = ",".join(c.bootstrap for c in controllers)
    removed = ksteward_cli("metadata", "quorum", "--bootstrap-controller", everyone, "remove-controller",
                           "-i", "3", "-d", "AAAAAAAAAAAAAAAAAAAACQ")  # fmt: skip
    assert removed.returncode == 1
    assert removed.stderr.strip() == f"ksteward metadata quorum remove-controller: UNSUPPORTED_VERSION: {removing[1]}"


def describe_cluster(address: tuple[str, int], api_version: int, endpoint_type: int) -> Any:
    values: dict[str, Any] = {"include_cluster_authorized_operations": False}
    if api_version >= 1:
        values["endpoint_type"] = endpoint_type
    if api_version >= 2:
        values["include_fenced_brokers"] = False
    with connect(address) as conn:
        return conn.request(ApiKey.DESCRIBE_CLUSTER, api_version, values).body


def test_describe_cluster_lists_the_controllers_and_the_active_one_on_each_controller(quorum: Cluster) -> None:
    """KIP-919's DescribeCluster with EndpointType CONTROLLER (2), which an admin client on
    ``bootstrap.controllers`` sends (Kafka's ``ControllerApis.handleDescribeCluster``): every voter lists the three
    controllers at their addresses and names the Raft leader; the other endpoint type is refused with Kafka's
    error on either kind of listener. Before, a controller answered only BROKER (2 was UNSUPPORTED_ENDPOINT_TYPE)."""
    controllers = list(quorum.controllers)  # type: ignore[attr-defined]
    leader = quorum.wait_for_leader()
    listed = sorted((c.cluster_node_id, "127.0.0.1", c.port) for c in controllers)

    def answers() -> list[Any] | None:
        bodies = [describe_cluster(c.address, 2, 2) for c in controllers]
        return bodies if all(int(b.controller_id) == leader.cluster_node_id for b in bodies) else None

    bodies = wait_for(answers, 30.0, "every voter to name the leader in DescribeCluster")
    assert isinstance(bodies, list)
    for body in bodies:
        assert (body.error_code, body.endpoint_type, body.cluster_id) == (ErrorCode.none, 2, quorum.cluster_id)
        assert sorted((int(b.broker_id), b.host, int(b.port)) for b in body.brokers) == listed
        assert all(b.rack is None and not b.is_fenced for b in body.brokers)
    mismatched = describe_cluster(leader.address, 1, 1)
    assert (mismatched.error_code, mismatched.error_message) == (
        ErrorCode.mismatched_endpoint_type,
        "The request was sent to an endpoint of type CONTROLLER, but we wanted an endpoint of type BROKER",
    )
    assert describe_cluster(leader.address, 0, 1).error_code == ErrorCode.invalid_request  # v0 means BROKER
    unknown = describe_cluster(leader.address, 1, 7)
    assert (unknown.error_code, unknown.error_message) == (ErrorCode.unsupported_endpoint_type,
                                                           "Unsupported endpoint type 7")  # fmt: skip
    broker = quorum.brokers[0]
    refused = describe_cluster(broker.address, 2, 2)
    assert (refused.error_code, refused.error_message) == (
        ErrorCode.mismatched_endpoint_type,
        "The request was sent to an endpoint of type BROKER, but we wanted an endpoint of type CONTROLLER",
    )
    everyone = sorted(b.cluster_node_id for b in quorum.brokers)

    def lists_every_broker() -> Any:  # the other broker's unfencing may reach this one's image a moment later
        body = describe_cluster(broker.address, 2, 1)
        return body if sorted(int(b.broker_id) for b in body.brokers) == everyone else None

    brokers = wait_for(lists_every_broker, 20.0, "the broker's DescribeCluster to list every broker")
    assert brokers.error_code == ErrorCode.none
    assert int(brokers.controller_id) in {b.cluster_node_id for b in quorum.brokers}  # a random live broker


def test_the_cli_on_one_follower_finds_the_leader_and_each_controllers_configs(quorum: Cluster) -> None:
    """Through DescribeCluster (EndpointType CONTROLLER), as Kafka's admin client on ``bootstrap.controllers``:
    ``metadata quorum --bootstrap-controller`` naming one follower asks the leader, and ``configs`` describes each
    controller's configs at that controller. Before, the first said no controller that leads answered, and the
    second failed on DescribeCluster."""
    leader = quorum.wait_for_leader()
    follower = next(c for c in quorum.controllers if c is not leader)  # type: ignore[attr-defined]
    at = f"127.0.0.1:{follower.port}"

    def status() -> str | None:
        result = ksteward_cli("metadata", "quorum", "--bootstrap-controller", at, "describe", "--status")
        return result.stdout if result.returncode == 0 else None

    lines = str(wait_for(status, 30.0, "the follower to name the leader")).splitlines()
    assert lines[1] == f"LeaderId:               {leader.cluster_node_id}"
    described = ksteward_cli("configs", "--bootstrap-controller", at, "--describe", "--entity-type", "brokers")
    assert described.returncode == 0, described.stderr
    assert described.stdout.splitlines() == [
        *(f"Dynamic configs for broker {c.cluster_node_id} are:" for c in quorum.controllers),  # type: ignore[attr-defined]
        "Default configs for brokers in the cluster are:",
    ]
    other = next(c for c in quorum.controllers if c not in (leader, follower))  # type: ignore[attr-defined]
    one = ksteward_cli("configs", "--bootstrap-controller", at, "--describe", "--entity-type", "brokers",
                       "--entity-name", str(other.cluster_node_id), "--all")  # fmt: skip
    assert one.returncode == 0, one.stderr
    assert f"  node.id={other.cluster_node_id} " in one.stdout
