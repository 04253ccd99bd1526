"""Leadership, BeginQuorumEpoch, EndQuorumEpoch, check-quorum, the follower's Fetch path and the high
watermark, one test per statement, after Kafka's KafkaRaftClientTest, KafkaRaftClientSnapshotTest,
LeaderStateTest and FollowerStateTest (method names in each docstring)."""

from __future__ import annotations

import dataclasses
from datetime import timedelta
from typing import Any

import pytest
from kio.schema.errors import ErrorCode
from kio.schema.leader_change_message.v0.data import LeaderChangeMessage
from raft_helpers import fetch_request, snapshot_request
from voter_harness import CONFIG, LISTENER, Harness, epoch_answer, fetch_answer, leader_log, stored, vote_answer

from ksteward.protocol.apis import ApiKey
from ksteward.protocol.build import build
from ksteward.protocol.codec import response_class
from ksteward.raft import METADATA_TOPIC_ID, METADATA_TOPIC_NAME
from ksteward.raft.election import QuorumConfig, StateKind
from ksteward.raft.leader import ParkedFetch, RaftLeader
from ksteward.raft.observer import RaftFatalError, TruncateTo
from ksteward.raft.voter_actions import BecameLeader, FlushLog, LostLeadership, SendRequest


def _elect(h: Harness, granting: tuple[int, ...] = (2,)) -> None:
    """Run node 1 through a pre-vote and a vote that ``granting`` grant."""
    h.tick(h.voter.next_deadline_ms())
    for round_kind in (StateKind.PROSPECTIVE, StateKind.CANDIDATE):
        assert h.voter.kind is round_kind, h.voter.kind
        sends = [s for s in h.take() if isinstance(s, SendRequest) and s.api_key == ApiKey.VOTE]
        for send in [s for s in sends if s.destination in granting]:
            h.respond(send, vote_answer(send, granted=True, epoch=h.voter.epoch))
    assert h.voter.kind is StateKind.LEADER


def _voter_fetch(h: Harness, replica: int, offset: int, last_epoch: int, now: int, **kw: Any) -> Any:
    h.now = now
    body = fetch_request(offset, last_epoch, leader_epoch=h.voter.epoch, replica_id=replica,
                         cluster_id="test-cluster", max_wait_ms=kw.pop("max_wait_ms", 0), **kw)  # fmt: skip
    return h.request(ApiKey.FETCH, body, 17)


def test_begin_quorum_epoch_makes_a_follower_of_the_voted_candidate() -> None:
    """testHandleBeginQuorumRequest."""
    h = Harness(state=stored(2, voted=3))
    response = h.begin_epoch(2, 3)
    assert response.topics[0].partitions[0].error_code == ErrorCode.none
    assert (h.voter.kind, h.voter.leader_id, h.voter.epoch) == (StateKind.FOLLOWER, 3, 2)


def test_a_voter_fetch_acknowledges_the_leader() -> None:
    """testFetchShouldBeTreatedAsLeaderAcknowledgement."""
    h = Harness(state=stored(1))
    _elect(h)
    leader = h.voter.leader
    assert leader is not None and leader.acknowledged == set()
    _voter_fetch(h, 3, 0, 0, h.now)
    assert leader.acknowledged == {3}


def test_end_quorum_epoch_listing_this_node_first_starts_its_election_at_once() -> None:
    """testHandleEndQuorumRequest."""
    h = Harness(state=stored(2, leader=2))
    response = h.end_epoch(2, 2, [1, 3])
    assert response.topics[0].partitions[0].error_code == ErrorCode.none
    h.tick(h.now)
    assert (h.voter.kind, h.voter.epoch) == (StateKind.PROSPECTIVE, 2)


