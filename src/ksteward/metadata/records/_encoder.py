"""A faster serializer for the record classes, byte-for-byte equal to kio's ``entity_writer``.

kio's writer (pure Python in 0.6.5) costs 9-14 us per PartitionRecord, mostly in ``BytesIO`` round
trips and phantom-type checks: 10+ s for a snapshot of a million records. This generates, once per
class, a straight-line function over per-field encoders that return ``bytes``: about 2.7 us. The
tests check every record class against kio's writer with hypothesis, so kio stays the reference.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import fields, is_dataclass
from types import NoneType, UnionType
from typing import Any, Union, get_args, get_origin

from ksteward.protocol.varint import write_uvarint

_Encode = Callable[[Any], bytes]

_FIXED = {
    "int8": struct.Struct(">b").pack,
    "int16": struct.Struct(">h").pack,
    "int32": struct.Struct(">i").pack,
    "int64": struct.Struct(">q").pack,
    "uint16": struct.Struct(">H").pack,
    "float64": struct.Struct(">d").pack,
}
_ARRAY_CODES = {"int8": "b", "int16": "h", "int32": "i", "int64": "q", "uint16": "H", "float64": "d"}
_ZERO_UUID = bytes(16)


def _scalar(kafka_type: str, nullable: bool) -> _Encode:
    fixed = _FIXED.get(kafka_type)
    if fixed is not None:
        return fixed
    if kafka_type == "bool":
        return lambda value: b"\x01" if value else b"\x00"
    if kafka_type == "uuid":
        return lambda value: _ZERO_UUID if value is None else value.bytes
    if kafka_type in ("string", "bytes"):
        is_text = kafka_type == "string"

        def compact(value: Any) -> bytes:
            if value is None:
                if not nullable:
                    raise TypeError(f"None in a non-nullable {kafka_type}")
                return b"\x00"
            raw = value.encode() if is_text else value
            return write_uvarint(len(raw) + 1) + raw

        return compact
    raise NotImplementedError(f"no encoder for kafka_type {kafka_type!r}")


def _array(item: _Encode, nullable: bool, code: str | None) -> _Encode:
    packers: dict[int, Callable[..., bytes]] = {}  # length -> packer, for fixed-width items

    def encode_array(value: Any) -> bytes:
        if value is None:
            if not nullable:
                raise TypeError("None in a non-nullable array")
            return b"\x00"
        n = len(value)
        if code is not None:  # a fixed-width primitive: one struct call for the whole array
            pack = packers.get(n)
            if pack is None:
                pack = packers[n] = struct.Struct(f">{n}{code}").pack
            return write_uvarint(n + 1) + pack(*value)
        return write_uvarint(n + 1) + b"".join([item(v) for v in value])

    return encode_array


def _split_optional(tp: Any) -> tuple[Any, bool]:
    if get_origin(tp) in (UnionType, Union):
        args = [a for a in get_args(tp) if a is not NoneType]
        return args[0], len(args) != len(get_args(tp))
    return tp, False


def _field(f: Any, tagged: bool) -> _Encode:
    outer, nullable = _split_optional(f.type)
    kafka_type = f.metadata.get("kafka_type")
    if get_origin(outer) is tuple:
        inner, _ = _split_optional(get_args(outer)[0])
        if is_dataclass(inner):
            return _array(entity_encoder(inner), nullable, None)
        return _array(_scalar(kafka_type, False), nullable, _ARRAY_CODES.get(kafka_type))
    if is_dataclass(outer):
        return entity_encoder(outer)
    # kio writes tagged scalars as non-nullable (absence is the null); keep that.
    return _scalar(kafka_type, nullable and not tagged)


_encoders: dict[type, _Encode] = {}


def entity_encoder(cls: Any) -> _Encode:
    """The body encoder of a flexible kio-style entity class."""
    cached = _encoders.get(cls)
    if cached is not None:
        return cached
    plain: list[tuple[str, _Encode]] = []
    tagged: list[tuple[int, str, _Encode, Any]] = []
    for f in fields(cls):
        if "tag" in f.metadata:
            tagged.append((int(f.metadata["tag"]), f.name, _field(f, True), f.default))
        else:
            plain.append((f.name, _field(f, False)))
    tagged.sort(key=lambda t: t[0])
    if not cls.__flexible__:
        raise ValueError(f"{cls.__name__} is not a flexible entity")

    encode = _compile(cls.__name__, plain, tagged)
    _encoders[cls] = encode
    return encode


def _compile(name: str, plain: list[tuple[str, _Encode]], tagged: list[tuple[int, str, _Encode, Any]]) -> _Encode:
    """Generate one function per class, as ``dataclasses`` does for ``__init__``: a straight-line
    body with no per-field loop is about twice as fast as iterating over (name, encoder) pairs.
    Field names come from the record classes, never from data."""
    env: dict[str, Any] = {"write_uvarint": write_uvarint}
    lines = [f"def encode_{name}(e):", "    tags = []"]
    for i, (tag, field_name, enc, default) in enumerate(tagged):
        env[f"t{i}"], env[f"d{i}"], env[f"h{i}"] = enc, default, write_uvarint(tag)
        # A tagged field at its default is left out, as kio does.
        lines += [f"    v = e.{field_name}", f"    if v != d{i}:", f"        b = t{i}(v)",
                  f"        tags.append(h{i} + write_uvarint(len(b)) + b)"]  # fmt: skip
    parts = []
    for i, (field_name, enc) in enumerate(plain):
        env[f"w{i}"] = enc
        parts.append(f"w{i}(e.{field_name})")
    lines.append(f"    return b''.join(({''.join(p + ', ' for p in parts)}write_uvarint(len(tags)), *tags))")
    exec("\n".join(lines), env)  # the source holds field names of our own classes, never data
    function: _Encode = env[f"encode_{name}"]
    return function
