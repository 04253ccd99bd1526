"""Read a KRaft metadata log (segments and ``.checkpoint`` snapshots) into a DataFrame of records.

    records, rejects = read_metadata(spark, "/var/lib/ksteward/data")   # or .../__cluster_metadata-0

``path`` is a ksteward data dir, a real Kafka ``__cluster_metadata-0`` directory (the format is the same),
a directory holding segments directly, or one ``.log`` / ``.checkpoint`` file, on any file system Spark's
readers know: a local path (relative ones resolve against the driver's working directory, as
``spark.read.parquet`` resolves them), ``file://``, ``hdfs://``, ``s3a://`` (with hadoop-aws on the class
path).

**Storage a cluster can see.** The driver lists the directory through Hadoop's ``FileSystem`` (the one Spark's
readers use, with the session's Hadoop configuration) and picks the log's files by name as
``metadata.log_files.log_files`` does (``log_file_names``). The files' bytes are then read by Spark's own
``binaryFile`` source, one file per task, so an executor never opens a path itself: nothing needs a file
system shared between the hosts. Each task decodes its file's bytes with ksteward's own code
(``metadata.log_files.buffer_batches``, ``metadata.records.decode_record``,
``configs.sensitive.redacted_record_json``, ``metadata.snapshot_file.check_snapshot``): the same walk as
``ksteward metadata dump``. ``binaryFile`` holds a whole file in one value, so a file must be under 2 GiB
(Kafka's ``metadata.log.segment.bytes`` is 1 GiB at most by default). Records and rejects come out of the
tasks as one DataFrame, cached (memory and disk, in the JVM), so that ``frame`` and ``rejects`` and every
job after them decode each file once and never go back to Python.

**The log as a whole** (one small job, before ``read_metadata`` returns): when files were rejected and not
one record could be read, the read is an :class:`InputError` (``ksteward pipeline`` exits 2), not an empty
state. Damage in the middle of the log (a corrupt batch, whose file is not read past it; a torn batch that
is not at the end of the last segment; offsets no segment holds) is noted with the first offset it may have
lost (:class:`LogDamage`): ``pipeline.state.resolve_target`` refuses a state at or after it (the latest
state included) unless ``allow_partial``. ``log_summary(frame)`` returns what was noted.

**frame** (``METADATA_RECORD_SCHEMA``), one row per metadata record:

- ``source_file`` string: the file's path (its URI when it is not on the local file system);
  ``source_kind``: ``segment`` or ``snapshot``.
- ``offset`` long: the record's log offset. For a snapshot row it is the snapshot's last contained offset
  (its end offset - 1), the same for every record of the snapshot: the offset whose state it holds.
- ``batch_base_offset`` long: the batch's base offset (segments); the same as ``offset`` for snapshot rows.
- ``batch_timestamp`` timestamp: the batch's maxTimestamp (segments); for snapshot rows the
  ``lastContainedLogTimestamp`` of the snapshot's SnapshotHeader, i.e. the log time of the state it holds.
- ``leader_epoch`` int: the batch's partitionLeaderEpoch; for snapshots the epoch in the file name.
- ``record_type`` string: Kafka's record name (``AccessControlEntryRecord``, ``PartitionRecord``);
  ``record_version`` int. (The payload's ``type`` is the dump's enum spelling, ``ACCESS_CONTROL_ENTRY_RECORD``.)
- ``payload`` string: ``{"type":..,"version":..,"data":{..}}``, exactly what ``ksteward metadata dump``
  prints as ``payload``, with secrets already hidden as the server hides them (``configs.sensitive``: the
  value of a ConfigRecord whose key is sensitive for its resource type, a custom broker key included, and a
  SCRAM credential's salt, storedKey and serverKey all read ``[hidden]``). No secret reaches a DataFrame.

Control records (LeaderChange, SnapshotHeader/Footer, KRaftVersion, Voters, commit/abort markers) are not
rows: they change no state. Metadata transactions (Begin/End/AbortTransactionRecord) are ordinary
metadata records and are rows; ``pipeline.state`` honours them.

**rejects** (``REJECTS_SCHEMA``), ``source_line`` being the byte position in the file:

- a torn tail (bytes at the end of a file that do not form a whole batch): position where it starts;
- a corrupt batch (CRC mismatch, impossible length, bad magic, records that do not add up) or one in an
  unsupported compression codec: its position; the rest of that file is unreadable and is not read;
- a record that cannot be decoded (unknown apiKey/version, bad bytes): its batch's position, the offset in
  the reason, and ``raw`` a JSON object with its apiKey, version and size (never its bytes: they may hold
  secrets);
- a snapshot that fails validation (a bad CRC, no header or footer): position 0, the reason naming the
  position; none of its records are rows, since part of a snapshot is not a state.
"""

