"""``--checkpoint-dir``: the audit's checkpoints go to files there, in a directory of the run's own that is
removed afterwards, and the tables are those of in-memory checkpoints. (On a cluster that is the default,
under ``--out``; ``test_spark_standalone.py`` kills an executor in the middle of such an audit.)"""

from __future__ import annotations

import json
from pathlib import Path

from metadata_logs import write_history
from pyspark.sql import SparkSession

from ksteward.cli.main import main

LINE = (
    "[2026-11-01 {hour}:15:00,000] INFO Principal = User:{who} is {verdict} operation = READ from host = 10.0.0.1 "
    "on resource = Topic:LITERAL:orders for request = Fetch with resourceRefCount = 1 based on rule "
    "MatchingAcl(acl=x) (kafka.authorizer.logger)\n"
)


def tables(spark: SparkSession, out: Path) -> dict[str, list[str]]:
    names = ("acl_usage", "denials", "denials_by_hour", "access", "totals")
    return {n: sorted(json.dumps(r.asDict(), default=str) for r in spark.read.parquet(str(out / n)).collect())
            for n in names}  # fmt: skip


def test_checkpoints_in_files_give_the_same_tables_and_are_removed(spark: SparkSession, tmp_path: Path) -> None:
    write_history(tmp_path / "data")
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "kafka-authorizer.log").write_text(
        LINE.format(hour="09", who="alice", verdict="Allowed") + LINE.format(hour="10", who="eve", verdict="Denied")
    )
    audit = ["pipeline", "audit", "--metadata-dir", str(tmp_path / "data"), "--audit", str(tmp_path / "logs")]
    assert main([*audit, "--out", str(tmp_path / "memory")]) == 0
    checkpoints = tmp_path / "checkpoints"
    assert main([*audit, "--out", str(tmp_path / "files"), "--checkpoint-dir", str(checkpoints)]) == 0
    assert tables(spark, tmp_path / "files") == tables(spark, tmp_path / "memory")
    assert checkpoints.is_dir() and not list(checkpoints.iterdir()), "the run's checkpoint directory is removed"
    assert spark.sparkContext.getCheckpointDir() is None, "the shared session's checkpoint directory is put back"
    assert not list((tmp_path / "memory").glob("_checkpoint-*"))
