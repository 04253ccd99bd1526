"""What the pipeline's jobs share: their common options, how they write and print, and small Spark helpers.

A job module imports from here and from the pipeline's library modules (``readers``, ``state``, ``decide``,
``report``), never from another job, so that each job can change without moving the others (quinn's
layout: shared helpers in a module of their own, jobs as DataFrame-to-DataFrame functions on top).

- options: :func:`add_settings_arguments` / :func:`settings_from_args` (the broker settings a decision
  needs), :func:`parse_time` (``--from``/``--to``), :func:`parse_at` / :func:`at_kwargs` (``--at``);
- frames: :func:`in_window`, :func:`adaptive_execution`, :func:`checkpoint`, :func:`release_checkpoint`;
- checkpoints: :func:`add_checkpoint_argument`, :func:`checkpoint_directory`;
- output: :func:`write_table`, :func:`read_table`, :func:`write_rejects`, :func:`print_table`;
- progress: :class:`Progress` (one line on stderr per phase of a job).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import sys
import time
import urllib.parse
import uuid
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from pyspark.sql import functions as F
from pyspark.sql.types import ArrayType, MapType, StructType

from ksteward.authorizer import AuthorizerSettings
from ksteward.pipeline.readers import InputError
from ksteward.pipeline.session import conf_set

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession
    from pyspark.sql.types import DataType

__all__ = [
    "CSV_ARRAY_SEPARATOR",
    "REJECTS_SHOWN",
    "Progress",
    "adaptive_execution",
    "add_checkpoint_argument",
    "add_settings_arguments",
    "at_kwargs",
    "checkpoint",
    "checkpoint_directory",
    "child_path",
    "in_window",
    "parse_at",
    "parse_time",
    "print_table",
    "read_table",
    "release_checkpoint",
    "settings_from_args",
    "write_rejects",
    "write_table",
    "write_text",
]

#: How many rejected lines a job prints to stderr (all of them are written to ``OUT/rejects``).
REJECTS_SHOWN = 5

#: The separator of an array's items in a CSV cell (CSV has no arrays).
CSV_ARRAY_SEPARATOR = ";"


# --- options ----------------------------------------------------------------------------------------


def add_settings_arguments(parser: argparse.ArgumentParser) -> None:
    """The current broker settings: ``--server-config`` and/or the two explicit options (which win)."""
    parser.add_argument(
        "--server-config",
        metavar="server.properties",
        help="read super.users and allow.everyone.if.no.acl.found from the broker's config",
    )
    parser.add_argument("--super-users", metavar="'User:a;User:b'", help="the broker's super.users")
    parser.add_argument("--allow-everyone-if-no-acl-found", choices=("true", "false"), type=str.lower,
                        help="the broker's allow.everyone.if.no.acl.found (default false)")  # fmt: skip


def settings_from_args(args: argparse.Namespace) -> AuthorizerSettings:
    """The settings ``add_settings_arguments`` describe; InputError for an unreadable file or bad value."""
    props: dict[str, str] = {}
    if args.server_config:
        from ksteward.configs.properties import load_properties

        try:
            props.update(load_properties(args.server_config))
        except OSError as exc:
            raise InputError(f"{args.server_config}: {exc.strerror or exc}") from None
    if args.super_users is not None:
        props["super.users"] = args.super_users
    if args.allow_everyone_if_no_acl_found is not None:
        props["allow.everyone.if.no.acl.found"] = args.allow_everyone_if_no_acl_found
    try:
        return AuthorizerSettings.from_config(props)
    except ValueError as exc:
        raise InputError(f"super.users: {exc}") from None


def parse_time(text: str) -> datetime.datetime:
    """``--from``/``--to``: an ISO-8601 time or date, UTC when it has no zone."""
    try:
        moment = datetime.datetime.fromisoformat(text.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an ISO-8601 time: {text!r}") from None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=datetime.UTC)


def parse_at(text: str) -> int | datetime.datetime:
    """``--at``: a metadata offset (an integer) or an ISO-8601 time (UTC when it has no zone)."""
    text = text.strip()
    if text.lstrip("-").isdigit():
        return int(text)
    try:
        moment = datetime.datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an offset or an ISO-8601 time: {text!r}") from None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=datetime.UTC)


def at_kwargs(at: int | datetime.datetime | None) -> dict[str, Any]:
    """``--at`` as the ``offset=`` / ``timestamp=`` keywords of ``pipeline.state.state_at`` and ``resolve_target``."""
    return {
        "offset": at if isinstance(at, int) else None,
        "timestamp": at if isinstance(at, datetime.datetime) else None,
    }


# --- frames -----------------------------------------------------------------------------------------


def in_window(events: DataFrame, start: datetime.datetime | None, end: datetime.datetime | None) -> DataFrame:
    """The events with ``start <= event_time < end`` (an open end when None)."""
    if start is not None:
        events = events.where(F.col("event_time") >= F.lit(start))
    if end is not None:
        events = events.where(F.col("event_time") < F.lit(end))
    return events


@contextlib.contextmanager
def adaptive_execution(spark: SparkSession, *, enabled: bool) -> Iterator[None]:
    """Plan the queries run inside with ``spark.sql.adaptive.enabled`` set to ``enabled``; restored after."""
    with conf_set(spark, "spark.sql.adaptive.enabled", str(enabled).lower()):
        yield


def add_checkpoint_argument(parser: argparse.ArgumentParser) -> None:
    """``--checkpoint-dir``: where a job on a cluster keeps its checkpoints (see :func:`checkpoint_directory`)."""
    parser.add_argument(
        "--checkpoint-dir",
        metavar="DIR",
        help="a directory every executor can write (HDFS, S3, a shared disk) for the job's checkpoints; "
        "default: under --out on a cluster, in memory on a local[...] master",
    )


@contextlib.contextmanager
def checkpoint_directory(spark: SparkSession, given: str | None, out: str | Path) -> Iterator[str | None]:
    """Make :func:`checkpoint` reliable inside: write checkpoints to files under ``given`` (else ``out``), in a
    directory of this run's own, deleted on the way out. With neither ``given`` nor a cluster master (a
    ``local[...]`` one: tasks run in the driver, no executor can be lost) checkpoints stay local, in memory.

    Why: a ``localCheckpoint()`` lives in the executors' block managers only, and has no lineage to recompute
    it from, so losing one executor aborts the job (``CHECKPOINT_RDD_BLOCK_ID_NOT_FOUND``). A reliable
    checkpoint is in files, which an executor's loss does not touch. The output directory is a sensible default
    because the executors already write the job's tables there."""
    sc = spark.sparkContext
    if given is None and (sc.master or "").startswith("local"):
        yield None
        return
    base = str(given if given is not None else out).rstrip("/")
    directory = f"{base}/_checkpoint-{uuid.uuid4().hex[:12]}"
    previous = sc._jsc.sc().checkpointDir()  # a scala.Option, restored below
    sc.setCheckpointDir(directory)
    try:
        yield directory
    finally:
        # SparkContext has no way to unset its checkpoint directory; its setter (Scala's ``checkpointDir_=``)
        # puts back the one before, so that later jobs of a shared session do not write into a deleted one.
        getattr(sc._jsc.sc(), "checkpointDir_$eq")(previous)
        _delete(spark, directory)


