"""Topic, partition and config records (metadata apiKeys 2, 3, 4, 5, 9, 28).

Written from ``metadata/src/main/resources/common/metadata/*.json`` in Apache Kafka 4.2, in kio's
generated style so that ``kio.serial.entity_reader``/``entity_writer`` handle them. One class per
record version, as kio does; the registry in ``ksteward.metadata.records`` maps (apiKey, version)
to the class. This module must not use ``from __future__ import annotations``: kio reads the
field types at run time and refuses string annotations.
"""

import uuid
from dataclasses import dataclass, field
from typing import ClassVar

from kio.schema.types import BrokerId, TopicName
from kio.static.constants import EntityType
from kio.static.primitive import i8, i16, i32


@dataclass(frozen=True, slots=True, kw_only=True)
class TopicRecord:
    __type__: ClassVar = EntityType.data
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(2)
    name: TopicName = field(metadata={"kafka_type": "string"})
    """The topic name."""
    topic_id: uuid.UUID | None = field(metadata={"kafka_type": "uuid"})
    """The topic id (kio reads the all-zero uuid as None)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class PartitionRecordV0:
    __type__: ClassVar = EntityType.data
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(3)
    partition_id: i32 = field(metadata={"kafka_type": "int32"}, default=i32(-1))
    topic_id: uuid.UUID | None = field(metadata={"kafka_type": "uuid"})
    replicas: tuple[BrokerId, ...] = field(metadata={"kafka_type": "int32"}, default=())
    """Replicas in preferred order."""
    isr: tuple[i32, ...] = field(metadata={"kafka_type": "int32"}, default=())
    removing_replicas: tuple[BrokerId, ...] = field(metadata={"kafka_type": "int32"}, default=())
    adding_replicas: tuple[BrokerId, ...] = field(metadata={"kafka_type": "int32"}, default=())
    leader: BrokerId = field(metadata={"kafka_type": "int32"}, default=BrokerId(-1))
    """The leader, or -1 for none."""
    leader_recovery_state: i8 = field(metadata={"kafka_type": "int8", "tag": 0}, default=i8(0))
    """1 while recovering from an unclean leader election."""
    leader_epoch: i32 = field(metadata={"kafka_type": "int32"}, default=i32(-1))
    partition_epoch: i32 = field(metadata={"kafka_type": "int32"}, default=i32(-1))
    """Incremented on every change of the partition."""


@dataclass(frozen=True, slots=True, kw_only=True)
class PartitionRecordV1:
    __type__: ClassVar = EntityType.data
    __version__: ClassVar[i16] = i16(1)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(3)
    partition_id: i32 = field(metadata={"kafka_type": "int32"}, default=i32(-1))
    topic_id: uuid.UUID | None = field(metadata={"kafka_type": "uuid"})
    replicas: tuple[BrokerId, ...] = field(metadata={"kafka_type": "int32"}, default=())
    isr: tuple[i32, ...] = field(metadata={"kafka_type": "int32"}, default=())
    removing_replicas: tuple[BrokerId, ...] = field(metadata={"kafka_type": "int32"}, default=())
    adding_replicas: tuple[BrokerId, ...] = field(metadata={"kafka_type": "int32"}, default=())
    leader: BrokerId = field(metadata={"kafka_type": "int32"}, default=BrokerId(-1))
    leader_recovery_state: i8 = field(metadata={"kafka_type": "int8", "tag": 0}, default=i8(0))
    leader_epoch: i32 = field(metadata={"kafka_type": "int32"}, default=i32(-1))
    partition_epoch: i32 = field(metadata={"kafka_type": "int32"}, default=i32(-1))
    directories: tuple[uuid.UUID | None, ...] = field(metadata={"kafka_type": "uuid"}, default=())
    """The log directory of each replica, in the order of ``replicas`` (KIP-858)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class PartitionRecordV2:
    __type__: ClassVar = EntityType.data
    __version__: ClassVar[i16] = i16(2)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(3)
    partition_id: i32 = field(metadata={"kafka_type": "int32"}, default=i32(-1))
    topic_id: uuid.UUID | None = field(metadata={"kafka_type": "uuid"})
    replicas: tuple[BrokerId, ...] = field(metadata={"kafka_type": "int32"}, default=())
    isr: tuple[i32, ...] = field(metadata={"kafka_type": "int32"}, default=())
    removing_replicas: tuple[BrokerId, ...] = field(metadata={"kafka_type": "int32"}, default=())
    adding_replicas: tuple[BrokerId, ...] = field(metadata={"kafka_type": "int32"}, default=())
    leader: BrokerId = field(metadata={"kafka_type": "int32"}, default=BrokerId(-1))
    leader_recovery_state: i8 = field(metadata={"kafka_type": "int8", "tag": 0}, default=i8(0))
    leader_epoch: i32 = field(metadata={"kafka_type": "int32"}, default=i32(-1))
    partition_epoch: i32 = field(metadata={"kafka_type": "int32"}, default=i32(-1))
    directories: tuple[uuid.UUID | None, ...] = field(metadata={"kafka_type": "uuid"}, default=())
    eligible_leader_replicas: tuple[BrokerId, ...] | None = field(
        metadata={"kafka_type": "int32", "tag": 1}, default=None
    )
    """Eligible leader replicas (KIP-966)."""
    last_known_elr: tuple[BrokerId, ...] | None = field(metadata={"kafka_type": "int32", "tag": 2}, default=None)
    """The last known eligible leader replicas (KIP-966)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ConfigRecord:
    __type__: ClassVar = EntityType.data
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(4)
    resource_type: i8 = field(metadata={"kafka_type": "int8"})
    """A ConfigResource.Type id (2 TOPIC, 4 BROKER, 8 BROKER_LOGGER, 16 CLIENT_METRICS, 32 GROUP)."""
    resource_name: str = field(metadata={"kafka_type": "string"})
    name: str = field(metadata={"kafka_type": "string"})
    """The config key."""
    value: str | None = field(metadata={"kafka_type": "string"})
    """The value, or None to delete the key."""


@dataclass(frozen=True, slots=True, kw_only=True)
class PartitionChangeRecordV0:
    __type__: ClassVar = EntityType.data
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(5)
    partition_id: i32 = field(metadata={"kafka_type": "int32"}, default=i32(-1))
    topic_id: uuid.UUID | None = field(metadata={"kafka_type": "uuid"})
    isr: tuple[BrokerId, ...] | None = field(metadata={"kafka_type": "int32", "tag": 0}, default=None)
    """None when the ISR did not change."""
    leader: BrokerId = field(metadata={"kafka_type": "int32", "tag": 1}, default=BrokerId(-2))
    """-2 when the leader did not change, -1 for no leader."""
    replicas: tuple[BrokerId, ...] | None = field(metadata={"kafka_type": "int32", "tag": 2}, default=None)
    removing_replicas: tuple[BrokerId, ...] | None = field(metadata={"kafka_type": "int32", "tag": 3}, default=None)
    adding_replicas: tuple[BrokerId, ...] | None = field(metadata={"kafka_type": "int32", "tag": 4}, default=None)
    leader_recovery_state: i8 = field(metadata={"kafka_type": "int8", "tag": 5}, default=i8(-1))
    """-1 when unchanged."""


@dataclass(frozen=True, slots=True, kw_only=True)
class PartitionChangeRecordV1:
    __type__: ClassVar = EntityType.data
    __version__: ClassVar[i16] = i16(1)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(5)
    partition_id: i32 = field(metadata={"kafka_type": "int32"}, default=i32(-1))
    topic_id: uuid.UUID | None = field(metadata={"kafka_type": "uuid"})
    isr: tuple[BrokerId, ...] | None = field(metadata={"kafka_type": "int32", "tag": 0}, default=None)
    leader: BrokerId = field(metadata={"kafka_type": "int32", "tag": 1}, default=BrokerId(-2))
    replicas: tuple[BrokerId, ...] | None = field(metadata={"kafka_type": "int32", "tag": 2}, default=None)
    removing_replicas: tuple[BrokerId, ...] | None = field(metadata={"kafka_type": "int32", "tag": 3}, default=None)
    adding_replicas: tuple[BrokerId, ...] | None = field(metadata={"kafka_type": "int32", "tag": 4}, default=None)
    leader_recovery_state: i8 = field(metadata={"kafka_type": "int8", "tag": 5}, default=i8(-1))
    directories: tuple[uuid.UUID | None, ...] | None = field(metadata={"kafka_type": "uuid", "tag": 8}, default=None)
    """None when the log directories did not change."""


@dataclass(frozen=True, slots=True, kw_only=True)
class PartitionChangeRecordV2:
    __type__: ClassVar = EntityType.data
    __version__: ClassVar[i16] = i16(2)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(5)
    partition_id: i32 = field(metadata={"kafka_type": "int32"}, default=i32(-1))
    topic_id: uuid.UUID | None = field(metadata={"kafka_type": "uuid"})
    isr: tuple[BrokerId, ...] | None = field(metadata={"kafka_type": "int32", "tag": 0}, default=None)
    leader: BrokerId = field(metadata={"kafka_type": "int32", "tag": 1}, default=BrokerId(-2))
    replicas: tuple[BrokerId, ...] | None = field(metadata={"kafka_type": "int32", "tag": 2}, default=None)
    removing_replicas: tuple[BrokerId, ...] | None = field(metadata={"kafka_type": "int32", "tag": 3}, default=None)
    adding_replicas: tuple[BrokerId, ...] | None = field(metadata={"kafka_type": "int32", "tag": 4}, default=None)
    leader_recovery_state: i8 = field(metadata={"kafka_type": "int8", "tag": 5}, default=i8(-1))
    directories: tuple[uuid.UUID | None, ...] | None = field(metadata={"kafka_type": "uuid", "tag": 8}, default=None)
    eligible_leader_replicas: tuple[BrokerId, ...] | None = field(
        metadata={"kafka_type": "int32", "tag": 6}, default=None
    )
    last_known_elr: tuple[BrokerId, ...] | None = field(metadata={"kafka_type": "int32", "tag": 7}, default=None)


@dataclass(frozen=True, slots=True, kw_only=True)
class RemoveTopicRecord:
    __type__: ClassVar = EntityType.data
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(9)
    topic_id: uuid.UUID | None = field(metadata={"kafka_type": "uuid"})
    """The topic to remove, with its partitions and its TOPIC configs."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ClearElrRecord:
    __type__: ClassVar = EntityType.data
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(28)
    topic_name: TopicName = field(metadata={"kafka_type": "string"})
    """The topic whose ELRs are cleared, or "" for every topic."""


TOPIC_RECORD_TYPES: tuple[type, ...] = (
    TopicRecord,
    PartitionRecordV0,
    PartitionRecordV1,
    PartitionRecordV2,
    ConfigRecord,
    PartitionChangeRecordV0,
    PartitionChangeRecordV1,
    PartitionChangeRecordV2,
    RemoveTopicRecord,
    ClearElrRecord,
)
