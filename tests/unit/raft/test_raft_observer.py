"""The KRaft observer state machine driven by plain calls: requests it builds, actions it returns, and a
follower log kept byte-identical to a leader's through valid fetches, truncation and snapshot downloads."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from kio.schema.errors import ErrorCode
from raft_helpers import CLUSTER_ID, CONTROLLER, LEADER_ID, leader_for, open_log, write_epochs

from ksteward.metadata.batch import encode_batch
from ksteward.metadata.epochs import OffsetAndEpoch
from ksteward.metadata.log import MetadataLog
from ksteward.protocol.apis import ApiKey
from ksteward.protocol.build import build
from ksteward.protocol.codec import response_class
from ksteward.raft import METADATA_TOPIC_ID
from ksteward.raft.follower_log import FollowerLog
from ksteward.raft.leader import ParkedFetch, RaftLeader
from ksteward.raft.log_view import MetadataLogView
from ksteward.raft.observer import (
    AbortSnapshotDownload,
    AppendBatches,
    Backoff,
    HighWatermarkUpdated,
    InstallSnapshot,
    LeaderChanged,
    RaftFatalError,
    RaftObserver,
    StartSnapshotDownload,
    TruncateTo,
    WriteSnapshotChunk,
)


def fetch_response(
    *,
    error: ErrorCode = ErrorCode.none,
    top: ErrorCode = ErrorCode.none,
    leader: int = LEADER_ID,
    epoch: int = 5,
    hw: int = -1,
    records: bytes = b"",
    diverging: tuple[int, int] = (-1, -1),
    snapshot: tuple[int, int] = (-1, -1),
) -> Any:
    partition = {
        "partition_index": 0, "error_code": error, "high_watermark": hw, "log_start_offset": 0,
        "diverging_epoch": {"epoch": diverging[0], "end_offset": diverging[1]},
        "current_leader": {"leader_id": leader, "leader_epoch": epoch},
        "snapshot_id": {"end_offset": snapshot[0], "epoch": snapshot[1]},
        "aborted_transactions": None, "records": records,
    }  # fmt: skip
    values = {"error_code": top, "responses": [{"topic_id": METADATA_TOPIC_ID, "partitions": [partition]}],
              "node_endpoints": [{"node_id": leader, "host": "127.0.0.1", "port": 9093}]}  # fmt: skip
    return build(response_class(ApiKey.FETCH, 17), values)


@pytest.fixture
def follower(tmp_path: Path) -> FollowerLog:
    f = FollowerLog(open_log(tmp_path / "follower"))
    yield f
    f.close()


def test_first_fetch_asks_from_offset_zero_as_an_observer(follower: FollowerLog) -> None:
    observer = RaftObserver(cluster_id=CLUSTER_ID, replica_id=7)
    api_key, version, request = observer.next_request(follower.view)
    assert (api_key, version) == (ApiKey.FETCH, 17)
    assert request.cluster_id == CLUSTER_ID and request.max_wait.total_seconds() == 0.5
    assert (request.replica_state.replica_id, request.replica_state.replica_epoch) == (7, -1)
    partition = request.topics[0].partitions[0]
    assert request.topics[0].topic_id == METADATA_TOPIC_ID
    assert (partition.fetch_offset, partition.last_fetched_epoch, partition.current_leader_epoch) == (0, 0, 0)


def test_discovery_adopts_the_leader_and_epoch_then_refetches(follower: FollowerLog) -> None:
    # E35: the first Fetch carries epoch 0, the leader answers FENCED_LEADER_EPOCH naming itself at epoch 5.
    observer = RaftObserver(cluster_id=CLUSTER_ID, replica_id=7)
    actions = observer.on_fetch_response(fetch_response(error=ErrorCode.fenced_leader_epoch), follower.view)
    assert actions == [LeaderChanged(LEADER_ID, 5, ("127.0.0.1", 9093))]
    assert (observer.leader_id, observer.epoch, observer.leader_endpoint) == (LEADER_ID, 5, ("127.0.0.1", 9093))
    assert observer.next_request(follower.view)[2].topics[0].partitions[0].current_leader_epoch == 5


def test_records_are_appended_and_the_high_watermark_is_capped_at_the_log_end(follower: FollowerLog) -> None:
    observer = RaftObserver(cluster_id=CLUSTER_ID, replica_id=7, epoch=5, leader_id=LEADER_ID)
    records = encode_batch(0, [b"a", b"b"], timestamp_ms=1, leader_epoch=5)
    actions = observer.on_fetch_response(fetch_response(records=records, hw=9), follower.view)
    assert actions == [AppendBatches(records, 0, 2), HighWatermarkUpdated(2)]
    follower.apply(actions)
    assert follower.log.next_offset == 2 and follower.high_watermark == 2
    assert observer.caught_up(follower.view)
    request = observer.next_request(follower.view)[2].topics[0].partitions[0]
    assert (request.fetch_offset, request.last_fetched_epoch) == (2, 5)


def test_records_that_do_not_follow_the_log_end_are_refused(follower: FollowerLog) -> None:
    observer = RaftObserver(cluster_id=CLUSTER_ID, epoch=5, leader_id=LEADER_ID)
    records = encode_batch(4, [b"a"], timestamp_ms=1, leader_epoch=5)
    [action] = observer.on_fetch_response(fetch_response(records=records, hw=5), follower.view)
    assert isinstance(action, Backoff)


def test_batches_of_a_later_epoch_than_the_fetch_are_not_appended(follower: FollowerLog) -> None:
    # KAFKA-18723: a replica appends only batches of its own epoch or earlier ones; the rest of the answer is
    # dropped, and the high watermark stops at what was appended.
    observer = RaftObserver(cluster_id=CLUSTER_ID, epoch=5, leader_id=LEADER_ID)
    older = encode_batch(0, [b"a", b"b"], timestamp_ms=1, leader_epoch=4)
    own = encode_batch(2, [b"c"], timestamp_ms=1, leader_epoch=5)
    later = encode_batch(3, [b"d"], timestamp_ms=1, leader_epoch=6)
    actions = observer.on_fetch_response(fetch_response(records=older + own + later, hw=4), follower.view)
    assert actions == [AppendBatches(older + own, 0, 3), HighWatermarkUpdated(3)]
    follower.apply(actions)
    assert follower.log.next_offset == 3 and follower.log.last_epoch == 5


def test_an_answer_of_only_later_epochs_appends_nothing_and_backs_off(follower: FollowerLog) -> None:
    observer = RaftObserver(cluster_id=CLUSTER_ID, epoch=5, leader_id=LEADER_ID)
    later = encode_batch(0, [b"a"], timestamp_ms=1, leader_epoch=6)
    [action] = observer.on_fetch_response(fetch_response(records=later, hw=1), follower.view)
    assert isinstance(action, Backoff) and "epoch 6, above this replica's epoch 5" in action.reason
    assert follower.log.next_offset == 0


def test_diverging_epoch_truncates_as_kafka_does(follower: FollowerLog) -> None:
    # E32: 3 records of epoch 3, DivergingEpoch {3, 2}: truncate to 2, then fetch at 2 with last epoch 3.
    for i in range(3):
        follower.log.append([b"x%d" % i], timestamp_ms=1, leader_epoch=3)
    observer = RaftObserver(cluster_id=CLUSTER_ID, epoch=3, leader_id=LEADER_ID)
    actions = observer.on_fetch_response(fetch_response(epoch=3, diverging=(3, 2)), follower.view)
    assert actions == [TruncateTo(2)]
    follower.apply(actions)
    partition = observer.next_request(follower.view)[2].topics[0].partitions[0]
    assert (partition.fetch_offset, partition.last_fetched_epoch) == (2, 3)


def test_diverging_to_an_epoch_we_lack_cuts_at_our_lower_epoch(follower: FollowerLog) -> None:
    write_epochs(follower.log, [(1, 3), (2, 3)])
    observer = RaftObserver(cluster_id=CLUSTER_ID, epoch=5, leader_id=LEADER_ID)
    # The leader's epoch 4 ended at 10; we never had epoch 4: cut where our largest epoch below 4 ends.
    assert observer.on_fetch_response(fetch_response(diverging=(4, 10)), follower.view) == [TruncateTo(6)]
    assert observer.on_fetch_response(fetch_response(diverging=(2, 4)), follower.view) == [TruncateTo(4)]


def test_truncation_below_the_high_watermark_is_fatal(follower: FollowerLog) -> None:
    write_epochs(follower.log, [(5, 4)])
    observer = RaftObserver(cluster_id=CLUSTER_ID, epoch=5, leader_id=LEADER_ID)
    observer.high_watermark = 4
    with pytest.raises(RaftFatalError, match="below the high watermark"):
        observer.on_fetch_response(fetch_response(diverging=(5, 2)), follower.view)


def test_high_watermark_never_goes_down(follower: FollowerLog) -> None:
    write_epochs(follower.log, [(5, 4)])
    observer = RaftObserver(cluster_id=CLUSTER_ID, epoch=5, leader_id=LEADER_ID)
    assert observer.on_fetch_response(fetch_response(hw=3), follower.view) == [HighWatermarkUpdated(3)]
    assert observer.on_fetch_response(fetch_response(hw=-1), follower.view) == []
    with pytest.raises(RaftFatalError):
        observer.on_fetch_response(fetch_response(hw=2), follower.view)


def test_cluster_authorization_failed_is_fatal_and_other_top_level_errors_back_off(follower: FollowerLog) -> None:
    observer = RaftObserver(cluster_id=CLUSTER_ID)
    with pytest.raises(RaftFatalError, match="CLUSTER_AUTHORIZATION_FAILED"):
        observer.on_fetch_response(fetch_response(top=ErrorCode.cluster_authorization_failed), follower.view)
    [action] = observer.on_fetch_response(fetch_response(top=ErrorCode.broker_not_available), follower.view)
    assert isinstance(action, Backoff)


def test_stale_epoch_responses_are_ignored(follower: FollowerLog) -> None:
    observer = RaftObserver(cluster_id=CLUSTER_ID, epoch=6, leader_id=2)
    records = encode_batch(0, [b"a"], timestamp_ms=1, leader_epoch=5)
    assert observer.on_fetch_response(fetch_response(epoch=5, records=records, hw=1), follower.view) == []


def test_snapshot_id_starts_a_download_in_chunks(tmp_path: Path, follower: FollowerLog) -> None:
    with open_log(tmp_path / "leader") as leader_log:
        write_epochs(leader_log, [(5, 10)])
        leader_log.write_snapshot(10, 5, [b"image-%d" % i for i in range(400)], last_contained_timestamp_ms=1)
        size = leader_log.snapshots()[0].path.stat().st_size
        leader = leader_for(leader_log, epoch=5)
        observer = RaftObserver(cluster_id=CLUSTER_ID, replica_id=7, epoch=5, leader_id=LEADER_ID,
                                max_bytes=size // 3)  # fmt: skip
        actions = observer.on_fetch_response(fetch_response(snapshot=(10, 5)), follower.view)
        assert actions == [StartSnapshotDownload(OffsetAndEpoch(10, 5))]
        follower.apply(actions)
        chunks = 0
        while observer.downloading is not None:
            api_key, version, request = observer.next_request(follower.view)
            assert api_key == ApiKey.FETCH_SNAPSHOT
            assert request.topics[0].partitions[0].position == follower_written(follower)
            actions = observer.on_fetch_snapshot_response(
                leader.handle_fetch_snapshot(request, version, CONTROLLER), follower.view
            )
            assert isinstance(actions[0], WriteSnapshotChunk)
            follower.apply(actions)
            chunks += 1
        assert chunks >= 3 and actions[-2:] == [InstallSnapshot(OffsetAndEpoch(10, 5)), HighWatermarkUpdated(10)]
        assert follower.log.snapshots()[0].path.read_bytes() == leader_log.snapshots()[0].path.read_bytes()
        assert (follower.log.log_start_offset, follower.log.next_offset, follower.log.last_fetched_epoch) == (10, 10, 5)
        assert not list(follower.log.directory.glob("*.part"))


def test_snapshot_not_found_drops_the_download_and_fetches_again(follower: FollowerLog) -> None:
    observer = RaftObserver(cluster_id=CLUSTER_ID, epoch=5, leader_id=LEADER_ID)
    follower.apply(observer.on_fetch_response(fetch_response(snapshot=(10, 5)), follower.view))
    assert list(follower.log.directory.glob("*.part"))
    values = {"error_code": 0, "topics": [{"name": "__cluster_metadata", "partitions": [{
        "index": 0, "error_code": ErrorCode.snapshot_not_found, "snapshot_id": {"end_offset": -1, "epoch": -1},
        "current_leader": {"leader_id": LEADER_ID, "leader_epoch": 5}, "size": 0, "position": 0,
        "unaligned_records": b""}]}]}  # fmt: skip
    response = build(response_class(ApiKey.FETCH_SNAPSHOT, 1), values)
    actions = observer.on_fetch_snapshot_response(response, follower.view)
    assert actions == [AbortSnapshotDownload(OffsetAndEpoch(10, 5))]
    follower.apply(actions)
    assert not list(follower.log.directory.glob("*.part"))
    assert observer.next_request(follower.view)[0] == ApiKey.FETCH


def follower_written(follower: FollowerLog) -> int:
    parts = list(follower.log.directory.glob("*.checkpoint.part"))
    return parts[0].stat().st_size if parts else 0


# --- leader and observer together ---------------------------------------------------------------


def replicate(leader: RaftLeader, observer: RaftObserver, follower: FollowerLog, max_rounds: int = 200) -> int:
    """Run fetches until the observer is caught up and the leader would park; returns the rounds used."""
    for rounds in range(1, max_rounds + 1):
        api_key, version, request = observer.next_request(follower.view)
        if api_key == ApiKey.FETCH:
            response = leader.handle_fetch(request, version, CONTROLLER)
            if isinstance(response, ParkedFetch):
                return rounds
        else:
            response = leader.handle_fetch_snapshot(request, version, CONTROLLER)
        follower.apply(observer.on_response(api_key, response, follower.view))
    raise AssertionError("never caught up")


def segment_bytes_from(log: MetadataLog, start: int) -> bytes:
    return log.read_raw(start, 1 << 30)


def test_observer_catches_up_byte_for_byte_with_small_fetches(tmp_path: Path, follower: FollowerLog) -> None:
    with open_log(tmp_path / "leader") as leader_log:
        write_epochs(leader_log, [(1, 3)] * 10 + [(3, 4)] * 10 + [(5, 2)] * 10)
        leader = leader_for(leader_log, epoch=5)
        observer = RaftObserver(cluster_id=CLUSTER_ID, replica_id=7, max_bytes=200)
        replicate(leader, observer, follower)
        assert follower.log.next_offset == leader_log.next_offset == observer.high_watermark
        assert segment_bytes_from(follower.log, 0) == segment_bytes_from(leader_log, 0)
        assert follower.log.epoch_history.entries() == leader_log.epoch_history.entries()


def test_divergent_observer_truncates_then_matches_the_leader(tmp_path: Path, follower: FollowerLog) -> None:
    with open_log(tmp_path / "leader") as leader_log:
        write_epochs(leader_log, [(1, 3), (3, 3), (5, 3)])
        write_epochs(follower.log, [(1, 3), (2, 4)])  # an epoch-2 tail the leader never had
        leader = leader_for(leader_log, epoch=5)
        observer = RaftObserver(cluster_id=CLUSTER_ID, replica_id=7)
        replicate(leader, observer, follower)
        assert segment_bytes_from(follower.log, 0) == segment_bytes_from(leader_log, 0)


def test_observer_below_the_log_start_downloads_the_snapshot_then_follows(
    tmp_path: Path, follower: FollowerLog
) -> None:
    with open_log(tmp_path / "leader", segment_bytes=1024) as leader_log:
        write_epochs(leader_log, [(1, 10)] * 20)
        leader_log.write_snapshot(150, 1, [b"image-%d" % i for i in range(300)], last_contained_timestamp_ms=1)
        leader_log.delete_segments_before(150)
        write_epochs(leader_log, [(1, 5)] * 4)
        leader = leader_for(leader_log, epoch=1)
        observer = RaftObserver(cluster_id=CLUSTER_ID, replica_id=7, max_bytes=4096)
        replicate(leader, observer, follower)
        start = leader.log.start_offset
        assert follower.installed and follower.log.snapshots()[0].end_offset == 150
        assert follower.log.next_offset == leader_log.next_offset == observer.high_watermark
        assert segment_bytes_from(follower.log, 150) == segment_bytes_from(leader_log, 150) and start <= 150


def test_observer_resumes_from_its_own_log_after_a_restart(tmp_path: Path) -> None:
    with open_log(tmp_path / "leader") as leader_log:
        write_epochs(leader_log, [(1, 4)] * 5)
        leader = leader_for(leader_log, epoch=1)
        first = FollowerLog(open_log(tmp_path / "observer"))
        replicate(leader, RaftObserver(cluster_id=CLUSTER_ID, replica_id=7), first)
        first.close()
        write_epochs(leader_log, [(1, 4)] * 5)
        again = FollowerLog(open_log(tmp_path / "observer"))
        try:
            observer = RaftObserver(cluster_id=CLUSTER_ID, replica_id=7)
            request = observer.next_request(again.view)[2].topics[0].partitions[0]
            assert (request.fetch_offset, request.last_fetched_epoch) == (20, 1)
            replicate(leader, observer, again)
            assert segment_bytes_from(again.log, 0) == segment_bytes_from(leader_log, 0)
            assert observer.high_watermark == 40
        finally:
            again.close()


def test_fetch_v18_with_the_followers_high_watermark_is_served(tmp_path: Path, follower: FollowerLog) -> None:
    with open_log(tmp_path / "leader") as leader_log:
        write_epochs(leader_log, [(1, 4)] * 3)
        observer = RaftObserver(cluster_id=CLUSTER_ID, replica_id=7, fetch_version=18)
        replicate(leader_for(leader_log, epoch=1), observer, follower)
        assert follower.log.next_offset == 12 == observer.high_watermark


@pytest.mark.parametrize("version", range(4, 19))
def test_the_fetch_built_from_classes_is_the_one_build_makes(tmp_path: Path, version: int) -> None:
    """From v13 ``_fetch_request`` builds its entities directly; ``protocol.build`` of the same values is the
    reference, at every version an observer may be told to send."""
    import uuid

    from ksteward.protocol.codec import request_class

    with open_log(tmp_path / "follower") as log:
        write_epochs(log, [(1, 3), (2, 2)])
        observer = RaftObserver(cluster_id=CLUSTER_ID, replica_id=7, directory_id=uuid.UUID(int=3), epoch=5,
                                leader_id=LEADER_ID, fetch_version=version)  # fmt: skip
        request = observer._fetch_request(MetadataLogView(log))
        partition = {
            "partition": 0,
            "current_leader_epoch": 5,
            "fetch_offset": 5,
            "last_fetched_epoch": 2,
            "log_start_offset": -1,
            "partition_max_bytes": 0,
            "replica_directory_id": uuid.UUID(int=3),
        }
        values = {
            "cluster_id": CLUSTER_ID,
            "replica_id": 7,
            "replica_state": {"replica_id": 7, "replica_epoch": -1},
            "max_wait": 500,
            "min_bytes": 0,
            "max_bytes": 8 * 1024 * 1024,
            "isolation_level": 0,
            "session_id": 0,
            "session_epoch": -1,
            "forgotten_topics_data": [],
            "rack_id": "",
            "topics": [{"topic_id": METADATA_TOPIC_ID, "topic": "__cluster_metadata", "partitions": [partition]}],
        }
        assert request == build(request_class(ApiKey.FETCH, version), values)  # fmt: skip