from __future__ import annotations

import contextlib
import datetime
import functools
import json
import re
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ksteward.configs.sensitive import redacted_record_json
from ksteward.metadata.batch import Batch
from ksteward.metadata.log import PARTITION_DIR_NAME, CorruptSnapshotError
from ksteward.metadata.log_files import (
    LOG_FILE_SUFFIXES,
    NotAMetadataLogError,
    TornTail,
    UnreadableBatch,
    buffer_batches,
    log_file_names,
    log_files,
)
from ksteward.metadata.records import CorruptRecordError, UnknownRecordTypeError, decode_record, read_frame
from ksteward.metadata.records.control import ControlRecordType, CorruptControlRecordError, decode_control_record
from ksteward.metadata.segments import parse_segment_name
from ksteward.metadata.snapshot_file import check_snapshot, parse_snapshot_name
from ksteward.pipeline.schemas import METADATA_RECORD_SCHEMA, REJECTS_SCHEMA
from ksteward.pipeline.session import conf_set

from . import InputError, ReadResult, conform

if TYPE_CHECKING:
    import os
    from pathlib import Path

    from pyspark.sql import DataFrame, Row, SparkSession
    from pyspark.sql.types import StructType

__all__ = ["LogDamage", "LogSummary", "log_summary", "metadata_files", "read_metadata"]

SEGMENT = "segment"
_VERSION_SUFFIX = re.compile(r"V\d+$")
SNAPSHOT = "snapshot"

# One decoded row of ``_DECODED_SCHEMA``: a record's nine columns then (position, reason, raw, note).
_Item = tuple[Any, ...]

# ``note`` of a decoded row: null for a record; a reject's kind; or the bookkeeping row that ends a segment
# (``offset``: the offset after its last whole batch, control batches included).
_TORN, _UNREADABLE, _BAD_RECORD, _BAD_SNAPSHOT, _END = "torn", "unreadable", "record", "snapshot", "end"


@dataclass(frozen=True, slots=True)
class LogDamage:
    """Where the readable log stops being whole: records from ``offset`` on may be missing."""

    offset: int
    what: str  # "FILE: corrupt record batch at position N" or "offsets A-B are in no segment"


@dataclass(frozen=True, slots=True)
class LogSummary:
    """What ``read_metadata`` learnt about the log as a whole (``log_summary``)."""

    path: str
    last_offset: int  # the last offset a segment or snapshot holds, control batches included; -1: empty
    damage: LogDamage | None
    allow_partial: bool


# The summaries of the frames read_metadata returned, for pipeline.state (a frame cannot carry them).
_SUMMARIES: weakref.WeakKeyDictionary[DataFrame, LogSummary] = weakref.WeakKeyDictionary()


def log_summary(frame: DataFrame) -> LogSummary | None:
    """The :class:`LogSummary` of a ``frame`` ``read_metadata`` returned; None for any other frame."""
    return _SUMMARIES.get(frame)


def metadata_files(path: str | os.PathLike[str]) -> list[Path]:
    """The files of a log on the local file system, in ``read_metadata``'s order: ``metadata.log_files.log_files``
    (snapshots, then segments, each by offset; the one file when ``path`` is a ``.log`` or ``.checkpoint``).

    Raises InputError when ``path`` is neither a metadata directory nor a ``.log``/``.checkpoint`` file.
    """
    try:
        return log_files(path)
    except NotAMetadataLogError as exc:
        raise InputError(str(exc)) from None


