"""Delegation tokens (KIP-48) end to end on a real ``ksteward serve`` with SASL_PLAINTEXT.

No installed client has calls for the four token APIs (kafka-python 3.0, confluent-kafka 2.16 / librdkafka,
aiokafka and kafkajs have none), so Create, Renew, Expire and Describe go over the raw wire (``rawkafka``). No
client sends SCRAM's ``tokenauth=true`` extension either: the login is driven by ``rawkafka.sasl_scram`` and by
kafka-python's own SCRAM client with the extension added through kafka-python's public mechanism registry
(``register_sasl_mechanism``), the way applications add it to clients that lack it.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Any

import pytest
from clients import Auth, kafka_python_admin
from harness import KstewardServer, ksteward_cli, wait_for
from rawkafka import RawConnection, Response, connect

from ksteward.protocol.apis import ApiKey

SECRET_KEY = "tok3n-s3cr3t-k3y"
NONE, SASL_AUTHENTICATION_FAILED, TOPIC_AUTHORIZATION_FAILED = 0, 58, 29
AUTH_DISABLED, NOT_FOUND, OWNER_MISMATCH, REQUEST_NOT_ALLOWED, AUTHORIZATION_FAILED, EXPIRED, INVALID_PRINCIPAL = (
    61, 62, 63, 64, 65, 66, 67)  # fmt: skip


def with_tokens(server: KstewardServer) -> KstewardServer:
    """The secret key goes in the server's properties file, as an operator sets it (an override would put it on
    the command line, which the harness writes into the server's log)."""
    with server.config_path.open("a") as config:
        config.write(f"\ndelegation.token.secret.key={SECRET_KEY}\n")
    return server


def admin(server: KstewardServer) -> RawConnection:
    conn = connect(server.address)
    assert int(conn.sasl_plain("admin", "admin-secret").body.error_code) == NONE
    return conn


def alice(server: KstewardServer) -> RawConnection:
    conn = connect(server.address)
    assert int(conn.sasl_plain("alice", "alice-secret").body.error_code) == NONE
    return conn


def create(conn: RawConnection, owner: str | None = None, renewers: tuple[str, ...] = (), max_ms: int = -1,
           version: int = 3) -> Any:  # fmt: skip
    body: dict[str, Any] = {
        "max_lifetime": timedelta(milliseconds=max_ms),
        "renewers": [{"principal_type": r.split(":")[0], "principal_name": r.split(":")[1]} for r in renewers],
    }
    if version >= 3:  # the owner fields exist from v3 on
        owner_type, owner_name = owner.split(":", 1) if owner else (None, None)
        body |= {"owner_principal_type": owner_type, "owner_principal_name": owner_name}
    return conn.request(ApiKey.CREATE_DELEGATION_TOKEN, version, body).body


def renew(conn: RawConnection, hmac: bytes, period_ms: int = -1) -> Any:
    return conn.request(
        ApiKey.RENEW_DELEGATION_TOKEN, 2, {"hmac": hmac, "renew_period": timedelta(milliseconds=period_ms)}
    ).body


def expire(conn: RawConnection, hmac: bytes, period_ms: int = -1) -> Any:
    return conn.request(
        ApiKey.EXPIRE_DELEGATION_TOKEN, 2, {"hmac": hmac, "expiry_time_period": timedelta(milliseconds=period_ms)}
    ).body


def describe(conn: RawConnection, owners: list[str] | None = None) -> Any:
    asked = None if owners is None else [dict(zip(("principal_type", "principal_name"), o.split(":"), strict=True))
                                         for o in owners]  # fmt: skip
    return conn.request(ApiKey.DESCRIBE_DELEGATION_TOKEN, 3, {"owners": asked}).body


def token_login(server: KstewardServer, token_id: str, hmac: bytes) -> tuple[RawConnection, Response]:
    conn = connect(server.address)
    return conn, conn.sasl_scram(token_id, base64.b64encode(hmac).decode(), token=True)


