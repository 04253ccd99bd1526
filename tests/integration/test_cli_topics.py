"""``ksteward topics`` as a subprocess against the real server, over PLAINTEXT and over SASL_PLAINTEXT through
``--command-config``; every flag checked against state read back with confluent-kafka, the output compared
line by line with kafka-topics.sh's formats (TopicCommand)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from clients import Auth, confluent_admin
from harness import KstewardServer, ksteward_cli

PLAIN = Auth()
ADMIN = Auth("PLAIN", "admin", "admin-secret")
WARNING = ("WARNING: Due to limitations in metric names, topics with a period ('.') or underscore ('_') could "
           "collide. To avoid issues it is best to use either, but not both.")  # fmt: skip


def topics(server: KstewardServer, *flags: str, config: Path | None = None) -> subprocess.CompletedProcess[str]:
    extra = ["--command-config", str(config)] if config else []
    return ksteward_cli("topics", "--bootstrap-server", server.bootstrap, *extra, *flags)


def ok(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 0, result.stderr
    return result.stdout


def described(server: KstewardServer, auth: Auth, name: str) -> tuple[str, list[tuple[int, int, list[int], list[int]]]]:
    """A topic's id and partitions (id, leader, replicas, isr) as confluent-kafka reads them."""
    from confluent_kafka import TopicCollection

    admin = confluent_admin(server.bootstrap, auth)
    d = admin.describe_topics(TopicCollection([name]), request_timeout=10)[name].result(15)
    parts = [(p.id, p.leader.id, [n.id for n in p.replicas], [n.id for n in p.isr]) for p in d.partitions]
    return str(d.topic_id), sorted(parts)


def topic_configs(server: KstewardServer, auth: Auth, name: str) -> dict[str, str]:
    from confluent_kafka.admin import ConfigResource, ConfigSource, ResourceType

    admin = confluent_admin(server.bootstrap, auth)
    resource = ConfigResource(ResourceType.TOPIC, name)
    entries = admin.describe_configs([resource], request_timeout=10)[resource].result(15).values()
    return {e.name: e.value for e in entries if e.source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value}


def names(server: KstewardServer, auth: Auth = PLAIN) -> set[str]:
    return set(confluent_admin(server.bootstrap, auth).list_topics(timeout=10).topics)


def test_create_list_describe_alter_delete(plaintext_server: KstewardServer) -> None:
    s = plaintext_server
    out = ok(topics(s, "--create", "--topic", "orders", "--partitions", "2", "--replication-factor", "1",
                    "--config", "retention.ms=3600000", "--config", "min.insync.replicas=1"))  # fmt: skip
    assert out == "Created topic orders.\n"
    assert len(described(s, PLAIN, "orders")[1]) == 2
    assert topic_configs(s, PLAIN, "orders") == {"retention.ms": "3600000", "min.insync.replicas": "1"}
    assert ok(topics(s, "--create", "--topic", "pay.ments_eu")).splitlines() == [WARNING, "Created topic pay.ments_eu."]
    assert len(described(s, PLAIN, "pay.ments_eu")[1]) == 1  # the cluster's num.partitions
    assert ok(topics(s, "--create", "--topic", "orders", "--if-not-exists")) == ""
    exists = topics(s, "--create", "--topic", "orders")
    assert exists.returncode == 1 and "TOPIC_ALREADY_EXISTS" in exists.stderr and "orders" in exists.stderr
    ok(topics(s, "--create", "--topic", "placed", "--replica-assignment", "1,1,1"))
    assert [p[2] for p in described(s, PLAIN, "placed")[1]] == [[1], [1], [1]]
    ok(topics(s, "--create", "--topic", "__consumer_offsets", "--partitions", "1"))

    listed = ok(topics(s, "--list")).splitlines()
    assert listed == sorted(names(s)) and "__consumer_offsets" in listed
    assert ok(topics(s, "--list", "--exclude-internal")).splitlines() == [
        n for n in listed if n != "__consumer_offsets"
    ]
    assert ok(topics(s, "--list", "--topic", "orders,placed")).splitlines() == ["orders", "placed"]
    described_all = [
        line.split("\t")[0] for line in ok(topics(s, "--describe")).splitlines() if line.startswith("Topic:")
    ]
    assert "Topic: __consumer_offsets" in described_all
    without = ok(topics(s, "--describe", "--exclude-internal")).splitlines()
    assert [line.split("\t")[0] for line in without if line.startswith("Topic:")] == [
        t for t in described_all if t != "Topic: __consumer_offsets"
    ]
    assert json.loads(ok(topics(s, "--list", "--topic", "pay\\.ments_.*", "--output", "json"))) == {
        "topics": ["pay.ments_eu"]
    }

    topic_id, parts = described(s, PLAIN, "orders")
    expected = [f"Topic: orders\tTopicId: {topic_id}\tPartitionCount: 2\tReplicationFactor: 1\tConfigs: "
                "min.insync.replicas=1,retention.ms=3600000"]  # fmt: skip
    expected += [f"\tTopic: orders\tPartition: {p}\tLeader: {leader}\tReplicas: 1\tIsr: 1\tElr: N/A\tLastKnownElr: N/A"
                 for p, leader, _, _ in parts]  # fmt: skip
    lines = ok(topics(s, "--describe", "--topic", "orders")).splitlines()
    assert lines[1:] == expected[1:]
    assert lines[0].split("\tConfigs: ")[0] == expected[0].split("\tConfigs: ")[0]
    assert sorted(lines[0].split("\tConfigs: ")[1].split(",")) == ["min.insync.replicas=1", "retention.ms=3600000"]
    assert ok(topics(s, "--describe", "--topic-id", topic_id)).splitlines() == lines
    doc = json.loads(ok(topics(s, "--describe", "--topic", "orders", "--output", "json")))
    assert doc["topics"][0]["topic_id"] == topic_id and doc["topics"][0]["partition_count"] == 2
    assert [p["isr"] for p in doc["topics"][0]["partitions"]] == [[1], [1]]

    ok(topics(s, "--alter", "--topic", "orders", "--partitions", "4"))
    assert len(described(s, PLAIN, "orders")[1]) == 4
    ok(topics(s, "--alter", "--topic", "placed", "--partitions", "4", "--replica-assignment", "1,1,1,1"))
    assert len(described(s, PLAIN, "placed")[1]) == 4
    assert ok(topics(s, "--alter", "--topic", "ghost", "--partitions", "4", "--if-exists")) == ""
    missing = topics(s, "--alter", "--topic", "ghost", "--partitions", "4")
    assert (missing.returncode, missing.stderr.strip()) == (
        1,
        "ksteward topics: Topic 'ghost' does not exist as expected",
    )

    verdicts = ok(topics(s, "--delete", "--topic", "orders|placed", "--validate-only"))
    assert verdicts.splitlines() == [f"Topic {n}: could be deleted (validate only; nothing was deleted)"
                                     for n in ("orders", "placed")]  # fmt: skip
    assert {"orders", "placed"} <= names(s)
    assert ok(topics(s, "--delete", "--topic", "orders|placed", "--output", "json")) != ""
    assert not {"orders", "placed"} & names(s)
    assert ok(topics(s, "--delete", "--topic", "orders", "--if-exists")) == ""


