"""The whole loop through the real commands, as separate processes (issue 19): export a populated node, apply the
file to an empty node, export that one: the two files are byte-identical. A second apply of the same file changes
nothing and says so; ``ksteward plan --detailed-exitcode`` agrees (0: no changes). Then an ACL replaced in the
file is applied as one atomic change."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from clients import Auth, confluent_admin
from harness import KstewardServer

from ksteward.authorizer import AclBinding
from ksteward.cli.admin_client import AdminClient

ADMIN = Auth("PLAIN", "admin", "admin-secret")
JAAS = 'org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret";'
EVERYTHING = {"resource_type_filter": 1, "resource_name_filter": None, "pattern_type_filter": 1,
              "principal_filter": None, "host_filter": None, "operation": 1, "permission_type": 1}  # fmt: skip


def ksteward(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ksteward.cli.main", *argv], capture_output=True, text=True,
                          timeout=120, stdin=subprocess.DEVNULL)  # fmt: skip


def populate(node: KstewardServer) -> None:
    from confluent_kafka.admin import AclBinding as CAcl
    from confluent_kafka.admin import AclOperation, AclPermissionType, NewTopic, ResourcePatternType, ResourceType

    admin = confluent_admin(node.bootstrap, ADMIN)
    topics = [NewTopic("orders", 3, 1, config={"retention.ms": "3600000"}), NewTopic("payments", 1, 1)]
    for future in admin.create_topics(topics).values():
        future.result(timeout=30)
    acls = [CAcl(ResourceType.TOPIC, "orders", ResourcePatternType.LITERAL, "User:app", "*", AclOperation.WRITE,
                 AclPermissionType.ALLOW),
            CAcl(ResourceType.GROUP, "app-", ResourcePatternType.PREFIXED, "User:app", "*", AclOperation.READ,
                 AclPermissionType.ALLOW),
            CAcl(ResourceType.TOPIC, "pay", ResourcePatternType.PREFIXED, "User:audit", "*", AclOperation.DESCRIBE,
                 AclPermissionType.DENY)]  # fmt: skip
    for future in admin.create_acls(acls).values():
        future.result(timeout=30)


def live_acls(node: KstewardServer) -> set[AclBinding]:
    with AdminClient(node.bootstrap, sasl_plain=("admin", "admin-secret")) as client:
        listed, _ = client.describe_acls_at(EVERYTHING)
    return {AclBinding(*a) for a in listed}


def test_export_apply_export_is_byte_identical_and_a_second_apply_changes_nothing(
    server_factory: Callable[..., KstewardServer], tmp_path: Path
) -> None:
    source, target = server_factory("sasl").start(), server_factory("sasl").start()
    properties = tmp_path / "admin.properties"
    properties.write_text(f"security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\nsasl.jaas.config={JAAS}\n")
    conn = ["--command-config", str(properties)]
    populate(source)
    first, second = tmp_path / "source.yaml", tmp_path / "target.yaml"
    exported = ksteward("state", "export", "--bootstrap-server", source.bootstrap, *conn, "-o", str(first))
    assert exported.returncode == 0, exported.stderr

    applied = ksteward("apply", str(first), "--bootstrap-server", target.bootstrap, *conn, "--auto-approve")
    assert applied.returncode == 0, applied.stdout + applied.stderr
    assert "ACLs: 3 created and 0 deleted in one atomic change" in applied.stdout
    assert "Apply complete" in applied.stdout
    exported = ksteward("state", "export", "--bootstrap-server", target.bootstrap, *conn, "-o", str(second))
    assert exported.returncode == 0, exported.stderr
    assert second.read_bytes() == first.read_bytes()

    again = ksteward("apply", str(first), "--bootstrap-server", target.bootstrap, *conn, "--auto-approve")
    assert again.returncode == 0, again.stderr
    assert "No changes" in again.stdout
    planned = ksteward("plan", str(first), "--bootstrap-server", target.bootstrap, *conn, "--detailed-exitcode")
    assert planned.returncode == 0, planned.stdout + planned.stderr


def test_a_replaced_acl_is_one_atomic_change(server_factory: Callable[..., KstewardServer], tmp_path: Path) -> None:
    node = server_factory("sasl").start()
    properties = tmp_path / "admin.properties"
    properties.write_text(f"security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\nsasl.jaas.config={JAAS}\n")
    conn = ["--command-config", str(properties)]
    populate(node)
    state = tmp_path / "state.yaml"
    assert ksteward("state", "export", "--bootstrap-server", node.bootstrap, *conn, "-o", str(state)).returncode == 0
    text = state.read_text()
    # the file's owner switches ACL deletion on, and replaces User:app's WRITE on orders by ALL on it
    assert "acls: false" in text and "WRITE" in text, text
    state.write_text(text.replace("acls: false", "acls: true", 1).replace("WRITE", "ALL", 1))
    applied = ksteward("apply", str(state), "--bootstrap-server", node.bootstrap, *conn, "--auto-approve",
                       "--output", "json")  # fmt: skip
    assert applied.returncode == 0, applied.stdout + applied.stderr
    result = json.loads(applied.stdout)["acls"]
    assert (result["mode"], result["created"], result["deleted"]) == ("atomic", 1, 1)
    acls = live_acls(node)
    assert AclBinding("TOPIC", "orders", "LITERAL", "User:app", "*", "ALL", "ALLOW") in acls
    assert AclBinding("TOPIC", "orders", "LITERAL", "User:app", "*", "WRITE", "ALLOW") not in acls
    again = ksteward("apply", str(state), "--bootstrap-server", node.bootstrap, *conn, "--auto-approve")
    assert "No changes" in again.stdout, again.stdout + again.stderr
