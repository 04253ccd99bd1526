"""``ksteward acls`` over PLAINTEXT (no ``--command-config``: the caller is ``User:ANONYMOUS``) and through
``--bootstrap-controller`` (KIP-919, ksteward's own client), read back with kafka-python on the broker."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator

import pytest
from acl_clients import Acl, Filter, acl_client
from clients import Auth
from harness import KstewardServer, ksteward_cli, wait_for

PLAIN = Auth()
AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KstewardServer]:
    # No super users: everyone may alter ACLs while the cluster resource has none (allow-everyone).
    overrides = {"authorizer.class.name": AUTHORIZER, "allow.everyone.if.no.acl.found": "true"}
    s = KstewardServer(tmp_path_factory.mktemp("cliaclsplain"), "server", overrides, name="cliaclsplain")
    try:
        yield s.start()
    finally:
        s.kill()


def broker(server: KstewardServer, *flags: str) -> subprocess.CompletedProcess[str]:
    return ksteward_cli("acls", "--bootstrap-server", server.bootstrap, *flags)


def controller(server: KstewardServer, *flags: str) -> subprocess.CompletedProcess[str]:
    return ksteward_cli("acls", "--bootstrap-controller", f"127.0.0.1:{server.controller_port}", *flags)


def ok(result: subprocess.CompletedProcess[str]) -> subprocess.CompletedProcess[str]:
    assert result.returncode == 0, result.stderr
    return result


def state(server: KstewardServer, acl_filter: Filter) -> set[Acl]:
    return acl_client("kafka-python", server.bootstrap).describe(PLAIN, acl_filter)


def test_plaintext_add_list_remove(server: KstewardServer) -> None:
    ok(broker(server, "--add", "--allow-principal", "User:p1", "--operation", "Write", "--topic", "plain-t"))
    want = {("TOPIC", "plain-t", "LITERAL", "User:p1", "*", "WRITE", "ALLOW")}
    assert state(server, ("TOPIC", "plain-t", None, None, None, None, None)) == want
    assert ok(broker(server, "--list", "--topic", "plain-t")).stdout.splitlines() == [
        "Current ACLs for resource `ResourcePattern(resourceType=TOPIC, name=plain-t, patternType=LITERAL)`:",
        "\t(principal=User:p1, host=*, operation=WRITE, permissionType=ALLOW)",
        "",
    ]
    ok(broker(server, "--remove", "--topic", "plain-t", "--force"))
    assert state(server, ("TOPIC", "plain-t", None, None, None, None, None)) == set()


def test_bootstrap_controller_uses_ksteward_s_own_client(server: KstewardServer) -> None:
    ok(controller(server, "--add", "--allow-principal", "User:c1", "--operation", "Read", "--topic", "ctl-t"))
    want = {("TOPIC", "ctl-t", "LITERAL", "User:c1", "*", "READ", "ALLOW")}
    only = ("TOPIC", "ctl-t", None, None, None, None, None)
    wait_for(lambda: state(server, only) == want, 10, "the ACL written on the controller, read on the broker")
    listed = json.loads(ok(controller(server, "--list", "--topic", "ctl-t", "--output", "json")).stdout)
    assert listed["resources"][0]["acls"] == [
        {"principal": "User:c1", "host": "*", "operation": "READ", "permission_type": "ALLOW"}
    ]
    who = json.loads(ok(controller(server, "--who-can", "--operation", "Read", "--topic", "ctl-t", "--output",
                                   "json")).stdout)  # fmt: skip
    assert [(r["principal"], r["rule"]) for r in who["principals"]] == [("User:c1", "acl")]
    dry = json.loads(ok(controller(server, "--remove", "--topic", "ctl-t", "--dry-run", "--output", "json")).stdout)
    real = json.loads(ok(controller(server, "--remove", "--topic", "ctl-t", "--force", "--output", "json")).stdout)
    assert dry["deleted"] == real["deleted"]
    assert [(b["principal"], b["operation"]) for b in real["deleted"]] == [("User:c1", "READ")]
    wait_for(lambda: state(server, only) == set(), 10, "the removal seen on the broker")


def test_the_guard_protects_user_anonymous_on_plaintext(server: KstewardServer) -> None:
    grant = ["--allow-principal", "User:ANONYMOUS", "--operation", "Alter", "--cluster"]
    first = ok(broker(server, "--add", *grant))
    assert "CLUSTER resource `kafka-cluster` has no ACLs" in first.stderr  # allow-everyone is hidden: "may be true"
    remove = ["--remove", *grant]
    # Told the real setting, the guard sees that the default would still allow ANONYMOUS once no CLUSTER ACL is left.
    ok(broker(server, *remove, "--dry-run", "--allow-everyone-if-no-acl-found", "true"))
    # Left to assume Kafka's default (false), it refuses, and says what it assumed.
    assumed = broker(server, *remove, "--dry-run")
    assert assumed.returncode == 1
    # (ALTER does not imply DESCRIBE_CONFIGS: ANONYMOUS cannot read the broker's settings any more.)
    assert "allow.everyone.if.no.acl.found: DescribeConfigs on the broker failed" in assumed.stderr
    assert "assumed false, Kafka's default" in assumed.stderr
    assert "take away User:ANONYMOUS's right to alter ACLs" in assumed.stderr
    # Once another principal has a CLUSTER ACL, removing ANONYMOUS's own is a lockout whatever the default says.
    ok(broker(server, "--add", "--allow-principal", "User:other", "--operation", "All", "--cluster"))
    refused = broker(server, *remove, "--allow-everyone-if-no-acl-found", "true")
    assert refused.returncode == 1
    cluster: Filter = ("CLUSTER", None, None, "User:ANONYMOUS", None, None, None)
    assert len(state(server, cluster)) == 1
    forced = json.loads(ok(broker(server, *remove, "--force", "--output", "json")).stdout)
    # (ANONYMOUS can no longer describe ACLs now, so the DeleteAcls answer is the evidence.)
    assert [(b["principal"], b["operation"]) for b in forced["deleted"]] == [("User:ANONYMOUS", "ALTER")]
    assert forced["lockout"]["forced"] is True
