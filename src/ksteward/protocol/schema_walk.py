"""Walk a message's wire bytes by its kio schema, before kio's native reader sees them.

Two jobs, one walk:

- **Bounds.** kio 0.6.5 decodes in native code and, for an array, reserves memory for the element
  count the sender *declares* before it checks that the bytes are there; a failed reservation aborts
  the whole process. Kafka's generated parsers refuse such a count first ("Tried to allocate a
  collection of size N, but there are only R bytes remaining"). :func:`check_message` does the same
  for every length a message declares, at any depth: an array's count times its element's smallest
  wire size, a string's or bytes field's length, a tagged section's count and each tagged field's
  size, each against the bytes that remain in its enclosing region. Unsigned varints longer than
  five bytes are refused, as Kafka's ``ByteUtils.readUnsignedVarint`` refuses them.
- **Unknown tags.** KIP-482 says a receiver skips tagged fields it does not know; kio raises
  ``KeyError`` instead. The walk counts them, and :func:`strip_unknown_tags` copies the message
  without them for the rare message that carries a tag from a newer Kafka.

A message that passes the walk can be handed to kio: what kio allocates is then bounded by the size
of the frame. Failures raise :class:`~ksteward.protocol.errors.InvalidRequestError`, which closes the
connection as Kafka's ``SocketServer`` closes it for an unparsable request.
"""

from __future__ import annotations

import dataclasses
import struct
from collections.abc import Callable, Mapping
from functools import cache
from typing import NoReturn, cast

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
from ksteward.protocol.varint import read_uvarint, write_uvarint

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
_STRING, _BYTES = "string", "bytes"
_LENGTH_TYPES = {"string": _STRING, "bytes": _BYTES, "records": _BYTES}
MAX_STRING_LENGTH = 0x7FFF  # Kafka's generated readers refuse longer strings
_I8 = struct.Struct(">b")
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")


@dataclasses.dataclass(frozen=True, slots=True)
class _Field:
    name: str
    kafka_type: str | None  # None for nested entities
    nested: type | None
    is_array: bool
    nullable_struct: bool
    legacy_string: bool  # RequestHeader.ClientId: a classic int16 string even in flexible headers


@dataclasses.dataclass(frozen=True, slots=True)
class _Schema:
    flexible: bool
    fields: tuple[_Field, ...]  # the untagged fields, in wire order
    tagged: Mapping[int, _Field]
    min_size: int  # the fewest bytes an instance can take on the wire


@cache
def _schema(cls: type) -> _Schema:
    flexible = bool(getattr(cls, "__flexible__", False))
    fields: list[_Field] = []
    tagged: dict[int, _Field] = {}
    for f in dataclasses.fields(cls):
        kind = classify_field(f)
        nested = kind.type_ if isinstance(kind, EntityField | EntityTupleField) else None
        entry = _Field(
            name=f.name,
            kafka_type=None if nested is not None else get_schema_field_type(f),
            nested=nested,
            is_array=kind.is_array,
            nullable_struct=nested is not None and not kind.is_array and is_optional(f),
            legacy_string=getattr(cls, "__type__", None) is EntityType.header and f.name == "client_id",
        )
        tag = get_field_tag(f)
        if tag is None:
            fields.append(entry)
        else:
            tagged[int(tag)] = entry
    min_size = sum(_field_min_size(f, flexible) for f in fields) + (1 if flexible else 0)
    return _Schema(flexible, tuple(fields), tagged, min_size)


def _field_min_size(f: _Field, flexible: bool) -> int:
    if f.is_array:
        return 1 if flexible else 4
    if f.nullable_struct:
        return 1
    return _element_min_size(f, flexible)


def _element_min_size(f: _Field, flexible: bool) -> int:
    """The fewest bytes one value (one array element) of ``f`` takes."""
    if f.nested is not None:
        return _schema(f.nested).min_size
    assert f.kafka_type is not None
    if f.kafka_type in _FIXED:
        return _FIXED[f.kafka_type]
    if f.legacy_string or not flexible:
        return 2 if _LENGTH_TYPES.get(f.kafka_type) == _STRING else 4
    return 1


def _truncated() -> NoReturn:
    raise InvalidRequestError("truncated field")