def test_second_preferred_candidate_waits_half_the_back_off() -> None:
    """testHandleEndQuorumRequestWithLowerPriorityToBecomeLeader: 50 ms with a 100 ms maximum."""
    h = Harness(state=stored(2, leader=2))
    h.end_epoch(2, 2, [3, 1])
    h.take()
    h.tick(49)
    assert h.voter.kind is StateKind.FOLLOWER
    h.tick(50)
    assert (h.voter.kind, h.voter.epoch) == (StateKind.PROSPECTIVE, 2)
    pre_votes = [s for s in h.sends(ApiKey.VOTE) if s.body.topics[0].partitions[0].pre_vote]
    assert sorted(s.destination for s in pre_votes) == [2, 3]
    assert {s.body.topics[0].partitions[0].replica_epoch for s in pre_votes} == {2}


@pytest.mark.parametrize("state", [stored(3, voted=1), stored(3, leader=1, voted=1)], ids=["candidate", "leader"])
def test_end_quorum_epoch_of_an_older_epoch_is_fenced(state: Any) -> None:
    """testEndQuorumIgnoredAsCandidateIfOlderEpoch, testEndQuorumIgnoredAsLeaderIfOlderEpoch."""
    h = Harness(state=state)
    before = (h.voter.kind, h.voter.epoch, h.voter.leader_id)
    response = h.end_epoch(2, 2, [1])
    assert response.topics[0].partitions[0].error_code == ErrorCode.fenced_leader_epoch
    assert (h.voter.kind, h.voter.epoch, h.voter.leader_id) == before


def test_leader_resigns_without_fetches_from_a_majority() -> None:
    """testLeaderShouldResignLeadershipIfNotGetFetchRequestFromMajorityVoters, LeaderStateTest#testCheckQuorum:
    observer fetches do not count."""
    h = Harness(voters=(1, 2, 3, 4, 5), state=stored(1, voters=(1, 2, 3, 4, 5)))
    _elect(h, granting=(2, 3))
    start, timeout = h.now, CONFIG.check_quorum_timeout_ms
    _voter_fetch(h, 2, 0, 0, start + 100)
    _voter_fetch(h, 9, 0, 0, start + 200)  # an observer
    _voter_fetch(h, 9, 0, 0, start + 300)
    h.tick(start + timeout - 1)
    assert h.voter.kind is StateKind.LEADER
    h.tick(start + timeout)
    assert h.voter.kind is StateKind.RESIGNED
    assert [a.epoch for a in h.actions if isinstance(a, LostLeadership)] == [h.voter.epoch]


def test_fetches_from_a_majority_keep_the_leader() -> None:
    """LeaderStateTest#testCheckQuorum: a majority in the window starts a new window."""
    h = Harness(state=stored(1))
    _elect(h)
    start, timeout = h.now, CONFIG.check_quorum_timeout_ms
    _voter_fetch(h, 2, 0, 0, start + timeout - 10)
    h.tick(start + 2 * timeout - 11)
    assert h.voter.kind is StateKind.LEADER
    h.tick(start + 2 * timeout - 10)
    assert h.voter.kind is StateKind.RESIGNED


def test_fetch_snapshot_counts_for_check_quorum() -> None:
    """KafkaRaftClientSnapshotTest#testLeaderShouldResignLeadershipIfNotGetFetchSnapshotRequestFromMajorityVoters."""
    h = Harness(state=stored(1))
    _elect(h)
    start, timeout = h.now, CONFIG.check_quorum_timeout_ms
    h.now = start + timeout - 10
    body = dataclasses.replace(snapshot_request(5, 1, 0, leader_epoch=h.voter.epoch, cluster_id=None), replica_id=2)
    h.request(ApiKey.FETCH_SNAPSHOT, body, 1)  # no such snapshot: SNAPSHOT_NOT_FOUND, yet it counts
    h.tick(start + timeout + 100)
    assert h.voter.kind is StateKind.LEADER


def test_single_voter_never_resigns_for_check_quorum() -> None:
    """testLeaderShouldNotResignLeadershipIfOnlyOneVoters."""
    h = Harness(voters=(1,))
    h.tick(10 * CONFIG.check_quorum_timeout_ms)
    assert h.voter.kind is StateKind.LEADER