def read_metadata(spark: SparkSession, path: str | os.PathLike[str], *, allow_partial: bool = False) -> ReadResult:
    """Every metadata record under ``path`` (see the module docstring for the schemas, rejects and damage).

    ``allow_partial``: let ``pipeline.state`` rebuild states past damage in the middle of the log."""
    from pyspark.sql import functions as F

    files = list_log(spark, str(path))
    both = _decoded(spark, files).cache()
    summary = _summarize(both, str(path), files, allow_partial)
    record_columns = [f.name for f in METADATA_RECORD_SCHEMA]
    frame = conform(both.where(F.col("note").isNull()).select(*record_columns), METADATA_RECORD_SCHEMA)
    rejects = both.where(F.col("reason").isNotNull()).select(
        "source_file", F.col("position").alias("source_line"), "reason", "raw"
    )
    _SUMMARIES[frame] = summary
    return ReadResult(frame, conform(rejects, REJECTS_SCHEMA))


# --- on the driver: listing, through Hadoop's FileSystem ---------------------------------------------


def list_log(spark: SparkSession, path: str) -> dict[str, str]:
    """The log's files under ``path`` in ``log_files`` order: each file's URI (as Spark's file sources name
    it) -> the name to show (the plain path for a local file). InputError for a path that is not a log."""
    from py4j.protocol import Py4JJavaError  # type: ignore[import-untyped]

    not_a_log = InputError(f"{path}: not a metadata log directory, a .log segment or a .checkpoint snapshot")
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    hadoop_path = jvm.org.apache.hadoop.fs.Path
    try:
        given = hadoop_path(path)
        fs = given.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())
        root = fs.makeQualified(given)
        if not fs.exists(root):
            raise not_a_log
        if fs.getFileStatus(root).isFile():
            if not root.getName().endswith(LOG_FILE_SUFFIXES):
                raise not_a_log
            found = [root]
        else:
            directory = root if root.getName() == PARTITION_DIR_NAME else hadoop_path(root, PARTITION_DIR_NAME)
            if not fs.exists(directory) or not fs.getFileStatus(directory).isDirectory():
                directory = root  # a directory holding segments directly
            entries = {s.getPath().getName(): s.getPath() for s in fs.listStatus(directory) if s.isFile()}
            found = [entries[name] for name in log_file_names(entries)]
    except Py4JJavaError as exc:
        raise InputError(f"{path}: {_java_message(exc)}") from None
    local = fs.getScheme() == "file"
    return {str(p.toString()): str(p.toUri().getPath()) if local else str(p.toString()) for p in found}


def _java_message(exc: Any) -> str:
    """One line of a Java exception: its class's simple name and message."""
    java = exc.java_exception
    message = str(java.getMessage() or "").splitlines()
    return f"{java.getClass().getSimpleName()}: {message[0] if message else ''}".rstrip(": ")


@contextlib.contextmanager
def _one_file_per_task(spark: SparkSession) -> Iterator[None]:
    """Plan file scans with one file per partition: a file costs as much as Spark's largest split to open,
    so no two are packed together (decoding is Python work, per file; ``binaryFile`` never splits one)."""
    with conf_set(spark, "spark.sql.files.openCostInBytes", str(spark.conf.get("spark.sql.files.maxPartitionBytes"))):
        yield


def _decoded(spark: SparkSession, files: Mapping[str, str]) -> DataFrame:
    """Records, rejects and segment ends of ``files`` (``_DECODED_SCHEMA``), decoded in Spark tasks."""
    if not files:
        return spark.createDataFrame([], _DECODED_SCHEMA)
    with _one_file_per_task(spark):  # the split is planned when the RDD is made, here
        contents = spark.read.format("binaryFile").load(list(files)).select("path", "content").rdd
    decoded = contents.mapPartitions(functools.partial(_decode_rows, dict(files)))
    return spark.createDataFrame(decoded, _DECODED_SCHEMA, verifySchema=False)


