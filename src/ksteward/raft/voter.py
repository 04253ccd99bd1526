"""A KRaft voter of a static quorum (KIP-595 with KIP-996 pre-vote) as a sans-IO state machine.

Kafka's ``KafkaRaftClient`` + ``QuorumState`` for a replica in ``controller.quorum.voters``: the states
Unattached, Prospective, Candidate, Leader, Follower and Resigned (``raft.election.StateKind``), Vote (52),
BeginQuorumEpoch (53) and EndQuorumEpoch (54) on both sides, and the Fetch/FetchSnapshot path: as leader
through ``RaftLeader``, as follower through ``RaftObserver`` (a voter-follower is an observer that also
votes, sends its replica id and fsyncs before it fetches again). A node id outside ``voters`` runs as a
non-voter: it answers votes but never starts an election. No sockets, no clock, no files: time is passed
in as ``now_ms`` (a monotonic millisecond clock) and randomness comes from the injected ``random.Random``.

How a driver uses it
--------------------
::

    voter = RaftVoter(node_id=1, cluster_id=cid, voters={1, 2, 3}, log=view, endpoints={"CONTROLLER": (h, p)},
                      config=QuorumConfig(), rng=random.Random())
    perform(voter.start(read_quorum_state(path), now_ms))        # once, before anything else
    loop:
        on a timer (at the latest at voter.next_deadline_ms(), asked again after every call; it may be
        "now", e.g. the next Fetch is built only once the batches just received are in the log):
            perform(voter.tick(now_ms))
        on a request (Vote, BeginQuorumEpoch, EndQuorumEpoch, Fetch, FetchSnapshot) from a peer or broker:
            response, actions = voter.handle_request(api_key, api_version, request, listener, now_ms)
            perform(actions); then send ``response`` -- or, when it is a ``ParkedFetch``, park it until the
            served end passes its fetch offset, ``max_wait_ms`` passes or a ``LostLeadership`` comes, then
            ``response, actions = voter.complete_fetch(request, api_version, listener, now_ms)``
        on the response to a ``SendRequest``:  perform(voter.handle_response(request_id, response, now_ms))
        when a ``SendRequest`` cannot be sent or its connection fails:
            perform(voter.handle_request_failure(request_id, now_ms))
        when the leader's log became durable further (its group commit fsynced):
            perform(voter.on_log_flushed(now_ms))

``perform`` carries out the actions **in order**, each finished before the next starts
(``raft.voter_actions``):

- ``PersistElectionState(state)``: ``write_quorum_state`` (temp file, fsync, rename) -- it always comes
  before any ``SendRequest``, ``BecameLeader`` or response that depends on it, and ``handle_request``'s
  response may only be sent after the actions returned with it were performed;
- ``SendRequest(destination, api_key, api_version, body, request_id)``: send to that voter;
- ``AppendBatches`` / ``TruncateTo`` / the snapshot steps: as ``FollowerLog.apply_one`` does for a broker;
- ``FlushLog()``: fsync the log (follows every ``AppendBatches`` of a voter; the next Fetch is only
  produced after it, since the driver performs it first);
- ``BecameLeader(epoch, epoch_start_offset, leader_change)``: "I am leader in epoch E from offset X":
  append the LeaderChange control batch at X with epoch E (``GroupCommitter.begin_epoch``) and write
  every later batch with epoch E; serve writes once the high watermark passes X;
- ``LostLeadership(epoch, reason)``: "I lost leadership": complete parked Fetches, fail pending writes
  with NOT_CONTROLLER (unknown outcome), revert to the last committed state;
- ``LeaderChanged(leader_id, epoch, endpoint)``: the known leader or epoch changed (log it; a broker
  channel may re-route); ``endpoint`` is always None here (static voters: the driver knows addresses);
- ``HighWatermarkUpdated(offset)``: offsets below ``offset`` are committed -- on the leader and on
  followers alike; it never goes down. ``voter.high_watermark`` holds the latest (-1 unknown).

State for logging and DescribeQuorum: ``kind``, ``epoch``, ``leader_id``, ``voted_id``, ``leader`` (the
``RaftLeader`` while leading, whose ``describe(now_ms)`` DescribeQuorum reports), ``accepts_writes`` (leading,
and the epoch's LeaderChange record committed). ``resign(epoch,
now_ms)`` gives leadership up; ``begin_shutdown(now_ms, timeout_ms)`` and ``shutdown_complete(now_ms)`` are
Kafka's graceful shutdown. Errors Kafka treats as fatal raise ``RaftFatalError``. docs/raft.md has the rules.
"""

