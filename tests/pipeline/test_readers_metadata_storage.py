"""``read_metadata`` through Spark's file sources: paths resolve as Spark's readers resolve them, and a log
that cannot be read whole says so (exit 2, one line) instead of answering from part of it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from metadata_logs import HISTORY, write_history
from pyspark.sql import SparkSession

from ksteward.cli.main import main
from ksteward.metadata.log import PARTITION_DIR_NAME, MetadataLog, segment_file_name
from ksteward.metadata.records import encode_record
from ksteward.pipeline.readers import InputError, read_metadata
from ksteward.pipeline.readers.metadata import log_summary
from ksteward.pipeline.state import PartialLogError, StateUnavailableError, resolve_target


def one_error_line(err: str) -> str:
    """The one error line a job prints, after the progress line of each phase it started (``Progress``)."""
    *progress, line = err.strip().splitlines()
    assert all(" [" in p and p.rstrip().endswith("...") for p in progress), progress
    return line


def _segmented(data: Path) -> Path:
    """HISTORY with about one batch per segment (offsets 0-23; segment 5 holds offsets 5-6)."""
    with MetadataLog.open(data, segment_bytes=150) as log:
        for timestamp, batch in HISTORY:
            log.append([encode_record(r) for r in batch], timestamp_ms=timestamp)
    return data / PARTITION_DIR_NAME


def _flip_last_byte(path: Path) -> None:
    raw = bytearray(path.read_bytes())
    raw[-1] ^= 0xFF  # the batch's CRC no longer matches
    path.write_bytes(bytes(raw))


def test_relative_paths_and_uris_resolve_as_sparks_readers_do(spark: SparkSession, tmp_path: Path) -> None:
    write_history(tmp_path / "data")
    absolute = read_metadata(spark, tmp_path / "data").frame
    expected = sorted((r.offset, r.payload) for r in absolute.collect())
    # Relative to the driver JVM's working directory, as spark.read.parquet("x") is (the CLI starts it in its own).
    jvm_cwd = spark.sparkContext._jvm.System.getProperty("user.dir")  # type: ignore[union-attr]
    relative = read_metadata(spark, os.path.relpath(tmp_path / "data", jvm_cwd)).frame
    assert sorted((r.offset, r.payload) for r in relative.collect()) == expected
    assert {r.source_file for r in relative.select("source_file").distinct().collect()} == {
        str(tmp_path / "data" / PARTITION_DIR_NAME / segment_file_name(0))
    }  # a local file is shown by its path, not its URI
    uri = read_metadata(spark, (tmp_path / "data").as_uri()).frame
    assert sorted((r.offset, r.payload) for r in uri.collect()) == expected
    summary = log_summary(uri)
    assert summary is not None and (summary.last_offset, summary.damage) == (23, None)
    # Any other scheme goes to Hadoop's FileSystem too; without its connector (hadoop-aws), one line says so.
    with pytest.raises(InputError, match=r"^s3a://bucket/data: RuntimeException: .*S3AFileSystem not found$"):
        read_metadata(spark, "s3a://bucket/data")


def test_a_log_of_rejected_files_is_an_error_not_an_empty_state(
    spark: SparkSession, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pdir = _segmented(tmp_path / "data")
    for segment in pdir.glob("*.log"):
        segment.write_bytes(b"\x00" * 7 + b"\xff" * 80)  # a batch length no file can hold
    out = tmp_path / "out"
    assert main(["pipeline", "state", "--metadata-dir", str(tmp_path / "data"), "--out", str(out)]) == 2
    line = one_error_line(capsys.readouterr().err)
    assert line.startswith(f"ksteward pipeline state: {tmp_path / 'data'}: no metadata record could be read: 11 of 11 "
                           f"file(s) rejected (first: {pdir / segment_file_name(0)}:0: ")  # fmt: skip
    assert not out.exists()


def test_a_corrupt_batch_in_the_middle_stops_the_latest_state_unless_partial_is_allowed(
    spark: SparkSession, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pdir = _segmented(tmp_path / "data")
    damaged = pdir / segment_file_name(5)
    _flip_last_byte(damaged)
    state = ["pipeline", "state", "--metadata-dir", str(tmp_path / "data")]

    assert main([*state, "--out", str(tmp_path / "latest")]) == 2
    line = one_error_line(capsys.readouterr().err)
    assert line.startswith(
        f"ksteward pipeline state: the metadata log is damaged from offset 5 ({damaged}:0: corrupt record batch at "
        "position 0: CRC mismatch"
    ), line
    assert line.endswith(
        "; the rest of the file is not read): the state at offset 23 would miss records; the state at offset 4 or "
        "earlier is whole (--allow-partial: use what can be read)"
    ), line
    assert main([*state, "--at", "5", "--out", str(tmp_path / "at5")]) == 2
    assert "the state at offset 5 would miss records" in capsys.readouterr().err

    assert main([*state, "--at", "4", "--out", str(tmp_path / "at4")]) == 0  # before the damage: whole
    assert "state at offset 4 (log from 0): 2 acls" in capsys.readouterr().out
    assert main([*state, "--allow-partial", "--out", str(tmp_path / "partial")]) == 0
    assert "state at offset 23 (log from 0)" in capsys.readouterr().out


def test_missing_segments_and_offsets_past_the_end(
    spark: SparkSession, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pdir = _segmented(tmp_path / "data")
    (pdir / segment_file_name(9)).unlink()
    records = read_metadata(spark, pdir).frame
    with pytest.raises(PartialLogError, match=r"damaged from offset 9 \(offsets 9-9 are in no segment\)"):
        resolve_target(records)
    assert resolve_target(records, offset=8).offset == 8
    with pytest.raises(
        StateUnavailableError, match=r"^offset 24 is past the end of the metadata log: its last offset is 23$"
    ):
        resolve_target(records, offset=24)

    (pdir / segment_file_name(9)).write_bytes(b"")  # an empty segment file in place of the lost one: still a gap
    cli = ["pipeline", "state", "--metadata-dir", str(tmp_path / "data"), "--out", str(tmp_path / "o")]
    assert main([*cli, "--at", "1000"]) == 2
    line = one_error_line(capsys.readouterr().err)
    assert line == "ksteward pipeline state: offset 1000 is past the end of the metadata log: its last offset is 23"
    assert main([*cli, "--allow-partial"]) == 0
    assert "state at offset 23" in capsys.readouterr().out


def test_a_torn_tail_of_the_last_segment_is_not_damage(spark: SparkSession, tmp_path: Path) -> None:
    pdir = _segmented(tmp_path / "data")
    last = pdir / segment_file_name(21)
    last.write_bytes(last.read_bytes() + last.read_bytes()[:20])  # a write cut short, as a crash leaves it
    result = read_metadata(spark, pdir)
    summary = log_summary(result.frame)
    assert summary is not None and (summary.last_offset, summary.damage) == (23, None)
    assert resolve_target(result.frame).offset == 23
    assert [r.reason for r in result.rejects.collect()] == ["torn batch at the end of the file (20 bytes)"]
    assert os.path.getsize(last) > 0
