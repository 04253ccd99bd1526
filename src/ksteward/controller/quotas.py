"""Client quotas: validation and record generation for AlterClientQuotas (49).

Pure: given the image's quotas and the request's entries, return the records and one result per
entity. The rules are Kafka's ``ClientQuotaControlManager`` (KRaft, 3.5+ after KAFKA-14943), with
``QuotaConfig``'s keys:

- an entity is ``user`` and/or ``client-id``, or ``ip`` alone; a None name is the default entity;
- ``producer_byte_rate`` and ``consumer_byte_rate`` (LONG), ``request_percentage`` and
  ``controller_mutation_rate`` (DOUBLE) are valid for user/client-id entities,
  ``connection_creation_rate`` (INT) for ip entities;
- a value must be greater than 0, integral for LONG/INT keys (within 1e-6) and within their range;
- a removal is not validated, and removing an absent key writes nothing; nor does setting an unchanged value.

Every failure is INVALID_REQUEST for that entity only; the records of all other entities are one batch.

Where ksteward differs, on purpose:

- an entity type named twice in one entity is refused ("duplicate entity entry"); Kafka's request
  parser folds the pair into a map first (the last name wins), so its own check never fires;
- a key named twice keeps Kafka's intended message; Kafka overwrites it with "Ignoring duplicate entity";
- an entity named twice is refused and nothing of it is written; Kafka writes its first occurrence
  and still reports the error;
- NaN is refused like any value that is not greater than 0 (Kafka's ``value <= 0.0`` lets NaN through),
  and infinity as not finite (Kafka takes it for DOUBLE keys; kio's float64 type, which snapshots use, refuses it);
- an ip entity must be an IP literal: Kafka also accepts a host name that resolves, by a DNS lookup
  on the controller's event thread, which ksteward does not do below its server layer.
"""

from __future__ import annotations

import ipaddress
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any

from kio.schema.errors import ErrorCode
from kio.static.primitive import f64

from ksteward.controller.result import (
    EXCESSIVELY_LARGE_BATCH,
    MAX_RECORDS_PER_USER_OP,
    NO_ERROR,
    ApiError,
    ControllerResult,
)
from ksteward.metadata.image import QuotaEntity
from ksteward.metadata.records import ClientQuotaRecord, EntityData

USER, CLIENT_ID, IP = "user", "client-id", "ip"
ENTITY_TYPES = (USER, CLIENT_ID, IP)

PRODUCER_BYTE_RATE = "producer_byte_rate"
CONSUMER_BYTE_RATE = "consumer_byte_rate"
REQUEST_PERCENTAGE = "request_percentage"
CONTROLLER_MUTATION_RATE = "controller_mutation_rate"
CONNECTION_CREATION_RATE = "connection_creation_rate"


class QuotaType(Enum):
    """The ConfigDef type of a quota key, which decides the values it accepts."""

    INT = "INT"
    LONG = "LONG"
    DOUBLE = "DOUBLE"


USER_AND_CLIENT_QUOTAS: Mapping[str, QuotaType] = {
    PRODUCER_BYTE_RATE: QuotaType.LONG,
    CONSUMER_BYTE_RATE: QuotaType.LONG,
    REQUEST_PERCENTAGE: QuotaType.DOUBLE,
    CONTROLLER_MUTATION_RATE: QuotaType.DOUBLE,
}
IP_QUOTAS: Mapping[str, QuotaType] = {CONNECTION_CREATION_RATE: QuotaType.INT}

_INT_MAX = float(2**31 - 1)
_LONG_MAX = float(2**63 - 1)  # 2**63 as a double, as Java's (double) Long.MAX_VALUE
# Java's HashMap happens to iterate these types in this order; Kafka's messages print the entity that way.
_JAVA_ORDER = {CLIENT_ID: 0, USER: 1, IP: 2}

EntityPairs = tuple[tuple[str, str | None], ...]
"""An entity as sent: (entity_type, entity_name or None for the default) pairs, in request order."""


@dataclass(frozen=True, slots=True)
class QuotaOp:
    key: str
    value: float | None
    """None: remove the key."""


@dataclass(frozen=True, slots=True)
class QuotaAlteration:
    entity: EntityPairs
    ops: tuple[QuotaOp, ...]

    @classmethod
    def from_kio(cls, entry: Any) -> QuotaAlteration:
        """From a kio AlterClientQuotas ``EntryData`` (v0-v1)."""
        return cls(
            entity=tuple((e.entity_type, e.entity_name) for e in entry.entity),
            ops=tuple(QuotaOp(op.key, None if op.remove else float(op.value)) for op in entry.ops),
        )


@dataclass(frozen=True, slots=True)
class QuotaAlterationResult:
    entity: EntityPairs
    error: ApiError = NO_ERROR


def canonical(entity: EntityPairs) -> QuotaEntity:
    """The image's key for an entity: its pairs sorted by type."""
    return tuple(sorted(entity, key=lambda pair: pair[0]))


def entity_text(entity: EntityPairs) -> str:
    """Kafka's ``ClientQuotaEntity.toString()``."""
    ordered = sorted(entity, key=lambda pair: _JAVA_ORDER.get(pair[0], len(_JAVA_ORDER)))
    inner = ", ".join(f"{t}={'null' if n is None else n}" for t, n in ordered)
    return f"ClientQuotaEntity(entries={{{inner}}})"