from __future__ import annotations

import logging
from typing import Any, NamedTuple

from kio.schema.errors import ErrorCode

from ksteward.metadata.epochs import OffsetAndEpoch
from ksteward.protocol.apis import ApiKey

from . import messages
from .election import (
    StateKind,
    can_grant_vote,
    log_up_to_date,
    strict_exponential_backoff_ms,
)
from .leader import ParkedFetch
from .observer import Backoff, HighWatermarkUpdated, LeaderChanged, RaftRefusedError
from .quorum_state import ElectionState
from .replica_states import NEVER, REQUEST_VERSIONS, Inflight, VoterState
from .voter_actions import (
    AppendBatches,
    FlushLog,
    VoterAction,
)

__all__ = ["RaftVoter"]

log = logging.getLogger(__name__)


class RaftVoter(VoterState):
    """See the module docstring."""

    # --- driver entry points ----------------------------------------------------------------------
    def start(self, stored: ElectionState | None, now_ms: int) -> list[VoterAction]:
        """``QuorumState.initialize`` from the stored state (None: no file), then the first poll."""
        actions: list[VoterAction] = []
        self._persisted = stored
        log_epoch = max(self.log.last_fetched_epoch, 0)
        if stored is None or stored.leader_epoch < log_epoch:
            if stored is not None:
                log.warning("quorum-state epoch %d is behind the log's epoch %d", stored.leader_epoch, log_epoch)
            self._to_unattached(log_epoch, -1, -1, now_ms, actions)
        elif stored.leader_id == self.node_id and self.is_voter:
            # A restarted leader comes back Resigned: it must never lead the same epoch twice.
            self._epoch, self._leader_id, self._voted_id = stored.leader_epoch, self.node_id, stored.voted_id
            self._enter_resigned(list(sorted(self.voters - {self.node_id})), now_ms)
        elif stored.voted_id == self.node_id and stored.leader_id < 0 and self.is_voter:
            self._epoch, self._voted_id = stored.leader_epoch, self.node_id
            self._set_kind(StateKind.CANDIDATE, actions)
            self._start_round(now_ms)
        elif stored.leader_id >= 0 and stored.leader_id != self.node_id:
            self._epoch, self._voted_id = stored.leader_epoch, stored.voted_id  # the same epoch keeps the vote
            self._maybe_transition(stored.leader_id, stored.leader_epoch, now_ms, actions)
        else:
            self._to_unattached(stored.leader_epoch, stored.leader_id, stored.voted_id, now_ms, actions)
        if self.voters == {self.node_id}:  # a quorum of one elects itself at once
            if self._kind is StateKind.CANDIDATE:
                self._to_leader(now_ms, actions)
            else:
                self._to_candidate(now_ms, actions)
        self._poll(now_ms, actions)
        return actions

    def tick(self, now_ms: int) -> list[VoterAction]:
        actions: list[VoterAction] = []
        self._poll(now_ms, actions)
        return actions

    def next_deadline_ms(self) -> int:
        """The latest time ``tick`` must run next (earlier is harmless)."""
        kind = self._kind
        deadlines = [NEVER]
        if kind is StateKind.LEADER:
            deadlines.append(self._begin_epoch_due)
            if self._responder.check_quorum_deadline_ms() >= 0:
                deadlines.append(self._responder.check_quorum_deadline_ms())
        elif kind is StateKind.FOLLOWER:
            deadlines.append(self._fetch_deadline)
            if self._fetch_inflight is None:
                deadlines.append(self._fetch_retry_at)  # "now" after a Fetch answer changed the log
        elif kind is StateKind.CANDIDATE and self._backoff_deadline < NEVER:
            deadlines.append(self._backoff_deadline)
        else:
            deadlines.append(self._election_deadline)
        deadlines.extend(info.sent_ms + self.config.request_timeout_ms for info in self._inflight.values())
        deadlines.extend(self._retry_at.values())
        return min(deadlines)

    def handle_request(
        self, api_key: int, api_version: int, request: Any, listener: str, now_ms: int
    ) -> tuple[Any | ParkedFetch, list[VoterAction]]:
        """Answer a Vote, BeginQuorumEpoch, EndQuorumEpoch, Fetch or FetchSnapshot request."""
        actions: list[VoterAction] = []
        if api_key == ApiKey.FETCH:
            response = self._responder.handle_fetch(request, api_version, listener, now_ms)
            self._after_leader_fetch(actions)
        elif api_key == ApiKey.FETCH_SNAPSHOT:
            response = self._responder.handle_fetch_snapshot(request, api_version, listener, now_ms)
        elif api_key == ApiKey.VOTE:
            response = self._handle_vote(request, api_version, listener, now_ms, actions)
        elif api_key == ApiKey.BEGIN_QUORUM_EPOCH:
            response = self._handle_begin_epoch(request, api_version, listener, now_ms, actions)
        elif api_key == ApiKey.END_QUORUM_EPOCH:
            response = self._handle_end_epoch(request, api_version, listener, now_ms, actions)
        else:
            raise ValueError(f"not a KRaft request: api key {api_key}")
        self._poll(now_ms, actions)
        return response, actions

    def complete_fetch(
        self, request: Any, api_version: int, listener: str, now_ms: int
    ) -> tuple[Any, list[VoterAction]]:
        """Answer a parked Fetch now (its wait ended, or leadership was lost)."""
        actions: list[VoterAction] = []
        response = self._responder.complete_fetch(request, api_version, listener, now_ms)
        self._after_leader_fetch(actions)
        return response, actions

    def handle_response(self, request_id: int, response: Any, now_ms: int) -> list[VoterAction]:
        actions: list[VoterAction] = []
        info = self._inflight.pop(request_id, None)
        if info is not None:  # else it timed out already, or is from before a restart: ignored
            if info.api_key in (ApiKey.FETCH, ApiKey.FETCH_SNAPSHOT):
                self._on_fetch_response(request_id, info, response, now_ms, actions)
            else:
                self._on_quorum_response(info, response, now_ms, actions)
        self._poll(now_ms, actions)
        return actions

    def handle_request_failure(self, request_id: int, now_ms: int) -> list[VoterAction]:
        actions: list[VoterAction] = []
        info = self._inflight.pop(request_id, None)
        if info is not None:
            self._on_failure(request_id, info, now_ms)
        self._poll(now_ms, actions)
        return actions

    def on_log_flushed(self, now_ms: int) -> list[VoterAction]:
        """The leader's served (durable) end moved: the high watermark may follow."""
        actions: list[VoterAction] = []
        if self._kind is StateKind.LEADER:
            self._responder.update_high_watermark()
            self._report_high_watermark(self._responder.high_watermark, actions)
        self._poll(now_ms, actions)
        return actions

    def resign(self, epoch: int, now_ms: int) -> list[VoterAction]:
        """``KafkaRaftClient.resign``: give up leading ``epoch`` (the controller lost its claim)."""
        if epoch > self._epoch:
            raise ValueError(f"cannot resign epoch {epoch}: the current epoch is {self._epoch}")
        actions: list[VoterAction] = []
        if epoch < self._epoch or self._kind is StateKind.RESIGNED:
            return actions
        if self._kind is not StateKind.LEADER:
            raise ValueError(f"cannot resign epoch {epoch}: this node is {self._kind.value}, not leader")
        self._resign("resign requested", now_ms, actions)
        self._poll(now_ms, actions)
        return actions

    def begin_shutdown(self, now_ms: int, timeout_ms: int) -> list[VoterAction]:
        """Kafka's graceful shutdown: a leader resigns and keeps voting until a successor is known."""
        actions: list[VoterAction] = []
        self._shutdown_deadline = now_ms + timeout_ms
        if self._kind is StateKind.LEADER:
            self._shutdown_from_leader = True
            self._resign("shutting down", now_ms, actions)
        self._poll(now_ms, actions)
        return actions

    def shutdown_complete(self, now_ms: int) -> bool:
        """``maybeCompleteShutdown``: at once for a follower or a quorum of one; a former leader, candidate or
        prospective waits for another leader to be known, at most until the timeout."""
        if now_ms >= self._shutdown_deadline or self.voters == {self.node_id}:
            return True
        if self._kind is StateKind.FOLLOWER:
            return True
        return self._kind is StateKind.UNATTACHED and not self._shutdown_from_leader

    # --- poll: timers and outbound requests (KafkaRaftClient.poll*) -------------------------------
    def _poll(self, now_ms: int, actions: list[VoterAction]) -> None:
        for request_id, info in list(self._inflight.items()):
            if info.sent_ms + self.config.request_timeout_ms <= now_ms:
                del self._inflight[request_id]
                self._on_failure(request_id, info, now_ms)
        self._poll_timers(now_ms, actions)
        self._poll_sends(now_ms, actions)
        for destination in [d for d, at in self._retry_at.items() if at <= now_ms]:
            del self._retry_at[destination]  # a passed back-off is no deadline

    def _poll_timers(self, now_ms: int, actions: list[VoterAction]) -> None:
        kind = self._kind
        if kind is StateKind.LEADER and self._responder.check_quorum_expired(now_ms):
            timeout = self.config.check_quorum_timeout_ms
            self._resign(f"check-quorum: no Fetch from a majority of the voters within {timeout} ms", now_ms, actions)
        elif kind in (StateKind.UNATTACHED, StateKind.RESIGNED) and now_ms >= self._election_deadline:
            self._to_prospective(now_ms, actions)
        elif kind is StateKind.PROSPECTIVE and now_ms >= self._election_deadline:
            self._prospective_failed(now_ms, actions)
        elif kind is StateKind.CANDIDATE:
            if self._backoff_deadline < NEVER:
                if now_ms >= self._backoff_deadline:
                    self._to_prospective(now_ms, actions, retries=self._retries + 1)
            elif now_ms >= self._election_deadline:
                self._start_backoff(now_ms)
        elif kind is StateKind.FOLLOWER and now_ms >= self._fetch_deadline:
            log.info("node %d: no Fetch answer from leader %d within the fetch timeout", self.node_id, self._leader_id)
            self._to_prospective(now_ms, actions)

    def _poll_sends(self, now_ms: int, actions: list[VoterAction]) -> None:
        kind = self._kind
        if kind is StateKind.LEADER and now_ms >= self._begin_epoch_due:
            self._begin_epoch_due = now_ms + self.config.begin_quorum_epoch_period_ms
            for voter in sorted(self.voters - {self.node_id}):
                if not self._has_inflight(voter, ApiKey.BEGIN_QUORUM_EPOCH):
                    body = messages.begin_quorum_epoch_request(
                        REQUEST_VERSIONS[ApiKey.BEGIN_QUORUM_EPOCH], cluster_id=self.cluster_id, voter_id=voter,
                        leader_id=self.node_id, epoch=self._epoch, endpoints=self.endpoints,
                    )  # fmt: skip
                    self._send(voter, ApiKey.BEGIN_QUORUM_EPOCH, body, now_ms, actions)
        elif kind is StateKind.RESIGNED:
            for voter in sorted(self._end_epoch_pending):
                if self._may_send(voter, ApiKey.END_QUORUM_EPOCH, now_ms):
                    body = messages.end_quorum_epoch_request(
                        REQUEST_VERSIONS[ApiKey.END_QUORUM_EPOCH], cluster_id=self.cluster_id, leader_id=self.node_id,
                        epoch=self._epoch, preferred=self._preferred, endpoints=self.endpoints,
                    )  # fmt: skip
                    self._send(voter, ApiKey.END_QUORUM_EPOCH, body, now_ms, actions)
        elif kind in (StateKind.PROSPECTIVE, StateKind.CANDIDATE) and self._backoff_deadline == NEVER:
            assert self._election is not None
            for voter in sorted(self._election.unrecorded() - {self.node_id}):
                if self._may_send(voter, ApiKey.VOTE, now_ms):
                    body = messages.vote_request(
                        REQUEST_VERSIONS[ApiKey.VOTE], cluster_id=self.cluster_id, voter_id=voter, epoch=self._epoch,
                        replica_id=self.node_id, last_epoch=self.log.last_fetched_epoch,
                        last_offset=self.log.log_end_offset, pre_vote=kind is StateKind.PROSPECTIVE,
                        replica_directory_id=self.directory_id,
                    )  # fmt: skip
                    self._send(voter, ApiKey.VOTE, body, now_ms, actions)
        elif self._fetch_deferred:
            self._fetch_deferred = False  # next_deadline_ms() is now: the driver ticks once it did the actions
        elif (
            kind is StateKind.FOLLOWER
            and self._fetch_inflight is None
            and now_ms >= self._fetch_retry_at
            and self._leader_id >= 0
        ):
            api_key, version, body = self._fetcher.next_request(self.log)
            self._fetch_inflight = self._send(self._leader_id, api_key, body, now_ms, actions, version)

    # --- responses --------------------------------------------------------------------------------
    def _handle_common(
        self, error: ErrorCode, leader_id: int, epoch: int, now_ms: int, actions: list[VoterAction]
    ) -> bool | None:
        """``maybeHandleCommonResponse``: None when the specific handler goes on; True when handled; False
        when handled and the request should be retried after the back-off."""
        if epoch < self._epoch or error == ErrorCode.unknown_leader_epoch:
            return True
        if epoch > self._epoch or error in (ErrorCode.fenced_leader_epoch, ErrorCode.not_leader_or_follower):
            before = (self._kind, self._epoch, self._leader_id)
            self._maybe_transition(leader_id, epoch, now_ms, actions)
            return before != (self._kind, self._epoch, self._leader_id)
        if leader_id >= 0 and self._leader_id < 0:
            self._maybe_transition(leader_id, epoch, now_ms, actions)
            return None if error == ErrorCode.none else True
        if error == ErrorCode.broker_not_available:
            return False
        if error == ErrorCode.invalid_request:
            raise RaftRefusedError("a peer answered INVALID_REQUEST to this node's request")
        return None

    def _on_quorum_response(self, info: Inflight, response: Any, now_ms: int, actions: list[VoterAction]) -> None:
        top = ErrorCode(response.error_code)
        if top == ErrorCode.cluster_authorization_failed:
            raise RaftRefusedError(f"node {info.destination} refused this node: CLUSTER_AUTHORIZATION_FAILED")
        if top == ErrorCode.unsupported_version and info.api_key == ApiKey.VOTE:
            if self._kind is StateKind.PROSPECTIVE and info.round == self._round:
                self._to_candidate(now_ms, actions)  # the quorum cannot pre-vote: a standard election
            return
        partition = messages.metadata_partition(response) if top == ErrorCode.none else None
        if partition is None:
            self._retry_at[info.destination] = now_ms + self.config.retry_backoff_ms
            return
        error = ErrorCode(partition.error_code)
        handled = self._handle_common(error, int(partition.leader_id), int(partition.leader_epoch), now_ms, actions)
        if handled is not None:
            if not handled:
                self._retry_at[info.destination] = now_ms + self.config.retry_backoff_ms
            return
        if info.api_key == ApiKey.VOTE:
            if info.round != self._round or self._kind not in (StateKind.PROSPECTIVE, StateKind.CANDIDATE):
                return
            if error not in (ErrorCode.none, ErrorCode.invalid_voter_key):
                self._retry_at[info.destination] = now_ms + self.config.retry_backoff_ms
                return
            assert self._election is not None
            self._election.record(info.destination, error == ErrorCode.none and bool(partition.vote_granted))
            self._maybe_finish_election(now_ms, actions)
        elif info.api_key == ApiKey.BEGIN_QUORUM_EPOCH:
            if self._kind is StateKind.LEADER and error == ErrorCode.none and info.epoch == self._epoch:
                self._responder.acknowledged.add(info.destination)
        elif info.api_key == ApiKey.END_QUORUM_EPOCH and info.epoch == self._epoch:
            self._end_epoch_pending.discard(info.destination)

    def _on_fetch_response(
        self, request_id: int, info: Inflight, response: Any, now_ms: int, actions: list[VoterAction]
    ) -> None:
        current = request_id == self._fetch_inflight
        if current:
            self._fetch_inflight = None
        top = ErrorCode(response.error_code)
        if top == ErrorCode.cluster_authorization_failed:
            raise RaftRefusedError("the leader refused this node: CLUSTER_AUTHORIZATION_FAILED")
        data = _fetch_partition(info.api_key, response) if top == ErrorCode.none else None
        if data is None:
            self._fetch_retry_at = now_ms + self.config.retry_backoff_ms
            return
        error = ErrorCode(data.error_code)
        leader_id, epoch = int(data.current_leader.leader_id), int(data.current_leader.leader_epoch)
        handled = self._handle_common(error, leader_id, epoch, now_ms, actions)
        if handled is not None:
            if not handled:
                self._fetch_retry_at = now_ms + self.config.retry_backoff_ms
            return
        if not current or self._kind is not StateKind.FOLLOWER or info.epoch != self._epoch:
            return  # e.g. an answer from the old leader after this node became Prospective: nothing is appended
        # The fetch side handles the rest, errors too (SNAPSHOT_NOT_FOUND ends a download).
        for action in self._fetcher.on_response(info.api_key, response, self.log):
            if isinstance(action, Backoff):
                self._fetch_retry_at = now_ms + self.config.retry_backoff_ms
            elif isinstance(action, HighWatermarkUpdated):
                self._report_high_watermark(action.offset, actions)
            elif isinstance(action, AppendBatches):
                actions.append(action)
                actions.append(FlushLog())  # a voter's appends are durable before its next Fetch
            elif not isinstance(action, LeaderChanged):
                actions.append(action)
            if not isinstance(action, Backoff | HighWatermarkUpdated | LeaderChanged):
                # The next Fetch is built from the log these actions change: only after the driver did them.
                self._fetch_deferred = True
        if error == ErrorCode.none:
            self._fetch_deadline = now_ms + self.config.fetch_timeout_ms
            self._has_fetched = True
        elif not self._fetch_deferred:
            self._fetch_retry_at = now_ms + self.config.retry_backoff_ms

    def _after_leader_fetch(self, actions: list[VoterAction]) -> None:
        if self._kind is StateKind.LEADER:
            self._report_high_watermark(self._responder.high_watermark, actions)

    # --- requests ---------------------------------------------------------------------------------
    def _valid_cluster_id(self, cluster_id: str | None) -> bool:
        return cluster_id is None or cluster_id == self.cluster_id

    def _own_endpoint(self, listener: str) -> list[dict[str, Any]]:
        address = self.endpoints.get(listener) if self._kind is StateKind.LEADER else None
        return [] if address is None else [{"node_id": self.node_id, "host": address[0], "port": address[1]}]

    def _handle_vote(self, request: Any, version: int, listener: str, now_ms: int, actions: list[VoterAction]) -> Any:
        """``handleVoteRequest``: the order of checks matters; a higher epoch is adopted before the voter key
        and the log are looked at, pre-votes included."""

        def reply(error: ErrorCode = ErrorCode.none, granted: bool = False, top: ErrorCode = ErrorCode.none) -> Any:
            return messages.vote_response(version, error=error, top_error=top, leader_id=self._leader_id,
                                          epoch=self._epoch, granted=granted,
                                          node_endpoints=self._own_endpoint(listener))  # fmt: skip

        if not self._valid_cluster_id(request.cluster_id):
            return reply(top=ErrorCode.inconsistent_cluster_id)
        partition = messages.metadata_partition(request)
        if partition is None:
            return reply(top=ErrorCode.invalid_request)
        epoch, candidate = int(partition.replica_epoch), int(partition.replica_id)
        last = OffsetAndEpoch(int(partition.last_offset), int(partition.last_offset_epoch))
        pre_vote = bool(getattr(partition, "pre_vote", False))
        if last.offset < 0 or last.epoch < 0 or last.epoch > epoch or (not pre_vote and last.epoch == epoch):
            return reply(ErrorCode.invalid_request)
        if epoch < self._epoch:
            return reply(ErrorCode.fenced_leader_epoch)
        if candidate < 0:
            return reply(ErrorCode.invalid_request)
        if epoch > self._epoch:
            self._to_unattached(epoch, -1, -1, now_ms, actions, keep_timer=True)
        if version >= 1 and (
            int(request.voter_id) != self.node_id
            or not messages.directory_matches(partition.voter_directory_id, self.directory_id)
        ):
            return reply(ErrorCode.invalid_voter_key)
        local = OffsetAndEpoch(self.log.log_end_offset, self.log.last_fetched_epoch)
        granted = can_grant_vote(
            self._kind, pre_vote=pre_vote, log_up_to_date=log_up_to_date(last, local), candidate_id=candidate,
            voted_id=self._voted_id, leader_id=self._leader_id, has_fetched=self._has_fetched,
        )  # fmt: skip
        if granted and not pre_vote and self._voted_id < 0:
            log.info("node %d votes for node %d in epoch %d", self.node_id, candidate, epoch)
            self._to_unattached(epoch, -1, candidate, now_ms, actions)  # durable before the reply goes out
        return reply(granted=granted)

    def _epoch_reply(
        self,
        api_key: int,
        version: int,
        listener: str,
        error: ErrorCode = ErrorCode.none,
        top: ErrorCode = ErrorCode.none,
    ) -> Any:
        return messages.epoch_response(api_key, version, error=error, top_error=top, leader_id=self._leader_id,
                                       epoch=self._epoch, node_endpoints=self._own_endpoint(listener))  # fmt: skip

    def _check_epoch_request(self, key: ApiKey, request: Any, version: int, listener: str) -> _EpochRequest | Any:
        """The checks BeginQuorumEpoch and EndQuorumEpoch share, in Kafka's order: the cluster id, exactly the
        metadata partition, an epoch not below this voter's. The request's partition, epoch and leader, or the
        error reply."""
        if not self._valid_cluster_id(request.cluster_id):
            return self._epoch_reply(key, version, listener, top=ErrorCode.inconsistent_cluster_id)
        partition = messages.metadata_partition(request)
        if partition is None:
            return self._epoch_reply(key, version, listener, top=ErrorCode.invalid_request)
        epoch, leader_id = int(partition.leader_epoch), int(partition.leader_id)
        if epoch < self._epoch:
            return self._epoch_reply(key, version, listener, ErrorCode.fenced_leader_epoch)
        return _EpochRequest(partition, epoch, leader_id)

    def _handle_begin_epoch(
        self, request: Any, version: int, listener: str, now_ms: int, actions: list[VoterAction]
    ) -> Any:
        """``handleBeginQuorumEpochRequest``: learn the new leader, then check the voter key."""
        key = ApiKey.BEGIN_QUORUM_EPOCH
        checked = self._check_epoch_request(key, request, version, listener)
        if not isinstance(checked, _EpochRequest):
            return checked
        partition, epoch, leader_id = checked
        if leader_id < 0:
            return self._epoch_reply(key, version, listener, ErrorCode.invalid_request)
        self._maybe_transition(leader_id, epoch, now_ms, actions)
        if version >= 1 and (
            int(request.voter_id) != self.node_id
            or not messages.directory_matches(partition.voter_directory_id, self.directory_id)
        ):
            return self._epoch_reply(key, version, listener, ErrorCode.invalid_voter_key)
        return self._epoch_reply(key, version, listener)

    def _handle_end_epoch(
        self, request: Any, version: int, listener: str, now_ms: int, actions: list[VoterAction]
    ) -> Any:
        """``handleEndQuorumEpochRequest``: a follower of the resigning leader shortens its fetch timeout by its
        place among the preferred successors, so the first of them runs for election at once."""
        key = ApiKey.END_QUORUM_EPOCH
        checked = self._check_epoch_request(key, request, version, listener)
        if not isinstance(checked, _EpochRequest):
            return checked
        partition, epoch, leader_id = checked
        self._maybe_transition(leader_id, epoch, now_ms, actions)
        if self._kind is StateKind.FOLLOWER and self._leader_id == leader_id and self.is_voter:
            preferred = messages.preferred_candidates(partition)
            position = preferred.index(self.node_id) if self.node_id in preferred else -1
            self._fetch_deadline = now_ms + strict_exponential_backoff_ms(self.config, position, len(preferred))
            # The leader said it is gone: there is no live leader left for a pre-vote refusal to protect.
            self._has_fetched = False
        return self._epoch_reply(key, version, listener)


class _EpochRequest(NamedTuple):
    """A BeginQuorumEpoch or EndQuorumEpoch request that passed the shared checks."""

    partition: Any
    epoch: int
    leader_id: int


def _fetch_partition(api_key: int, response: Any) -> Any | None:
    """The metadata partition of a Fetch or FetchSnapshot response; None when it is not exactly that."""
    if api_key == ApiKey.FETCH:
        topics = response.responses
        if len(topics) != 1 or len(topics[0].partitions) != 1:
            return None
        return topics[0].partitions[0]
    topics = response.topics
    if len(topics) != 1 or len(topics[0].partitions) != 1:
        return None
    return topics[0].partitions[0]
