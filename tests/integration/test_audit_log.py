"""The authorization audit log: one CloudEvents line per decision, Confluent's field names plus
ksteward's rule and ACL image offset, written by the real server and flushed at shutdown."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from acl_clients import acl_client
from clients import Auth
from rawkafka import connect

from ksteward.protocol.apis import ApiKey

ADMIN = Auth("PLAIN", "admin", "admin-secret")
GRANT = ("CLUSTER", "kafka-cluster", "LITERAL", "User:alice", "*", "DESCRIBE", "ALLOW")
ANY_FILTER = {
    "resource_type_filter": 1,
    "resource_name_filter": None,
    "pattern_type_filter": 1,
    "principal_filter": None,
    "host_filter": None,
    "operation": 1,
    "permission_type": 1,
}


def _alice_describes(address: tuple[str, int]) -> int:
    with connect(address) as conn:
        assert int(conn.sasl_plain("alice", "alice-secret").body.error_code) == 0
        return int(conn.request(ApiKey.DESCRIBE_ACLS, 3, ANY_FILTER).body.error_code)


def _events(audit_dir: Path) -> list[dict[str, Any]]:
    lines = []
    for path in sorted(audit_dir.glob("audit*.log")):
        lines += [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return lines


def _of(events: list[dict[str, Any]], principal: str, method: str) -> list[dict[str, Any]]:
    return [
        e
        for e in events
        if e["data"]["authenticationInfo"]["principal"] == principal and e["data"]["methodName"] == method
    ]


def test_decisions_are_audited_with_their_rule(server_factory, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    audit_dir = tmp_path / "audit"
    server = server_factory("sasl", {"audit.log.dir": str(audit_dir)}).start()
    assert _alice_describes(server.address) == 31
    acl_client("kafka-python", server.bootstrap).create(ADMIN, [GRANT])
    assert _alice_describes(server.address) == 0
    server.stop()  # a clean stop flushes the audit writer

    events = _events(audit_dir)
    assert events, "no audit lines written"
    for e in events:
        assert e["specversion"] == "1.0"
        assert e["type"] == "io.confluent.kafka.server/authorization"
        assert e["data"]["requestMetadata"]["clientAddress"] == "127.0.0.1"
    denied, allowed = _of(events, "User:alice", "kafka.DescribeAcls")
    info = denied["data"]["authorizationInfo"]
    assert info["granted"] is False
    assert (info["operation"], info["resourceType"], info["resourceName"]) == ("Describe", "Cluster", "kafka-cluster")
    assert info["patternType"] == "LITERAL" and info["superUserAuthorization"] is False
    assert denied["data"]["ksteward"]["rule"] == "no_matching_acl"

    assert allowed["data"]["authorizationInfo"]["granted"] is True
    extra = allowed["data"]["ksteward"]
    assert extra["rule"] == "acl"
    assert len(extra["acl"]["id"]) == 22 and extra["acl"]["principal"] == "User:alice"
    # The ACL image that decided includes the grant, so its offset is past the denied decision's.
    assert extra["imageOffset"] > denied["data"]["ksteward"]["imageOffset"]

    (create,) = _of(events, "User:admin", "kafka.CreateAcls")
    assert create["data"]["authorizationInfo"]["superUserAuthorization"] is True
    assert create["data"]["ksteward"]["rule"] == "super_user"
    assert "alice-secret" not in (audit_dir / "audit.log").read_text()


def test_audit_log_denied_false_keeps_only_allowed(server_factory, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    audit_dir = tmp_path / "audit"
    server = server_factory("sasl", {"audit.log.dir": str(audit_dir), "audit.log.denied": "false"}).start()
    assert _alice_describes(server.address) == 31
    acl_client("kafka-python", server.bootstrap).create(ADMIN, [GRANT])
    server.stop()
    events = _events(audit_dir)
    assert events and all(e["data"]["authorizationInfo"]["granted"] for e in events)
    assert not _of(events, "User:alice", "kafka.DescribeAcls")
