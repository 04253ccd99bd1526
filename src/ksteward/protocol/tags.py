"""Skip tagged fields that kio's schema does not know.

KIP-482 says a receiver must skip tagged fields it does not recognise; kio 0.6.5's native reader
raises ``KeyError`` instead. When that happens, :func:`strip_unknown_tags` walks the same kio
schema in Python, copies the message while dropping every unknown tag, and the caller decodes the
copy. The walk is slow next to the native reader, but it only runs for the rare message that
carries a tag from a newer Kafka.
"""

from __future__ import annotations

import dataclasses
import struct
from functools import cache

from kio.serial._introspect import (
    EntityField,
    EntityTupleField,
    classify_field,
    get_field_tag,
    get_schema_field_type,
    is_optional,
)
from kio.static.constants import EntityType

from ksteward.protocol.errors import InvalidRequestError

_FIXED = {
    "bool": 1,
    "int8": 1,
    "int16": 2,
    "uint16": 2,
    "error_code": 2,
    "int32": 4,
    "timedelta_i32": 4,
    "int64": 8,
    "timedelta_i64": 8,
    "datetime_i64": 8,
    "float64": 8,
    "uuid": 16,
}


def read_uvarint(buf: bytes, pos: int) -> tuple[int, int]:
    """Return (value, new position) of an unsigned varint at ``pos``."""
    value = shift = 0
    while True:
        if pos >= len(buf):
            raise InvalidRequestError("truncated varint")
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value, pos
        shift += 7
        if shift > 63:
            raise InvalidRequestError("varint too long")


def write_uvarint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


@dataclasses.dataclass(frozen=True, slots=True)
class _Field:
    kafka_type: str | None  # None for nested entities
    nested: type | None
    is_array: bool
    nullable_struct: bool
    tag: int | None
    legacy_string: bool = False  # RequestHeader.ClientId: "flexibleVersions": "none"


@cache
def _schema(cls: type) -> tuple[tuple[_Field, ...], frozenset[int]]:
    fields = []
    known_tags = set()
    for f in dataclasses.fields(cls):
        kind = classify_field(f)
        nested = kind.type_ if isinstance(kind, EntityField | EntityTupleField) else None
        tag = get_field_tag(f)
        if tag is not None:
            known_tags.add(int(tag))
        fields.append(
            _Field(
                kafka_type=None if nested is not None else get_schema_field_type(f),
                nested=nested,
                is_array=kind.is_array,
                nullable_struct=nested is not None and not kind.is_array and is_optional(f),
                tag=None if tag is None else int(tag),
                legacy_string=getattr(cls, "__type__", None) is EntityType.header and f.name == "client_id",
            )
        )
    return tuple(fields), frozenset(known_tags)


class _Walker:
    def __init__(self, buf: bytes) -> None:
        self.buf = buf
        self.out = bytearray()
        self.pos = 0
        self.dropped = 0

    def _take(self, n: int) -> None:
        end = self.pos + n
        if n < 0 or end > len(self.buf):
            raise InvalidRequestError("truncated field")
        self.out += self.buf[self.pos : end]
        self.pos = end

    def _uvarint(self) -> int:
        value, new_pos = read_uvarint(self.buf, self.pos)
        self.out += self.buf[self.pos : new_pos]
        self.pos = new_pos
        return value

    def _int(self, fmt: str) -> int:
        size = struct.calcsize(fmt)
        if self.pos + size > len(self.buf):
            raise InvalidRequestError("truncated field")
        (value,) = struct.unpack_from(fmt, self.buf, self.pos)
        self._take(size)
        return int(value)

    def _length(self, flexible: bool, wide: bool) -> int:
        """An array, string or bytes length; -1 means null."""
        if flexible:
            return self._uvarint() - 1
        return self._int(">i" if wide else ">h")

    def primitive(self, kafka_type: str, flexible: bool) -> None:
        if kafka_type in _FIXED:
            self._take(_FIXED[kafka_type])
        elif kafka_type == "string":
            self._take(max(self._length(flexible, wide=False), 0))
        elif kafka_type in ("bytes", "records"):
            self._take(max(self._length(flexible, wide=True), 0))
        else:
            raise InvalidRequestError(f"unsupported field type {kafka_type}")

    def entity(self, cls: type) -> None:
        fields, known = _schema(cls)
        flexible = bool(getattr(cls, "__flexible__", False))
        for f in fields:
            if f.tag is not None:
                continue
            if f.is_array:
                count = self._length(flexible, wide=True)
                for _ in range(max(count, 0)):
                    self._value(f, flexible)
            elif f.legacy_string:
                self.primitive("string", flexible=False)
            else:
                if f.nullable_struct and self._int(">b") < 0:
                    continue
                self._value(f, flexible)
        if flexible:
            self._tagged_section(known)

    def _value(self, f: _Field, flexible: bool) -> None:
        if f.nested is not None:
            self.entity(f.nested)
        else:
            assert f.kafka_type is not None
            self.primitive(f.kafka_type, flexible)

    def _tagged_section(self, known: frozenset[int]) -> None:
        count, self.pos = read_uvarint(self.buf, self.pos)
        kept = bytearray()
        kept_count = 0
        for _ in range(count):
            start = self.pos
            tag, self.pos = read_uvarint(self.buf, self.pos)
            size, self.pos = read_uvarint(self.buf, self.pos)
            end = self.pos + size
            if end > len(self.buf):
                raise InvalidRequestError("truncated tagged field")
            self.pos = end
            if tag in known:
                kept += self.buf[start:end]
                kept_count += 1
            else:
                self.dropped += 1
        self.out += write_uvarint(kept_count) + kept


def strip_unknown_tags(buf: bytes, start: int, classes: tuple[type, ...]) -> tuple[bytes, int]:
    """Copy ``buf`` without the unknown tagged fields of the entities ``classes`` (read in order
    from ``start``). Returns the cleaned bytes and the number of tags dropped."""
    walker = _Walker(buf)
    walker.out += buf[:start]
    walker.pos = start
    for cls in classes:
        walker.entity(cls)
    walker.out += buf[walker.pos :]
    return bytes(walker.out), walker.dropped
