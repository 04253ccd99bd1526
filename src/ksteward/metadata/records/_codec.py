"""KRaft record framing, the (apiKey, version) registry, and a tolerant fallback reader.

A metadata record value is ``uvarint frameVersion (1) | uvarint apiKey | uvarint version | body``,
the body in Kafka's flexible encoding (Kafka's ``AbstractApiMessageSerde``). Bodies are read by
kio's native ``entity_reader`` and written by ``_encoder`` (byte-for-byte what kio's ``entity_writer``
writes, several times faster).

Unknown tagged fields: kio's native reader raises ``KeyError`` on a tag its class does not declare,
while Kafka (KIP-482) skips such tags. A record written by a newer Kafka can legitimately carry
one, so on that ``KeyError`` the body is read again by ``read_entity_skipping_unknown_tags`` below,
a small pure-Python reader that follows the same field declarations and skips unknown tags. Their
content is dropped: Kafka keeps it in ``_unknownTaggedFields`` and writes it back, so a snapshot that
ksteward writes from such a record loses those fields. It is only the slow path.
"""

import enum
import struct
import uuid
from collections.abc import Callable, Mapping
from dataclasses import MISSING, Field, fields, is_dataclass
from types import NoneType, UnionType
from typing import Any, Union, get_args, get_origin

from kio.serial import entity_reader
from kio.serial.readers import read_unsigned_varint

from ._cluster import CLUSTER_RECORD_TYPES
from ._encoder import entity_encoder
from ._markers import MARKER_RECORD_TYPES
from ._security import SECURITY_RECORD_TYPES
from ._topics import TOPIC_RECORD_TYPES

FRAME_VERSION = 1


class MetadataRecordType(enum.IntEnum):
    """Metadata apiKeys; the member names are what Kafka's dump tool prints as ``"type"``."""

    REGISTER_BROKER_RECORD = 0
    UNREGISTER_BROKER_RECORD = 1
    TOPIC_RECORD = 2
    PARTITION_RECORD = 3
    CONFIG_RECORD = 4
    PARTITION_CHANGE_RECORD = 5
    FENCE_BROKER_RECORD = 7
    UNFENCE_BROKER_RECORD = 8
    REMOVE_TOPIC_RECORD = 9
    DELEGATION_TOKEN_RECORD = 10
    USER_SCRAM_CREDENTIAL_RECORD = 11
    FEATURE_LEVEL_RECORD = 12
    CLIENT_QUOTA_RECORD = 14
    PRODUCER_IDS_RECORD = 15
    BROKER_REGISTRATION_CHANGE_RECORD = 17
    ACCESS_CONTROL_ENTRY_RECORD = 18
    REMOVE_ACCESS_CONTROL_ENTRY_RECORD = 19
    NO_OP_RECORD = 20
    ZK_MIGRATION_STATE_RECORD = 21
    REMOVE_USER_SCRAM_CREDENTIAL_RECORD = 22
    BEGIN_TRANSACTION_RECORD = 23
    END_TRANSACTION_RECORD = 24
    ABORT_TRANSACTION_RECORD = 25
    REMOVE_DELEGATION_TOKEN_RECORD = 26
    REGISTER_CONTROLLER_RECORD = 27
    CLEAR_ELR_RECORD = 28
    UNREGISTER_CONTROLLER_RECORD = 29


class CorruptRecordError(ValueError):
    """The bytes are not a well-formed metadata record (bad frame, truncated body, trailing bytes)."""


class UnknownRecordTypeError(ValueError):
    """A well-framed record whose (apiKey, version) this build does not know."""

    def __init__(self, api_key: int, version: int) -> None:
        super().__init__(f"unknown metadata record type: apiKey {api_key}, version {version}")
        self.api_key = api_key
        self.version = version


ALL_RECORD_CLASSES: tuple[type, ...] = (
    CLUSTER_RECORD_TYPES + TOPIC_RECORD_TYPES + SECURITY_RECORD_TYPES + MARKER_RECORD_TYPES
)


def record_key(cls: type) -> tuple[int, int]:
    """``(apiKey, version)`` of a record class."""
    return int(getattr(cls, "__api_key__")), int(getattr(cls, "__version__"))  # noqa: B009


RECORD_TYPES: Mapping[tuple[int, int], type] = {record_key(cls): cls for cls in ALL_RECORD_CLASSES}
LATEST_VERSIONS: Mapping[int, type] = {api_key: cls for (api_key, _version), cls in sorted(RECORD_TYPES.items())}

_Reader = Callable[[Any, int], tuple[Any, int]]
_kio_readers: dict[type, _Reader] = {}
_frames: dict[type, tuple[bytes, Callable[[Any], bytes]]] = {}