def add_acl(conn: RawConnection, resource_type: int, name: str, principal: str, operation: int) -> None:
    creation = {"resource_type": resource_type, "resource_name": name, "resource_pattern_type": 3,
                "principal": principal, "host": "*", "operation": operation, "permission_type": 3}  # fmt: skip
    result = conn.request(ApiKey.CREATE_ACLS, 3, {"creations": [creation]}).body
    assert [int(r.error_code) for r in result.results] == [NONE]


@contextmanager
def kafka_python_token_scram() -> Iterator[None]:
    """kafka-python's SCRAM-SHA-256 client, sending KIP-48's ``tokenauth=true`` in its client-first message."""
    from kafka.net.sasl import SASL_MECHANISMS, register_sasl_mechanism
    from kafka.net.sasl.scram import SaslMechanismScram

    class TokenScram(SaslMechanismScram):
        def __init__(self, **config: Any) -> None:
            super().__init__(**config)
            client = self._scram_client
            first_message = client.first_message

            def with_extension() -> bytes:
                message: bytes = first_message()
                client.auth_message += b",tokenauth=true"  # the extension is part of client-first-message-bare
                return message + b",tokenauth=true"

            client.first_message = with_extension

    original = SASL_MECHANISMS["SCRAM-SHA-256"]
    register_sasl_mechanism("SCRAM-SHA-256", TokenScram, overwrite=True)
    try:
        yield
    finally:
        register_sasl_mechanism("SCRAM-SHA-256", original, overwrite=True)


@pytest.fixture
def token_server(server_factory: Any) -> KstewardServer:
    return with_tokens(server_factory("sasl", name="tokens", debug_log=True)).start()


def test_a_token_for_alice_logs_in_as_alice_with_kafka_python_and_her_acls_apply(token_server: KstewardServer) -> None:
    from kafka.admin import KafkaAdminClient

    with admin(token_server) as conn:
        created = create(conn, "User:alice")
        assert int(created.error_code) == NONE
        assert (created.principal_name, created.token_requester_principal_name) == ("alice", "admin")
        for name in ("alice-topic", "other-topic"):
            topic = {"name": name, "num_partitions": 1, "replication_factor": 1, "assignments": [], "configs": []}
            result = conn.request(ApiKey.CREATE_TOPICS, 7, {"topics": [topic], "timeout": timedelta(seconds=10)}).body
            assert [int(t.error_code) for t in result.topics] == [NONE]
        add_acl(conn, 2, "alice-topic", "User:alice", 8)  # DESCRIBE on alice-topic

    with kafka_python_token_scram():
        client = KafkaAdminClient(
            bootstrap_servers=token_server.bootstrap, security_protocol="SASL_PLAINTEXT",
            sasl_mechanism="SCRAM-SHA-256", sasl_plain_username=created.token_id,
            sasl_plain_password=base64.b64encode(created.hmac).decode(), request_timeout_ms=10_000,
        )  # fmt: skip
        try:
            assert client.list_topics() == ["alice-topic"]  # Metadata lists what User:alice may describe
            with pytest.raises(Exception) as refused:  # kafka-python raises TopicAuthorizationFailedError
                client.create_topics({"alice-new": {"num_partitions": 1, "replication_factor": 1}})
        finally:
            client.close()
    assert getattr(refused.value, "errno", None) == TOPIC_AUTHORIZATION_FAILED, refused.value
    log = token_server.log_text()
    assert "logged in as User:alice with a delegation token requested by User:admin" in log


def test_a_token_login_cannot_manage_tokens_and_a_bad_token_is_refused(token_server: KstewardServer) -> None:
    with admin(token_server) as conn:
        created = create(conn, "User:alice")
    conn, login = token_login(token_server, created.token_id, created.hmac)
    with conn:
        assert int(login.body.error_code) == NONE
        refused = create(conn)
        assert int(refused.error_code) == REQUEST_NOT_ALLOWED and refused.hmac == b"" and refused.issue_timestamp == -1
        assert int(renew(conn, created.hmac).error_code) == REQUEST_NOT_ALLOWED
        assert int(expire(conn, created.hmac).error_code) == REQUEST_NOT_ALLOWED
        assert int(describe(conn).error_code) == REQUEST_NOT_ALLOWED
    for token_id, hmac in [(created.token_id, b"x" * 64), ("no-such-token", created.hmac)]:
        conn, login = token_login(token_server, token_id, hmac)
        with conn:
            assert int(login.body.error_code) == SASL_AUTHENTICATION_FAILED
    # Without tokenauth=true the token id is an (unknown) SCRAM user.
    with connect(token_server.address) as conn:
        plain_scram = conn.sasl_scram(created.token_id, base64.b64encode(created.hmac).decode())
        assert int(plain_scram.body.error_code) == SASL_AUTHENTICATION_FAILED


