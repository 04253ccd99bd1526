"""The pipeline on a real Spark standalone cluster (a master and one worker on loopback, ``spark_cluster.py``).

- state, audit, whatif and who-can run against it with ``--master spark://...`` and write the same tables as
  in local mode. The paths given are relative: the driver resolves them (Spark's file sources read the
  metadata log), where an executor, whose working directory is the worker's, could not open them.
- ``spark-submit`` runs ``ksteward.pipeline.spark_submit`` as the README documents, with the host's time zone
  Asia/Kolkata: the session's is UTC all the same, so days and hours are UTC days and hours.
- The worker's executor is SIGKILLed in the middle of an audit (after one of its checkpoints); the audit
  finishes on the executor the worker starts instead, with the same tables. ``make test-slow`` repeats that
  at each checkpoint in turn, ``KSTEWARD_FAULT_CYCLES`` times in all.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from metadata_logs import write_history
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from spark_cluster import Standalone, spark_home

from ksteward.cli.main import main

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integration"))

from harness import FAULT_CYCLES, fault_rng

# Each driver and executor is a JVM of its own: on a busy 2-core machine a run takes minutes, not seconds.
pytestmark = pytest.mark.timeout(1800)

DRIVER = Path(__file__).with_name("spark_cluster.py")
AUDIT_TABLES = ("acl_usage", "acl_hits_daily", "unused_acls", "shadowed_acls", "denials", "denials_by_hour",
                "top_denied_principals", "access")  # fmt: skip
STATE_TABLES = ("acls", "topics", "configs", "quotas")


def kafka_line(when: str, principal: str, verdict: str, operation: str, rule: str) -> str:
    return (
        f"[{when},000] INFO Principal = {principal} is {verdict} operation = {operation} from host = 10.0.0.1 on "
        f"resource = Topic:LITERAL:orders for request = Fetch with resourceRefCount = 1 based on rule {rule} "
        "(kafka.authorizer.logger)\n"
    )


# Minutes past the hour, and one denial late in the UTC day: in Asia/Kolkata (UTC+05:30) these would fall in
# half-hour buckets, and the last on the next day.
AUDIT_LOG = (
    kafka_line("2026-11-01 09:45:00", "User:alice", "Allowed", "READ", "MatchingAcl(acl=x)")
    + kafka_line("2026-11-01 10:45:00", "User:eve", "Denied", "READ", "MatchingAcl(acl=y)")
    + kafka_line("2026-11-01 20:10:00", "User:eve", "Denied", "READ", "MatchingAcl(acl=y)")
    + kafka_line("2026-11-02 11:15:00", "User:mallory", "Denied", "WRITE", "DefaultDeny")
)
ALICE_READS = {"resource_type": "TOPIC", "resource_name": "orders", "pattern_type": "LITERAL",
               "principal": "User:alice", "host": "*", "operation": "READ", "permission_type": "ALLOW"}  # fmt: skip
PLAN = {"delete": [ALICE_READS]}


def commands(out: str, root: Path | None = None) -> list[list[str]]:
    """The four jobs, with paths relative to the inputs' directory (or under ``root``); outputs under ``out``."""
    at = (lambda p: p) if root is None else (lambda p: str(root / p))
    audit = ["--audit", at("logs"), "--from", "2026-11-01", "--to", "2026-11-03"]
    return [
        ["pipeline", "state", "--metadata-dir", at("data"), "--out", at(f"{out}/state")],
        ["pipeline", "audit", "--metadata-dir", at("data"), *audit, "--out", at(f"{out}/audit")],
        ["pipeline", "whatif", "--metadata-dir", at("data"), *audit, "--plan", at("plan.json"),
         "--out", at(f"{out}/whatif")],
        ["pipeline", "who-can", "--metadata-dir", at("data"), "--resource", "TOPIC:orders", "--operation", "READ",
         "--out", at(f"{out}/who_can")],
    ]  # fmt: skip


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("standalone-inputs")
    write_history(root / "data")
    (root / "logs").mkdir()
    (root / "logs" / "kafka-authorizer.log").write_text(AUDIT_LOG)
    (root / "plan.json").write_text(json.dumps(PLAN))
    return root


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Standalone]:
    standalone = Standalone(tmp_path_factory.mktemp("standalone"))
    try:
        standalone.start()
        yield standalone
    finally:
        standalone.stop()


