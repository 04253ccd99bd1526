"""A voter's ``current-state`` and ``current-vote`` as Kafka's ``KafkaRaftMetrics`` gives them."""

from __future__ import annotations

import pytest

from ksteward.raft.election import StateKind
from ksteward.server.metrics.metadata_log import current_vote, raft_state_name

NODE = 2


@pytest.mark.parametrize(
    ("kind", "voted_id", "state", "vote"),
    [
        (StateKind.LEADER, NODE, "leader", NODE),
        (StateKind.CANDIDATE, NODE, "candidate", NODE),
        (StateKind.PROSPECTIVE, -1, "prospective", -1),
        (StateKind.PROSPECTIVE, 3, "prospective-voted", 3),
        (StateKind.UNATTACHED, -1, "unattached", -1),
        (StateKind.UNATTACHED, 3, "voted", 3),
        (StateKind.FOLLOWER, 3, "follower", -1),
        (StateKind.RESIGNED, -1, "unattached", -1),
    ],
)
def test_kafkas_names(kind: StateKind, voted_id: int, state: str, vote: int) -> None:
    assert raft_state_name(kind, voted_id) == state
    assert current_vote(kind, NODE, voted_id) == vote


def test_every_state_has_a_name() -> None:
    assert all(raft_state_name(kind, -1) for kind in StateKind)


def test_election_latency_runs_from_the_first_election_state_to_a_known_leader() -> None:
    from ksteward.server.metrics.metadata_log import ElectionLatency

    latency = ElectionLatency()
    for kind, now_ms in [(StateKind.UNATTACHED, 0), (StateKind.PROSPECTIVE, 100), (StateKind.CANDIDATE, 130),
                         (StateKind.LEADER, 160), (StateKind.FOLLOWER, 500),  # learnt a new leader: no election
                         (StateKind.PROSPECTIVE, 1000), (StateKind.UNATTACHED, 1040),  # refused, still none
                         (StateKind.PROSPECTIVE, 1100), (StateKind.FOLLOWER, 1500)]:  # fmt: skip
        latency.on_state(kind, now_ms)
    assert (latency.count, latency.max_ms, latency.avg_ms) == (2, 500, 280)
