"""GROUP config resources: Kafka 4.1's ``GroupConfig`` keys, their broker-level defaults and bounds, the
controller's validation and the DescribeConfigs entries (docs/topics-and-configs.md, "Group configs").

A group's stored overrides are checked laid over the broker's defaults (``GroupCoordinatorConfig
.extractGroupConfigMap``), first failure wins, every failure INVALID_CONFIG: names (``Unknown group config
name: X``), then each value's type and ConfigDef rule, then the broker's bounds (``GroupConfig.validateValues``:
``consumer.session.timeout.ms must be less than or equal to group.consumer.max.session.timeout.ms``), then each
session timeout above its heartbeat interval. The broker side is this node's ``server.properties``
(the ``group.*`` keys are not dynamic in Kafka)::

    >>> settings = GroupBrokerSettings.from_static({"group.consumer.max.session.timeout.ms": "50000"})
    >>> validate_group_configs({"consumer.session.timeout.ms": "55000"}, settings).message
    'consumer.session.timeout.ms must be less than or equal to group.consumer.max.session.timeout.ms'
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final

from kio.schema.errors import ErrorCode

from ksteward.protocol.api_error import ApiError

from .catalog import ConfigKey, ConfigType, Importance, InvalidValue, LambdaValidator, Range, Validator, ValidString

__all__ = [
    "GROUP_BROKER_DEFAULTS",
    "GROUP_CONFIGS",
    "GroupBrokerSettings",
    "validate_group_configs",
]

_INT, _STRING = ConfigType.INT, ConfigType.STRING
_MEDIUM = Importance.MEDIUM

# ShareGroupAutoOffsetResetStrategy: earliest, latest or by_duration:<ISO-8601 duration> (KIP-1106), any case.
_DURATION = re.compile(
    r"([-+]?)P(?:([-+]?[0-9]+)D)?"
    r"(T(?:([-+]?[0-9]+)H)?(?:([-+]?[0-9]+)M)?(?:([-+]?[0-9]+)(?:[.,]([0-9]{0,9}))?S)?)?",
    re.IGNORECASE,
)


def _duration_seconds(text: str) -> float | None:
    """Java's ``Duration.parse`` (days, hours, minutes, seconds), in seconds; None where it throws."""
    match = _DURATION.fullmatch(text)
    if match is None:
        return None
    sign, days, time_part, hours, minutes, seconds, fraction = match.groups()
    if days is None and hours is None and minutes is None and seconds is None:
        return None  # "P", "PT": no component
    if time_part is not None and time_part.upper() == "T":
        return None
    total = int(days or 0) * 86400 + int(hours or 0) * 3600 + int(minutes or 0) * 60 + int(seconds or 0)
    if fraction:
        part = int(fraction) / 10 ** len(fraction)
        total += -part if (seconds or "").startswith("-") else part
    return -total if sign == "-" else total


def _auto_offset_reset(value: object) -> str | None:
    assert isinstance(value, str)
    strategy = value.lower()
    if strategy in ("earliest", "latest"):
        return None
    if strategy.startswith("by_duration:"):
        seconds = _duration_seconds(strategy[len("by_duration:") :])
        if seconds is not None and seconds >= 0:
            return None
    return (
        f"Invalid value `{value}` for configuration share.auto.offset.reset. The value must be either 'earliest', "
        "'latest' or of the format 'by_duration:<PnDTnHnMn.nS.>'."
    )


_AUTO_OFFSET_RESET: Final = LambdaValidator(_auto_offset_reset, "[earliest, latest, by_duration:<PnDTnHnMn.nS.>]")


def _key(name: str, type_: ConfigType, default: str, validator: Validator, doc: str) -> ConfigKey:
    return ConfigKey(name, type_, default, validator, _MEDIUM, doc)


