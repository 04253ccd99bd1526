"""Vote and pre-vote, one test per statement, after Kafka's KafkaRaftClientTest and KafkaRaftClientPreVoteTest
(method names in each docstring). Node 1 of voters {1, 2, 3} unless said otherwise."""

from __future__ import annotations

from pathlib import Path

import pytest
from kio.schema.errors import ErrorCode
from voter_harness import CONFIG, Harness, fetch_answer, leader_log, stored, vote_answer

from ksteward.protocol.apis import ApiKey
from ksteward.raft import messages
from ksteward.raft.election import QuorumConfig, StateKind
from ksteward.raft.observer import AppendBatches
from ksteward.raft.quorum_state import ElectionState, read_quorum_state, write_quorum_state
from ksteward.raft.voter_actions import BecameLeader, PersistElectionState, SendRequest


def test_vote_with_older_epoch_is_fenced() -> None:
    """testHandleInvalidVoteRequestWithOlderEpoch."""
    h = Harness(state=stored(2))
    top, p = h.vote(1, 2, 0, 0)
    assert top == ErrorCode.none
    assert (p.error_code, p.leader_epoch, p.vote_granted) == (ErrorCode.fenced_leader_epoch, 2, False)
    assert (h.voter.kind, h.voter.epoch, h.voter.leader_id, h.voter.voted_id) == (StateKind.UNATTACHED, 2, -1, -1)


@pytest.mark.parametrize(
    ("last_epoch", "last_offset"), [(0, -5), (-1, 0), (6, 0)], ids=["offset", "epoch", "epoch>=candidate"]
)
def test_invalid_vote_request_leaves_the_follower_alone(last_epoch: int, last_offset: int) -> None:
    """testInvalidVoteRequest: answered with the old epoch and leader, no state change."""
    h = Harness(state=stored(5, leader=2))
    _, p = h.vote(6, 3, last_epoch, last_offset)
    assert (p.error_code, p.vote_granted, p.leader_epoch, p.leader_id) == (ErrorCode.invalid_request, False, 5, 2)
    assert (h.voter.kind, h.voter.epoch, h.voter.leader_id) == (StateKind.FOLLOWER, 5, 2)


@pytest.mark.parametrize(("last_epoch", "error"), [(3, ErrorCode.invalid_request), (2, ErrorCode.none)])
def test_pre_vote_may_carry_its_own_epoch_but_not_more(last_epoch: int, error: ErrorCode) -> None:
    """testInvalidPreVoteRequest."""
    h = Harness(state=stored(2))
    _, p = h.vote(2, 2, last_epoch, 0, pre_vote=True)
    assert p.error_code == error


@pytest.mark.parametrize("voter_id", [3, -1])
def test_vote_for_another_voter_adopts_the_epoch_but_is_refused(voter_id: int) -> None:
    """testInvalidVoterReplicaVoteRequest: the epoch is adopted before the voter key is checked."""
    h = Harness(state=stored(2))
    _, p = h.vote(3, 2, 0, 0, voter_id=voter_id)
    assert (p.error_code, p.vote_granted, p.leader_epoch) == (ErrorCode.invalid_voter_key, False, 3)
    assert h.voter.epoch == 3 and h.stored is not None and h.stored.leader_epoch == 3


def test_restarted_leader_refuses_its_epoch_but_grants_the_next() -> None:
    """testRejectVotesFromSameEpochAfterResigningLeadership, testGrantVotesFromHigherEpochAfterResigningLeadership."""
    h = Harness(state=stored(2, leader=1, voted=1), layout=[(2, 3)])
    assert h.voter.kind is StateKind.RESIGNED
    _, p = h.vote(2, 2, 1, 10)
    assert (p.error_code, p.vote_granted, p.leader_id) == (ErrorCode.none, False, 1)
    _, p = h.vote(3, 2, 2, 3)
    assert (p.error_code, p.vote_granted, p.leader_epoch) == (ErrorCode.none, True, 3)
    assert h.stored == ElectionState(3, -1, 2, (1, 2, 3))


