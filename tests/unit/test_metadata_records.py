"""KRaft metadata records: schema coverage, framing, round trips against kio, tolerance, JSON."""

from __future__ import annotations

import io
import json
import struct
import uuid
from dataclasses import fields, is_dataclass
from types import NoneType, UnionType
from typing import Any, Union, get_args, get_origin

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kio.schema.k_raft_version_record.v0 import KRaftVersionRecord
from kio.schema.leader_change_message.v0 import LeaderChangeMessage
from kio.schema.leader_change_message.v0.data import Voter
from kio.schema.snapshot_footer_record.v0 import SnapshotFooterRecord
from kio.schema.snapshot_header_record.v0 import SnapshotHeaderRecord
from kio.serial import entity_reader, entity_writer

from ksteward.metadata.records import (
    ALL_RECORD_CLASSES,
    LATEST_VERSIONS,
    RECORD_TYPES,
    AccessControlEntryRecord,
    ConfigRecord,
    CorruptRecordError,
    MetadataRecordType,
    PartitionChangeRecordV2,
    PartitionRecordV2,
    TopicRecord,
    UnknownRecordTypeError,
    decode_record,
    encode_record,
    read_entity_skipping_unknown_tags,
)
from ksteward.metadata.records.control import (
    ControlRecordType,
    CorruptControlRecordError,
    EndTransactionMarker,
    decode_control_record,
    encode_control_record,
)
from ksteward.metadata.records.kafka_json import camel_case, kafka_uuid, parse_kafka_uuid, record_json
from ksteward.protocol.varint import write_uvarint

# (apiKey, versions) of every metadata record in Kafka 4.2's metadata/src/main/resources/common/metadata,
# plus UnregisterControllerRecord (29, KIP-1312).
KAFKA_RECORD_VERSIONS = {
    0: range(4), 1: range(1), 2: range(1), 3: range(3), 4: range(1), 5: range(3), 7: range(1), 8: range(1),
    9: range(1), 10: range(1), 11: range(1), 12: range(1), 14: range(1), 15: range(1), 17: range(3),
    18: range(1), 19: range(1), 20: range(1), 21: range(1), 22: range(1), 23: range(1), 24: range(1),
    25: range(1), 26: range(1), 27: range(1), 28: range(1), 29: range(1),
}  # fmt: skip


# --- strategies built from the field declarations ------------------------------------------------

_INT_RANGES = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "int64": (-(2**63), 2**63 - 1),
    "uint16": (0, 2**16 - 1),
}
# kio reads the all-zero uuid as None, so a drawn uuid is never zero.
_UUIDS = st.one_of(st.none(), st.uuids().filter(lambda u: u.int != 0))


def _optional(tp: Any) -> tuple[Any, bool]:
    if get_origin(tp) in (UnionType, Union):
        args = [a for a in get_args(tp) if a is not NoneType]
        return args[0], len(args) != len(get_args(tp))
    return tp, False


def _scalar(kafka_type: str, nullable: bool) -> st.SearchStrategy[Any]:
    if kafka_type in _INT_RANGES:
        low, high = _INT_RANGES[kafka_type]
        return st.integers(low, high)
    base: st.SearchStrategy[Any]
    if kafka_type == "uuid":
        return _UUIDS
    if kafka_type == "bool":
        base = st.booleans()
    elif kafka_type == "float64":
        base = st.floats(allow_nan=False)
    elif kafka_type == "string":
        base = st.text(max_size=12)
    elif kafka_type == "bytes":
        base = st.binary(max_size=24)
    else:
        raise AssertionError(kafka_type)
    return st.none() | base if nullable else base


def entity_strategy(cls: Any) -> st.SearchStrategy[Any]:
    kwargs = {}
    for f in fields(cls):
        outer, nullable = _optional(f.type)
        kafka_type = f.metadata.get("kafka_type")
        if get_origin(outer) is tuple:
            inner, _ = _optional(get_args(outer)[0])
            item = entity_strategy(inner) if is_dataclass(inner) else _scalar(kafka_type, False)
            strategy = st.lists(item, max_size=4).map(tuple)
            kwargs[f.name] = st.none() | strategy if nullable else strategy
        elif is_dataclass(outer):
            kwargs[f.name] = entity_strategy(outer)
        else:
            kwargs[f.name] = _scalar(kafka_type, nullable)
    return st.builds(cls, **kwargs)


def _kio_bytes(record: Any) -> bytes:
    out = io.BytesIO()
    entity_writer(type(record))(out, record)
    return out.getvalue()


# --- schema coverage ----------------------------------------------------------------------------


def test_registry_covers_every_kafka_record_version() -> None:
    expected = {(key, v) for key, versions in KAFKA_RECORD_VERSIONS.items() for v in versions}
    assert set(RECORD_TYPES) == expected


