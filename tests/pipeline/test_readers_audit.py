"""``readers.read_audit``: ksteward's, Confluent's and Kafka's audit lines, with exact line numbers for rejects."""

from __future__ import annotations

import datetime
import gzip
import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from ksteward.authorizer import AclBinding, AuditEvent, StandardAuthorizer, acl_id_text, forwarded_by
from ksteward.pipeline.jobs.audit import audit
from ksteward.pipeline.jobs.who_can import who_can
from ksteward.pipeline.local_frames import local_frame
from ksteward.pipeline.readers import InputError, read_audit
from ksteward.pipeline.readers.audit import audit_files
from ksteward.pipeline.schemas import ACL_SCHEMA, AUTHZ_EVENT_SCHEMA, REJECTS_SCHEMA, AuthorizerSettings

ACL_ID = uuid.UUID(int=0x5EED)
NOT_AUDIT = "not an audit line: neither JSON nor a kafka.authorizer.logger line"
T0 = datetime.datetime(2025, 1, 31, 23, 59, 59, 123000, tzinfo=datetime.UTC)


def local(moment: datetime.datetime) -> datetime.datetime:
    """How PySpark hands a timestamp back: naive, in the Python process's local time."""
    return datetime.datetime.fromtimestamp(moment.timestamp())


def ksteward_lines() -> list[str]:
    auth = StandardAuthorizer.from_config({"super.users": "User:admin"})
    auth.load_snapshot({ACL_ID: AclBinding("TOPIC", "ord", "PREFIXED", "User:bob", "*", "WRITE", "ALLOW")}, offset=42)
    out = []
    for principal, operation in (("User:bob", "WRITE"), ("User:eve", "READ"), ("User:admin", "ALTER_CONFIGS")):
        decision = auth.authorize_with_reason(principal, "10.0.0.1", operation, "TOPIC", "orders")
        event = AuditEvent(decision, principal=principal, host="10.0.0.1", operation=operation, resource_type="TOPIC",
                           resource_name="orders", method_name="kafka.Produce", timestamp=T0.timestamp())  # fmt: skip
        out.append(event.to_json())
    return out


CONFLUENT: dict[str, Any] = {
    "type": "io.confluent.kafka.server/authorization", "time": "2025-02-01T00:00:01.5Z", "specversion": "1.0",
    "data": {"methodName": "kafka.InitProducerId", "authenticationInfo": {"principal": "User:carol"},
             "authorizationInfo": {"granted": False, "operation": "Write", "resourceType": "TransactionalId",
                                   "resourceName": "tx-1", "patternType": "LITERAL", "superUserAuthorization": False},
             "requestMetadata": {"clientAddress": "/192.168.0.7"}},
}  # fmt: skip

KAFKA_4 = (
    "[2025-01-31 12:00:00,123] INFO Principal = User:alice is Denied operation = READ from host = 10.0.0.1 on "
    "resource = Topic:LITERAL:orders for request = Fetch with resourceRefCount = 1 based on rule DefaultDeny "
    "(kafka.authorizer.logger)"
)
KAFKA_4_ACL = (
    "[2025-01-31 12:00:01,000] DEBUG Principal = User:CN=svc, OU=x is Allowed operation = DESCRIBE_CONFIGS from "
    "host = 10.0.0.2 on resource = Group:PREFIXED:app- for request = DescribeConfigs with resourceRefCount = 1 "
    "based on rule MatchingAcl(acl=StandardAcl(resourceType=GROUP, resourceName=app-, patternType=PREFIXED, "
    "principal=User:CN=svc, OU=x, host=*, operation=DESCRIBE_CONFIGS, permissionType=ALLOW)) (kafka.authorizer.logger)"
)
KAFKA_3_ZK = (
    "[2023-06-01 08:30:00,007] INFO Principal = User:dave is Denied Operation = IdempotentWrite from host = 10.0.0.3 "
    "on resource = Cluster:LITERAL:kafka-cluster for request = InitProducerId with resourceRefCount = 1 "
    "(kafka.authorizer.logger)"
)


@pytest.fixture(scope="module")
def logs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("audit")
    lines = ksteward_lines()
    (root / "audit.log").write_text(
        "\n".join([lines[0], lines[1], "{not json", "", json.dumps({"type": "other", "time": "x"}), lines[2]]) + "\n"
    )
    cloud = {**CONFLUENT, "data": {k: v for k, v in CONFLUENT["data"].items() if k != "requestMetadata"}}
    (root / "audit-20250131T000000.000000Z.log").write_text(json.dumps(CONFLUENT) + "\n" + json.dumps(cloud) + "\n")
    with gzip.open(root / "kafka-authorizer.log.2025-01-31-12.gz", "wt") as f:
        f.write(f"{KAFKA_4}\n{KAFKA_4_ACL}\n[2025-01-31 12:00:02,000] INFO something else (kafka.authorizer.logger)\n")
    (root / "kafka-authorizer.log").write_text(KAFKA_3_ZK + "\n")
    (root / "server.log").write_text("[2025-01-31 12:00:00,000] INFO not an audit line (kafka.server)\n")
    return root


