"""``ksteward acls --dry-run --audit-dir``: the pipeline's what-if job on an audit log, called as the dry run
calls it (live ACLs as the state, the dry run's creations and deletions as the plan)."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from ksteward.authorizer import AclBinding, AuthorizerSettings
from ksteward.cli.acls.audit_whatif import audit_flips, flips_text
from ksteward.cli.admin_common import UsageError


def kafka_line(principal: str, op: str, host: str, topic: str) -> str:
    return (
        f"[2026-11-01 12:00:00,000] INFO Principal = {principal} is Allowed operation = {op} from host = {host} on "
        f"resource = Topic:LITERAL:{topic} for request = Fetch with resourceRefCount = 1 based on rule DefaultAllow "
        "(kafka.authorizer.logger)"
    )


def read(topic: str, principal: str) -> AclBinding:
    return AclBinding("TOPIC", topic, "LITERAL", principal, "*", "READ", "ALLOW")


@pytest.fixture
def audit_dir(tmp_path: Path) -> Path:
    lines = [kafka_line("User:carol", "READ", "10.0.0.3", "open")] * 2
    lines += [
        kafka_line("User:dave", "WRITE", "10.0.0.4", "open"),
        kafka_line("User:alice", "READ", "10.0.0.1", "orders"),
    ]
    (tmp_path / "kafka-authorizer.log").write_text("\n".join(lines) + "\n")
    return tmp_path


def test_a_first_allow_flips_everyone_else_with_counts(spark: SparkSession, audit_dir: Path) -> None:
    live = [read("orders", "User:alice")]
    summary = audit_flips(str(audit_dir), live, AuthorizerSettings(allow_everyone_if_no_acl_found=True),
                          create=[read("open", "User:billing")], delete=[])  # fmt: skip
    assert summary is not None
    assert summary["would_be_denied"] == {"requests": 2, "events": 3}
    assert summary["would_be_allowed"] == {"requests": 0, "events": 0}
    assert {(f["principal"], f["events"], f["rule_after"]) for f in summary["flips"]} == {
        ("User:carol", 2, "no_matching_acl"),
        ("User:dave", 1, "no_matching_acl"),
    }
    text = flips_text(summary)
    assert text[0] == f"Audit log {audit_dir}: 2 request(s) (3 events) would be denied, 0 (0 events) newly allowed"
    assert text[1].startswith("\tALLOWED->DENIED\tUser:carol\t10.0.0.3\tREAD\tTOPIC:open\t2 events")


def test_a_removal_flips_the_requests_it_allowed(spark: SparkSession, audit_dir: Path) -> None:
    live = [read("orders", "User:alice"), read("open", "User:carol")]
    summary = audit_flips(str(audit_dir), live, AuthorizerSettings(), create=[], delete=[live[0]])
    assert summary is not None
    assert [(f["change"], f["principal"], f["resource_name"]) for f in summary["flips"]] == [
        ("ALLOWED->DENIED", "User:alice", "orders")
    ]


def test_a_directory_without_audit_files_is_a_usage_error(spark: SparkSession, tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"--audit-dir .*no audit log files"):
        audit_flips(str(tmp_path), [], AuthorizerSettings(), create=[], delete=[])