@pytest.fixture(scope="module")
def local_outputs(spark: SparkSession, inputs: Path) -> Path:
    """The four jobs in local mode (the shared session), for the cluster's outputs to equal."""
    for command in commands("local", inputs):
        assert main(command) == 0, command
    return inputs / "local"


def drive(cluster: Standalone, cwd: Path, *args: str) -> list[int]:
    """Run ``spark_cluster.py`` as a driver process on the cluster; its commands' exit codes."""
    done = subprocess.run([sys.executable, str(DRIVER), cluster.url, *args], cwd=cwd, env=cluster.env(),
                          capture_output=True, text=True, timeout=900)  # fmt: skip
    assert done.returncode == 0 and done.stdout.strip(), done.stderr[-4000:]
    codes: list[int] = json.loads(done.stdout.strip().splitlines()[-1])
    return codes


def rows(spark: SparkSession, path: Path) -> list[str]:
    """A table's rows as sorted JSON text, to compare two runs' outputs."""
    return sorted(json.dumps(r.asDict(recursive=True), sort_keys=True, default=str)
                  for r in spark.read.parquet(str(path)).collect())  # fmt: skip


def same_tables(spark: SparkSession, got: Path, expected: Path, tables: tuple[str, ...]) -> None:
    for table in tables:
        assert rows(spark, got / table) == rows(spark, expected / table), table
        assert rows(spark, expected / table) or table in ("unused_acls", "shadowed_acls", "quotas"), table


def test_the_jobs_on_a_standalone_cluster_match_local_mode(
    spark: SparkSession, cluster: Standalone, inputs: Path, local_outputs: Path
) -> None:
    assert drive(cluster, inputs, *(json.dumps([*c, "--master", cluster.url]) for c in commands("cluster"))) == [
        0, 0, 0, 0
    ]  # fmt: skip
    out = inputs / "cluster"
    same_tables(spark, out / "state", local_outputs / "state", STATE_TABLES)
    same_tables(spark, out / "audit", local_outputs / "audit", (*AUDIT_TABLES, "totals"))
    same_tables(spark, out / "whatif", local_outputs / "whatif", ("flips",))
    same_tables(spark, out / "who_can", local_outputs / "who_can", ("who_can",))
    assert not list((out / "audit").glob("_checkpoint-*")), "the audit's checkpoints are removed"


def test_spark_submit_runs_the_audit_in_utc_whatever_the_hosts_zone(
    spark: SparkSession, cluster: Standalone, inputs: Path, local_outputs: Path
) -> None:
    import ksteward.pipeline.spark_submit as submit

    [_, audit, *_] = commands("submitted")
    env = cluster.env(TZ="Asia/Kolkata")
    done = subprocess.run(
        [str(spark_home() / "bin" / "spark-submit"), "--master", cluster.url, submit.__file__, *audit[1:]],
        cwd=inputs, env=env, capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-4000:]
    assert "events 4: granted 1, denied 3" in done.stdout
    out = inputs / "submitted" / "audit"
    same_tables(spark, out, local_outputs / "audit", AUDIT_TABLES)
    hours = spark.read.parquet(str(out / "denials_by_hour"))
    assert {r.m for r in hours.select(F.minute("hour").alias("m")).collect()} == {0}
    assert sorted(p.name for p in (out / "denials").iterdir() if p.is_dir()) == [
        "event_date=2026-11-01",
        "event_date=2026-11-02",
    ]


@pytest.mark.timeout(1800 * FAULT_CYCLES)
def test_an_audit_survives_the_loss_of_its_executor(
    spark: SparkSession, cluster: Standalone, inputs: Path, local_outputs: Path
) -> None:
    rng = fault_rng("spark-executor-kill")
    audit = next(c for c in commands("killed") if c[1] == "audit")
    for cycle in range(FAULT_CYCLES):
        kill_after = 1 + (cycle if FAULT_CYCLES > 1 else rng.randrange(3)) % 3  # each of the three checkpoints
        runs = len(cluster.executor_runs())
        argv = ["--kill-after", str(kill_after), "--worker-pid", str(cluster.worker_pid)]
        assert drive(cluster, inputs, *argv, json.dumps([*audit, "--master", cluster.url])) == [0], kill_after
        assert len(cluster.executor_runs()) == runs + 2, "one executor killed, one started in its place"
        same_tables(spark, inputs / "killed" / "audit", local_outputs / "audit", (*AUDIT_TABLES, "totals"))
