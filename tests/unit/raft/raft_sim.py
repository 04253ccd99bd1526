"""A deterministic simulation of a KRaft quorum, after Kafka's RaftEventSimulationTest.

One seeded event scheduler on a simulated millisecond clock drives ``RaftVoter``s (and ``RaftObserver``s
for brokers) over an in-memory router that delays (a tenth of the messages by up to 250 ms), reorders,
drops (1 %) and partitions messages. Each node
has a ``SimLog`` (real record batches, so the Fetch path is the production one) that survives a kill but
loses what was not flushed, like Kafka's ``MockLog.reopen``, and a quorum-state slot that survives a kill.
The leader plays Kafka's ``ReplicatedCounter``: it appends ``previous value + 1``, one record per batch.

Every node snapshots its committed state now and then, as Kafka's ``ReplicatedCounter`` does (the counter's
value at a committed offset), and may then delete the log below its newest snapshot: a replica that falls
behind a leader's log start catches up with FetchSnapshot, and installs the snapshot as ``FollowerLog`` does
(``truncateToLatestSnapshot``).

``Cluster.check_invariants`` runs after every event (``MonotonicHighWatermark``, ``MonotonicEpoch``,
``MajorityReachedHighWatermark``, ``SingleLeader``, ``SnapshotAtLogStart``); ``check_committed`` is
``ConsistentCommittedData``, and every snapshot taken or installed must hold the committed counter value at its
offset.
"""

from __future__ import annotations

import heapq
import itertools
import random
import struct
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ksteward.metadata.batch import encode_batch, iter_batches
from ksteward.metadata.epochs import EpochHistory, OffsetAndEpoch
from ksteward.metadata.records.control import encode_control_record
from ksteward.protocol.apis import ApiKey
from ksteward.raft import observer as obs
from ksteward.raft.election import QuorumConfig, StateKind, majority
from ksteward.raft.leader import ParkedFetch
from ksteward.raft.quorum_state import ElectionState
from ksteward.raft.voter import RaftVoter
from ksteward.raft.voter_actions import BecameLeader, FlushLog, LostLeadership, PersistElectionState, SendRequest

CLUSTER_ID = "sim-cluster"
LISTENER = "CONTROLLER"
#: Kafka's simulation settings: election timeout 1 s, back-off 100 ms, fetch and request timeouts 3 s.
SIM_CONFIG = QuorumConfig(
    election_timeout_ms=1000, fetch_timeout_ms=3000, election_backoff_max_ms=100,
    request_timeout_ms=3000, retry_backoff_ms=50, fetch_max_wait_ms=100,
)  # fmt: skip
_VALUE = struct.Struct(">q")
_SNAPSHOT_ACTIONS = (obs.StartSnapshotDownload, obs.WriteSnapshotChunk, obs.InstallSnapshot, obs.AbortSnapshotDownload)


class InvariantViolation(AssertionError):
    pass


@dataclass
class _Batch:
    base: int
    epoch: int
    raw: bytes
    value: int | None  # the counter value; None for a control batch


