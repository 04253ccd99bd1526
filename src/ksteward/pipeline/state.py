"""The ACLs, topics, configs and quotas as they were at a metadata offset or time, rebuilt from the records.

    records, _ = read_metadata(spark, data_dir)
    state = state_at(records, timestamp=datetime(2025, 1, 31, tzinfo=UTC))
    state.acls.where("principal = 'User:alice'").show()

Semantics (the same as the controller's start-up, ``metadata.loader``): the state at target offset ``T``
is the newest snapshot whose last contained offset is <= ``T`` (a snapshot is a full state), plus the log
records after it up to and including ``T``; with no such snapshot, the log from offset 0. A ``timestamp``
target is the last record whose batch timestamp is <= it (a snapshot counts with its header's
``lastContainedLogTimestamp``). ``None`` means the latest. Records of a metadata transaction
(Begin/EndTransactionRecord) count only once it has ended; an aborted one, or one still open at ``T``, is
left out, as Kafka does. Each table is then "the last record per key by offset" (``max_by``), all in
DataFrame operations: nothing is replayed record by record on the driver. The driver only runs one small
aggregation to choose ``T`` and the snapshot, and raises :class:`StateUnavailableError` when the target
predates everything that can be rebuilt (no snapshot at or before it and the log no longer starts at 0, or
a gap between the snapshot and the log), or an offset is past the end of the log (the message names the
last offset). When ``read_metadata`` found damage in the middle of the log (``readers.metadata.LogDamage``:
a corrupt batch, missing offsets), a state at or after the damaged offset (the latest state always) is a
:class:`PartialLogError` unless the read allowed partial logs; then it is rebuilt from what could be read,
with a warning.

Schemas of :class:`State` (enum columns hold ``ksteward.authorizer.enums`` names):

- ``acls``: ``ACL_SCHEMA`` (acl_id is Kafka's 22-character text of the record's Uuid, as the audit log's
  ``data.ksteward.acl.id``).
- ``topics``: ``name`` string, ``topic_id`` string (Kafka's uuid text), ``partitions`` int,
  ``replication_factor`` int (the most replicas any partition has; 0 without partitions).
- ``configs``: ``resource_type`` string (``TOPIC``, ``BROKER``, ``BROKER_LOGGER``, ``CLIENT_METRICS``,
  ``GROUP``), ``resource_name`` string (``""`` is the cluster-wide default broker), ``name`` string, ``value``
  string: ``[hidden]`` for a sensitive key, as ``read_metadata`` hid it when it decoded the record (with the
  server's rule, ``configs.sensitive``). A topic's configs go with the topic.
- ``quotas``: ``entity`` map<string,string> (entity type -> name; a null name is the default entity),
  ``key`` string (``producer_byte_rate``), ``value`` double.
"""

from __future__ import annotations

import datetime
import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, NamedTuple

from ksteward.authorizer import AclOperation, AclPermissionType, PatternType, ResourceType
from ksteward.configs.catalog import ConfigResourceType
from ksteward.pipeline.readers import InputError, conform

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

__all__ = [
    "TABLES",
    "PartialLogError",
    "State",
    "StateUnavailableError",
    "Target",
    "resolve_target",
    "starting_point",
    "state_at",
    "state_for",
]

LOG = logging.getLogger(__name__)

TABLES = ("acls", "topics", "configs", "quotas")


class State(NamedTuple):
    """The four tables of a state (schemas in the module docstring)."""

    acls: DataFrame
    topics: DataFrame
    configs: DataFrame
    quotas: DataFrame


class Target(NamedTuple):
    """Where a state is taken: ``offset`` is the last offset included (-1: before any record);
    ``snapshot_offset`` the snapshot it starts from (its last contained offset), None for the log from 0;
    ``snapshot_file`` that snapshot's file."""

    offset: int
    snapshot_offset: int | None
    snapshot_file: str | None


class _Snapshot(NamedTuple):
    offset: int
    source_file: str


class StateUnavailableError(InputError):
    """The records cannot rebuild the state at the target: it predates the oldest usable snapshot, or it is
    past the end of the log."""


class PartialLogError(InputError):
    """The state at the target would miss records: the log is damaged at or before it (``--allow-partial``)."""


