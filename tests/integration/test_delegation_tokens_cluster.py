"""Delegation tokens through a broker-only node: the broker checks a create, renew or expire, forwards it in an
Envelope to the controller, which writes the DelegationTokenRecord; the broker follows the log, logs the token
in and answers DescribeDelegationToken from its own image. Raw wire throughout (no installed client has the
token APIs or sends SCRAM's ``tokenauth`` extension; see test_delegation_tokens.py)."""

from __future__ import annotations

import base64
from datetime import timedelta
from pathlib import Path
from typing import Any

from harness import HOST, Cluster, wait_for
from rawkafka import RawConnection, connect

from ksteward.protocol.apis import ApiKey

SECRET_KEY = "cluster-t0ken-key"
JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" '
        'password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";')  # fmt: skip
NONE, REQUEST_NOT_ALLOWED, OWNER_MISMATCH = 0, 64, 63


def _broker_listener(port: int) -> dict[str, str]:
    return {
        "listeners": f"SASL_PLAINTEXT://{HOST}:{port}",
        "advertised.listeners": f"SASL_PLAINTEXT://{HOST}:{port}",
        "listener.security.protocol.map": "SASL_PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT",
        "inter.broker.listener.name": "SASL_PLAINTEXT",
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
    }


def login(address: tuple[str, int], user: str) -> RawConnection:
    conn = connect(address)
    assert int(conn.sasl_plain(user, f"{user}-secret").body.error_code) == NONE
    return conn


def create(conn: RawConnection, owner_name: str | None = None) -> Any:
    body = {"owner_principal_type": "User" if owner_name else None, "owner_principal_name": owner_name,
            "renewers": [], "max_lifetime": timedelta(hours=1)}  # fmt: skip
    return conn.request(ApiKey.CREATE_DELEGATION_TOKEN, 3, body).body


def renew(conn: RawConnection, hmac: bytes) -> Any:
    return conn.request(ApiKey.RENEW_DELEGATION_TOKEN, 2, {"hmac": hmac, "renew_period": timedelta(minutes=5)}).body


def test_tokens_are_forwarded_followed_and_logged_in_on_a_broker_only_node(tmp_path: Path) -> None:
    settings = {"delegation.token.secret.key": SECRET_KEY, "super.users": "User:ANONYMOUS;User:admin"}
    made = Cluster(tmp_path, brokers=1, overrides=settings)
    [broker] = made.brokers
    broker.extra_overrides |= _broker_listener(broker.port)
    try:
        made.start()
        with login(broker.address, "admin") as conn:
            created = create(conn, "alice")  # forwarded: the controller writes the record
            assert int(created.error_code) == NONE and created.token_requester_principal_name == "admin"
            # The requester is not a renewer: the controller refuses, and the broker passes the refusal on.
            assert int(renew(conn, created.hmac).error_code) == OWNER_MISMATCH
        password = base64.b64encode(created.hmac).decode()

        def token_login() -> RawConnection | None:
            conn = connect(broker.address)
            if int(conn.sasl_scram(created.token_id, password, token=True).body.error_code) == NONE:
                return conn
            conn.close()
            return None

        token_conn = wait_for(token_login, 20.0, "the broker to follow the token and log it in")
        assert isinstance(token_conn, RawConnection)
        with token_conn:
            # Refused by the broker itself (Kafka's KafkaApis), before any forwarding.
            assert int(create(token_conn).error_code) == REQUEST_NOT_ALLOWED
            assert int(renew(token_conn, created.hmac).error_code) == REQUEST_NOT_ALLOWED
        with login(broker.address, "alice") as conn:
            [described] = conn.request(ApiKey.DESCRIBE_DELEGATION_TOKEN, 3, {"owners": None}).body.tokens
            assert (described.token_id, described.hmac) == (created.token_id, b"")  # returned at creation only
            renewed = renew(conn, created.hmac)  # the owner may renew: forwarded, committed
            assert int(renewed.error_code) == NONE and renewed.expiry_timestamp <= created.max_timestamp
    finally:
        made.kill()
