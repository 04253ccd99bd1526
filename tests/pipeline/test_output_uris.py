"""``--out`` as a URI of another Hadoop file system: the tables and ``report.html`` go there, not to a local
directory named after the scheme. ``viewfs://`` (Hadoop's mount-table file system, in every Spark build)
stands in for ``hdfs://`` or ``s3a://`` here: a mount point maps it to a temporary local directory. Before,
``pathlib.Path("viewfs://ksw/out")`` collapsed ``//`` and lost the authority, as it loses an S3 bucket."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from metadata_logs import write_history
from pyspark.sql import SparkSession

from ksteward.cli.main import main
from ksteward.pipeline.jobs._shared import child_path, write_text

LINE = (
    "[2026-11-01 09:15:00,000] INFO Principal = User:eve is Denied operation = READ from host = 10.0.0.1 "
    "on resource = Topic:LITERAL:orders for request = Fetch with resourceRefCount = 1 based on rule "
    "DefaultDeny (kafka.authorizer.logger)\n"
)


@pytest.fixture
def mounted(spark: SparkSession, tmp_path: Path) -> Iterator[str]:
    """``viewfs://ksw/out``, mounted on ``tmp_path/mounted`` for this test."""
    (tmp_path / "mounted").mkdir()
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    key = "fs.viewfs.mounttable.ksw.link./out"
    conf.set(key, (tmp_path / "mounted").as_uri())
    conf.set("fs.viewfs.impl.disable.cache", "true")
    yield "viewfs://ksw/out"
    conf.unset(key)
    conf.unset("fs.viewfs.impl.disable.cache")


def test_child_paths_keep_a_uri_whole() -> None:
    assert child_path("s3a://bucket/reports/", "report.html") == "s3a://bucket/reports/report.html"
    assert child_path("hdfs:///kafka/audit", "denials") == "hdfs:///kafka/audit/denials"
    assert child_path(Path("out"), "denials") == Path("out/denials")


def test_a_text_file_is_written_through_hadoop_for_another_file_system(
    spark: SparkSession, tmp_path: Path, mounted: str
) -> None:
    assert write_text(spark, f"{mounted}/x/report.html", "<html>é</html>") == f"{mounted}/x/report.html"
    assert (tmp_path / "mounted" / "x" / "report.html").read_text(encoding="utf-8") == "<html>é</html>"
    local = tmp_path / "local" / "report.html"
    write_text(spark, local.as_uri(), "plain")  # file: URIs are written directly: no Hadoop .crc beside them
    assert local.read_text() == "plain" and not list(local.parent.glob(".*.crc"))


def test_the_audit_writes_its_tables_and_report_under_a_uri(spark: SparkSession, tmp_path: Path, mounted: str) -> None:
    write_history(tmp_path / "data")
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "kafka-authorizer.log").write_text(LINE)
    argv = ["pipeline", "audit", "--metadata-dir", str(tmp_path / "data"), "--audit", str(tmp_path / "logs")]
    assert main([*argv, "--out", f"{mounted}/audit"]) == 0
    written = tmp_path / "mounted" / "audit"
    assert (written / "report.html").read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    assert spark.read.parquet(str(written / "denials")).count() == 1
    assert not Path("viewfs:").exists(), "nothing is written to a local directory named after the scheme"
