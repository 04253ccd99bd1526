"""The state of a KRaft voter and its transitions (Kafka's ``QuorumState`` and the ``*State`` classes).

``VoterState`` holds the epoch, the known leader, this node's vote, the election round and the timers of
the current state, and moves between Unattached, Prospective, Candidate, Leader, Follower and Resigned.
Every transition but the one into Resigned is durable: it emits ``PersistElectionState`` before anything
that depends on it (``QuorumState.durableTransitionTo``). ``raft.voter.RaftVoter`` builds on it with the
driver entry points and the message handling; the rules are in docs/raft.md.
"""

from __future__ import annotations

import logging
import random
import uuid
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

from kio.schema.leader_change_message.v0.data import LeaderChangeMessage
from kio.schema.leader_change_message.v0.data import Voter as LeaderChangeVoter
from kio.schema.types import BrokerId
from kio.static.primitive import i16, i32

from ksteward.protocol.apis import ApiKey

from .election import (
    EpochElection,
    QuorumConfig,
    StateKind,
    binary_exponential_backoff_ms,
    random_election_timeout_ms,
)
from .leader import RaftLeader
from .log_view import LogView
from .observer import HighWatermarkUpdated, LeaderChanged, RaftFatalError, RaftObserver
from .quorum_state import INT32_MAX, ElectionState
from .voter_actions import (
    BecameLeader,
    LostLeadership,
    PersistElectionState,
    SendRequest,
    VoterAction,
)

__all__ = ["NEVER", "REQUEST_VERSIONS", "Inflight", "VoterState"]

log = logging.getLogger("ksteward.raft.voter")

#: A timer that is not set.
NEVER = 2**62
#: The versions a voter sends (Kafka 4.0's newest; ksteward peers accept them).
REQUEST_VERSIONS: dict[int, int] = {ApiKey.VOTE: 2, ApiKey.BEGIN_QUORUM_EPOCH: 1, ApiKey.END_QUORUM_EPOCH: 1}


@dataclass(frozen=True, slots=True)
class Inflight:
    destination: int
    api_key: int
    sent_ms: int
    epoch: int
    round: int


