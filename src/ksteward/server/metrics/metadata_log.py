"""The metadata log's series: ``kafka.server:type=raft-metrics``, ``type=SnapshotEmitter``, and ksteward's own
for what Kafka does not have (the metadata log's fsync time, the group commit's batches per fsync, the snapshot
files)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from prometheus_client.core import Metric
from prometheus_client.registry import Collector

from ksteward.raft.election import StateKind
from ksteward.server.committer import GroupCommitter
from ksteward.server.metrics.families import gauge, summary
from ksteward.server.metrics.histogram import RecentWindow

_RAFT = "kafka_server_raftmetrics_"


def raft_state_name(kind: StateKind, voted_id: int) -> str:
    """A voter's ``current-state``, as Kafka's ``KafkaRaftMetrics`` names it: leader, prospective (KIP-996),
    prospective-voted, candidate, voted (Unattached, having voted), follower, unattached (Resigned too, which is
    none of the others). A broker-only node is an ``observer``."""
    if kind is StateKind.PROSPECTIVE:
        return "prospective" if voted_id < 0 else "prospective-voted"
    if kind is StateKind.UNATTACHED:
        return "unattached" if voted_id < 0 else "voted"
    return _STATE_NAMES[kind]


_STATE_NAMES = {StateKind.LEADER: "leader", StateKind.CANDIDATE: "candidate", StateKind.FOLLOWER: "follower",
                StateKind.RESIGNED: "unattached"}  # fmt: skip


class ElectionLatency:
    """Kafka's ``election-latency`` for one voter: the ms from its starting an election (Prospective, or
    Candidate) to knowing the epoch's leader (it leads or follows), for every election since the start, as a
    mean and a maximum. ``on_state`` takes the voter's state after each change. Kafka's
    ``KafkaRaftMetrics.updateElectionStartMs`` restarts the clock at each candidacy; this one runs from the
    first, through refused pre-votes and repeated candidacies: the whole time the voter had no leader after it
    began to look for one."""

    __slots__ = ("count", "max_ms", "started_ms", "total_ms")

    def __init__(self) -> None:
        self.count = 0
        self.total_ms = 0.0
        self.max_ms = 0.0
        self.started_ms: int | None = None

    def on_state(self, kind: StateKind, now_ms: int) -> None:
        if kind in (StateKind.PROSPECTIVE, StateKind.CANDIDATE):
            if self.started_ms is None:
                self.started_ms = now_ms
        elif kind in (StateKind.LEADER, StateKind.FOLLOWER) and self.started_ms is not None:
            took = max(now_ms - self.started_ms, 0)
            self.count += 1
            self.total_ms += took
            self.max_ms = max(self.max_ms, took)
            self.started_ms = None

    @property
    def avg_ms(self) -> float:
        return self.total_ms / self.count if self.count else 0.0


def current_vote(kind: StateKind, node_id: int, voted_id: int) -> int:
    """Kafka's ``current-vote``: this node's id while it leads or runs for election, else the voter it voted for
    in this epoch (-1: none)."""
    if kind in (StateKind.LEADER, StateKind.CANDIDATE):
        return node_id
    return voted_id if kind in (StateKind.UNATTACHED, StateKind.PROSPECTIVE) else -1


@dataclass(frozen=True)
class RaftView:
    """How to read this node's place in the metadata quorum (callables: read at scrape time)."""

    state: Callable[[], str]  # Kafka's current-state values: see raft_state_name
    log_end_offset: Callable[[], int]
    high_watermark: Callable[[], int]
    epoch: Callable[[], int]
    leader: Callable[[], int]
    snapshot_count: Callable[[], int]
    vote: Callable[[], int] = lambda: -1
    log_end_epoch: Callable[[], int] = lambda: -1
    elections: ElectionLatency | None = None  # a voter of several: its elections


class MetadataLogCollector(Collector):
    def __init__(self, raft: RaftView, committer: Callable[[], GroupCommitter | None]) -> None:
        self._raft = raft
        self._committer = committer
        self._window = RecentWindow()

    def collect(self) -> Iterator[Metric]:
        raft = self._raft
        state = gauge(_RAFT + "current_state", "1 for this node's Raft state", labels=("current_state",))
        state.add_metric([raft.state()], 1)
        yield state
        yield gauge(_RAFT + "log_end_offset", "The metadata log's end offset", raft.log_end_offset())
        yield gauge(_RAFT + "high_watermark", "The committed (durable, replicated) offset + 1", raft.high_watermark())
        yield gauge(_RAFT + "current_epoch", "The leader epoch", raft.epoch())
        yield gauge(_RAFT + "current_leader", "The leader's node id (-1: unknown)", raft.leader())
        yield gauge(_RAFT + "current_vote", "The voter this node voted for (-1: none)", raft.vote())
        yield gauge(_RAFT + "log_end_epoch", "The epoch of the last batch in the log", raft.log_end_epoch())
        if raft.elections is not None:
            yield gauge(_RAFT + "election_latency_avg", "Mean ms from starting an election to a known leader",
                        raft.elections.avg_ms)  # fmt: skip
            yield gauge(_RAFT + "election_latency_max", "Longest such time (ms)", raft.elections.max_ms)
        yield gauge("ksteward_metadata_snapshot_count", "Snapshot files in metadata.log.dir", raft.snapshot_count())
        committer = self._committer()
        if committer is None:
            return
        latency = committer.commit_latency
        yield gauge(
            _RAFT + "commit_latency_avg",
            "Mean ms from append to commit per record, Kafka's 2 x 30 s window (leader)",
            latency.avg(),
        )
        yield gauge(
            _RAFT + "commit_latency_max",
            "Most ms from append to commit per record, Kafka's 2 x 30 s window (leader)",
            latency.max(),
        )
        yield summary("ksteward_metadata_log_fsync_time_ms", "Metadata log fsync time (ms)",
                      [({}, committer.fsync_ms, 0)], self._window)  # fmt: skip
        yield summary("ksteward_metadata_log_group_commit_batches", "Batches made durable by one fsync",
                      [({}, committer.batches_per_fsync, 0)], self._window)  # fmt: skip
        last = committer.last_snapshot
        size, seconds, age_ms = (-1, -1.0, -1.0) if last is None else (
            last.size_bytes, last.seconds, (time.time() - last.written_at) * 1000)  # fmt: skip
        yield gauge("kafka_server_snapshotemitter_latestsnapshotgeneratedbytes", "Last snapshot's bytes", size)
        yield gauge("kafka_server_snapshotemitter_latestsnapshotgeneratedagems", "Its age (ms)", age_ms)
        yield gauge("ksteward_metadata_snapshot_generation_time_ms", "Time to write it (ms)",
                    seconds * 1000 if last is not None else -1.0)  # fmt: skip