# Kafka 4.1's GroupConfig, in definition order. Defaults are GroupConfig's own (the broker's built-in ones).
GROUP_CONFIGS: Final[Mapping[str, ConfigKey]] = MappingProxyType(
    {
        k.name: k
        for k in (
            _key("consumer.session.timeout.ms", _INT, "45000", Range.at_least(1),
                 "The timeout to detect client failures when using the consumer group protocol."),
            _key("consumer.heartbeat.interval.ms", _INT, "5000", Range.at_least(1),
                 "The heartbeat interval given to the members of a consumer group."),
            _key("share.session.timeout.ms", _INT, "45000", Range.at_least(1),
                 "The timeout to detect client failures when using the share group protocol."),
            _key("share.heartbeat.interval.ms", _INT, "5000", Range.at_least(1),
                 "The heartbeat interval given to the members of a share group."),
            _key("share.record.lock.duration.ms", _INT, "30000", Range.at_least(1000),
                 "The record acquisition lock duration in milliseconds for share groups."),
            _key("share.auto.offset.reset", _STRING, "latest", _AUTO_OFFSET_RESET,
                 "The strategy to initialize the share-partition start offset. earliest: automatically reset the "
                 "offset to the earliest offset; latest: automatically reset the offset to the latest offset; "
                 "by_duration:<duration>: automatically reset the offset to a configured duration from the current "
                 "timestamp (an ISO-8601 duration, PnDTnHnMn.nS, not negative)."),
            _key("share.isolation.level", _STRING, "read_uncommitted",
                 ValidString(("read_committed", "read_uncommitted")),
                 "Controls how to read records written transactionally. If set to \"read_committed\", the share "
                 "group will only deliver transactional records which have been committed. If set to "
                 "\"read_uncommitted\", the share group will return all messages, even transactional messages "
                 "which have been aborted. Non-transactional records will be returned unconditionally in either "
                 "mode."),
            _key("streams.session.timeout.ms", _INT, "45000", Range.at_least(1),
                 "The timeout to detect client failures when using the streams group protocol."),
            _key("streams.heartbeat.interval.ms", _INT, "5000", Range.at_least(1),
                 "The heartbeat interval given to the members of a streams group."),
            _key("streams.num.standby.replicas", _INT, "0", Range.at_least(0),
                 "The number of standby replicas for each task."),
        )
    }
)  # fmt: skip

# The broker configs (GroupCoordinatorConfig, ShareGroupConfig) behind the group keys, with Kafka's defaults.
GROUP_BROKER_DEFAULTS: Final[Mapping[str, int]] = MappingProxyType(
    {
        "group.consumer.session.timeout.ms": 45000,
        "group.consumer.min.session.timeout.ms": 45000,
        "group.consumer.max.session.timeout.ms": 60000,
        "group.consumer.heartbeat.interval.ms": 5000,
        "group.consumer.min.heartbeat.interval.ms": 5000,
        "group.consumer.max.heartbeat.interval.ms": 15000,
        "group.share.session.timeout.ms": 45000,
        "group.share.min.session.timeout.ms": 45000,
        "group.share.max.session.timeout.ms": 60000,
        "group.share.heartbeat.interval.ms": 5000,
        "group.share.min.heartbeat.interval.ms": 5000,
        "group.share.max.heartbeat.interval.ms": 15000,
        "group.share.record.lock.duration.ms": 30000,
        "group.share.min.record.lock.duration.ms": 15000,
        "group.share.max.record.lock.duration.ms": 60000,
        "group.streams.session.timeout.ms": 45000,
        "group.streams.min.session.timeout.ms": 45000,
        "group.streams.max.session.timeout.ms": 60000,
        "group.streams.heartbeat.interval.ms": 5000,
        "group.streams.min.heartbeat.interval.ms": 5000,
        "group.streams.max.heartbeat.interval.ms": 15000,
        "group.streams.num.standby.replicas": 0,
        "group.streams.max.standby.replicas": 2,
    }
)

