"""Pipeline benchmark: the ``audit`` and ``whatif`` jobs on 100,000 ACLs and 10,000,000 audit events, against
a naive per-row Python UDF that calls the library authorizer, in the same run.

    .venv/bin/python -m bench.pipeline            # 100k ACLs, 10M events, scaling 1M/3M/10M (~10 minutes on 2 cores)
    .venv/bin/python -m bench.pipeline --quick    # 10k ACLs, 200k events: a smoke run (~1-2 minutes)

Data (generated once, written to Parquet in a scratch directory, removed at the end unless ``--keep``):

- ACLs: the realistic layout of ``bench/_harness/acl_layout.py`` (``build_layout``: 10 principals
  ``User:test-user[N]`` per resource, READ ALLOWs, 20% DENYs, every 5th resource PREFIXED, every 10th a
  GROUP, plus the host-specific PREFIXED ACLs on ``foo-bar35_resource-``), with seeded UUID ids in Kafka's
  22-character text form.
- Events, in ``AUTHZ_EVENT_SCHEMA``, generated in Spark from ``spark.range``: 2,000 clients with a skewed
  (power-law) share of the traffic; each client is one principal and one host and uses up to 8 resources of
  the layout (names under a PREFIXED ACL get a suffix); 3% of clients are principals with no ACL and 2% of
  requests name resources no ACL matches; READ 60%, DESCRIBE 35%, WRITE 5%; times uniform over 7 days.
  ``granted`` and ``rule`` are what ``decide`` answers for the layout, and the events carry no ACL id, as
  Kafka's ``kafka.authorizer.logger`` lines (``source_format = kafka_authorizer_log``): the audit job has to
  re-decide every access tuple an ACL decided, its worst case.
  The events are written as 10 files of equal size, so the scaling runs read the first 1, 3 and 10.

Measured, end to end from the Parquet events to every output written (wall clock, one SparkSession,
``local[*]``):

- ``audit``: ``jobs.audit.audit`` + ``write_result`` (9 tables) + the HTML report;
- ``whatif``: ``jobs.whatif.whatif`` with a plan that deletes 100 ACLs and adds 10 ALLOWs, the flips written;
- naive: the same attribution by a per-row Python UDF that calls ``StandardAuthorizer.authorize_with_reason``
  (the authorizer is built once per task from a broadcast of the ACLs; the sample is read as one task per
  core), then the same ``acl_usage``, ``acl_hits_daily`` and ``denials`` tables written;
- scaling: ``audit`` at 1M, 3M and 10M events; the slope (seconds per million, least squares) and, on paper,
  what 1B events would need.

Every cell runs ``ROUNDS`` times, the rounds interleaved across cells, and the fastest run counts: the machine
is shared, and a burst of a neighbour's load then lands on every cell rather than on one.

A warm-up audit of 20,000 events runs first, unmeasured (JIT, Python workers, caches).

Prints a table and writes ``bench/results/pipeline.json``.
"""

from __future__ import annotations

import logging
import math
import os
import random
import shutil
import sys
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import BooleanType, StringType, StructField, StructType

from bench._harness.acl_layout import Layout, build_layout
from bench._harness.report import machine_facts, table, write_document
from bench._harness.runner import parser
from ksteward.authorizer import acl_id_text
from ksteward.pipeline.jobs.audit import (
    acl_hits_daily,
    acl_usage,
    audit,
    denials_by_tuple,
    report_data,
    write_result,
)
from ksteward.pipeline.report import write_report
from ksteward.pipeline.schemas import ACL_SCHEMA, AUTHZ_EVENT_SCHEMA, REQUEST_COLUMNS, AuthorizerSettings
from ksteward.pipeline.session import spark_session

SEED = 20261122
START = datetime(2026, 11, 1, tzinfo=UTC)
DAYS = 7
FILES = 10
CLIENTS = 2000
TOPICS_PER_CLIENT = 8
OPERATIONS = ("READ", "DESCRIBE", "WRITE")
OPERATION_SHARES = (0.60, 0.35, 0.05)
SETTINGS = AuthorizerSettings()
ROUNDS = 2  # runs of each measured cell, interleaved; the fastest counts (the machine is shared)
TARGET_EVENTS_PER_S = 1_000_000
TARGET_RATIO = 5.0


# --- data ----------------------------------------------------------------------------------------