def state_at(records: DataFrame, *, offset: int | None = None, timestamp: datetime.datetime | None = None) -> State:
    """The state as of metadata ``offset`` (inclusive) or batch ``timestamp``; the latest when both are None.

    ``records`` is ``METADATA_RECORD_SCHEMA`` (``readers.read_metadata``). Raises StateUnavailableError.
    """
    return state_for(records, resolve_target(records, offset=offset, timestamp=timestamp))


def resolve_target(
    records: DataFrame, *, offset: int | None = None, timestamp: datetime.datetime | None = None
) -> Target:
    """Choose the target offset and the snapshot to start from (one small aggregation)."""
    from pyspark.sql import functions as F

    if offset is not None and timestamp is not None:
        raise ValueError("give an offset or a timestamp, not both")
    if offset is not None and offset < 0:
        raise StateUnavailableError(f"offset {offset}: offsets start at 0")
    if timestamp is not None and timestamp.tzinfo is None:
        timestamp = timestamp.replace(tzinfo=datetime.UTC)
    # One job: a row per snapshot (its offset, file and header time) and one row (key null) for the log.
    is_snapshot = F.col("source_kind") == "snapshot"
    log_start_expr = F.regexp_extract(F.col("source_file"), r"(\d{20})\.log$", 1).try_cast("long")
    in_time = F.col("batch_timestamp") <= F.lit(timestamp) if timestamp is not None else F.lit(True)
    summary = (
        records.groupBy(F.when(is_snapshot, F.struct("offset", "source_file")).alias("snapshot"))
        .agg(
            F.max("offset").alias("last"),
            F.max(F.when(in_time, F.col("offset"))).alias("last_in_time"),
            F.min(F.when(~is_snapshot, log_start_expr)).alias("log_start"),
        )
        .collect()
    )
    snapshots = [_Snapshot(r.snapshot.offset, r.snapshot.source_file) for r in summary if r.snapshot]
    log = next((r for r in summary if r.snapshot is None), None)
    log_last, log_start = (log.last, log.log_start) if log else (None, None)
    in_time_offsets = [r.last_in_time for r in summary if r.last_in_time is not None]

    latest = max([s.offset for s in snapshots] + ([log_last] if log_last is not None else []), default=-1)
    if offset is not None:
        target = offset
    elif timestamp is not None:
        if not in_time_offsets:
            raise StateUnavailableError(f"no metadata record at or before {timestamp.isoformat()}")
        target = max(in_time_offsets)
    else:
        target = latest

    _check_whole_log(records, target, offset, timestamp, latest)
    return starting_point([(s.offset, s.source_file) for s in snapshots], target, log_start)


def starting_point(snapshots: Sequence[tuple[int, str]], target: int, log_start: int | None) -> Target:
    """Where the state at offset ``target`` starts: the newest of the ``snapshots`` ((last contained offset, file))
    at or before it, else the log from 0, whose first segment starts at ``log_start`` (None: no segment). Raises
    StateUnavailableError when those records cannot rebuild it. (``local_state`` shares this rule.)"""
    usable = sorted(((o, f) for o, f in snapshots if o <= target), reverse=True)
    snapshot_offset, snapshot_file = usable[0] if usable else (None, None)
    first_needed = 0 if snapshot_offset is None else snapshot_offset + 1
    if target >= first_needed and log_start is not None and log_start > first_needed:
        oldest = min((o for o, _ in snapshots), default=None)
        held = f"the oldest snapshot holds offset {oldest}" if oldest is not None else "there is no snapshot"
        raise StateUnavailableError(
            f"cannot rebuild the state at offset {target}: {held} and the log starts at offset {log_start}"
        )
    if target >= 0 and snapshot_offset is None and log_start is None and snapshots:
        raise StateUnavailableError(
            f"cannot rebuild the state at offset {target}: it predates the oldest snapshot "
            f"(offset {min(o for o, _ in snapshots)}) and there is no log"
        )
    return Target(target, snapshot_offset, snapshot_file)


