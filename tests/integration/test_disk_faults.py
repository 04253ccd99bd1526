"""A controller whose disk fails stops at once, as Kafka's does (docs/raft.md, "A voter whose disk fails"; Kafka's
raft manager sends every error of its Raft IO thread to a fatal fault handler).

Three controller-only voters, no broker, no NoOpRecord writer: only the test appends. Every voter runs with
``fsync_fault/sitecustomize.py``, which makes ``os.fsync`` fail with EIO in one process once the test creates a
file named after its pid. Kafka's clients never see the fault: the quorum keeps committing with the two voters
left.

- A follower whose fsync fails must not report the record it could not make durable: the leader counts a voter's
  fetch offset toward the high watermark. It exits with status 1, and the leader's view of it stays below that
  record.
- A leader whose fsync fails exits too, and the other two elect a leader that commits the next write. The write
  it could not make durable is committed at most once.
- A voter that cannot write ``quorum-state`` exits before it acts on the transition. Before, it kept the new state
  in memory, and granted a candidate's retried Vote with no durable record of it.
- A single combined node exits too, and starts again with every write it acknowledged.
- A broker whose write to its copy of the metadata log fails exits too (the fault site fails `os.write` as well).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import pytest
from cluster_helpers import acl_names, caught_up, create_topic_acl, topic_acl_errors
from harness import Cluster, ClusterNode, KstewardServer, ServerFactory, wait_for
from rawkafka import ConnectionClosed, quorum_partition

FAULT_SITE = Path(__file__).parent / "fsync_fault"
FATAL_LINE = "fatal: this voter"


@pytest.fixture
def faults(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Where ``fail_disk`` puts its triggers; every server started after this runs with the fault site."""
    directory = tmp_path / "faults"
    directory.mkdir()
    monkeypatch.setenv("PYTHONPATH", str(FAULT_SITE))  # the servers' environment is this one, at spawn
    monkeypatch.setenv("KSTEWARD_TEST_FSYNC_FAULT_DIR", str(directory))
    return directory


@pytest.fixture
def quorum(tmp_path: Path, faults: Path) -> Iterator[tuple[Cluster, Path]]:
    made = Cluster(tmp_path, brokers=0, controllers=3, overrides={"metadata.max.idle.interval.ms": "0"})
    try:
        yield made.start(), faults
    finally:
        made.kill()


def voter_ends(node: ClusterNode) -> dict[int, int]:
    """Each voter's log end offset as the leader ``node`` last heard it."""
    return {int(v.replica_id): int(v.log_end_offset) for v in quorum_partition(node.address).current_voters}


def fail_disk(faults: Path, node: KstewardServer, *, writes: bool = False) -> None:
    """From now on every ``os.fsync`` of ``node``'s process fails with EIO, and every ``os.write`` too if ``writes``."""
    assert node.proc is not None
    (faults / str(node.proc.pid)).write_text("write" if writes else "")


def test_a_follower_whose_fsync_fails_stops_without_reporting_the_record(quorum: tuple[Cluster, Path]) -> None:
    cluster, faults = quorum
    leader = cluster.wait_for_leader()
    wait_for(lambda: topic_acl_errors(leader, "before") == [0], 60.0, "a first write committed")
    found = wait_for(lambda: caught_up(leader), 30.0, "every voter caught up")
    assert isinstance(found, tuple)
    _, end = found
    follower = next(node for node in cluster.controllers if node is not leader)
    fail_disk(faults, follower)
    # Committed by the leader and the other follower; the failing one appends it, and its fsync fails.
    assert topic_acl_errors(leader, "lost-on-one-disk") == [0]
    assert follower.wait_exit(60.0) == 1
    log = follower.log_text()
    assert FATAL_LINE in log and "FlushLog" in log and "injected by the test" in log, follower.log_tail()
    # It never fetched past the record it could not make durable: the leader did not count it.
    assert voter_ends(leader)[follower.cluster_node_id] <= end
    assert topic_acl_errors(leader, "after") == [0]
    assert acl_names(leader) == {"after", "before", "lost-on-one-disk"}