def acl_rows(count: int) -> tuple[Layout, list[tuple[str, ...]]]:
    """About ``count`` ACLs of the realistic layout, as ``ACL_SCHEMA`` rows with seeded ids."""
    layout = Layout("realistic", max(1, math.ceil(count / 12)), 10, 20, wildcard_section=False)
    rng = random.Random(SEED)
    rows = []
    for binding in build_layout(layout)[:count]:
        acl_id = acl_id_text(uuid.UUID(int=rng.getrandbits(128)))
        rows.append(
            (
                acl_id,
                binding.resource_type.name,
                binding.resource_name,
                binding.pattern_type.name,
                binding.principal,
                binding.host,
                binding.operation.name,
                binding.permission_type.name,
            )
        )
    return layout, rows


def access_tuples(spark: SparkSession, acls: DataFrame, resources: int) -> DataFrame:
    """Every (client, slot, op) the events can have, with its request columns and its decision (small)."""
    ids = spark.range(0, CLIENTS * TOPICS_PER_CLIENT * len(OPERATIONS), 1, 2)
    client = (F.col("id") / (TOPICS_PER_CLIENT * len(OPERATIONS))).cast("int")
    slot = (F.floor(F.col("id") / len(OPERATIONS)) % TOPICS_PER_CLIENT).cast("int")
    op = (F.col("id") % len(OPERATIONS)).cast("int")
    rid = F.pmod(F.hash(client, slot), F.lit(resources))
    base = F.concat(F.lit("foo-bar35_resource-"), rid.cast("string"))
    name = (
        F.when(F.pmod(client, F.lit(50)) == 7, F.concat(F.lit("unknown-topic-"), slot.cast("string")))
        .when(F.pmod(rid, F.lit(5)) == 0, F.concat(base, F.lit("-p"), F.pmod(slot, F.lit(3)).cast("string")))
        .otherwise(base)
    )
    user = F.pmod(F.hash(client), F.lit(10))
    principal = F.when(F.pmod(client, F.lit(33)) == 5, F.concat(F.lit("User:intruder-"), client.cast("string")))
    principal = principal.otherwise(
        F.when(user == 0, F.lit("User:test-user")).otherwise(F.concat(F.lit("User:test-user"), user.cast("string")))
    )
    host = F.when(
        F.pmod(client, F.lit(10)) == 3, F.concat(F.lit("127.0.0."), F.pmod(client, F.lit(10)).cast("string"))
    ).otherwise(F.format_string("10.%d.%d.%d", F.floor(client / 65536), F.floor(client / 256) % 256, client % 256))
    operation = F.create_map(*[F.lit(x) for i, o in enumerate(OPERATIONS) for x in (i, o)])[op]
    requests = ids.select(
        client.alias("client"),
        slot.alias("slot"),
        op.alias("op"),
        principal.alias("principal"),
        host.alias("host"),
        operation.alias("operation"),
        F.when(F.pmod(rid, F.lit(10)) == 0, F.lit("GROUP")).otherwise(F.lit("TOPIC")).alias("resource_type"),
        name.alias("resource_name"),
    )
    from ksteward.pipeline.decide import decide

    return decide(requests, acls, SETTINGS)


def write_events(spark: SparkSession, events: int, acls: DataFrame, resources: int, path: Path) -> None:
    """Generate the events (skewed clients, their tuples decided once) and write them as ``FILES`` Parquet files."""
    tuples = F.broadcast(access_tuples(spark, acls, resources))
    r = [F.rand(SEED + i) for i in range(4)]
    shares = list(OPERATION_SHARES)
    op = F.when(r[2] < shares[0], 0).when(r[2] < shares[0] + shares[1], 1).otherwise(2)
    seconds = F.floor(r[3] * DAYS * 86400).cast("long") + int(START.timestamp())
    raw = spark.range(0, events, 1, FILES).select(
        "id",
        F.floor(F.pow(r[0], F.lit(2.5)) * CLIENTS).cast("int").alias("client"),
        F.floor(r[1] * TOPICS_PER_CLIENT).cast("int").alias("slot"),
        op.alias("op"),
        F.timestamp_micros(seconds * 1_000_000 + (F.col("id") % 1_000_000)).alias("event_time"),
    )
    null = F.lit(None)
    out = raw.join(tuples, ["client", "slot", "op"]).select(
        "event_time",
        F.to_date("event_time").alias("event_date"),
        *REQUEST_COLUMNS,
        "granted",
        "rule",  # Kafka's log names the rule (MatchingAcl, DefaultDeny, ...) but no ACL id
        null.cast("string").alias("acl_id"),
        null.cast("long").alias("image_offset"),
        F.when(F.col("operation") == "WRITE", F.lit("kafka.Produce")).otherwise(F.lit("kafka.Fetch")).alias("method"),
        F.lit("kafka_authorizer_log").alias("source_format"),
        F.lit("server.log").alias("source_file"),
        (F.col("id") + 1).alias("source_line"),
    )
    out.write.mode("overwrite").parquet(str(path))


