"""AlterConfigs and IncrementalAlterConfigs applied to one resource's stored overrides (Kafka's
``ConfigurationControlManager``; docs/topics-and-configs.md, "Config alter path").

Pure functions: the stored dynamic configs of one resource (a TOPIC's overrides, or BROKER ``"<id>"``
or ``""``) and the request's entries in, the new full set of overrides and the records to write out::

    >>> result = apply_incremental(
    ...     ConfigResourceType.TOPIC, {}, [AlterConfigOp("cleanup.policy", AlterConfigOpType.APPEND, "compact")]
    ... )
    >>> dict(result.configs)
    {'cleanup.policy': 'delete,compact'}
    >>> result.changes
    (ConfigChange(name='cleanup.policy', value='delete,compact', implicit=False),)

Each :class:`ConfigChange` is one ConfigRecord (value None: delete). As Kafka does, a TOPIC change
that leaves a value as it was writes nothing, while a BROKER resource rewrites every key the request
names (KAFKA-14136). Values are not validated here: the caller runs ``validate_topic_configs`` or
``validate_broker_configs`` on :attr:`AlterResult.configs`.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType

from kio.schema.errors import ErrorCode

from ksteward.protocol.api_error import ApiError

from .broker_catalog import BROKER_CONFIGS
from .catalog import HIDDEN, ConfigKey, ConfigResourceType, java_split
from .client_metrics_catalog import CLIENT_METRICS_CONFIGS
from .group_catalog import GROUP_CONFIGS
from .sensitive import is_sensitive, loggable_configs
from .topic_catalog import TOPIC_CONFIGS

__all__ = [
    "AlterConfigOp",
    "AlterConfigOpType",
    "AlterResult",
    "ConfigChange",
    "apply_incremental",
    "apply_legacy",
    "check_incremental_request",
    "check_legacy_request",
]

_SCHEMAS: dict[ConfigResourceType, Mapping[str, ConfigKey]] = {
    ConfigResourceType.TOPIC: TOPIC_CONFIGS,
    ConfigResourceType.BROKER: BROKER_CONFIGS,
    ConfigResourceType.GROUP: GROUP_CONFIGS,
    ConfigResourceType.CLIENT_METRICS: CLIENT_METRICS_CONFIGS,
}

# Errors.UNKNOWN_SERVER_ERROR's default message: Kafka sends no detail with this code.
_UNKNOWN_SERVER_ERROR = "The server experienced an unexpected error when processing the request."


class AlterConfigOpType(enum.IntEnum):
    """IncrementalAlterConfigs ``ConfigOperation`` (Kafka's ``AlterConfigOp.OpType``)."""

    SET = 0
    DELETE = 1
    APPEND = 2
    SUBTRACT = 3


@dataclass(frozen=True, slots=True)
class AlterConfigOp:
    """One IncrementalAlterConfigs entry. ``op`` is the wire id; an id outside the enum is refused."""

    name: str
    op: int
    value: str | None = field(default=None, repr=False)


@dataclass(frozen=True, slots=True)
class ConfigChange:
    """One ConfigRecord to write. ``implicit``: a legacy AlterConfigs deletion of a key the request did
    not name (the AlterConfigPolicy does not see those, KAFKA-14195). ``sensitive``: the value is a
    secret, kept out of ``repr``."""

    name: str
    value: str | None
    implicit: bool = False
    sensitive: bool = False

    def __repr__(self) -> str:
        value = HIDDEN if self.sensitive and self.value is not None else self.value
        return f"ConfigChange(name={self.name!r}, value={value!r}, implicit={self.implicit})"


@dataclass(frozen=True, slots=True)
class AlterResult:
    resource_type: ConfigResourceType
    configs: Mapping[str, str]
    """The resource's full set of overrides after the change."""
    changes: tuple[ConfigChange, ...]
    """The records to write, in request order, then legacy implicit deletions."""

    @property
    def policy_configs(self) -> dict[str, str | None]:
        """What the AlterConfigPolicy sees (KIP-133, KAFKA-14195): the keys the request changed, None for a deletion."""
        return {c.name: c.value for c in self.changes if not c.implicit}

    def __repr__(self) -> str:
        shown = loggable_configs(self.resource_type, self.configs)
        return f"AlterResult(resource_type={self.resource_type.name}, configs={shown!r}, changes={self.changes!r})"


def _change(resource_type: ConfigResourceType, name: str, value: str | None, implicit: bool = False) -> ConfigChange:
    return ConfigChange(name, value, implicit, is_sensitive(resource_type, name))


def _invalid_request(message: str) -> ApiError:
    return ApiError(ErrorCode.invalid_request, message)


def _duplicates(names: Sequence[str]) -> bool:
    return len(set(names)) != len(names)


def check_incremental_request(ops: Sequence[AlterConfigOp]) -> ApiError | None:
    """The broker's first checks of one IncrementalAlterConfigs resource: a key named twice, a null
    value for an operation other than DELETE, an unknown operation id. All INVALID_REQUEST."""
    if _duplicates([op.name for op in ops]):
        return _invalid_request("Error due to duplicate config keys")
    nulls = [op.name for op in ops if op.op != AlterConfigOpType.DELETE and op.value is None]
    if nulls:
        return _invalid_request("Null value not supported for : " + ", ".join(nulls))
    for op in ops:
        if op.op not in AlterConfigOpType.__members__.values():
            return _invalid_request(f"Unknown operations type {op.op}")
    return None


def check_legacy_request(configs: Sequence[tuple[str, str | None]]) -> ApiError | None:
    """The broker's first checks of one AlterConfigs resource: a key named twice, a null value."""
    if _duplicates([name for name, _ in configs]):
        return _invalid_request("Error due to duplicate config keys")
    nulls = [name for name, value in configs if value is None]
    if nulls:
        return _invalid_request("Null value not supported for : " + ", ".join(nulls))
    return None


def _schema(resource_type: ConfigResourceType) -> Mapping[str, ConfigKey]:
    """The keys the controller can split into lists (``KafkaConfigSchema``: the BROKER, TOPIC, GROUP and
    CLIENT_METRICS ConfigDefs; ``metrics`` and ``match`` are a subscription's LIST keys)."""
    return _SCHEMAS.get(resource_type, {})


def apply_incremental(
    resource_type: ConfigResourceType,
    current: Mapping[str, str],
    ops: Sequence[AlterConfigOp],
    *,
    broker_preprocess: bool = False,
) -> AlterResult | ApiError:
    """Apply SET, DELETE, APPEND and SUBTRACT to the stored overrides ``current`` of one resource.

    * SET stores the value; DELETE removes the key (its value is ignored, KAFKA-13490; an absent key
      is fine).
    * APPEND and SUBTRACT work on LIST keys only. The base is the stored value, else the key's built-in
      default for that resource type (``cleanup.policy`` -> ``delete``, never the broker's
      ``log.cleanup.policy``), split on commas with empty items dropped. APPEND adds each item not there
      yet; SUBTRACT removes the first occurrence of each item and ignores missing ones; the result may be
      the empty string, which is stored (it is not a deletion).

    On a key that is not LIST-typed (or unknown) the whole resource fails with INVALID_CONFIG ``Can't
    APPEND to key X because its type is not LIST.``, the controller's message. With
    ``broker_preprocess=True`` a BROKER resource fails as a broker's preprocessing does instead: INVALID_CONFIG
    ``Config value append is not allowed for config key: X``, or UNKNOWN_SERVER_ERROR for an unknown key.
    Run :func:`check_incremental_request` first: this function expects one operation per key."""
    schema = _schema(resource_type)
    configs = dict(current)
    changes: list[ConfigChange] = []
    for op in ops:
        old = current.get(op.name)
        new: str | None
        if op.op == AlterConfigOpType.SET:
            new = op.value
        elif op.op == AlterConfigOpType.DELETE:
            new = None
        else:
            kind = AlterConfigOpType(op.op)
            key = schema.get(op.name)
            if broker_preprocess and resource_type is ConfigResourceType.BROKER:
                if key is None:  # upstream quirk: a map lookup throws
                    return ApiError(ErrorCode.unknown_server_error, _UNKNOWN_SERVER_ERROR)
                if not key.is_list:
                    return ApiError(
                        ErrorCode.invalid_config,
                        f"Config value {kind.name.lower()} is not allowed for config key: {op.name}",
                    )
            if key is None or not key.is_list:
                return ApiError(
                    ErrorCode.invalid_config, f"Can't {kind.name} to key {op.name} because its type is not LIST."
                )
            base = old if old is not None else key.default
            items = [item for item in java_split(base) if item] if base is not None else []
            for item in java_split(op.value or ""):
                if kind is AlterConfigOpType.APPEND and item not in items:
                    items.append(item)
                elif kind is AlterConfigOpType.SUBTRACT and item in items:
                    items.remove(item)
            new = ",".join(items)
        if new != old or resource_type is ConfigResourceType.BROKER:
            changes.append(_change(resource_type, op.name, new))
        if new is None:
            configs.pop(op.name, None)
        else:
            configs[op.name] = new
    return AlterResult(resource_type, MappingProxyType(configs), tuple(changes))


def apply_legacy(
    resource_type: ConfigResourceType, current: Mapping[str, str], configs: Mapping[str, str | None]
) -> AlterResult:
    """AlterConfigs: ``configs`` replaces the resource's whole set. Keys it does not name are deleted
    (implicit changes); a key whose value is unchanged writes nothing, except on a BROKER resource,
    where every named key is rewritten. A None value (only a controller ever sees one) deletes."""
    changes = [
        _change(resource_type, name, value)
        for name, value in configs.items()
        if value != current.get(name) or resource_type is ConfigResourceType.BROKER
    ]
    changes += [_change(resource_type, name, None, implicit=True) for name in current if name not in configs]
    result = {name: value for name, value in configs.items() if value is not None}
    return AlterResult(resource_type, MappingProxyType(result), tuple(changes))
