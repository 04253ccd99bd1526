"""End to end: the real server writes a metadata log through real clients; ``ksteward pipeline state`` reads it.

The server is started, topics and ACLs are created and one ACL deleted with confluent-kafka, the server is
stopped, and the state job must reproduce exactly those ACLs (with the ids the server's own loader sees) and
topics, and an earlier ``--at`` offset the earlier state.
"""

from __future__ import annotations

import csv
import logging
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integration"))

from acl_clients import Acl, acl_client
from clients import Auth, confluent_admin
from harness import KstewardServer

from ksteward.cli.main import main
from ksteward.metadata.loader import load
from ksteward.metadata.records.kafka_json import kafka_uuid

ADMIN = Auth("PLAIN", "admin", "admin-secret")
KEEP: list[Acl] = [
    ("TOPIC", "orders", "LITERAL", "User:alice", "*", "READ", "ALLOW"),
    ("TOPIC", "pay", "PREFIXED", "User:bob", "10.0.0.1", "WRITE", "ALLOW"),
    ("GROUP", "app-", "PREFIXED", "User:*", "*", "DESCRIBE", "DENY"),
]
DROPPED: Acl = ("TOPIC", "orders", "LITERAL", "User:eve", "*", "WRITE", "ALLOW")


@pytest.fixture(scope="module")
def server_data(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A stopped server's data dir after: topic orders (3 partitions), the ACLs, topic payments, a delete."""
    from confluent_kafka.admin import NewTopic

    server = KstewardServer(tmp_path_factory.mktemp("pipeline"), "sasl", name="pipeline")
    try:
        server.start()
        admin = confluent_admin(server.bootstrap, ADMIN)
        for future in admin.create_topics([NewTopic("orders", 3, 1)], request_timeout=10).values():
            future.result()
        acls = acl_client("confluent-kafka", server.bootstrap)
        acls.create(ADMIN, [*KEEP, DROPPED])
        for future in admin.create_topics([NewTopic("payments", 1, 1)], request_timeout=10).values():
            future.result()
        assert acls.delete(ADMIN, [DROPPED]) == [{DROPPED}]
        server.stop()
        yield server.data_dir
    finally:
        server.kill()


def table(spark: SparkSession, out: Path, name: str) -> set[tuple[object, ...]]:
    return {tuple(row) for row in spark.read.parquet(str(out / name)).collect()}


def test_state_reproduces_the_servers_acls_and_topics(
    spark: SparkSession, server_data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    image, log = load(server_data, logging.getLogger("test"), read_only=True)
    log.close()
    out = tmp_path / "latest"
    assert main(["pipeline", "state", "--metadata-dir", str(server_data), "--out", str(out)]) == 0
    assert f"state at offset {image.offset} (snapshot at " in capsys.readouterr().out  # the stop wrote one

    acls = table(spark, out, "acls")
    assert {row[1:] for row in acls} == set(KEEP)
    assert {row[0] for row in acls} == {kafka_uuid(acl_id) for acl_id in image.acls}
    topics = {row[0]: row[1:] for row in table(spark, out, "topics")}
    assert topics == {t.name: (kafka_uuid(t.id), len(t.partitions), 1) for t in image.topics.by_name.values()}
    assert set(topics) == {"orders", "payments"} and topics["orders"][1] == 3

    # Just before the payments topic was created: orders and all four ACLs, eve's included.
    records = _records(spark, server_data)
    created = records.where(
        "source_kind = 'segment' AND record_type = 'TopicRecord' AND payload LIKE '%payments%'"
    ).first()
    assert created is not None
    earlier = tmp_path / "earlier"
    argv = ["pipeline", "state", "--metadata-dir", str(server_data), "--at", str(created.offset - 1)]
    assert main([*argv, "--out", str(earlier), "--format", "parquet"]) == 0
    assert {row[1:] for row in table(spark, earlier, "acls")} == {*KEEP, DROPPED}
    assert {row[0] for row in table(spark, earlier, "topics")} == {"orders"}


def test_csv_has_a_header_row_and_arrays_as_text(
    spark: SparkSession, server_data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "csv"
    argv = ["pipeline", "who-can", "--metadata-dir", str(server_data), "--resource", "TOPIC:orders"]
    assert main([*argv, "--operation", "READ", "--format", "csv", "--out", str(out)]) == 0
    (written,) = (out / "who_can").glob("*.csv")
    with written.open(newline="") as f:
        rows = list(csv.DictReader(f))
    assert [(r["principal"], r["host"], r["rule"]) for r in rows] == [("User:alice", "*", "acl")]
    assert rows[0]["allowing_acl_ids"] == rows[0]["acl_id"] != ""  # an array of one id, as text
    assert rows[0]["narrowed_by_acl_ids"] == ""  # an empty array

    capsys.readouterr()
    assert main(["pipeline", "state", "--metadata-dir", str(server_data), "--format", "csv", "--out", str(out)]) == 0
    assert f"{len(KEEP)} acls, 2 topics" in capsys.readouterr().out  # counted without the header rows
    with next((out / "acls").glob("*.csv")).open(newline="") as f:
        assert {tuple(r.values())[1:] for r in csv.DictReader(f)} == set(KEEP)


def _records(spark: SparkSession, data: Path):  # type: ignore[no-untyped-def]
    from ksteward.pipeline.readers import read_metadata

    return read_metadata(spark, data).frame


def test_bad_input_is_one_line_and_exit_2(
    spark: SparkSession, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["pipeline", "state", "--metadata-dir", str(tmp_path / "nope"), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"ksteward pipeline state: {tmp_path / 'nope'}: not a metadata log directory, a .log segment or "
                   "a .checkpoint snapshot"]  # fmt: skip
    assert spark.range(1).count() == 1  # the shared session survived the command