def _leader(epoch: int = 2) -> Harness:
    """Node 1 elected leader of ``epoch`` by node 2."""
    h = Harness(state=stored(epoch - 1, voted=1))  # Candidate in epoch - 1 restarts its election
    h.tick(10_000)  # its election times out: back-off, then a pre-vote
    h.tick(20_000)
    for send in h.sends(ApiKey.VOTE):
        h.respond(send, vote_answer(send, granted=True, epoch=h.voter.epoch))
    for send in h.sends(ApiKey.VOTE):
        h.respond(send, vote_answer(send, granted=True, epoch=h.voter.epoch))
    assert h.voter.kind is StateKind.LEADER, h.voter.kind
    return h


def test_leader_refuses_same_epoch_vote_and_fences_an_older_one() -> None:
    """testLeaderIgnoreVoteRequestOnSameEpoch, testLeaderAcceptVoteFromObserver."""
    h = _leader()
    epoch = h.voter.epoch
    _, p = h.vote(epoch, 2, 0, 100)
    assert (p.error_code, p.vote_granted, p.leader_id) == (ErrorCode.none, False, 1)
    _, p = h.vote(epoch - 1, 2, 0, 100)
    assert p.error_code == ErrorCode.fenced_leader_epoch


def test_replica_outside_the_voter_set_grants_and_records_a_vote() -> None:
    """testHandleVoteRequestAsObserver."""
    h = Harness(node_id=9, state=stored(2, voters=(1, 2, 3)))
    _, p = h.vote(3, 2, 0, 0)
    assert p.vote_granted
    assert h.stored is not None and (h.stored.leader_epoch, h.stored.voted_id) == (3, 2)


def test_follower_refuses_a_standard_vote_in_its_epoch() -> None:
    """testHandleVoteRequestAsFollowerWithElectedLeader."""
    h = Harness(state=stored(5, leader=2))
    _, p = h.vote(5, 3, 0, 0)
    assert (p.error_code, p.vote_granted, p.leader_id) == (ErrorCode.none, False, 2)
    assert h.voter.kind is StateKind.FOLLOWER


def test_leader_shutting_down_grants_a_higher_epoch_vote() -> None:
    """testGrantVotesWhenShuttingDown."""
    h = _leader()
    epoch = h.voter.epoch
    h._apply(h.voter.begin_shutdown(h.now, 5000))
    _, p = h.vote(epoch + 1, 2, epoch, 1)
    assert p.vote_granted
    assert (h.voter.kind, h.voter.voted_id) == (StateKind.UNATTACHED, 2)
    assert not h.voter.shutdown_complete(h.now)


def test_follower_grants_pre_votes_until_it_fetched_and_a_leader_never() -> None:
    """testFollowerGrantsPreVoteIfHasNotFetchedYet, testLeaderRejectPreVoteRequestOnSameEpoch."""
    h = Harness(state=stored(2, leader=2), layout=[(1, 2)])
    _, p = h.vote(2, 3, 1, 2, pre_vote=True)
    assert (p.vote_granted, p.leader_id) == (True, 2)
    fetch = h.sends(ApiKey.FETCH)[-1]
    h.respond(fetch, fetch_answer(fetch, leader_id=2, epoch=2, log=leader_log([(1, 2)])))
    _, p = h.vote(2, 3, 1, 2, pre_vote=True)
    assert (p.vote_granted, p.leader_id) == (False, 2)
    leader = _leader()
    _, p = leader.vote(leader.voter.epoch, 2, 0, 100, pre_vote=True)
    assert not p.vote_granted


def test_higher_epoch_pre_vote_moves_to_unattached_without_a_vote() -> None:
    """testHandlePreVoteRequestAsFollowerWithElectedLeader."""
    h = Harness(state=stored(2, leader=2))
    _, p = h.vote(3, 3, 0, 0, pre_vote=True)
    assert p.vote_granted and p.leader_epoch == 3
    assert (h.voter.kind, h.voter.epoch, h.voter.voted_id, h.voter.leader_id) == (StateKind.UNATTACHED, 3, -1, -1)


def _prospective(h: Harness) -> list[SendRequest]:
    h.tick(h.voter.next_deadline_ms())
    assert h.voter.kind is StateKind.PROSPECTIVE
    return [s for s in h.sends(ApiKey.VOTE) if s.body.topics[0].partitions[0].pre_vote]


