"""Kafka's seven RaftEventSimulationTest scenarios over seeded simulations of 1-5 voters and 0-5 observers
(raft_sim.py). Every event is followed by the invariant checks; every scenario ends with the committed
data checked across nodes. ``KSTEWARD_RAFT_SIM_SEEDS=N`` runs N seeds per scenario (docs/testing.md)."""

from __future__ import annotations

import os
import random

import pytest
from raft_sim import Cluster

from ksteward.raft.election import StateKind

SEEDS = int(os.environ.get("KSTEWARD_RAFT_SIM_SEEDS", "25"))


def _cluster(seed: int, min_voters: int = 1, max_voters: int = 5, *, voters: int | None = None) -> Cluster:
    rng = random.Random(seed * 7919 + min_voters)
    count = voters if voters is not None else rng.randint(min_voters, max_voters)
    return Cluster(seed, count, rng.randint(0, 5))


def _leader_id(cluster: Cluster) -> int:
    leader = cluster.leader()
    assert leader is not None
    return leader.node_id


def _finish(cluster: Cluster) -> None:
    cluster.check_committed()


@pytest.mark.parametrize("seed", range(SEEDS))
def test_can_elect_initial_leader(seed: int) -> None:
    """canElectInitialLeader: a leader is elected and every node reaches HW 10."""
    cluster = _cluster(seed)
    cluster.run_until(lambda: cluster.all_reached(10))
    assert cluster.leader() is not None
    _finish(cluster)


@pytest.mark.parametrize("graceful", [False, True], ids=["killed", "graceful"])
@pytest.mark.parametrize("seed", range(SEEDS))
def test_can_elect_new_leader_after_old_leader_failure(seed: int, graceful: bool) -> None:
    """canElectNewLeaderAfterOldLeaderFailure: the others reach HW 20, the old leader catches up +10."""
    cluster = _cluster(seed, 3)
    cluster.run_until(lambda: cluster.all_reached(10))
    old = _leader_id(cluster)
    if graceful:
        node = cluster.nodes[old]
        node.shutting_down = True
        assert node.voter is not None
        cluster._perform(node, node.voter.begin_shutdown(cluster.now, 500))
        cluster.run_until(lambda: node.voter is not None and node.voter.shutdown_complete(cluster.now))
        node.log.flush()
    cluster.kill(old)
    cluster.run_until(lambda: cluster.all_reached(20))
    cluster.start(old)
    target = cluster.max_hw() + 10
    cluster.run_until(lambda: cluster.all_reached(target))
    _finish(cluster)