def _check_whole_log(
    records: DataFrame, target: int, offset: int | None, timestamp: datetime.datetime | None, latest: int
) -> None:
    """``--at`` past the end of the log, and a target beyond damage in the middle of it (``read_metadata``'s
    ``LogSummary``; ``latest``, the last offset the records hold, stands in for frames it did not return)."""
    from ksteward.pipeline.readers.metadata import log_summary

    summary = log_summary(records)
    end = summary.last_offset if summary is not None else latest
    if offset is not None and offset > end:
        held = f"its last offset is {end}" if end >= 0 else "it holds no batch"
        raise StateUnavailableError(f"offset {offset} is past the end of the metadata log: {held}")
    if summary is None or summary.damage is None:
        return
    damage = summary.damage
    # A time target may lie in the lost records too when no readable record falls between it and them.
    lost = (offset is None and timestamp is None) or target >= damage.offset - (0 if timestamp is None else 1)
    if not lost:
        return
    what = f"the metadata log is damaged from offset {damage.offset} ({damage.what})"
    if not summary.allow_partial:
        whole = f"; the state at offset {damage.offset - 1} or earlier is whole" if damage.offset > 0 else ""
        raise PartialLogError(f"{what}: the state at offset {target} would miss records{whole} (--allow-partial: "
                              "use what can be read)")  # fmt: skip
    LOG.warning("%s: the state at offset %d is rebuilt from what can be read, and may miss records", what, target)


def state_for(records: DataFrame, target: Target) -> State:
    """The state at a resolved ``target`` (see ``resolve_target``)."""
    from pyspark.sql import functions as F

    kind, off = F.col("source_kind"), F.col("offset")
    if target.snapshot_file is not None:
        from_snapshot = (kind == "snapshot") & (F.col("source_file") == target.snapshot_file)
        after = target.snapshot_offset
    else:
        from_snapshot = F.lit(False)
        after = -1
    from_log = (kind == "segment") & (off > F.lit(after)) & (off <= F.lit(target.offset))
    applied = _without_unfinished_transactions(records.where(from_snapshot | from_log))
    return State(_acls(applied), _topics(applied), _configs(applied), _quotas(applied))


# --- the tables ----------------------------------------------------------------------------------


def _without_unfinished_transactions(records: DataFrame) -> DataFrame:
    """Leave out records of aborted metadata transactions and of one still open at the end of ``records``."""
    from pyspark.sql import functions as F

    markers = records.where(
        F.col("record_type").isin("BeginTransactionRecord", "EndTransactionRecord", "AbortTransactionRecord")
    ).select("offset", "record_type")
    begins = markers.where(F.col("record_type") == "BeginTransactionRecord").select(F.col("offset").alias("lo"))
    ends = markers.where(F.col("record_type") != "BeginTransactionRecord").select(
        F.col("offset").alias("end"), F.col("record_type").alias("end_type")
    )
    # Each Begin with the first End/Abort after it (none: still open). Markers are few: a broadcast join.
    spans = (
        begins.join(F.broadcast(ends), F.col("end") > F.col("lo"), "left")
        .groupBy("lo")
        .agg(F.min("end").alias("hi"), F.min_by("end_type", "end").alias("end_type"))
        .where(F.col("hi").isNull() | (F.col("end_type") == "AbortTransactionRecord"))
        .select("lo", F.coalesce("hi", F.lit(2**62)).alias("hi"))
    )
    inside = (F.col("offset") >= F.col("lo")) & (F.col("offset") <= F.col("hi"))
    return records.join(F.broadcast(spans), inside, "left_anti")


def _payload(records: DataFrame, record_types: tuple[str, ...], data_schema: str) -> DataFrame:
    """``offset``, ``record_type`` and the parsed ``data`` of the records of the given types."""
    from pyspark.sql import functions as F

    return records.where(F.col("record_type").isin(*record_types)).select(
        "offset", "record_type", F.from_json("payload", f"struct<data: struct<{data_schema}>>").data.alias("data")
    )


def _enum_name(enum: type[ResourceType | PatternType | AclOperation | AclPermissionType], code: Column) -> Column:
    from pyspark.sql import functions as F

    names = F.create_map(*[F.lit(x) for member in enum for x in (int(member), member.name)])
    return F.coalesce(F.try_element_at(names, code), F.lit("UNKNOWN"))


def _latest(frame: DataFrame, keys: list[str | Column], *columns: str) -> DataFrame:
    """Per key, the named columns of the row with the highest offset."""
    from pyspark.sql import functions as F

    latest = F.max_by(F.struct(*columns), F.col("offset")).alias("latest")
    return frame.groupBy(*keys).agg(latest).select(*[F.col(f"latest.{c}").alias(c) for c in columns])


