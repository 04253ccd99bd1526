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
        on a timer (at the latest at voter.next_deadline_ms()):   perform(voter.tick(now_ms))
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
``RaftLeader`` while leading, whose ``describe(now_ms)`` DescribeQuorum reports). ``resign(epoch,
now_ms)`` gives leadership up; ``begin_shutdown(now_ms, timeout_ms)`` and ``shutdown_complete(now_ms)`` are
Kafka's graceful shutdown. Errors Kafka treats as fatal raise ``RaftFatalError``. docs/raft.md has the rules.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Collection, Mapping
from typing import Any

from .election import QuorumConfig, StateKind
from .leader import ParkedFetch, RaftLeader
from .log_view import LogView
from .quorum_state import ElectionState
from .voter_actions import VoterAction

__all__ = ["RaftVoter"]


class RaftVoter:
    """See the module docstring."""

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
        raise NotImplementedError

    # --- state ------------------------------------------------------------------------------------
    @property
    def kind(self) -> StateKind:
        raise NotImplementedError

    @property
    def epoch(self) -> int:
        raise NotImplementedError

    @property
    def leader_id(self) -> int:
        """-1 when unknown."""
        raise NotImplementedError

    @property
    def voted_id(self) -> int:
        raise NotImplementedError

    @property
    def high_watermark(self) -> int:
        raise NotImplementedError

    @property
    def leader(self) -> RaftLeader | None:
        raise NotImplementedError

    def election_state(self) -> ElectionState:
        raise NotImplementedError

    # --- driver entry points ----------------------------------------------------------------------
    def start(self, stored: ElectionState | None, now_ms: int) -> list[VoterAction]:
        raise NotImplementedError

    def tick(self, now_ms: int) -> list[VoterAction]:
        raise NotImplementedError

    def next_deadline_ms(self) -> int:
        raise NotImplementedError

    def handle_request(
        self, api_key: int, api_version: int, request: Any, listener: str, now_ms: int
    ) -> tuple[Any | ParkedFetch, list[VoterAction]]:
        raise NotImplementedError

    def complete_fetch(
        self, request: Any, api_version: int, listener: str, now_ms: int
    ) -> tuple[Any, list[VoterAction]]:
        raise NotImplementedError

    def handle_response(self, request_id: int, response: Any, now_ms: int) -> list[VoterAction]:
        raise NotImplementedError

    def handle_request_failure(self, request_id: int, now_ms: int) -> list[VoterAction]:
        raise NotImplementedError

    def on_log_flushed(self, now_ms: int) -> list[VoterAction]:
        raise NotImplementedError

    def resign(self, epoch: int, now_ms: int) -> list[VoterAction]:
        raise NotImplementedError

    def begin_shutdown(self, now_ms: int, timeout_ms: int) -> list[VoterAction]:
        raise NotImplementedError

    def shutdown_complete(self, now_ms: int) -> bool:
        raise NotImplementedError
