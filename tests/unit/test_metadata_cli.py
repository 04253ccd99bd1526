"""``ksteward metadata dump`` and ``ksteward metadata shell``, run in-process on real directories."""

from __future__ import annotations

import argparse
import base64
import io
import json
import uuid
from pathlib import Path
from typing import Any

import pytest

from ksteward.cli.metadata import add_parser
from ksteward.metadata.log import PARTITION_DIR_NAME, MetadataLog
from ksteward.metadata.records import (
    AccessControlEntryRecord,
    BrokerEndpoint,
    ClientQuotaRecord,
    ConfigRecord,
    EntityData,
    FeatureLevelRecord,
    PartitionRecordV0,
    RegisterBrokerRecord,
    TopicRecord,
    UserScramCredentialRecord,
    encode_record,
)
from ksteward.metadata.records.kafka_json import kafka_uuid

TOPIC_ID = uuid.UUID(int=0xABC)
ACL_ID = uuid.UUID(int=0xAC1)
SALT, STORED, SERVER = b"pepper-salt-123", b"stored-key-456", b"server-key-789"
PASSWORD = "hunter2-secret"


def run(argv: list[str], stdin: str | None = None) -> tuple[int, str, str]:
    parser = argparse.ArgumentParser(prog="ksteward")
    add_parser(parser.add_subparsers(required=True))
    args = parser.parse_args(argv)
    out, err = io.StringIO(), io.StringIO()
    if argv[1] == "shell":
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr("sys.stderr", err)
            code = args.func(args, stdin=io.StringIO(stdin or ""), out=out)
    else:
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr("sys.stderr", err)
            code = args.func(args, out=out)
    return code, out.getvalue(), err.getvalue()


def records() -> list[list[Any]]:
    endpoint = BrokerEndpoint(name="PLAINTEXT", host="localhost", port=9092, security_protocol=0)
    return [
        [FeatureLevelRecord(name="metadata.version", feature_level=27)],
        [
            RegisterBrokerRecord(
                broker_id=1, incarnation_id=uuid.UUID(int=5), broker_epoch=3, end_points=(endpoint,), fenced=False
            )
        ],
        [
            TopicRecord(name="orders", topic_id=TOPIC_ID),
            PartitionRecordV0(
                partition_id=0, topic_id=TOPIC_ID, replicas=(1,), isr=(1,), leader=1, leader_epoch=0, partition_epoch=0
            ),
            ConfigRecord(resource_type=2, resource_name="orders", name="retention.ms", value="1000"),
        ],
        [ConfigRecord(resource_type=4, resource_name="", name="listener.name.a.ssl.key.password", value=PASSWORD)],
        [
            UserScramCredentialRecord(
                name="alice", mechanism=2, salt=SALT, stored_key=STORED, server_key=SERVER, iterations=8192
            )
        ],
        [
            AccessControlEntryRecord(
                id=ACL_ID,
                resource_type=2,
                resource_name="orders",
                pattern_type=3,
                principal="User:alice",
                host="*",
                operation=3,
                permission_type=3,
            )
        ],
        [
            ClientQuotaRecord(
                entity=(EntityData(entity_type="user", entity_name="alice"),), key="producer_byte_rate", value=1024.0
            )
        ],
    ]


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    with MetadataLog.open(tmp_path) as log:
        for batch in records():
            log.append([encode_record(r) for r in batch], timestamp_ms=1000 + log.next_offset, leader_epoch=1)
        log.append([b"\x01\x1e\x00\x02"], timestamp_ms=5, leader_epoch=1)  # apiKey 30: unknown
        log.append([b"\x01\x0b\x00\x05al"], timestamp_ms=5, leader_epoch=1)  # a cut-off SCRAM record
        log.append([encode_record(FeatureLevelRecord(name="kraft.version", feature_level=1))], timestamp_ms=6)
    return tmp_path


def lines(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines()]


def assert_no_secrets(text: str) -> None:
    for secret in (SALT, STORED, SERVER, PASSWORD.encode()):
        for form in (secret, secret.hex().encode(), base64.b64encode(secret), base64.b64encode(secret)[:12]):
            assert form.decode() not in text


