"""Build kio entities from plain values, whatever the API version.

kio generates one frozen dataclass per API version, and the versions differ in which fields exist.
Handlers describe a response once, as nested dicts holding every field any version has;
:func:`build` keeps the fields the chosen version's class declares and drops the rest, recursing
into nested entities. A field the class requires but the values lack is a programming error and
raises ``TypeError`` naming the class and field.
"""

from __future__ import annotations

import dataclasses
import datetime
from collections.abc import Mapping
from functools import cache
from typing import Any, TypeVar, cast

from kio.serial._introspect import EntityField, EntityTupleField, classify_field, get_schema_field_type

T = TypeVar("T")

_TIMEDELTA_TYPES = frozenset({"timedelta_i32", "timedelta_i64"})


@dataclasses.dataclass(frozen=True, slots=True)
class _FieldInfo:
    name: str
    nested: type | None  # the entity class for struct or array-of-struct fields
    is_array: bool
    is_timedelta: bool
    required: bool


@cache
def _fields(cls: Any) -> tuple[_FieldInfo, ...]:
    infos = []
    for f in dataclasses.fields(cls):
        kind = classify_field(f)
        nested = kind.type_ if isinstance(kind, EntityField | EntityTupleField) else None
        kafka_type = None if nested is not None else get_schema_field_type(f)
        required = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        infos.append(
            _FieldInfo(
                name=f.name,
                nested=nested,
                is_array=kind.is_array,
                is_timedelta=kafka_type in _TIMEDELTA_TYPES,
                required=required,
            )
        )
    return tuple(infos)


def _convert(info: _FieldInfo, value: Any) -> Any:
    if value is None:
        return None
    if info.nested is not None:
        if info.is_array:
            return tuple(v if not isinstance(v, Mapping) else build(info.nested, v) for v in value)
        return value if not isinstance(value, Mapping) else build(info.nested, value)
    if info.is_timedelta and isinstance(value, int):
        return datetime.timedelta(milliseconds=value)
    if info.is_array and isinstance(value, list):
        return tuple(value)
    return value


def build(cls: type[T], values: Mapping[str, Any]) -> T:
    """Construct ``cls`` from ``values``, ignoring keys the class does not have."""
    kwargs: dict[str, Any] = {}
    for info in _fields(cast(Any, cls)):
        if info.name in values:
            kwargs[info.name] = _convert(info, values[info.name])
        elif info.is_timedelta and info.required:
            kwargs[info.name] = datetime.timedelta(0)  # throttle_time: ksteward never throttles reads
        elif info.required:
            raise TypeError(f"{cls.__qualname__} v{getattr(cls, '__version__', '?')} needs field {info.name!r}")
    return cls(**kwargs)