def test_graceful_shutdown_sends_end_quorum_epoch_by_fetch_offset_and_waits_for_a_successor() -> None:
    """testLeaderGracefulShutdown, testEndQuorumEpochSentBasedOnFetchOffset, testLeaderGracefulShutdownTimeout."""
    h = Harness(state=stored(1), layout=[(1, 4)])
    _elect(h)
    epoch = h.voter.epoch
    h.log.append_control(_leader_change(), epoch)
    h.log.flush()
    _voter_fetch(h, 2, 2, 1, h.now)
    _voter_fetch(h, 3, 5, epoch, h.now)
    h.take()
    h._apply(h.voter.begin_shutdown(h.now, 5000))
    assert h.voter.kind is StateKind.RESIGNED
    ends = h.sends(ApiKey.END_QUORUM_EPOCH)
    assert sorted(s.destination for s in ends) == [2, 3]
    assert [c.candidate_id for c in ends[0].body.topics[0].partitions[0].preferred_candidates] == [3, 2]
    assert not h.voter.shutdown_complete(h.now)
    h.begin_epoch(epoch + 1, 3)
    assert h.voter.shutdown_complete(h.now)
    h2 = Harness(state=stored(1))
    _elect(h2)
    h2._apply(h2.voter.begin_shutdown(h2.now, 500))
    assert not h2.voter.shutdown_complete(h2.now + 499) and h2.voter.shutdown_complete(h2.now + 500)


def _leader_change() -> Any:
    return LeaderChangeMessage(version=0, leader_id=1, voters=(), granting_voters=())


def test_resign_checks_the_epoch() -> None:
    """KafkaRaftClient.resign: a future epoch is an error, an older one a no-op."""
    h = Harness(state=stored(1))
    _elect(h)
    with pytest.raises(ValueError):
        h.voter.resign(h.voter.epoch + 1, h.now)
    assert h.voter.resign(h.voter.epoch - 1, h.now) == []
    h._apply(h.voter.resign(h.voter.epoch, h.now))
    assert h.voter.kind is StateKind.RESIGNED


def test_restarted_leader_is_resigned_sends_end_quorum_epoch_then_runs_for_election() -> None:
    """testInitializeAsResignedLeaderFromStateStore."""
    h = Harness(state=stored(2, leader=1, voted=1))
    assert (h.voter.kind, h.voter.epoch, h.voter.leader) == (StateKind.RESIGNED, 2, None)
    assert not [a for a in h.actions if isinstance(a, BecameLeader)]
    assert sorted(s.destination for s in h.sends(ApiKey.END_QUORUM_EPOCH)) == [2, 3]
    h.tick(2 * CONFIG.election_timeout_ms)
    assert (h.voter.kind, h.voter.epoch) == (StateKind.PROSPECTIVE, 2)
    assert h.stored is not None and h.stored.leader_id == 1  # a restart now still comes back Resigned


def test_leader_change_record_then_hw_only_past_it_with_a_majority() -> None:
    """testHandleLeaderChangeFiresAfterListenerReachesEpochStartOffset: 9 old records, LeaderChange at 9."""
    h = Harness(state=stored(1), layout=[(1, 9)])
    _elect(h)
    leader = h.voter.leader
    assert leader is not None and leader.epoch_start_offset == 9
    h.log.append_control(_leader_change(), h.voter.epoch)
    h.log.flush()
    h._apply(h.voter.on_log_flushed(h.now))
    assert h.high_watermarks() == [] and leader.high_watermark == -1
    _voter_fetch(h, 2, 9, 1, h.now)  # the follower has the old records only
    assert h.high_watermarks() == [] and not h.voter.accepts_writes
    _voter_fetch(h, 2, 10, h.voter.epoch, h.now)
    assert h.high_watermarks() == [10] and h.voter.accepts_writes


