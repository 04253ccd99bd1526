"""``ksteward state export`` and ``ksteward plan`` as subprocesses against real SASL servers, the clusters
changed with confluent-kafka and kafka-python: the export round trip to an empty node is byte-identical, an
out-of-band change is drift naming the change, nothing outside the ownership selectors is planned, the lockout
guard refuses, and the detailed exit codes are Terraform's."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from acl_clients import Acl, acl_client
from clients import Auth, confluent_admin
from harness import KstewardServer, ksteward_cli

from ksteward.state.fileformat import parse
from ksteward.state.model import AppliedRecord
from ksteward.state.record import save_record

ADMIN = Auth("PLAIN", "admin", "admin-secret")
ALICE = Auth("PLAIN", "alice", "alice-secret")
JAAS = 'org.apache.kafka.common.security.plain.PlainLoginModule required username="{}" password="{}";'
SEED_ACLS: list[Acl] = [
    ("TOPIC", "rt.a", "LITERAL", "User:alice", "*", "READ", "ALLOW"),
    ("TOPIC", "rt.", "PREFIXED", "User:bob", "10.0.0.1", "WRITE", "ALLOW"),
    ("GROUP", "legacy group", "LITERAL", "User:*", "*", "ALL", "DENY"),
]


def start(workdir: Path, name: str) -> KstewardServer:
    server = KstewardServer(workdir, "sasl", name=name).start()
    for auth in (ADMIN, ALICE):
        (workdir / f"{auth.username}.properties").write_text(
            "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"
            f"sasl.jaas.config={JAAS.format(auth.username, auth.password)}\n"
        )
    return server


def cli(server: KstewardServer, *argv: str, user: str = "admin") -> subprocess.CompletedProcess[str]:
    command, rest = argv[0], argv[1:]
    prefix = [command, *rest[:1]] if command == "state" else [command]
    rest = rest[1:] if command == "state" else rest
    config = str(server.workdir / f"{user}.properties")
    return ksteward_cli(*prefix, *rest, "--bootstrap-server", server.bootstrap, "--command-config", config)


def ok(result: subprocess.CompletedProcess[str], code: int = 0) -> str:
    assert result.returncode == code, (result.returncode, result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    return result.stdout


def wait_all(futures: dict[Any, Any]) -> None:
    for future in futures.values():
        future.result(30)


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KstewardServer]:
    """A server with topics (one with configs), ACLs, two client quotas and a SCRAM user."""
    from confluent_kafka.admin import (
        NewTopic,
        ScramCredentialInfo,
        ScramMechanism,
        UserScramCredentialUpsertion,
    )

    server = start(tmp_path_factory.mktemp("state-src"), "src")
    try:
        admin = confluent_admin(server.bootstrap, ADMIN)
        wait_all(admin.create_topics([NewTopic("rt.a", 2, 1, config={"retention.ms": "1000",
                                                                     "cleanup.policy": "compact"}),
                                      NewTopic("rt.b", 1, 1)], request_timeout=30))  # fmt: skip
        acl_client("confluent-kafka", server.bootstrap).create(ADMIN, SEED_ACLS)
        ok(cli(server, "configs", "--alter", "--entity-type", "users", "--entity-name", "alice",
               "--add-config", "producer_byte_rate=1024"))  # fmt: skip
        ok(cli(server, "configs", "--alter", "--client-defaults", "--add-config", "consumer_byte_rate=2048"))
        upsert = UserScramCredentialUpsertion("carol", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 8192),
                                              b"carol-secret")  # fmt: skip
        wait_all(admin.alter_user_scram_credentials([upsert], request_timeout=30))
        yield server
    finally:
        server.kill()


def apply_with_confluent(server: KstewardServer, text: str) -> None:
    """What ``ksteward apply`` does, done by hand with confluent-kafka (and the configs CLI for quotas, which no
    real client sends): create every topic, ACL, quota and SCRAM credential of the file."""
    from confluent_kafka.admin import (
        NewTopic,
        ScramCredentialInfo,
        ScramMechanism,
        UserScramCredentialUpsertion,
    )

    state = parse(text).resources
    admin = confluent_admin(server.bootstrap, ADMIN)
    topics = [NewTopic(t.name, t.partitions, t.replication_factor or -1, config=dict(t.configs))
              for t in state.topics.values()]  # fmt: skip
    wait_all(admin.create_topics(topics, request_timeout=30))
    acls: list[Acl] = [(a.resource_type.name, a.resource_name, a.pattern_type.name, a.principal, a.host,
                        a.operation.name, a.permission_type.name) for a in state.acls]  # fmt: skip
    acl_client("confluent-kafka", server.bootstrap).create(ADMIN, acls)
    for entity, values in state.quotas.items():
        flags = []
        for kind, name in entity:
            plural = {"user": "users", "client-id": "clients", "ip": "ips"}[kind]
            flags += ["--entity-type", plural, *(["--entity-default"] if name is None else ["--entity-name", name])]
        settings = ",".join(f"{k}={v:g}" for k, v in values.items())
        ok(cli(server, "configs", "--alter", *flags, "--add-config", settings))
    upserts = [UserScramCredentialUpsertion(u.name, ScramCredentialInfo(ScramMechanism[m.replace("-", "_")], n),
                                            b"some-password")
               for u in state.scram_users.values() for m, n in u.mechanisms.items()]  # fmt: skip
    wait_all(admin.alter_user_scram_credentials(upserts, request_timeout=30))


def test_export_then_import_to_an_empty_node_is_byte_identical(source: KstewardServer, tmp_path: Path) -> None:
    first = ok(cli(source, "state", "export"))
    out = tmp_path / "cluster.yaml"
    ok(cli(source, "state", "export", "-o", str(out)))
    assert out.read_text() == first  # exporting twice: the same bytes
    assert '    - "ALLOW WRITE host=10.0.0.1 TOPIC:PREFIXED:rt."' in first
    assert '      retention.ms: "1000"' in first and "carol: {mechanisms: {SCRAM-SHA-256: 8192}}" in first
    assert "  - entity: {user: alice}\n    values: {producer_byte_rate: 1024}" in first
    assert "  - entity: {client-id: null}\n    values: {consumer_byte_rate: 2048}" in first
    assert "carol-secret" not in first and "salt" not in first
    target = start(tmp_path / "dst", "dst")
    try:
        apply_with_confluent(target, first)
        assert ok(cli(target, "state", "export")) == first
        shown = ok(cli(target, "plan", str(out), "--detailed-exitcode"), 0)
        assert "No changes." in shown
    finally:
        target.kill()


def test_out_of_band_changes_are_drift_naming_the_change(source: KstewardServer, tmp_path: Path) -> None:
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource, NewTopic, ResourceType

    admin = confluent_admin(source.bootstrap, ADMIN)
    wait_all(admin.create_topics([NewTopic("drift.t", 1, 1, config={"retention.ms": "5000"})], request_timeout=30))
    kept: Acl = ("TOPIC", "drift.t", "LITERAL", "User:dora", "*", "READ", "ALLOW")
    removed: Acl = ("TOPIC", "drift.t", "LITERAL", "User:dora", "*", "DESCRIBE", "ALLOW")
    acl_client("confluent-kafka", source.bootstrap).create(ADMIN, [kept, removed])
    file = tmp_path / "drift.yaml"
    file.write_text(
        "ownership: {topic_prefixes: [drift.]}\ndelete: {acls: true}\n"
        "topics: {drift.t: {partitions: 1, configs: {retention.ms: 5000}}}\n"
        'acls: {"User:dora": ["ALLOW READ TOPIC:LITERAL:drift.t", "ALLOW DESCRIBE TOPIC:LITERAL:drift.t"]}\n'
    )
    assert "No changes." in ok(cli(source, "plan", str(file)))
    state = parse(file.read_text())
    save_record(str(file), AppliedRecord(source.cluster_id, state.resources))  # what apply records

    # Out of band, with two other real clients: kafka-python deletes an ACL and adds one, confluent-kafka alters.
    python_acls = acl_client("kafka-python", source.bootstrap)
    python_acls.delete(ADMIN, [removed])
    added: Acl = ("TOPIC", "drift.t", "LITERAL", "User:mallory", "*", "WRITE", "ALLOW")
    python_acls.create(ADMIN, [added])
    entry = ConfigEntry("retention.ms", "9000", incremental_operation=AlterConfigOpType.SET)
    wait_all(admin.incremental_alter_configs([ConfigResource(ResourceType.TOPIC, "drift.t",
                                                             incremental_configs=[entry])]))  # fmt: skip

    text = ok(cli(source, "plan", str(file)))
    assert "+ acl User:dora ALLOW DESCRIBE TOPIC:LITERAL:drift.t    [drift: deleted outside the tool" in text
    assert "- acl User:mallory ALLOW WRITE TOPIC:LITERAL:drift.t    [drift: created outside the tool" in text
    assert "~ topic drift.t    [drift: changed outside the tool" in text and "retention.ms: 9000 -> 5000" in text
    assert "Drift: 3 change(s) made outside ksteward" in text
    doc = json.loads(ok(cli(source, "plan", str(file), "--output", "json")))
    assert doc["recorded"] is True and doc["summary"]["drift"] == 3
    assert {(a["acl"]["principal"], a["action"], a["origin"]) for a in doc["acls"]} == {
        ("User:dora", "create", "drift"), ("User:mallory", "delete", "drift")}  # fmt: skip


def test_nothing_outside_the_ownership_selectors_is_planned(source: KstewardServer, tmp_path: Path) -> None:
    before = ok(cli(source, "state", "export"))
    file = tmp_path / "owned.yaml"
    file.write_text(
        "ownership:\n  topic_prefixes: [rt.b]\n  principals: ['User:bob']\n"
        "delete: {topics: true, configs: true, acls: true, quotas: true, scram_users: true}\n"
    )
    doc = json.loads(ok(cli(source, "plan", str(file), "--output", "json")))
    assert [(t["name"], t["action"]) for t in doc["topics"]] == [("rt.b", "delete")]
    assert [(a["acl"]["principal"], a["action"]) for a in doc["acls"]] == [("User:bob", "delete")]
    assert doc["quotas"] == [] and doc["scram"] == []
    assert [(v["api"], v["resource"], v["error"]) for v in doc["policy"]] == [("DeleteTopics v7", "topic rt.b", None)]
    assert ok(cli(source, "state", "export")) == before  # a plan changes nothing


def test_the_lockout_guard_refuses_a_plan_removing_the_appliers_rights(source: KstewardServer, tmp_path: Path) -> None:
    alice_acls: list[Acl] = [("CLUSTER", "kafka-cluster", "LITERAL", "User:alice", "*", "ALL", "ALLOW"),
                             ("TOPIC", "*", "LITERAL", "User:alice", "*", "DESCRIBE_CONFIGS", "ALLOW")]  # fmt: skip
    acl_client("confluent-kafka", source.bootstrap).create(ADMIN, alice_acls)
    file = tmp_path / "alice.yaml"
    file.write_text(
        "ownership: {principals: ['User:alice']}\ndelete: {acls: true}\n"
        "acls: {'User:alice': ['ALLOW DESCRIBE_CONFIGS TOPIC:LITERAL:*', 'ALLOW READ TOPIC:LITERAL:rt.a']}\n"
    )
    result = cli(source, "plan", str(file), "--super-users", "User:admin", user="alice")
    text = ok(result, 1)
    assert "Lockout guard: this plan removes User:alice's right to alter ACLs" in text
    assert "the plan is refused" in result.stderr
    doc = json.loads(ok(cli(source, "plan", str(file), "--output", "json", "--super-users", "User:admin",
                            "--detailed-exitcode", user="alice"), 1))  # fmt: skip
    assert [lock["principal"] for lock in doc["lockouts"]] == ["User:alice"] and doc["refused"] is True


def test_detailed_exit_codes(source: KstewardServer, tmp_path: Path) -> None:
    same = tmp_path / "same.yaml"
    same.write_text("ownership: {topic_prefixes: [rt.a]}\ntopics: {rt.a: {partitions: 2}}\n")
    assert ok(cli(source, "plan", str(same), "--detailed-exitcode"), 0)
    more = tmp_path / "more.yaml"
    more.write_text("ownership: {topic_prefixes: [rt.a]}\ntopics: {rt.a: {partitions: 3}}\n")
    text = ok(cli(source, "plan", str(more), "--detailed-exitcode"), 2)
    assert "partitions: 2 -> 3" in text and "Plan: 0 to create, 1 to change, 0 to delete." in text
    assert "Policy (validate_only): 1 checked, 0 refused" in text
    assert ok(cli(source, "plan", str(more)), 0)  # without the flag, changes are a success
    bad = tmp_path / "bad.yaml"
    bad.write_text("topics: [")
    assert cli(source, "plan", str(bad), "--detailed-exitcode").returncode == 1
    broken = cli(source, "plan", str(bad))
    assert broken.returncode == 2 and broken.stderr.startswith("ksteward plan: ") and "not valid YAML" in broken.stderr
    shrink = tmp_path / "shrink.yaml"
    shrink.write_text("ownership: {topic_prefixes: [rt.a]}\ntopics: {rt.a: {partitions: 1}}\n")
    assert "Kafka cannot remove partitions" in ok(cli(source, "plan", str(shrink), "--detailed-exitcode"), 1)


def test_policy_verdicts_come_from_validate_only(source: KstewardServer, tmp_path: Path) -> None:
    file = tmp_path / "policy.yaml"
    file.write_text("ownership: {topic_prefixes: [pol.]}\ntopics: {pol.a: {partitions: 1, configs: {retention.ms: "
                    "soon}}, pol.b: {partitions: 1}}\n")  # fmt: skip
    result = cli(source, "plan", str(file), "--output", "json")
    doc = json.loads(ok(result, 1))
    verdicts = {v["resource"]: (v["api"], v["error"]) for v in doc["policy"]}
    assert verdicts == {"topic pol.a": ("CreateTopics", "INVALID_CONFIG"), "topic pol.b": ("CreateTopics", None)}
    assert doc["refused"] is True
    created = confluent_admin(source.bootstrap, ADMIN).list_topics(timeout=10).topics
    assert "pol.a" not in created and "pol.b" not in created  # validate_only created nothing