def event_files(path: Path, count: int) -> list[str]:
    files = sorted(str(p) for p in path.glob("part-*.parquet"))
    return files[:count]


def read_events(spark: SparkSession, files: list[str]) -> DataFrame:
    return spark.read.schema(AUTHZ_EVENT_SCHEMA).parquet(*files)


# --- the measured jobs ---------------------------------------------------------------------------


def timed(fn: Callable[[], object]) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def run_audit(spark: SparkSession, events: DataFrame, acls: DataFrame, out: Path) -> None:
    result = audit(events, acls, SETTINGS, start=None, end=None)
    write_result(spark, result, out)
    write_report(out / "report.html", report_data(result))
    result.unpersist()


def _plan(acls: list[tuple[str, ...]]) -> dict[str, Any]:
    """Delete 0.1% of the ACLs (every 1000th) and add ten ALLOWs: a large but realistic change."""
    fields = [f.name for f in ACL_SCHEMA][1:]
    deletions = [dict(zip(fields, row[1:], strict=True)) for row in acls[::1000]]
    creations = [
        dict(zip(fields, ("TOPIC", f"foo-bar35_resource-{i}", "LITERAL", "User:intruder-5", "*", "READ", "ALLOW"),
                 strict=True))
        for i in range(10)
    ]  # fmt: skip
    return {"create": creations, "delete": deletions}


def run_whatif(spark: SparkSession, files: list[str], acls: DataFrame, plan: Any, out: Path) -> None:
    from ksteward.pipeline.jobs import whatif as job

    flips = job.whatif(read_events(spark, files), acls, SETTINGS, job.parse_plan(plan, "bench plan"))
    flips.write.mode("overwrite").parquet(str(out / "flips"))


_DECISION = StructType(
    [StructField("granted", BooleanType()), StructField("rule", StringType()), StructField("acl_id", StringType())]
)


def naive_udf(spark: SparkSession, acls: list[tuple[str, ...]]) -> Any:
    """A per-row UDF deciding with ``StandardAuthorizer`` (built on a task's first row, from a broadcast)."""
    shared = spark.sparkContext.broadcast(acls)
    built: dict[str, Any] = {}

    def decide_row(principal: str, host: str, operation: str, resource_type: str, name: str) -> tuple[Any, ...]:
        auth = built.get("auth")
        if auth is None:
            from ksteward.authorizer import AclBinding, StandardAuthorizer

            auth = StandardAuthorizer()
            auth.load_snapshot({row[0]: AclBinding(*row[1:]) for row in shared.value})
            built["auth"] = auth
        decision = auth.authorize_with_reason(principal, host, operation, resource_type, name)
        return (decision.allowed, decision.rule.value, decision.acl_id)

    return F.udf(decide_row, _DECISION)


def run_naive(spark: SparkSession, files: list[str], sample: int, udf: Any, acls: DataFrame, out: Path) -> None:
    events = read_events(spark, files).limit(sample).coalesce(spark.sparkContext.defaultParallelism)
    decided = events.withColumn("d", udf(*REQUEST_COLUMNS))
    access = decided.groupBy("event_date", *REQUEST_COLUMNS, "granted", "d.rule", "d.acl_id").agg(
        F.count(F.lit(1)).alias("events"),
        F.min("event_time").alias("first_seen"),
        F.max("event_time").alias("last_seen"),
    )
    access = access.withColumn("attribution", F.lit("redecided")).persist()
    acl_usage(access, acls).coalesce(1).write.mode("overwrite").parquet(str(out / "acl_usage"))
    daily = acl_hits_daily(access, acls).repartition("event_date")
    daily.write.mode("overwrite").partitionBy("event_date").parquet(str(out / "acl_hits_daily"))
    denials = denials_by_tuple(access).repartition("event_date")
    denials.write.mode("overwrite").partitionBy("event_date").parquet(str(out / "denials"))
    access.unpersist()


# --- main ----------------------------------------------------------------------------------------