@pytest.mark.parametrize("seed", range(SEEDS))
def test_can_recover_after_all_nodes_killed(seed: int) -> None:
    """canRecoverAfterAllNodesKilled: a bare majority restarts and the HW moves 10 past the old maximum."""
    cluster = _cluster(seed)
    cluster.run_until(lambda: cluster.all_reached(10))
    for voter in cluster.voter_ids:
        cluster.kill(voter)
    cluster.run_for(200)
    restarted = cluster.rng.sample(cluster.voter_ids, len(cluster.voter_ids) // 2 + 1)
    for voter in restarted:
        cluster.start(voter)
    target = cluster.max_hw() + 10
    cluster.run_until(lambda: cluster.all_reached(target, restarted))
    _finish(cluster)


@pytest.mark.parametrize("seed", range(SEEDS))
def test_can_elect_new_leader_after_old_leader_partitioned_away(seed: int) -> None:
    """canElectNewLeaderAfterOldLeaderPartitionedAway: with the leader cut off, the others reach HW 20."""
    cluster = _cluster(seed, 3)
    cluster.run_until(lambda: cluster.all_reached(10))
    old = _leader_id(cluster)
    for other in cluster.nodes:
        if other != old:
            cluster.blocked |= {(old, other), (other, old)}
    others = [n for n in cluster.nodes if n != old]
    cluster.run_until(lambda: cluster.all_reached(20, others))
    _finish(cluster)


@pytest.mark.parametrize("seed", range(SEEDS))
def test_can_make_progress_if_majority_is_reachable(seed: int) -> None:
    """canMakeProgressIfMajorityIsReachable: 5 voters split {0,1} / {2,3,4}; only the majority commits; after
    healing everyone catches up."""
    cluster = _cluster(seed, voters=5)
    cluster.run_until(lambda: cluster.all_reached(10))
    minority, majority_side = [0, 1], [2, 3, 4]
    for a in minority:
        for b in majority_side:
            cluster.blocked |= {(a, b), (b, a)}
    minority_hw = max(cluster.nodes[i].high_watermark for i in minority)
    cluster.run_until(lambda: cluster.all_reached(minority_hw + 10, majority_side))
    cluster.run_for(500)
    # The minority never commits past what the majority side has.
    assert max(cluster.nodes[i].high_watermark for i in minority) <= cluster.max_hw()
    cluster.blocked.clear()
    target = 2 * max(cluster.nodes[i].log.log_end_offset for i in majority_side)
    cluster.run_until(lambda: cluster.all_reached(target))
    _finish(cluster)


@pytest.mark.parametrize("seed", range(SEEDS))
def test_can_make_progress_after_back_to_back_leader_failures(seed: int) -> None:
    """canMakeProgressAfterBackToBackLeaderFailures: isolate the leader; once another leads, reconnect the
    first and isolate the second; the HW still moves 10 further."""
    cluster = _cluster(seed, 3)
    cluster.run_until(lambda: cluster.all_reached(10))

    def isolate(node_id: int) -> None:
        cluster.blocked = {(node_id, o) for o in cluster.nodes if o != node_id}
        cluster.blocked |= {(o, node_id) for o in cluster.nodes if o != node_id}

    first = _leader_id(cluster)
    epoch = cluster.nodes[first].voter.epoch  # type: ignore[union-attr]
    isolate(first)

    def new_leader() -> int | None:
        for node in cluster.alive_nodes():
            v = node.voter
            if v is not None and v.leader is not None and v.epoch > epoch and node.node_id != first:
                return node.node_id
        return None

    cluster.run_until(lambda: new_leader() is not None)
    second = new_leader()
    assert second is not None
    isolate(second)
    target = cluster.max_hw() + 10
    reachable = [n for n in cluster.nodes if n != second]
    cluster.run_until(lambda: cluster.all_reached(target, reachable))
    _finish(cluster)


@pytest.mark.parametrize("seed", range(SEEDS))
def test_can_recover_from_single_node_committed_data_loss(seed: int) -> None:
    """canRecoverFromSingleNodeCommittedDataLoss: one voter loses its log and quorum-state; only
    MonotonicHighWatermark and SingleLeader are checked, and the committed data stays consistent."""
    cluster = _cluster(seed, 3)
    cluster.check_data_loss_invariants = False
    # A wiped voter grants any candidate (its empty log is never ahead), so a voter lagging behind lost
    # messages could then win with a stale log: Raft assumes durable votes and logs. As in Kafka's test, the
    # network here neither loses nor delays messages, so no voter lags when the wiped one votes.
    cluster.loss = cluster.slow = 0.0
    cluster.run_until(lambda: cluster.all_reached(10))
    victim = cluster.rng.choice(cluster.voter_ids)
    was_leader = victim == _leader_id(cluster)
    cluster.kill(victim, wipe=True)
    if was_leader:
        cluster.run_until(lambda: cluster.leader() is not None)
    else:
        cluster.run_for(1000)
    cluster.start(victim)
    target = cluster.max_hw() + 10
    cluster.run_until(lambda: cluster.all_reached(target))
    _finish(cluster)


class _LockstepCluster(Cluster):
    """Every message takes exactly 1 ms and none is lost: nothing in the network breaks a tie between voters."""

    def _transit_ms(self) -> int | None:
        return 1


@pytest.mark.parametrize("seed", range(SEEDS))
def test_a_split_vote_after_simultaneous_fetch_timeouts_is_broken_by_the_random_timeouts(seed: int) -> None:
    """Two followers whose fetch timeouts fire in the same millisecond (in lockstep since the start, as the
    processes of a real quorum are when every Fetch answer reaches both at once) each grant the other's pre-vote
    (KIP-996 lets a Prospective voter grant one), so both become candidates of the next epoch and split the vote.
    Only their randomized election timeouts and back-offs break the tie (``QuorumState.randomElectionTimeoutMs``,
    ``KafkaRaftClient.binaryExponentialElectionBackoffMs``): a leader of a later epoch is elected within one more
    election timeout, its back-off and a few round trips, and the high watermark moves on."""
    cluster = _LockstepCluster(seed, 3, 0)
    cluster.run_until(lambda: cluster.all_reached(10))
    old = _leader_id(cluster)
    epoch = cluster.nodes[old].voter.epoch  # type: ignore[union-attr]
    followers = [cluster.nodes[i] for i in cluster.voter_ids if i != old]
    cluster.kill(old)
    expiry = cluster.now + 1
    for node in followers:
        voter = node.voter
        assert voter is not None and voter.kind is StateKind.FOLLOWER
        voter._fetch_deadline = expiry  # the same millisecond for both
        cluster._reschedule_tick(node)
    candidates: set[tuple[int, int]] = set()  # (node, epoch) of every candidacy seen

    def elected() -> bool:
        for node in followers:
            voter = node.voter
            if voter is not None and voter.kind is StateKind.CANDIDATE:
                candidates.add((node.node_id, voter.epoch))
        leader = cluster.leader()
        return leader is not None and leader.voter is not None and leader.voter.epoch > epoch

    cluster.run_until(elected)
    took_ms = cluster.now - expiry
    split = {(node.node_id, epoch + 1) for node in followers}
    assert split <= candidates, f"both followers were candidates of epoch {epoch + 1} ({sorted(candidates)})"
    leader = cluster.leader()
    assert leader is not None and leader.voter is not None and leader.voter.epoch >= epoch + 2
    # The split's candidacies end at their election timeouts (at most 2 T); the first to end backs off (at most
    # the back-off maximum), runs a pre-vote and a vote (a few ms each) and wins, unless the two timeouts fall
    # within a round trip of each other and split again: then one more round.
    config = cluster.config
    one_round = 2 * config.election_timeout_ms + config.election_backoff_max_ms + 20
    assert took_ms <= 2 * one_round, (took_ms, sorted(candidates))
    target = cluster.max_hw() + 10
    cluster.run_until(lambda: cluster.all_reached(target, [n.node_id for n in followers]))
    _finish(cluster)


@pytest.mark.parametrize("role", ["voter", "observer"])
@pytest.mark.parametrize("seed", range(SEEDS))
def test_a_replica_behind_the_leaders_log_start_catches_up_from_a_snapshot(seed: int, role: str) -> None:
    """SnapshotAtLogStart in use: a follower (or a broker) is down while the leader snapshots and deletes its log
    below the snapshot; back up, it gets SNAPSHOT for its fetch offset, downloads the snapshot with
    FetchSnapshot, starts its log there (``truncateToLatestSnapshot``) and reaches the high watermark. The
    snapshot must hold the committed counter value at its offset (checked on install)."""
    cluster = Cluster(seed, 3, 1)
    cluster.run_until(lambda: cluster.all_reached(10))
    leader = _leader_id(cluster)
    lagging = 3 if role == "observer" else next(v for v in cluster.voter_ids if v != leader)
    cluster.kill(lagging)
    behind = cluster.nodes[lagging].log.log_end_offset
    cluster.run_until(lambda: cluster.all_reached(behind + 20, [n for n in cluster.voter_ids if n != lagging]))
    current = cluster.leader()
    assert current is not None
    log = current.log
    log.take_snapshot(min(current.high_watermark, log.flushed))  # None when a newer one was taken meanwhile
    log.delete_before_latest_snapshot()
    assert log.start > behind, (log.start, behind)
    cluster.start(lagging)
    target = cluster.max_hw() + 10
    cluster.run_until(lambda: cluster.all_reached(target))
    assert cluster.nodes[lagging].installed >= 1
    _finish(cluster)
