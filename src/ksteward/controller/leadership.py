"""Leadership follows liveness: the PartitionChangeRecords that move leaders and shrink ISRs when a broker
is fenced, shuts down or comes back, as Kafka's ``ReplicationControlManager.generateLeaderAndIsrUpdates``
and ``PartitionChangeBuilder`` write them (the rules are written out in docs/cluster-membership.md).

Pure functions of the image: they return records, the caller commits them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

from ksteward.controller.features import METADATA_VERSION, METADATA_VERSION_LEVEL
from ksteward.controller.partition_change import NO_LEADER, build_partition_change
from ksteward.controller.replica_placement import is_active
from ksteward.metadata.image import MetadataImage, PartitionRegistration, TopicImage
from ksteward.metadata.records import AnyPartitionChangeRecord

__all__ = [
    "NO_LEADER",
    "has_leaderships",
    "leader_and_isr_updates",
    "partitions_with_broker_in_isr",
    "partitions_without_leader",
]

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
        record = _partition_change(image, topic, pid, topic.partitions[pid], remove, acceptable, level)
        if record is not None:
            records.append(record)
    return records


def _partition_change(
    image: MetadataImage,
    topic: TopicImage,
    pid: int,
    partition: PartitionRegistration,
    remove: int,
    accept: Callable[[int], bool],
    level: int,
) -> AnyPartitionChangeRecord | None:
    """Election ONLINE with ``remove`` out of the ISR (``PartitionChangeBuilder``, controller/partition_change.py)."""
    target_isr = [int(b) for b in partition.isr if b != remove]
    return build_partition_change(image, topic.id, pid, partition, accept=accept, level=level, target_isr=target_isr)
