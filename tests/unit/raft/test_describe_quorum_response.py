"""DescribeQuorum's answer (Kafka's ``KafkaRaftClient.handleDescribeQuorumRequest``): the leader's view in each
version's shape, UNKNOWN_TOPIC_OR_PARTITION for anything but ``__cluster_metadata-0``, NOT_LEADER_OR_FOLLOWER
from a replica that does not lead, and which node's view the server handler reads."""

from __future__ import annotations

import uuid
from types import SimpleNamespace
from typing import Any

import pytest
from kio.schema.errors import ErrorCode

from ksteward.configs.server_config import parse_server_config
from ksteward.protocol.apis import ApiKey
from ksteward.protocol.build import build
from ksteward.protocol.codec import decode_response, encode_response, request_class
from ksteward.raft.describe_quorum import (
    NOT_LEADER_MESSAGE,
    UNKNOWN_PARTITION_MESSAGE,
    VoterNode,
    describe_quorum_response,
    top_level_error,
)
from ksteward.raft.progress import QuorumDescription, ReplicaProgress
from ksteward.server.describe_quorum import on_wall_clock, quorum_provider, voter_nodes

DIRECTORY = uuid.UUID(int=0xABC)
VIEW = QuorumDescription(
    leader_id=1,
    leader_epoch=7,
    high_watermark=120,
    voters=(
        ReplicaProgress(1, 125, 5_000, 5_000),
        ReplicaProgress(2, 120, 4_900, 4_800, DIRECTORY),
        ReplicaProgress(3),
    ),
    observers=(ReplicaProgress(11, 118, 4_950, 4_700),),
)
NODES = (VoterNode(1, (("CONTROLLER", "c1", 9093),)), VoterNode(2, (("CONTROLLER", "c2", 9094),)))


def request(version: int, topics: list[tuple[str, list[int]]]) -> Any:
    values = {"topics": [{"topic_name": t, "partitions": [{"partition_index": p} for p in ps]} for t, ps in topics]}
    return build(request_class(ApiKey.DESCRIBE_QUORUM, version), values)


def on_the_wire(response: Any, version: int) -> Any:
    """Encode and decode, so the test sees what a client reads."""
    frame = encode_response(ApiKey.DESCRIBE_QUORUM, version, 5, response)
    return decode_response(ApiKey.DESCRIBE_QUORUM, version, frame[4:]).body


def replicas(states: Any) -> list[tuple[Any, ...]]:
    fields = (
        "replica_id",
        "log_end_offset",
        "last_fetch_timestamp",
        "last_caught_up_timestamp",
        "replica_directory_id",
    )
    return [tuple(getattr(s, f, None) for f in fields) for s in states]


METADATA = [("__cluster_metadata", [0])]


def test_the_leader_reports_voters_observers_and_nodes_in_v2() -> None:
    body = on_the_wire(describe_quorum_response(request(2, METADATA), 2, VIEW, NODES), 2)
    assert (body.error_code, len(body.topics)) == (ErrorCode.none, 1)
    topic = body.topics[0]
    assert topic.topic_name == "__cluster_metadata"
    (partition,) = topic.partitions
    assert (partition.partition_index, partition.error_code, partition.error_message) == (0, ErrorCode.none, None)
    assert (partition.leader_id, partition.leader_epoch, partition.high_watermark) == (1, 7, 120)
    assert replicas(partition.current_voters) == [
        (1, 125, 5_000, 5_000, None),
        (2, 120, 4_900, 4_800, DIRECTORY),
        (3, -1, -1, -1, None),
    ]  # fmt: skip  (kio reads Uuid.ZERO_UUID, ReplicaProgress's NO_DIRECTORY_ID, as None)
    assert replicas(partition.observers) == [(11, 118, 4_950, 4_700, None)]
    nodes = [(n.node_id, [(listener.name, listener.host, int(listener.port)) for listener in n.listeners])
             for n in body.nodes]  # fmt: skip
    assert nodes == [(1, [("CONTROLLER", "c1", 9093)]), (2, [("CONTROLLER", "c2", 9094)])]


def test_v1_has_the_timestamps_and_v0_only_the_log_end_offsets() -> None:
    v1 = on_the_wire(describe_quorum_response(request(1, METADATA), 1, VIEW, NODES), 1).topics[0].partitions[0]
    assert replicas(v1.observers) == [(11, 118, 4_950, 4_700, None)]
    v0 = on_the_wire(describe_quorum_response(request(0, METADATA), 0, VIEW, NODES), 0).topics[0].partitions[0]
    assert replicas(v0.current_voters) == [
        (1, 125, None, None, None),
        (2, 120, None, None, None),
        (3, -1, None, None, None),
    ]
    assert v0.high_watermark == 120


