"""Read a KRaft metadata log (segments and ``.checkpoint`` snapshots) into a DataFrame of records.

    records, rejects = read_metadata(spark, "/var/lib/ksteward/data")   # or .../__cluster_metadata-0

``path`` is a ksteward data dir, a real Kafka ``__cluster_metadata-0`` directory (the format is the same),
a directory holding segments directly, or one ``.log`` / ``.checkpoint`` file.

**Parallelism.** The driver only lists the files. Their paths are parallelized one file per slice and each
Spark task decodes its file with ksteward's own code (``metadata.log_files.file_batches``,
``metadata.records.decode_record``, ``configs.sensitive.redacted_record_json``,
``metadata.log.read_snapshot``), so N files decode in N tasks. The files must therefore be readable at the
same path from every executor (always true for ``local[*]``; a shared file system on a cluster). Records and
rejects come out of the tasks as one DataFrame, cached (memory and disk, in the JVM), so that ``frame`` and
``rejects`` and every job after them decode each file once and never go back to Python.

**frame** (``METADATA_RECORD_SCHEMA``), one row per metadata record:

- ``source_file`` string: the file's path; ``source_kind``: ``segment`` or ``snapshot``.
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

import datetime
import json
import os
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ksteward.configs.sensitive import redacted_record_json
from ksteward.metadata.batch import Batch
from ksteward.metadata.log import CorruptSnapshotError, read_snapshot
from ksteward.metadata.log_files import NotAMetadataLogError, TornTail, UnreadableBatch, file_batches, log_files
from ksteward.metadata.records import CorruptRecordError, UnknownRecordTypeError, decode_record, read_frame
from ksteward.metadata.records.control import ControlRecordType, CorruptControlRecordError, decode_control_record
from ksteward.pipeline.schemas import METADATA_RECORD_SCHEMA, REJECTS_SCHEMA

from . import InputError, ReadResult, conform

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from pyspark.sql.types import StructType

__all__ = ["metadata_files", "read_metadata"]

SEGMENT = "segment"
_VERSION_SUFFIX = re.compile(r"V\d+$")
SNAPSHOT = "snapshot"

# One decoded row of ``_DECODED_SCHEMA``: a record's nine columns then (None, None, None), or a reject.
_Item = tuple[Any, ...]


def metadata_files(path: str | os.PathLike[str]) -> list[Path]:
    """The files ``read_metadata`` reads for ``path``: ``metadata.log_files.log_files`` (snapshots, then
    segments, each by offset; the one file when ``path`` is a ``.log`` or ``.checkpoint``).

    Raises InputError when ``path`` is neither a metadata directory nor a ``.log``/``.checkpoint`` file.
    """
    try:
        return log_files(path)
    except NotAMetadataLogError as exc:
        raise InputError(str(exc)) from None


def read_metadata(spark: SparkSession, path: str | os.PathLike[str]) -> ReadResult:
    """Every metadata record under ``path`` (see the module docstring for the schemas and rejects)."""
    from pyspark.sql import functions as F

    files = [str(f) for f in metadata_files(path)]
    sc = spark.sparkContext
    decoded = sc.parallelize(files, max(len(files), 1)).mapPartitions(_decode_files)
    both = spark.createDataFrame(decoded, _DECODED_SCHEMA, verifySchema=False).cache()
    record_columns = [f.name for f in METADATA_RECORD_SCHEMA]
    frame = conform(both.where(F.col("reason").isNull()).select(*record_columns), METADATA_RECORD_SCHEMA)
    rejects = both.where(F.col("reason").isNotNull()).select(
        "source_file", F.col("position").alias("source_line"), "reason", "raw"
    )
    return ReadResult(frame, conform(rejects, REJECTS_SCHEMA))


def _decoded_schema() -> StructType:
    """A record row (``reason`` null) or a reject row (``reason`` set; ``position``, ``raw``) in one frame."""
    from pyspark.sql.types import LongType, StringType, StructField, StructType

    fields = [StructField(f.name, f.dataType, True) for f in METADATA_RECORD_SCHEMA]
    extra = [StructField("position", LongType()), StructField("reason", StringType()), StructField("raw", StringType())]
    return StructType(fields + extra)


_DECODED_SCHEMA = _decoded_schema()


# --- in the Spark tasks ---------------------------------------------------------------------------


def _decode_files(paths: Iterable[str]) -> Iterator[_Item]:
    for path in paths:
        yield from decode_file(Path(path))


def decode_file(path: Path) -> Iterator[_Item]:
    """The records and rejects of one segment or snapshot file (what one Spark task does)."""
    snapshot: tuple[int, int] | None = None
    if path.suffix == ".checkpoint":
        try:
            end_offset, epoch, values = read_snapshot(path)
        except (CorruptSnapshotError, ValueError, OSError) as exc:
            yield _reject(path, 0, f"snapshot rejected: {exc}")
            return
        del values  # validated; the batches are walked below for their offsets and positions
        snapshot = (end_offset - 1, epoch)
    try:
        yield from _decode_batches(path, file_batches(path), snapshot)
    except OSError as exc:
        yield _reject(path, 0, f"cannot read the file: {exc}")


def _decode_batches(
    path: Path, items: Iterator[Batch | TornTail | UnreadableBatch], snapshot: tuple[int, int] | None
) -> Iterator[_Item]:
    source = str(path)
    kind = SEGMENT if snapshot is None else SNAPSHOT
    snapshot_time = _utc(-1)
    for batch in items:
        if isinstance(batch, TornTail):
            yield _reject(path, batch.position, f"torn batch at the end of the file ({batch.size} bytes)")
            return
        if isinstance(batch, UnreadableBatch):
            yield _reject(path, batch.position, f"{batch.error}; the rest of the file is not read")
            return
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
                rendered = redacted_record_json(record)
            except (UnknownRecordTypeError, CorruptRecordError) as exc:
                yield _reject(path, batch.file_position, f"offset {offset}: {exc}", _undecodable(value))
                continue
            payload = json.dumps(rendered, separators=(",", ":"))
            name, version = _record_type(record), rendered["version"]
            yield (source, kind, row_offset, base, when, epoch, name, version, payload, None, None, None)


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


def _reject(path: Path, position: int, reason: str, raw: str | None = None) -> _Item:
    return (str(path), None, None, None, None, None, None, None, None, int(position), reason, raw)


def _utc(millis: int) -> datetime.datetime:
    return datetime.datetime.fromtimestamp(millis / 1000, datetime.UTC)