def test_unsuffixed_names_and_latest_versions() -> None:
    for api_key, cls in LATEST_VERSIONS.items():
        assert max(KAFKA_RECORD_VERSIONS[api_key]) == cls.__version__
        kafka_name = MetadataRecordType(api_key).name
        class_name = cls.__name__.split("V")[0] if cls.__name__[-2] == "V" else cls.__name__
        assert camel_case(kafka_name.lower()).lower() == class_name.lower()


# --- round trips ---------------------------------------------------------------------------------


@pytest.mark.parametrize("cls", ALL_RECORD_CLASSES, ids=lambda c: f"{c.__name__}")
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_round_trip_equals_kio_encoding(cls: Any, data: st.DataObject) -> None:
    record = data.draw(entity_strategy(cls))
    value = encode_record(record)
    assert decode_record(value) == record
    assert decode_record(memoryview(value)) == record
    # The fast encoder writes exactly what kio's entity_writer writes, and kio reads it back.
    header = 3
    assert value[header:] == _kio_bytes(record)
    assert entity_reader(cls)(value, header) == (record, len(value) - header)
    # The pure-Python fallback reader agrees with kio's native one.
    assert read_entity_skipping_unknown_tags(cls, value, header) == (record, len(value))
    json.dumps(record_json(record))


def test_golden_access_control_entry_record() -> None:
    # Hand-assembled from the schema: frame 1, apiKey 18, version 0, then the flexible body.
    acl_id = uuid.UUID("0123456789abcdef0123456789abcdef")
    expected = (
        b"\x01\x12\x00" + acl_id.bytes + b"\x02" + b"\x07orders" + b"\x03" + b"\x0bUser:alice" + b"\x02*"
        + b"\x03" + b"\x03" + b"\x00"
    )  # fmt: skip
    record = AccessControlEntryRecord(
        id=acl_id, resource_type=2, resource_name="orders", pattern_type=3, principal="User:alice",
        host="*", operation=3, permission_type=3,
    )  # fmt: skip
    assert encode_record(record) == expected
    assert decode_record(expected) == record


def test_golden_partition_change_record_tagged_fields() -> None:
    topic_id = uuid.UUID(int=7)
    # partitionId, topicId, then 2 tagged fields in tag order: 0 (isr [1,2]) and 1 (leader 2).
    isr = b"\x03" + struct.pack(">ii", 1, 2)
    expected = (
        b"\x01\x05\x02" + struct.pack(">i", 4) + topic_id.bytes + b"\x02"
        + b"\x00" + bytes([len(isr)]) + isr + b"\x01\x04" + struct.pack(">i", 2)
    )  # fmt: skip
    record = PartitionChangeRecordV2(partition_id=4, topic_id=topic_id, isr=(1, 2), leader=2)
    assert encode_record(record) == expected
    assert decode_record(expected) == record


# --- framing errors and unknown types ------------------------------------------------------------


def test_frame_version_zero_is_corrupt() -> None:
    value = encode_record(TopicRecord(name="t", topic_id=uuid.uuid4()))
    with pytest.raises(CorruptRecordError, match="frame version 0"):
        decode_record(b"\x00" + value[1:])
    with pytest.raises(CorruptRecordError, match="frame version 2"):
        decode_record(b"\x02" + value[1:])


@pytest.mark.parametrize("garbage", [b"", b"\x01", b"\x01\x02", b"\xff\xff\xff\xff\xff\xff", b"\x01\x02\x00\x05"])
def test_garbage_is_corrupt(garbage: bytes) -> None:
    with pytest.raises(CorruptRecordError):
        decode_record(garbage)


def test_truncated_and_trailing_bytes_are_corrupt() -> None:
    value = encode_record(ConfigRecord(resource_type=2, resource_name="t", name="k", value="v"))
    for cut in range(3, len(value)):
        with pytest.raises(CorruptRecordError):
            decode_record(value[:cut])
    with pytest.raises(CorruptRecordError, match="garbage"):
        decode_record(value + b"\x00")


@pytest.mark.parametrize(("api_key", "version"), [(6, 0), (3, 3), (0, 4), (17, 3), (200, 0)])
def test_unknown_type_carries_api_key_and_version(api_key: int, version: int) -> None:
    value = bytes([1]) + write_uvarint(api_key) + bytes([version]) + b"\x00"
    with pytest.raises(UnknownRecordTypeError) as info:
        decode_record(value)
    assert (info.value.api_key, info.value.version) == (api_key, version)


def test_encode_rejects_non_records() -> None:
    with pytest.raises(TypeError):
        encode_record(SnapshotHeaderRecord(version=0, last_contained_log_timestamp=0))


