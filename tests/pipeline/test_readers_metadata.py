"""``readers.read_metadata``: every record of ksteward-written segments and snapshots, secrets hidden, bad
bytes set aside with their file and position."""

from __future__ import annotations

import argparse
import base64
import io
import json
from pathlib import Path

import pytest
from metadata_logs import SALT, SECRET, write_history
from pyspark.sql import SparkSession

from ksteward.cli.metadata import run_dump
from ksteward.metadata.log import PARTITION_DIR_NAME, MetadataLog, segment_file_name
from ksteward.pipeline.readers import InputError, read_metadata
from ksteward.pipeline.readers.metadata import metadata_files
from ksteward.pipeline.schemas import METADATA_RECORD_SCHEMA, REJECTS_SCHEMA

UNKNOWN_RECORD = bytes([1, 99, 0, 0])  # frame version 1, apiKey 99, version 0


def test_records_match_the_dump_and_hide_secrets(spark: SparkSession, tmp_path: Path) -> None:
    data = tmp_path / "data"
    write_history(data)
    records, rejects = read_metadata(spark, data)
    assert records.schema == METADATA_RECORD_SCHEMA and rejects.schema == REJECTS_SCHEMA
    rows = records.orderBy("offset").collect()
    assert rejects.count() == 0

    out = io.StringIO()
    assert run_dump(argparse.Namespace(path=str(data)), out) == 0
    dumped = [json.loads(line) for line in out.getvalue().splitlines()]
    expected = [(d["offset"], d["payload"]) for d in dumped if "payload" in d]
    assert [(r.offset, json.loads(r.payload)) for r in rows] == expected
    assert [r.offset for r in rows] == list(range(24))
    assert rows[3].record_type == "AccessControlEntryRecord" and rows[0].record_type == "TopicRecord"
    assert rows[1].record_type == "PartitionRecord" and rows[1].record_version == 2
    assert (rows[4].batch_base_offset, rows[4].leader_epoch, rows[4].source_kind) == (3, 0, "segment")
    assert rows[4].batch_timestamp.timestamp() == 2.0
    everything = "".join(r.payload for r in rows)
    assert SECRET not in everything and base64.b64encode(SALT).decode() not in everything
    assert json.loads(rows[6].payload)["data"]["value"] == "[hidden]"
    assert json.loads(rows[9].payload)["data"]["salt"] == "[hidden]"


def test_snapshots_parallel_files_and_bad_bytes(spark: SparkSession, tmp_path: Path) -> None:
    data = tmp_path / "data"
    with MetadataLog.open(data, segment_bytes=120) as log:  # a segment per batch or two
        from ksteward.metadata.records import TopicRecord, encode_record

        for n in range(6):
            log.append([encode_record(TopicRecord(name=f"t{n}", topic_id=None))], timestamp_ms=1000 * n)
        log.flush()
        log.write_snapshot(3, 7, [encode_record(TopicRecord(name="snap", topic_id=None))],
                           last_contained_timestamp_ms=2500)  # fmt: skip
        log.append([UNKNOWN_RECORD], timestamp_ms=9000)  # offset 6: undecodable
    pdir = data / PARTITION_DIR_NAME
    files = metadata_files(data)
    assert files[0].suffix == ".checkpoint" and len(files) >= 4
    # A torn tail on the last segment, a CRC mismatch in the first one.
    last = files[-1]
    torn_at = last.stat().st_size
    last.write_bytes(last.read_bytes() + (last.read_bytes()[:30]))
    first = pdir / segment_file_name(0)
    raw = bytearray(first.read_bytes())
    raw[-3] ^= 0xFF
    first.write_bytes(bytes(raw))

    records, rejects = read_metadata(spark, pdir)  # the partition dir works as well as the data dir
    assert records.rdd.getNumPartitions() == len(files)  # one task per file
    rows = records.collect()
    snap = [r for r in rows if r.source_kind == "snapshot"]
    assert [(r.offset, r.leader_epoch, r.batch_timestamp.timestamp(), json.loads(r.payload)["data"]["name"])
            for r in snap] == [(2, 7, 2.5, "snap")]  # fmt: skip
    assert sorted(r.offset for r in rows if r.source_kind == "segment") == [1, 2, 3, 4, 5]
    bad = sorted((Path(r.source_file).name, r.source_line, r.reason.split(":")[0], r.raw) for r in rejects.collect())
    assert bad == sorted([
        (first.name, 0, "corrupt record batch at position 0", None),
        (last.name, 0, "offset 6", json.dumps({"apiKey": 99, "version": 0, "size": 4})),
        (last.name, torn_at, f"torn batch at the end of the file ({30} bytes)", None),
    ])  # fmt: skip
    assert [f.name for f in metadata_files(last)] == [last.name]


