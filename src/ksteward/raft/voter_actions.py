"""What a ``RaftVoter`` asks its driver to do, in order.

A voter is an observer that also votes (``raft.observer``), so its actions are the observer's
(``AppendBatches``, ``TruncateTo``, the snapshot download steps, ``HighWatermarkUpdated``, ``LeaderChanged``)
plus the ones below. The driver carries them out **in list order**, and an action must be finished
(durable where it says so) before the next one starts: a ``PersistElectionState`` before the
``SendRequest`` that follows it, a ``FlushLog`` before the next Fetch goes out.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .observer import (
    AbortSnapshotDownload,
    AppendBatches,
    HighWatermarkUpdated,
    InstallSnapshot,
    LeaderChanged,
    StartSnapshotDownload,
    TruncateTo,
    WriteSnapshotChunk,
)
from .quorum_state import ElectionState

__all__ = [
    "BecameLeader",
    "FlushLog",
    "LostLeadership",
    "PersistElectionState",
    "SendRequest",
    "VoterAction",
]


@dataclass(frozen=True, slots=True)
class PersistElectionState:
    """Write ``state`` to ``quorum-state`` atomically and durably (``write_quorum_state``) before carrying out
    any later action: Kafka's ``QuorumState.durableTransitionTo`` writes before it acts on a transition."""

    state: ElectionState


@dataclass(frozen=True, slots=True)
class SendRequest:
    """Send ``body`` (a kio request of ``api_key`` at ``api_version``) to replica ``destination`` and later call
    ``RaftVoter.handle_response(request_id, ...)`` with its response, or ``handle_request_failure(request_id,
    ...)`` when it cannot be sent or the connection fails. A request left unanswered is timed out by the
    voter itself after ``request_timeout_ms``; a response that arrives later is ignored."""

    destination: int
    api_key: int
    api_version: int
    body: Any
    request_id: int


@dataclass(frozen=True, slots=True)
class FlushLog:
    """fsync the local log up to its end before the next Fetch: voters flush every append before fetching
    again (``KafkaRaftClient.appendAsFollower``), so an offset a leader counts as fetched is durable here."""


@dataclass(frozen=True, slots=True)
class BecameLeader:
    """This node leads ``epoch``. Its first batch is the ``leader_change`` control record (Kafka's
    ``LeaderChangeMessage``), appended at ``epoch_start_offset`` (the log end now) with partitionLeaderEpoch
    ``epoch``; every later batch the driver appends carries ``epoch`` too. Writes commit once the high
    watermark passes ``epoch_start_offset`` (the first ``HighWatermarkUpdated`` of the epoch)."""

    epoch: int
    epoch_start_offset: int
    leader_change: Any  # kio LeaderChangeMessage v0


@dataclass(frozen=True, slots=True)
class LostLeadership:
    """This node no longer leads ``epoch`` (``reason`` says why, for the log line). The driver completes every
    parked Fetch at once (answered again by ``RaftVoter.complete_fetch``: ``NOT_LEADER_OR_FOLLOWER``), fails
    pending writes as of unknown outcome, and drops uncommitted state back to the last committed offset."""

    epoch: int
    reason: str


VoterAction = (
    PersistElectionState
    | SendRequest
    | FlushLog
    | BecameLeader
    | LostLeadership
    | AppendBatches
    | TruncateTo
    | StartSnapshotDownload
    | WriteSnapshotChunk
    | InstallSnapshot
    | AbortSnapshotDownload
    | HighWatermarkUpdated
    | LeaderChanged
)
