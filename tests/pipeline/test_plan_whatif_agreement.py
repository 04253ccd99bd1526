"""``ksteward plan --audit-dir`` and ``ksteward pipeline whatif`` agree on the same audit log.

A real server logs alice's requests (she may READ orders, so she may DESCRIBE it; she may not DESCRIBE
payments). A state file then drops her READ on orders and gives her DESCRIBE on payments. ``plan`` reads the
ACLs live (DescribeAcls) and hands its creations and deletions to the what-if job; ``pipeline whatif`` reads
the ACLs from the stopped server's metadata log and the same changes from a plan file. The flipped requests
and their counts must be the same.
"""

from __future__ import annotations

import json
import shutil
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

ADMIN = Auth("PLAIN", "admin", "admin-secret")
ALICE = Auth("PLAIN", "alice", "alice-secret")
ALICE_READS_ORDERS: Acl = ("TOPIC", "orders", "LITERAL", "User:alice", "*", "READ", "ALLOW")
LISTS = 3
JAAS = 'org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret";'


@pytest.fixture(scope="module")
def logged(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[KstewardServer, Path]]:
    """A running server and a copy of its complete audit log of alice listing topics ``LISTS`` times."""
    from confluent_kafka.admin import NewTopic

    workdir = tmp_path_factory.mktemp("planwhatif")
    server = KstewardServer(workdir, "sasl", {"audit.log.dir": str(workdir / "audit")}, name="planwhatif")
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
        snapshot = workdir / "audit-snapshot"
        shutil.copytree(workdir / "audit", snapshot)
        server.start()
        yield server, snapshot
    finally:
        server.kill()


def flips_of(rows: list[dict[str, object]]) -> set[tuple[object, ...]]:
    keys = ("change", "principal", "host", "operation", "resource_type", "resource_name", "events")
    return {tuple(r[k] for k in keys) for r in rows}


def test_plan_flips_agree_with_the_whatif_job(
    spark: SparkSession, logged: tuple[KstewardServer, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    server, audit = logged
    props = tmp_path / "admin.properties"
    props.write_text(f"security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\nsasl.jaas.config={JAAS}\n")
    file = tmp_path / "alice.yaml"
    file.write_text("ownership: {principals: ['User:alice']}\ndelete: {acls: true}\n"
                    "acls: {'User:alice': ['ALLOW DESCRIBE TOPIC:LITERAL:payments']}\n")  # fmt: skip
    capsys.readouterr()
    argv = ["plan", str(file), "--bootstrap-server", server.bootstrap, "--command-config", str(props),
            "--super-users", "User:admin", "--audit-dir", str(audit), "--output", "json"]  # fmt: skip
    assert main(argv) == 0
    plan = json.loads(capsys.readouterr().out)
    whatif = plan["whatif"]
    assert whatif is not None
    planned = flips_of(whatif["flips"])
    # Denied topic DESCRIBEs in Metadata are not logged (Kafka logs them only when allowed), so the DESCRIBE on
    # payments the file grants flips nothing seen; the READ it drops flips alice's DESCRIBEs of orders.
    assert {(f[0], f[3], f[5]) for f in planned} == {("ALLOWED->DENIED", "DESCRIBE", "orders")}
    assert sorted(a["action"] for a in plan["acls"]) == ["create", "delete"]

    server.stop()
    plan_file = tmp_path / "whatif-plan.json"
    changes = {"create": [a["acl"] for a in plan["acls"] if a["action"] == "create"],
               "delete": [a["acl"] for a in plan["acls"] if a["action"] == "delete"]}  # fmt: skip
    plan_file.write_text(json.dumps(changes))
    out = tmp_path / "whatif"
    assert main(["pipeline", "whatif", "--metadata-dir", str(server.data_dir), "--super-users", "User:admin",
                 "--audit", str(audit), "--plan", str(plan_file), "--out", str(out)]) == 0  # fmt: skip
    rows = [r.asDict() for r in spark.read.parquet(str(out / "flips")).collect()]
    assert flips_of(rows) == planned
    denied = [r for r in rows if r["change"] == "ALLOWED->DENIED"]
    assert whatif["would_be_denied"] == {"requests": len(denied), "events": sum(int(r["events"]) for r in denied)}
