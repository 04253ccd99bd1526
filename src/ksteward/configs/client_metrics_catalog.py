"""CLIENT_METRICS config resources: KIP-714's subscription keys and their validation (Kafka's
``ClientMetricsConfigs``; docs/topics-and-configs.md, "Client metrics subscriptions").

A subscription is a named CLIENT_METRICS resource with up to three keys: ``metrics`` (metric name prefixes),
``interval.ms`` (the push interval) and ``match`` (``param=regex`` patterns on the client's identity). The
controller checks a subscription's resulting map, first failure wins::

    >>> validate_client_metrics("sub", {"interval.ms": "50"}).message
    'Invalid value 50 for interval.ms, interval must be between 100 and 3600000 (1 hour)'
    >>> validate_client_metrics("sub", {"match": "client_id=("}).message
    'Illegal client matching pattern: client_id=('
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

from kio.schema.errors import ErrorCode

from ksteward.protocol.api_error import ApiError

from .catalog import ConfigKey, ConfigType, Importance, InvalidValue, java_split

__all__ = ["ALLOWED_MATCH_PARAMS", "CLIENT_METRICS_CONFIGS", "validate_client_metrics"]

CLIENT_METRICS_CONFIGS: Final[Mapping[str, ConfigKey]] = MappingProxyType(
    {
        k.name: k
        for k in (
            ConfigKey("metrics", ConfigType.LIST, "", None, Importance.MEDIUM, "Telemetry metric name prefix list"),
            ConfigKey("interval.ms", ConfigType.INT, "300000", None, Importance.MEDIUM,
                      "Metrics push interval in milliseconds"),
            ConfigKey("match", ConfigType.LIST, "", None, Importance.MEDIUM, "Client match criteria"),
        )
    }
)  # fmt: skip

ALLOWED_MATCH_PARAMS: Final = frozenset(
    {
        "client_instance_id",
        "client_id",
        "client_software_name",
        "client_software_version",
        "client_source_address",
        "client_source_port",
    }
)
_MIN_INTERVAL_MS: Final = 100
_MAX_INTERVAL_MS: Final = 3_600_000


def _invalid_request(message: str) -> ApiError:
    return ApiError(ErrorCode.invalid_request, message)


def _match_error(pattern: str) -> ApiError | None:
    """``parseMatchingPatterns`` on one item: ``param=regex`` split on every ``=`` (Java's ``split``, so a second
    ``=`` or an empty regex is illegal), a known param, a regex that compiles. Python's ``re`` stands in for
    ``java.util.regex``; the two agree on the patterns KIP-714 shows (``11.1.*``, ``Java``, ``^producer-``)."""
    illegal = ApiError(ErrorCode.invalid_config, f"Illegal client matching pattern: {pattern}")
    parts = java_split(pattern, "=")
    if len(parts) != 2 or parts[0].strip() not in ALLOWED_MATCH_PARAMS:
        return illegal
    try:
        re.compile(parts[1].strip())
    except re.error:
        return illegal
    return None


def validate_client_metrics(name: str, configs: Mapping[str, str]) -> ApiError | None:
    """Kafka's ``ClientMetricsConfigs.validate`` of a subscription's resulting map: the name is not empty and
    every key is known (INVALID_REQUEST), each value parses (INVALID_CONFIG), ``interval.ms`` is within 100 ms and
    one hour (INVALID_REQUEST), each ``match`` item is a legal pattern (INVALID_CONFIG)."""
    if not name:
        return _invalid_request("Subscription name can't be empty")
    for key in configs:
        if key not in CLIENT_METRICS_CONFIGS:
            return _invalid_request(f"Unknown client metrics configuration: {key}")
    parsed: dict[str, object] = {}
    for key, value in configs.items():
        try:
            parsed[key] = CLIENT_METRICS_CONFIGS[key].parse(value)
        except InvalidValue as e:
            return ApiError(ErrorCode.invalid_config, e.message)
    interval = parsed.get("interval.ms")
    if isinstance(interval, int) and not _MIN_INTERVAL_MS <= interval <= _MAX_INTERVAL_MS:
        return _invalid_request(
            f"Invalid value {interval} for interval.ms, interval must be between 100 and 3600000 (1 hour)"
        )
    patterns = parsed.get("match")
    for pattern in patterns if isinstance(patterns, list) else ():
        error = _match_error(str(pattern))
        if error is not None:
            return error
    return None