# --- unknown tagged fields ------------------------------------------------------------------------


def test_kio_alone_rejects_unknown_tags() -> None:
    # The reason for the fallback reader: this is the behaviour it works around.
    value = encode_record(TopicRecord(name="t", topic_id=uuid.uuid4()))
    tampered = value[:-1] + b"\x01\x09\x01\x55"
    with pytest.raises(KeyError):
        entity_reader(TopicRecord)(tampered, 3)


def test_unknown_tagged_fields_are_skipped() -> None:
    record = TopicRecord(name="orders", topic_id=uuid.uuid4())
    value = encode_record(record)
    assert value[-1] == 0  # no tagged fields
    tampered = value[:-1] + b"\x02" + b"\x05\x03xyz" + b"\x09\x00"
    assert decode_record(tampered) == record


def test_unknown_tag_next_to_known_tags() -> None:
    record = PartitionRecordV2(
        partition_id=1, topic_id=uuid.uuid4(), replicas=(1, 2), isr=(1,), leader=1, leader_epoch=3,
        partition_epoch=4, eligible_leader_replicas=(2,),
    )  # fmt: skip
    value = encode_record(record)
    elr = b"\x02" + struct.pack(">i", 2)
    known = b"\x01" + bytes([len(elr)]) + elr
    assert value.endswith(b"\x01" + known)
    tampered = value[: -len(known) - 1] + b"\x02" + known + b"\x07\x02\xaa\xbb"
    assert decode_record(tampered) == record


def test_bad_tagged_field_size_is_corrupt() -> None:
    value = encode_record(TopicRecord(name="t", topic_id=uuid.uuid4()))
    with pytest.raises(CorruptRecordError):
        decode_record(value[:-1] + b"\x01\x09\x05\x55")  # says 5 bytes, has 1


# --- control records -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("message", "control_type"),
    [
        (SnapshotHeaderRecord(version=0, last_contained_log_timestamp=1234), ControlRecordType.SNAPSHOT_HEADER),
        (SnapshotFooterRecord(version=0), ControlRecordType.SNAPSHOT_FOOTER),
        (KRaftVersionRecord(version=0, k_raft_version=1), ControlRecordType.KRAFT_VERSION),
        (
            LeaderChangeMessage(version=0, leader_id=3, voters=(Voter(voter_id=3),), granting_voters=()),
            ControlRecordType.LEADER_CHANGE,
        ),
        (EndTransactionMarker(ControlRecordType.COMMIT, 7), ControlRecordType.COMMIT),
    ],
)
def test_control_records_round_trip(message: Any, control_type: ControlRecordType) -> None:
    key, value = encode_control_record(message)
    assert key == struct.pack(">hh", 0, control_type)
    assert decode_control_record(key, value) == (control_type, message)


def test_control_record_errors() -> None:
    with pytest.raises(CorruptControlRecordError):
        decode_control_record(b"\x00", b"")
    with pytest.raises(CorruptControlRecordError):
        decode_control_record(struct.pack(">hh", 0, 3), b"\x00")
    with pytest.raises(ValueError, match="unknown control record type 9"):
        decode_control_record(struct.pack(">hh", 0, 9), b"")


# --- Kafka JSON -----------------------------------------------------------------------------------


def test_kafka_uuid_text() -> None:
    value = uuid.UUID("7e0d2c36-0d1a-4c1b-9c34-1e0f2a3b4c5d")
    text = kafka_uuid(value)
    assert len(text) == 22 and "=" not in text
    assert parse_kafka_uuid(text) == value
    assert kafka_uuid(None) == "AAAAAAAAAAAAAAAAAAAAAA"
    with pytest.raises(ValueError):
        parse_kafka_uuid("short")


def test_record_json_follows_kafka() -> None:
    topic_id = uuid.uuid4()
    data = record_json(PartitionChangeRecordV2(partition_id=0, topic_id=topic_id, isr=(1,)))
    # Tagged fields at their default (leader -2, replicas null, ...) are left out, as Kafka does.
    assert data == {
        "type": "PARTITION_CHANGE_RECORD",
        "version": 2,
        "data": {"partitionId": 0, "topicId": kafka_uuid(topic_id), "isr": [1]},
    }


def test_record_json_prints_values_as_kafka_does() -> None:
    # This layer has no config catalog: hiding secrets is ksteward.configs.sensitive.redacted_record_json's job
    # (tests/unit/configs/test_configs_sensitive.py).
    config = record_json(ConfigRecord(resource_type=4, resource_name="", name="retention.ms", value="5"))
    assert config["data"] == {"resourceType": 4, "resourceName": "", "name": "retention.ms", "value": "5"}