def test_leader_emits_became_leader_at_its_log_end() -> None:
    """testHandleLeaderChangeFiresAfterListenerReachesEpochStartOffset (the record's place)."""
    h = Harness(state=stored(1), layout=[(1, 9)])
    h.tick(h.voter.next_deadline_ms())
    for _ in range(2):
        for send in h.sends(ApiKey.VOTE):
            h.respond(send, vote_answer(send, granted=True, epoch=h.voter.epoch))
    became = [a for a in h.actions if isinstance(a, BecameLeader)]
    assert [(b.epoch, b.epoch_start_offset, b.leader_change.leader_id) for b in became] == [(2, 9, 1)]
    assert sorted(v.voter_id for v in became[0].leader_change.voters) == [1, 2, 3]


@pytest.mark.parametrize("cluster_id", ["", "other"])
@pytest.mark.parametrize("api", ["vote", "begin", "end"])
def test_wrong_cluster_id_is_inconsistent_and_none_is_accepted(api: str, cluster_id: str) -> None:
    """testVoteRequestClusterIdValidation, testBeginQuorumEpochRequestClusterIdValidation,
    testEndQuorumEpochRequestClusterIdValidation."""
    for given, expected in ((cluster_id, ErrorCode.inconsistent_cluster_id), (None, ErrorCode.none)):
        h = Harness(state=stored(2, leader=2))
        if api == "vote":
            top, _ = h.vote(3, 2, 0, 0, cluster_id=given)
        else:
            response = (
                h.begin_epoch(2, 2, cluster_id=given) if api == "begin" else h.end_epoch(2, 2, [1], cluster_id=given)
            )
            top = ErrorCode(response.error_code)
        assert top == expected


def test_follower_truncates_to_the_diverging_epoch_then_fetches_from_there() -> None:
    """testFollowerLogReconciliation."""
    h = Harness(state=stored(4, leader=2), layout=[(3, 3)])
    fetch = h.sends(ApiKey.FETCH)[-1]
    h.take()
    partition = {"partition_index": 0, "error_code": 0, "high_watermark": -1, "last_stable_offset": -1,
                 "log_start_offset": 0, "diverging_epoch": {"epoch": 3, "end_offset": 2},
                 "current_leader": {"leader_id": 2, "leader_epoch": 4}, "snapshot_id": {"end_offset": -1, "epoch": -1},
                 "aborted_transactions": None, "preferred_read_replica": -1, "records": b""}  # fmt: skip
    topic = {"topic_id": METADATA_TOPIC_ID, "topic": METADATA_TOPIC_NAME, "partitions": [partition]}
    response = build(response_class(ApiKey.FETCH, 17), {"error_code": 0, "session_id": 0, "responses": [topic]})
    h.respond(fetch, response)
    assert [a for a in h.actions if isinstance(a, TruncateTo)] == [TruncateTo(2)]
    assert not h.sends(ApiKey.FETCH)  # the next Fetch waits until the driver truncated
    assert h.voter.next_deadline_ms() <= h.now
    h.tick(h.now)
    (again,) = h.sends(ApiKey.FETCH)
    p = again.body.topics[0].partitions[0]
    assert (p.fetch_offset, p.last_fetched_epoch, h.log.flushed) == (2, 3, 2)


def test_follower_flushes_what_it_appends_before_its_next_fetch() -> None:
    """KafkaRaftClient.appendAsFollower: voters always flush."""
    h = Harness(state=stored(2, leader=2))
    fetch = h.sends(ApiKey.FETCH)[-1]
    h.take()
    h.respond(fetch, fetch_answer(fetch, leader_id=2, epoch=2, log=leader_log([(1, 3)])))
    h.tick(h.now)
    kinds = [type(a).__name__ for a in h.actions]
    assert kinds.index("AppendBatches") < kinds.index("FlushLog") < kinds.index("SendRequest")
    assert isinstance(h.actions[kinds.index("AppendBatches") + 1], FlushLog)


