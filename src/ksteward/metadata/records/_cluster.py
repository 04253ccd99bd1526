"""Cluster membership and feature records (metadata apiKeys 0, 1, 7, 8, 12, 15, 17, 27, 29).

Same conventions as ``_topics``: kio-style data classes, one per version, no postponed annotations.
Nested structs are shared between the versions of a record because their fields never changed.
"""

import uuid
from dataclasses import dataclass, field
from typing import ClassVar

from kio.schema.types import BrokerId
from kio.static.constants import EntityType
from kio.static.primitive import i8, i16, i32, i64, u16


@dataclass(frozen=True, slots=True, kw_only=True)
class BrokerEndpoint:
    __type__: ClassVar = EntityType.nested
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True
    name: str = field(metadata={"kafka_type": "string"})
    """The listener name."""
    host: str = field(metadata={"kafka_type": "string"})
    port: u16 = field(metadata={"kafka_type": "uint16"})
    security_protocol: i16 = field(metadata={"kafka_type": "int16"})
    """SecurityProtocol id: 0 PLAINTEXT, 1 SSL, 2 SASL_PLAINTEXT, 3 SASL_SSL."""


@dataclass(frozen=True, slots=True, kw_only=True)
class BrokerFeature:
    __type__: ClassVar = EntityType.nested
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True
    name: str = field(metadata={"kafka_type": "string"})
    min_supported_version: i16 = field(metadata={"kafka_type": "int16"})
    max_supported_version: i16 = field(metadata={"kafka_type": "int16"})


@dataclass(frozen=True, slots=True, kw_only=True)
class RegisterBrokerRecordV0:
    __type__: ClassVar = EntityType.data
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(0)
    broker_id: BrokerId = field(metadata={"kafka_type": "int32"})
    incarnation_id: uuid.UUID | None = field(metadata={"kafka_type": "uuid"})
    broker_epoch: i64 = field(metadata={"kafka_type": "int64"})
    end_points: tuple[BrokerEndpoint, ...] = ()
    features: tuple[BrokerFeature, ...] = ()
    rack: str | None = field(metadata={"kafka_type": "string"}, default=None)
    fenced: bool = field(metadata={"kafka_type": "bool"}, default=True)


@dataclass(frozen=True, slots=True, kw_only=True)
class RegisterBrokerRecordV1:
    __type__: ClassVar = EntityType.data
    __version__: ClassVar[i16] = i16(1)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(0)
    broker_id: BrokerId = field(metadata={"kafka_type": "int32"})
    incarnation_id: uuid.UUID | None = field(metadata={"kafka_type": "uuid"})
    broker_epoch: i64 = field(metadata={"kafka_type": "int64"})
    end_points: tuple[BrokerEndpoint, ...] = ()
    features: tuple[BrokerFeature, ...] = ()
    rack: str | None = field(metadata={"kafka_type": "string"}, default=None)
    fenced: bool = field(metadata={"kafka_type": "bool"}, default=True)
    in_controlled_shutdown: bool = field(metadata={"kafka_type": "bool"}, default=False)


@dataclass(frozen=True, slots=True, kw_only=True)
class RegisterBrokerRecordV2:
    __type__: ClassVar = EntityType.data
    __version__: ClassVar[i16] = i16(2)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(0)
    broker_id: BrokerId = field(metadata={"kafka_type": "int32"})
    is_migrating_zk_broker: bool = field(metadata={"kafka_type": "bool"}, default=False)
    """Second on the wire since v2, before IncarnationId."""
    incarnation_id: uuid.UUID | None = field(metadata={"kafka_type": "uuid"})
    broker_epoch: i64 = field(metadata={"kafka_type": "int64"})
    end_points: tuple[BrokerEndpoint, ...] = ()
    features: tuple[BrokerFeature, ...] = ()
    rack: str | None = field(metadata={"kafka_type": "string"}, default=None)
    fenced: bool = field(metadata={"kafka_type": "bool"}, default=True)
    in_controlled_shutdown: bool = field(metadata={"kafka_type": "bool"}, default=False)


@dataclass(frozen=True, slots=True, kw_only=True)
class RegisterBrokerRecordV3:
    __type__: ClassVar = EntityType.data
    __version__: ClassVar[i16] = i16(3)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(0)
    broker_id: BrokerId = field(metadata={"kafka_type": "int32"})
    is_migrating_zk_broker: bool = field(metadata={"kafka_type": "bool"}, default=False)
    incarnation_id: uuid.UUID | None = field(metadata={"kafka_type": "uuid"})
    broker_epoch: i64 = field(metadata={"kafka_type": "int64"})
    end_points: tuple[BrokerEndpoint, ...] = ()
    features: tuple[BrokerFeature, ...] = ()
    rack: str | None = field(metadata={"kafka_type": "string"}, default=None)
    fenced: bool = field(metadata={"kafka_type": "bool"}, default=True)
    in_controlled_shutdown: bool = field(metadata={"kafka_type": "bool"}, default=False)
    log_dirs: tuple[uuid.UUID | None, ...] = field(metadata={"kafka_type": "uuid", "tag": 0}, default=())
    """Online log directories of the broker (KIP-858)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class UnregisterBrokerRecord:
    __type__: ClassVar = EntityType.data
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(1)
    broker_id: BrokerId = field(metadata={"kafka_type": "int32"})
    broker_epoch: i64 = field(metadata={"kafka_type": "int64"})


@dataclass(frozen=True, slots=True, kw_only=True)
class FenceBrokerRecord:
    __type__: ClassVar = EntityType.data
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(7)
    id: BrokerId = field(metadata={"kafka_type": "int32"})
    epoch: i64 = field(metadata={"kafka_type": "int64"})


@dataclass(frozen=True, slots=True, kw_only=True)
class UnfenceBrokerRecord:
    __type__: ClassVar = EntityType.data
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(8)
    id: BrokerId = field(metadata={"kafka_type": "int32"})
    epoch: i64 = field(metadata={"kafka_type": "int64"})


@dataclass(frozen=True, slots=True, kw_only=True)
class FeatureLevelRecord:
    __type__: ClassVar = EntityType.data
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(12)
    name: str = field(metadata={"kafka_type": "string"})
    feature_level: i16 = field(metadata={"kafka_type": "int16"})
    """The finalized level; 0 removes the feature. Kafka keeps this record at v0 forever."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ProducerIdsRecord:
    __type__: ClassVar = EntityType.data
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(15)
    broker_id: BrokerId = field(metadata={"kafka_type": "int32"})
    broker_epoch: i64 = field(metadata={"kafka_type": "int64"}, default=i64(-1))
    next_producer_id: i64 = field(metadata={"kafka_type": "int64"})
    """The first producer id of the next block to hand out."""