def test_dump_segment(data_dir: Path) -> None:
    code, out, _ = run(["metadata", "dump", str(data_dir / PARTITION_DIR_NAME / "00000000000000000000.log")])
    assert code == 0
    parsed = lines(out)
    assert parsed[0]["kind"] == "segment"
    records_out = parsed[1:]
    assert [r["offset"] for r in records_out] == list(range(12))
    topic = records_out[2]
    assert topic["payload"] == {"type": "TOPIC_RECORD", "version": 0,
                                "data": {"name": "orders", "topicId": kafka_uuid(TOPIC_ID)}}  # fmt: skip
    assert topic["timestamp"] == 1002 and topic["batch"]["baseOffset"] == 2 and topic["batch"]["count"] == 3
    scram = records_out[6]["payload"]
    assert scram["type"] == "USER_SCRAM_CREDENTIAL_RECORD" and scram["data"]["iterations"] == 8192
    assert scram["data"]["salt"] == scram["data"]["storedKey"] == scram["data"]["serverKey"] == "[hidden]"
    assert records_out[5]["payload"]["data"]["value"] == "[hidden]"
    # Undecodable records are printed raw, and the dump goes on.
    assert records_out[9]["payload"] == {"apiKey": 30, "version": 0, "error": "unknown record type", "hex": "011e0002"}
    cut = records_out[10]["payload"]
    assert (cut["apiKey"], cut["version"], cut["hex"]) == (11, 0, "[hidden]")
    assert records_out[11]["payload"]["data"]["name"] == "kraft.version"
    assert_no_secrets(out)


def test_dump_directory_with_snapshot(data_dir: Path) -> None:
    with MetadataLog.open(data_dir) as log:
        log.write_snapshot(3, 1, [encode_record(r) for r in records()[0]], last_contained_timestamp_ms=42)
    for path in (data_dir, data_dir / PARTITION_DIR_NAME):
        code, out, _ = run(["metadata", "dump", str(path)])
        assert code == 0
        parsed = lines(out)
        files = [p for p in parsed if "file" in p]
        assert [f["kind"] for f in files] == ["snapshot", "segment"]
        header = parsed[1]
        assert header["batch"]["isControl"] and header["payload"]["controlType"] == "SNAPSHOT_HEADER"
        assert header["payload"]["data"] == {"version": 0, "lastContainedLogTimestamp": 42}
        assert parsed[2]["payload"]["type"] == "FEATURE_LEVEL_RECORD"
        assert parsed[3]["payload"]["controlType"] == "SNAPSHOT_FOOTER"
        assert_no_secrets(out)
    snapshot = next((data_dir / PARTITION_DIR_NAME).glob("*.checkpoint"))
    code, out, _ = run(["metadata", "dump", str(snapshot)])
    assert code == 0 and len(lines(out)) == 4


def test_dump_reports_corruption_and_torn_tails(data_dir: Path) -> None:
    segment = data_dir / PARTITION_DIR_NAME / "00000000000000000000.log"
    data = segment.read_bytes()
    segment.write_bytes(data + data[:20])
    code, out, _ = run(["metadata", "dump", str(segment)])
    assert code == 0 and lines(out)[-1]["warning"].startswith("torn batch")
    flipped = bytearray(data)
    flipped[121] ^= 0x08  # inside the second batch (at 91), under its CRC
    segment.write_bytes(bytes(flipped))
    code, out, _ = run(["metadata", "dump", str(segment)])
    last = lines(out)[-1]
    assert code == 1 and "CRC mismatch" in last["error"] and last["position"] == 91


def test_dump_bad_path(tmp_path: Path) -> None:
    (tmp_path / "x.txt").write_text("hi")
    code, _, err = run(["metadata", "dump", str(tmp_path / "x.txt")])
    assert code == 2 and "not a .log" in err


