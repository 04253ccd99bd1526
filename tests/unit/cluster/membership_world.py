"""A small cluster for the membership tests: an image with metadata.version, the combined node's broker 1,
and helpers to register, heartbeat and commit as the controller would (records replayed at the next offsets)."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any, TypeVar

from kio.static.primitive import i16, u16

from ksteward.configs.server_config import Endpoint
from ksteward.controller.cluster import BrokerRegistration, bootstrap
from ksteward.controller.features import SUPPORTED_FEATURES
from ksteward.controller.membership import (
    ClusterControlManager,
    HeartbeatReply,
    HeartbeatRequest,
    RegistrationReply,
    RegistrationRequest,
)
from ksteward.controller.partitions import partition_record
from ksteward.controller.result import ControllerResult
from ksteward.metadata.delta import MetadataDelta
from ksteward.metadata.image import EMPTY_IMAGE, MetadataImage
from ksteward.metadata.records import BrokerEndpoint, BrokerFeature, TopicRecord

T = TypeVar("T")

CLUSTER_ID = "q1Sh-9_ISia_zwGINzRvyQ"
TIMEOUT = 9.0
LOCAL = 1


def apply(image: MetadataImage, records: Sequence[Any]) -> MetadataImage:
    """Replay records as one batch at the next offsets (what the group committer does)."""
    delta = MetadataDelta(image)
    for record in records:
        delta.replay(record)
    return delta.apply(offset=image.offset + len(records))


def new_world(*, level: int | None = None) -> tuple[MetadataImage, ClusterControlManager]:
    """A combined node (broker 1) after bootstrap, and its freshly activated membership manager at time 0."""
    endpoint = Endpoint("PLAINTEXT", "localhost", 9092, "PLAINTEXT")
    image = apply(EMPTY_IMAGE, bootstrap(EMPTY_IMAGE, BrokerRegistration(LOCAL, uuid.uuid4(), (endpoint,))).records)
    if level is not None:
        from ksteward.metadata.records import FeatureLevelRecord

        image = apply(image, [FeatureLevelRecord(name="metadata.version", feature_level=i16(level))])
    manager = ClusterControlManager(CLUSTER_ID, session_timeout_s=TIMEOUT, local_broker_id=LOCAL)
    manager.activate(image, 0.0)
    return image, manager


def registration(broker_id: int, incarnation: uuid.UUID | None = None, **changes: Any) -> RegistrationRequest:
    values: dict[str, Any] = {
        "broker_id": broker_id,
        "cluster_id": CLUSTER_ID,
        "incarnation_id": incarnation or uuid.uuid4(),
        "listeners": (BrokerEndpoint(name="PLAINTEXT", host="localhost", port=u16(9100 + broker_id),
                                     security_protocol=i16(0)),),
        "features": tuple(BrokerFeature(name=name, min_supported_version=i16(lo), max_supported_version=i16(hi))
                          for name, (lo, hi) in SUPPORTED_FEATURES.items()),  # as every ksteward broker registers
        "log_dirs": (uuid.uuid4(),),
    }  # fmt: skip
    values.update(changes)
    return RegistrationRequest(**values)


def heartbeat(
    broker_id: int, epoch: int, offset: int, *, fence: bool = False, shut_down: bool = False
) -> HeartbeatRequest:
    return HeartbeatRequest(broker_id, epoch, offset, want_fence=fence, want_shut_down=shut_down)


def commit(image: MetadataImage, result: ControllerResult[T]) -> tuple[MetadataImage, T]:
    return (apply(image, result.records) if result.records else image), result.response


def register(
    image: MetadataImage, manager: ClusterControlManager, broker_id: int, now: float = 0.0
) -> tuple[MetadataImage, int]:
    """Register ``broker_id`` and heartbeat it until it is unfenced; the image and its epoch."""
    image, reply = commit(image, manager.register_broker(image, registration(broker_id), now))
    assert isinstance(reply, RegistrationReply) and reply.error.code == 0, reply
    image, beat = commit(
        image, manager.process_heartbeat(image, heartbeat(broker_id, reply.broker_epoch, image.offset), now)
    )
    assert isinstance(beat, HeartbeatReply) and not beat.is_fenced, beat
    return image, reply.broker_epoch


def with_topic(image: MetadataImage, name: str, *assignments: tuple[int, ...]) -> MetadataImage:
    """A topic whose partitions have these replicas, every replica in sync, the first one leading."""
    topic_id = uuid.uuid4()
    records: list[Any] = [TopicRecord(name=name, topic_id=topic_id)]  # type: ignore[arg-type]
    records += [partition_record(image, topic_id, i, replicas, replicas) for i, replicas in enumerate(assignments)]
    return apply(image, records)


def partition(image: MetadataImage, name: str, index: int = 0) -> Any:
    return image.topics.by_name[name].partitions[index]
