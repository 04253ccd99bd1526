"""Pure election rules of a KRaft voter: configuration, vote counting, granting and the back-off timers.

- ``QuorumConfig``: Kafka's ``QuorumConfig`` timeouts (``controller.quorum.*``), in milliseconds, defined in
  ``configs.quorum_config`` (every node parses them) and named here for the Raft code.
- ``EpochElection``: Kafka's ``internals.EpochElection``: the grants and rejections a Prospective (pre-vote)
  or a Candidate (standard vote) has recorded, and whether they make a majority either way.
- ``can_grant_vote``: the granting table of ``*State.canGrantVote`` and
  ``QuorumState.unattachedOrProspectiveCanGrantVote``.
- the timers: ``random_election_timeout_ms`` (``QuorumState.randomElectionTimeoutMs``),
  ``binary_exponential_backoff_ms`` and ``strict_exponential_backoff_ms`` (``KafkaRaftClient``).
"""

from __future__ import annotations

import enum
import random
from collections.abc import Iterable

from ksteward.configs.quorum_config import QuorumConfig
from ksteward.metadata.epochs import OffsetAndEpoch

__all__ = [
    "EpochElection",
    "QuorumConfig",
    "StateKind",
    "binary_exponential_backoff_ms",
    "can_grant_vote",
    "majority",
    "random_election_timeout_ms",
    "strict_exponential_backoff_ms",
]


class StateKind(enum.Enum):
    """Kafka's ``EpochState`` kinds (``QuorumState``, with KIP-996's Prospective)."""

    UNATTACHED = "Unattached"
    PROSPECTIVE = "Prospective"
    CANDIDATE = "Candidate"
    LEADER = "Leader"
    FOLLOWER = "Follower"
    RESIGNED = "Resigned"


def majority(voter_count: int) -> int:
    """``floor(n / 2) + 1``."""
    return voter_count // 2 + 1


class EpochElection:
    """Votes recorded in one election round. The local voter's own vote is implicit (granted)."""

    def __init__(self, local_id: int, voters: Iterable[int]) -> None:
        self.voters = frozenset(voters)
        self.granted: set[int] = {local_id} if local_id in self.voters else set()
        self.rejected: set[int] = set()

    def record(self, voter_id: int, granted: bool) -> None:
        """A response from ``voter_id``; replicas outside the voter set do not count. The first answer of a
        voter counts (a later contradicting one is ignored, as ``EpochElection.recordVote`` refuses it)."""
        if voter_id not in self.voters or voter_id in self.granted or voter_id in self.rejected:
            return
        (self.granted if granted else self.rejected).add(voter_id)

    def unrecorded(self) -> frozenset[int]:
        return self.voters - self.granted - self.rejected

    def is_granted(self) -> bool:
        return len(self.granted) >= majority(len(self.voters))

    def is_rejected(self) -> bool:
        """Grants plus the voters still to answer cannot reach a majority."""
        return len(self.granted) + len(self.unrecorded()) < majority(len(self.voters))


def can_grant_vote(
    kind: StateKind,
    *,
    pre_vote: bool,
    log_up_to_date: bool,
    candidate_id: int,
    voted_id: int,
    leader_id: int,
    has_fetched: bool,
) -> bool:
    """Whether a replica in state ``kind`` (at the request's epoch, after adopting it) grants the vote."""
    if kind is StateKind.LEADER:
        return False
    if pre_vote:
        if kind is StateKind.FOLLOWER:
            # KIP-996: a follower that still hears from its leader protects it from a disruptive election.
            return log_up_to_date and not has_fetched
        return log_up_to_date
    if kind in (StateKind.FOLLOWER, StateKind.CANDIDATE, StateKind.RESIGNED):
        return False
    # Unattached or Prospective.
    if voted_id >= 0:
        return voted_id == candidate_id
    if leader_id >= 0:
        return False
    return log_up_to_date


def log_up_to_date(candidate: OffsetAndEpoch, local: OffsetAndEpoch) -> bool:
    """The candidate's ``(last epoch, log end)`` is at least ours: the epoch first, then the offset."""
    return (candidate.epoch, candidate.offset) >= (local.epoch, local.offset)


def random_election_timeout_ms(config: QuorumConfig, rng: random.Random) -> int:
    """``T + uniform[0, T)``."""
    timeout = config.election_timeout_ms
    return timeout + (rng.randrange(timeout) if timeout > 0 else 0)


def binary_exponential_backoff_ms(config: QuorumConfig, retries: int, rng: random.Random) -> int:
    """A rejected candidate's back-off: ``min(100 * uniform_int[0, 2^min(retries, 21)), backoff max)``."""
    if retries <= 0:
        raise ValueError("retries must be at least 1")
    return min(100 * rng.randrange(1 << min(retries, 21)), config.election_backoff_max_ms)


def strict_exponential_backoff_ms(config: QuorumConfig, position: int, count: int) -> int:
    """The fetch timeout a follower of a resigning leader keeps, by its ``position`` among ``count`` preferred
    candidates (``KafkaRaftClient.strictExponentialElectionBackoffMs``); not listed (-1): the maximum."""
    cap = config.election_backoff_max_ms
    if position < 0 or position >= count:
        return cap
    if position == 0:
        return 0
    return min(cap, (cap >> (count - 1)) << (position - 1))