def test_describe_filters(plaintext_server: KstewardServer) -> None:
    s = plaintext_server
    ok(topics(s, "--create", "--topic", "strict", "--partitions", "2", "--config", "min.insync.replicas=2"))
    ok(topics(s, "--create", "--topic", "relaxed", "--partitions", "1"))
    pattern = ["--topic", "strict|relaxed"]
    under = ok(topics(s, "--describe", *pattern, "--under-min-isr-partitions")).splitlines()
    assert [line.split("\t")[1:3] for line in under] == [
        ["Topic: strict", "Partition: 0"],
        ["Topic: strict", "Partition: 1"],
    ]
    at = ok(topics(s, "--describe", *pattern, "--at-min-isr-partitions")).splitlines()
    assert [line.split("\t")[1:3] for line in at] == [["Topic: relaxed", "Partition: 0"]]
    assert ok(topics(s, "--describe", *pattern, "--under-replicated-partitions")) == ""  # one node, ISR complete
    assert ok(topics(s, "--describe", *pattern, "--unavailable-partitions")) == ""
    overrides = ok(topics(s, "--describe", *pattern, "--topics-with-overrides")).splitlines()
    assert (
        len(overrides) == 1 and overrides[0].startswith("Topic: strict\t") and "min.insync.replicas=2" in overrides[0]
    )
    doc = json.loads(ok(topics(s, "--describe", *pattern, "--under-min-isr-partitions", "--output", "json")))
    assert [(t["name"], len(t["partitions"])) for t in doc["topics"]] == [("strict", 2)]
    assert ok(topics(s, "--describe", "--topic", "nothing-here", "--if-exists")) == ""
    missing = topics(s, "--describe", "--topic", "nothing-here")
    assert missing.returncode == 1 and "Topic 'nothing-here' does not exist as expected" in missing.stderr


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (
            ["--create", "--topic", "x", "--replication-factor", "0"],
            "The replication factor must be between 1 and 32767 inclusive",
        ),
        (["--create", "--topic", "x", "--partitions", "0"], "The partitions must be greater than 0"),
        (
            ["--create", "--topic", "x", "--replica-assignment", "1:1"],
            "Partition replica lists may not contain duplicate entries: 1",
        ),
        (["--create", "--topic", "x", "--config", "nope=1"], "Unknown topic config name: nope"),
        (
            ["--list", "--delete"],
            "Command must include exactly one action: --list, --describe, --create, --alter or --delete",
        ),
    ],
)
def test_client_side_checks_exit_2(plaintext_server: KstewardServer, flags: list[str], message: str) -> None:
    result = topics(plaintext_server, *flags)
    assert (result.returncode, result.stderr.strip()) == (2, f"ksteward topics: {message}")
    assert "x" not in names(plaintext_server)


