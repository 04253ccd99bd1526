"""Audit events (CloudEvents 1.0 with Confluent's field names) and the buffered, rotating writer."""

from __future__ import annotations

import base64
import json
import uuid
from pathlib import Path

import pytest

from ksteward.authorizer import (
    AUDIT_EVENT_TYPE,
    AUDIT_LIVE_FILE_NAME,
    AclBinding,
    AuditEvent,
    AuditLogWriter,
    AuthorizationResult,
    Decision,
    Rule,
    StandardAuthorizer,
    acl_id_text,
)

ACL_ID = uuid.UUID("6f1c2d3e-4a5b-4c6d-8e7f-0123456789ab")
ALLOW_PREFIX = AclBinding("TOPIC", "ord", "PREFIXED", "User:bob", "*", "WRITE", "ALLOW")


def authorizer() -> StandardAuthorizer:
    auth = StandardAuthorizer.from_config({"super.users": "User:admin"})
    auth.load_snapshot({ACL_ID: ALLOW_PREFIX}, offset=42)
    return auth


def event(auth: StandardAuthorizer, principal: str = "User:bob", operation: str = "WRITE", **kw: str) -> AuditEvent:
    name = kw.get("name", "orders")
    decision = auth.authorize_with_reason(principal, "10.0.0.1", operation, "TOPIC", name)
    return AuditEvent(
        decision,
        principal=principal,
        host="10.0.0.1",
        operation=operation,
        resource_type="TOPIC",
        resource_name=name,
        method_name="kafka.Produce",
        timestamp=1738324800.123,
    )


def test_acl_id_text_is_kafkas_base64() -> None:
    text = acl_id_text(ACL_ID)
    assert len(text) == 22 and "=" not in text
    assert uuid.UUID(bytes=base64.urlsafe_b64decode(text + "==")) == ACL_ID
    assert acl_id_text("custom-id") == "custom-id"


def test_event_for_an_acl_decision_has_confluents_fields_and_ksteward_reason() -> None:
    line = event(authorizer()).to_json(cluster_id="abc", event_id="e-1")
    assert "\n" not in line
    doc = json.loads(line)
    assert doc == {
        "specversion": "1.0",
        "id": "e-1",
        "source": "crn:///kafka=abc",
        "type": AUDIT_EVENT_TYPE,
        "time": "2025-01-31T12:00:00.123Z",
        "datacontenttype": "application/json",
        "subject": "crn:///kafka=abc/topic=orders",
        "data": {
            "serviceName": "crn:///kafka=abc",
            "methodName": "kafka.Produce",
            "resourceName": "crn:///kafka=abc/topic=orders",
            "authenticationInfo": {"principal": "User:bob"},
            "authorizationInfo": {
                "granted": True,
                "operation": "Write",
                "resourceType": "Topic",
                "resourceName": "orders",
                "patternType": "LITERAL",
                "superUserAuthorization": False,
                "aclAuthorization": {"permissionType": "Allow", "host": "*"},
            },
            "requestMetadata": {"clientAddress": "10.0.0.1"},
            "ksteward": {
                "rule": "acl",
                "imageOffset": 42,
                "acl": {
                    "id": acl_id_text(ACL_ID),
                    "resourceType": "Topic",
                    "resourceName": "ord",
                    "patternType": "PREFIXED",
                    "principal": "User:bob",
                    "host": "*",
                    "operation": "Write",
                    "permissionType": "Allow",
                },
            },
        },
    }


@pytest.mark.parametrize(
    ("principal", "operation", "granted", "rule", "super_user"),
    [
        ("User:admin", "DELETE", True, "super_user", True),
        ("User:bob", "READ", False, "no_matching_acl", False),
    ],
)
def test_event_rules_without_an_acl(principal: str, operation: str, granted: bool, rule: str, super_user: bool) -> None:
    doc = event(authorizer(), principal, operation).to_dict()
    info = doc["data"]["authorizationInfo"]
    assert (info["granted"], info["superUserAuthorization"]) == (granted, super_user)
    assert "aclAuthorization" not in info
    assert doc["data"]["ksteward"] == {"rule": rule, "imageOffset": 42}


def test_event_for_the_allow_everyone_default() -> None:
    auth = StandardAuthorizer.from_config({"allow.everyone.if.no.acl.found": "true"})
    auth.complete_initial_load()
    doc = event(auth).to_dict()
    assert doc["data"]["ksteward"] == {"rule": "allow_everyone_default", "imageOffset": -1}
    assert doc["data"]["authorizationInfo"]["granted"] is True


def test_event_escapes_and_encodes_names() -> None:
    auth = StandardAuthorizer.from_config({"allow.everyone.if.no.acl.found": "true"})
    auth.complete_initial_load()
    doc = event(auth, principal='User:"quote"\n', name="a/b c*ü").to_dict(cluster_id="c 1")
    assert doc["data"]["authenticationInfo"]["principal"] == 'User:"quote"\n'
    assert doc["data"]["authorizationInfo"]["resourceName"] == "a/b c*ü"
    assert doc["subject"] == "crn:///kafka=c%201/topic=a%2Fb%20c%2A%C3%BC"


