"""The controller's epoch in its log: the group committer starts each epoch with Kafka's LeaderChangeMessage
control batch (``KafkaRaftClient.onBecomeLeader``), every later batch carries the epoch, snapshots are named
after their last record's epoch, and an observer that followed the previous epoch is fenced, follows the
new leader, and truncates what the new epoch does not hold (``handleFetchResponse``)."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

from kio.schema.errors import ErrorCode
from kio.schema.leader_change_message.v0.data import Voter
from kio.schema.types import BrokerId
from kio.static.primitive import i8, i16, i32
from raft_helpers import CLUSTER_ID, LEADER_ID, LOGGER, fetch_request, leader_for, open_log, partition_of

from ksteward.metadata.loader import load
from ksteward.metadata.log import MetadataLog
from ksteward.metadata.records import AccessControlEntryRecord, encode_record
from ksteward.metadata.records.control import ControlRecordType, LeaderChangeMessage, decode_control_record
from ksteward.raft.follower_log import FollowerLog
from ksteward.raft.leader import RaftLeader
from ksteward.raft.observer import AppendBatches, LeaderChanged, RaftObserver, TruncateTo
from ksteward.server.committer import GroupCommitter

LEADER_CHANGE = LeaderChangeMessage(
    version=i16(0), leader_id=BrokerId(LEADER_ID), voters=(Voter(voter_id=i32(LEADER_ID)),),
    granting_voters=(Voter(voter_id=i32(LEADER_ID)),),
)  # fmt: skip


def acl(name: str) -> AccessControlEntryRecord:
    return AccessControlEntryRecord(
        id=uuid.uuid4(), resource_type=i8(2), resource_name=name, pattern_type=i8(3), principal="User:alice",
        host="*", operation=i8(3), permission_type=i8(3),
    )  # fmt: skip


def lead_one_epoch(directory: Path, epoch: int, names: list[str]) -> None:
    """One controller run: load, begin ``epoch``, commit an ACL per name, snapshot, close."""

    async def run() -> None:
        image, log = load(directory, LOGGER)
        committer = GroupCommitter(log, image, epoch=epoch, snapshot_bytes=1 << 30)
        committer.start()
        await committer.begin_epoch(LEADER_CHANGE)
        for name in names:
            await committer.append([acl(name)])
        await committer.close(snapshot=False)
        log.close()

    asyncio.run(run())


def test_each_epoch_starts_with_its_leader_change_batch_and_every_batch_carries_it(tmp_path: Path) -> None:
    lead_one_epoch(tmp_path, 1, ["a", "b"])
    lead_one_epoch(tmp_path, 2, ["c"])
    with MetadataLog.open(tmp_path, logger=LOGGER, read_only=True) as log:
        batches = list(log.read(0))
        assert log.epoch_history.entries() == [(1, 0), (2, 3)]
    assert [(b.base_offset, b.leader_epoch, b.is_control) for b in batches] == [
        (0, 1, True), (1, 1, False), (2, 1, False), (3, 2, True), (4, 2, False),
    ]  # fmt: skip
    for control in (batches[0], batches[3]):
        [(_offset, _ts, key, value)] = control.records
        assert decode_control_record(key, value) == (ControlRecordType.LEADER_CHANGE, LEADER_CHANGE)
    image, log = load(tmp_path, LOGGER, read_only=True)  # control batches are skipped by the replay
    log.close()
    assert (image.offset, image.epoch) == (4, 2)
    assert sorted(r.resource_name for r in image.acls.records.values()) == ["a", "b", "c"]


def test_an_epoch_with_nothing_but_its_leader_change_still_moves_the_image(tmp_path: Path) -> None:
    lead_one_epoch(tmp_path, 1, ["a"])
    lead_one_epoch(tmp_path, 2, [])

    async def snapshot_now() -> None:
        image, log = load(tmp_path, LOGGER)
        committer = GroupCommitter(log, image, epoch=3, snapshot_bytes=1 << 30)
        assert (committer.published.offset, committer.published.epoch) == (2, 2)  # past epoch 2's control batch
        committer.write_snapshot(committer.published)
        log.close()

    asyncio.run(snapshot_now())
    with MetadataLog.open(tmp_path, logger=LOGGER, read_only=True) as log:
        # The snapshot id is (end offset, epoch of its last record): Kafka's createSnapshot.
        assert [(s.end_offset, s.epoch) for s in log.snapshots()] == [(3, 2)]


def follow(leader: RaftLeader, follower: FollowerLog, observer: RaftObserver) -> list[object]:
    api_key, version, body = observer.next_request(follower.view)
    if api_key == 1:
        response = leader.handle_fetch(body, version, "CONTROLLER")
        if not hasattr(response, "responses"):  # parked: nothing new, answer as the expired wait would
            response = leader.complete_fetch(body, version, "CONTROLLER")
    else:
        response = leader.handle_fetch_snapshot(body, version, "CONTROLLER")
    actions = observer.on_response(api_key, response, follower.view)
    follower.apply(actions)
    return actions


def test_an_observer_of_the_old_epoch_is_fenced_then_follows_and_truncates(tmp_path: Path) -> None:
    leader_dir, observer_dir = tmp_path / "leader", tmp_path / "observer"
    lead_one_epoch(leader_dir, 1, ["a", "b"])
    follower = FollowerLog(open_log(observer_dir))
    observer = RaftObserver(cluster_id=CLUSTER_ID, replica_id=7)
    with open_log(leader_dir) as log:
        first = leader_for(log, epoch=1)
        for _ in range(4):
            follow(first, follower, observer)
    assert (observer.epoch, follower.log.next_offset) == (1, 3)
    # The observer holds an epoch-1 batch the leader never committed (its own copy of an uncommitted
    # record, as a follower of a multi-voter quorum can): the new epoch does not have it.
    follower.log.append([encode_record(acl("lost"))], timestamp_ms=1, leader_epoch=1)
    lead_one_epoch(leader_dir, 2, ["c"])
    with open_log(leader_dir) as log:
        second = leader_for(log, epoch=2)
        fenced = follow(second, follower, observer)
        assert [type(a) for a in fenced] == [LeaderChanged] and observer.epoch == 2
        assert [a for a in follow(second, follower, observer) if isinstance(a, TruncateTo)] == [TruncateTo(3)]
        appended = [a for a in follow(second, follower, observer) if isinstance(a, AppendBatches)]
        assert appended and appended[0].first_offset == 3
        assert follower.log.read_raw(0, 1 << 20) == log.read_raw(0, 1 << 20)
    follower.close()


def test_a_fetch_with_the_old_epoch_is_fenced_and_names_the_new_leader(tmp_path: Path) -> None:
    lead_one_epoch(tmp_path, 4, ["a"])
    with open_log(tmp_path) as log:
        leader = leader_for(log, epoch=5)
        data = partition_of(leader.handle_fetch(fetch_request(2, 4, leader_epoch=4), 17, "CONTROLLER"))
        assert data.error_code == ErrorCode.fenced_leader_epoch
        assert (data.current_leader.leader_id, data.current_leader.leader_epoch) == (LEADER_ID, 5)