def test_a_leader_whose_fsync_fails_stops_and_the_others_elect_a_new_one(quorum: tuple[Cluster, Path]) -> None:
    cluster, faults = quorum
    leader = cluster.wait_for_leader()
    wait_for(lambda: topic_acl_errors(leader, "before") == [0], 60.0, "a first write committed")
    epoch = int(quorum_partition(leader.address).leader_epoch)
    fail_disk(faults, leader)
    with contextlib.suppress(ConnectionClosed):  # the leader halts in the middle of this write: its outcome is open
        topic_acl_errors(leader, "unknown-outcome")
    assert leader.wait_exit(60.0) == 1
    log = leader.log_text()
    fatal = "fatal: this controller could not write or fsync its metadata log"
    assert fatal in log and "injected by the test" in log, leader.log_tail()
    successor = cluster.wait_for_leader(60.0, other_than=leader)
    assert int(quorum_partition(successor.address).leader_epoch) > epoch
    wait_for(lambda: topic_acl_errors(successor, "after") == [0], 60.0, "a write committed by the new leader")
    # DescribeAcls lists each resource once: both writes are there, and nothing but them and the open one.
    assert {"before", "after"} <= acl_names(successor) <= {"before", "after", "unknown-outcome"}


def test_a_voter_that_cannot_write_quorum_state_stops_before_it_runs(quorum: tuple[Cluster, Path]) -> None:
    """Every transition but the one into Resigned is written to ``quorum-state`` before the voter acts on it. With
    its leader gone and its fsync failing, a follower's first transition (to Prospective, before any pre-vote)
    cannot be made durable: it stops there."""
    cluster, faults = quorum
    leader = cluster.wait_for_leader()
    wait_for(lambda: topic_acl_errors(leader, "before") == [0], 60.0, "a first write committed")
    # Both followers fsynced it (a voter's fetch offset is its flushed end): no append is left to fail first.
    wait_for(lambda: len(set(voter_ends(leader).values())) == 1, 30.0, "every voter at the leader's log end")
    follower = next(node for node in cluster.controllers if node is not leader)
    fail_disk(faults, follower)
    leader.kill()
    assert follower.wait_exit(60.0) == 1
    log = follower.log_text()
    assert "fatal: this voter could not write its quorum-state file (PersistElectionState)" in log, follower.log_tail()


def test_a_single_controller_whose_fsync_fails_stops_and_restarts_with_its_writes(
    server_factory: ServerFactory, faults: Path
) -> None:
    authorizer = {"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
                  "super.users": "User:ANONYMOUS"}  # fmt: skip
    server = server_factory(overrides=authorizer).start()
    assert topic_acl_errors(server, "before") == [0]
    fail_disk(faults, server)
    with contextlib.suppress(ConnectionClosed):  # its outcome is open: the node stops in the middle of it
        topic_acl_errors(server, "unknown-outcome")
    assert server.wait_exit(60.0) == 1
    log = server.log_text()
    fatal = "fatal: this controller could not write or fsync its metadata log"
    assert fatal in log and "injected by the test" in log, server.log_tail()
    server.start()  # a new pid: its fsyncs work
    assert {"before"} <= acl_names(server) <= {"before", "unknown-outcome"}
    assert topic_acl_errors(server, "after") == [0]


def test_a_broker_whose_metadata_log_write_fails_stops(tmp_path: Path, faults: Path) -> None:
    """A broker never fsyncs its copy of the metadata log (an observer counts toward no majority), but it writes
    it: a failed write stops it as a voter's does. The controller goes on."""
    cluster = Cluster(tmp_path, brokers=1).start()
    controller, broker = cluster.controller, cluster.brokers[0]
    try:
        create_topic_acl(broker, "before")  # forwarded, then fetched into the broker's log and image
        wait_for(lambda: "before" in acl_names(broker), 30.0, "the broker's image holding the first ACL")
        fail_disk(faults, broker, writes=True)
        create_topic_acl(controller, "after")  # the controller's own log is not touched by the fault
        assert broker.wait_exit(60.0) == 1
        log = broker.log_text()
        assert "fatal: this broker could not write its metadata log (AppendBatches)" in log, broker.log_tail()
        assert "injected by the test" in log, broker.log_tail()
        assert controller.running and acl_names(controller) == {"after", "before"}
    finally:
        cluster.kill()
