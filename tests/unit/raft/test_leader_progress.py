"""The leader's view of each replica's progress and ``RaftLeader.describe`` (what DescribeQuorum reports),
as Kafka's LeaderStateTest checks it (testDescribeQuorumWithOnlyStaticVoters, testObserverStateExpiration,
testLastCaughtUpTimeVoters), for today's single controller voter."""

from __future__ import annotations

from pathlib import Path

import pytest
from raft_helpers import CONTROLLER, LEADER_ID, fetch_request, leader_for, open_log, write_epochs

from ksteward.metadata.log import MetadataLog
from ksteward.raft.leader import OBSERVER_SESSION_TIMEOUT_MS
from ksteward.raft.progress import QuorumDescription, ReplicaProgress


@pytest.fixture
def log(tmp_path: Path) -> MetadataLog:
    with open_log(tmp_path / "leader") as log:
        write_epochs(log, [(1, 3), (2, 4)])  # log end 7, all durable
        yield log


def test_single_voter_describe_reports_leader_hw_and_observers(log: MetadataLog) -> None:
    leader = leader_for(log, epoch=2)
    assert leader.describe(1000) == QuorumDescription(
        leader_id=LEADER_ID,
        leader_epoch=2,
        high_watermark=7,
        voters=(ReplicaProgress(LEADER_ID, 7, 1000, 1000),),
        observers=(),
    )
    leader.handle_fetch(fetch_request(3, 1, leader_epoch=2, replica_id=7, max_wait_ms=0), 17, CONTROLLER, 2000)
    leader.handle_fetch(fetch_request(7, 2, leader_epoch=2, replica_id=5, max_wait_ms=0), 17, CONTROLLER, 2500)
    described = leader.describe(3000)
    assert described.high_watermark == 7
    assert described.voters == (ReplicaProgress(LEADER_ID, 7, 3000, 3000),)
    # Sorted by id; broker 7 is behind (never caught up), broker 5 fetched at the leader's end.
    assert described.observers == (ReplicaProgress(5, 7, 2500, 2500), ReplicaProgress(7, 3, 2000, -1))


def test_caught_up_time_is_the_previous_fetch_when_it_reached_the_end_seen_then(log: MetadataLog) -> None:
    """ReplicaState.updateFollowerState: a fetch at the leader end seen by the previous fetch proves the
    replica was caught up when that previous fetch arrived."""
    leader = leader_for(log, epoch=2)
    leader.handle_fetch(fetch_request(3, 1, leader_epoch=2, max_wait_ms=0), 17, CONTROLLER, 100)
    log.append([b"x"], timestamp_ms=1, leader_epoch=2)
    log.flush()  # leader end 8
    leader.handle_fetch(fetch_request(7, 2, leader_epoch=2, max_wait_ms=0), 17, CONTROLLER, 200)
    assert leader.describe(300).observers == (ReplicaProgress(7, 7, 200, 100),)


def test_observer_dropped_five_minutes_after_its_last_fetch(log: MetadataLog) -> None:
    leader = leader_for(log, epoch=2)
    leader.handle_fetch(fetch_request(7, 2, leader_epoch=2, max_wait_ms=0), 17, CONTROLLER, 10)
    assert [o.replica_id for o in leader.describe(10 + OBSERVER_SESSION_TIMEOUT_MS - 1).observers] == [7]
    assert leader.describe(10 + OBSERVER_SESSION_TIMEOUT_MS).observers == ()


def test_fetch_without_a_time_still_records_the_offset(tmp_path: Path) -> None:
    with open_log(tmp_path / "l") as log:
        write_epochs(log, [(1, 2)])
        leader = leader_for(log, epoch=1)
        leader.handle_fetch(fetch_request(1, 1, leader_epoch=1, max_wait_ms=0), 17, CONTROLLER)
        assert leader.describe(50).observers == (ReplicaProgress(7, 1, -1, -1),)
