"""Fuzz the nodes of a cluster with a three-voter quorum and a broker: no input stops a node, and the cluster still
commits afterwards.

``test_fuzz_frames.py`` fuzzes a single combined node. A voter of a quorum answers the Raft RPCs (Vote,
BeginQuorumEpoch, EndQuorumEpoch, Fetch, FetchSnapshot, DescribeQuorum, AddRaftVoter, RemoveRaftVoter) through
its Raft state machine instead (``server/quorum.py``), and a broker-only node forwards admin requests to the active
controller in an Envelope (KIP-590), so both are fuzzed here too:

- **Lengths** (``wirefuzz``): every length field of every (api, version) the listener serves, made extreme, sent
  to the leader, to a follower and to the broker.
- **Values**: hypothesis fills every field of a well-formed request of a served (api, version): counts, ids,
  epochs, offsets, strings (the cluster's own id and the metadata topic's name among them, so that requests
  get past the first checks), and sends it to any voter, or to the broker. ANONYMOUS is a super user here, so
  every request is authorized and reaches its handler: a forged Vote may move the voters to a new epoch, as it
  would in Kafka.

Afterwards every node is alive, the voters elect a leader, and a write is acknowledged, straight and forwarded.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from cluster_helpers import create_topic_acl
from harness import HOST, Cluster, ClusterNode, wait_for
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rawkafka import connect, frame
from wirefuzz import FUZZ_EXAMPLES, DrawnValues, full_request, mutations, throw

from ksteward.protocol.apis import ApiKey
from ksteward.protocol.codec import request_class
from ksteward.server.api_table import broker_api_table, controller_api_table

SERVED = sorted(controller_api_table().served.items())
BROKER_SERVED = sorted(broker_api_table().served.items())
RAFT_KEYS = {
    ApiKey.FETCH,
    ApiKey.VOTE,
    ApiKey.BEGIN_QUORUM_EPOCH,
    ApiKey.END_QUORUM_EPOCH,
    ApiKey.DESCRIBE_QUORUM,
    ApiKey.FETCH_SNAPSHOT,
    ApiKey.ADD_RAFT_VOTER,
    ApiKey.REMOVE_RAFT_VOTER,
}
READ_TIMEOUT_S = 2.0  # a Fetch may be parked for its MaxWaitMs; the voter need not answer it in time


@pytest.fixture(scope="module")
def quorum(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    cluster = Cluster(tmp_path_factory.mktemp("fuzz-quorum"), brokers=1, controllers=3)
    try:
        cluster.start()
        cluster.wait_for_leader()
        yield cluster
    finally:
        cluster.kill()


def _throw(node: ClusterNode, payload: bytes) -> None:
    """One request to the node's listener (a controller's CONTROLLER, a broker's PLAINTEXT); a parked Fetch is
    not waited for past READ_TIMEOUT_S."""
    throw((HOST, node.controller_port), frame(payload), READ_TIMEOUT_S)


def _all_alive(cluster: Cluster) -> None:
    dead = [node.name for node in cluster.nodes if not node.running]
    assert not dead, f"nodes died: {dead}"


def _acknowledged(node: Callable[[], ClusterNode | None], topic: str, what: str) -> None:
    """Wait until ``node()`` acknowledges a CreateAcls: a leader may be being elected (a forged Vote may have started
    an election), answering NOT_CONTROLLER meanwhile, or a leader may just have stepped down."""

    def done() -> bool:
        target = node()
        if target is None:
            return False
        try:
            create_topic_acl(target, topic)
        except (AssertionError, OSError):
            return False
        return True

    wait_for(done, 60.0, what)


def _still_commits(cluster: Cluster) -> None:
    _acknowledged(cluster.leader, "after-fuzz", "a leader that acknowledges a write after the fuzz")


def _length_bombs(cluster: Cluster, nodes: list[ClusterNode], served: list[tuple[int, tuple[int, int]]]) -> None:
    tried = 0
    for node in nodes:
        for api_key, (low, high) in served:
            for version in range(low, high + 1):
                payload, sites = full_request(api_key, version, request_class(api_key, version))
                _throw(node, payload)
                for mutation in mutations(payload, sites):
                    _throw(node, mutation.payload)
                    tried += 1
            _all_alive(cluster)
    assert tried > 1000
    _still_commits(cluster)


def test_length_bombs_never_stop_a_voter(quorum: Cluster) -> None:
    leader = quorum.wait_for_leader()
    follower = next(node for node in quorum.controllers if node is not leader)
    _length_bombs(quorum, [leader, follower], SERVED)


def test_length_bombs_never_stop_a_broker(quorum: Cluster) -> None:
    """The broker-only node's client listener, whose admin requests it forwards to the active controller."""
    _length_bombs(quorum, quorum.brokers, BROKER_SERVED)