@pytest.mark.parametrize(
    "topics",
    [
        [("__cluster_metadata", [1])],
        [("orders", [0])],
        [("__cluster_metadata", [0, 1])],
        [("__cluster_metadata", [0]), ("orders", [2])],
    ],
)
def test_anything_but_the_metadata_partition_is_unknown(topics: list[tuple[str, list[int]]]) -> None:
    body = on_the_wire(describe_quorum_response(request(2, topics), 2, VIEW, NODES), 2)
    assert body.error_code == ErrorCode.none
    assert body.nodes == ()
    answered = [
        (t.topic_name, p.partition_index, p.error_code, p.error_message) for t in body.topics for p in t.partitions
    ]
    asked = [(t, p, ErrorCode.unknown_topic_or_partition, UNKNOWN_PARTITION_MESSAGE) for t, ps in topics for p in ps]
    assert answered == asked


def test_no_topics_at_all_is_answered_with_no_partitions() -> None:
    body = on_the_wire(describe_quorum_response(request(2, []), 2, VIEW, NODES), 2)
    assert (body.error_code, body.topics) == (ErrorCode.none, ())


def test_a_replica_that_does_not_lead_answers_not_leader_or_follower() -> None:
    body = on_the_wire(describe_quorum_response(request(2, METADATA), 2, None, NODES), 2)
    assert body.error_code == ErrorCode.none
    (partition,) = body.topics[0].partitions
    assert (partition.error_code, partition.error_message) == (ErrorCode.not_leader_or_follower, NOT_LEADER_MESSAGE)
    assert (partition.current_voters, partition.observers) == ((), ())


def test_a_denied_request_gets_the_top_level_error_alone() -> None:
    body = on_the_wire(top_level_error(2, ErrorCode.cluster_authorization_failed, "denied"), 2)
    assert (body.error_code, body.error_message, body.topics, body.nodes) == (
        ErrorCode.cluster_authorization_failed, "denied", (), ()
    )  # fmt: skip


class _Leader:
    def __init__(self) -> None:
        self.asked_at: list[int] = []

    def describe(self, now_ms: int) -> QuorumDescription:
        self.asked_at.append(now_ms)
        return VIEW


def test_the_provider_reads_the_voter_of_a_quorum_and_none_when_it_does_not_lead() -> None:
    leader = _Leader()
    voter = SimpleNamespace(leader=leader)
    provide = quorum_provider(SimpleNamespace(quorum=SimpleNamespace(voter=voter)))  # type: ignore[arg-type]
    described = provide()
    assert described is not None and described.voters[0].last_fetch_timestamp_ms > 1_600_000_000_000  # wall clock
    assert (described.leader_id, described.high_watermark, described.observers[0].log_end_offset) == (1, 120, 118)
    voter.leader = None
    assert provide() is None


def test_the_provider_reads_the_single_voter_otherwise() -> None:
    leader = _Leader()
    node = SimpleNamespace(quorum=None, raft_service=SimpleNamespace(leader=leader))
    described = quorum_provider(node)()  # type: ignore[arg-type]
    assert described is not None and described.leader_epoch == 7 and len(leader.asked_at) == 1


BASE = {"node.id": "1", "process.roles": "controller", "controller.listener.names": "CONTROLLER",
        "metadata.log.dir": "/nonexistent"}  # fmt: skip


def test_nodes_are_the_static_voters_on_the_first_controller_listener() -> None:
    config = parse_server_config({**BASE, "listeners": "CONTROLLER://127.0.0.1:9093",
                                  "controller.quorum.voters": "1@127.0.0.1:9093,2@h2:9094,3@h3:9095"})  # fmt: skip
    assert voter_nodes(config) == (
        VoterNode(1, (("CONTROLLER", "127.0.0.1", 9093),)),
        VoterNode(2, (("CONTROLLER", "h2", 9094),)),
        VoterNode(3, (("CONTROLLER", "h3", 9095),)),
    )


def test_a_lone_controller_without_voters_reports_its_own_listener() -> None:
    config = parse_server_config({**BASE, "listeners": "CONTROLLER://127.0.0.1:9093"})
    assert voter_nodes(config) == (VoterNode(1, (("CONTROLLER", "127.0.0.1", 9093),)),)


def test_timestamps_move_from_the_leaders_clock_to_the_wall_clock() -> None:
    view = QuorumDescription(
        1, 2, 10, (ReplicaProgress(1, 10, 5_000, 5_000), ReplicaProgress(2, 9, 4_000, -1)), (ReplicaProgress(4, 3),)
    )
    moved = on_wall_clock(view, clock_now_ms=5_000, wall_now_ms=1_700_000_000_000)
    assert moved.voters == (
        ReplicaProgress(1, 10, 1_700_000_000_000, 1_700_000_000_000),
        ReplicaProgress(2, 9, 1_699_999_999_000, -1),
    )
    assert moved.observers == (ReplicaProgress(4, 3),)  # unknown stays -1
    assert (moved.leader_id, moved.leader_epoch, moved.high_watermark) == (1, 2, 10)
