"""Small frames the driver holds: ``spark.createDataFrame`` on a list (a Python RDD) against
``ksteward.pipeline.local_frames.local_frame`` (Arrow, a local relation the JVM scans), in one SparkSession.

    .venv/bin/python -m bench.local_frames                 # 1, 100 and 1,000 rows, 5 rounds: ~2 min
    .venv/bin/python -m bench.local_frames --rows 1 --rounds 3

For each size and way, the median of ``rounds`` of:
- ``scan``: make an ``ACL_SCHEMA`` frame of that many ACLs and ``collect`` it;
- ``decide``: make it and a one-request frame the same way, and collect ``decide`` of the request against
  it (the plan the who-can, whatif and audit jobs build; it scans the ACL frame several times).
The ways alternate within a round, so both see the same load. The session is local[2] with two shuffle
partitions, as the pipeline tests use it. Prints a table and writes ``bench/results/local_frames.json``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench._harness.report import RESULTS, machine_facts, table, write_document

REQUEST_DDL = "principal string, host string, operation string, resource_type string, resource_name string"


def acl_rows(count: int) -> list[tuple[str, ...]]:
    return [
        (f"acl-{i}", "TOPIC", f"topic-{i % 50}", "PREFIXED" if i % 10 == 9 else "LITERAL", f"User:app-{i % 37}",
         "*", ("READ", "WRITE", "DESCRIBE")[i % 3], "DENY" if i % 5 == 0 else "ALLOW")
        for i in range(count)
    ]  # fmt: skip


def main() -> None:
    cli = argparse.ArgumentParser(prog="python -m bench.local_frames", description=__doc__.split("\n\n")[0])
    cli.add_argument("--rows", type=int, nargs="+", default=[1, 100, 1000], help="ACL counts (default 1 100 1000)")
    cli.add_argument("--rounds", type=int, default=5, help="rounds of each measurement (default 5)")
    cli.add_argument("--out", type=Path, default=RESULTS / "local_frames.json")
    args = cli.parse_args()

    from ksteward.pipeline.decide import decide
    from ksteward.pipeline.local_frames import local_frame
    from ksteward.pipeline.schemas import ACL_SCHEMA, AuthorizerSettings
    from ksteward.pipeline.session import spark_session

    facts = machine_facts()
    spark = spark_session("local[2]", "bench-local-frames",
                          **{"spark.sql.shuffle.partitions": "2", "spark.default.parallelism": "2"})  # fmt: skip
    ways: dict[str, Callable[[list[Any], Any], Any]] = {
        "createDataFrame": lambda rows, schema: spark.createDataFrame(rows, schema),
        "local_frame": lambda rows, schema: local_frame(spark, rows, schema),
    }
    request = [("User:app-1", "10.0.0.1", "READ", "TOPIC", "topic-1")]
    results: list[dict[str, Any]] = []
    try:
        spark.range(1).collect()  # the first job's start-up is no one's
        for count in args.rows:
            rows = acl_rows(count)
            times: dict[tuple[str, str], list[float]] = {}
            for _ in range(args.rounds):
                for way, make in ways.items():
                    start = time.perf_counter()
                    make(rows, ACL_SCHEMA).collect()
                    times.setdefault((way, "scan"), []).append(time.perf_counter() - start)
                    start = time.perf_counter()
                    decide(make(request, REQUEST_DDL), make(rows, ACL_SCHEMA), AuthorizerSettings()).collect()
                    times.setdefault((way, "decide"), []).append(time.perf_counter() - start)
            for (way, what), seconds in times.items():
                results.append({"acls": count, "way": way, "measure": what, "median_s": statistics.median(seconds),
                                "min_s": min(seconds), "rounds": len(seconds),
                                "load_1m": os.getloadavg()[0]})  # fmt: skip
    finally:
        spark.stop()
    for row in results:
        base = next(r for r in results if (r["acls"], r["measure"], r["way"]) == (row["acls"], row["measure"],
                                                                                 "createDataFrame"))  # fmt: skip
        row["x_createDataFrame"] = row["median_s"] / base["median_s"]
    columns = [(c, c) for c in ("acls", "measure", "way", "median_s", "min_s", "x_createDataFrame", "load_1m")]
    print(table("small driver-side frames: a Python RDD against a local relation (local[2])", columns, results))
    write_document(args.out, "local_frames", {"machine": facts, "rounds": args.rounds, "results": results})


if __name__ == "__main__":
    main()