def test_parked_fetch_completes_with_not_leader_when_leadership_is_lost() -> None:
    """testPurgatoryFetchCompletedByFollowerTransition."""
    h = Harness(state=stored(1))
    _elect(h)
    epoch = h.voter.epoch
    parked = _voter_fetch(h, 2, 0, 0, h.now, max_wait_ms=500)
    assert isinstance(parked, ParkedFetch)
    h.take()
    h.vote(epoch + 1, 3, 0, 0)
    assert [a.epoch for a in h.actions if isinstance(a, LostLeadership)] == [epoch]
    body = fetch_request(0, 0, leader_epoch=epoch, replica_id=2, cluster_id="test-cluster")
    response, _ = h.voter.complete_fetch(body, 17, LISTENER, h.now)
    data = response.responses[0].partitions[0]
    assert data.error_code == ErrorCode.fenced_leader_epoch
    assert data.current_leader.leader_epoch == epoch + 1


def test_majority_high_watermark_of_three_voters() -> None:
    """LeaderStateTest#testUpdateHighWatermarkQuorumSizeThree, #testNonMonotonicHighWatermarkUpdate."""
    log = leader_log([(1, 10), (2, 5)])  # epoch start 10, log end 15
    leader = RaftLeader(node_id=1, cluster_id="c", epoch=2, log=log, endpoints={}, voters=(1, 2, 3),
                        epoch_start_offset=10)  # fmt: skip
    for replica in (2, 3):
        leader.handle_fetch(fetch_request(10, 1, leader_epoch=2, replica_id=replica, cluster_id="c"), 17, LISTENER, 1)
    assert leader.high_watermark == -1
    leader.handle_fetch(fetch_request(15, 2, leader_epoch=2, replica_id=2, cluster_id="c"), 17, LISTENER, 2)
    assert leader.high_watermark == 15
    for _ in range(5):
        log.append_value(0, 2)
    log.flush()
    leader.handle_fetch(fetch_request(20, 2, leader_epoch=2, replica_id=3, cluster_id="c"), 17, LISTENER, 3)
    assert leader.high_watermark == 20
    leader.handle_fetch(fetch_request(10, 1, leader_epoch=2, replica_id=3, cluster_id="c"), 17, LISTENER, 4)
    assert leader.high_watermark == 20  # a voter that lost its disk does not lower it


def test_follower_high_watermark_never_goes_down() -> None:
    """FollowerStateTest#testMonotonicHighWatermark."""
    h = Harness(state=stored(2, leader=2))
    log = leader_log([(1, 3)])
    fetch = h.sends(ApiKey.FETCH)[-1]
    h.respond(fetch, fetch_answer(fetch, leader_id=2, epoch=2, log=log))
    h.tick(h.now)
    fetch = h.sends(ApiKey.FETCH)[-1]
    h.respond(fetch, fetch_answer(fetch, leader_id=2, epoch=2, log=log))
    assert h.voter.high_watermark == 3
    h.tick(h.now)
    fetch = h.sends(ApiKey.FETCH)[-1]
    answer = fetch_answer(fetch, leader_id=2, epoch=2, log=log)
    data = dataclasses.replace(answer.responses[0].partitions[0], high_watermark=2)
    topic = dataclasses.replace(answer.responses[0], partitions=(data,))
    with pytest.raises(RaftFatalError, match="go down"):
        h.respond(fetch, dataclasses.replace(answer, responses=(topic,)))


