"""Images with registered brokers and topics, for the topic administration tests."""

from __future__ import annotations

import random
import uuid
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from kio.schema.types import BrokerId, TopicName
from kio.static.primitive import i8, i16, i32, i64

from ksteward.controller.topics import TopicControlManager, TopicSettings
from ksteward.metadata.delta import MetadataDelta
from ksteward.metadata.image import EMPTY_IMAGE, MetadataImage
from ksteward.metadata.records import (
    ConfigRecord,
    FeatureLevelRecord,
    PartitionRecordV2,
    RegisterBrokerRecord,
    TopicRecord,
)
from ksteward.policy import AlterConfigPolicy, CreateTopicPolicy, DeleteTopicPolicy, Policies, PolicyViolation


def broker(
    broker_id: int,
    *,
    rack: str | None = None,
    fenced: bool = False,
    shutting_down: bool = False,
    log_dirs: Sequence[uuid.UUID] = (),
) -> RegisterBrokerRecord:
    return RegisterBrokerRecord(
        broker_id=BrokerId(broker_id),
        incarnation_id=uuid.UUID(int=1000 + broker_id),
        broker_epoch=i64(broker_id),
        rack=rack,
        fenced=fenced,
        in_controlled_shutdown=shutting_down,
        log_dirs=tuple(log_dirs),
    )


def apply(image: MetadataImage, records: Iterable[Any]) -> MetadataImage:
    delta = MetadataDelta(image)
    for record in records:
        delta.replay(record)
    return delta.apply(offset=image.offset + 1)


def cluster(*brokers: RegisterBrokerRecord, level: int = 25) -> MetadataImage:
    """An image at metadata.version ``level`` with these brokers (default: brokers 1, 2, 3 unfenced)."""
    registrations = brokers or (broker(1), broker(2), broker(3))
    return apply(EMPTY_IMAGE, [FeatureLevelRecord(name="metadata.version", feature_level=i16(level)), *registrations])


def with_topic(
    image: MetadataImage,
    name: str,
    partitions: Sequence[Sequence[int]] = ((1,),),
    configs: Mapping[str, str] | None = None,
    topic_id: uuid.UUID | None = None,
) -> MetadataImage:
    """Adds a topic with these replica lists (leader = first replica)."""
    topic_id = topic_id or uuid.uuid4()
    records: list[Any] = [TopicRecord(name=TopicName(name), topic_id=topic_id)]
    for key, value in (configs or {}).items():
        records.append(ConfigRecord(resource_type=i8(2), resource_name=name, name=key, value=value))
    for index, replicas in enumerate(partitions):
        records.append(
            PartitionRecordV2(
                partition_id=i32(index),
                topic_id=topic_id,
                replicas=tuple(BrokerId(b) for b in replicas),
                isr=tuple(i32(b) for b in replicas),
                leader=BrokerId(replicas[0]),
                leader_epoch=i32(0),
                partition_epoch=i32(0),
            )
        )
    return apply(image, records)


def manager(
    *,
    settings: TopicSettings | None = None,
    policies: Policies | None = None,
    seed: int = 7,
    **hooks: Any,
) -> TopicControlManager:
    return TopicControlManager(settings, policies, rng=random.Random(seed), **hooks)


class _Recording:
    """Records every request metadata; refuses the topics in ``refuse`` with their message."""

    def __init__(self, refuse: Mapping[str, str] | None = None, crash: bool = False) -> None:
        self.seen: list[Any] = []
        self.refuse = dict(refuse or {})
        self.crash = crash

    def validate(self, request_metadata: Any) -> None:
        self.seen.append(request_metadata)
        if self.crash:
            raise RuntimeError("policy bug")
        resource = getattr(request_metadata, "resource", None)
        name = resource.name if resource is not None else request_metadata.topic
        if name in self.refuse:
            raise PolicyViolation(self.refuse[name])


class RecordingCreatePolicy(_Recording, CreateTopicPolicy):
    pass


class RecordingDeletePolicy(_Recording, DeleteTopicPolicy):
    pass


class RecordingAlterPolicy(_Recording, AlterConfigPolicy):
    pass