def test_create_for_another_owner_needs_create_tokens_and_renewers_must_be_users(token_server: KstewardServer) -> None:
    with alice(token_server) as conn:
        assert int(create(conn, "User:admin").error_code) == AUTHORIZATION_FAILED
        assert int(create(conn, renewers=("Group:ops",)).error_code) == INVALID_PRINCIPAL
        own = create(conn, version=1)  # v1: no owner field, the caller owns it
        assert int(own.error_code) == NONE and own.principal_name == "alice"
    with admin(token_server) as conn:
        add_acl(conn, 7, "User:admin", "User:alice", 13)  # CREATE_TOKENS on USER User:admin
    with alice(token_server) as conn:
        for_admin = create(conn, "User:admin")
        assert int(for_admin.error_code) == NONE and for_admin.token_requester_principal_name == "alice"


def test_renew_expire_and_describe_follow_kip_48_and_kip_373(token_server: KstewardServer) -> None:
    with admin(token_server) as conn:
        alices = create(conn, "User:alice", max_ms=3_600_000)
        admins = create(conn)
        # The requester may describe it but not renew it: only the owner and the renewers may.
        assert int(renew(conn, alices.hmac).error_code) == OWNER_MISMATCH
        assert int(renew(conn, b"not a token").error_code) == NOT_FOUND
        everything = describe(conn)
        assert {t.token_id for t in everything.tokens} == {alices.token_id, admins.token_id}
    with alice(token_server) as conn:
        renewed = renew(conn, alices.hmac, 60_000)
        assert int(renewed.error_code) == NONE and renewed.expiry_timestamp <= alices.issue_timestamp + 3_600_000
        [mine] = describe(conn).tokens
        # The HMAC is a secret: returned at creation only, never by Describe (Kafka's Describe returns it).
        assert (mine.token_id, mine.hmac, mine.expiry_timestamp) == (alices.token_id, b"", renewed.expiry_timestamp)
        assert (mine.principal_name, mine.token_requester_principal_name) == ("alice", "admin")
        assert describe(conn, []).tokens == ()  # an empty owner list asks for nothing
    with admin(token_server) as conn:
        add_acl(conn, 7, "User:admin", "User:alice", 14)  # DESCRIBE_TOKENS on USER User:admin
    with alice(token_server) as conn:
        assert {t.token_id for t in describe(conn).tokens} == {alices.token_id, admins.token_id}
        # A token belongs to an asked owner who owns, requested or may renew it: admin requested both.
        assert len(describe(conn, ["User:admin"]).tokens) == 2
        assert [t.token_id for t in describe(conn, ["User:alice"]).tokens] == [alices.token_id]
        gone = expire(conn, alices.hmac, -1)
        assert int(gone.error_code) == NONE
        assert int(expire(conn, alices.hmac).error_code) == NOT_FOUND
    conn, login = token_login(token_server, alices.token_id, alices.hmac)
    with conn:
        assert int(login.body.error_code) == SASL_AUTHENTICATION_FAILED