class VoterState:
    """The state, the transitions and the bookkeeping of requests in flight; ``RaftVoter`` adds the
    entry points and the message handling."""

    def __init__(
        self,
        *,
        node_id: int,
        cluster_id: str | None,
        voters: Collection[int],
        log: LogView,
        endpoints: Mapping[str, tuple[str, int]],
        config: QuorumConfig,
        rng: random.Random,
        directory_id: uuid.UUID | None = None,
    ) -> None:
        if node_id < 0:
            raise ValueError("a voter needs a node id")
        if not voters:
            raise ValueError("the voter set is empty")
        self.node_id = node_id
        self.cluster_id = cluster_id
        self.voters = frozenset(voters)
        self.is_voter = node_id in self.voters
        self.log = log
        self.endpoints = dict(endpoints)
        self.config = config
        self.rng = rng
        self.directory_id = directory_id
        self._kind = StateKind.UNATTACHED
        self._epoch = 0
        self._leader_id = -1
        self._voted_id = -1
        self._persisted: ElectionState | None = None
        self._high_watermark = -1
        self._election: EpochElection | None = None
        self._round = 0
        self._retries = 1
        self._election_deadline = NEVER
        self._backoff_deadline = NEVER
        self._fetch_deadline = NEVER
        self._has_fetched = False
        self._fetch_inflight: int | None = None
        self._fetch_retry_at = 0
        self._fetch_deferred = False
        self._retry_at: dict[int, int] = {}  # destination -> when a failed Vote/End request may be re-sent
        self._inflight: dict[int, Inflight] = {}
        self._next_request_id = 1
        self._begin_epoch_due = NEVER
        self._end_epoch_pending: set[int] = set()
        self._preferred: list[int] = []
        self._shutdown_deadline = NEVER
        self._shutdown_from_leader = False
        self._responder = self._passive_responder()
        # A parked Fetch comes back within half the fetch timeout: with Kafka's defaults that is its 500 ms (the
        # timeout is 2 s), but a fetch timeout set below 500 ms would otherwise expire while an idle leader still
        # holds the Fetch, and the followers would elect a new leader every fetch timeout.
        max_wait_ms = min(config.fetch_max_wait_ms, config.fetch_timeout_ms // 2)
        self._fetcher = RaftObserver(cluster_id=cluster_id, replica_id=node_id, directory_id=directory_id,
                                     max_wait_ms=max_wait_ms)  # fmt: skip

    # --- state ------------------------------------------------------------------------------------
    @property
    def kind(self) -> StateKind:
        return self._kind

    @property
    def epoch(self) -> int:
        return self._epoch

    @property
    def leader_id(self) -> int:
        """-1 when unknown; this node itself while Leader or Resigned."""
        return self._leader_id

    @property
    def voted_id(self) -> int:
        return self._voted_id

    @property
    def high_watermark(self) -> int:
        """The highest committed end offset this node learnt (-1 unknown); it never goes down."""
        return self._high_watermark

    @property
    def leader(self) -> RaftLeader | None:
        """The leader's Fetch side and progress while this node leads, else None."""
        return self._responder if self._kind is StateKind.LEADER else None

    @property
    def accepts_writes(self) -> bool:
        """Leader, and its LeaderChange record is committed: every earlier record is too, so the controller
        has replayed them all once it applied up to the high watermark (Kafka's ``handleLeaderChange`` on the
        leader fires only then)."""
        leader = self.leader
        return leader is not None and leader.high_watermark > leader.epoch_start_offset

    def election_state(self) -> ElectionState:
        """What ``quorum-state`` holds for the current state."""
        return ElectionState(self._epoch, self._leader_id, self._voted_id, tuple(sorted(self.voters)))

    # --- transitions (QuorumState) ----------------------------------------------------------------
    def _set_kind(self, kind: StateKind, actions: list[VoterAction], reason: str = "") -> None:
        """Switch to ``kind`` with the epoch, leader and vote already set; persist first when the election
        state changed (every state but Resigned is durable: ``QuorumState.durableTransitionTo``)."""
        was = self._kind
        self._kind = kind
        if kind is not StateKind.RESIGNED:
            state = self.election_state()
            if state != self._persisted:
                actions.append(PersistElectionState(state))
                self._persisted = state
        if was is StateKind.LEADER and kind is not StateKind.LEADER:
            if not reason:
                leader = f"node {self._leader_id}" if self._leader_id >= 0 else "an unknown leader"
                reason = f"epoch {self._epoch} began, led by {leader}"
            actions.append(LostLeadership(self._responder.epoch, reason))
        if kind is not StateKind.LEADER:
            self._responder = self._passive_responder()
        self._election = None if kind not in (StateKind.PROSPECTIVE, StateKind.CANDIDATE) else self._election
        self._backoff_deadline = NEVER
        if kind in (StateKind.LEADER, StateKind.FOLLOWER):
            self._election_deadline = NEVER
        if kind is not StateKind.FOLLOWER:
            self._fetch_deadline = NEVER
            self._fetch_inflight = None
        if kind is not StateKind.LEADER:
            self._begin_epoch_due = NEVER
        if kind is not StateKind.RESIGNED:
            self._end_epoch_pending.clear()

    def _announce(self, old: tuple[int, int], actions: list[VoterAction]) -> None:
        if (self._leader_id, self._epoch) != old:
            leader = self._leader_id if self._leader_id >= 0 else None
            actions.append(LeaderChanged(leader, self._epoch, None))

    def _passive_responder(self) -> RaftLeader:
        """How this node answers Fetch and FetchSnapshot while it does not lead: ``NOT_LEADER_OR_FOLLOWER``
        naming the leader it knows, or the epoch errors."""
        return RaftLeader(node_id=self.node_id, cluster_id=self.cluster_id or "", epoch=self._epoch, log=self.log,
                          endpoints=self.endpoints, active=False, current_leader_id=self._leader_id)  # fmt: skip

    def _election_timer(self, now_ms: int) -> int:
        return now_ms + random_election_timeout_ms(self.config, self.rng) if self.is_voter else NEVER

    def _to_unattached(
        self,
        epoch: int,
        leader_id: int,
        voted_id: int,
        now_ms: int,
        actions: list[VoterAction],
        *,
        keep_timer: bool = False,
    ) -> None:
        old = (self._leader_id, self._epoch)
        keep = keep_timer and self._kind in (StateKind.UNATTACHED, StateKind.CANDIDATE, StateKind.PROSPECTIVE)
        deadline = self._election_deadline if keep and self._election_deadline < NEVER else self._election_timer(now_ms)
        self._epoch, self._leader_id, self._voted_id = epoch, leader_id, voted_id
        self._set_kind(StateKind.UNATTACHED, actions)
        self._election_deadline = deadline
        self._announce(old, actions)

    def _to_follower(self, epoch: int, leader_id: int, now_ms: int, actions: list[VoterAction]) -> None:
        old = (self._leader_id, self._epoch)
        if epoch != self._epoch:
            self._voted_id = -1
        self._epoch, self._leader_id = epoch, leader_id
        self._set_kind(StateKind.FOLLOWER, actions)
        self._election_deadline = NEVER
        self._fetch_deadline = now_ms + self.config.fetch_timeout_ms if self.is_voter else NEVER
        self._has_fetched = False
        self._fetch_retry_at = 0
        self._sync_fetcher(actions)
        self._announce(old, actions)

    def _sync_fetcher(self, actions: list[VoterAction]) -> None:
        """The follower's fetch side follows this node's epoch and leader; a download of another leader ends."""
        actions.extend(self._fetcher.follow(self._leader_id if self._leader_id >= 0 else None, self._epoch))

    def _to_prospective(self, now_ms: int, actions: list[VoterAction], *, retries: int = 1) -> None:
        """KIP-996: ask for pre-votes at the current epoch before bumping it. Leader and vote are kept."""
        if len(self.voters) > 1:
            log.info("node %d asks for pre-votes in epoch %d (%s timed out)", self.node_id, self._epoch,
                     "its fetch" if self._kind is StateKind.FOLLOWER else "its election timer")  # fmt: skip
        self._set_kind(StateKind.PROSPECTIVE, actions)
        self._retries = retries
        self._start_round(now_ms)
        if self._election is not None and self._election.is_granted():
            self._to_candidate(now_ms, actions)

    def _to_candidate(self, now_ms: int, actions: list[VoterAction]) -> None:
        if self._epoch >= INT32_MAX:
            # Kafka's epoch + 1 would wrap to a negative int here. Only a forged request (a Vote or a
            # BeginQuorumEpoch from a CLUSTER_ACTION principal carrying the largest epoch) can bring a quorum this
            # far; no election can follow it, and the voter says so at each election timeout instead.
            log.error("node %d cannot run for leader: epoch %d is the largest an int32 holds", self.node_id,
                      self._epoch)  # fmt: skip
            self._to_unattached(self._epoch, -1, self._voted_id, now_ms, actions)
            return
        old = (self._leader_id, self._epoch)
        self._epoch, self._leader_id, self._voted_id = self._epoch + 1, -1, self.node_id
        if len(self.voters) > 1:
            log.info("node %d runs for leader of epoch %d", self.node_id, self._epoch)
        self._set_kind(StateKind.CANDIDATE, actions)
        self._start_round(now_ms)
        self._announce(old, actions)
        if self._election is not None and self._election.is_granted():
            self._to_leader(now_ms, actions)

    def _start_round(self, now_ms: int) -> None:
        self._round += 1
        self._election = EpochElection(self.node_id, self.voters)
        self._election_deadline = self._election_timer(now_ms)
        self._backoff_deadline = NEVER
        self._retry_at.clear()

    def _to_leader(self, now_ms: int, actions: list[VoterAction]) -> None:
        """``onBecomeLeader``: durable first, then the LeaderChange record at the log end, then BeginQuorumEpoch."""
        granted = sorted(self._election.granted) if self._election is not None else [self.node_id]
        self._leader_id = self.node_id
        self._set_kind(StateKind.LEADER, actions)
        start = self.log.log_end_offset
        self._responder = RaftLeader(
            node_id=self.node_id, cluster_id=self.cluster_id or "", epoch=self._epoch, log=self.log,
            endpoints=self.endpoints, voters=self.voters, epoch_start_offset=start, now_ms=now_ms,
            check_quorum_timeout_ms=self.config.check_quorum_timeout_ms,
        )  # fmt: skip
        message = LeaderChangeMessage(
            version=i16(0),
            leader_id=BrokerId(self.node_id),
            voters=tuple(LeaderChangeVoter(voter_id=i32(v)) for v in sorted(self.voters)),
            granting_voters=tuple(LeaderChangeVoter(voter_id=i32(v)) for v in granted),
        )
        actions.append(BecameLeader(self._epoch, start, message))
        actions.append(LeaderChanged(self.node_id, self._epoch, None))
        self._begin_epoch_due = now_ms
        log.info(
            "node %d is leader of epoch %d from offset %d (votes from %s)", self.node_id, self._epoch, start, granted
        )

    def _resign(self, reason: str, now_ms: int, actions: list[VoterAction]) -> None:
        preferred = self._responder.voters_by_fetch_offset()
        log.info("node %d resigns as leader of epoch %d: %s", self.node_id, self._epoch, reason)
        self._set_kind(StateKind.RESIGNED, actions, reason)
        self._enter_resigned(preferred, now_ms)

    def _enter_resigned(self, preferred: list[int], now_ms: int) -> None:
        self._kind = StateKind.RESIGNED
        self._responder = self._passive_responder()
        self._preferred = preferred
        self._end_epoch_pending = set(preferred)
        self._retry_at.clear()
        self._election_deadline = self._election_timer(now_ms)

    def _maybe_transition(self, leader_id: int, epoch: int, now_ms: int, actions: list[VoterAction]) -> None:
        """``KafkaRaftClient.maybeTransition``: adopt a higher epoch (with its leader when named), or learn the
        leader of the current epoch."""
        if leader_id == self.node_id:
            if epoch > self._epoch:
                # Only after losing quorum-state: this node cannot follow itself, so it waits unattached.
                log.warning("a peer names node %d leader of epoch %d, above its own %d", leader_id, epoch, self._epoch)
                self._to_unattached(epoch, -1, -1, now_ms, actions)
            return
        if leader_id >= 0 and leader_id not in self.voters:
            # A leader outside the static voter set has no endpoint to fetch from: Unattached, knowing its id.
            if epoch > self._epoch or (epoch == self._epoch and self._leader_id < 0):
                self._to_unattached(epoch, leader_id, self._voted_id if epoch == self._epoch else -1, now_ms, actions)
            return
        if epoch > self._epoch:
            if leader_id >= 0:
                self._to_follower(epoch, leader_id, now_ms, actions)
            else:
                self._to_unattached(epoch, -1, -1, now_ms, actions, keep_timer=True)
        elif epoch == self._epoch and leader_id >= 0:
            if self._leader_id < 0:
                self._to_follower(epoch, leader_id, now_ms, actions)
            elif self._leader_id != leader_id:
                raise RaftFatalError(
                    f"node {leader_id} is named leader of epoch {epoch}, which node {self._leader_id} leads"
                )

    def _has_inflight(self, destination: int, api_key: int) -> bool:
        return any(
            i.destination == destination and i.api_key == api_key and i.round == self._round
            for i in self._inflight.values()
        )

    def _may_send(self, destination: int, api_key: int, now_ms: int) -> bool:
        return now_ms >= self._retry_at.get(destination, 0) and not self._has_inflight(destination, api_key)

    def _send(
        self, destination: int, api_key: int, body: Any, now_ms: int, actions: list[VoterAction], version: int = -1
    ) -> int:
        request_id = self._next_request_id
        self._next_request_id += 1
        self._inflight[request_id] = Inflight(destination, api_key, now_ms, self._epoch, self._round)
        api_version = version if version >= 0 else REQUEST_VERSIONS[api_key]
        actions.append(SendRequest(destination, api_key, api_version, body, request_id))
        return request_id

    def _on_failure(self, request_id: int, info: Inflight, now_ms: int) -> None:
        """No answer (timeout, connection error): retry after the back-off."""
        if request_id == self._fetch_inflight:
            self._fetch_inflight = None
            self._fetch_retry_at = now_ms + self.config.retry_backoff_ms
        elif info.api_key != ApiKey.FETCH and info.api_key != ApiKey.FETCH_SNAPSHOT:
            self._retry_at[info.destination] = now_ms + self.config.retry_backoff_ms

    # --- elections --------------------------------------------------------------------------------
    def _start_backoff(self, now_ms: int) -> None:
        """A candidate that lost or timed out waits a random back-off, then runs a new pre-vote."""
        self._backoff_deadline = now_ms + binary_exponential_backoff_ms(self.config, self._retries, self.rng)

    def _prospective_failed(self, now_ms: int, actions: list[VoterAction]) -> None:
        """Back to following the leader it knew, else Unattached (KIP-996); a new election timeout."""
        log.info("node %d: the pre-vote in epoch %d failed", self.node_id, self._epoch)
        if self._leader_id >= 0 and self._leader_id != self.node_id and self._leader_id in self.voters:
            self._to_follower(self._epoch, self._leader_id, now_ms, actions)
        else:
            self._to_unattached(self._epoch, self._leader_id, self._voted_id, now_ms, actions)

    def _maybe_finish_election(self, now_ms: int, actions: list[VoterAction]) -> None:
        election = self._election
        if election is None:
            return
        if election.is_granted():
            if self._kind is StateKind.PROSPECTIVE:
                self._to_candidate(now_ms, actions)
            else:
                self._to_leader(now_ms, actions)
        elif election.is_rejected():
            if self._kind is StateKind.PROSPECTIVE:
                self._prospective_failed(now_ms, actions)
            elif self._backoff_deadline == NEVER:
                self._start_backoff(now_ms)

    def _report_high_watermark(self, offset: int, actions: list[VoterAction]) -> None:
        if offset > self._high_watermark:
            self._high_watermark = offset
            actions.append(HighWatermarkUpdated(offset))