def _uvarint_bytes(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def encode_record(record: Any) -> bytes:
    """Frame and serialize one metadata record: the value of one v2 record in a batch.

    The body is written by ``_encoder`` (byte-for-byte kio's ``entity_writer``, only faster).
    """
    cls = type(record)
    cached = _frames.get(cls)
    if cached is None:
        if not hasattr(cls, "__api_key__") or RECORD_TYPES.get(record_key(cls)) is not cls:
            raise TypeError(f"{cls.__name__} is not a registered metadata record type")
        api_key, version = record_key(cls)
        frame = _uvarint_bytes(FRAME_VERSION) + _uvarint_bytes(api_key) + _uvarint_bytes(version)
        cached = _frames[cls] = (frame, entity_encoder(cls))
    frame, encode = cached
    return frame + encode(record)


def read_frame(buf: Any) -> tuple[int, int, int]:
    """Read the frame header: ``(api_key, version, body_offset)``. Raises CorruptRecordError."""
    try:
        frame_version, n1 = read_unsigned_varint(buf, 0)
        api_key, n2 = read_unsigned_varint(buf, n1)
        version, n3 = read_unsigned_varint(buf, n1 + n2)
    except Exception as exc:  # kio raises its own DecodeError family; all mean "not a frame"
        raise CorruptRecordError(f"unreadable record frame: {exc}") from exc
    if frame_version == 0:
        raise CorruptRecordError("metadata record with frame version 0 (KRaft preview in Kafka 2.8) is not supported")
    if frame_version != FRAME_VERSION:
        raise CorruptRecordError(f"unknown metadata record frame version {frame_version}")
    if api_key > 0x7FFF or version > 0x7FFF:
        raise CorruptRecordError(f"metadata record apiKey {api_key} or version {version} out of range")
    return api_key, version, n1 + n2 + n3


def _reader_for(api_key: int, version: int) -> tuple[type, _Reader]:
    cls = RECORD_TYPES.get((api_key, version))
    if cls is None:
        raise UnknownRecordTypeError(api_key, version)
    reader = _kio_readers.get(cls)
    if reader is None:
        reader = _kio_readers[cls] = entity_reader(cls)
        if api_key < 0x80 and version < 0x80:
            _by_prefix[bytes((FRAME_VERSION, api_key, version))] = (cls, reader)
    return cls, reader


# Frame header (three one-byte varints for every known record) -> (class, kio reader): decoding
# a million-record snapshot spends a good part of its time here, so skip the varint reads.
_by_prefix: dict[bytes, tuple[type, _Reader]] = {}


def decode_record(buf: Any) -> Any:
    """Decode one framed metadata record (bytes, bytearray or memoryview).

    Raises CorruptRecordError for bad framing or a bad body, UnknownRecordTypeError for a
    well-framed record of an (apiKey, version) not in ``RECORD_TYPES``. Unknown tagged fields
    are skipped, as Kafka does.
    """
    known = _by_prefix.get(buf[:3]) if type(buf) is bytes else None
    if known is not None:
        cls, reader = known
        offset = 3
    else:
        api_key, version, offset = read_frame(buf)
        cls, reader = _reader_for(api_key, version)
    try:
        record, size = reader(buf, offset)
        end = offset + size
    except KeyError:
        # An unknown tagged field; see the module docstring.
        record, end = read_entity_skipping_unknown_tags(cls, bytes(buf), offset)
    except Exception as exc:  # BufferUnderflow, UnexpectedNull, InvalidUnicode, ...
        raise CorruptRecordError(f"bad {cls.__name__} body: {exc!r}") from exc
    if end != len(buf):
        raise CorruptRecordError(f"found {len(buf) - end} byte(s) of garbage after {cls.__name__}")
    return record


# ---------------------------------------------------------------------------------------------
# Fallback reader. It understands exactly the field shapes used by the record classes here.

_STRUCTS: Mapping[str, struct.Struct] = {
    "int8": struct.Struct(">b"),
    "int16": struct.Struct(">h"),
    "int32": struct.Struct(">i"),
    "int64": struct.Struct(">q"),
    "uint16": struct.Struct(">H"),
    "float64": struct.Struct(">d"),
}


def _read_uvarint(buf: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if pos >= len(buf):
            raise CorruptRecordError("buffer underflow in varint")
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7
        if shift > 28:
            raise CorruptRecordError("varint longer than 5 bytes")


def _take(buf: bytes, pos: int, size: int) -> tuple[bytes, int]:
    end = pos + size
    if end > len(buf):
        raise CorruptRecordError("buffer underflow")
    return buf[pos:end], end


def _scalar_reader(kafka_type: str, nullable: bool) -> _Reader:
    packer = _STRUCTS.get(kafka_type)
    if packer is not None:
        size = packer.size

        def read_fixed(buf: bytes, pos: int) -> tuple[Any, int]:
            raw, end = _take(buf, pos, size)
            return packer.unpack(raw)[0], end

        return read_fixed
    if kafka_type == "bool":
        return lambda buf, pos: (_take(buf, pos, 1)[0] != b"\x00", pos + 1)
    if kafka_type == "uuid":

        def read_uuid(buf: bytes, pos: int) -> tuple[Any, int]:
            raw, end = _take(buf, pos, 16)
            value = uuid.UUID(bytes=raw)
            return (None if value.int == 0 else value), end  # same mapping as kio

        return read_uuid
    if kafka_type in ("string", "bytes"):

        def read_compact(buf: bytes, pos: int) -> tuple[Any, int]:
            length, pos = _read_uvarint(buf, pos)
            if length == 0:
                if not nullable:
                    raise CorruptRecordError(f"null in a non-nullable {kafka_type}")
                return None, pos
            raw, end = _take(buf, pos, length - 1)
            return (raw.decode() if kafka_type == "string" else raw), end

        return read_compact
    raise NotImplementedError(f"no fallback reader for kafka_type {kafka_type!r}")


def _array_reader(item: _Reader, nullable: bool) -> _Reader:
    def read_array(buf: bytes, pos: int) -> tuple[Any, int]:
        length, pos = _read_uvarint(buf, pos)
        if length == 0:
            if not nullable:
                raise CorruptRecordError("null in a non-nullable array")
            return None, pos
        items = []
        for _ in range(length - 1):
            value, pos = item(buf, pos)
            items.append(value)
        return tuple(items), pos

    return read_array


def _strip_none(tp: Any) -> tuple[Any, bool]:
    if get_origin(tp) in (UnionType, Union):
        args = [a for a in get_args(tp) if a is not NoneType]
        return args[0], len(args) != len(get_args(tp))
    return tp, False


def _field_reader(f: Field[Any]) -> _Reader:
    outer, nullable = _strip_none(f.type)
    if get_origin(outer) is tuple:
        inner, _ = _strip_none(get_args(outer)[0])
        if is_dataclass(inner):
            return _array_reader(_entity_reader(inner), nullable)
        return _array_reader(_scalar_reader(f.metadata["kafka_type"], False), nullable)
    if is_dataclass(outer):
        return _entity_reader(outer)
    return _scalar_reader(f.metadata["kafka_type"], nullable)


_plans: dict[type, _Reader] = {}


def _entity_reader(cls: Any) -> _Reader:
    plan = _plans.get(cls)
    if plan is not None:
        return plan
    plain: list[tuple[str, _Reader]] = []
    tagged: dict[int, tuple[str, _Reader]] = {}
    for f in fields(cls):
        if "tag" in f.metadata:
            tagged[int(f.metadata["tag"])] = (f.name, _field_reader(f))
        else:
            plain.append((f.name, _field_reader(f)))

    def read(buf: bytes, pos: int) -> tuple[Any, int]:
        values: dict[str, Any] = {}
        for name, reader in plain:
            values[name], pos = reader(buf, pos)
        count, pos = _read_uvarint(buf, pos)
        for _ in range(count):
            tag, pos = _read_uvarint(buf, pos)
            size, pos = _read_uvarint(buf, pos)
            end = pos + size
            if end > len(buf):
                raise CorruptRecordError("tagged field overruns the buffer")
            known = tagged.get(tag)
            if known is not None:
                name, reader = known
                values[name], used = reader(buf, pos)
                if used != end:
                    raise CorruptRecordError(f"tagged field {tag} has a wrong size")
            pos = end  # an unknown tag is skipped, as KIP-482 asks
        return cls(**values), pos

    _plans[cls] = read
    return read


def read_entity_skipping_unknown_tags(cls: type, buf: bytes, pos: int) -> tuple[Any, int]:
    """Read one entity of ``cls`` at ``pos`` in pure Python; returns ``(entity, end)``."""
    try:
        return _entity_reader(cls)(buf, pos)
    except CorruptRecordError:
        raise
    except (struct.error, UnicodeDecodeError, TypeError, ValueError) as exc:
        raise CorruptRecordError(f"bad {cls.__name__} body: {exc!r}") from exc


def field_default(f: Field[Any]) -> Any:
    """The declared default of a data-class field, or MISSING."""
    if f.default is not MISSING:
        return f.default
    if f.default_factory is not MISSING:
        return f.default_factory()
    return MISSING
