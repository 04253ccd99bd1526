"""The state file: parsing, role expansion (Kafka's AclCommand shortcuts), byte-stable writing, the record."""

from __future__ import annotations

import argparse
import json
import re
from importlib import resources
from pathlib import Path

import pytest

from ksteward.authorizer import AclBinding, PatternType
from ksteward.cli.acls import options
from ksteward.state.acltext import acl_text, parse_acl_text
from ksteward.state.fileformat import _TOP_KEYS, StateFileError, dump, parse
from ksteward.state.model import AppliedRecord, Deletion, Ownership, Resources, ScramUser, TopicSpec, record_path
from ksteward.state.record import load_record, save_record

FILE = """
version: 1
ownership: {topic_prefixes: [orders.], principals: ["User:app", "User:aud"]}
delete: {acls: true}
roles:
  auditor:
    - {resource_type: TOPIC, operations: [Describe, DESCRIBE_CONFIGS]}
    - {resource_type: CLUSTER, operations: [DESCRIBE]}
grants:
  - {role: producer, principal: "User:app", topics: [orders.], pattern_type: PREFIXED, idempotent: true,
     transactional_ids: [tx-]}
  - {role: consumer, principal: "User:app", topics: [orders.a], groups: [g1]}
  - {role: auditor, principal: "User:aud", topics: [orders.a]}
topics:
  orders.a: {partitions: 3, replication_factor: 1, configs: {retention.ms: 1000, cleanup.policy: compact}}
acls:
  "User:app": ["DENY READ host=10.0.0.9 GROUP:LITERAL:my group: x"]
quotas:
  - {entity: {user: app, client-id: null}, values: {producer_byte_rate: 1024}}
scram_users:
  app: {mechanisms: {SCRAM-SHA-256: 8192}, password_env: APP_PW}
"""


def acl(rtype: str, name: str, pattern: str, who: str, op: str, perm: str = "ALLOW", host: str = "*") -> AclBinding:
    return AclBinding(rtype, name, pattern, who, host, op, perm)


def test_grants_expand_exactly_as_kafka_acls_producer_and_consumer_flags() -> None:
    state = parse(FILE)
    flags = argparse.Namespace(
        producer=True, consumer=False, idempotent=True, topic=["orders."], group=[], transactional_id=["tx-"],
        cluster=False, delegation_token=None, user_principal=None, resource_pattern_type=PatternType.PREFIXED,
        allow_principal=["User:app"], deny_principal=None, allow_host=None, deny_host=None, operation=None,
    )  # fmt: skip
    producer = {options.binding(p, e) for p, es in options.filter_to_entries(flags).items() for e in es}
    assert producer <= state.resources.acls
    assert acl("CLUSTER", "kafka-cluster", "LITERAL", "User:app", "IDEMPOTENT_WRITE") in producer
    assert acl("TRANSACTIONAL_ID", "tx-", "PREFIXED", "User:app", "WRITE") in producer
    consumer = {acl("TOPIC", "orders.a", "LITERAL", "User:app", op) for op in ("READ", "DESCRIBE")}
    consumer.add(acl("GROUP", "g1", "LITERAL", "User:app", "READ"))
    auditor = {acl("TOPIC", "orders.a", "LITERAL", "User:aud", op) for op in ("DESCRIBE", "DESCRIBE_CONFIGS")}
    auditor.add(acl("CLUSTER", "kafka-cluster", "LITERAL", "User:aud", "DESCRIBE"))
    listed = acl("GROUP", "my group: x", "LITERAL", "User:app", "READ", "DENY", "10.0.0.9")
    assert state.resources.acls == producer | consumer | auditor | {listed}
    assert "role consumer" in state.acl_sources[acl("GROUP", "g1", "LITERAL", "User:app", "READ")]


def test_the_other_sections_parse_to_the_model() -> None:
    state = parse(FILE)
    assert state.resources.topics["orders.a"] == TopicSpec(
        "orders.a", 3, 1, {"retention.ms": "1000", "cleanup.policy": "compact"}
    )
    assert state.resources.quotas == {(("client-id", None), ("user", "app")): {"producer_byte_rate": 1024.0}}
    assert state.resources.scram_users["app"] == ScramUser("app", {"SCRAM-SHA-256": 8192}, "APP_PW")
    assert state.ownership.topic_prefixes == ("orders.",)
    assert state.deletion == Deletion(acls=True)


