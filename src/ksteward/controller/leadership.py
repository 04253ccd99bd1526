"""Leadership follows liveness: the PartitionChangeRecords that move leaders and shrink ISRs when a broker
is fenced, shuts down or comes back, as Kafka's ``ReplicationControlManager.generateLeaderAndIsrUpdates``
and ``PartitionChangeBuilder`` write them (the rules are written out in docs/cluster-membership.md).

Pure functions of the image: they return records, the caller commits them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import cast

from kio.schema.types import BrokerId
from kio.static.primitive import i32

from ksteward.controller.features import METADATA_VERSION, METADATA_VERSION_LEVEL
from ksteward.controller.replica_placement import is_active
from ksteward.metadata.image import MetadataImage, PartitionRegistration, TopicImage
from ksteward.metadata.records import (
    AnyPartitionChangeRecord,
    PartitionChangeRecordV0,
    PartitionChangeRecordV1,
    PartitionChangeRecordV2,
)

__all__ = [
    "NO_LEADER",
    "has_leaderships",
    "leader_and_isr_updates",
    "partitions_with_broker_in_isr",
    "partitions_without_leader",
]

NO_LEADER = -1
NO_LEADER_CHANGE = -2
_ISR_SHRINK_BUMPS_EPOCH_BELOW = 12  # metadata.version 3.6-IV0 dropped the epoch bump on ISR shrink (KAFKA-15021)
_DIRECTORY_ASSIGNMENT_LEVEL = 17  # 3.7-IV2: PartitionChangeRecord v1
_ELR_LEVEL = 23  # 4.0-IV1: PartitionChangeRecord v2

PartitionRef = tuple[TopicImage, int]


def partitions_with_broker_in_isr(image: MetadataImage, broker_id: int) -> Iterator[PartitionRef]:
    """Every partition whose ISR holds ``broker_id``, topics by name, partitions by id."""
    for name in sorted(image.topics.by_name):
        topic = image.topics.by_name[name]
        for pid in sorted(topic.partitions):
            if broker_id in topic.partitions[pid].isr:
                yield topic, pid


def partitions_without_leader(image: MetadataImage) -> Iterator[PartitionRef]:
    """Every partition whose leader is -1, in the same order."""
    for name in sorted(image.topics.by_name):
        topic = image.topics.by_name[name]
        for pid in sorted(topic.partitions):
            if topic.partitions[pid].leader == NO_LEADER:
                yield topic, pid


def has_leaderships(image: MetadataImage, broker_id: int) -> bool:
    """Whether ``broker_id`` leads at least one partition (Kafka's ``BrokersToIsrs.hasLeaderships``)."""
    return any(p.leader == broker_id for topic in image.topics.by_name.values() for p in topic.partitions.values())


def leader_and_isr_updates(
    image: MetadataImage,
    partitions: Iterable[PartitionRef],
    *,
    remove: int = NO_LEADER,
    add: int = NO_LEADER,
) -> list[AnyPartitionChangeRecord]:
    """One PartitionChangeRecord per partition that changes: ``remove`` leaves the ISR and may not lead;
    ``add`` may lead although the image still has it fenced (it is being unfenced in the same batch)."""

    def acceptable(replica: int) -> bool:
        return replica != remove and (replica == add or is_active(image.cluster, replica))

    level = image.features.get(METADATA_VERSION, METADATA_VERSION_LEVEL)
    records: list[AnyPartitionChangeRecord] = []
    for topic, pid in partitions:
        record = _partition_change(topic, pid, topic.partitions[pid], remove, acceptable, level)
        if record is not None:
            records.append(record)
    return records


def _partition_change(
    topic: TopicImage,
    pid: int,
    partition: PartitionRegistration,
    remove: int,
    accept: Callable[[int], bool],
    level: int,
) -> AnyPartitionChangeRecord | None:
    target_isr = tuple(b for b in partition.isr if b != remove)

    def valid_leader(replica: int) -> bool:
        return replica in target_isr and accept(replica)

    # Election ONLINE: keep a leader that is still valid, else the first valid replica in replica order.
    if valid_leader(partition.leader):
        leader = int(partition.leader)
    else:
        leader = next((int(r) for r in partition.replicas if valid_leader(r)), NO_LEADER)
    new_leader = leader if leader != partition.leader else NO_LEADER_CHANGE
    # Without ELR the ISR is never written empty: its last member stays (PartitionChangeBuilder.build).
    new_isr = target_isr if target_isr and target_isr != tuple(partition.isr) else None
    if (
        level < _ISR_SHRINK_BUMPS_EPOCH_BELOW
        and new_leader == NO_LEADER_CHANGE
        and new_isr is not None
        and not set(partition.isr) <= set(new_isr)
    ):
        new_leader = int(partition.leader)  # bump the leader epoch on a shrink before 3.6-IV0
    if new_leader == NO_LEADER_CHANGE and new_isr is None:
        return None
    leader_field = cast(BrokerId, new_leader)
    isr_field = cast("tuple[BrokerId, ...] | None", new_isr)
    cls: type[AnyPartitionChangeRecord] = PartitionChangeRecordV0
    if level >= _ELR_LEVEL:
        cls = PartitionChangeRecordV2
    elif level >= _DIRECTORY_ASSIGNMENT_LEVEL:
        cls = PartitionChangeRecordV1
    return cls(partition_id=i32(pid), topic_id=topic.id, isr=isr_field, leader=leader_field)