@pytest.mark.parametrize(("node_id", "state", "becomes_prospective"), [
    (1, stored(2, leader=2), True),
    (9, stored(2, leader=2), False),
    (9, stored(2), False),
], ids=["voter-follower", "observer-follower", "observer-unattached"])  # fmt: skip
def test_only_a_voter_times_out_into_an_election(node_id: int, state: Any, becomes_prospective: bool) -> None:
    """testVoterBecomeProspectiveAfterFetchTimeout, testFollowerAsObserverDoesNotBecomeProspectiveAfterFetchTimeout,
    testUnattachedAsObserverDoesNotBecomeProspectiveAfterElectionTimeout."""
    h = Harness(node_id=node_id, state=state)
    h.tick(10 * CONFIG.fetch_timeout_ms)
    assert (h.voter.kind is StateKind.PROSPECTIVE) == becomes_prospective


@pytest.mark.parametrize("api_key", [ApiKey.FETCH, ApiKey.VOTE, ApiKey.BEGIN_QUORUM_EPOCH, ApiKey.END_QUORUM_EPOCH])
def test_cluster_authorization_failure_is_fatal(api_key: int) -> None:
    """testClusterAuthorizationFailedInFetch, ...InVote, ...InBeginQuorumEpoch, ...InEndQuorumEpoch."""
    if api_key == ApiKey.FETCH:
        h = Harness(state=stored(2, leader=2))
    elif api_key == ApiKey.BEGIN_QUORUM_EPOCH:
        h = Harness(state=stored(1))
        _elect(h)
        h.tick(h.now + CONFIG.begin_quorum_epoch_period_ms)
    elif api_key == ApiKey.END_QUORUM_EPOCH:
        h = Harness(state=stored(2, leader=1, voted=1))
    else:
        h = Harness(state=stored(2, voted=1))
    send: SendRequest = h.sends(api_key)[-1]
    values = {"error_code": ErrorCode.cluster_authorization_failed, "session_id": 0, "responses": [], "topics": []}
    response = build(response_class(api_key, send.api_version), values)
    with pytest.raises(RaftFatalError):
        h.respond(send, response)


def test_begin_quorum_epoch_answer_acknowledges() -> None:
    """LeaderState: a BeginQuorumEpoch answer marks the voter as acknowledging the epoch."""
    h = Harness(state=stored(1))
    _elect(h)
    h.tick(h.now + CONFIG.begin_quorum_epoch_period_ms)
    for send in h.sends(ApiKey.BEGIN_QUORUM_EPOCH):
        h.respond(send, epoch_answer(send, epoch=h.voter.epoch, leader=1))
    leader = h.voter.leader
    assert leader is not None and leader.acknowledged == {2, 3}


def _fetch_response(leader: int, epoch: int, **fields: Any) -> Any:
    partition = {"partition_index": 0, "error_code": 0, "high_watermark": -1, "last_stable_offset": -1,
                 "log_start_offset": 0, "diverging_epoch": {"epoch": -1, "end_offset": -1},
                 "current_leader": {"leader_id": leader, "leader_epoch": epoch},
                 "snapshot_id": {"end_offset": -1, "epoch": -1}, "aborted_transactions": None,
                 "preferred_read_replica": -1, "records": b""}  # fmt: skip
    partition.update(fields)
    topic = {"topic_id": METADATA_TOPIC_ID, "topic": METADATA_TOPIC_NAME, "partitions": [partition]}
    return build(response_class(ApiKey.FETCH, 17), {"error_code": 0, "session_id": 0, "responses": [topic]})


