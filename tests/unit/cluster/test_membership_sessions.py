"""Session timeouts with a fake clock (BrokerHeartbeatTrackerTest), the leader moves they cause, and the
replay rules of the fence records (ClusterControlManager.replayRegistrationChange)."""

from __future__ import annotations

import pytest
from membership_world import LOCAL, TIMEOUT, apply, commit, heartbeat, new_world, partition, register, with_topic

from ksteward.controller.leadership import leader_and_isr_updates, partitions_with_broker_in_isr
from ksteward.metadata.delta import MetadataReplayError
from ksteward.metadata.records import (
    BrokerRegistrationChangeRecordV0,
    FenceBrokerRecord,
    PartitionChangeRecordV0,
    PartitionChangeRecordV2,
)


def test_a_silent_broker_is_fenced_after_the_session_timeout_and_its_leaders_move() -> None:
    image, manager = new_world()
    image, epoch = register(image, manager, 2, now=100.0)
    image = with_topic(image, "t", (2, 1))
    assert manager.fence_stale_brokers(image, 100.0 + TIMEOUT).records == []  # expiry is strictly after
    result = manager.fence_stale_brokers(image, 100.0 + TIMEOUT + 0.5)
    assert result.response == [2]
    assert isinstance(result.records[0], PartitionChangeRecordV2)
    assert result.records[-1] == BrokerRegistrationChangeRecordV0(broker_id=2, broker_epoch=epoch, fenced=1)
    image, _ = commit(image, result)
    assert image.cluster[2].fenced
    assert (partition(image, "t").leader, list(partition(image, "t").isr)) == (1, [1])
    assert manager.fence_stale_brokers(image, 1000.0).records == []  # the session is gone
    assert not manager.has_valid_session(2, epoch, 1000.0)


def test_heartbeats_keep_a_session_alive_and_time_going_back_expires_nothing() -> None:
    image, manager = new_world()
    image, epoch = register(image, manager, 2, now=0.0)
    image, _ = commit(image, manager.process_heartbeat(image, heartbeat(2, epoch, image.offset), 8.0))
    assert manager.fence_stale_brokers(image, 16.0).records == []
    assert manager.fence_stale_brokers(image, -5.0).records == []
    assert manager.fence_stale_brokers(image, 17.5).response == [2]


def test_several_stale_brokers_are_fenced_in_one_batch_each_seeing_the_last() -> None:
    image, manager = new_world()
    image, _ = register(image, manager, 2, now=0.0)
    image, _ = register(image, manager, 3, now=1.0)
    image = with_topic(image, "t", (2, 3, 1))
    result = manager.fence_stale_brokers(image, 50.0)
    assert result.response == [2, 3]
    image, _ = commit(image, result)
    assert (partition(image, "t").leader, list(partition(image, "t").isr)) == (1, [1])


def test_the_combined_nodes_broker_is_never_fenced_for_silence() -> None:
    image, manager = new_world()
    assert manager.fence_stale_brokers(image, 10_000.0).records == []
    assert not image.cluster[LOCAL].fenced and manager.has_valid_session(LOCAL, 0, 10_000.0)


def test_activation_starts_a_fresh_session_for_every_registered_broker() -> None:
    image, manager = new_world()
    image, epoch = register(image, manager, 2, now=0.0)
    manager.activate(image, 500.0)  # a restarted controller
    assert manager.has_valid_session(2, epoch, 500.0 + TIMEOUT)
    assert manager.fence_stale_brokers(image, 500.0 + TIMEOUT + 1).response == [2]


def test_a_fenced_only_replica_leaves_the_partition_leaderless_with_its_isr() -> None:
    image, manager = new_world()
    image, _ = register(image, manager, 2)
    image = with_topic(image, "t", (2,))
    image, _ = commit(image, manager.fence_stale_brokers(image, 100.0))
    p = partition(image, "t")
    assert (p.leader, list(p.isr), p.leader_epoch) == (-1, [2], 1)


def test_an_isr_shrink_bumps_the_leader_epoch_before_metadata_version_3_6() -> None:
    image, manager = new_world(level=11)
    image, _ = register(image, manager, 2)
    image = with_topic(image, "t", (1, 2))
    [record] = leader_and_isr_updates(image, partitions_with_broker_in_isr(image, 2), remove=2)
    assert isinstance(record, PartitionChangeRecordV0) and record.leader == 1 and record.isr == (1,)


def test_fence_records_for_another_epoch_or_broker_do_not_replay() -> None:
    image, manager = new_world()
    image, epoch = register(image, manager, 2)
    with pytest.raises(MetadataReplayError, match="no broker registration with that epoch"):
        apply(image, [BrokerRegistrationChangeRecordV0(broker_id=2, broker_epoch=epoch + 1, fenced=1)])
    with pytest.raises(MetadataReplayError):
        apply(image, [FenceBrokerRecord(id=7, epoch=epoch)])
    assert apply(image, [FenceBrokerRecord(id=2, epoch=epoch)]).cluster[2].fenced
