"""``ksteward pipeline whatif --at`` judges the plan against the ACL state at that offset or time, as the other
jobs' ``--at`` does."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pyspark.sql import SparkSession


def whatif_argv(tmp_path: Path) -> list[str]:
    """``pipeline whatif`` on the test history (offset 3: alice READ orders; 21-23: eve denied READ orders, the
    latest state), eve's one denied READ in the audit log, and a plan that grants it."""
    from metadata_logs import write_history

    data = tmp_path / "data"
    write_history(data)
    audit = tmp_path / "kafka-authorizer.log"
    audit.write_text(
        "[2026-11-01 12:00:00,000] INFO Principal = User:eve is Denied operation = READ from host = 10.0.0.5 on "
        "resource = Topic:LITERAL:orders for request = Fetch with resourceRefCount = 1 based on rule DefaultDeny "
        "(kafka.authorizer.logger)\n"
    )
    plan = tmp_path / "plan.json"
    grant = {"resource_type": "TOPIC", "resource_name": "orders", "principal": "User:eve", "operation": "READ",
             "permission_type": "ALLOW"}  # fmt: skip
    plan.write_text(json.dumps({"create": [grant]}))
    return ["pipeline", "whatif", "--metadata-dir", str(data), "--audit", str(audit), "--plan", str(plan)]


def test_whatif_at_an_offset_uses_the_acls_of_then(
    spark: SparkSession, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from ksteward.cli.main import main

    argv = whatif_argv(tmp_path)
    # the latest state: eve's DENY wins over the new ALLOW, nothing flips
    assert main([*argv, "--out", str(tmp_path / "latest")]) == 0
    assert "0 request(s) (0 events) would be denied, 0 (0 events) newly allowed" in capsys.readouterr().out
    # at offset 5 there is no DENY yet: the ALLOW lets eve in
    assert main([*argv, "--out", str(tmp_path / "then"), "--at", "5"]) == 0
    assert "0 request(s) (0 events) would be denied, 1 (1 events) newly allowed" in capsys.readouterr().out
    (row,) = spark.read.parquet(str(tmp_path / "then" / "flips")).collect()
    assert (row.principal, row.change, row.rule_before, row.rule_after) == (
        "User:eve", "DENIED->ALLOWED", "no_matching_acl", "acl"
    )  # fmt: skip
    # an offset before the log is refused as the other jobs refuse it
    assert main([*argv, "--out", str(tmp_path / "bad"), "--at", "-1"]) == 2


def test_whatif_checkpoints_in_files_give_the_same_flips_and_are_removed(
    spark: SparkSession, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--checkpoint-dir``, as the audit's: the flips are checkpointed into files in a directory of the run's
    own (the default on a cluster, so losing an executor does not lose them), removed afterwards."""
    from ksteward.cli.main import main

    argv = [*whatif_argv(tmp_path), "--at", "5"]
    assert main([*argv, "--out", str(tmp_path / "memory")]) == 0
    checkpoints = tmp_path / "checkpoints"
    assert main([*argv, "--out", str(tmp_path / "files"), "--checkpoint-dir", str(checkpoints)]) == 0
    assert capsys.readouterr().out.count("1 (1 events) newly allowed") == 2

    def flips(out: Path) -> list[str]:
        return sorted(json.dumps(r.asDict(), default=str) for r in spark.read.parquet(str(out / "flips")).collect())

    assert flips(tmp_path / "files") == flips(tmp_path / "memory") != []
    assert checkpoints.is_dir(), "the checkpoints were set to go under --checkpoint-dir"
    assert not list(checkpoints.iterdir()), "the run's checkpoint directory is removed"
    assert spark.sparkContext.getCheckpointDir() is None, "the shared session's checkpoint directory is put back"
