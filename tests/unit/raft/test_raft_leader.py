"""The KRaft leader's Fetch and FetchSnapshot answers, as KafkaRaftClientTest / KafkaRaftClientSnapshotTest
check them, over a real metadata log (E29-E33, E40-E46 of Kafka's cases, written up in docs/raft.md)."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from kio.schema.errors import ErrorCode
from raft_helpers import (
    CLUSTER_ID,
    CONTROLLER,
    LEADER_ID,
    fetch_request,
    leader_for,
    open_log,
    partition_of,
    snapshot_request,
    write_epochs,
)

from ksteward.metadata.batch import iter_batches
from ksteward.metadata.log import MetadataLog
from ksteward.raft import METADATA_TOPIC_ID
from ksteward.raft.leader import ParkedFetch


@pytest.fixture
def log(tmp_path: Path) -> MetadataLog:
    # Kafka's testLeaderImmediatelySendsDivergingEpoch layout: epoch 1 at 0-2, 3 at 3-5, 5 at 6-8.
    with open_log(tmp_path / "leader") as log:
        write_epochs(log, [(1, 3), (3, 3), (5, 3)])
        yield log


def test_valid_fetch_returns_whole_batches_hw_leader_and_endpoint(log: MetadataLog) -> None:
    leader = leader_for(log, epoch=5)
    response = leader.handle_fetch(fetch_request(3, 1, leader_epoch=5), 17, CONTROLLER)
    data = partition_of(response)
    assert response.error_code == ErrorCode.none and data.error_code == ErrorCode.none
    assert response.responses[0].topic_id == METADATA_TOPIC_ID
    assert data.high_watermark == 9 and data.log_start_offset == 0
    assert (data.current_leader.leader_id, data.current_leader.leader_epoch) == (LEADER_ID, 5)
    assert data.diverging_epoch.epoch == -1 and data.snapshot_id.epoch == -1
    batches = list(iter_batches(bytes(data.records)))
    assert [(b.base_offset, b.leader_epoch) for b in batches] == [(3, 3), (6, 5)]
    assert [(e.node_id, e.host, e.port) for e in response.node_endpoints] == [(LEADER_ID, "127.0.0.1", 9093)]
    assert leader.replica_offsets == {7: 3}


def test_records_stop_at_the_byte_limit_but_one_batch_always_comes(log: MetadataLog) -> None:
    leader = leader_for(log, epoch=5)
    data = partition_of(leader.handle_fetch(fetch_request(0, 0, leader_epoch=5, max_bytes=1), 17, CONTROLLER))
    assert [b.base_offset for b in iter_batches(bytes(data.records))] == [0]


def test_records_stop_at_the_durable_end(tmp_path: Path, log: MetadataLog) -> None:
    log.append([b"not yet durable"], timestamp_ms=1, leader_epoch=5)
    leader = leader_for(log, epoch=5)
    data = partition_of(leader.handle_fetch(fetch_request(6, 5, leader_epoch=5), 17, CONTROLLER))
    assert [b.base_offset for b in iter_batches(bytes(data.records))] == [6]
    assert data.high_watermark == 9
    assert isinstance(leader.handle_fetch(fetch_request(9, 5, leader_epoch=5), 17, CONTROLLER), ParkedFetch)


def test_a_parked_fetch_says_whether_a_voter_sent_it(log: MetadataLog) -> None:
    # The driver answers the voters' parked fetches before the observers': only theirs move the high watermark.
    leader = leader_for(log, epoch=5, voters={LEADER_ID, 7})
    assert leader.handle_fetch(fetch_request(9, 5, leader_epoch=5, replica_id=7), 17, CONTROLLER) == ParkedFetch(
        9, 500, from_voter=True
    )
    observer = leader.handle_fetch(fetch_request(9, 5, leader_epoch=5, replica_id=8), 17, CONTROLLER)
    assert observer == ParkedFetch(9, 500, from_voter=False)


def test_diverging_epoch_is_answered_at_once(log: MetadataLog) -> None:
    # E31: offset 6 with last epoch 2 -> DivergingEpoch {1, 3}, no records, even with MaxWaitMs 500.
    response = leader_for(log, epoch=5).handle_fetch(fetch_request(6, 2, leader_epoch=5), 17, CONTROLLER)
    data = partition_of(response)
    assert (data.diverging_epoch.epoch, data.diverging_epoch.end_offset) == (1, 3)
    assert not data.records and data.error_code == ErrorCode.none


def test_fetch_past_the_end_of_its_epoch_diverges(log: MetadataLog) -> None:
    data = partition_of(leader_for(log, epoch=5).handle_fetch(fetch_request(5, 1, leader_epoch=5), 17, CONTROLLER))
    assert (data.diverging_epoch.epoch, data.diverging_epoch.end_offset) == (1, 3)


def test_caught_up_fetch_parks_unless_max_wait_is_zero(log: MetadataLog) -> None:
    leader = leader_for(log, epoch=5)
    parked = leader.handle_fetch(fetch_request(9, 5, leader_epoch=5, max_wait_ms=500), 17, CONTROLLER)
    assert parked == ParkedFetch(9, 500)
    now = leader.handle_fetch(fetch_request(9, 5, leader_epoch=5, max_wait_ms=0), 17, CONTROLLER)
    assert partition_of(now).error_code == ErrorCode.none and not partition_of(now).records
    write_epochs(log, [(5, 2)])
    done = leader.complete_fetch(fetch_request(9, 5, leader_epoch=5), 17, CONTROLLER)
    assert [b.base_offset for b in iter_batches(bytes(partition_of(done).records))] == [9]
    assert partition_of(done).high_watermark == 11


@pytest.mark.parametrize(
    ("offset", "last_epoch", "leader_epoch", "max_wait", "error"),
    [
        (-1, 5, 5, 500, ErrorCode.invalid_request),
        (3, -1, 5, 500, ErrorCode.invalid_request),
        (3, 6, 5, 500, ErrorCode.invalid_request),  # last fetched epoch above the current leader epoch
        (3, 1, 5, -1, ErrorCode.invalid_request),
        (3, 1, 6, 500, ErrorCode.unknown_leader_epoch),
        (3, 1, 4, 500, ErrorCode.fenced_leader_epoch),
    ],
)
def test_invalid_fetches(
    log: MetadataLog, offset: int, last_epoch: int, leader_epoch: int, max_wait: int, error: ErrorCode
) -> None:
    request = fetch_request(offset, last_epoch, leader_epoch=leader_epoch, max_wait_ms=max_wait)
    data = partition_of(leader_for(log, epoch=5).handle_fetch(request, 17, CONTROLLER))
    assert data.error_code == error and data.high_watermark == -1 and not data.records
    assert (data.current_leader.leader_id, data.current_leader.leader_epoch) == (LEADER_ID, 5)


def test_shutting_down_leader_answers_broker_not_available(log: MetadataLog) -> None:
    leader = leader_for(log, epoch=5)
    leader.shutting_down = True
    data = partition_of(leader.handle_fetch(fetch_request(3, 1, leader_epoch=5), 17, CONTROLLER))
    assert data.error_code == ErrorCode.broker_not_available


@pytest.mark.parametrize("cluster_id", ["", "another-cluster"])
def test_cluster_id_mismatch_is_a_top_level_error(log: MetadataLog, cluster_id: str) -> None:
    response = leader_for(log, epoch=5).handle_fetch(
        fetch_request(3, 1, leader_epoch=5, cluster_id=cluster_id), 17, CONTROLLER
    )
    assert response.error_code == ErrorCode.inconsistent_cluster_id and response.responses == ()


def test_no_cluster_id_is_accepted(log: MetadataLog) -> None:
    response = leader_for(log, epoch=5).handle_fetch(
        fetch_request(3, 1, leader_epoch=5, cluster_id=None), 17, CONTROLLER
    )
    assert response.error_code == ErrorCode.none


@pytest.mark.parametrize(
    ("topic_id", "partition"), [(uuid.UUID(int=2), 0), (METADATA_TOPIC_ID, 1)], ids=["topic", "partition"]
)
def test_another_topic_or_partition_is_invalid_request(log: MetadataLog, topic_id: uuid.UUID, partition: int) -> None:
    request = fetch_request(3, 1, leader_epoch=5, topic_id=topic_id, partition=partition)
    response = leader_for(log, epoch=5).handle_fetch(request, 17, CONTROLLER)
    assert response.error_code == ErrorCode.invalid_request and response.responses == ()


def test_fetch_before_v13_names_no_topic_id_and_is_invalid(log: MetadataLog) -> None:
    response = leader_for(log, epoch=5).handle_fetch(fetch_request(3, 1, leader_epoch=5, version=12), 12, CONTROLLER)
    assert response.error_code == ErrorCode.invalid_request


def test_fetch_with_the_leaders_own_replica_id_is_an_unknown_server_error(log: MetadataLog) -> None:
    request = fetch_request(3, 1, leader_epoch=5, replica_id=LEADER_ID)
    data = partition_of(leader_for(log, epoch=5).handle_fetch(request, 17, CONTROLLER))
    assert data.error_code == ErrorCode.unknown_server_error


def test_node_endpoints_only_from_v17_and_only_for_a_known_listener(log: MetadataLog) -> None:
    leader = leader_for(log, epoch=5)
    assert not hasattr(leader.handle_fetch(fetch_request(3, 1, leader_epoch=5, version=15), 15, CONTROLLER),
                       "node_endpoints")  # fmt: skip
    assert leader.handle_fetch(fetch_request(3, 1, leader_epoch=5), 17, "OTHER").node_endpoints == ()


# --- snapshots ----------------------------------------------------------------------------------


def snapshot_at(log: MetadataLog, end_offset: int, epoch: int, records: int = 50) -> None:
    log.write_snapshot(end_offset, epoch, [b"image-%d" % i for i in range(records)], last_contained_timestamp_ms=1)


def test_fetch_at_zero_gets_the_latest_snapshot(log: MetadataLog) -> None:
    snapshot_at(log, 3, 1)
    snapshot_at(log, 6, 3)
    data = partition_of(leader_for(log, epoch=5).handle_fetch(fetch_request(0, 0, leader_epoch=5), 17, CONTROLLER))
    assert (data.snapshot_id.end_offset, data.snapshot_id.epoch) == (6, 3) and not data.records


def test_fetch_below_log_start_gets_the_latest_snapshot(tmp_path: Path) -> None:
    with open_log(tmp_path / "small", segment_bytes=1024) as log:
        write_epochs(log, [(1, 10)] * 30)
        snapshot_at(log, 150, 1)
        snapshot_at(log, 200, 1)
        assert log.delete_segments_before(200) > 0
        assert 0 < log.log_start_offset <= 200
        leader = leader_for(log, epoch=1)
        view = leader.log
        assert view.start_offset in (log.log_start_offset, 150, 200)
        data = partition_of(leader.handle_fetch(fetch_request(10, 1, leader_epoch=1), 17, CONTROLLER))
        assert (data.snapshot_id.end_offset, data.snapshot_id.epoch) == (200, 1)
        assert data.log_start_offset == view.start_offset
        # At the log start with the snapshot's epoch, records follow; with another epoch, a snapshot.
        start = view.start_offset
        ok = partition_of(leader.handle_fetch(fetch_request(start, 1, leader_epoch=1), 17, CONTROLLER))
        assert ok.snapshot_id.epoch == -1 and next(iter_batches(bytes(ok.records))).base_offset == start


def test_fetch_at_log_start_with_another_epoch_gets_a_snapshot(tmp_path: Path) -> None:
    with open_log(tmp_path / "l") as log:
        write_epochs(log, [(2, 5), (3, 5)])
        snapshot_at(log, 5, 2)
        log.truncate_to_latest_snapshot()  # nothing: the log is past the snapshot
        leader = leader_for(log, epoch=3)
        valid = partition_of(leader.handle_fetch(fetch_request(5, 2, leader_epoch=3), 17, CONTROLLER))
        assert valid.snapshot_id.epoch == -1 and valid.records
        # Last fetched epoch below the oldest snapshot's epoch: a snapshot.
        below = partition_of(leader.handle_fetch(fetch_request(5, 1, leader_epoch=3), 17, CONTROLLER))
        assert (below.snapshot_id.end_offset, below.snapshot_id.epoch) == (5, 2)


def test_fetch_snapshot_in_two_chunks_joins_to_the_file(log: MetadataLog) -> None:
    snapshot_at(log, 6, 3, records=300)
    path = log.snapshots()[0].path
    size = path.stat().st_size
    leader = leader_for(log, epoch=5)
    first = leader.handle_fetch_snapshot(snapshot_request(6, 3, 0, leader_epoch=5, max_bytes=size // 2), 1, CONTROLLER)
    one = first.topics[0].partitions[0]
    assert one.error_code == ErrorCode.none and (one.size, one.position) == (size, 0)
    assert len(one.unaligned_records) == size // 2
    assert (one.current_leader.leader_id, one.current_leader.leader_epoch) == (LEADER_ID, 5)
    second = leader.handle_fetch_snapshot(snapshot_request(6, 3, size // 2, leader_epoch=5), 1, CONTROLLER)
    two = second.topics[0].partitions[0]
    assert two.size == size and two.position == size // 2
    assert bytes(one.unaligned_records) + bytes(two.unaligned_records) == path.read_bytes()
    assert [e.port for e in second.node_endpoints] == [9093]


@pytest.mark.parametrize(
    ("end", "epoch", "position", "leader_epoch", "error"),
    [
        (6, 3, -1, 5, ErrorCode.position_out_of_range),
        (6, 3, 10**9, 5, ErrorCode.position_out_of_range),
        (7, 3, 0, 5, ErrorCode.snapshot_not_found),
        (0, 0, 0, 5, ErrorCode.snapshot_not_found),  # the bootstrap checkpoint is never served
        (6, 3, 0, 4, ErrorCode.fenced_leader_epoch),
        (6, 3, 0, 6, ErrorCode.unknown_leader_epoch),
    ],
)
def test_fetch_snapshot_errors(
    log: MetadataLog, end: int, epoch: int, position: int, leader_epoch: int, error: ErrorCode
) -> None:
    snapshot_at(log, 6, 3)
    response = leader_for(log, epoch=5).handle_fetch_snapshot(
        snapshot_request(end, epoch, position, leader_epoch=leader_epoch), 1, CONTROLLER
    )
    data = response.topics[0].partitions[0]
    assert response.error_code == ErrorCode.none and data.error_code == error
    assert (data.current_leader.leader_id, data.current_leader.leader_epoch) == (LEADER_ID, 5)


def test_fetch_snapshot_position_equal_to_size_is_out_of_range(log: MetadataLog) -> None:
    snapshot_at(log, 6, 3)
    size = log.snapshots()[0].path.stat().st_size
    request = snapshot_request(6, 3, size, leader_epoch=5)
    response = leader_for(log, epoch=5).handle_fetch_snapshot(request, 1, CONTROLLER)
    assert response.topics[0].partitions[0].error_code == ErrorCode.position_out_of_range


def test_fetch_snapshot_for_another_partition_or_cluster(log: MetadataLog) -> None:
    leader = leader_for(log, epoch=5)
    other = leader.handle_fetch_snapshot(snapshot_request(6, 3, 0, leader_epoch=5, partition=1), 1, CONTROLLER)
    assert other.topics[0].partitions[0].error_code == ErrorCode.unknown_topic_or_partition
    named = leader.handle_fetch_snapshot(snapshot_request(6, 3, 0, leader_epoch=5, name="orders"), 1, CONTROLLER)
    assert named.topics[0].name == "orders"
    assert named.topics[0].partitions[0].error_code == ErrorCode.unknown_topic_or_partition
    wrong = leader.handle_fetch_snapshot(snapshot_request(6, 3, 0, leader_epoch=5, cluster_id="x"), 1, CONTROLLER)
    assert wrong.error_code == ErrorCode.inconsistent_cluster_id
    assert CLUSTER_ID != "x"


class _FlakyView:
    """A view whose reads fail as a concurrent segment deletion or a broken disk would make them."""

    def __init__(self, inner: object, errors: list[Exception]) -> None:
        self._inner = inner
        self._errors = errors

    def __getattr__(self, name: str) -> object:
        return getattr(self._inner, name)

    def read(self, offset: int, max_bytes: int) -> bytes:
        if self._errors:
            raise self._errors.pop(0)
        return self._inner.read(offset, max_bytes)  # type: ignore[attr-defined]


def test_a_read_racing_a_segment_deletion_is_checked_again(log: MetadataLog) -> None:
    from ksteward.metadata.log import OffsetOutOfRangeError

    leader = leader_for(log, epoch=5)
    leader.log = _FlakyView(leader.log, [OffsetOutOfRangeError("segment deleted")])  # type: ignore[assignment]
    data = partition_of(leader.handle_fetch(fetch_request(3, 1, leader_epoch=5), 17, CONTROLLER))
    assert data.error_code == ErrorCode.none and data.records


def test_an_unexpected_failure_is_unknown_server_error(log: MetadataLog) -> None:
    leader = leader_for(log, epoch=5)
    leader.log = _FlakyView(leader.log, [OSError("disk")])  # type: ignore[assignment]
    data = partition_of(leader.handle_fetch(fetch_request(3, 1, leader_epoch=5), 17, CONTROLLER))
    assert data.error_code == ErrorCode.unknown_server_error and data.high_watermark == -1


@pytest.mark.parametrize("version", range(4, 19))
def test_every_served_fetch_version_encodes(log: MetadataLog, version: int) -> None:
    from ksteward.protocol.apis import ApiKey
    from ksteward.protocol.build import build
    from ksteward.protocol.codec import encode_response, request_class
    from ksteward.server.raft_service import fetch_error_response

    topic: dict[str, object] = {"topic": "__cluster_metadata", "topic_id": METADATA_TOPIC_ID, "partitions": [
        {"partition": 0, "current_leader_epoch": 5, "fetch_offset": 3, "last_fetched_epoch": 1,
         "partition_max_bytes": 0}]}  # fmt: skip
    request = build(request_class(ApiKey.FETCH, version), {
        "replica_id": 7, "max_wait": 0, "min_bytes": 0, "topics": [topic], "forgotten_topics_data": []})  # fmt: skip
    response = leader_for(log, epoch=5).handle_fetch(request, version, CONTROLLER)
    assert encode_response(ApiKey.FETCH, version, 1, response)
    if version >= 13:
        assert partition_of(response).records
    refused = fetch_error_response(request, version, ErrorCode.cluster_authorization_failed)
    assert encode_response(ApiKey.FETCH, version, 1, refused)
    if version < 13:
        assert partition_of(refused).error_code == ErrorCode.cluster_authorization_failed


@pytest.mark.parametrize("version", range(13, 19))
def test_the_answer_built_from_classes_is_the_one_build_makes(log: MetadataLog, version: int) -> None:
    """``_fetch_response`` builds its entities directly; ``protocol.build`` from the fields' values is the
    reference (records, high watermark, leader, and the endpoint from v17)."""
    from ksteward.protocol.apis import ApiKey
    from ksteward.protocol.build import build
    from ksteward.protocol.codec import response_class

    leader = leader_for(log, epoch=5)
    response = leader.handle_fetch(fetch_request(3, 1, leader_epoch=5, version=version), version, CONTROLLER)
    data = partition_of(response)
    partition = {
        "partition_index": 0, "error_code": ErrorCode.none, "high_watermark": data.high_watermark,
        "last_stable_offset": -1, "log_start_offset": 0, "diverging_epoch": {"epoch": -1, "end_offset": -1},
        "current_leader": {"leader_id": LEADER_ID, "leader_epoch": 5},
        "snapshot_id": {"end_offset": -1, "epoch": -1}, "aborted_transactions": None,
        "preferred_read_replica": -1, "records": data.records,
    }  # fmt: skip
    values: dict[str, object] = {"error_code": ErrorCode.none, "session_id": 0,
                                 "responses": [{"topic_id": METADATA_TOPIC_ID, "partitions": [partition]}]}  # fmt: skip
    if version >= 17:
        values["node_endpoints"] = [{"node_id": LEADER_ID, "host": "127.0.0.1", "port": 9093, "rack": None}]
    assert data.records and response == build(response_class(ApiKey.FETCH, version), values)
