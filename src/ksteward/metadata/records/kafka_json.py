"""Records as Kafka's JSON converters print them (``kafka-dump-log --cluster-metadata-decoder``).

Facts taken from Kafka's ``JsonConverterGenerator`` and ``DumpLogSegments``: field names are the
schema names with the first letter lower-cased (``TopicId`` -> ``topicId``); a tagged field is
printed only when it differs from its default; uuids print as Kafka's ``Uuid.toString`` (URL-safe
base64 without padding, 22 characters); bytes as standard base64; a metadata record prints as
``{"type": <MetadataRecordType name>, "version": v, "data": {...}}``.

Values print in clear, as Kafka's converters print them: this layer has no config catalog to tell a
secret from a retention time. What a person or a file gets goes through
``ksteward.configs.sensitive.redacted_record_json``, which hides them.
"""

from __future__ import annotations

import base64
import uuid
from dataclasses import fields, is_dataclass
from types import NoneType, UnionType
from typing import Any, Union, get_args, get_origin

from ._codec import MetadataRecordType, field_default

ZERO_UUID_TEXT = "AAAAAAAAAAAAAAAAAAAAAA"


def kafka_uuid(value: uuid.UUID | None) -> str:
    """Kafka's text form of a uuid; kio's None (the all-zero uuid) prints as Kafka's zero uuid."""
    if value is None:
        return ZERO_UUID_TEXT
    return base64.urlsafe_b64encode(value.bytes).rstrip(b"=").decode()


def parse_kafka_uuid(text: str) -> uuid.UUID:
    """Inverse of ``kafka_uuid``. Raises ValueError for anything that is not 22 base64url chars."""
    if len(text) != 22:
        raise ValueError(f"not a Kafka uuid: {text!r}")
    try:
        raw = base64.urlsafe_b64decode(text + "==")
    except (ValueError, TypeError) as exc:
        raise ValueError(f"not a Kafka uuid: {text!r}") from exc
    if len(raw) != 16:
        raise ValueError(f"not a Kafka uuid: {text!r}")
    return uuid.UUID(bytes=raw)


def camel_case(name: str) -> str:
    """kio's snake_case field name back to Kafka's JSON name: ``topic_id`` -> ``topicId``."""
    head, *rest = name.rstrip("_").split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def _is_array(tp: Any) -> bool:
    if get_origin(tp) in (UnionType, Union):
        tp = next(a for a in get_args(tp) if a is not NoneType)
    return get_origin(tp) is tuple


def _value(value: Any, kafka_type: str | None, array: bool) -> Any:
    if array:
        return None if value is None else [_value(item, kafka_type, False) for item in value]
    if kafka_type == "uuid":
        return kafka_uuid(value)
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, bytes):
        return base64.b64encode(value).decode()
    if is_dataclass(value):
        return entity_json(value)
    raise TypeError(f"cannot render {type(value).__name__} as Kafka JSON")


#: Per entity class, each field's (attribute, JSON name, kafka_type, is an array, tagged, its default): what
#: ``entity_json`` needs of a field, worked out once per class instead of once per record (a pipeline task
#: renders every record of a log).
_FieldPlan = tuple[tuple[str, str, str | None, bool, bool, Any], ...]
_PLANS: dict[type, _FieldPlan] = {}


def _plan(cls: type) -> _FieldPlan:
    plan = tuple(
        (f.name, camel_case(f.name), f.metadata.get("kafka_type"), _is_array(f.type), "tag" in f.metadata,
         field_default(f) if "tag" in f.metadata else None)
        for f in fields(cls)
    )  # fmt: skip
    _PLANS[cls] = plan
    return plan


def entity_json(entity: Any) -> dict[str, Any]:
    """One kio entity (record, nested struct or control message) as Kafka's JSON object."""
    cls = type(entity)
    plan = _PLANS.get(cls) or _plan(cls)
    out: dict[str, Any] = {}
    for attribute, name, kafka_type, array, tagged, default in plan:
        value = getattr(entity, attribute)
        if tagged and value == default:
            continue
        out[name] = _value(value, kafka_type, array)
    return out


def record_json(record: Any) -> dict[str, Any]:
    """``{"type", "version", "data"}`` for a metadata record, every value in clear (see the module docstring)."""
    api_key = int(record.__api_key__)
    return {"type": MetadataRecordType(api_key).name, "version": int(record.__version__), "data": entity_json(record)}
