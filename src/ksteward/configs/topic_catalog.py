"""Every topic-level config of Kafka 4.x (``LogConfig``), and the controller's topic config validation.

Kafka 4.0 removed ``message.format.version``, ``message.timestamp.difference.max.ms`` and
``message.downconversion.enable``; KIP-1030 raised ``segment.bytes`` to at least 1 MiB and made
``message.timestamp.after.max.ms`` default to one hour. Keys are in Kafka's definition order, which is
the order values are checked in.

``validate_topic_configs`` is what the controller runs on the resulting override map of a create or
an alter (Kafka's ``LogConfig.validate``): names, then each value, then the cross-field rules::

    >>> validate_topic_configs({"min.compaction.lag.ms": "10", "max.compaction.lag.ms": "5"}).message
    'conflict topic config setting min.compaction.lag.ms (10) > max.compaction.lag.ms (5)'
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

from kio.schema.errors import ErrorCode

from ksteward.protocol.api_error import ApiError

from .catalog import (
    ConfigKey,
    ConfigType,
    InvalidValue,
    LambdaValidator,
    Range,
    ThrottledReplicaList,
    Validator,
    ValidList,
    ValidString,
)

__all__ = ["TOPIC_CONFIGS", "validate_topic_config", "validate_topic_configs"]

BOOLEAN, STRING, INT, LONG, DOUBLE, LIST = (
    ConfigType.BOOLEAN, ConfigType.STRING, ConfigType.INT, ConfigType.LONG, ConfigType.DOUBLE, ConfigType.LIST,
)  # fmt: skip
LONG_MAX: Final = str(2**63 - 1)
COMPRESSION_TYPES: Final = ("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")


def _gzip_level(value: object) -> str | None:
    # Deflater's levels, or -1 for the library default (CompressionType.GZIP.levelValidator)
    assert isinstance(value, int)
    if value > 9 or (value < 1 and value != -1):
        return "Value must be between 1 and 9 or equal to -1"
    return None


GZIP_LEVEL: Final = LambdaValidator(_gzip_level, "[1,...,9] or -1")
_THROTTLED_DOC = (
    "A list of replicas for which log replication should be throttled on the {} side, as "
    "[PartitionId]:[BrokerId],... or the wildcard '*' for all replicas of the topic."
)


def _key(
    name: str, type_: ConfigType, default: str | None, validator: Validator | None, doc: str, *synonyms: str
) -> ConfigKey:
    return ConfigKey(name, type_, default, validator, doc=doc, synonyms=synonyms)


_KEYS: Final = (
    _key("segment.bytes", INT, "1073741824", Range.at_least(1048576),
         "This configuration controls the segment file size for the log.", "log.segment.bytes"),
    _key("segment.ms", LONG, "604800000", Range.at_least(1),
         "This configuration controls the period of time after which Kafka will force the log to roll even if "
         "the segment file isn't full to ensure that retention can delete or compact old data.",
         "log.roll.ms", "log.roll.hours"),
    _key("segment.jitter.ms", LONG, "0", Range.at_least(0),
         "The maximum random jitter subtracted from the scheduled segment roll time to avoid thundering herds "
         "of segment rolling.", "log.roll.jitter.ms", "log.roll.jitter.hours"),
    _key("segment.index.bytes", INT, "10485760", Range.at_least(4),
         "This configuration controls the size of the index that maps offsets to file positions.",
         "log.index.size.max.bytes"),
    _key("flush.messages", LONG, LONG_MAX, Range.at_least(1),
         "This setting allows specifying an interval at which we will force an fsync of data written to the log.",
         "log.flush.interval.messages"),
    _key("flush.ms", LONG, LONG_MAX, Range.at_least(0),
         "This setting allows specifying a time interval at which we will force an fsync of data written to "
         "the log.", "log.flush.interval.ms", "log.flush.scheduler.interval.ms"),
    _key("retention.bytes", LONG, "-1", None,
         "This configuration controls the maximum size a partition (which consists of log segments) can grow "
         "to before we will discard old log segments to free up space if we are using the \"delete\" retention "
         "policy.", "log.retention.bytes"),
    _key("retention.ms", LONG, "604800000", Range.at_least(-1),
         "This configuration controls the maximum time we will retain a log before we will discard old log "
         "segments to free up space if we are using the \"delete\" retention policy.",
         "log.retention.ms", "log.retention.minutes", "log.retention.hours"),
    _key("max.message.bytes", INT, "1048588", Range.at_least(0),
         "The largest record batch size allowed by Kafka (after compression if compression is enabled).",
         "message.max.bytes"),
    _key("index.interval.bytes", INT, "4096", Range.at_least(0),
         "This setting controls how frequently Kafka adds an index entry to its offset index.",
         "log.index.interval.bytes"),
    _key("delete.retention.ms", LONG, "86400000", Range.at_least(0),
         "The amount of time to retain delete tombstone markers for log compacted topics.",
         "log.cleaner.delete.retention.ms"),
    _key("min.compaction.lag.ms", LONG, "0", Range.at_least(0),
         "The minimum time a message will remain uncompacted in the log.", "log.cleaner.min.compaction.lag.ms"),
    _key("max.compaction.lag.ms", LONG, LONG_MAX, Range.at_least(1),
         "The maximum time a message will remain ineligible for compaction in the log.",
         "log.cleaner.max.compaction.lag.ms"),
    _key("file.delete.delay.ms", LONG, "60000", Range.at_least(0),
         "The time to wait before deleting a file from the filesystem.", "log.segment.delete.delay.ms"),
    _key("min.cleanable.dirty.ratio", DOUBLE, "0.5", Range.between(0, 1),
         "This configuration controls how frequently the log compactor will attempt to clean the log "
         "(assuming log compaction is enabled).", "log.cleaner.min.cleanable.ratio"),
    _key("cleanup.policy", LIST, "delete", ValidList(("compact", "delete")),
         "This config designates the retention policy to use on log segments: \"delete\", \"compact\" or both.",
         "log.cleanup.policy"),
    _key("unclean.leader.election.enable", BOOLEAN, "false", None,
         "Indicates whether to enable replicas not in the ISR set to be elected as leader as a last resort, "
         "even though doing so may result in data loss.", "unclean.leader.election.enable"),
    _key("min.insync.replicas", INT, "1", Range.at_least(1),
         "When a producer sets acks to \"all\" (or \"-1\"), this configuration specifies the minimum number of "
         "replicas that must acknowledge a write for the write to be considered successful.",
         "min.insync.replicas"),
    _key("compression.type", STRING, "producer", ValidString(COMPRESSION_TYPES),
         "Specify the final compression type for a given topic.", "compression.type"),
    _key("compression.gzip.level", INT, "-1", GZIP_LEVEL,
         "The compression level to use if compression.type is set to gzip.", "compression.gzip.level"),
    _key("compression.lz4.level", INT, "9", Range.between(1, 17),
         "The compression level to use if compression.type is set to lz4.", "compression.lz4.level"),
    _key("compression.zstd.level", INT, "3", Range.between(-131072, 22),
         "The compression level to use if compression.type is set to zstd.", "compression.zstd.level"),
    _key("preallocate", BOOLEAN, "false", None,
         "True if we should preallocate the file on disk when creating a new log segment.", "log.preallocate"),
    _key("message.timestamp.type", STRING, "CreateTime", ValidString(("CreateTime", "LogAppendTime")),
         "Define whether the timestamp in the message is message create time or log append time.",
         "log.message.timestamp.type"),
    _key("message.timestamp.before.max.ms", LONG, LONG_MAX, Range.at_least(0),
         "This configuration sets the allowable timestamp difference between the broker's timestamp and the "
         "message timestamp.", "log.message.timestamp.before.max.ms"),
    _key("message.timestamp.after.max.ms", LONG, "3600000", Range.at_least(0),
         "This configuration sets the allowable timestamp difference between the message timestamp and the "
         "broker's timestamp.", "log.message.timestamp.after.max.ms"),
    _key("leader.replication.throttled.replicas", LIST, "", ThrottledReplicaList(), _THROTTLED_DOC.format("leader")),
    _key("follower.replication.throttled.replicas", LIST, "", ThrottledReplicaList(),
         _THROTTLED_DOC.format("follower")),
    _key("remote.storage.enable", BOOLEAN, "false", None,
         "To enable tiered storage for a topic, set this configuration to true."),
    _key("local.retention.ms", LONG, "-2", Range.at_least(-2),
         "The number of milliseconds to keep the local log segment before it gets deleted; -2 means the "
         "retention.ms value is used.", "log.local.retention.ms"),
    _key("local.retention.bytes", LONG, "-2", Range.at_least(-2),
         "The maximum size of local log segments that can grow for a partition before it deletes the old "
         "segments; -2 means the retention.bytes value is used.", "log.local.retention.bytes"),
    _key("remote.log.copy.disable", BOOLEAN, "false", None,
         "Determines whether tiered data for a topic should become read only, and no more data uploading on a "
         "topic."),
    _key("remote.log.delete.on.disable", BOOLEAN, "false", None,
         "Determines whether tiered data for a topic should be deleted after tiered storage is disabled on a "
         "topic."),
)  # fmt: skip

TOPIC_CONFIGS: Final[Mapping[str, ConfigKey]] = MappingProxyType({k.name: k for k in _KEYS})
"""Every topic config by name, in Kafka's definition order."""

