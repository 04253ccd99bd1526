"""End to end: the real server writes its metadata log and audit log through real clients; the pipeline reads them.

The server is started, topics and ACLs are created and one ACL deleted with confluent-kafka, the server is
stopped, and the state job must reproduce exactly those ACLs (with the ids the server's own loader sees) and
topics, and an earlier ``--at`` offset the earlier state. On a second server with the audit log on, alice
lists the topics; ``audit``, ``who-can`` and ``whatif`` then answer from its logs: her ACL's hits, who may
read, and the DESCRIBEs that deleting her ACL would deny.
"""

from __future__ import annotations

import csv
import json
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


ALICE = Auth("PLAIN", "alice", "alice-secret")
ALICE_READS_ORDERS: Acl = ("TOPIC", "orders", "LITERAL", "User:alice", "*", "READ", "ALLOW")
LISTS = 4


@pytest.fixture(scope="module")
def audited(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path]]:
    """A stopped server's data dir and audit log after: admin creates topics orders and payments and gives alice
    READ on orders; alice lists the topics ``LISTS`` times (she may DESCRIBE orders, not payments)."""
    from confluent_kafka.admin import NewTopic

    workdir = tmp_path_factory.mktemp("audited")
    server = KstewardServer(workdir, "sasl", {"audit.log.dir": str(workdir / "audit")}, name="audited")
    try:
        server.start()
        admin = confluent_admin(server.bootstrap, ADMIN)
        for future in admin.create_topics([NewTopic("orders", 1, 1), NewTopic("payments", 1, 1)]).values():
            future.result()
        acl_client("confluent-kafka", server.bootstrap).create(ADMIN, [ALICE_READS_ORDERS])
        alice = confluent_admin(server.bootstrap, ALICE)
        for _ in range(LISTS):
            assert set(alice.list_topics(timeout=10).topics) == {"orders"}
        server.stop()  # the audit log is complete once the server has stopped
        yield server.data_dir, workdir / "audit"
    finally:
        server.kill()


def test_audit_who_can_and_whatif_on_a_real_servers_logs(
    spark: SparkSession, audited: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from ksteward.pipeline.readers import read_audit

    data, audit_log = audited
    common = ["--metadata-dir", str(data), "--super-users", "User:admin"]
    events = read_audit(spark, [str(audit_log)]).frame.where("principal = 'User:alice'")
    describes = events.where("operation = 'DESCRIBE' AND resource_name = 'orders' AND granted").count()
    assert describes >= LISTS
    (acl_id,) = {r.acl_id for r in events.where("resource_name = 'orders'").collect()}  # the server named it

    out = tmp_path / "audit"
    assert main(["pipeline", "audit", *common, "--audit", str(audit_log), "--out", str(out)]) == 0
    usage = {r.acl_id: (r.principal, r.hits) for r in spark.read.parquet(str(out / "acl_usage")).collect()}
    assert usage == {acl_id: ("User:alice", describes)}
    totals = spark.read.parquet(str(out / "totals")).first()
    assert totals is not None and totals["unattributed"] == 0 and totals["acls_unused"] == 0
    assert (out / "report.html").is_file()

    assert main(["pipeline", "who-can", *common, "--resource", "TOPIC:orders", "--operation", "READ"]) == 0
    shown = capsys.readouterr().out
    assert "2 principal/host pair(s) may READ TOPIC:orders" in shown and acl_id in shown

    plan = tmp_path / "plan.json"
    fields = ("resource_type", "resource_name", "pattern_type", "principal", "host", "operation", "permission_type")
    plan.write_text(json.dumps({"delete": [dict(zip(fields, ALICE_READS_ORDERS, strict=True))]}))
    whatif_out = tmp_path / "whatif"
    argv = ["pipeline", "whatif", *common, "--audit", str(audit_log), "--plan", str(plan), "--out", str(whatif_out)]
    assert main(argv) == 0
    flips = spark.read.parquet(str(whatif_out / "flips")).collect()
    assert [(r.principal, r.operation, r.resource_name, r.events, r.change, r.rule_after) for r in flips] == [
        ("User:alice", "DESCRIBE", "orders", describes, "ALLOWED->DENIED", "no_matching_acl")
    ]


def _records(spark: SparkSession, data: Path):  # type: ignore[no-untyped-def]
    from ksteward.pipeline.readers import read_metadata

    return read_metadata(spark, data).frame


def test_bad_input_is_one_line_and_exit_2(
    spark: SparkSession, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["pipeline", "state", "--metadata-dir", str(tmp_path / "nope"), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and err[0].endswith(" state [1/2] read ...")  # the progress line of the phase that failed
    assert err[1:] == [f"ksteward pipeline state: {tmp_path / 'nope'}: not a metadata log directory, a .log segment or "
                   "a .checkpoint snapshot"]  # fmt: skip
    assert spark.range(1).count() == 1  # the shared session survived the command