def _properties(path: Path, user: str, password: str) -> Path:
    path.write_text(
        "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"
        "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required "
        f'username="{user}" password="{password}";\n'
    )
    return path


def test_over_sasl_with_command_config(sasl_server: KstewardServer, tmp_path: Path) -> None:
    s, admin = sasl_server, _properties(tmp_path / "admin.properties", "admin", "admin-secret")
    assert (
        ok(topics(s, "--create", "--topic", "secured", "--partitions", "3", config=admin)) == "Created topic secured.\n"
    )
    assert len(described(s, ADMIN, "secured")[1]) == 3
    assert ok(topics(s, "--list", config=admin)).splitlines() == sorted(names(s, ADMIN))
    assert len(ok(topics(s, "--describe", "--topic", "secured", config=admin)).splitlines()) == 4
    ok(topics(s, "--alter", "--topic", "secured", "--partitions", "5", config=admin))
    assert len(described(s, ADMIN, "secured")[1]) == 5
    alice = _properties(tmp_path / "alice.properties", "alice", "alice-secret")
    refused = topics(s, "--create", "--topic", "alices", config=alice)
    assert refused.returncode == 1 and "TOPIC_AUTHORIZATION_FAILED" in refused.stderr
    assert "alice-secret" not in refused.stderr + refused.stdout
    assert ok(topics(s, "--list", config=alice)) == ""  # alice may describe nothing
    ok(topics(s, "--delete", "--topic", "secured", config=admin))
    assert "secured" not in names(s, ADMIN)
    unauthenticated = topics(s, "--list", "--command-config", "/nonexistent.properties")
    assert unauthenticated.returncode == 2 and "cannot read --command-config" in unauthenticated.stderr


def on_a_terminal(args: list[str], answer: bytes) -> tuple[int, str]:
    """Run ``ksteward ARGS`` with stdin on a pseudo-terminal, answer its question, return (exit code, stderr)."""
    import os
    import pty
    import sys

    controller, terminal = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "ksteward.cli.main", *args], stdin=terminal,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    os.close(terminal)
    try:
        os.write(controller, answer)  # typed ahead: the terminal holds it until the command reads
        _, err = proc.communicate(timeout=60)
    finally:
        os.close(controller)
    assert "(y/N)" in err  # the question, on stderr
    return proc.returncode, err


def test_delete_asks_on_a_terminal_and_json_reports(plaintext_server: KstewardServer) -> None:
    s = plaintext_server
    created = json.loads(ok(topics(s, "--create", "--topic", "asked", "--output", "json")))
    assert created == {"action": "create", "topics": [{"name": "asked", "result": "created"}], "warnings": []}
    again = json.loads(ok(topics(s, "--create", "--topic", "asked", "--if-not-exists", "--output", "json")))
    assert again["topics"] == [{"name": "asked", "result": "exists"}]
    altered = json.loads(ok(topics(s, "--alter", "--topic", "asked", "--partitions", "2", "--output", "json")))
    assert altered == {"action": "alter", "topics": [{"name": "asked", "partitions": 2}]}
    base = ["topics", "--bootstrap-server", s.bootstrap, "--delete", "--topic", "asked"]
    code, err = on_a_terminal(base, b"n\n")
    assert code == 1 and "not confirmed; nothing was deleted" in err
    assert "asked" in names(s)
    code, err = on_a_terminal(base, b"y\n")
    assert code == 0, err
    assert "asked" not in names(s)
    ok(topics(s, "--create", "--topic", "forced"))
    assert (
        ok(topics(s, "--delete", "--topic", "forced", "--force", "--output", "json")) != ""
    )  # no terminal: no question
    deleted = json.loads(ok(topics(s, "--delete", "--topic", "ghost|forced", "--if-exists", "--output", "json")))
    assert deleted == {"action": "delete", "validate_only": False, "topics": []}


def test_output_piped_into_head_ends_quietly(plaintext_server: KstewardServer) -> None:
    import shlex
    import sys

    s = plaintext_server
    for i in range(3):
        ok(topics(s, "--create", "--topic", f"piped-{i}", "--if-not-exists"))
    cli = f"{shlex.quote(sys.executable)} -m ksteward.cli.main"
    for command in (f"topics --bootstrap-server {s.bootstrap} --describe --topic 'piped-.*'",
                    f"configs --bootstrap-server {s.bootstrap} --describe --topic piped-0 --all"):  # fmt: skip
        result = subprocess.run(f"set -o pipefail; {cli} {command} | head -1", shell=True, executable="/bin/bash",
                                capture_output=True, text=True, timeout=60, check=False)  # fmt: skip
        assert result.returncode == 0 and result.stderr == "", result.stderr
        assert len(result.stdout.splitlines()) == 1