def is_ip_literal(name: str) -> bool:
    """An IPv4 or IPv6 address, the latter optionally in brackets, as ``InetAddress.getByName`` takes literals."""
    if name.startswith("[") and name.endswith("]"):
        name = name[1:-1]
        if ":" not in name:
            return False
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def _invalid(message: str) -> ApiError:
    return ApiError(ErrorCode.invalid_request, message)


def quota_keys(entity: EntityPairs) -> Mapping[str, QuotaType] | ApiError:
    """The keys valid for ``entity``, or why the entity is invalid (Kafka's ``validateEntity`` and
    ``configKeysForEntityType``)."""
    if not entity:
        return _invalid("Invalid empty client quota entity")
    seen: dict[str, str | None] = {}
    for entity_type, name in entity:
        if entity_type in seen:
            return _invalid(f"Invalid client quota entity, duplicate entity entry {entity_type}")
        if entity_type not in ENTITY_TYPES:
            return _invalid(f"Unhandled client quota entity type: {entity_type}")
        if name is not None and not name:
            return _invalid(f"Empty {entity_type} not supported")
        seen[entity_type] = name
    if IP in seen:
        if USER in seen or CLIENT_ID in seen:
            # Kafka's message, missing space included.
            return _invalid("Invalid quota entity combination, IP entity shouldnot be combined with User or ClientId")
        ip = seen[IP]
        if ip is not None and not is_ip_literal(ip):
            return _invalid(f"{ip} is not a valid IP or resolvable host.")
        return IP_QUOTAS
    return USER_AND_CLIENT_QUOTAS


def value_error(keys: Mapping[str, QuotaType], key: str, value: float) -> ApiError | None:
    """Why ``value`` cannot be set for ``key``, or None (Kafka's ``validateQuotaKeyValue``)."""
    kind = keys.get(key)
    if kind is None:
        return _invalid(f"Invalid configuration key {key}")
    if not value > 0.0:
        return _invalid(f"Quota {key} must be greater than 0")
    if kind is QuotaType.DOUBLE:
        return None if math.isfinite(value) else _invalid(f"Quota {key} must be a finite number")
    if kind is QuotaType.INT and value > _INT_MAX:
        return _invalid(f"Proposed value for {key} is too large for an INT.")
    if kind is QuotaType.LONG and value > _LONG_MAX:
        return _invalid(f"Proposed value for {key} is too large for a LONG.")
    if abs(math.fmod(value, 1.0)) > 1e-6:
        return _invalid(f"{key} cannot be a fractional value.")
    return None


def _entity_records(
    current: Mapping[str, float], entity: QuotaEntity, keys: Mapping[str, QuotaType], ops: Sequence[QuotaOp]
) -> list[ClientQuotaRecord] | ApiError:
    data = tuple(EntityData(entity_type=t, entity_name=n) for t, n in entity)
    records: list[ClientQuotaRecord] = []
    for op in ops:
        if op.value is None:
            if op.key in current:
                records.append(ClientQuotaRecord(entity=data, key=op.key, value=f64(0.0), remove=True))
            continue
        error = value_error(keys, op.key, op.value)
        if error is not None:
            return error
        if current.get(op.key) != op.value:
            records.append(ClientQuotaRecord(entity=data, key=op.key, value=f64(op.value), remove=False))
    return records


def alter_client_quotas(
    quotas: Mapping[QuotaEntity, Mapping[str, float]], alterations: Sequence[QuotaAlteration]
) -> ControllerResult[list[QuotaAlterationResult]]:
    """The records of every valid entity (to append as one batch), and one result per distinct entity
    in order of first appearance."""
    first: dict[QuotaEntity, QuotaAlteration] = {}
    named_twice: set[QuotaEntity] = set()
    for alteration in alterations:
        key = canonical(alteration.entity)
        if key in first:
            named_twice.add(key)
        else:
            first[key] = alteration

    records: list[ClientQuotaRecord] = []
    results: list[QuotaAlterationResult] = []
    for key, alteration in first.items():
        error: ApiError | None = None
        keys = quota_keys(alteration.entity)
        op_keys = [op.key for op in alteration.ops]
        duplicate_key = next((k for i, k in enumerate(op_keys) if k in op_keys[:i]), None)
        if key in named_twice:
            error = _invalid(f"Ignoring duplicate entity {entity_text(alteration.entity)}")
        elif duplicate_key is not None:
            text = entity_text(alteration.entity)
            error = _invalid(f"Duplicate quota key {duplicate_key} not updating quota for this entity {text}")
        elif isinstance(keys, ApiError):
            error = keys
        else:
            outcome = _entity_records(quotas.get(key, {}), key, keys, alteration.ops)
            if isinstance(outcome, ApiError):
                error = outcome
            else:
                records.extend(outcome)
        results.append(QuotaAlterationResult(alteration.entity, error or NO_ERROR))

    if len(records) > MAX_RECORDS_PER_USER_OP:
        # Kafka's bounded record list overflows: the whole request fails, every entry as sent.
        refused = ApiError(ErrorCode.policy_violation, EXCESSIVELY_LARGE_BATCH)
        return ControllerResult([], [QuotaAlterationResult(a.entity, refused) for a in alterations])
    return ControllerResult(records, results)
