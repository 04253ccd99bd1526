"""Records that mark the log rather than change state (metadata apiKeys 20, 21, 23, 24, 25).

Same conventions as ``_topics``.
"""

from dataclasses import dataclass, field
from typing import ClassVar

from kio.static.constants import EntityType
from kio.static.primitive import i8, i16


@dataclass(frozen=True, slots=True, kw_only=True)
class NoOpRecord:
    """Written periodically by the active controller so the high watermark moves on an idle cluster."""

    __type__: ClassVar = EntityType.data
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(20)


@dataclass(frozen=True, slots=True, kw_only=True)
class ZkMigrationStateRecord:
    """ZooKeeper migration state. Kafka 4.x only replays it; ksteward ignores it."""

    __type__: ClassVar = EntityType.data
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(21)
    zk_migration_state: i8 = field(metadata={"kafka_type": "int8"})


@dataclass(frozen=True, slots=True, kw_only=True)
class BeginTransactionRecord:
    """Opens a metadata transaction (KIP-868): the records up to the matching end apply atomically."""

    __type__: ClassVar = EntityType.data
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(23)
    name: str | None = field(metadata={"kafka_type": "string", "tag": 0}, default=None)


@dataclass(frozen=True, slots=True, kw_only=True)
class EndTransactionRecord:
    __type__: ClassVar = EntityType.data
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(24)


@dataclass(frozen=True, slots=True, kw_only=True)
class AbortTransactionRecord:
    __type__: ClassVar = EntityType.data
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(25)
    reason: str | None = field(metadata={"kafka_type": "string", "tag": 0}, default=None)


MARKER_RECORD_TYPES: tuple[type, ...] = (
    NoOpRecord,
    ZkMigrationStateRecord,
    BeginTransactionRecord,
    EndTransactionRecord,
    AbortTransactionRecord,
)
