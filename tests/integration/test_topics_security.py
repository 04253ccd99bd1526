"""Topics under the authorizer and the delete policy: DeleteTopics v7 validate_only (a ksteward
extension, KIP-934), ProtectInternalTopics against a super user, delete by id, and unknown versus
unauthorized topics."""

from __future__ import annotations

import datetime
import struct
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from acl_clients import acl_client
from clients import Auth, confluent_admin
from harness import KstewardServer
from rawkafka import RawConnection, connect, decode_response

from ksteward.protocol.apis import ApiKey

ADMIN = Auth("PLAIN", "admin", "admin-secret")
TIMEOUT = datetime.timedelta(seconds=30)
TOPIC_AUTHORIZATION_FAILED, UNKNOWN_TOPIC, UNKNOWN_TOPIC_ID, POLICY_VIOLATION = 29, 3, 100, 44


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KstewardServer]:
    s = KstewardServer(
        tmp_path_factory.mktemp("topicsec"),
        "sasl",
        {
            "delete.topic.policy.class.name": "ksteward.policy.builtin.ProtectInternalTopics",
            "protect.internal.topics.regex": "keep-.*",
        },
        name="topicsec",
    )
    try:
        s.start()
        admin = confluent_admin(s.bootstrap, ADMIN)
        from confluent_kafka.admin import NewTopic

        names = ["secret", "keep-me", "__transaction_state", "by-id", "dry"]
        futures = admin.create_topics([NewTopic(n, 1, 1) for n in names], request_timeout=15)
        for f in futures.values():
            f.result()
        yield s
    finally:
        s.kill()


def login(server: KstewardServer, user: str, password: str) -> RawConnection:
    conn = connect(server.address)
    assert int(conn.sasl_plain(user, password).body.error_code) == 0
    return conn


def delete_codes(conn: RawConnection, names: list[str], version: int = 6, **extra: object) -> dict[str, int]:
    body = conn.request(
        ApiKey.DELETE_TOPICS,
        version,
        {"topics": [{"name": n, "topic_id": None} for n in names], "timeout": TIMEOUT, **extra},
    ).body
    return {r.name: int(r.error_code) for r in body.responses}


def topic_names(server: KstewardServer) -> set[str]:
    return set(confluent_admin(server.bootstrap, ADMIN).list_topics(timeout=10).topics)


def test_unknown_versus_unauthorized(server: KstewardServer) -> None:
    with login(server, "alice", "alice-secret") as alice:
        # Without DESCRIBE, an existing topic and a missing one look the same.
        assert delete_codes(alice, ["secret", "ghost"]) == {
            "secret": TOPIC_AUTHORIZATION_FAILED,
            "ghost": TOPIC_AUTHORIZATION_FAILED,
        }
        body = alice.request(ApiKey.METADATA, 12, {"topics": [{"name": "secret", "topic_id": None}],
                                             "allow_auto_topic_creation": False,
                                             "include_topic_authorized_operations": False}).body  # fmt: skip
        assert [(t.name, int(t.error_code)) for t in body.topics] == [("secret", TOPIC_AUTHORIZATION_FAILED)]
        everything = alice.request(ApiKey.METADATA, 12, {"topics": None, "allow_auto_topic_creation": False,
                                                  "include_topic_authorized_operations": False}).body  # fmt: skip
        assert list(everything.topics) == []
    grant = ("TOPIC", "*", "LITERAL", "User:alice", "*", "DESCRIBE", "ALLOW")
    acl_client("kafka-python", server.bootstrap).create(ADMIN, [grant])
    try:
        with login(server, "alice", "alice-secret") as alice:
            # With DESCRIBE: a missing topic is unknown, an existing one still needs DELETE.
            assert delete_codes(alice, ["secret", "ghost"]) == {
                "secret": TOPIC_AUTHORIZATION_FAILED,
                "ghost": UNKNOWN_TOPIC,
            }
    finally:
        acl_client("kafka-python", server.bootstrap).delete(ADMIN, [grant])
    assert "secret" in topic_names(server)


def test_protect_internal_topics_blocks_the_super_user(server: KstewardServer) -> None:
    with login(server, "admin", "admin-secret") as admin:
        codes = delete_codes(admin, ["__transaction_state", "keep-me"])
    assert codes == {"__transaction_state": POLICY_VIOLATION, "keep-me": POLICY_VIOLATION}
    assert {"__transaction_state", "keep-me"} <= topic_names(server)


