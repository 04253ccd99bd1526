"""``ksteward acls --add/--remove --dry-run --audit-dir``, end to end: a real server writes its audit log, the
CLI (a subprocess, with its own Spark) runs the pipeline's what-if job on it and names the requests that
would flip, with counts."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from clients import Auth, confluent_admin
from harness import KstewardServer, ksteward_cli, wait_for

pytest.importorskip("pyspark")

ADMIN = Auth("PLAIN", "admin", "admin-secret")
ALICE = Auth("PLAIN", "alice", "alice-secret")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KstewardServer]:
    workdir = tmp_path_factory.mktemp("cliaclsaudit")
    overrides = {"audit.log.dir": str(workdir / "audit"), "allow.everyone.if.no.acl.found": "true"}
    s = KstewardServer(workdir, "sasl", overrides, name="cliaclsaudit")
    try:
        yield s.start()
    finally:
        s.kill()


def test_the_dry_run_names_the_requests_a_first_acl_would_deny(server: KstewardServer) -> None:
    from confluent_kafka.admin import NewTopic

    admin = confluent_admin(server.bootstrap, ADMIN)  # must outlive its futures
    admin.create_topics([NewTopic("open-topic", 1, 1)], request_timeout=15)["open-topic"].result()
    alice = confluent_admin(server.bootstrap, ALICE)
    for _ in range(3):  # alice describes the open topic: allowed by allow.everyone.if.no.acl.found
        assert "open-topic" in alice.list_topics(topic="open-topic", timeout=10).topics
    audit = server.workdir / "audit"

    def alice_events() -> int:
        log = audit / "audit.log"
        return log.read_text().count('"principal":"User:alice"') if log.exists() else 0

    wait_for(lambda: alice_events() >= 3, 10, "alice's three requests in the audit log")
    config = server.workdir / "admin.properties"
    jaas = 'org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret";'
    config.write_text(f"security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\nsasl.jaas.config={jaas}\n")
    result = ksteward_cli(
        "acls", "--bootstrap-server", server.bootstrap, "--command-config", str(config), "--add",
        "--allow-principal", "User:bob", "--operation", "Read", "--topic", "open-topic", "--dry-run",
        "--audit-dir", str(audit), "--allow-everyone-if-no-acl-found", "true", "--super-users", "User:admin",
        "--output", "json", timeout=240,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert [b["principal"] for b in document["created"]] == ["User:bob"]
    flips = document["audit"]["flips"]
    alice_flips = [f for f in flips if f["principal"] == "User:alice"]
    assert [
        (f["change"], f["operation"], f["resource_name"], f["rule_before"], f["rule_after"]) for f in alice_flips
    ] == [("ALLOWED->DENIED", "DESCRIBE", "open-topic", "allow_everyone_default", "no_matching_acl")]
    assert alice_flips[0]["events"] >= 3
    assert document["audit"]["would_be_denied"]["requests"] == len(flips)
    assert [w["code"] for w in document["warnings"]] == ["first-acl-closes-resource"]
    # Nothing was created.
    from confluent_kafka.admin import AclBindingFilter, AclOperation, AclPermissionType, ResourcePatternType
    from confluent_kafka.admin import ResourceType as Res

    any_filter = AclBindingFilter(Res.ANY, None, ResourcePatternType.ANY, None, None, AclOperation.ANY,
                                  AclPermissionType.ANY)  # fmt: skip
    assert admin.describe_acls(any_filter, request_timeout=10).result() == []