def test_reads_every_format_and_rejects_bad_lines_with_their_numbers(spark: SparkSession, logs: Path) -> None:
    events, rejects = read_audit(spark, logs)
    assert events.schema == AUTHZ_EVENT_SCHEMA and rejects.schema == REJECTS_SCHEMA
    rows = {(Path(r.source_file).name, r.source_line): r.asDict() for r in events.collect()}
    bad = {(Path(r.source_file).name, r.source_line): r.reason for r in rejects.collect()}

    assert sorted(rows) == [
        ("audit-20250131T000000.000000Z.log", 1), ("audit-20250131T000000.000000Z.log", 2),
        ("audit.log", 1), ("audit.log", 2), ("audit.log", 6),
        ("kafka-authorizer.log", 1), ("kafka-authorizer.log.2025-01-31-12.gz", 1),
        ("kafka-authorizer.log.2025-01-31-12.gz", 2),
    ]  # fmt: skip
    assert bad == {
        ("audit.log", 3): "malformed JSON",
        ("audit.log", 5): "not an authorization event (type other)",
        ("kafka-authorizer.log.2025-01-31-12.gz", 3): NOT_AUDIT,
    }  # server.log is not read from a directory

    bob = rows[("audit.log", 1)]
    assert (bob["principal"], bob["operation"], bob["resource_type"], bob["resource_name"], bob["granted"]) == (
        "User:bob", "WRITE", "TOPIC", "orders", True)  # fmt: skip
    assert (bob["rule"], bob["acl_id"], bob["image_offset"], bob["source_format"]) == (
        "acl", acl_id_text(ACL_ID), 42, "ksteward")  # fmt: skip
    assert bob["event_time"] == local(T0) and bob["event_date"] == datetime.date(2025, 1, 31)
    assert rows[("audit.log", 2)]["rule"] == "no_matching_acl" and not rows[("audit.log", 2)]["granted"]
    assert rows[("audit.log", 6)]["rule"] == "super_user"
    assert rows[("audit.log", 6)]["operation"] == "ALTER_CONFIGS"

    carol = rows[("audit-20250131T000000.000000Z.log", 1)]
    assert (carol["operation"], carol["resource_type"], carol["host"], carol["source_format"], carol["rule"]) == (
        "WRITE", "TRANSACTIONAL_ID", "192.168.0.7", "confluent", None)  # fmt: skip
    assert carol["event_date"] == datetime.date(2025, 2, 1)
    assert rows[("audit-20250131T000000.000000Z.log", 2)]["host"] == "unknown"  # Confluent Cloud: no clientAddress

    alice = rows[("kafka-authorizer.log.2025-01-31-12.gz", 1)]
    assert alice == {
        "event_time": local(datetime.datetime(2025, 1, 31, 12, 0, 0, 123000, tzinfo=datetime.UTC)),
        "event_date": datetime.date(2025, 1, 31), "principal": "User:alice", "host": "10.0.0.1",
        "operation": "READ", "resource_type": "TOPIC", "resource_name": "orders", "granted": False,
        "rule": "no_matching_acl", "acl_id": None, "image_offset": None, "method": "kafka.Fetch",
        "forwarded_by_principal": None, "forwarded_by_host": None, "source_format": "kafka_authorizer_log",
        "source_file": alice["source_file"], "source_line": 1,
    }  # fmt: skip
    svc = rows[("kafka-authorizer.log.2025-01-31-12.gz", 2)]
    assert (svc["principal"], svc["operation"], svc["resource_type"], svc["resource_name"], svc["rule"]) == (
        "User:CN=svc, OU=x", "DESCRIBE_CONFIGS", "GROUP", "app-", "acl")  # fmt: skip
    dave = rows[("kafka-authorizer.log", 1)]
    assert (dave["operation"], dave["resource_type"], dave["rule"], dave["method"]) == (
        "IDEMPOTENT_WRITE", "CLUSTER", None, "kafka.InitProducerId")  # fmt: skip


def test_line_numbers_are_exact_across_blocks(spark: SparkSession, tmp_path: Path) -> None:
    """A file Spark splits into several blocks still numbers its lines from 1 without a gap."""
    good = json.loads(ksteward_lines()[1])
    lines = [json.dumps({**good, "id": f"event-{n}"}) for n in range(3000)]  # one id each: 3000 events
    for n in (1, 1234, 2999, 3000):
        lines[n - 1] = f"garbage {n}"
    path = tmp_path / "audit.log"
    path.write_text("\n".join(lines) + "\n")
    spark.conf.set("spark.sql.files.maxPartitionBytes", str(200_000))  # ~1.2 MB: several blocks
    try:
        events, rejects = read_audit(spark, str(path))
        numbers = sorted(r.source_line for r in rejects.collect())
        assert spark.read.text(str(path)).rdd.getNumPartitions() > 1
    finally:
        spark.conf.unset("spark.sql.files.maxPartitionBytes")
    assert numbers == [1, 1234, 2999, 3000]
    assert events.count() == 2996


