"""``ksteward acls`` as a subprocess against a real SASL_PLAINTEXT server, through ``--command-config``: every
flag checked against the ACLs read back with kafka-python, AclCommand's output line by line, the dry run naming
exactly what the real remove deletes, the lockout guard, the warnings, and who-can / explain agreeing with
``ksteward.authorizer`` on the live ACLs."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest
from acl_clients import Acl, Filter, acl_client
from clients import Auth, confluent_admin
from harness import KstewardServer, ksteward_cli

from ksteward.authorizer import AclBinding, AuthorizerSettings, StandardAuthorizer

ADMIN = Auth("PLAIN", "admin", "admin-secret")
JAAS = 'org.apache.kafka.common.security.plain.PlainLoginModule required username="{}" password="{}";'
ANY: Filter = (None, None, None, None, None, None, None)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KstewardServer]:
    s = KstewardServer(tmp_path_factory.mktemp("cliacls"), "sasl", name="cliacls")
    try:
        s.start()
        from confluent_kafka.admin import NewTopic

        admin = confluent_admin(s.bootstrap, ADMIN)  # must outlive its futures
        futures = admin.create_topics(
            [NewTopic(n, 1, 1) for n in ("orders", "fmt-topic", "rm-a", "wc-topic", "warn-first")], request_timeout=15
        )
        for f in futures.values():
            f.result()
        for user, password in (("admin", "admin-secret"), ("alice", "alice-secret")):
            jaas = JAAS.format(user, password)
            (s.workdir / f"{user}.properties").write_text(
                f"security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\nsasl.jaas.config={jaas}\n"
            )
        yield s
    finally:
        s.kill()


def acls(server: KstewardServer, *flags: str, user: str = "admin") -> subprocess.CompletedProcess[str]:
    config = str(server.workdir / f"{user}.properties")
    return ksteward_cli("acls", "--bootstrap-server", server.bootstrap, "--command-config", config, *flags)


def ok(result: subprocess.CompletedProcess[str]) -> subprocess.CompletedProcess[str]:
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    return result


def state(server: KstewardServer, acl_filter: Filter = ANY) -> set[Acl]:
    """The ACLs as kafka-python reads them back."""
    return acl_client("kafka-python", server.bootstrap).describe(ADMIN, acl_filter)


def test_every_principal_host_operation_and_resource_flag(server: KstewardServer) -> None:
    ok(acls(server, "--add", "--allow-principal", "User:a1", "--allow-principal", "User:a2", "--allow-host", "10.0.0.1",
            "--deny-principal", "User:d1", "--deny-host", "10.0.0.2", "--operation", "Read", "--operation", "Describe",
            "--topic", "flags-", "--group", "flags-", "--resource-pattern-type", "prefixed"))  # fmt: skip
    want = {(rt, "flags-", "PREFIXED", p, "10.0.0.1", op, "ALLOW") for rt in ("TOPIC", "GROUP")
            for p in ("User:a1", "User:a2") for op in ("READ", "DESCRIBE")}  # fmt: skip
    want |= {(rt, "flags-", "PREFIXED", "User:d1", "10.0.0.2", op, "DENY") for rt in ("TOPIC", "GROUP")
             for op in ("READ", "DESCRIBE")}  # fmt: skip
    assert state(server, (None, "flags-", "PREFIXED", None, None, None, None)) == want
    ok(acls(server, "--add", "--allow-principal", "User:x", "--operation", "Describe", "--transactional-id", "tx-f",
            "--delegation-token", "tok-f"))  # fmt: skip
    ok(
        acls(
            server,
            "--add",
            "--allow-principal",
            "User:x",
            "--operation",
            "CreateTokens",
            "--user-principal",
            "User:u-f",
        )
    )
    ok(acls(server, "--add", "--allow-principal", "User:x", "--operation", "AlterConfigs", "--cluster"))
    assert state(server, (None, None, None, "User:x", None, None, None)) == {
        ("TRANSACTIONAL_ID", "tx-f", "LITERAL", "User:x", "*", "DESCRIBE", "ALLOW"),
        ("DELEGATION_TOKEN", "tok-f", "LITERAL", "User:x", "*", "DESCRIBE", "ALLOW"),
        ("USER", "User:u-f", "LITERAL", "User:x", "*", "CREATE_TOKENS", "ALLOW"),
        ("CLUSTER", "kafka-cluster", "LITERAL", "User:x", "*", "ALTER_CONFIGS", "ALLOW"),
    }
    listed = ok(acls(server, "--list", "--user-principal", "User:u-f")).stdout.splitlines()
    assert listed == [
        "Current ACLs for resource `ResourcePattern(resourceType=USER, name=User:u-f, patternType=LITERAL)`:",
        "\t(principal=User:x, host=*, operation=CREATE_TOKENS, permissionType=ALLOW)",
        "",
    ]


def test_producer_consumer_and_idempotent_expand_as_aclcommand(server: KstewardServer) -> None:
    ok(acls(server, "--add", "--producer", "--idempotent", "--consumer", "--allow-principal", "User:app",
            "--topic", "sc-t", "--group", "sc-g", "--transactional-id", "sc-tx"))  # fmt: skip
    got = state(server, (None, None, None, "User:app", None, None, None))
    assert got == {("TOPIC", "sc-t", "LITERAL", "User:app", "*", op, "ALLOW")
                   for op in ("WRITE", "DESCRIBE", "CREATE", "READ")} | {
        ("GROUP", "sc-g", "LITERAL", "User:app", "*", "READ", "ALLOW"),
        ("TRANSACTIONAL_ID", "sc-tx", "LITERAL", "User:app", "*", "WRITE", "ALLOW"),
        ("TRANSACTIONAL_ID", "sc-tx", "LITERAL", "User:app", "*", "DESCRIBE", "ALLOW"),
        ("CLUSTER", "kafka-cluster", "LITERAL", "User:app", "*", "IDEMPOTENT_WRITE", "ALLOW"),
    }  # fmt: skip
    # --remove with the producer shortcut removes exactly the producer's ACLs (the consumer's READs stay).
    ok(acls(server, "--remove", "--producer", "--idempotent", "--allow-principal", "User:app", "--topic", "sc-t",
            "--transactional-id", "sc-tx", "--force"))  # fmt: skip
    assert state(server, (None, None, None, "User:app", None, None, None)) == {
        ("TOPIC", "sc-t", "LITERAL", "User:app", "*", "READ", "ALLOW"),
        ("GROUP", "sc-g", "LITERAL", "User:app", "*", "READ", "ALLOW"),
    }


def test_add_and_list_output_line_by_line(server: KstewardServer) -> None:
    added = ok(acls(server, "--add", "--allow-principal", "User:fa", "--allow-principal", "User:fb", "--operation",
                    "Read", "--topic", "fmt-topic"))  # fmt: skip
    assert added.stdout.splitlines() == [
        "Adding ACLs for resource `ResourcePattern(resourceType=TOPIC, name=fmt-topic, patternType=LITERAL)`: ",
        " \t(principal=User:fa, host=*, operation=READ, permissionType=ALLOW)",
        "\t(principal=User:fb, host=*, operation=READ, permissionType=ALLOW)",
        "",
    ]
    again = ok(acls(server, "--add", "--allow-principal", "User:fa", "--operation", "Read", "--topic", "fmt-topic"))
    assert again.stdout.splitlines() == [
        "Acl (pattern=ResourcePattern(resourceType=TOPIC, name=fmt-topic, patternType=LITERAL), "
        "entry=(principal=User:fa, host=*, operation=READ, permissionType=ALLOW)) already exists."
    ]
    ok(acls(server, "--add", "--deny-principal", "User:fb", "--operation", "Write", "--topic", "fmt-",
            "--resource-pattern-type", "prefixed"))  # fmt: skip
    block = ["Current ACLs for resource `ResourcePattern(resourceType=TOPIC, name=fmt-topic, patternType=LITERAL)`:",
             "\t(principal=User:fa, host=*, operation=READ, permissionType=ALLOW)",
             "\t(principal=User:fb, host=*, operation=READ, permissionType=ALLOW)", ""]  # fmt: skip
    prefixed = ["Current ACLs for resource `ResourcePattern(resourceType=TOPIC, name=fmt-, patternType=PREFIXED)`:",
                "\t(principal=User:fb, host=*, operation=WRITE, permissionType=DENY)", ""]  # fmt: skip
    assert ok(acls(server, "--list", "--topic", "fmt-topic")).stdout.splitlines() == block
    matched = ok(acls(server, "--list", "--topic", "fmt-topic", "--resource-pattern-type", "match")).stdout
    assert matched.splitlines() == prefixed + block  # sorted by type, name, pattern type
    exact = ok(acls(server, "--list", "--topic", "fmt-", "--resource-pattern-type", "any")).stdout
    assert exact.splitlines() == prefixed  # ANY: any pattern type, the name exactly
    mine = ok(acls(server, "--list", "--topic", "fmt-topic", "--principal", "User:fa")).stdout.splitlines()
    assert mine == ["ACLs for principal `User:fa`", *block[:2], ""]
    listed = json.loads(ok(acls(server, "--list", "--topic", "fmt-topic", "--output", "json")).stdout)
    assert listed == {"action": "list", "resources": [{
        "resource_type": "TOPIC", "resource_name": "fmt-topic", "pattern_type": "LITERAL",
        "acls": [{"principal": p, "host": "*", "operation": "READ", "permission_type": "ALLOW"}
                 for p in ("User:fa", "User:fb")]}]}  # fmt: skip


def binding_tuples(document: dict[str, Any], key: str) -> set[Acl]:
    fields = ("resource_type", "resource_name", "pattern_type", "principal", "host", "operation", "permission_type")
    return {tuple(b[f] for f in fields) for b in document[key]}  # type: ignore[misc]


def test_the_dry_run_names_exactly_what_the_remove_then_deletes(server: KstewardServer) -> None:
    for flags in (["--topic", "rm-a"], ["--topic", "rm-b"], ["--topic", "rm", "--resource-pattern-type", "prefixed"]):
        ok(acls(server, "--add", "--allow-principal", "User:r1", "--allow-principal", "User:r2", "--operation",
                "Read", *flags))  # fmt: skip
    before = state(server)
    remove = ["--remove", "--topic", "rm-a", "--resource-pattern-type", "match", "--force", "--output", "json"]
    dry = json.loads(ok(acls(server, *remove, "--dry-run")).stdout)
    assert dry["dry_run"] is True
    named = binding_tuples(dry, "deleted")
    assert named == {(rt, n, pt, p, "*", "READ", "ALLOW") for rt, n, pt in (("TOPIC", "rm-a", "LITERAL"),
                     ("TOPIC", "rm", "PREFIXED")) for p in ("User:r1", "User:r2")}  # fmt: skip
    assert state(server) == before  # nothing changed
    real = json.loads(ok(acls(server, *remove)).stdout)
    assert binding_tuples(real, "deleted") == named
    assert state(server) == before - named
    # An exact filter removes that one ACL, and a removal prints nothing (as AclCommand).
    exact = ok(acls(server, "--remove", "--allow-principal", "User:r1", "--operation", "Read", "--topic", "rm-b",
                    "--force"))  # fmt: skip
    assert exact.stdout == ""
    assert state(server, ("TOPIC", "rm-b", None, None, None, None, None)) == {
        ("TOPIC", "rm-b", "LITERAL", "User:r2", "*", "READ", "ALLOW")
    }


def test_the_lockout_guard_refuses_and_force_overrides(server: KstewardServer) -> None:
    ok(acls(server, "--add", "--allow-principal", "User:alice", "--operation", "Alter", "--cluster"))
    ok(acls(server, "--add", "--allow-principal", "User:ops", "--operation", "All", "--cluster"))
    mine = ("CLUSTER", "kafka-cluster", "LITERAL", "User:alice", "*", "ALTER", "ALLOW")
    remove_own = ["--remove", "--allow-principal", "User:alice", "--operation", "Alter", "--cluster"]
    refused = acls(server, *remove_own, user="alice")
    assert refused.returncode == 1
    assert "refused: this removal would take away User:alice's right to alter ACLs" in refused.stderr
    assert mine in state(server)
    # Another principal's right is protected when listed.
    remove_ops = ["--remove", "--allow-principal", "User:ops", "--operation", "All", "--cluster"]
    guarded = acls(server, *remove_ops, "--protect-principal", "User:ops", "--output", "json", user="alice")
    assert guarded.returncode == 1
    assert [r["principal"] for r in json.loads(guarded.stdout)["lockout"]["refused"]] == ["User:ops"]
    ok(acls(server, *remove_ops, user="alice"))  # not protected: alice keeps her own right
    ok(acls(server, *remove_own, "--force", user="alice"))
    assert mine not in state(server)


def warning_codes(result: subprocess.CompletedProcess[str]) -> list[str]:
    document = json.loads(ok(result).stdout)
    assert len([line for line in result.stderr.splitlines() if ": warning: " in line]) == len(document["warnings"])
    return [w["code"] for w in document["warnings"]]


def test_each_warning(server: KstewardServer) -> None:
    quiet = ["--allow-everyone-if-no-acl-found", "false", "--output", "json"]
    assert warning_codes(
        acls(
            server,
            "--add",
            "--allow-principal",
            "User:w",
            "--operation",
            "Read",
            "--topic",
            "*",
            "--resource-pattern-type",
            "prefixed",
            *quiet,
        )
    ) == ["prefixed-star", "unknown-topic"]
    assert warning_codes(acls(server, "--add", "--allow-principal", "User:*", "--operation", "Read", "--topic",
                              "orders", *quiet)) == ["allow-every-principal"]  # fmt: skip
    first = acls(server, "--add", "--allow-principal", "User:w", "--operation", "Read", "--topic", "warn-first",
                 "--allow-everyone-if-no-acl-found", "true", "--output", "json")  # fmt: skip
    assert warning_codes(first) == ["first-acl-closes-resource"]
    assert "everyone else is denied" in first.stderr
    assert warning_codes(acls(server, "--add", "--allow-principal", "User:w", "--operation", "Read", "--topic",
                              "warn-missing", *quiet)) == ["unknown-topic"]  # fmt: skip


def test_who_can_and_explain_agree_with_the_authorizer_on_the_live_acls(server: KstewardServer) -> None:
    ok(acls(server, "--add", "--allow-principal", "User:alice", "--operation", "Read", "--topic", "wc-topic"))
    ok(acls(server, "--add", "--deny-principal", "User:bob", "--deny-host", "10.9.9.9", "--operation", "Read",
            "--topic", "wc-", "--resource-pattern-type", "prefixed"))  # fmt: skip
    ok(acls(server, "--add", "--allow-principal", "User:bob", "--operation", "All", "--topic", "wc-topic"))
    settings = ["--super-users", "User:admin", "--allow-everyone-if-no-acl-found", "false"]
    who = json.loads(ok(acls(server, "--who-can", "--operation", "Read", "--topic", "wc-topic", *settings,
                             "--output", "json")).stdout)  # fmt: skip
    live = StandardAuthorizer(AuthorizerSettings(frozenset({"User:admin"})))
    live.load_snapshot(list(enumerate(AclBinding(*a) for a in state(server))))
    assert {(r["principal"], r["host"], r["rule"]) for r in who["principals"]} == {
        ("User:admin", "*", "super_user"), ("User:alice", "*", "acl"), ("User:bob", "*", "acl")
    }  # fmt: skip
    bob = next(r for r in who["principals"] if r["principal"] == "User:bob")
    assert [d["host"] for d in bob["narrowed_by"]] == ["10.9.9.9"]
    for principal, host in [("User:alice", "1.2.3.4"), ("User:bob", "10.9.9.9"), ("User:bob", "1.2.3.4"),
                            ("User:admin", "10.9.9.9"), ("User:carol", "1.2.3.4")]:  # fmt: skip
        got = json.loads(ok(acls(server, "--explain", "--principal", principal, "--operation", "Read", "--topic",
                                 "wc-topic", "--host", host, *settings, "--output", "json")).stdout)  # fmt: skip
        want = live.authorize_with_reason(principal, host, "READ", "TOPIC", "wc-topic")
        assert (got["decision"], got["rule"]) == (want.result.value, want.rule.value), (principal, host)
        assert got["acl"] == (None if want.acl is None else {
            "resource_type": want.acl.resource_type.name, "resource_name": want.acl.resource_name,
            "pattern_type": want.acl.pattern_type.name, "principal": want.acl.principal, "host": want.acl.host,
            "operation": want.acl.operation.name, "permission_type": want.acl.permission_type.name})  # fmt: skip
    text = ok(acls(server, "--explain", "--principal", "User:bob", "--operation", "Read", "--topic", "wc-topic",
                   "--host", "10.9.9.9"))  # fmt: skip
    assert text.stdout.splitlines()[0] == "DENIED: User:bob READ TOPIC `wc-topic` from host 10.9.9.9"
    # Without the flags the broker's settings are read where readable, and each assumption is said.
    assert "super.users: DescribeConfigs hides its value; assumed empty" in text.stderr


def test_exit_codes_and_one_line_errors(server: KstewardServer) -> None:
    usage = acls(server, "--topic", "t")
    assert usage.returncode == 2
    assert usage.stderr.strip() == ("ksteward acls: Command must include exactly one action: --list, --add, --remove. "
                                    "(ksteward also has --who-can and --explain)")  # fmt: skip
    denied = acls(server, "--list", user="alice")
    assert denied.returncode == 1
    assert denied.stderr.strip().startswith("ksteward acls: CLUSTER_AUTHORIZATION_FAILED")
    assert len(denied.stderr.strip().splitlines()) == 1