def _summarize(both: DataFrame, path: str, files: Mapping[str, str], allow_partial: bool) -> LogSummary:
    """One job over the decoded rows: an error when no record could be read; the log's end and damage."""
    from pyspark.sql import functions as F

    note, reason = F.col("note"), F.col("reason")
    per_file = {
        r.source_file: r
        for r in both.groupBy("source_file")
        .agg(
            F.count(F.when(note.isNull(), 1)).alias("records"),
            F.max(F.when(note == _END, F.col("offset"))).alias("end"),
            F.count(reason).alias("rejects"),
            F.min(F.when(reason.isNotNull(), F.struct("position", "reason"))).alias("first_reject"),
            F.min(F.when(note.isin(_TORN, _UNREADABLE), F.struct("position", "note", "reason"))).alias("damage"),
        )
        .collect()
    }
    if not any(r.records for r in per_file.values()) and any(r.rejects for r in per_file.values()):
        bad = [name for name in files.values() if name in per_file and per_file[name].rejects]
        first = per_file[bad[0]].first_reject
        raise InputError(
            f"{path}: no metadata record could be read: {len(bad)} of {len(files)} file(s) rejected "
            f"(first: {bad[0]}:{first.position}: {first.reason})"
        )
    return LogSummary(path, _last_offset(files, per_file), _damage(files, per_file), allow_partial)


def _last_offset(files: Mapping[str, str], per_file: Mapping[str, Any]) -> int:
    ends = [-1]
    for name in files.values():
        row = per_file.get(name)
        snapshot = parse_snapshot_name(name.rsplit("/", 1)[-1])
        if snapshot is not None and row is not None and not row.rejects:
            ends.append(snapshot[0] - 1)
        elif snapshot is None and row is not None and row.end is not None:
            ends.append(row.end - 1)
    return max(ends)


def _damage(files: Mapping[str, str], per_file: Mapping[str, Any]) -> LogDamage | None:
    """The first place, in offset order, where the segments stop being one whole log."""
    segments = [(base, name) for name in files.values()
                if (base := parse_segment_name(name.rsplit("/", 1)[-1])) is not None]  # fmt: skip
    previous_end: int | None = None
    for n, (base, name) in enumerate(segments):
        row = per_file.get(name)
        if previous_end is not None and base > previous_end:
            return LogDamage(previous_end, f"offsets {previous_end}-{base - 1} are in no segment")
        end = row.end if row is not None and row.end is not None else base
        hurt = row.damage if row is not None else None
        if hurt is not None and (hurt.note == _UNREADABLE or n < len(segments) - 1):
            return LogDamage(end, f"{name}:{hurt.position}: {hurt.reason}")
        previous_end = end
    return None


def _decoded_schema() -> StructType:
    """A record row (``note`` null), a reject row (``reason`` set; ``position``, ``raw``, ``note`` its kind) or
    a segment's end row (``note`` ``end``, ``offset`` the next offset) in one frame."""
    from pyspark.sql.types import LongType, StringType, StructField, StructType

    fields = [StructField(f.name, f.dataType, True) for f in METADATA_RECORD_SCHEMA]
    extra = [
        StructField("position", LongType()),
        StructField("reason", StringType()),
        StructField("raw", StringType()),
        StructField("note", StringType()),
    ]
    return StructType(fields + extra)


_DECODED_SCHEMA = _decoded_schema()


# --- in the Spark tasks ---------------------------------------------------------------------------


def _decode_rows(names: dict[str, str], rows: Iterable[Row]) -> Iterator[_Item]:
    for row in rows:
        yield from decode_content(names.get(row.path, row.path), row.content)


def payload_json(record: Any) -> str:
    """A decoded record's ``payload`` column: its Kafka JSON with secrets hidden (``configs.sensitive``)."""
    return json.dumps(redacted_record_json(record), separators=(",", ":"))