def test_follower_downloads_a_snapshot_and_falls_back_to_fetch_when_it_is_gone() -> None:
    """KafkaRaftClientSnapshotTest#testFetchRequestOffsetAtZero (the follower's side) and
    #testFetchSnapshotResponseMissingSnapshot: FetchSnapshot replaces Fetch while the download runs."""
    h = Harness(state=stored(2, leader=2))
    fetch = h.sends(ApiKey.FETCH)[-1]
    h.take()
    h.respond(fetch, _fetch_response(2, 2, snapshot_id={"end_offset": 10, "epoch": 2}))
    assert [type(a).__name__ for a in h.actions] == ["StartSnapshotDownload"]
    h.tick(h.now)
    (download,) = h.sends(ApiKey.FETCH_SNAPSHOT)
    p = download.body.topics[0].partitions[0]
    assert (p.snapshot_id.end_offset, p.snapshot_id.epoch, p.position, download.destination) == (10, 2, 0, 2)
    h.take()
    partition = {"index": 0, "error_code": ErrorCode.snapshot_not_found, "snapshot_id": {"end_offset": -1, "epoch": -1},
                 "current_leader": {"leader_id": 2, "leader_epoch": 2}, "size": -1, "position": -1,
                 "unaligned_records": b""}  # fmt: skip
    values = {"error_code": 0, "topics": [{"name": METADATA_TOPIC_NAME, "partitions": [partition]}]}
    h.respond(download, build(response_class(ApiKey.FETCH_SNAPSHOT, 1), values))
    assert [type(a).__name__ for a in h.actions] == ["AbortSnapshotDownload"]
    h.tick(h.now)
    (again,) = h.sends(ApiKey.FETCH)
    assert again.body.topics[0].partitions[0].fetch_offset == 0


def test_a_leader_change_drops_the_download() -> None:
    """KafkaRaftClient: a new leader or epoch ends a snapshot download from the old one."""
    h = Harness(state=stored(2, leader=2))
    fetch = h.sends(ApiKey.FETCH)[-1]
    h.respond(fetch, _fetch_response(2, 2, snapshot_id={"end_offset": 10, "epoch": 2}))
    h.take()
    h.begin_epoch(3, 3)
    assert "AbortSnapshotDownload" in [type(a).__name__ for a in h.actions]
    h.tick(h.now)
    assert [s.destination for s in h.sends(ApiKey.FETCH)] == [3]


@pytest.mark.parametrize(
    ("request_epoch", "error"),
    [(5, ErrorCode.not_leader_or_follower), (4, ErrorCode.fenced_leader_epoch), (6, ErrorCode.unknown_leader_epoch)],
)
def test_a_follower_answers_fetch_and_fetch_snapshot_with_the_leader_it_knows(
    request_epoch: int, error: ErrorCode
) -> None:
    """KafkaRaftClientSnapshotTest#testFetchSnapshotRequestAsFollower, #testFetchSnapshotRequestWithOlderEpoch,
    #testFetchSnapshotRequestWithNewerEpoch; the same checks for Fetch (validateLeaderOnlyRequest)."""
    h = Harness(state=stored(5, leader=2))
    body = fetch_request(0, 0, leader_epoch=request_epoch, replica_id=3, cluster_id="test-cluster")
    data = h.request(ApiKey.FETCH, body, 17).responses[0].partitions[0]
    assert (data.error_code, data.high_watermark) == (error, -1)
    assert (data.current_leader.leader_id, data.current_leader.leader_epoch) == (2, 5)
    snapshot = snapshot_request(5, 1, 0, leader_epoch=request_epoch, cluster_id=None)
    data = h.request(ApiKey.FETCH_SNAPSHOT, snapshot, 1).topics[0].partitions[0]
    assert (data.error_code, data.current_leader.leader_id, data.current_leader.leader_epoch) == (error, 2, 5)
    assert h.voter.kind is StateKind.FOLLOWER


def test_a_follower_fetch_waits_at_most_half_the_fetch_timeout() -> None:
    # Kafka's 500 ms with its defaults; with a fetch timeout below 500 ms an idle leader would otherwise hold the
    # Fetch past the timeout, and the followers would elect a new leader every fetch timeout.
    for fetch_timeout_ms, max_wait_ms in ((2000, 500), (400, 200)):
        config = QuorumConfig(fetch_timeout_ms=fetch_timeout_ms, fetch_max_wait_ms=500)
        h = Harness(state=stored(5, leader=2), layout=[(5, 1)], config=config)
        h.tick(1)
        (fetch,) = h.sends(ApiKey.FETCH)
        assert fetch.body.max_wait == timedelta(milliseconds=max_wait_ms)