def test_delete_by_topic_id(server: KstewardServer) -> None:
    metadata = confluent_admin(server.bootstrap, ADMIN).list_topics(timeout=10)
    assert "by-id" in metadata.topics
    with login(server, "admin", "admin-secret") as admin:
        md = admin.request(ApiKey.METADATA, 12, {"topics": [{"name": "by-id", "topic_id": None}],
                                          "allow_auto_topic_creation": False,
                                          "include_topic_authorized_operations": False}).body  # fmt: skip
        topic_id = md.topics[0].topic_id
        import uuid

        body = admin.request(ApiKey.DELETE_TOPICS, 6, {"topics": [{"name": None, "topic_id": topic_id},
                                                           {"name": None, "topic_id": uuid.uuid4()}],
                                                "timeout": TIMEOUT}).body  # fmt: skip
        results = {(r.topic_id, int(r.error_code)) for r in body.responses}
    assert (topic_id, 0) in results
    assert any(code == UNKNOWN_TOPIC_ID for _, code in results)
    assert "by-id" not in topic_names(server)


def delete_topics_v7_payload(names: list[str], correlation_id: int) -> bytes:
    """DeleteTopics v7 (v6 + validate_only=true), written byte by byte, independent of any codec."""
    client = b"raw-test"
    header = struct.pack(">hhih", ApiKey.DELETE_TOPICS, 7, correlation_id, len(client)) + client + b"\x00"
    body = bytes([len(names) + 1])
    for name in names:
        body += bytes([len(name) + 1]) + name.encode() + bytes(16) + b"\x00"  # name, zero topic id, no tags
    body += struct.pack(">i", 30000) + b"\x01" + b"\x00"  # timeout, validate_only=true, no tags
    return header + body


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ksteward.cli.main", "topics", *args],
                          capture_output=True, text=True, timeout=60, check=False)  # fmt: skip


def test_delete_topics_v7_validate_only_through_the_ksteward_client(server: KstewardServer, tmp_path: Path) -> None:
    conf = tmp_path / "admin.properties"
    conf.write_text(
        "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"
        "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required "
        'username="admin" password="admin-secret";\n'
    )
    base = ["--bootstrap-server", server.bootstrap, "--command-config", str(conf), "--delete"]
    ok = _cli(*base, "--topic", "dry", "--validate-only")
    assert ok.returncode == 0 and "nothing was deleted" in ok.stdout, ok.stderr
    refused = _cli(*base, "--topic", "keep-me", "--validate-only")
    assert refused.returncode == 1
    assert "POLICY_VIOLATION" in refused.stderr and "keep-me" in refused.stderr, refused.stderr
    assert {"dry", "keep-me"} <= topic_names(server)  # validate-only deleted nothing
    with login(server, "admin", "admin-secret") as admin:  # and the same on the raw wire, encoded by hand
        admin.send_frame(delete_topics_v7_payload(["dry"], correlation_id=77))
        response = decode_response(ApiKey.DELETE_TOPICS, 6, admin.read_frame())  # v7's response is v6's layout
        assert response.correlation_id == 77
        assert [(r.name, int(r.error_code)) for r in response.body.responses] == [("dry", 0)]
    assert "dry" in topic_names(server)
    deleted = _cli(*base, "--topic", "dry")
    assert deleted.returncode == 0, deleted.stderr
    assert "dry" not in topic_names(server)


def test_metadata_reports_authorized_operations_when_asked(server: KstewardServer) -> None:
    request = {"topics": [{"name": "secret", "topic_id": None}], "allow_auto_topic_creation": False,
               "include_topic_authorized_operations": True}  # fmt: skip
    topic_ops = {3, 4, 5, 6, 7, 8, 10, 11}  # READ WRITE CREATE DELETE ALTER DESCRIBE DESCRIBE_CONFIGS ALTER_CONFIGS
    with login(server, "admin", "admin-secret") as admin:
        (topic,) = admin.request(ApiKey.METADATA, 12, request).body.topics
        assert int(topic.topic_authorized_operations) == sum(1 << op for op in topic_ops)
    grant = ("TOPIC", "secret", "LITERAL", "User:alice", "*", "DESCRIBE", "ALLOW")
    acl_client("kafka-python", server.bootstrap).create(ADMIN, [grant])
    try:
        with login(server, "alice", "alice-secret") as alice:
            (topic,) = alice.request(ApiKey.METADATA, 12, request).body.topics
            assert int(topic.error_code) == 0
            assert int(topic.topic_authorized_operations) == 1 << 8  # DESCRIBE only
            not_asked = {**request, "include_topic_authorized_operations": False}
            (topic,) = alice.request(ApiKey.METADATA, 12, not_asked).body.topics
            assert int(topic.topic_authorized_operations) == -(2**31)
    finally:
        acl_client("kafka-python", server.bootstrap).delete(ADMIN, [grant])