def _acls(records: DataFrame) -> DataFrame:
    from pyspark.sql import functions as F

    from ksteward.pipeline.schemas import ACL_SCHEMA

    rows = _payload(
        records, ("AccessControlEntryRecord", "RemoveAccessControlEntryRecord"),
        "id: string, resourceType: int, resourceName: string, patternType: int, principal: string, "
        "host: string, operation: int, permissionType: int",
    ).select("offset", "record_type", "data.*")  # fmt: skip
    live = _latest(rows, ["id"], "record_type", *[c for c in rows.columns if c not in ("offset", "record_type")])
    acls = live.where(F.col("record_type") == "AccessControlEntryRecord").select(
        F.col("id").alias("acl_id"),
        _enum_name(ResourceType, F.col("resourceType")).alias("resource_type"),
        F.col("resourceName").alias("resource_name"),
        _enum_name(PatternType, F.col("patternType")).alias("pattern_type"),
        "principal",
        "host",
        _enum_name(AclOperation, F.col("operation")).alias("operation"),
        _enum_name(AclPermissionType, F.col("permissionType")).alias("permission_type"),
    )
    return conform(acls, ACL_SCHEMA)


def _topics(records: DataFrame) -> DataFrame:
    from pyspark.sql import functions as F

    topics = _payload(records, ("TopicRecord", "RemoveTopicRecord"), "name: string, topicId: string")
    live = _latest(topics.select("offset", "record_type", "data.*"), ["topicId"], "record_type", "name", "topicId")
    live = live.where(F.col("record_type") == "TopicRecord")
    partitions = _payload(
        records, ("PartitionRecord", "PartitionChangeRecord"), "topicId: string, partitionId: int, replicas: array<int>"
    ).where(F.col("data.replicas").isNotNull())
    per_partition = partitions.groupBy("data.topicId", "data.partitionId").agg(
        F.max_by("data.replicas", "offset").alias("replicas"),
        F.max(F.col("record_type") == "PartitionRecord").alias("created"),
    )
    per_topic = (
        per_partition.where("created")
        .groupBy("topicId")
        .agg(F.count("*").cast("int").alias("partitions"), F.max(F.size("replicas")).cast("int").alias("rf"))
    )
    return live.join(per_topic, "topicId", "left").select(
        "name",
        F.col("topicId").alias("topic_id"),
        F.coalesce("partitions", F.lit(0)).alias("partitions"),
        F.coalesce("rf", F.lit(0)).alias("replication_factor"),
    )


def _configs(records: DataFrame) -> DataFrame:
    from pyspark.sql import functions as F

    rows = _payload(
        records, ("ConfigRecord",), "resourceType: int, resourceName: string, name: string, value: string"
    ).select("offset", "data.*")
    latest = _latest(rows, ["resourceType", "resourceName", "name"], "offset", "resourceType", "resourceName",
                     "name", "value")  # fmt: skip
    # RemoveTopicRecord drops the topic's configs: find each removed name's last removal.
    names = _payload(records, ("TopicRecord",), "name: string, topicId: string").select("data.*")
    removals = (
        _payload(records, ("RemoveTopicRecord",), "topicId: string")
        .select("offset", "data.topicId")
        .join(names, "topicId")
        .groupBy(F.col("name").alias("removed_name"))
        .agg(F.max("offset").alias("removed_at"))
    )
    topic = int(ConfigResourceType.TOPIC)
    cleared = (F.col("resourceType") == topic) & (F.col("offset") < F.col("removed_at"))
    kept = latest.join(removals, latest.resourceName == removals.removed_name, "left").where(
        F.col("value").isNotNull() & ~F.coalesce(cleared, F.lit(False))
    )
    types = F.create_map(*[F.lit(x) for m in ConfigResourceType for x in (int(m), m.name)])
    return kept.select(
        F.coalesce(F.try_element_at(types, F.col("resourceType")), F.lit("UNKNOWN")).alias("resource_type"),
        F.col("resourceName").alias("resource_name"),
        "name",
        "value",  # secrets were hidden by the reader, on the executors, before any row existed
    )


def _quotas(records: DataFrame) -> DataFrame:
    from pyspark.sql import functions as F

    rows = _payload(
        records,
        ("ClientQuotaRecord",),
        "entity: array<struct<entityType: string, entityName: string>>, key: string, value: double, remove: boolean",
    ).select("offset", F.array_sort("data.entity").alias("entity"), "data.key", "data.value", "data.remove")
    latest = _latest(rows, ["entity", "key"], "entity", "key", "value", "remove")
    return latest.where(~F.coalesce("remove", F.lit(False))).select(
        F.map_from_entries("entity").alias("entity"), "key", "value"
    )
