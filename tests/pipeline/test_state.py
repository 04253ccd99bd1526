"""``pipeline.state``: the state at an offset or a time, from ksteward-written logs and snapshots."""

from __future__ import annotations

import datetime
import functools
import json
import logging
import shutil
from pathlib import Path
from typing import Any

import pytest
from metadata_logs import ACL_DENY, ACL_READ, ACL_WRITE, HISTORY, ORDERS, PAYMENTS, write_history
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from ksteward.metadata.loader import load
from ksteward.metadata.log import MetadataLog
from ksteward.metadata.records import encode_record
from ksteward.metadata.records.kafka_json import kafka_uuid
from ksteward.pipeline.jobs._shared import parse_at
from ksteward.pipeline.readers import read_metadata
from ksteward.pipeline.schemas import ACL_SCHEMA
from ksteward.pipeline.state import State, StateUnavailableError, resolve_target, state_at


def snapshot(state: State) -> dict[str, Any]:
    """The four tables as plain Python values, fetched in one Spark job (a job per table is slow to start)."""
    parts = [frame.select(F.lit(name).alias("table"), F.to_json(F.struct("*")).alias("row"))
             for name, frame in zip(State._fields, state, strict=True)]  # fmt: skip
    rows: dict[str, list[dict[str, Any]]] = {name: [] for name in State._fields}
    for row in functools.reduce(DataFrame.unionAll, parts).collect():
        rows[row.table].append(json.loads(row.row))
    return {
        "acls": {r["acl_id"]: (r["principal"], r["operation"], r["permission_type"]) for r in rows["acls"]},
        "topics": {r["name"]: (r["topic_id"], r["partitions"], r["replication_factor"]) for r in rows["topics"]},
        "configs": {(r["resource_type"], r["resource_name"], r["name"]): r["value"] for r in rows["configs"]},
        "quotas": {(tuple(sorted(r["entity"].items(), key=str)), r["key"]): r["value"] for r in rows["quotas"]},
    }


@pytest.fixture(scope="module")
def history_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    data = tmp_path_factory.mktemp("state") / "data"
    write_history(data)
    return data


def test_state_at_offsets_and_times(spark: SparkSession, history_dir: Path) -> None:
    records = read_metadata(spark, history_dir).frame.cache()
    latest = state_at(records)
    assert latest.acls.schema == ACL_SCHEMA
    got = snapshot(latest)
    assert got["acls"] == {
        kafka_uuid(ACL_READ): ("User:alice", "READ", "ALLOW"),
        kafka_uuid(ACL_DENY): ("User:eve", "READ", "DENY"),  # committed transaction; the aborted one is not here
    }
    assert got["topics"] == {"orders": (kafka_uuid(ORDERS), 2, 2)}  # PartitionChangeRecord: replicas (1, 2)
    assert got["configs"] == {
        ("TOPIC", "orders", "retention.ms"): "2000",
        ("BROKER", "", "ssl.keystore.password"): "[hidden]",
    }  # payments' configs went with the topic
    assert got["quotas"] == {((("user", None),), "producer_byte_rate"): 512.0}

    at4 = snapshot(state_at(records, offset=4))
    assert set(at4["acls"]) == {kafka_uuid(ACL_READ), kafka_uuid(ACL_WRITE)}
    assert at4["topics"] == {"orders": (kafka_uuid(ORDERS), 2, 1)} and at4["configs"] == {} and at4["quotas"] == {}

    at12 = snapshot(state_at(records, offset=12))
    assert at12["topics"]["payments"] == (kafka_uuid(PAYMENTS), 1, 3)
    assert at12["configs"][("TOPIC", "payments", "cleanup.policy")] == "compact"
    assert at12["configs"][("TOPIC", "orders", "retention.ms")] == "1000"
    assert at12["quotas"][((("user", "alice"),), "producer_byte_rate")] == 1024.0

    # By time: the batch at 7.000 s (offset 13) removed bob's ACL; 7.5 s sees it, 6.999 s does not.
    t = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)
    assert set(snapshot(state_at(records, timestamp=t + datetime.timedelta(seconds=7.5)))["acls"]) == {
        kafka_uuid(ACL_READ)
    }
    assert resolve_target(records, timestamp=t + datetime.timedelta(seconds=6.999)).offset == 12
    with pytest.raises(StateUnavailableError, match="no metadata record at or before"):
        resolve_target(records, timestamp=t)

    # Inside the committed transaction (offsets 21-23) its ACL is not visible yet.
    assert kafka_uuid(ACL_DENY) not in {r.acl_id for r in state_at(records, offset=22).acls.collect()}
    records.unpersist()


def test_snapshot_plus_log_equals_the_whole_log(spark: SparkSession, history_dir: Path, tmp_path: Path) -> None:
    """A snapshot at offset 13 with the segments before it deleted gives the same states from 13 on, and
    states before it are refused; a target between two snapshots starts from the older one."""
    data = tmp_path / "data"
    split = 7  # the first 7 batches hold offsets 0-13
    with MetadataLog.open(data, segment_bytes=150) as log:
        for timestamp, batch in HISTORY[:split]:
            log.append([encode_record(r) for r in batch], timestamp_ms=timestamp)
    image, log = load(data, logging.getLogger("test"))
    log.write_snapshot(image.offset + 1, 0, (encode_record(r) for r in image.records()),
                       last_contained_timestamp_ms=image.timestamp_ms)  # fmt: skip
    for timestamp, batch in HISTORY[split:]:
        log.append([encode_record(r) for r in batch], timestamp_ms=timestamp)
    log.flush()
    assert log.delete_segments_before(image.offset + 1) > 0
    log.close()
    assert image.offset == 13

    full = read_metadata(spark, history_dir).frame.cache()
    cut = read_metadata(spark, data).frame.cache()
    for offset in (17, None):
        assert snapshot(state_at(cut, offset=offset)) == snapshot(state_at(full, offset=offset)), offset
    target = resolve_target(cut, offset=20)
    assert (target.offset, target.snapshot_offset) == (20, 13)
    # By time, the snapshot counts with its header's lastContainedLogTimestamp (7.000 s, offset 13).
    t = datetime.datetime(1970, 1, 1, 0, 0, 7, 500000, tzinfo=datetime.UTC)
    assert resolve_target(cut, timestamp=t)[:2] == (13, 13)
    with pytest.raises(StateUnavailableError, match="oldest snapshot holds offset 13"):
        resolve_target(cut, offset=5)
    full.unpersist()
    cut.unpersist()


def test_parse_at() -> None:
    assert parse_at("42") == 42
    assert parse_at("2025-01-31T12:00:00Z") == datetime.datetime(2025, 1, 31, 12, tzinfo=datetime.UTC)
    assert parse_at("2025-01-31 12:00") == datetime.datetime(2025, 1, 31, 12, tzinfo=datetime.UTC)
    with pytest.raises(Exception, match="not an offset"):
        parse_at("yesterday")


def test_empty_dir_gives_an_empty_state(spark: SparkSession, tmp_path: Path) -> None:
    MetadataLog.open(tmp_path).close()
    state = state_at(read_metadata(spark, tmp_path).frame)
    assert snapshot(state) == {"acls": {}, "topics": {}, "configs": {}, "quotas": {}}
    shutil.rmtree(tmp_path)