_DISABLE_REMOTE = (
    "It is invalid to disable remote storage without deleting remote data. If you want to keep the remote data "
    "and turn to read only, please set `remote.storage.enable=true,remote.log.copy.disable=true`. If you want to "
    "disable remote storage and delete all remote data, please set "
    "`remote.storage.enable=false,remote.log.delete.on.disable=true`."
)
_COPY_DISABLED = (
    "When `remote.log.copy.disable` is set to true, the `local.retention.{unit}` and `retention.{unit}` must be "
    "set to the identical value because there will be no more logs copied to the remote storage."
)


def validate_topic_config(name: str, value: str) -> ApiError | None:
    """One key: INVALID_CONFIG ``Unknown topic config name: X`` or Kafka's invalid-value message."""
    key = TOPIC_CONFIGS.get(name)
    if key is None:
        return ApiError(ErrorCode.invalid_config, f"Unknown topic config name: {name}")
    return key.check(value)


def validate_topic_configs(
    configs: Mapping[str, str | None],
    *,
    log_defaults: Mapping[str, str] | None = None,
    existing: Mapping[str, str] | None = None,
    remote_storage_system_enabled: bool = False,
) -> ApiError | None:
    """The controller's check of a topic's resulting override map (``LogConfig.validate``), first failure wins.

    ``log_defaults`` are the node's inherited values by topic key (``ConfigResolver.topic_log_defaults``),
    over which ``configs`` is laid for the value and cross-field checks; ``existing`` is the topic's
    stored overrides before the change (for turning remote storage off). All failures are INVALID_CONFIG."""
    nulls = [name for name, value in configs.items() if value is None]
    if nulls:
        return ApiError(ErrorCode.invalid_config, "Null value not supported for topic configs: " + ",".join(nulls))
    for name in configs:
        if name not in TOPIC_CONFIGS:
            return ApiError(ErrorCode.invalid_config, f"Unknown topic config name: {name}")
    defaults = log_defaults or {}
    parsed: dict[str, object] = {}
    try:
        for name, key in TOPIC_CONFIGS.items():
            raw = configs.get(name)
            if raw is not None:
                parsed[name] = _parse(name, raw)
                continue
            try:
                parsed[name] = _parse(name, defaults.get(name, key.default) or "")
            except InvalidValue:  # a bad inherited value is not the topic's fault
                parsed[name] = _parse(name, key.default or "")
        _check_cross_field(parsed, existing or {}, remote_storage_system_enabled)
    except InvalidValue as e:
        return ApiError(ErrorCode.invalid_config, e.message)
    except _CrossFieldError as e:
        return ApiError(ErrorCode.invalid_config, str(e))
    return None