def test_an_expired_token_is_refused_and_swept_and_secrets_stay_out_of_logs_and_exports(
    server_factory: Any,
) -> None:
    overrides = {"delegation.token.expiry.check.interval.ms": "200"}
    server = with_tokens(server_factory("sasl", overrides, name="sweep", debug_log=True)).start()
    with admin(server) as conn:
        lasting = create(conn, "User:alice")
        brief = create(conn, "User:alice", max_ms=1)  # expires a millisecond after it is issued

        def refused() -> bool:
            conn, login = token_login(server, brief.token_id, brief.hmac)
            with conn:
                return int(login.body.error_code) == SASL_AUTHENTICATION_FAILED

        wait_for(refused, 10, "the expired token refused")
        wait_for(lambda: [t.token_id for t in describe(conn).tokens] == [lasting.token_id], 10,
                 "the sweep to remove the expired token")  # fmt: skip
        assert int(renew(conn, brief.hmac).error_code) == NOT_FOUND
    conn, login = token_login(server, lasting.token_id, lasting.hmac)
    with conn:
        assert int(login.body.error_code) == NONE
    secrets = [SECRET_KEY, base64.b64encode(lasting.hmac).decode(), lasting.hmac.hex(),
               base64.b64encode(brief.hmac).decode()]  # fmt: skip
    log = server.log_text()
    assert f"Delegation token expired for token: {brief.token_id}" in log
    for secret in secrets:
        assert secret not in log
    # DescribeConfigs, through kafka-python, hides the key as Kafka hides a PASSWORD config.
    from kafka.admin import ConfigResource, ConfigResourceType

    kp = kafka_python_admin(server.bootstrap, Auth("PLAIN", "admin", "admin-secret"))
    try:
        described = kp.describe_configs([ConfigResource(ConfigResourceType.BROKER, "1")], config_filter="all")
    finally:
        kp.close()
    entries = {name: entry for resources in described.values() for r in resources.values() for name, entry in r.items()}
    key_entry = entries["delegation.token.secret.key"]
    assert (key_entry["is_sensitive"], key_entry["value"], key_entry["read_only"]) == (True, None, True)
    assert entries["delegation.token.expiry.check.interval.ms"]["value"] == "200"
    server.stop()
    dump = ksteward_cli("metadata", "dump", str(server.data_dir))
    assert dump.returncode == 0, dump.stderr
    for secret in [*secrets, lasting.token_id, brief.token_id]:
        assert secret not in dump.stdout + dump.stderr
    payloads = [line["payload"] for line in map(json.loads, dump.stdout.splitlines()) if "payload" in line]
    tokens = [p["data"] for p in payloads if p.get("type") == "DELEGATION_TOKEN_RECORD"]
    removals = [p["data"] for p in payloads if p.get("type") == "REMOVE_DELEGATION_TOKEN_RECORD"]
    assert tokens and all(set(d.values()) == {"[hidden]"} for d in tokens)
    assert removals == [{"tokenId": "[hidden]"}]
    # The token outlives a restart: the image is rebuilt from the snapshot and the log.
    server.start()
    conn, login = token_login(server, lasting.token_id, lasting.hmac)
    with conn:
        assert int(login.body.error_code) == NONE


def test_tokens_are_disabled_without_a_secret_key_and_refused_on_plaintext(server_factory: Any) -> None:
    disabled: KstewardServer = server_factory("sasl", name="no-key").start()
    with admin(disabled) as conn:
        assert int(create(conn).error_code) == AUTH_DISABLED
        assert int(renew(conn, b"x").error_code) == AUTH_DISABLED
        assert int(expire(conn, b"x").error_code) == AUTH_DISABLED
        assert int(describe(conn).error_code) == AUTH_DISABLED
    disabled.stop()
    plaintext = with_tokens(server_factory("server", name="plaintext")).start()
    with connect(plaintext.address) as conn:
        assert int(create(conn).error_code) == REQUEST_NOT_ALLOWED
        assert int(describe(conn).error_code) == REQUEST_NOT_ALLOWED
    with connect((plaintext.address[0], plaintext.controller_port)) as conn:
        # The controller listener runs the same checks for a direct (not forwarded) request.
        assert int(create(conn).error_code) == REQUEST_NOT_ALLOWED
        versions = {k.api_key: (k.min_version, k.max_version) for k in conn.api_versions().body.api_keys}
    assert versions[38] == (1, 3) and versions[39] == versions[40] == (1, 2) and 41 not in versions
    with connect(plaintext.address) as conn:
        versions = {k.api_key: (k.min_version, k.max_version) for k in conn.api_versions().body.api_keys}
    assert versions[38] == versions[41] == (1, 3) and versions[39] == versions[40] == (1, 2)