def decode_content(
    source: str, data: bytes | bytearray, render: Callable[[Any], Any] = payload_json
) -> Iterator[_Item]:
    """The records, rejects and end of one segment or snapshot file, given its bytes (what one task does).

    ``render`` makes a record's ``payload`` (``payload_json``; ``pipeline.local_state`` keeps the record itself)."""
    snapshot: tuple[int, int] | None = None
    name = source.rsplit("/", 1)[-1]
    if name.endswith(".checkpoint"):
        parsed = parse_snapshot_name(name)
        try:
            if parsed is None:
                raise ValueError(f"{name} is not a snapshot file name (%020d-%010d.checkpoint)")
            check_snapshot(data, source)
        except (CorruptSnapshotError, ValueError) as exc:
            yield _reject(source, 0, f"snapshot rejected: {exc}", note=_BAD_SNAPSHOT)
            return
        snapshot = (parsed[0] - 1, parsed[1])
    yield from _decode_batches(source, buffer_batches(data), snapshot, render)


def _decode_batches(
    source: str,
    items: Iterator[Batch | TornTail | UnreadableBatch],
    snapshot: tuple[int, int] | None,
    render: Callable[[Any], Any],
) -> Iterator[_Item]:
    kind = SEGMENT if snapshot is None else SNAPSHOT
    snapshot_time = _utc(-1)
    end: tuple[int, int] | None = None  # (the offset after the last whole batch, the position after it)
    for batch in items:
        if isinstance(batch, TornTail | UnreadableBatch):
            if isinstance(batch, TornTail):
                reason, note = f"torn batch at the end of the file ({batch.size} bytes)", _TORN
            else:
                reason, note = f"{batch.error}; the rest of the file is not read", _UNREADABLE
            yield _reject(source, batch.position, reason, note=note)
            break
        end = (batch.last_offset + 1, batch.file_position + batch.size)
        if batch.is_control:
            if snapshot is not None:
                snapshot_time = _header_time(batch.records, snapshot_time)
            continue
        if snapshot is None:
            base, epoch, when = batch.base_offset, batch.leader_epoch, _utc(batch.timestamp_ms)
        else:
            base, epoch, when = snapshot[0], snapshot[1], snapshot_time
        for offset, _timestamp, _key, value in batch.records:
            row_offset = offset if snapshot is None else base
            try:
                if value is None:
                    raise CorruptRecordError("metadata record without a value")
                record = decode_record(value)
                payload = render(record)
            except (UnknownRecordTypeError, CorruptRecordError) as exc:
                yield _reject(source, batch.file_position, f"offset {offset}: {exc}", _undecodable(value), _BAD_RECORD)
                continue
            name, version = _record_type(record), int(record.__version__)
            yield (source, kind, row_offset, base, when, epoch, name, version, payload, None, None, None, None)
    if end is not None and snapshot is None:
        yield (source, kind, end[0], None, None, None, None, None, None, end[1], None, None, _END)


def _record_type(record: object) -> str:
    """Kafka's record class name (``PartitionRecord``): kio-style classes carry a ``V<n>`` suffix per version."""
    return _VERSION_SUFFIX.sub("", type(record).__name__)


def _header_time(records: Iterable[tuple[int, int, bytes | None, bytes | None]], default: datetime.datetime) -> Any:
    """The SnapshotHeader's lastContainedLogTimestamp, if this control batch holds the header."""
    for _offset, _ts, key, value in records:
        try:
            control_type, message = decode_control_record(key, value)
        except (CorruptControlRecordError, ValueError):
            continue
        if control_type == ControlRecordType.SNAPSHOT_HEADER:
            return _utc(int(message.last_contained_log_timestamp))
    return default


def _undecodable(value: bytes | None) -> str:
    """What is safe to keep of an undecodable record: its frame's apiKey and version, and its size."""
    if value is None:
        return json.dumps({"size": None})
    try:
        api_key, version, _ = read_frame(value)
    except CorruptRecordError:
        return json.dumps({"size": len(value)})
    return json.dumps({"apiKey": api_key, "version": version, "size": len(value)})


def _reject(source: str, position: int, reason: str, raw: str | None = None, note: str = _BAD_RECORD) -> _Item:
    return (source, None, None, None, None, None, None, None, None, int(position), reason, raw, note)


def _utc(millis: int) -> datetime.datetime:
    return datetime.datetime.fromtimestamp(millis / 1000, datetime.UTC)