def fit(points: list[tuple[float, float]]) -> tuple[float, float]:
    """Least-squares (slope, intercept) of (x, y) points."""
    n = len(points)
    mx = sum(x for x, _ in points) / n
    my = sum(y for _, y in points) / n
    sxx = sum((x - mx) ** 2 for x, _ in points)
    slope = sum((x - mx) * (y - my) for x, y in points) / sxx if sxx else 0.0
    return slope, my - slope * mx


def on_paper(slope_s_per_m: float, largest: tuple[float, float], cores: int) -> dict[str, Any]:
    """What 1B events would take, from the measured slope, assuming the work stays linear and parallel.

    A slope that is not positive (noise larger than the per-event cost) cannot be extrapolated: the average
    cost per million at the largest size (fixed costs included, so an upper bound) is used instead."""
    basis = slope_s_per_m if slope_s_per_m > 0 else largest[1] / largest[0]
    core_s = basis * 1000 * cores
    return {
        "basis": "slope" if slope_s_per_m > 0 else "average cost per million at the largest size (upper bound)",
        "basis_s_per_million_on_this_machine": round(basis, 2),
        "assumption": "the per-event cost stays linear and parallelises across cores: the events are scanned and "
        "aggregated per task, only the access tuples (not events) are shuffled, and the ACL state is joined by hash",
        "this_machine_minutes": round(basis * 1000 / 60, 1),
        "core_seconds": round(core_s),
        "cores_for_10_minutes": math.ceil(core_s / 600),
        "cores_for_1_hour": math.ceil(core_s / 3600),
        "example": f"{math.ceil(core_s / 600 / 16)} executors of 16 cores finish in about 10 minutes",
    }


def main(argv: list[str] | None = None) -> None:
    cli = parser(__doc__, "pipeline", "10k ACLs, 200k events: a smoke run", keep=False)
    cli.add_argument("--acls", type=int, help="ACL count (default 100,000; quick 10,000)")
    cli.add_argument("--events", type=int, help="events (default 10,000,000; quick 200,000)")
    cli.add_argument("--naive-sample", type=int, help="events the naive UDF decides (default 500,000)")
    cli.add_argument("--scratch", type=Path, help="scratch directory (default /tmp/ksw-bench-pipeline-PID)")
    cli.add_argument("--keep", action="store_true", help="keep the scratch directory")
    cli.add_argument("--master", help="Spark master (default local[*])")
    args = cli.parse_args(argv)
    n_acls = args.acls or (10_000 if args.quick else 100_000)
    n_events = args.events or (200_000 if args.quick else 10_000_000)
    sample = args.naive_sample or (20_000 if args.quick else 500_000)
    scratch = args.scratch or Path(f"/tmp/ksw-bench-pipeline-{os.getpid()}")
    scratch.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")  # the audit's stage timings
    facts = machine_facts()
    spark = spark_session(args.master, "ksteward-bench-pipeline")
    spark.sparkContext.setLogLevel("ERROR")
    cores = spark.sparkContext.defaultParallelism
    try:
        result = measure(spark, scratch, n_acls, n_events, sample, cores)
    finally:
        spark.stop()
        if not args.keep:
            shutil.rmtree(scratch, ignore_errors=True)
    machine = {**facts, "spark_cores": cores, "loadavg_at_end": list(os.getloadavg())}
    elapsed_s = round(time.perf_counter() - started, 1)
    write_document(args.out, "pipeline", {"machine": machine, **result, "elapsed_s": elapsed_s})
    print(f"\nwrote {args.out} in {elapsed_s} s", file=sys.stderr)


def _progress(message: str) -> None:
    print(f"... {message}", file=sys.stderr, flush=True)