class SimLog:
    """An in-memory ``LogView``: single-record batches from ``start`` on, a flushed end, and snapshots (the
    counter's value at their end offset) that survive a kill, as completed snapshot files do."""

    def __init__(self) -> None:
        self.batches: list[_Batch] = []  # offsets start .. log_end_offset - 1
        self.start = 0
        self.flushed = 0
        self.history = EpochHistory()
        self.snapshots: dict[OffsetAndEpoch, bytes] = {}

    # LogView
    @property
    def start_offset(self) -> int:
        return self.start

    @property
    def log_end_offset(self) -> int:
        return self.start + len(self.batches)

    @property
    def end_offset(self) -> int:
        """What a leader serves and counts: the flushed end."""
        return self.flushed

    @property
    def last_fetched_epoch(self) -> int:
        """The last batch's epoch; for a log with no batch, the epoch of the snapshot it starts at."""
        if self.batches:
            return self.batches[-1].epoch
        at_start = self._snapshot_at(self.start)
        return at_start.epoch if at_start is not None else 0

    def epoch_end(self, epoch: int) -> OffsetAndEpoch | None:
        return self.history.end_offset_for(epoch, self.log_end_offset)

    def earliest_snapshot(self) -> OffsetAndEpoch | None:
        return min(self.snapshots, key=lambda s: s.offset) if self.snapshots else None

    def latest_snapshot(self) -> OffsetAndEpoch | None:
        return max(self.snapshots, key=lambda s: s.offset) if self.snapshots else None

    def read(self, offset: int, max_bytes: int) -> bytes:
        assert offset >= self.start, f"a read at {offset}, below the log start {self.start}"
        out: list[bytes] = []
        size = 0
        for batch in self.batches[offset - self.start : self.flushed - self.start]:
            if out and size + len(batch.raw) > max_bytes:
                break
            out.append(batch.raw)
            size += len(batch.raw)
        return b"".join(out)

    def snapshot_chunk(self, snapshot: OffsetAndEpoch, position: int, max_bytes: int) -> tuple[int, bytes] | None:
        data = self.snapshots.get(snapshot)
        if data is None:
            return None
        return len(data), data[position : position + max_bytes] if 0 <= position < len(data) else b""

    # reads
    def batch_at(self, offset: int) -> _Batch | None:
        """The batch at ``offset``; None below the log start (a snapshot holds it now) or past the end."""
        return self.batches[offset - self.start] if self.start <= offset < self.log_end_offset else None

    def value_before(self, offset: int) -> int:
        """The counter's value after the records below ``offset``."""
        for i in range(min(offset, self.log_end_offset) - 1, self.start - 1, -1):
            value = self.batches[i - self.start].value
            if value is not None:
                return value
        at_start = self._snapshot_at(self.start)
        return snapshot_value(self.snapshots[at_start]) if at_start is not None else 0

    def last_value(self) -> int:
        return self.value_before(self.log_end_offset)

    def _snapshot_at(self, offset: int) -> OffsetAndEpoch | None:
        return next((s for s in self.snapshots if s.offset == offset), None)

    # writes
    def _add(self, batch: _Batch) -> None:
        assert batch.base == self.log_end_offset, (batch.base, self.log_end_offset)
        self.batches.append(batch)
        self.history.observe(batch.epoch, batch.base)

    def append_value(self, value: int, epoch: int) -> None:
        base = self.log_end_offset
        self._add(_Batch(base, epoch, encode_batch(base, [_VALUE.pack(value)], timestamp_ms=0, leader_epoch=epoch),
                         value))  # fmt: skip

    def append_control(self, message: Any, epoch: int) -> None:
        key, value = encode_control_record(message)
        base = self.log_end_offset
        raw = encode_batch(base, [value], keys=[key], timestamp_ms=0, leader_epoch=epoch, control=True)
        self._add(_Batch(base, epoch, raw, None))

    def append_raw(self, records: bytes) -> None:
        for b in iter_batches(records):
            assert b.last_offset == b.base_offset, "the simulation writes one record per batch"
            value = None if b.is_control else _VALUE.unpack(b.records[0][3])[0]
            raw = records[b.file_position : b.file_position + b.size]
            self._add(_Batch(b.base_offset, b.leader_epoch, bytes(raw), value))

    def truncate_to(self, offset: int) -> None:
        if offset < self.start:
            raise InvariantViolation(f"a truncation to {offset}, below the log start {self.start}")
        del self.batches[offset - self.start :]
        self.flushed = min(self.flushed, offset)
        self.history.truncate_from_end(offset)

    def flush(self) -> None:
        self.flushed = self.log_end_offset

    def crash(self) -> None:
        """A hard kill: what was not flushed is gone (``MockLog.reopen``); snapshots stay."""
        self.truncate_to(self.flushed)

    # snapshots
    def take_snapshot(self, offset: int) -> OffsetAndEpoch | None:
        """Snapshot the state at ``offset`` (committed and flushed), if it is past the newest snapshot."""
        latest = self.latest_snapshot()
        if offset <= max(self.start, latest.offset if latest is not None else 0) or offset > self.flushed:
            return None
        batch = self.batch_at(offset - 1)
        assert batch is not None
        snapshot = OffsetAndEpoch(offset, batch.epoch)
        self.snapshots[snapshot] = snapshot_bytes(self.value_before(offset))
        return snapshot

    def delete_before_latest_snapshot(self) -> None:
        """Move the log start to the newest snapshot (``deleteBeforeSnapshot``): older records and snapshots
        go, and the epoch history starts there (``LeaderEpochFileCache.truncateFromStart``)."""
        latest = self.latest_snapshot()
        if latest is None or latest.offset <= self.start:
            return
        del self.batches[: latest.offset - self.start]
        self.start = latest.offset
        self.snapshots = {s: d for s, d in self.snapshots.items() if s.offset >= self.start}
        entries = self.history.entries()
        self.history = EpochHistory()
        for i, (epoch, first) in enumerate(entries):
            if i + 1 == len(entries) or entries[i + 1][1] > self.start:
                self.history.observe(epoch, max(first, self.start))

    def install(self, snapshot: OffsetAndEpoch, data: bytes) -> bool:
        """A downloaded snapshot, complete: keep it, and start the log at it when it is past the log
        (``MetadataLog.truncate_to_latest_snapshot``)."""
        self.snapshots[snapshot] = data
        newest = self.latest_snapshot()
        assert newest is not None
        last_epoch = max(self.batches[-1].epoch if self.batches else 0, 0)
        if not (newest.epoch > last_epoch or (newest.epoch == last_epoch and newest.offset > self.log_end_offset)):
            return False
        self.batches, self.start, self.flushed = [], newest.offset, newest.offset
        self.history = EpochHistory()
        self.snapshots = {s: d for s, d in self.snapshots.items() if s.offset >= self.start}
        return True