def _overrun(name: str, length: int, remaining: int) -> NoReturn:
    raise InvalidRequestError(f"{name} of {length} bytes, but only {remaining} bytes remain")


def _too_many(name: str, count: int, remaining: int) -> NoReturn:
    raise InvalidRequestError(
        f"{name}: tried to allocate a collection of size {count}, but there are only {remaining} bytes remaining"
    )


def _bad_string(name: str, length: int) -> NoReturn:
    raise InvalidRequestError(f"{name}: string field had invalid length {length}")


# --- the walkers: one straight-line function per schema, generated once, as kio's readers are ------

_Walk = Callable[[bytes, int, int, "_State"], int]


class _State:
    """What a walk carries besides the position: the unknown-tag count, and for a copy the output."""

    __slots__ = ("copied_to", "out", "unknown")

    def __init__(self, out: bytearray | None, copied_to: int) -> None:
        self.unknown = 0
        self.out = out
        self.copied_to = copied_to

    def tags(self, buf: bytes, pos: int, end: int, known: Mapping[int, _Walk]) -> int:
        """A tagged section with at least one field (the generated code skips empty ones itself)."""
        start = pos
        count, pos = read_uvarint(buf, pos, end)
        if count > (end - pos) // 2:  # a tag and a size: two bytes at least each
            raise InvalidRequestError(f"{count} tagged fields, but only {end - pos} bytes remain")
        kept = bytearray()
        kept_count = 0
        for _ in range(count):
            field_start = pos
            tag, pos = read_uvarint(buf, pos, end)
            size, pos = read_uvarint(buf, pos, end)
            if size > end - pos:
                _overrun(f"tagged field {tag}", size, end - pos)
            value_end = pos + size
            walk = known.get(tag)
            if walk is None:
                self.unknown += 1
            elif self.out is None:
                walk(buf, pos, value_end, self)
            else:
                # Unknown tags nested inside a known tagged field are left in place (kio then refuses
                # the message): rewriting inside a field that is itself copied whole would garble it.
                out_len, copied_to = len(self.out), self.copied_to
                walk(buf, pos, value_end, self)
                del self.out[out_len:]
                self.copied_to = copied_to
            if walk is not None:
                kept += buf[field_start:value_end]
                kept_count += 1
            pos = value_end
        if self.out is not None and kept_count != count:
            self.out += buf[self.copied_to : start]
            self.out += write_uvarint(kept_count) + kept
            self.copied_to = pos
        return pos