def test_a_corrupt_snapshot_is_one_reject(spark: SparkSession, tmp_path: Path) -> None:
    data = tmp_path / "data"
    with MetadataLog.open(data) as log:
        from ksteward.metadata.records import TopicRecord, encode_record

        log.append([encode_record(TopicRecord(name="a", topic_id=None))], timestamp_ms=1)
        log.flush()
        path = log.write_snapshot(1, 0, [encode_record(TopicRecord(name="a", topic_id=None))],
                                  last_contained_timestamp_ms=1)  # fmt: skip
    path.write_bytes(path.read_bytes()[:-5])
    records, rejects = read_metadata(spark, data)
    assert [r.source_kind for r in records.collect()] == ["segment"]
    [reject] = rejects.collect()
    assert reject.source_file == str(path) and reject.reason.startswith("snapshot rejected:")
    with pytest.raises(InputError, match="not a metadata log directory"):
        metadata_files(tmp_path / "nope")


def test_leader_change_batches_and_the_quorum_state_file_are_skipped(spark: SparkSession, tmp_path: Path) -> None:
    """A controller's log: each epoch starts with a LeaderChangeMessage control batch (docs/raft.md), and the
    partition directory holds ``quorum-state``. The reader yields the metadata records only."""
    from kio.schema.leader_change_message.v0.data import LeaderChangeMessage, Voter

    from ksteward.metadata.records import TopicRecord, encode_record
    from ksteward.metadata.records.control import encode_control_record
    from ksteward.raft.quorum_state import QUORUM_STATE_FILE, ElectionState, write_quorum_state

    data = tmp_path / "data"
    key, value = encode_control_record(
        LeaderChangeMessage(version=0, leader_id=1, voters=(Voter(voter_id=1),), granting_voters=(Voter(voter_id=1),))
    )
    with MetadataLog.open(data) as log:
        for epoch in (1, 2):
            log.append([value], timestamp_ms=1000 * epoch, leader_epoch=epoch, control=True, keys=[key])
            log.append([encode_record(TopicRecord(name=f"t{epoch}", topic_id=None))], timestamp_ms=1000 * epoch + 1,
                       leader_epoch=epoch)  # fmt: skip
    write_quorum_state(data / PARTITION_DIR_NAME / QUORUM_STATE_FILE, ElectionState(leader_epoch=2, leader_id=1))
    records, rejects = read_metadata(spark, data)
    assert rejects.count() == 0
    rows = records.orderBy("offset").collect()
    assert [(r.offset, r.leader_epoch, r.record_type) for r in rows] == [(1, 1, "TopicRecord"), (3, 2, "TopicRecord")]
    out = io.StringIO()
    assert run_dump(argparse.Namespace(path=str(data)), out) == 0  # the dump shows them, as kafka-dump-log does
    dumped = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [d["payload"].get("controlType") for d in dumped if "payload" in d] == [
        "LEADER_CHANGE", None, "LEADER_CHANGE", None,
    ]  # fmt: skip


def test_delegation_token_records_are_hidden_whole(spark: SparkSession, tmp_path: Path) -> None:
    """As Kafka's metadata tools redact a delegation token (MetadataNodeRedactionCriteria): its id is the SCRAM
    user name that, with delegation.token.secret.key, gives the token's password."""
    from ksteward.metadata.records import DelegationTokenRecord, RemoveDelegationTokenRecord

    token_id = "5e1f0c62-token-id-9d2b"
    token = DelegationTokenRecord(owner="User:alice", requester="User:admin", renewers=("User:bob",),
                                  issue_timestamp=1, max_timestamp=3, expiration_timestamp=2,
                                  token_id=token_id)  # fmt: skip
    data = tmp_path / "data"
    write_history(data, [(1_000, [token]), (2_000, [RemoveDelegationTokenRecord(token_id=token_id)])])
    rows = read_metadata(spark, data).frame.orderBy("offset").collect()
    assert [r.record_type for r in rows] == ["DelegationTokenRecord", "RemoveDelegationTokenRecord"]
    assert token_id not in "".join(r.payload for r in rows)
    assert set(json.loads(rows[0].payload)["data"].values()) == {"[hidden]"}
    assert json.loads(rows[1].payload)["data"] == {"tokenId": "[hidden]"}