def snapshot_bytes(value: int) -> bytes:
    """A snapshot of the counter: its value, then padding so that a download takes a few chunks."""
    return _VALUE.pack(value) + bytes(range(256)) * 2


def snapshot_value(data: bytes) -> int:
    return int(_VALUE.unpack_from(data)[0])


@dataclass
class Node:
    node_id: int
    is_voter: bool
    log: SimLog = field(default_factory=SimLog)
    stored: ElectionState | None = None
    alive: bool = True
    incarnation: int = 0
    voter: RaftVoter | None = None
    observer: obs.RaftObserver | None = None
    high_watermark: int = -1
    parked: list[tuple[int, int, int, Any, int]] = field(default_factory=list)  # deadline, src, inc, request, id
    tick_at: int = -1
    fetch_pending: int | None = None  # observer: request id in flight
    flush_scheduled: bool = False
    shutting_down: bool = False
    fetch_api: int = ApiKey.FETCH  # observer: the API of the request in flight (Fetch or FetchSnapshot)
    download: tuple[OffsetAndEpoch, bytearray] | None = None  # a snapshot being fetched
    installed: int = 0  # snapshots installed from a leader


class Cluster:
    def __init__(self, seed: int, voters: int, observers: int, *, config: QuorumConfig = SIM_CONFIG) -> None:
        self.rng = random.Random(seed)
        self.config = config
        self.voter_ids = list(range(voters))
        self.nodes = {i: Node(i, i < voters) for i in range(voters + observers)}
        self.now = 0
        self._events: list[tuple[int, int, Callable[[], None]]] = []
        self._seq = itertools.count()
        self._request_ids = itertools.count(1)
        self.blocked: set[tuple[int, int]] = set()  # (source, destination) links that drop everything
        self.leader_hw = -1  # MonotonicHighWatermark: the newest leader's high watermark seen so far
        self.leader_hw_epoch = -1  # and that leader's epoch
        self.epoch_leaders: dict[int, int] = {}
        self.committed: dict[int, int | None] = {}
        self.check_data_loss_invariants = True
        self.loss = 0.01  # the share of messages dropped
        self.slow = 0.1  # the share of messages delayed 5-250 ms
        self.events_run = 0
        self.snapshots_taken = 0
        for node in self.nodes.values():
            self.start(node.node_id)
        self._schedule(self.rng.randint(5, 20), self._append_tick)
        self._schedule(self.rng.randint(50, 150), self._snapshot_tick)

    # --- scheduling ---------------------------------------------------------------------------------
    def _schedule(self, delay: int, event: Callable[[], None]) -> None:
        heapq.heappush(self._events, (self.now + max(delay, 0), next(self._seq), event))

    def run_until(self, condition: Callable[[], bool], *, max_ms: int = 60_000) -> None:
        deadline = self.now + max_ms
        same_time = 0
        while not condition():
            if not self._events or self._events[0][0] > deadline:
                raise InvariantViolation(f"condition not reached by {deadline} ms: {self.describe()}")
            when, _, event = heapq.heappop(self._events)
            same_time = same_time + 1 if when == self.now else 0
            if same_time > 10_000:
                raise InvariantViolation(f"livelock at {when} ms: {self.describe()}")
            self.now = when
            event()
            self.events_run += 1
            self.check_invariants()

    def run_for(self, ms: int) -> None:
        end = self.now + ms
        self.run_until(lambda: self._events[0][0] > end if self._events else True, max_ms=ms + 1)
        self.now = end

    def describe(self) -> str:
        parts = []
        for n in self.nodes.values():
            v = n.voter
            state = f"{v.kind.value}@{v.epoch} leader {v.leader_id}" if v is not None else "observer"
            parts.append(
                f"{n.node_id}:{'up' if n.alive else 'down'} {state} hw {n.high_watermark} leo {n.log.log_end_offset}"
            )
        return "; ".join(parts)

    # --- nodes --------------------------------------------------------------------------------------
    def start(self, node_id: int) -> None:
        node = self.nodes[node_id]
        node.alive, node.incarnation, node.shutting_down = True, node.incarnation + 1, False
        node.high_watermark, node.parked, node.fetch_pending, node.tick_at = -1, [], None, -1
        node.download = None  # a partial download does not survive a restart (the .part file is removed)
        if node.is_voter:
            node.voter = RaftVoter(node_id=node_id, cluster_id=CLUSTER_ID, voters=self.voter_ids, log=node.log,
                                   endpoints={LISTENER: ("sim", 9000 + node_id)}, config=self.config,
                                   rng=random.Random(self.rng.random()))  # fmt: skip
            self._perform(node, node.voter.start(node.stored, self.now))
            self._reschedule_tick(node)
        else:
            node.observer = obs.RaftObserver(cluster_id=CLUSTER_ID, replica_id=node_id, max_wait_ms=100)
            self._observer_fetch(node)

    def kill(self, node_id: int, *, wipe: bool = False) -> None:
        node = self.nodes[node_id]
        node.alive, node.voter, node.observer, node.parked, node.download = False, None, None, [], None
        node.log.crash()
        if wipe:
            node.log, node.stored = SimLog(), None

    def leader(self) -> Node | None:
        """The live leader of the highest epoch (a partitioned old leader may not know it was replaced)."""
        best: Node | None = None
        for node in self.nodes.values():
            voter = node.voter
            if node.alive and voter is not None and voter.kind is StateKind.LEADER:  # noqa: SIM102
                if best is None or voter.epoch > best.voter.epoch:  # type: ignore[union-attr]
                    best = node
        return best

    def alive_nodes(self) -> list[Node]:
        return [n for n in self.nodes.values() if n.alive]

    # --- the router ---------------------------------------------------------------------------------
    def _deliver(self, source: int, destination: int, deliver: Callable[[Node], None]) -> None:
        if (source, destination) in self.blocked:
            return
        incarnation = self.nodes[destination].incarnation

        def arrive() -> None:
            node = self.nodes[destination]
            if node.alive and node.incarnation == incarnation and (source, destination) not in self.blocked:
                deliver(node)

        delay = self._transit_ms()
        if delay is not None:
            self._schedule(delay, arrive)

    def _transit_ms(self) -> int | None:
        """How long one message takes, or None when it is lost on the way."""
        roll = self.rng.random()
        if roll < self.loss:
            return None
        # Mostly 1-5 ms; a tail of slow deliveries reorders messages and lets replicas lag.
        return self.rng.randint(1, 5) if roll > self.slow else self.rng.randint(5, 250)

    def _send_request(
        self, source: Node, destination: int, api_key: int, version: int, body: Any, request_id: int
    ) -> None:
        incarnation = source.incarnation

        def on_request(node: Node) -> None:
            self._handle_request(node, source.node_id, incarnation, api_key, version, body, request_id)

        self._deliver(source.node_id, destination, on_request)

    def _send_response(self, node: Node, source: int, incarnation: int, request_id: int, response: Any) -> None:
        def on_response(client: Node) -> None:
            if client.incarnation != incarnation:
                return  # an answer to a request of a previous life
            if client.voter is not None:
                self._perform(client, client.voter.handle_response(request_id, response, self.now))
                self._reschedule_tick(client)
            elif client.observer is not None and client.fetch_pending == request_id:
                self._observer_response(client, response)

        self._deliver(node.node_id, source, on_response)

    def _handle_request(
        self, node: Node, source: int, incarnation: int, api_key: int, version: int, body: Any, request_id: int
    ) -> None:
        if node.voter is None:
            return
        response, actions = node.voter.handle_request(api_key, version, body, LISTENER, self.now)
        self._perform(node, actions)
        if isinstance(response, ParkedFetch):
            node.parked.append((self.now + response.max_wait_ms, source, incarnation, body, request_id))
            self._schedule(response.max_wait_ms, lambda: self._release_parked(node, expired_only=True))
        else:
            self._send_response(node, source, incarnation, request_id, response)
        self._reschedule_tick(node)

    def _release_parked(self, node: Node, *, expired_only: bool = False, all_of_them: bool = False) -> None:
        if not node.alive or node.voter is None:
            return
        keep = []
        for parked in node.parked:
            deadline, source, incarnation, body, request_id = parked
            offset = body.topics[0].partitions[0].fetch_offset
            if all_of_them or deadline <= self.now or (not expired_only and node.log.end_offset > offset):
                response, actions = node.voter.complete_fetch(body, 17, LISTENER, self.now)
                self._perform(node, actions)
                self._send_response(node, source, incarnation, request_id, response)
            else:
                keep.append(parked)
        node.parked = keep

    # --- a voter's actions --------------------------------------------------------------------------
    def _perform(self, node: Node, actions: list[Any]) -> None:
        for action in actions:
            if isinstance(action, PersistElectionState):
                self._persist(node, action.state)
            elif isinstance(action, SendRequest):
                self._send_request(node, action.destination, action.api_key, action.api_version, action.body,
                                   action.request_id)  # fmt: skip
            elif isinstance(action, obs.AppendBatches):
                node.log.append_raw(action.records)
            elif isinstance(action, FlushLog):
                node.log.flush()
            elif isinstance(action, obs.TruncateTo):
                if action.offset < node.high_watermark:
                    raise InvariantViolation(f"node {node.node_id} truncates below its HW {node.high_watermark}")
                node.log.truncate_to(action.offset)
            elif isinstance(action, BecameLeader):
                if node.log.log_end_offset != action.epoch_start_offset:
                    raise InvariantViolation("the LeaderChange record is not at the epoch start offset")
                node.log.append_control(action.leader_change, action.epoch)
                self._schedule_flush(node)
            elif isinstance(action, LostLeadership):
                self._release_parked(node, all_of_them=True)
            elif isinstance(action, obs.HighWatermarkUpdated):
                self._advance_hw(node, action.offset)
            elif isinstance(action, _SNAPSHOT_ACTIONS):
                self._download(node, action)
            elif not isinstance(action, obs.LeaderChanged):
                raise AssertionError(f"unexpected action {action!r}")

    def _download(self, node: Node, action: Any) -> None:
        """FetchSnapshot's actions, as ``FollowerLog`` carries them out: chunks in order, then install."""
        if isinstance(action, obs.StartSnapshotDownload):
            node.download = (action.snapshot, bytearray())
        elif isinstance(action, obs.WriteSnapshotChunk):
            if node.download is None or node.download[0] != action.snapshot or action.position != len(node.download[1]):
                raise InvariantViolation(f"node {node.node_id}: chunk {action.snapshot}@{action.position} out of order")
            node.download[1].extend(action.data)
        elif isinstance(action, obs.InstallSnapshot):
            if node.download is None or node.download[0] != action.snapshot:
                raise InvariantViolation(f"node {node.node_id}: {action.snapshot} complete with no download open")
            data = bytes(node.download[1])
            node.download = None
            self._check_snapshot(node, action.snapshot, data)
            if node.log.install(action.snapshot, data):
                node.installed += 1
        elif isinstance(action, obs.AbortSnapshotDownload):
            node.download = None

    def _persist(self, node: Node, state: ElectionState) -> None:
        if (
            self.check_data_loss_invariants
            and node.stored is not None
            and state.leader_epoch < node.stored.leader_epoch
        ):
            raise InvariantViolation(f"node {node.node_id}: persisted epoch went down to {state.leader_epoch}")
        node.stored = state

    def _advance_hw(self, node: Node, offset: int) -> None:
        if offset < node.high_watermark:
            raise InvariantViolation(f"node {node.node_id}: HW went down from {node.high_watermark} to {offset}")
        for i in range(max(node.high_watermark, 0), offset):
            self._commit(node, i)
        node.high_watermark = offset

    def _commit(self, node: Node, offset: int) -> None:
        """``ConsistentCommittedData``: a committed offset holds the same value everywhere, and data values
        follow each other by one (``ReplicatedCounter``)."""
        batch = node.log.batch_at(offset)
        if batch is None:
            return  # below the log start: a snapshot installed over it, checked by _check_snapshot
        value = batch.value
        seen = self.committed.setdefault(offset, value)
        if seen != value:
            raise InvariantViolation(f"node {node.node_id} committed {value} at {offset}, elsewhere {seen}")
        if value is not None:
            previous = node.log.value_before(offset)
            if value != previous + 1:
                raise InvariantViolation(f"node {node.node_id}: committed {value} at {offset} after {previous}")

    def _reschedule_tick(self, node: Node) -> None:
        if node.voter is None:
            return
        at = max(node.voter.next_deadline_ms(), self.now)
        if node.tick_at >= self.now and node.tick_at <= at:
            return
        node.tick_at = at
        incarnation = node.incarnation

        def tick() -> None:
            if node.alive and node.incarnation == incarnation and node.tick_at == at and node.voter is not None:
                node.tick_at = -1
                self._perform(node, node.voter.tick(self.now))
                self._reschedule_tick(node)

        self._schedule(at - self.now, tick)

    # --- the leader's writes ------------------------------------------------------------------------
    def _append_tick(self) -> None:
        leader = self.leader()
        # Like the controller: write only once the epoch's own LeaderChange record is committed.
        voter = leader.voter if leader is not None and not leader.shutting_down else None
        if leader is not None and voter is not None and voter.accepts_writes:
            leader.log.append_value(leader.log.last_value() + 1, voter.epoch)
            self._schedule_flush(leader)
        self._schedule(self.rng.randint(15, 30), self._append_tick)

    def _schedule_flush(self, node: Node) -> None:
        """The leader's group commit: the fsync lands a little later, and a kill in between loses the write."""
        if node.flush_scheduled:
            return
        node.flush_scheduled = True
        incarnation = node.incarnation

        def flush() -> None:
            node.flush_scheduled = False
            if node.alive and node.incarnation == incarnation and node.voter is not None:
                node.log.flush()
                self._perform(node, node.voter.on_log_flushed(self.now))
                self._release_parked(node)
                self._reschedule_tick(node)

        self._schedule(self.rng.randint(1, 3), flush)

    # --- snapshots ----------------------------------------------------------------------------------
    def _snapshot_tick(self) -> None:
        """Every node may snapshot its committed state and then delete the log below it (each node makes its
        own snapshots from its own state, as Kafka's SnapshotGenerator does)."""
        for node in self.alive_nodes():
            if self.rng.random() < 0.5:
                continue
            snapshot = node.log.take_snapshot(min(node.high_watermark, node.log.flushed))
            if snapshot is None:
                continue
            self.snapshots_taken += 1
            self._check_snapshot(node, snapshot, node.log.snapshots[snapshot])
            if self.rng.random() < 0.6:
                node.log.delete_before_latest_snapshot()
        self._schedule(self.rng.randint(50, 150), self._snapshot_tick)

    def _check_snapshot(self, node: Node, snapshot: OffsetAndEpoch, data: bytes) -> None:
        """``ConsistentCommittedData`` for a snapshot: it holds the committed counter value at its offset."""
        values = [self.committed.get(i) for i in range(snapshot.offset)]
        expected = next((v for v in reversed(values) if v is not None), 0)
        if snapshot_value(data) != expected:
            raise InvariantViolation(f"node {node.node_id}: snapshot {snapshot} holds {snapshot_value(data)}, "
                                     f"the committed value there is {expected}")  # fmt: skip

    # --- observers (brokers) ------------------------------------------------------------------------
    def _observer_fetch(self, node: Node, *, rediscover: bool = False) -> None:
        """The next Fetch (or FetchSnapshot) to the leader; after a timeout, or with no leader known, to a
        random voter, which names the leader (``MetadataFollower`` tries a bootstrap server when the leader does
        not answer, and keeps what it knows of the leader and its download)."""
        observer = node.observer
        if not node.alive or observer is None:
            return
        leader = observer.leader_id
        destination = leader if leader is not None and not rediscover else self.rng.choice(self.voter_ids)
        api_key, version, body = observer.next_request(node.log)
        request_id = next(self._request_ids)
        node.fetch_pending, node.fetch_api = request_id, api_key
        self._send_request(node, destination, api_key, version, body, request_id)
        incarnation = node.incarnation

        def timeout() -> None:
            if node.alive and node.incarnation == incarnation and node.fetch_pending == request_id:
                self._observer_fetch(node, rediscover=True)

        self._schedule(self.config.request_timeout_ms, timeout)

    def _observer_response(self, node: Node, response: Any) -> None:
        assert node.observer is not None
        node.fetch_pending = None
        delay = 0
        for action in node.observer.on_response(node.fetch_api, response, node.log):
            if isinstance(action, obs.Backoff):
                delay = self.config.retry_backoff_ms
            elif isinstance(action, obs.AppendBatches):
                node.log.append_raw(action.records)
                node.log.flush()
            elif isinstance(action, obs.TruncateTo):
                node.log.truncate_to(action.offset)
            elif isinstance(action, obs.HighWatermarkUpdated):
                self._advance_hw(node, action.offset)
            elif isinstance(action, _SNAPSHOT_ACTIONS):
                self._download(node, action)
        self._schedule(delay, lambda: self._observer_fetch(node) if node.fetch_pending is None else None)

    # --- invariants ---------------------------------------------------------------------------------
    def check_invariants(self) -> None:
        leader = self.leader()
        if leader is not None and leader.voter is not None and leader.voter.leader is not None:
            hw = leader.voter.leader.high_watermark
            epoch = leader.voter.epoch
            # MonotonicHighWatermark, of the newest leader. A leader of an older epoch than one already seen is
            # superseded but has not heard yet (check-quorum resigns it later): when it is the only live leader
            # left, its high watermark may trail the newer leader's and is not compared. Kafka's
            # RaftEventSimulationTest avoids the case differently: its "leaderWithMaxEpoch" comparator is
            # reversed, so it follows the oldest live leader.
            if hw >= 0 and epoch >= self.leader_hw_epoch:
                if hw < self.leader_hw:
                    raise InvariantViolation(f"leader {leader.node_id}: HW {hw} below an earlier {self.leader_hw}")
                self.leader_hw, self.leader_hw_epoch = hw, epoch
            if hw >= 0 and self.check_data_loss_invariants:  # MajorityReachedHighWatermark
                reached = sum(1 for v in self.voter_ids if self.nodes[v].log.flushed >= hw)
                if reached < majority(len(self.voter_ids)):
                    raise InvariantViolation(f"HW {hw} but only {reached} voters have it: {self.describe()}")
        for node in self.nodes.values():
            log = node.log  # SnapshotAtLogStart
            if log.start > 0 and not any(s.offset == log.start for s in log.snapshots):
                raise InvariantViolation(f"node {node.node_id}: log start {log.start} with no snapshot there")
            state = node.stored
            if state is None:
                continue
            if state.leader_id >= 0:  # SingleLeader
                known = self.epoch_leaders.setdefault(state.leader_epoch, state.leader_id)
                if known != state.leader_id:
                    raise InvariantViolation(f"epoch {state.leader_epoch} led by {known} and {state.leader_id}")
            # MonotonicEpoch: a running node's epoch is the persisted one.
            if self.check_data_loss_invariants and node.alive and node.voter is not None:  # noqa: SIM102
                if node.voter.epoch != state.leader_epoch:
                    raise InvariantViolation(
                        f"node {node.node_id}: epoch {node.voter.epoch}, stored {state.leader_epoch}"
                    )

    def check_committed(self) -> None:
        """``ConsistentCommittedData`` over every node's log at the end."""
        for node in self.nodes.values():
            for offset in range(node.log.start, min(node.high_watermark, node.log.log_end_offset)):
                batch = node.log.batch_at(offset)
                assert batch is not None
                if self.committed.get(offset, batch.value) != batch.value:
                    raise InvariantViolation(f"node {node.node_id} holds another value at committed offset {offset}")
            for snapshot, data in node.log.snapshots.items():
                self._check_snapshot(node, snapshot, data)

    def all_reached(self, hw: int, nodes: list[int] | None = None) -> bool:
        ids = nodes if nodes is not None else [n.node_id for n in self.alive_nodes()]
        return all(self.nodes[i].alive and self.nodes[i].high_watermark >= hw for i in ids)

    def max_hw(self) -> int:
        return max(n.high_watermark for n in self.nodes.values())
