"""Writing out an audit: its tables on disk, what the HTML report shows, and the summary ``run`` prints.

The per-event tables are written per ``event_date`` partition, the others as one file each, several at a
time (each write is mostly Spark's per-job latency, which overlaps); every step is logged with its duration
(:func:`stage`).
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from ._shared import child_path, write_table

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, Row, SparkSession

    from ksteward.pipeline.report import ReportData

    from .audit import AuditResult

__all__ = ["PARTITIONED_TABLES", "REPORT_ROWS", "WRITE_THREADS", "report_data", "stage", "summary", "write_result"]

log = logging.getLogger("ksteward.pipeline.audit")

_T = TypeVar("_T")

#: Output tables written per ``event_date`` partition (the per-event ones); the others are window totals.
PARTITIONED_TABLES = ("access", "acl_hits_daily", "denials", "denials_by_hour")
#: Of those, the ones ``audit`` builds partition-wise from ``access``, which it keeps hash-partitioned by
#: ``event_date``: each task holds whole dates, so they are written as they are, one file per date, no shuffle.
_PARTITIONED_BY_DATE = ("access", "acl_hits_daily", "denials")
REPORT_ROWS = 1000


@contextlib.contextmanager
def stage(spark: SparkSession, name: str) -> Iterator[None]:
    """Log (at DEBUG: a job's progress lines are its phases) a step's start and duration, and name its Spark jobs."""
    log.debug("audit: %s ...", name)
    spark.sparkContext.setJobDescription(f"audit: {name}")
    started = time.perf_counter()
    try:
        yield
    finally:
        spark.sparkContext.setJobDescription(None)  # type: ignore[arg-type]
        log.debug("audit: %s done in %.1f s", name, time.perf_counter() - started)


#: How many tables ``write_result`` writes at once. Most are small: a write of one is mostly Spark's per-job
#: latency (planning, scheduling, committing), which overlaps (300,000 events: 8.8-10.0 s with one at a time,
#: 7.3-8.4 s with four; 10,000,000 events, three rounds each, interleaved: 4.9/3.7 s with four, 4.0/3.5 s with
#: nine).
WRITE_THREADS = 9


def write_result(
    spark: SparkSession, result: AuditResult, out: str | Path, fmt: str = "parquet"
) -> dict[str, str | Path]:
    """Write every table of ``result`` under ``out/<table>/`` (replacing it), in ``fmt`` (Parquet by default;
    CSV as :func:`~ksteward.pipeline.jobs._shared.write_table` writes it); the per-event tables are partitioned by
    ``event_date``, one file per date. The tables are written ``WRITE_THREADS`` at a time (concurrent Spark
    jobs; the cached tables they share are computed once). Returns the paths by table."""

    def write(table: str, frame: DataFrame) -> None:
        path = child_path(out, table)
        with stage(spark, f"write {table}"):
            if table in PARTITIONED_TABLES:
                by_date = frame if table in _PARTITIONED_BY_DATE else frame.repartition("event_date")
                write_table(by_date, path, fmt, partition_by=("event_date",))
            else:
                write_table(frame.coalesce(1), path, fmt)

    tables = result._asdict()
    # The slowest first (the coverage analysis, then the per-event tables), so the small ones fill in around them.
    order = sorted(tables, key=lambda t: (t != "shadowed_acls", t not in PARTITIONED_TABLES))
    with ThreadPoolExecutor(WRITE_THREADS, thread_name_prefix="audit-write") as pool:
        futures = [pool.submit(write, table, tables[table]) for table in order]
        for future in futures:
            future.result()
    return {table: child_path(out, table) for table in tables}


def report_data(result: AuditResult, *, rows: int = REPORT_ROWS) -> ReportData:
    """Collect what the HTML report shows (small: per-hour counts, the top lists, capped tables)."""
    from pyspark.sql import functions as F

    from ksteward.pipeline.report import ReportData

    row = result.totals.first()
    assert row is not None
    totals = {key: _aware(value) for key, value in row.asDict().items()}
    safe = result.unused_acls.agg(F.count(F.when(F.col("safe_to_delete"), 1)).alias("n")).first()
    totals["acls_safe_to_delete"] = int(safe["n"]) if safe is not None else 0
    hours = [(_aware(r["hour"]), int(r["denials"])) for r in result.denials_by_hour.orderBy("hour").collect()]

    def ranked(frame: DataFrame, label: Callable[[Row], str]) -> list[tuple[str, int]]:
        return [(label(r), int(r["denials"])) for r in frame.orderBy("rank").collect()]

    def dicts(frame: DataFrame, *order: str | Column) -> list[dict[str, object]]:
        return [{k: _aware(v) for k, v in r.asDict().items()} for r in frame.orderBy(*order).limit(rows).collect()]

    shadowed_first = F.when(F.col("kind") == "shadowed", 0).otherwise(1)
    return ReportData(
        totals=totals,
        denials_by_hour=hours,
        top_denied=ranked(result.top_denied_principals, lambda r: r["principal"]),
        top_denied_resources=ranked(
            result.top_denied_resources, lambda r: f"{r['resource_type']}:{r['resource_name']}"
        ),
        top_denied_operations=ranked(result.top_denied_operations, lambda r: r["operation"]),
        most_used_acls=dicts(result.acl_usage.where("hits > 0"), F.desc("hits"), "acl_id"),
        hits_not_in_state=dicts(result.acl_hits_not_in_state, F.desc("hits"), "acl_id"),
        unused_acls=dicts(result.unused_acls, "principal", "resource_type", "resource_name", "pattern_type", "acl_id"),
        covered_acls=dicts(result.shadowed_acls, shadowed_first, "resource_type", "resource_name", "acl_id"),
    )


def _aware(value: _T) -> _T:
    """A collected timestamp as an aware UTC datetime (PySpark returns naive local time); others as they are."""
    if isinstance(value, datetime) and value.tzinfo is None:
        return value.astimezone(UTC)
    return value


def summary(totals: Mapping[str, object], top: Sequence[tuple[str, int]], rejected: int) -> str:
    """The lines ``run`` prints."""
    lines = [
        f"audit window {totals['window_start']} .. {totals['window_end']}",
        f"  events {totals['events']:,}: granted {totals['granted']:,}, denied {totals['denied']:,}"
        f" (attributed: logged {totals['logged']:,}, re-decided {totals['redecided']:,},"
        f" unattributed {totals['unattributed']:,})",
        f"  ACLs {totals['acls']:,}: used {totals['acls_used']:,}, unused {totals['acls_unused']:,}"
        f" ({totals.get('acls_safe_to_delete', 0):,} safe to delete),"
        f" shadowed {totals['shadowed']:,}, redundant {totals['redundant']:,}",
        f"  hits on ACLs no longer in the state: {totals['hits_on_acls_not_in_state']:,}",
        f"  bad input lines set aside: {rejected:,}",
    ]
    if top:
        lines.append("  top denied principals: " + ", ".join(f"{p} ({n:,})" for p, n in top[:5]))
    return "\n".join(lines)