def test_pre_vote_not_supported_turns_into_a_standard_election() -> None:
    """testPreVoteNotSupportedByRemote: UNSUPPORTED_VERSION makes a Candidate at once; old answers are ignored."""
    h = Harness(state=stored(2))
    first, second = _prospective(h)
    h.respond(first, messages.vote_response(2, top_error=ErrorCode.unsupported_version))
    assert (h.voter.kind, h.voter.epoch) == (StateKind.CANDIDATE, 3)
    h.respond(second, vote_answer(second, granted=True, epoch=2))
    assert h.voter.kind is StateKind.CANDIDATE


def test_failed_pre_vote_without_a_known_leader_goes_back_to_unattached() -> None:
    """testProspectiveTransitionsToUnattachedOnElectionFailure."""
    h = Harness(state=stored(2))
    first, second = _prospective(h)
    h.respond(first, vote_answer(first, granted=False, epoch=2))
    h.respond(second, vote_answer(second, granted=False, epoch=2))
    assert (h.voter.kind, h.voter.epoch) == (StateKind.UNATTACHED, 2)
    h = Harness(state=stored(2))
    first, _ = _prospective(h)
    h.respond(first, vote_answer(first, granted=False, epoch=3, leader=7))  # a leader with no endpoint
    assert (h.voter.kind, h.voter.epoch, h.voter.leader_id) == (StateKind.UNATTACHED, 3, 7)


def test_failed_pre_vote_with_a_known_leader_goes_back_to_following_it() -> None:
    """testProspectiveWithLeaderTransitionsToFollower."""
    h = Harness(state=stored(2, leader=2))
    h.tick(CONFIG.fetch_timeout_ms)
    assert h.voter.kind is StateKind.PROSPECTIVE
    for send in h.sends(ApiKey.VOTE):
        h.respond(send, vote_answer(send, granted=False, epoch=2, leader=2))
    assert (h.voter.kind, h.voter.leader_id) == (StateKind.FOLLOWER, 2)


def test_rejected_candidate_backs_off_then_runs_a_pre_vote_again() -> None:
    """testCandidateBackoffElection: a back-off of at most election.backoff.max.ms, the vote kept."""
    h = Harness(voters=(1, 2), state=stored(2, voters=(1, 2)))
    (pre,) = _prospective(h)
    h.respond(pre, vote_answer(pre, granted=True, epoch=2))
    assert (h.voter.kind, h.voter.epoch) == (StateKind.CANDIDATE, 3)
    (vote,) = [s for s in h.sends(ApiKey.VOTE) if not s.body.topics[0].partitions[0].pre_vote]
    h.take()
    h.respond(vote, vote_answer(vote, granted=False, epoch=3))
    assert h.voter.kind is StateKind.CANDIDATE and h.voter.voted_id == 1
    assert h.voter.next_deadline_ms() - h.now <= CONFIG.election_backoff_max_ms
    h.tick(h.now + CONFIG.election_backoff_max_ms)
    assert (h.voter.kind, h.voter.epoch, h.voter._retries) == (StateKind.PROSPECTIVE, 3, 2)
    (pre,) = h.sends(ApiKey.VOTE)
    h.respond(pre, vote_answer(pre, granted=True, epoch=3))
    assert (h.voter.kind, h.voter.epoch, h.voter._retries) == (StateKind.CANDIDATE, 4, 2)


def test_timed_out_vote_is_resent_and_a_late_answer_ignored() -> None:
    """testVoteRequestTimeout."""
    config = QuorumConfig(election_timeout_ms=10_000, election_backoff_max_ms=100)
    h = Harness(voters=(1, 2), state=stored(2, voted=1, voters=(1, 2)), config=config)
    assert h.voter.kind is StateKind.CANDIDATE
    (first,) = h.sends(ApiKey.VOTE)
    h.take()
    h.tick(CONFIG.request_timeout_ms)
    h.tick(CONFIG.request_timeout_ms + CONFIG.retry_backoff_ms)
    (retry,) = h.sends(ApiKey.VOTE)
    assert retry.request_id != first.request_id
    h.respond(first, vote_answer(first, granted=True, epoch=2))
    assert h.voter.kind is StateKind.CANDIDATE
    h.respond(retry, vote_answer(retry, granted=True, epoch=2))
    assert h.voter.kind is StateKind.LEADER