def checkpoint(frame: DataFrame) -> DataFrame:
    """``frame`` computed and cut from its plan: into files when a checkpoint directory is set (inside
    :func:`checkpoint_directory`), else into the executors' memory (``localCheckpoint``). Either way the frame
    keeps the physical plan's partitioning, and what is built on it plans against a short lineage."""
    if frame.sparkSession.sparkContext.getCheckpointDir() is None:
        return frame.localCheckpoint()
    # Cached first: writing the checkpoint's files is a second job over the frame, which then reads the cache.
    frame = frame.persist()
    try:
        return frame.checkpoint(eager=True)
    finally:
        frame.unpersist()


def _delete(spark: SparkSession, directory: str) -> None:
    """Delete a directory on any Hadoop file system (the checkpoints of a run)."""
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    path = jvm.org.apache.hadoop.fs.Path(directory)
    path.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration()).delete(path, True)


def release_checkpoint(frame: DataFrame) -> None:
    """Free the blocks of a ``localCheckpoint()`` frame now rather than when the JVM collects it (no-op for
    any other frame: a reliable checkpoint's files go with :func:`checkpoint_directory`)."""
    plan = frame._jdf.queryExecution().logical()
    if plan.getClass().getSimpleName() == "LogicalRDD":
        plan.rdd().unpersist(False)


# --- output -----------------------------------------------------------------------------------------


def child_path(base: str | Path, name: str) -> str | Path:
    """``base/name``: a Path under a Path; under a string, the string joined with ``/`` as it is, so that a URI
    keeps its scheme and authority (``Path("s3a://bucket/x")`` would collapse ``//`` and lose the bucket)."""
    if isinstance(base, Path):
        return base / name
    return f"{base.rstrip('/')}/{name}"


def _local_path(target: str | Path) -> Path | None:
    """The local file a target names (a plain path or a ``file:`` URI), or None for another file system."""
    if isinstance(target, Path):
        return target
    parsed = urllib.parse.urlparse(target)
    if parsed.scheme == "file":
        return Path(urllib.parse.unquote(parsed.path))
    return Path(target) if parsed.scheme == "" or len(parsed.scheme) == 1 else None  # "C:" is a drive, not a scheme


def write_text(spark: SparkSession, target: str | Path, text: str) -> str | Path:
    """Write ``text`` (UTF-8) to ``target``, replacing it: a local file directly (its directory created), any other
    file system (``hdfs://``, ``s3a://``) through Hadoop's ``FileSystem``, where the job's tables go. Returns
    ``target``."""
    local = _local_path(target)
    if local is not None:
        local.parent.mkdir(parents=True, exist_ok=True)
        local.write_text(text, encoding="utf-8")
        return target
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    path = jvm.org.apache.hadoop.fs.Path(str(target))
    stream = path.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration()).create(path, True)
    try:
        stream.write(bytearray(text.encode("utf-8")))
    finally:
        stream.close()
    return target