def test_dump_then_parse_is_the_same_resources_and_the_same_bytes() -> None:
    state = parse(FILE)
    text = dump(state.resources, state.ownership, state.deletion, header="h")
    again = parse(text)
    assert again.resources == state.resources
    assert again.ownership == state.ownership
    assert dump(again.resources, again.ownership, again.deletion, header="h") == text
    lines = text.splitlines()
    assert lines[0] == "# h"
    assert '    - "DENY READ host=10.0.0.9 GROUP:LITERAL:my group: x"' in lines


def test_acl_lines_round_trip_names_with_colons_and_spaces() -> None:
    for a in (acl("GROUP", "a: b:c", "PREFIXED", "User:x", "READ"), acl("TOPIC", "t", "LITERAL", "User:x", "ALL",
                                                                         "DENY", "::1")):  # fmt: skip
        assert parse_acl_text(a.principal, acl_text(a)) == a


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("nope: 1", "unknown section"),
        ("version: 2", "version"),
        ('acls: {"User:a": ["ALLOW READ TOPIC:orders"]}', "TYPE:PATTERN:NAME"),
        ('acls: {"User:a": ["ALLOW READ TOPIC:MATCH:orders"]}', "pattern type"),
        ('acls: {"User:a": ["ALLOW FLY TOPIC:LITERAL:x"]}', "unknown operation"),
        ('acls: {"alice": ["ALLOW READ TOPIC:LITERAL:x"]}', "not a principal"),
        ("grants: [{role: consumer, principal: 'User:a', topics: [t]}]", "needs groups"),
        ("grants: [{role: transactional-producer, principal: 'User:a', topics: [t]}]", "transactional_ids"),
        ("grants: [{role: boss, principal: 'User:a', topics: [t]}]", "unknown role"),
        ("roles: {r: [{resource_type: GROUP, operations: [WRITE]}]}", "does not support"),
        ("topics: {t: {partitions: 0}}", "partitions"),
        ("scram_users: {a: {mechanisms: {SCRAM-SHA-1: 4096}}}", "SCRAM-SHA-1"),
        ("delete: {acls: yes-please}", "true or false"),
        ("topics: [", "not valid YAML"),
    ],
)
def test_a_bad_file_names_what_is_wrong(text: str, message: str) -> None:
    with pytest.raises(StateFileError, match=message):
        parse(text)


def test_the_shipped_json_schema_describes_every_section() -> None:
    schema = json.loads(resources.files("ksteward.state").joinpath("schema.json").read_text())
    assert set(schema["properties"]) == _TOP_KEYS
    assert schema["additionalProperties"] is False
    line = re.compile(schema["properties"]["acls"]["additionalProperties"]["items"]["pattern"])
    for a in parse(FILE).resources.acls:  # every operation and type the writer uses, as the schema spells them
        assert line.match(acl_text(a)), acl_text(a)
    assert not line.match("ALLOW READ TOPIC:MATCH:x")


def test_the_record_keeps_one_entry_per_cluster(tmp_path: Path) -> None:
    file = str(tmp_path / "orders.yaml")
    a = Resources(acls=frozenset({acl("TOPIC", "t", "LITERAL", "User:a", "READ")}))
    b = Resources(topics={"t": TopicSpec("t", 1, 1, {})})
    assert load_record(file, "c1") is None
    save_record(file, AppliedRecord("c1", a, 7))
    save_record(file, AppliedRecord("c2", b, None))
    assert load_record(file, "c1") == AppliedRecord("c1", a, 7)
    assert load_record(file, "c2") == AppliedRecord("c2", b, None)
    assert record_path(file) == f"{file}.applied.json"
    Path(record_path(file)).write_text("[]")
    with pytest.raises(StateFileError, match="last-apply record"):
        load_record(file, "c1")


def test_export_ownership_owns_everything_and_deletes_nothing() -> None:
    text = dump(Resources(), Ownership(all=True), Deletion())
    state = parse(text)
    assert state.ownership.all and state.deletion == Deletion()
    assert "topics: {}" in text and "acls: {}" in text
