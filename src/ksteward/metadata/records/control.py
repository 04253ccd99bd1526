"""KRaft control records: the records of control batches (attributes bit 0x20).

Layout, from Kafka's ``ControlRecordType`` and ``ControlRecordUtils``: the record key is
``int16 version (0) | int16 type``; the value is the control message serialized at version 0 with
no version prefix (each message carries its own ``Version`` field), except ABORT/COMMIT whose value
is the legacy ``EndTxnMarker`` prefixed by an int16 version. The message classes are kio's.
"""

from __future__ import annotations

import enum
import io
import struct
from dataclasses import dataclass
from typing import Any

from kio.schema.k_raft_version_record.v0 import KRaftVersionRecord
from kio.schema.leader_change_message.v0 import LeaderChangeMessage
from kio.schema.snapshot_footer_record.v0 import SnapshotFooterRecord
from kio.schema.snapshot_header_record.v0 import SnapshotHeaderRecord
from kio.schema.voters_record.v0 import VotersRecord
from kio.serial import entity_reader, entity_writer

from ._codec import read_entity_skipping_unknown_tags

_KEY = struct.Struct(">hh")
_END_TXN = struct.Struct(">hi")


class ControlRecordType(enum.IntEnum):
    ABORT = 0
    COMMIT = 1
    LEADER_CHANGE = 2
    SNAPSHOT_HEADER = 3
    SNAPSHOT_FOOTER = 4
    KRAFT_VERSION = 5
    KRAFT_VOTERS = 6


@dataclass(frozen=True, slots=True)
class EndTransactionMarker:
    """The value of an ABORT or COMMIT control record (producer transactions, not KRaft's)."""

    control_type: ControlRecordType
    coordinator_epoch: int


_MESSAGE_TYPES: dict[ControlRecordType, type] = {
    ControlRecordType.LEADER_CHANGE: LeaderChangeMessage,
    ControlRecordType.SNAPSHOT_HEADER: SnapshotHeaderRecord,
    ControlRecordType.SNAPSHOT_FOOTER: SnapshotFooterRecord,
    ControlRecordType.KRAFT_VERSION: KRaftVersionRecord,
    ControlRecordType.KRAFT_VOTERS: VotersRecord,
}
_TYPE_OF: dict[type, ControlRecordType] = {cls: t for t, cls in _MESSAGE_TYPES.items()}


class CorruptControlRecordError(ValueError):
    """A control record whose key or value cannot be read."""


def control_key(control_type: ControlRecordType) -> bytes:
    return _KEY.pack(0, int(control_type))


def control_type_id(key: bytes | None) -> int:
    """The raw type id of a control record key (it may be one this build does not know)."""
    if key is None or len(key) < _KEY.size:
        raise CorruptControlRecordError(f"control record key too short: {key!r}")
    version, type_id = _KEY.unpack_from(key)
    if version < 0:
        raise CorruptControlRecordError(f"negative control record key version {version}")
    return int(type_id)


def encode_control_record(message: Any) -> tuple[bytes, bytes]:
    """``(key, value)`` for a kio control message such as ``SnapshotHeaderRecord``."""
    if isinstance(message, EndTransactionMarker):
        return control_key(message.control_type), _END_TXN.pack(0, message.coordinator_epoch)
    control_type = _TYPE_OF.get(type(message))
    if control_type is None:
        raise TypeError(f"{type(message).__name__} is not a control message")
    out = io.BytesIO()
    entity_writer(type(message))(out, message)
    return control_key(control_type), out.getvalue()


def decode_control_record(key: bytes | None, value: bytes | None) -> tuple[ControlRecordType, Any]:
    """Decode a control record. Raises CorruptControlRecordError, or ValueError for an unknown type."""
    type_id = control_type_id(key)
    try:
        control_type = ControlRecordType(type_id)
    except ValueError:
        raise ValueError(f"unknown control record type {type_id}") from None
    if value is None:
        raise CorruptControlRecordError(f"{control_type.name} control record without a value")
    message: Any
    try:
        if control_type in (ControlRecordType.ABORT, ControlRecordType.COMMIT):
            _version, epoch = _END_TXN.unpack_from(value)
            return control_type, EndTransactionMarker(control_type, epoch)
        cls = _MESSAGE_TYPES[control_type]
        try:
            message, _size = entity_reader(cls)(value, 0)
        except KeyError:  # an unknown tagged field: skip it as Kafka does (see _codec)
            message, _end = read_entity_skipping_unknown_tags(cls, bytes(value), 0)
    except Exception as exc:  # kio's DecodeError family, KeyError for unknown tags, struct.error
        raise CorruptControlRecordError(f"bad {control_type.name} control record: {exc!r}") from exc
    return control_type, message


__all__ = [
    "ControlRecordType",
    "CorruptControlRecordError",
    "EndTransactionMarker",
    "KRaftVersionRecord",
    "LeaderChangeMessage",
    "SnapshotFooterRecord",
    "SnapshotHeaderRecord",
    "VotersRecord",
    "control_key",
    "control_type_id",
    "decode_control_record",
    "encode_control_record",
]