def write_table(frame: DataFrame, path: str | Path, fmt: str = "parquet", partition_by: tuple[str, ...] = ()) -> None:
    """Write ``frame`` to ``path`` in ``fmt`` (Spark's writer name: parquet, json, csv, orc), replacing it.

    CSV gets a header row and text for what it cannot hold: an array becomes its items joined by
    ``CSV_ARRAY_SEPARATOR``, a map or struct its JSON text."""
    if fmt == "csv":
        frame = frame.select(*(_csv_cell(f.name, f.dataType).alias(f.name) for f in frame.schema))
    writer = frame.write.mode("overwrite").format(fmt)
    if fmt == "csv":
        writer = writer.option("header", True)
    if partition_by:
        writer = writer.partitionBy(*partition_by)
    writer.save(str(path))


def _csv_cell(name: str, data_type: DataType) -> Column:
    if isinstance(data_type, ArrayType):
        return F.concat_ws(CSV_ARRAY_SEPARATOR, F.col(name).cast("array<string>"))
    if isinstance(data_type, MapType | StructType):
        return F.to_json(F.col(name))
    return F.col(name)


def read_table(spark: SparkSession, path: str | Path, fmt: str = "parquet") -> DataFrame:
    """Read back a table :func:`write_table` wrote (CSV: with its header row; every column is text)."""
    reader = spark.read.format(fmt)
    if fmt == "csv":
        reader = reader.option("header", True)
    return reader.load(str(path))


def write_rejects(rejects: DataFrame, out: str | Path, fmt: str = "parquet", err: IO[str] | None = None) -> int:
    """Write ``rejects`` (``REJECTS_SCHEMA``) to ``out/rejects`` when there are any; print a count and the
    first few as ``file:line: reason`` to ``err``. Returns how many there were."""
    err = err or sys.stderr
    first = rejects.orderBy("source_file", "source_line").limit(REJECTS_SHOWN).collect()
    if not first:
        return 0
    count = rejects.count()
    target = child_path(out, "rejects")
    write_table(rejects, target, fmt)
    print(f"{count} input line(s) rejected, set aside in {target}:", file=err)
    for row in first:
        print(f"  {row.source_file}:{row.source_line}: {row.reason}", file=err)
    return count


def print_table(header: Sequence[str], rows: Iterable[Sequence[object]], out: IO[str]) -> None:
    """A plain fixed-width table."""
    cells = [list(map(str, header)), *([str(v) for v in row] for row in rows)]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    for n, row in enumerate(cells):
        print("  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)).rstrip(), file=out)
        if n == 0:
            print("  ".join("-" * w for w in widths), file=out)


# --- progress ---------------------------------------------------------------------------------------


class Progress:
    """One line on stderr as each phase of a job starts, and one when the job is done, with each phase's time::

        progress = Progress(spark, "audit", ("read", "analyse", "write tables", "report"))
        progress.start("read")
        ...
        progress.start("analyse")  # the previous phase ends here
        ...
        progress.done()

    ``2026-11-26 17:28:22 audit [2/4] analyse ...`` then ``... audit done in 23.1 s (read 6.0 s, analyse 8.6 s,
    ...)``. A phase also names the Spark jobs it runs (``setJobDescription``: the UI and the event log)."""

    def __init__(self, spark: SparkSession | None, job: str, phases: Sequence[str], err: IO[str] | None = None) -> None:
        self.spark, self.job, self.phases = spark, job, tuple(phases)
        self.err = err or sys.stderr
        self.took: dict[str, float] = {}
        self.started = self._phase_started = time.perf_counter()
        self._phase: str | None = None

    def _say(self, text: str) -> None:
        now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M:%S")
        print(f"{now} {self.job} {text}", file=self.err, flush=True)

    def _end_phase(self) -> None:
        now = time.perf_counter()
        if self._phase is not None:
            self.took[self._phase] = now - self._phase_started
        self._phase, self._phase_started = None, now

    def start(self, name: str) -> None:
        """End the running phase, if any, and say that phase ``name`` (one of ``phases``) starts."""
        self._end_phase()
        self._phase = name
        self._say(f"[{self.phases.index(name) + 1}/{len(self.phases)}] {name} ...")
        if self.spark is not None:  # None: a job answered on the driver, without Spark
            self.spark.sparkContext.setJobDescription(f"{self.job}: {name}")

    def done(self) -> None:
        """End the running phase and say the job is done, with the time of each phase."""
        self._end_phase()
        if self.spark is not None:
            self.spark.sparkContext.setJobDescription(None)  # type: ignore[arg-type]
        times = ", ".join(f"{name} {seconds:.1f} s" for name, seconds in self.took.items())
        self._say(f"done in {time.perf_counter() - self.started:.1f} s ({times})")
