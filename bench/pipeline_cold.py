"""Cold pipeline commands: ``ksteward pipeline who-can`` (on the driver, and with ``--master local[*]``: the Spark
plan) and ``state``, each in a fresh process (JVM start included), on a metadata log of N ACLs, with the Spark
jobs and stages each ran.

    .venv/bin/python -m bench.pipeline_cold                      # 262 and 100,000 ACLs
    .venv/bin/python -m bench.pipeline_cold --acls 262 --runs 3
    PYTHONPATH=/other/checkout/src .venv/bin/python -m bench.pipeline_cold   # the same for another commit

The log (one segment, written with ``MetadataLog``) holds N ACLs on N/3 topics (``orders`` among them): one in
ten PREFIXED, one in five a DENY, one in 97 for ``User:*``, one in 13 host-specific. who-can asks who may
DESCRIBE ``TOPIC:orders``. A run is a subprocess (``python -m bench.pipeline_cold --one ...``) that starts the
SparkSession as the CLI does, runs the command through ``ksteward.cli.main``, and counts the jobs and stages
from ``SparkContext.statusTracker()`` (a stage that ran no task was skipped: its shuffle output existed).
Seconds are wall time from the interpreter's start to the answer; the load average is recorded beside each.

Prints a table and writes ``bench/results/pipeline_cold.json``.
"""

from __future__ import annotations

import time

STARTED = time.perf_counter()

import contextlib  # noqa: E402 (the clock starts first: interpreter start-up is part of a cold run)
import io  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import random  # noqa: E402
import shutil  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import uuid  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402


def write_log(directory: Path, acls: int) -> None:
    """A metadata log of ``acls`` ACLs (see the module docstring)."""
    from ksteward.metadata.log import MetadataLog
    from ksteward.metadata.records import AccessControlEntryRecord, PartitionRecord, TopicRecord, encode_record

    rng = random.Random(7)
    topics = max(acls // 3, 1)
    records: list[Any] = []
    for t in range(min(topics, 2000)):
        topic_id = uuid.UUID(int=rng.getrandbits(128))
        records.append(TopicRecord(name="orders" if t == 0 else f"topic-{t:06d}", topic_id=topic_id))
        records.append(PartitionRecord(partition_id=0, topic_id=topic_id, replicas=(1,), isr=(1,), leader=1,
                                       leader_epoch=0, partition_epoch=0))  # fmt: skip
    for a in range(acls):
        t = a // 3 % topics
        name, pattern = ("orders" if t == 0 else f"topic-{t:06d}"), 3  # LITERAL
        if a % 10 == 9:
            name, pattern = name[:8], 4  # PREFIXED
        records.append(AccessControlEntryRecord(
            id=uuid.UUID(int=rng.getrandbits(128)), resource_type=2, resource_name=name, pattern_type=pattern,
            principal="User:*" if a % 97 == 5 else f"User:app-{a % 500:04d}", host="10.0.0.1" if a % 13 == 0 else "*",
            operation=(3, 4, 8, 2)[a % 4], permission_type=2 if a % 5 == 0 else 3,
        ))  # fmt: skip
    with MetadataLog.open(directory) as log:
        for i in range(0, len(records), 500):
            log.append([encode_record(r) for r in records[i : i + 500]], timestamp_ms=1_000_000 + i)


def one(argv: list[str]) -> dict[str, Any]:
    """Run one command in this (fresh) process; its seconds, jobs and stages.

    A command that answers on the driver (``who-can`` without ``--master``: ``pipeline.local_state``) starts no
    SparkSession, so none is made first; 0 jobs then. Any other gets its session first, as the CLI makes it, so
    that the session's start is timed apart (``session_s``)."""
    from ksteward.cli.main import main
    from ksteward.pipeline.session import spark_session

    spark = None
    if argv[1] != "who-can" or "--master" in argv:
        spark = spark_session(None, app_name="bench-pipeline-cold")
    session_s = time.perf_counter() - STARTED if spark is not None else 0.0
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        code = main(argv)
    seconds = time.perf_counter() - STARTED
    jobs: list[int] = []
    stages: list[Any] = []
    stage_ids: set[int] = set()
    if spark is not None:
        tracker = spark.sparkContext.statusTracker()
        jobs = tracker.getJobIdsForGroup(None)
        for job in jobs:
            info = tracker.getJobInfo(job)
            stage_ids.update(info.stageIds if info else ())
        stages = [tracker.getStageInfo(s) for s in stage_ids]
        spark.stop()
    ran = sum(1 for s in stages if s is not None and s.numCompletedTasks > 0)
    return {"rc": code, "seconds": round(seconds, 2), "session_s": round(session_s, 2), "jobs": len(jobs),
            "stages_run": ran, "stages_skipped": len(stage_ids) - ran, "load_1m": round(os.getloadavg()[0], 2),
            "first_line": printed.getvalue().splitlines()[0] if printed.getvalue() else ""}  # fmt: skip


def main() -> None:
    import argparse

    from bench._harness.report import RESULTS, machine_facts, table, write_document

    cli = argparse.ArgumentParser(prog="python -m bench.pipeline_cold", description=__doc__.split("\n\n")[0])
    cli.add_argument("--acls", type=int, nargs="+", default=[262, 100_000], help="ACL counts (default 262 100000)")
    cli.add_argument("--runs", type=int, default=1, help="cold runs of each command (default 1)")
    cli.add_argument("--scratch", type=Path, default=Path(f"/tmp/ksw-bench-pipeline-cold-{os.getpid()}"))
    cli.add_argument("--out", type=Path, default=RESULTS / "pipeline_cold.json")
    args = cli.parse_args()
    facts = machine_facts()
    rows: list[dict[str, Any]] = []
    try:
        for n in args.acls:
            data = args.scratch / f"acls-{n}"
            write_log(data, n)
            who_can = ["pipeline", "who-can", "--metadata-dir", str(data), "--resource", "TOPIC:orders",
                       "--operation", "DESCRIBE"]  # fmt: skip
            commands = {
                "who-can": who_can,  # on the driver (pipeline.local_state) while the log is local and small
                "who-can --master": [*who_can, "--master", "local[*]"],  # the Spark plan, as on a cluster
                "state": ["pipeline", "state", "--metadata-dir", str(data), "--out", str(args.scratch / "state")],
            }  # fmt: skip
            for _ in range(args.runs):
                for name, argv in commands.items():
                    shutil.rmtree(args.scratch / "state", ignore_errors=True)
                    done = subprocess.run([sys.executable, "-m", "bench.pipeline_cold", "--one", *argv],
                                          capture_output=True, text=True, check=True)  # fmt: skip
                    rows.append({"command": name, "acls": n, **json.loads(done.stdout.splitlines()[-1])})
                    print(f"... {name} at {n:,} ACLs: {rows[-1]['seconds']} s", file=sys.stderr)
    finally:
        shutil.rmtree(args.scratch, ignore_errors=True)
    columns = [(c, c) for c in ("command", "acls", "seconds", "session_s", "jobs", "stages_run", "stages_skipped",
                                "load_1m")]  # fmt: skip
    print(table("cold pipeline commands (a fresh process each: JVM start included)", columns, rows))
    write_document(args.out, "pipeline_cold", {"machine": facts, "runs": rows})


if __name__ == "__main__":
    if sys.argv[1:2] == ["--one"]:
        print(json.dumps(one(sys.argv[2:])))
    else:
        main()