@functools.lru_cache(maxsize=4096)
def _parse(name: str, raw: str) -> object:
    """A topic value parsed and validated; cached, as a thousand topics share most values (read-only use)."""
    return TOPIC_CONFIGS[name].parse(raw)


class _CrossFieldError(Exception):
    """A rule between keys, with a message that is not in the ``Invalid value`` form."""


def _check_cross_field(values: Mapping[str, object], existing: Mapping[str, str], system_enabled: bool) -> None:
    min_lag, max_lag = values["min.compaction.lag.ms"], values["max.compaction.lag.ms"]
    assert isinstance(min_lag, int) and isinstance(max_lag, int)
    if min_lag > max_lag:
        raise _CrossFieldError(
            f"conflict topic config setting min.compaction.lag.ms ({min_lag}) > max.compaction.lag.ms ({max_lag})"
        )
    if not values["remote.storage.enable"]:
        # Boolean.parseBoolean: exactly "true", ignoring case, without trimming
        if (
            existing.get("remote.storage.enable", "false").lower() == "true"
            and not values["remote.log.delete.on.disable"]
        ):
            raise _CrossFieldError(_DISABLE_REMOTE)
        return
    if not system_enabled:
        raise _CrossFieldError(
            "Tiered Storage functionality is disabled in the broker. "
            "Topic cannot be configured with remote log storage."
        )
    policy = values["cleanup.policy"]
    assert isinstance(policy, list)
    if "compact" in str(policy).lower():
        raise _CrossFieldError("Remote log storage is unsupported for the compacted topics")
    for unit, unlimited in (("bytes", -1), ("ms", -1)):
        total, local = values[f"retention.{unit}"], values[f"local.retention.{unit}"]
        assert isinstance(total, int) and isinstance(local, int)
        # retention.bytes > -1 (any negative size is unlimited); retention.ms != -1 (Range forbids below -1)
        limited = total > unlimited if unit == "bytes" else total != unlimited
        if limited and local != -2:
            if local == -1:
                rule = f"Value must not be -1 as retention.{unit} value is set as {total}."
                raise InvalidValue(f"local.retention.{unit}", "-1", rule)
            if local > total:
                raise InvalidValue(
                    f"local.retention.{unit}",
                    str(local),
                    f"Value must not be more than retention.{unit} property value: {total}",
                )
    if values["remote.log.copy.disable"]:
        for unit in ("bytes", "ms"):
            if values[f"local.retention.{unit}"] not in (-2, values[f"retention.{unit}"]):
                raise _CrossFieldError(_COPY_DISABLED.format(unit=unit))