def test_cluster_subject_is_the_service() -> None:
    decision = Decision(AuthorizationResult.DENIED, Rule.NO_MATCHING_ACL)
    ev = AuditEvent(
        decision,
        principal="User:x",
        host="h",
        operation="ALTER",
        resource_type="CLUSTER",
        resource_name="kafka-cluster",
        method_name="kafka.CreateAcls",
    )
    doc = ev.to_dict(cluster_id="abc")
    assert doc["subject"] == doc["source"] == "crn:///kafka=abc"
    assert doc["data"]["authorizationInfo"]["resourceType"] == "Cluster"
    assert doc["id"] and uuid.UUID(doc["id"]).version == 4


def read_lines(directory: Path) -> list[dict]:
    lines = []
    for path in [*sorted(directory.glob("audit-*.log")), directory / AUDIT_LIVE_FILE_NAME]:
        lines += [json.loads(line) for line in path.read_text().splitlines()]
    return lines


def test_writer_buffers_until_flush(tmp_path: Path) -> None:
    auth = authorizer()
    with AuditLogWriter(tmp_path, max_bytes=1 << 20, flush_events=10_000, flush_interval=60) as writer:
        writer.write(event(auth))
        assert (tmp_path / AUDIT_LIVE_FILE_NAME).read_text() == ""  # nothing rendered on the request path
        writer.flush()
        lines = read_lines(tmp_path)
        assert len(lines) == 1 and lines[0]["data"]["ksteward"]["rule"] == "acl"


def test_writer_filters_allowed_and_denied(tmp_path: Path) -> None:
    auth = authorizer()
    allowed, denied = event(auth), event(auth, operation="READ")
    for flags, expected in [((True, True), 2), ((True, False), 1), ((False, True), 1), ((False, False), 0)]:
        directory = tmp_path / f"{flags}"
        with AuditLogWriter(directory, max_bytes=1 << 20, allowed=flags[0], denied=flags[1]) as writer:
            writer.write(allowed)
            writer.write(denied)
        lines = read_lines(directory)
        assert len(lines) == expected
        logged = {granted for granted, on in zip((True, False), flags, strict=True) if on}
        assert {line["data"]["authorizationInfo"]["granted"] for line in lines} <= logged


def test_writer_rotates_by_size_and_keeps_order(tmp_path: Path) -> None:
    auth = authorizer()
    line_size = len(event(auth).to_json()) + 1
    with AuditLogWriter(tmp_path, max_bytes=line_size * 3, flush_events=7) as writer:
        for i in range(20):
            ev = event(auth)
            ev.timestamp = 1_700_000_000 + i
            writer.write(ev)
            if i % 5 == 0:
                writer.flush()
    rotated = sorted(tmp_path.glob("audit-*.log"))
    assert len(rotated) >= 6
    for path in [*rotated, tmp_path / AUDIT_LIVE_FILE_NAME]:
        assert path.stat().st_size <= line_size * 3
    lines = read_lines(tmp_path)
    assert [line["time"] for line in lines] == sorted(line["time"] for line in lines)
    assert len(lines) == 20 and len({line["id"] for line in lines}) == 20


def test_writer_max_files_and_reopen(tmp_path: Path) -> None:
    auth = authorizer()
    line_size = len(event(auth).to_json()) + 1
    with AuditLogWriter(tmp_path, max_bytes=line_size, max_files=2) as writer:
        for _ in range(6):
            writer.write(event(auth))
            writer.flush()
    assert len(list(tmp_path.glob("audit-*.log"))) == 2
    with AuditLogWriter(tmp_path, max_bytes=line_size * 10) as writer:  # appends to the live file
        writer.write(event(auth))
    assert len((tmp_path / AUDIT_LIVE_FILE_NAME).read_text().splitlines()) == 2


def test_background_thread_flushes_past_the_threshold(tmp_path: Path) -> None:
    auth = authorizer()
    live = tmp_path / AUDIT_LIVE_FILE_NAME
    writer = AuditLogWriter(tmp_path, max_bytes=1 << 20, flush_events=5, flush_interval=3600)
    try:
        for _ in range(4):
            writer.write(event(auth))
        with writer._drained:  # the thread wakes on the threshold, not on the hour-long interval
            writer.write(event(auth))
            assert writer._drained.wait_for(lambda: len(live.read_text().splitlines()) == 5, timeout=30)
    finally:
        writer.close()


def test_write_after_close_raises(tmp_path: Path) -> None:
    writer = AuditLogWriter(tmp_path, max_bytes=100)
    writer.close()
    writer.close()  # idempotent
    with pytest.raises(ValueError):
        writer.write(event(authorizer()))
    with pytest.raises(ValueError):
        AuditLogWriter(tmp_path, max_bytes=0)