def test_shell_single_commands(data_dir: Path) -> None:
    code, out, _ = run(["metadata", "shell", str(data_dir), "--command", "ls /"])
    assert code == 0
    assert out.split() == sorted(["acl", "client-quotas", "cluster", "configs", "controllers", "features",
                                  "producerIds", "scram", "topicIds", "topics"])  # fmt: skip
    code, out, _ = run(["metadata", "shell", str(data_dir), "-c", f"cat /acl/id/{kafka_uuid(ACL_ID)}"])
    assert code == 0 and json.loads(out)["principal"] == "User:alice" and json.loads(out)["id"] == kafka_uuid(ACL_ID)
    code, out, _ = run(["metadata", "shell", str(data_dir), "-c", "cat /scram/SCRAM-SHA-512/alice"])
    assert code == 0 and json.loads(out) == {"iterations": 8192}
    code, out, _ = run(["metadata", "shell", str(data_dir), "-c", "tree /"])
    assert code == 0 and "[hidden]" in out and "retention.ms: 1000" in out
    assert_no_secrets(out)
    code, _, err = run(["metadata", "shell", str(data_dir), "-c", "cat /topics"])
    assert code == 1 and "is a directory" in err


def test_shell_reads_commands_from_stdin(data_dir: Path) -> None:
    script = "\n".join([
        "cd /topics/orders", "pwd", "ls", "cat id name 0/leader", "cd ..", "pwd", "cat /features/metadata.version",
        "cat '/configs/Topic/orders/retention.ms'", "cat /client-quotas/user(alice)/producer_byte_rate",
        f"ls /topicIds/{kafka_uuid(TOPIC_ID)}", "cat /cluster/1", "find /scram", "nonsense", "exit", "pwd",
    ])  # fmt: skip
    code, out, err = run(["metadata", "shell", str(data_dir)], stdin=script)
    assert code == 1 and "unknown command 'nonsense'" in err
    got = out.splitlines()
    assert got[:6] == ["/topics/orders", "0", "id", "name", kafka_uuid(TOPIC_ID), "orders"]
    assert got[6:12] == ["1", "/topics", "27", "1000", "1024.0", "0"]
    assert got[12:14] == ["id", "name"]
    assert json.loads(got[14])["endPoints"][0]["port"] == 9092
    assert got[15:] == ["/scram", "/scram/SCRAM-SHA-512", "/scram/SCRAM-SHA-512/alice"]  # nothing after exit


def test_shell_is_read_only(data_dir: Path) -> None:
    pdir = data_dir / PARTITION_DIR_NAME
    with open(pdir / "00000000000000000000.log", "ab") as f:
        f.write(b"\x00" * 30)  # a torn tail that a writable open would truncate
    (pdir / "00000000000000000009-0000000001.checkpoint.part").write_bytes(b"half")
    before = {p.name: p.read_bytes() for p in pdir.iterdir()}
    code, out, _ = run(["metadata", "shell", str(data_dir), "-c", "cat /producerIds"])
    assert code == 0 and out.strip() == "-1"
    assert {p.name: p.read_bytes() for p in pdir.iterdir()} == before


def test_shell_without_a_log(tmp_path: Path) -> None:
    code, _, err = run(["metadata", "shell", str(tmp_path), "-c", "ls"])
    assert code == 2 and "no metadata log directory" in err
    assert not (tmp_path / PARTITION_DIR_NAME).exists()


def test_dump_piped_into_head_ends_quietly(tmp_path: Path) -> None:
    """The whole ``ksteward`` entry point, as a shell pipeline: ``head`` closes the pipe early and the dump stops
    without a BrokenPipeError traceback."""
    import subprocess
    import sys

    with MetadataLog.open(tmp_path) as log:
        acl = AccessControlEntryRecord(id=ACL_ID, resource_type=2, resource_name="t", pattern_type=3,
                                       principal="User:a", host="*", operation=3, permission_type=3)  # fmt: skip
        acls = [encode_record(acl) for _ in range(5000)]
        log.append(acls, timestamp_ms=1, leader_epoch=1)
        log.flush()
    command = f"{sys.executable} -m ksteward.cli.main metadata dump {tmp_path} | head -n 2"
    done = subprocess.run(["bash", "-c", f"set -o pipefail; {command}"], capture_output=True, text=True, timeout=120)
    assert len(done.stdout.splitlines()) == 2
    assert done.stderr == "", done.stderr
    assert done.returncode == 0