def measure(spark: SparkSession, scratch: Path, n_acls: int, n_events: int, sample: int, cores: int) -> dict[str, Any]:
    _progress(f"{n_acls:,} ACLs")
    layout, rows = acl_rows(n_acls)
    acl_path = scratch / "acls"
    spark.createDataFrame(rows, ACL_SCHEMA).coalesce(1).write.mode("overwrite").parquet(str(acl_path))
    acls = spark.read.schema(ACL_SCHEMA).parquet(str(acl_path))
    events_path = scratch / "events"
    _progress(f"{n_events:,} events -> {events_path}")
    gen_s = timed(lambda: write_events(spark, n_events, acls, layout.resources, events_path))
    files = event_files(events_path, FILES)
    per_file = n_events // FILES
    denied = read_events(spark, files).where(~F.col("granted")).count()
    tuples = read_events(spark, files).select(*REQUEST_COLUMNS).distinct().count()

    _progress("warm-up: audit of 20,000 events (not measured)")
    run_audit(spark, read_events(spark, files[:1]).limit(20_000), acls, scratch / "warm-up")
    sizes = sorted({1, 3, FILES})
    plan = _plan(rows)
    udf = naive_udf(spark, rows)
    cells: dict[str, Callable[[], object]] = {}
    for count in sizes:
        events = read_events(spark, files[:count])
        cells[f"audit {count}"] = lambda e=events, c=count: run_audit(spark, e, acls, scratch / f"audit-{c}")
    cells["whatif"] = lambda: run_whatif(spark, files, acls, plan, scratch / "whatif")
    cells["naive"] = lambda: run_naive(spark, files, sample, udf, acls, scratch / "naive")
    rounds: dict[str, list[float]] = {name: [] for name in cells}
    whatif_error = None
    for round_no in range(ROUNDS):  # interleaved, so a burst of load from a neighbour hits every cell
        for name, cell in cells.items():
            if name == "whatif" and whatif_error:
                continue
            _progress(f"{name} (round {round_no + 1} of {ROUNDS})")
            try:
                rounds[name].append(timed(cell))
            except ImportError as exc:  # the whatif job is not there yet
                whatif_error = f"not measured: {exc}"
                _progress(whatif_error)

    def row(job: str, name: str, events: int) -> dict[str, Any]:
        seconds = min(rounds[name])
        return {"job": job, "events": events, "seconds": seconds, "rate": events / seconds,
                "rounds_s": " ".join(f"{x:.1f}" for x in rounds[name])}  # fmt: skip

    rows_out = [row("audit", f"audit {count}", per_file * count) for count in sizes]
    scaling = [(r["events"] / 1e6, r["seconds"]) for r in rows_out]
    audit_rate = rows_out[-1]["rate"]
    whatif_rate: float | None = None
    if rounds["whatif"]:
        rows_out.append(row("whatif", "whatif", per_file * FILES))
        whatif_rate = rows_out[-1]["rate"]
    rows_out.append(row("naive UDF (attribution + 3 tables)", "naive", sample))
    naive_rate = rows_out[-1]["rate"]

    slope, intercept = fit(scaling)
    for row in rows_out:
        row["x_naive"] = row["rate"] / naive_rate
    print()
    columns = [("job", "job"), ("events", "events"), ("seconds", "seconds"), ("events/s", "rate"),
               ("x naive", "x_naive"), ("rounds s", "rounds_s")]  # fmt: skip
    print(table(f"pipeline jobs, end to end from Parquet to outputs written ({n_acls:,} ACLs, {cores} cores; "
                "x = rate / naive rate)", columns, rows_out))  # fmt: skip
    paper = on_paper(slope, scaling[-1], cores)
    print(f"\nscaling: {slope:.2f} s per million events (intercept {intercept:.1f} s) over "
          f"{', '.join(f'{x:g}M' for x, _ in scaling)}")  # fmt: skip
    print(f"1B events on paper: {paper}")
    targets = {"events_per_s_min": TARGET_EVENTS_PER_S, "ratio_vs_naive_min": TARGET_RATIO}
    print(f"targets {targets}")
    line = f"audit {audit_rate:,.0f} events/s, x{audit_rate / naive_rate:.1f} naive"
    if whatif_rate:
        line += f"; whatif {whatif_rate:,.0f} events/s, x{whatif_rate / naive_rate:.1f} naive"
    print(line)
    return {
        "parameters": {
            "acls": len(rows),
            "events": n_events,
            "files": FILES,
            "clients": CLIENTS,
            "days": DAYS,
            "naive_sample": sample,
            "rounds": ROUNDS,
            "seed": SEED,
            "settings": {"super_users": [], "allow_everyone_if_no_acl_found": False},
        },
        "data": {
            "generate_and_write_s": round(gen_s, 1),
            "denied_events": denied,
            "distinct_access_tuples": tuples,
        },
        "targets": targets,
        "jobs": rows_out,
        "audit_events_per_s": audit_rate,
        "whatif_events_per_s": whatif_rate,
        "whatif_note": whatif_error,
        "naive_events_per_s": naive_rate,
        "audit_x_naive": audit_rate / naive_rate,
        "whatif_x_naive": whatif_rate / naive_rate if whatif_rate else None,
        "scaling": {
            "points": [{"million_events": x, "seconds": y} for x, y in scaling],
            "slope_s_per_million": slope,
            "intercept_s": intercept,
            "one_billion_on_paper": paper,
        },
    }


if __name__ == "__main__":
    main()