def test_paths(logs: Path) -> None:
    names = [Path(p).name for p in audit_files(logs)]
    assert "server.log" not in names and "audit.log" in names and "kafka-authorizer.log" in names
    assert [Path(p).name for p in audit_files(str(logs / "server.*"))] == ["server.log"]
    with pytest.raises(InputError, match="no such file"):
        audit_files(logs / "missing.log")
    with pytest.raises(InputError, match="no file matches"):
        audit_files(str(logs / "nothing-*.log"))


# --- requests a broker forwarded to the controller (KIP-590) -------------------------------------------------

ALICE_ACL, BROKER_ACL = uuid.UUID(int=0xA11CE), uuid.UUID(int=0xB40CE4)
BROKER = ("User:broker", "10.0.0.9")  # the forwarding broker's principal and address


def controller_lines() -> list[str]:
    """A controller's audit lines: two decisions of a request ``alice`` sent through a broker, as the Envelope
    handler writes them (inside ``forwarded_by``), and one of a request ``carol`` sent to it directly."""
    auth = StandardAuthorizer.from_config({})
    auth.load_snapshot(
        {
            ALICE_ACL: AclBinding("TOPIC", "orders", "LITERAL", "User:alice", "*", "ALTER_CONFIGS", "ALLOW"),
            BROKER_ACL: AclBinding("TOPIC", "orders", "LITERAL", "User:broker", "*", "ALL", "ALLOW"),
        },
        offset=7,
    )

    def line(principal: str, host: str, name: str) -> str:
        decision = auth.authorize_with_reason(principal, host, "ALTER_CONFIGS", "TOPIC", name)
        return AuditEvent(decision, principal=principal, host=host, operation="ALTER_CONFIGS", resource_type="TOPIC",
                          resource_name=name, method_name="kafka.IncrementalAlterConfigs",
                          timestamp=T0.timestamp()).to_json()  # fmt: skip

    with forwarded_by(*BROKER):
        forwarded = [line("User:alice", "10.0.0.1", "orders"), line("User:alice", "10.0.0.1", "payments")]
    return [*forwarded, line("User:carol", "10.0.0.2", "orders")]


@pytest.fixture(scope="module")
def controller_events(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> Any:
    root = tmp_path_factory.mktemp("controller-audit")
    (root / "audit.log").write_text("\n".join(controller_lines()) + "\n")
    events, rejects = read_audit(spark, root)
    assert rejects.count() == 0
    return events


def test_a_forwarded_decision_names_the_broker_and_a_direct_one_does_not(controller_events: Any) -> None:
    rows = sorted(
        (r.principal, r.host, r.resource_name, r.granted, r.forwarded_by_principal, r.forwarded_by_host)
        for r in controller_events.collect()
    )
    assert rows == [
        ("User:alice", "10.0.0.1", "orders", True, "User:broker", "10.0.0.9"),
        ("User:alice", "10.0.0.1", "payments", False, "User:broker", "10.0.0.9"),
        ("User:carol", "10.0.0.2", "orders", False, None, None),
    ]


def test_the_jobs_count_a_forwarded_decision_as_the_clients(spark: SparkSession, controller_events: Any) -> None:
    """The audit's used ACLs, access tuples and denied principals (what the report shows), and who-can's observed
    principals, all see ``alice`` from her own address, never the broker that forwarded her request."""
    acls = local_frame(
        spark,
        [
            (acl_id_text(ALICE_ACL), "TOPIC", "orders", "LITERAL", "User:alice", "*", "ALTER_CONFIGS", "ALLOW"),
            (acl_id_text(BROKER_ACL), "TOPIC", "orders", "LITERAL", "User:broker", "*", "ALL", "ALLOW"),
        ],
        ACL_SCHEMA,
    )
    result = audit(controller_events, acls, AuthorizerSettings(), start=None, end=None)
    try:
        assert {r.acl_id: r.hits for r in result.acl_usage.collect()} == {
            acl_id_text(ALICE_ACL): 1,
            acl_id_text(BROKER_ACL): 0,
        }
        assert {(r.principal, r.host) for r in result.access.collect()} == {
            ("User:alice", "10.0.0.1"),
            ("User:carol", "10.0.0.2"),
        }
        assert [r.principal for r in result.top_denied_principals.collect()] == ["User:alice", "User:carol"]
    finally:
        result.unpersist()

    observed = controller_events.select("principal", "host")
    only_alice = acls.where(acls.principal == "User:alice")
    allowed = who_can(only_alice, AuthorizerSettings(), "TOPIC", "orders", "ALTER_CONFIGS", principals=observed)
    assert {(r.principal, r.host) for r in allowed.collect()} == {("User:alice", "*"), ("User:alice", "10.0.0.1")}