class _Source:
    """Python source for one walker, with the constants it needs bound by name."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.names: dict[str, object] = {
            "_uvarint": read_uvarint,
            "_I16": _I16,
            "_I32": _I32,
            "_truncated": _truncated,
            "_overrun": _overrun,
            "_too_many": _too_many,
            "_bad_string": _bad_string,
        }

    def bind(self, value: object) -> str:
        name = f"_k{len(self.names)}"
        self.names[name] = value
        return name

    def line(self, indent: int, text: str) -> None:
        self.lines.append("    " * indent + text)

    def uvarint(self, indent: int) -> None:
        """Leave the unsigned varint at ``pos`` in ``n`` (one byte inline, longer ones by call)."""
        for text in ("if pos >= end: _truncated()", "b = buf[pos]", "if b < 128:", "    pos += 1",
                     "    n = b", "else:", "    n, pos = _uvarint(buf, pos, end)"):  # fmt: skip
            self.line(indent, text)

    def length(self, indent: int, flexible: bool, wide: bool) -> None:
        """Leave an array, string or bytes length in ``n``; negative means null."""
        if flexible:
            self.uvarint(indent)
            self.line(indent, "n -= 1")
            return
        size, fmt = (4, "_I32") if wide else (2, "_I16")
        self.line(indent, f"if pos + {size} > end: _truncated()")
        self.line(indent, f"n = {fmt}.unpack_from(buf, pos)[0]")
        self.line(indent, f"pos += {size}")

    def value(self, indent: int, f: _Field, flexible: bool) -> None:
        """One value of ``f`` (one element, for an array)."""
        if f.nested is not None:
            self.line(indent, f"pos = {self.bind(_walker(f.nested))}(buf, pos, end, w)")
            return
        assert f.kafka_type is not None
        size = _FIXED.get(f.kafka_type)
        if size is not None:
            self.line(indent, f"pos += {size}")
            self.line(indent, "if pos > end: _truncated()")
            return
        kind = _LENGTH_TYPES.get(f.kafka_type)
        if kind is None:
            raise TypeError(f"{f.name}: no wire walker for field type {f.kafka_type}")
        label = self.bind(f.name)
        self.length(indent, flexible and not f.legacy_string, wide=kind is _BYTES)
        self.line(indent, "if n > 0:")
        if kind is _STRING:
            self.line(indent + 1, f"if n > {MAX_STRING_LENGTH}: _bad_string({label}, n)")
        self.line(indent + 1, "pos += n")
        self.line(indent + 1, f"if pos > end: _overrun({label}, n, end - pos + n)")

    def field(self, indent: int, f: _Field, flexible: bool) -> None:
        if f.is_array:
            self.length(indent, flexible, wide=True)
            element = max(_element_min_size(f, flexible), 1)
            self.line(indent, "if n > 0:")
            self.line(indent + 1, f"if n > (end - pos) // {element}: _too_many({self.bind(f.name)}, n, end - pos)")
            if f.kafka_type in _FIXED:
                self.line(indent + 1, f"pos += n * {element}")
            else:
                self.line(indent + 1, "for _ in range(n):")
                self.value(indent + 2, f, flexible)
        elif f.nullable_struct:
            self.line(indent, "if pos >= end: _truncated()")
            self.line(indent, "pos += 1")
            self.line(indent, "if buf[pos - 1] < 128:")  # an int8 marker: -1 is null
            self.value(indent + 1, f, flexible)
        else:
            self.value(indent, f, flexible)

    def compile(self, name: str) -> _Walk:
        source = "\n".join([f"def {name}(buf, pos, end, w):", *self.lines, "    return pos"])
        exec(compile(source, f"<schema walker {name}>", "exec"), self.names)  # trusted: kio's schemas only
        return cast(_Walk, self.names[name])


@cache
def _walker(cls: type) -> _Walk:
    """The walker of entity ``cls``: returns the position after it, or raises InvalidRequestError."""
    schema = _schema(cls)
    source = _Source()
    for f in schema.fields:
        source.field(1, f, schema.flexible)
    if schema.flexible:
        known = source.bind({tag: _tagged_walker(f) for tag, f in schema.tagged.items()})
        source.line(1, "if pos >= end: _truncated()")
        source.line(1, "if buf[pos] == 0:")
        source.line(2, "pos += 1")
        source.line(1, "else:")
        source.line(2, f"pos = w.tags(buf, pos, end, {known})")
    return source.compile(f"walk_{cls.__name__}")


def _tagged_walker(f: _Field) -> _Walk:
    source = _Source()
    source.field(1, f, True)
    return source.compile(f"walk_tagged_{f.name}")


def _walk(buf: bytes, start: int, classes: tuple[type, ...], state: _State) -> int:
    pos, end = start, len(buf)
    for cls in classes:
        pos = _walker(cls)(buf, pos, end, state)
    return pos


def check_message(buf: bytes, start: int, classes: tuple[type, ...]) -> int:
    """Walk the entities ``classes`` (read in order from ``start``) and bound every length they declare.

    Returns the number of unknown tagged fields (0 for nearly every message); raises
    :class:`InvalidRequestError` for a length the bytes cannot hold. Bytes after the last entity are
    not examined: Kafka's parsers ignore them too.
    """
    state = _State(None, start)
    _walk(buf, start, classes, state)
    return state.unknown


def strip_unknown_tags(buf: bytes, start: int, classes: tuple[type, ...]) -> tuple[bytes, int]:
    """Copy ``buf`` without the unknown tagged fields of the entities ``classes`` (read in order
    from ``start``), checking every length as :func:`check_message` does. Returns the cleaned
    bytes and the number of tags dropped."""
    state = _State(bytearray(buf[:start]), start)
    _walk(buf, start, classes, state)
    assert state.out is not None
    state.out += buf[state.copied_to :]
    return bytes(state.out), state.unknown
