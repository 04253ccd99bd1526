"""``pipeline.local_state``: the ACL state rebuilt on the driver equals the Spark plan's (``pipeline.state``) on
the same logs, offsets and times, with the same errors; it declines what only the Spark reader reports."""

from __future__ import annotations

import datetime
import logging
import uuid
from pathlib import Path

import pytest
from metadata_logs import HISTORY, acl, write_history
from pyspark.sql import SparkSession

from ksteward.metadata.loader import load
from ksteward.metadata.log import MetadataLog
from ksteward.metadata.records import BeginTransactionRecord, encode_record
from ksteward.pipeline.local_state import local_acls
from ksteward.pipeline.readers import read_metadata
from ksteward.pipeline.state import StateUnavailableError, state_at

EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)


def spark_acls(spark: SparkSession, path: Path, **at: object) -> set[tuple[object, ...]]:
    return {tuple(r) for r in state_at(read_metadata(spark, path).frame, **at).acls.collect()}  # type: ignore[arg-type]


def driver_acls(path: Path, **at: object) -> set[tuple[object, ...]]:
    rows = local_acls(path, **at)  # type: ignore[arg-type]
    assert rows is not None
    return {tuple(r) for r in rows}


@pytest.fixture(scope="module")
def with_snapshot(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """HISTORY with a snapshot at offset 13 and the segments before it deleted, then an open transaction."""
    data = tmp_path_factory.mktemp("local") / "data"
    with MetadataLog.open(data, segment_bytes=150) as log:
        for timestamp, batch in HISTORY[:7]:
            log.append([encode_record(r) for r in batch], timestamp_ms=timestamp)
    image, log = load(data, logging.getLogger("test"))
    log.write_snapshot(image.offset + 1, 0, (encode_record(r) for r in image.records()),
                       last_contained_timestamp_ms=image.timestamp_ms)  # fmt: skip
    for timestamp, batch in HISTORY[7:]:
        log.append([encode_record(r) for r in batch], timestamp_ms=timestamp)
    open_tx = [BeginTransactionRecord(name="t3"), acl(uuid.UUID(int=0xC1), "y", "User:open", 3)]
    log.append([encode_record(r) for r in open_tx], timestamp_ms=12_000)
    log.flush()
    assert log.delete_segments_before(image.offset + 1) > 0
    log.close()
    return data


def test_the_driver_and_the_spark_plan_rebuild_the_same_acls(
    spark: SparkSession, tmp_path: Path, with_snapshot: Path
) -> None:
    whole = tmp_path / "whole"
    write_history(whole)
    for at in ({}, {"offset": 3}, {"offset": 4}, {"offset": 13}, {"offset": 19}, {"offset": 20}, {"offset": 22},
               {"offset": 23}, {"timestamp": EPOCH + datetime.timedelta(seconds=7.5)}):  # fmt: skip
        assert driver_acls(whole, **at) == spark_acls(spark, whole, **at), at
    for at in ({}, {"offset": 13}, {"offset": 17}, {"offset": 25},
               {"timestamp": EPOCH + datetime.timedelta(seconds=7.5)}):  # fmt: skip
        assert driver_acls(with_snapshot, **at) == spark_acls(spark, with_snapshot, **at), at
    latest = driver_acls(with_snapshot)
    assert {r[4] for r in latest} == {"User:alice", "User:eve"}, "the open transaction's ACL is left out"


def test_the_same_errors(spark: SparkSession, with_snapshot: Path) -> None:
    cases = (({"offset": 5}, "oldest snapshot holds offset 13"), ({"offset": 99}, "past the end"),
             ({"offset": -1}, "offsets start at 0"), ({"timestamp": EPOCH}, "no metadata record at or"))  # fmt: skip
    for at, words in cases:
        with pytest.raises(StateUnavailableError, match=words) as driver:
            local_acls(with_snapshot, **at)  # type: ignore[arg-type]
        with pytest.raises(StateUnavailableError) as plan:
            spark_acls(spark, with_snapshot, **at)
        assert str(driver.value) == str(plan.value)


def test_it_declines_what_only_the_spark_reader_reports(tmp_path: Path) -> None:
    data = tmp_path / "data"
    write_history(data)
    assert local_acls(data, max_bytes=10) is None  # too big for the driver
    assert local_acls("hdfs:///kafka/meta") is None  # another file system
    segment = next((data / "__cluster_metadata-0").glob("*.log"))
    raw = bytearray(segment.read_bytes())
    raw[80] ^= 0xFF  # a corrupt batch: a reject and damage, which the Spark reader reports
    segment.write_bytes(bytes(raw))
    assert local_acls(data) is None


def write_random_acls(data: Path, count: int = 300, seed: int = 7) -> None:
    """``count`` seeded ACLs on a few topics: LITERAL and PREFIXED, ALLOW and DENY, ``User:*`` and host-specific
    ones, every operation kind, some removed again, in batches of 50."""
    import random

    from ksteward.metadata.records import AccessControlEntryRecord, RemoveAccessControlEntryRecord

    rng = random.Random(seed)
    records: list[object] = []
    ids, bindings = [], set()
    for n in range(count):
        name = rng.choice(("orders", "orders-eu", "payments", "ord", "*", "pay"))
        binding = (rng.choice((2, 2, 2, 3)), name, 4 if name in ("ord", "pay") else 3,
                   rng.choice(("User:*", "User:alice", "User:bob", "Group:ops", f"User:app-{n % 9}")),
                   rng.choice(("*", "*", "10.0.0.1")), rng.choice((2, 3, 4, 5, 6, 7, 8)),
                   rng.choice((3, 3, 3, 2)))  # fmt: skip
        if binding in bindings:
            continue  # a controller never stores the same binding twice
        bindings.add(binding)
        ids.append(acl_id := uuid.UUID(int=rng.getrandbits(128)))
        rt, name, pattern, principal, host, operation, permission = binding
        records.append(AccessControlEntryRecord(
            id=acl_id, resource_type=rt, resource_name=name, pattern_type=pattern, principal=principal, host=host,
            operation=operation, permission_type=permission,
        ))  # fmt: skip
        if n % 7 == 6:
            records.append(RemoveAccessControlEntryRecord(id=rng.choice(ids)))
    with MetadataLog.open(data) as log:
        for i in range(0, len(records), 50):
            log.append([encode_record(r) for r in records[i : i + 50]], timestamp_ms=1_000 + i)


QUESTIONS = [("TOPIC:orders", "DESCRIBE"), ("TOPIC:orders", "READ"), ("TOPIC:orders-eu", "WRITE"),
             ("TOPIC:payments", "ALTER"), ("GROUP:orders", "READ"), ("TOPIC:nothing", "READ"),
             ("TOPIC:orders", "WRITE"), ("TOPIC:pay", "DESCRIBE")]  # fmt: skip


def test_the_command_on_the_driver_prints_what_the_spark_plan_prints(
    spark: SparkSession, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``run_local`` (what ``ksteward pipeline who-can`` runs without a session) against the Spark plan (what it
    runs in-process with one, or with ``--master``), with settings that change the answer."""
    from ksteward.cli.main import build_parser, main
    from ksteward.pipeline.jobs import who_can as job

    data = tmp_path / "data"
    write_random_acls(data)
    extras = ([], ["--super-users", "User:bob"], ["--allow-everyone-if-no-acl-found", "true"], ["--at", "120"])
    for n, (resource, operation) in enumerate(QUESTIONS):  # each question with one of the settings, in turn
        extra = extras[n % len(extras)]
        argv = ["pipeline", "who-can", "--metadata-dir", str(data), "--resource", resource,
                "--operation", operation, *extra]  # fmt: skip
        assert job.run_local(build_parser().parse_args(argv)) == 0
        on_driver = capsys.readouterr().out
        assert main(argv) == 0
        assert capsys.readouterr().out == on_driver, (resource, operation, extra)
        assert "principal/host pair(s) may" in on_driver


def test_the_command_answers_without_starting_spark(tmp_path: Path) -> None:
    """A cold ``ksteward pipeline who-can`` on a small local log starts no JVM; ``--master`` runs the Spark plan,
    with the same answer; a damaged log goes to the Spark reader, which says so."""
    import os
    import subprocess
    import sys

    data = tmp_path / "data"
    write_random_acls(data)
    argv = [sys.executable, "-m", "ksteward.cli.main", "pipeline", "who-can", "--metadata-dir", str(data),
            "--resource", "TOPIC:orders", "--operation", "READ"]  # fmt: skip
    env = {k: v for k, v in os.environ.items() if k != "PYSPARK_GATEWAY_PORT"}
    local = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=120)
    assert local.returncode == 0, local.stderr
    assert "log4j" not in local.stderr and "WARN Utils" not in local.stderr, "no JVM was started"
    assert "who-can done in" in local.stderr
    spark_run = subprocess.run([*argv, "--master", "local[1]"], capture_output=True, text=True, env=env, timeout=600)
    assert spark_run.returncode == 0, spark_run.stderr
    assert spark_run.stdout == local.stdout
