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
from collections.abc import Callable, Mapping
from dataclasses import MISSING, Field
from typing import Any

from kio.serial import entity_reader
from kio.serial.readers import read_unsigned_varint

from ksteward.protocol.schema_walk import strip_unknown_tags
from ksteward.protocol.varint import write_uvarint

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
        frame = write_uvarint(FRAME_VERSION) + write_uvarint(api_key) + write_uvarint(version)
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


def read_entity_skipping_unknown_tags(cls: type, buf: bytes, pos: int) -> tuple[Any, int]:
    """Read one entity of ``cls`` at ``pos``, skipping tagged fields its schema does not know.

    kio's native reader raises ``KeyError`` on such tags; the protocol layer's schema walker copies
    the entity without them (the one place ksteward does this), and kio reads the copy. Returns
    ``(entity, end)`` with ``end`` in ``buf``'s coordinates.
    """
    try:
        cleaned, _dropped = strip_unknown_tags(buf, pos, (cls,))
        entity: Any
        entity, size = entity_reader(cls)(cleaned, pos)
    except CorruptRecordError:
        raise
    except Exception as exc:  # InvalidRequestError from the walker, kio's decode errors
        raise CorruptRecordError(f"bad {cls.__name__} body: {exc!r}") from exc
    # Everything after the entity was copied verbatim, so the distance to the end is unchanged.
    return entity, len(buf) - (len(cleaned) - (pos + size))


def field_default(f: Field[Any]) -> Any:
    """The declared default of a data-class field, or MISSING."""
    if f.default is not MISSING:
        return f.default
    if f.default_factory is not MISSING:
        return f.default_factory()
    return MISSING