@dataclass(frozen=True, slots=True, kw_only=True)
class BrokerRegistrationChangeRecordV0:
    __type__: ClassVar = EntityType.data
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(17)
    broker_id: BrokerId = field(metadata={"kafka_type": "int32"})
    broker_epoch: i64 = field(metadata={"kafka_type": "int64"})
    fenced: i8 = field(metadata={"kafka_type": "int8", "tag": 0}, default=i8(0))
    """-1 unfenced, 0 unchanged, 1 fenced."""


@dataclass(frozen=True, slots=True, kw_only=True)
class BrokerRegistrationChangeRecordV1:
    __type__: ClassVar = EntityType.data
    __version__: ClassVar[i16] = i16(1)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(17)
    broker_id: BrokerId = field(metadata={"kafka_type": "int32"})
    broker_epoch: i64 = field(metadata={"kafka_type": "int64"})
    fenced: i8 = field(metadata={"kafka_type": "int8", "tag": 0}, default=i8(0))
    in_controlled_shutdown: i8 = field(metadata={"kafka_type": "int8", "tag": 1}, default=i8(0))
    """0 unchanged, 1 in controlled shutdown."""


@dataclass(frozen=True, slots=True, kw_only=True)
class BrokerRegistrationChangeRecordV2:
    __type__: ClassVar = EntityType.data
    __version__: ClassVar[i16] = i16(2)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(17)
    broker_id: BrokerId = field(metadata={"kafka_type": "int32"})
    broker_epoch: i64 = field(metadata={"kafka_type": "int64"})
    fenced: i8 = field(metadata={"kafka_type": "int8", "tag": 0}, default=i8(0))
    in_controlled_shutdown: i8 = field(metadata={"kafka_type": "int8", "tag": 1}, default=i8(0))
    log_dirs: tuple[uuid.UUID | None, ...] = field(metadata={"kafka_type": "uuid", "tag": 2}, default=())
    """Online log directories; empty means unchanged."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ControllerEndpoint:
    __type__: ClassVar = EntityType.nested
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True
    name: str = field(metadata={"kafka_type": "string"})
    host: str = field(metadata={"kafka_type": "string"})
    port: u16 = field(metadata={"kafka_type": "uint16"})
    security_protocol: i16 = field(metadata={"kafka_type": "int16"})


@dataclass(frozen=True, slots=True, kw_only=True)
class ControllerFeature:
    __type__: ClassVar = EntityType.nested
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True
    name: str = field(metadata={"kafka_type": "string"})
    min_supported_version: i16 = field(metadata={"kafka_type": "int16"})
    max_supported_version: i16 = field(metadata={"kafka_type": "int16"})


@dataclass(frozen=True, slots=True, kw_only=True)
class RegisterControllerRecord:
    __type__: ClassVar = EntityType.data
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(27)
    controller_id: i32 = field(metadata={"kafka_type": "int32"})
    incarnation_id: uuid.UUID | None = field(metadata={"kafka_type": "uuid"})
    zk_migration_ready: bool = field(metadata={"kafka_type": "bool"}, default=False)
    end_points: tuple[ControllerEndpoint, ...] = ()
    features: tuple[ControllerFeature, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class UnregisterControllerRecord:
    """KIP-1312, in Kafka trunk after 4.3: drops a controller registration."""

    __type__: ClassVar = EntityType.data
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(29)
    controller_id: i32 = field(metadata={"kafka_type": "int32"})


CLUSTER_RECORD_TYPES: tuple[type, ...] = (
    RegisterBrokerRecordV0,
    RegisterBrokerRecordV1,
    RegisterBrokerRecordV2,
    RegisterBrokerRecordV3,
    UnregisterBrokerRecord,
    FenceBrokerRecord,
    UnfenceBrokerRecord,
    FeatureLevelRecord,
    ProducerIdsRecord,
    BrokerRegistrationChangeRecordV0,
    BrokerRegistrationChangeRecordV1,
    BrokerRegistrationChangeRecordV2,
    RegisterControllerRecord,
    UnregisterControllerRecord,
)