# (group key, broker min key or None, broker max key), in GroupConfig.validateValues' order.
_BOUNDS: Final = (
    ("consumer.heartbeat.interval.ms", "group.consumer.min.heartbeat.interval.ms",
     "group.consumer.max.heartbeat.interval.ms"),
    ("consumer.session.timeout.ms", "group.consumer.min.session.timeout.ms", "group.consumer.max.session.timeout.ms"),
    ("share.heartbeat.interval.ms", "group.share.min.heartbeat.interval.ms", "group.share.max.heartbeat.interval.ms"),
    ("share.session.timeout.ms", "group.share.min.session.timeout.ms", "group.share.max.session.timeout.ms"),
    ("share.record.lock.duration.ms", "group.share.min.record.lock.duration.ms",
     "group.share.max.record.lock.duration.ms"),
    ("streams.heartbeat.interval.ms", "group.streams.min.heartbeat.interval.ms",
     "group.streams.max.heartbeat.interval.ms"),
    ("streams.session.timeout.ms", "group.streams.min.session.timeout.ms", "group.streams.max.session.timeout.ms"),
    ("streams.num.standby.replicas", None, "group.streams.max.standby.replicas"),
)  # fmt: skip
_SESSION_OVER_HEARTBEAT: Final = tuple(
    (f"{kind}.session.timeout.ms", f"{kind}.heartbeat.interval.ms") for kind in ("consumer", "share", "streams")
)


@dataclass(frozen=True, slots=True)
class GroupBrokerSettings:
    """This node's ``group.*`` broker configs: each set in ``server.properties`` (``static``) or Kafka's default."""

    values: Mapping[str, int]
    static: frozenset[str]
    """The broker keys set in ``server.properties`` (their DescribeConfigs synonyms are STATIC_BROKER_CONFIG)."""

    @classmethod
    def from_static(cls, static: Mapping[str, str]) -> GroupBrokerSettings:
        values, given = dict(GROUP_BROKER_DEFAULTS), set()
        for name in GROUP_BROKER_DEFAULTS:
            raw = static.get(name)
            if raw is None:
                continue
            try:
                values[name] = int(raw.strip())
                given.add(name)
            except ValueError:
                continue  # a broker would not have started; fall back as if it were unset
        return cls(MappingProxyType(values), frozenset(given))

    def group_defaults(self) -> dict[str, str]:
        """``extractGroupConfigMap``: every group key's value on a group without overrides."""
        defaults = {name: key.default or "" for name, key in GROUP_CONFIGS.items()}
        for name in defaults:
            broker_key = "group." + name
            if broker_key in self.values:
                defaults[name] = str(self.values[broker_key])
        return defaults


def validate_group_configs(configs: Mapping[str, str], settings: GroupBrokerSettings) -> ApiError | None:
    """Kafka's ``GroupConfig.validate`` of a group's resulting overrides; None when valid, else INVALID_CONFIG."""
    for name in configs:
        if name not in GROUP_CONFIGS:
            return ApiError(ErrorCode.invalid_config, f"Unknown group config name: {name}")
    combined = {**settings.group_defaults(), **configs}
    parsed: dict[str, object] = {}
    for name, key in GROUP_CONFIGS.items():
        try:
            parsed[name] = key.parse(combined[name])
        except InvalidValue as e:
            return ApiError(ErrorCode.invalid_config, e.message)
    bounds = settings.values
    for name, low_key, high_key in _BOUNDS:
        value = parsed[name]
        assert isinstance(value, int)
        if low_key is not None and value < bounds[low_key]:
            return ApiError(ErrorCode.invalid_config, f"{name} must be greater than or equal to {low_key}")
        if value > bounds[high_key]:
            return ApiError(ErrorCode.invalid_config, f"{name} must be less than or equal to {high_key}")
    for session, heartbeat in _SESSION_OVER_HEARTBEAT:
        session_ms, heartbeat_ms = parsed[session], parsed[heartbeat]
        assert isinstance(session_ms, int) and isinstance(heartbeat_ms, int)
        if session_ms <= heartbeat_ms:
            return ApiError(ErrorCode.invalid_config, f"{session} must be greater than {heartbeat}")
    return None