def test_single_voter_leads_epoch_one_at_start() -> None:
    """testInitializeSingleMemberQuorum."""
    h = Harness(voters=(1,))
    assert (h.voter.kind, h.voter.epoch) == (StateKind.LEADER, 1)
    became = [a for a in h.actions if isinstance(a, BecameLeader)]
    assert [(b.epoch, b.epoch_start_offset) for b in became] == [(1, 0)]


def test_restart_as_candidate_resends_votes_to_both_peers() -> None:
    """testInitializeAsCandidateFromStateStore."""
    h = Harness(state=stored(2, voted=1))
    assert (h.voter.kind, h.voter.epoch) == (StateKind.CANDIDATE, 2)
    assert sorted(s.destination for s in h.sends(ApiKey.VOTE)) == [2, 3]
    assert not any(s.body.topics[0].partitions[0].pre_vote for s in h.sends(ApiKey.VOTE))


def test_fetch_answer_after_becoming_prospective_is_ignored() -> None:
    """testFetchResponseIgnoredAfterBecomingProspective."""
    h = Harness(state=stored(2, leader=2))
    fetch = h.sends(ApiKey.FETCH)[-1]
    h.tick(CONFIG.fetch_timeout_ms)
    assert h.voter.kind is StateKind.PROSPECTIVE
    h.take()
    h.respond(fetch, fetch_answer(fetch, leader_id=2, epoch=2, log=leader_log([(1, 3)])))
    assert not [a for a in h.actions if isinstance(a, AppendBatches)] and h.log.log_end_offset == 0


def test_granted_vote_is_persisted_before_the_answer() -> None:
    """QuorumStateTest#testUnattachedToUnattachedWithVote: the vote is written before it is acted on."""
    h = Harness(state=stored(2))
    h.take()
    _, p = h.vote(3, 2, 0, 0)
    assert p.vote_granted
    # First the new epoch is adopted (Unattached, no vote), then the vote; both before the answer.
    assert [a for a in h.actions if isinstance(a, PersistElectionState)] == [
        PersistElectionState(ElectionState(3, -1, -1, (1, 2, 3))),
        PersistElectionState(ElectionState(3, -1, 2, (1, 2, 3))),
    ]
    _, p = h.vote(3, 3, 0, 0)
    assert not p.vote_granted  # one vote per epoch


@pytest.mark.parametrize("pre_vote", [False, True], ids=["vote", "pre-vote"])
@pytest.mark.parametrize(
    ("last_epoch", "last_offset", "granted"),
    [(1, 2, False), (0, 10, False), (1, 3, True), (2, 1, True)],
    ids=["shorter", "older-epoch", "equal", "newer-epoch"],
)
def test_unattached_grants_only_a_log_at_least_as_up_to_date(
    pre_vote: bool, last_epoch: int, last_offset: int, granted: bool
) -> None:
    """UnattachedStateTest#testGrantVote: the epoch is compared first, then the log end offset."""
    h = Harness(state=stored(2), layout=[(1, 3)])
    _, p = h.vote(3, 2, last_epoch, last_offset, pre_vote=pre_vote)
    assert (p.error_code, p.vote_granted) == (ErrorCode.none, granted)


def test_every_persisted_state_reads_back_and_restarts_the_same(tmp_path: Path) -> None:
    """FileQuorumStateStore.writeElectionStateToFile then readElectionState, and QuorumState.initialize from
    it: a vote, a candidacy and a followed leader come back as they were."""
    h = Harness(state=stored(2))
    _, p = h.vote(3, 2, 0, 0)
    assert p.vote_granted
    path = tmp_path / "quorum-state"
    for state in [a.state for a in h.actions if isinstance(a, PersistElectionState)]:
        write_quorum_state(path, state)
        assert read_quorum_state(path) == state
    restarted = Harness(state=read_quorum_state(path))
    assert (restarted.voter.kind, restarted.voter.epoch, restarted.voter.voted_id) == (StateKind.UNATTACHED, 3, 2)
    assert not restarted.vote(3, 3, 0, 0)[1].vote_granted  # the vote survived the restart
    follower = Harness(state=stored(4, leader=3, voted=3))
    assert (follower.voter.kind, follower.voter.leader_id, follower.voter.voted_id) == (StateKind.FOLLOWER, 3, 3)