FUZZ_SETTINGS = settings(max_examples=FUZZ_EXAMPLES, deadline=None,
                         suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])  # fmt: skip


def _drawn_request(data: st.DataObject, cluster: Cluster, served: list[tuple[int, tuple[int, int]]]) -> bytes:
    api_key, (low, high) = data.draw(st.sampled_from(served), label="api")
    version = data.draw(st.integers(low, high), label="version")
    payload, _ = full_request(api_key, version, request_class(api_key, version), DrawnValues(data, cluster.cluster_id))
    return payload


@FUZZ_SETTINGS
@given(data=st.data())
def test_drawn_values_never_stop_a_voter(quorum: Cluster, data: st.DataObject) -> None:
    node = data.draw(st.sampled_from(quorum.controllers), label="voter")
    _throw(node, _drawn_request(data, quorum, [s for s in SERVED if s[0] in RAFT_KEYS] * 3 + SERVED))
    _all_alive(quorum)


@FUZZ_SETTINGS
@given(data=st.data())
def test_drawn_values_never_stop_a_broker(quorum: Cluster, data: st.DataObject) -> None:
    """Admin requests with drawn values, which the broker forwards to the active controller in an Envelope."""
    _throw(quorum.brokers[0], _drawn_request(data, quorum, BROKER_SERVED))
    _all_alive(quorum)


def test_the_cluster_commits_after_the_value_fuzz(quorum: Cluster) -> None:
    _all_alive(quorum)
    _still_commits(quorum)
    _acknowledged(lambda: quorum.brokers[0], "forwarded-after-fuzz", "a write forwarded by the broker after the fuzz")


def test_the_only_internal_errors_are_forged_leaders(quorum: Cluster) -> None:
    """A request that names a second leader of the current epoch is refused as ``KafkaRaftClient.maybeTransition``
    refuses it (Kafka's IllegalStateException, ksteward's RaftFatalError): the connection is closed with an ERROR
    line. Any other internal error is a bug (the unencodable epoch of test_a_forged_largest_epoch was one)."""
    for node in quorum.nodes:
        for line in node.log_text().splitlines():
            if "after an internal error: " in line:
                assert "RaftFatalError" in line.split("after an internal error: ", 1)[1], (node.name, line)


MAX_EPOCH = 2**31 - 1


def test_a_forged_largest_epoch_leaves_the_voters_up_and_their_state_readable(tmp_path: Path) -> None:
    """A Vote for the largest epoch an int32 holds, from a CLUSTER_ACTION principal, is granted as Kafka grants it.
    No election can follow that epoch: Kafka's epoch + 1 would wrap. Each voter stays up at that epoch, keeps a
    quorum-state file it can read back, and logs why it does not run, instead of writing an epoch the wire cannot
    carry and failing every answer after (as it did before)."""
    cluster = Cluster(tmp_path, brokers=0, controllers=3)
    try:
        cluster.start()
        leader = cluster.wait_for_leader()
        partition = {"partition_index": 0, "replica_epoch": MAX_EPOCH, "replica_id": leader.cluster_node_id,
                     "last_offset_epoch": 1, "last_offset": 10**6}  # fmt: skip
        body = {"cluster_id": cluster.cluster_id, "topics": [{"topic_name": "__cluster_metadata",
                                                              "partitions": [partition]}]}  # fmt: skip
        for node in cluster.controllers:
            with connect((HOST, node.controller_port)) as conn:
                answer = conn.request(ApiKey.VOTE, 0, body).body
            assert int(answer.error_code) == 0, answer

        def refused_to_run() -> bool:
            return any("cannot run for leader: epoch 2147483647" in n.log_text() for n in cluster.controllers)

        wait_for(refused_to_run, 30.0, "a voter saying it cannot run past the largest epoch")
        _all_alive(cluster)
        for node in cluster.controllers:
            state = node.quorum_state()
            assert state is not None and state["leaderEpoch"] == MAX_EPOCH, (node.name, state)
            assert "after an internal error" not in node.log_text(), node.name
    finally:
        cluster.kill()
