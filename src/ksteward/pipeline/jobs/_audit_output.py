"""Writing out an audit: its tables on disk, what the HTML report shows, and the summary ``run`` prints.

The per-event tables are written per ``event_date`` partition, the others as one file each, several at a
time (each write is mostly Spark's per-job latency, which overlaps); every step is logged with its duration
(:func:`stage`).
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from ._shared import write_table

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

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
    """Log a stage's start and duration, and name its Spark jobs (shown with the console progress bar)."""
    log.info("audit: %s ...", name)
    spark.sparkContext.setJobDescription(f"audit: {name}")
    started = time.perf_counter()
    try:
        yield
    finally:
        spark.sparkContext.setJobDescription(None)  # type: ignore[arg-type]
        log.info("audit: %s done in %.1f s", name, time.perf_counter() - started)


#: How many tables ``write_result`` writes at once. Most are small: a write of one is mostly Spark's per-job
#: latency (planning, scheduling, committing), which overlaps (300,000 events: 8.8-10.0 s with one at a time,
#: 7.3-8.4 s with four; 10,000,000 events, three rounds each, interleaved: 4.9/3.7 s with four, 4.0/3.5 s with
#: nine).
WRITE_THREADS = 9


def write_result(spark: SparkSession, result: AuditResult, out: Path, fmt: str = "parquet") -> dict[str, Path]:
    """Write every table of ``result`` under ``out/<table>/`` (replacing it), in ``fmt`` (Parquet by default;
    CSV as :func:`~ksteward.pipeline.jobs._shared.write_table` writes it); the per-event tables are partitioned by
    ``event_date``, one file per date. The tables are written ``WRITE_THREADS`` at a time (concurrent Spark
    jobs; the cached tables they share are computed once). Returns the paths by table."""

    def write(table: str, frame: DataFrame) -> None:
        path = out / table
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
    return {table: out / table for table in tables}


def report_data(result: AuditResult, *, rows: int = REPORT_ROWS) -> ReportData:
    """Collect what the HTML report shows (small: per-hour counts, the top principals, capped tables)."""
    from ksteward.pipeline.report import ReportData

    row = result.totals.first()
    assert row is not None
    totals = {key: _aware(value) for key, value in row.asDict().items()}
    hours = [(_aware(r["hour"]), int(r["denials"])) for r in result.denials_by_hour.orderBy("hour").collect()]
    top = [(r["principal"], int(r["denials"])) for r in result.top_denied_principals.orderBy("rank").collect()]
    unused = [
        r.asDict() for r in result.unused_acls.orderBy("resource_type", "resource_name", "acl_id").limit(rows).collect()
    ]
    covered = [
        r.asDict()
        for r in result.shadowed_acls.orderBy("kind", "resource_type", "resource_name", "acl_id").limit(rows).collect()
    ]
    return ReportData(totals=totals, denials_by_hour=hours, top_denied=top, unused_acls=unused, covered_acls=covered)


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
        f" mismatched {totals['mismatched']:,})",
        f"  ACLs {totals['acls']:,}: used {totals['acls_used']:,}, unused {totals['acls_unused']:,},"
        f" shadowed {totals['shadowed']:,}, redundant {totals['redundant']:,}",
        f"  hits on ACLs no longer in the state: {totals['hits_on_acls_not_in_state']:,}",
        f"  bad input lines set aside: {rejected:,}",
    ]
    if top:
        lines.append("  top denied principals: " + ", ".join(f"{p} ({n:,})" for p, n in top[:5]))
    return "\n".join(lines)
