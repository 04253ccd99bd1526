"""Envelope (KIP-590) against the real server: requests forwarded through ksteward's own controller channel
and ForwardingManager run on the controller as the original client, exactly once, audited with both
principals; the client listener never takes an Envelope, a sender without CLUSTER_ACTION is refused, and a
garbage inner request is answered with an envelope error while the server carries on.

The server is the "sasl" template with its CONTROLLER listener switched to SASL_PLAINTEXT, so the
forwarding broker logs in as ``broker`` (given CLUSTER_ACTION on the cluster by an ACL) and a client such
as ``alice`` can be tried as a sender too.
"""

from __future__ import annotations

import asyncio
import datetime
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from harness import HOST, KstewardServer, ServerFactory, ksteward_cli
from kio.schema.errors import ErrorCode
from rawkafka import RawConnection, connect, encode_request, encode_request_parts

from ksteward.broker.forwarding import ClientRequest, Completion, ForwardingManager, Outcome
from ksteward.protocol.apis import ApiKey
from ksteward.protocol.codec import decode_request
from ksteward.protocol.principal import KafkaPrincipal, serialize_principal
from ksteward.server.api_table import broker_api_table
from ksteward.server.controller_channel import ControllerChannel

USERS = {"admin": "admin-secret", "alice": "alice-secret", "broker": "broker-secret"}
JAAS = (
    'org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" '
    + " ".join(f'user_{u}="{p}"' for u, p in USERS.items())
    + ";"
)
CLUSTER, TOPIC = 4, 2
LITERAL, ALLOW = 3, 3
ALTER, ALTER_CONFIGS, CLUSTER_ACTION = 7, 11, 9
TOPIC_NAME = "orders"


def acl(resource_type: int, name: str, principal: str, operation: int) -> dict[str, Any]:
    return {"resource_type": resource_type, "resource_name": name, "resource_pattern_type": LITERAL,
            "principal": principal, "host": "*", "operation": operation, "permission_type": ALLOW}  # fmt: skip


def login(port: int, user: str) -> RawConnection:
    conn = RawConnection(HOST, port)
    assert int(conn.sasl_plain(user, USERS[user]).body.error_code) == 0
    return conn


def admin_creates(server: KstewardServer, *acls: dict[str, Any]) -> None:
    with login(server.port, "admin") as admin:
        results = admin.request(ApiKey.CREATE_ACLS, 3, {"creations": list(acls)}).body.results
        assert [int(r.error_code) for r in results] == [0] * len(acls)


@pytest.fixture
def server(server_factory: ServerFactory, tmp_path: Path) -> Iterator[KstewardServer]:
    s = server_factory(
        "sasl",
        {
            "listener.security.protocol.map": "SASL_PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:SASL_PLAINTEXT",
            "listener.name.controller.plain.sasl.jaas.config": JAAS,
            "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
            "audit.log.dir": str(tmp_path / "audit"),
        },
    ).start()
    with login(s.port, "admin") as admin:
        created = admin.request(ApiKey.CREATE_ACLS, 3, {"creations": [acl(CLUSTER, "kafka-cluster", "User:broker",
                                                                          CLUSTER_ACTION)]})  # fmt: skip
        assert [int(r.error_code) for r in created.body.results] == [0]
        new_topic = {"name": TOPIC_NAME, "num_partitions": 1, "replication_factor": 1, "assignments": [], "configs": []}
        topics = admin.request(
            ApiKey.CREATE_TOPICS,
            7,
            {"topics": [new_topic], "timeout": datetime.timedelta(seconds=30), "validate_only": False},
        )
        assert int(topics.body.topics[0].error_code) == 0
    yield s


# --- forwarding as a broker would ---------------------------------------------------------------------


def client_request(api_key: int, version: int, body: dict[str, Any], correlation_id: int) -> ClientRequest:
    """What a broker would hold of alice's request: her bytes, her principal, her address."""
    payload = encode_request(api_key, version, correlation_id, body)
    decoded = decode_request(payload, broker_api_table().served)
    return ClientRequest(payload, api_key, version, correlation_id, decoded.body, "User:alice", "127.0.0.1")  # type: ignore[union-attr]


def forward(server: KstewardServer, *requests: ClientRequest) -> list[Completion]:
    """Forward ``requests`` in order through one channel logged in as ``broker``."""

    async def run() -> list[Completion]:
        manager = ForwardingManager()
        channel = ControllerChannel((HOST, server.controller_port), manager, sasl_plain=("broker", USERS["broker"]))
        channel.start()
        try:
            completions = await asyncio.gather(*(channel.forward(r) for r in requests))
        finally:
            await channel.close()
        assert manager.controller_api_versions is not None and ApiKey.ENVELOPE in manager.controller_api_versions
        return list(completions)

    return asyncio.run(run())


def records_with(server: KstewardServer, *needles: str) -> list[dict[str, Any]]:
    dump = ksteward_cli("metadata", "dump", str(server.data_dir))
    assert dump.returncode == 0, dump.stderr
    lines = [json.loads(line) for line in dump.stdout.splitlines() if line.strip()]
    return [line for line in lines if all(n in json.dumps(line.get("payload")) for n in needles)]


def audit_events(server: KstewardServer, audit_dir: Path) -> list[dict[str, Any]]:
    server.stop()  # a clean stop flushes the audit writer
    events = []
    for path in sorted(audit_dir.glob("audit*.log")):
        events += [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return events


def test_forwarded_mutations_run_once_as_the_client_and_are_audited_with_both(
    server: KstewardServer, tmp_path: Path
) -> None:
    create = {"creations": [acl(TOPIC, "payments", "User:carol", ALTER)]}
    alter = {"resources": [{"resource_type": TOPIC, "resource_name": TOPIC_NAME,
                            "configs": [{"name": "retention.ms", "config_operation": 0, "value": "7654321"}]}],
             "validate_only": False}  # fmt: skip

    # alice has no ACL yet: the controller authorizes her, not the broker, and refuses inside the envelope.
    denied_acl, denied_config = forward(
        server,
        client_request(ApiKey.CREATE_ACLS, 3, create, 11),
        client_request(ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, alter, 12),
    )
    assert denied_acl.outcome is Outcome.RESPONSE
    assert [int(r.error_code) for r in denied_acl.response.results] == [ErrorCode.cluster_authorization_failed]
    assert [int(r.error_code) for r in denied_config.response.responses] == [ErrorCode.topic_authorization_failed]
    assert records_with(server, "User:carol") == []

    with login(server.port, "admin") as admin:
        grants = [
            acl(CLUSTER, "kafka-cluster", "User:alice", ALTER),
            acl(TOPIC, TOPIC_NAME, "User:alice", ALTER_CONFIGS),
        ]
        assert [
            int(r.error_code) for r in admin.request(ApiKey.CREATE_ACLS, 3, {"creations": grants}).body.results
        ] == [0, 0]

    created, altered = forward(
        server,
        client_request(ApiKey.CREATE_ACLS, 3, create, 21),
        client_request(ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, alter, 22),
    )
    assert created.outcome is Outcome.RESPONSE and created.request.correlation_id == 21
    assert [int(r.error_code) for r in created.response.results] == [0]
    assert [int(r.error_code) for r in altered.response.responses] == [0]
    frame = altered.frame()
    assert frame is not None and frame[4:8] == (22).to_bytes(4, "big")  # alice's own correlation id

    # Applied exactly once: one record each in the metadata log.
    assert len(records_with(server, "User:carol", "payments")) == 1
    assert len(records_with(server, "retention.ms", "7654321")) == 1

    events = audit_events(server, tmp_path / "audit")
    envelope_checks = [e for e in events if e["data"]["methodName"] == "kafka.Envelope"]
    assert envelope_checks and all(
        e["data"]["authenticationInfo"]["principal"] == "User:broker" for e in envelope_checks
    )
    assert {e["data"]["authorizationInfo"]["operation"] for e in envelope_checks} == {"ClusterAction"}
    for method, granted in (("kafka.CreateAcls", [False, True]), ("kafka.IncrementalAlterConfigs", [False, True])):
        lines = [e for e in events if e["data"]["methodName"] == method
                 and e["data"]["authenticationInfo"]["principal"] == "User:alice"]  # fmt: skip
        assert [e["data"]["authorizationInfo"]["granted"] for e in lines] == granted
        for e in lines:
            assert e["data"]["requestMetadata"]["clientAddress"] == "127.0.0.1"
            assert e["data"]["ksteward"]["forwardedBy"] == {"principal": "User:broker", "clientAddress": "127.0.0.1"}
    direct = [e for e in events if e["data"]["authenticationInfo"]["principal"] == "User:admin"]
    assert direct and all("forwardedBy" not in e["data"]["ksteward"] for e in direct)


# --- refusals -------------------------------------------------------------------------------------------


def envelope_body(inner: bytes, principal: bytes | None = None, address: bytes = b"\x7f\x00\x00\x01") -> dict[str, Any]:
    if principal is None:
        principal = serialize_principal(KafkaPrincipal("User", "alice"))
    return {"request_data": inner, "request_principal": principal, "client_host_address": address}


CAROL_HEADER, CAROL_BODY = encode_request_parts(ApiKey.CREATE_ACLS, 3, 5, {"creations": [acl(TOPIC, "t", "User:carol",
                                                                                            ALTER)]})  # fmt: skip
CREATE_CAROL = CAROL_HEADER + CAROL_BODY
HUGE_COUNT = CAROL_HEADER + b"\xff\xff\xff\x7f" + CAROL_BODY[1:]  # the creations array claims 268 million entries
UNSERVED_VERSION = CREATE_CAROL[:2] + (9).to_bytes(2, "big") + CREATE_CAROL[4:]


ONE_CREATION = {"creations": [acl(TOPIC, "t", "User:carol", ALTER)]}


def test_the_client_listener_never_takes_an_envelope(server: KstewardServer) -> None:
    with login(server.port, "admin") as admin:
        served = {int(k.api_key) for k in admin.api_versions().body.api_keys}
        assert ApiKey.ENVELOPE not in served
        admin.send_request(ApiKey.ENVELOPE, 0, envelope_body(CREATE_CAROL))
        assert admin.read_until_closed() == b""  # an unserved api key: the connection is closed unanswered
    with login(server.controller_port, "admin") as controller:
        assert ApiKey.ENVELOPE in {int(k.api_key) for k in controller.api_versions().body.api_keys}
    assert records_with(server, "User:carol") == []


def test_a_sender_without_cluster_action_is_refused(server: KstewardServer) -> None:
    with login(server.controller_port, "alice") as alice:
        response = alice.request(ApiKey.ENVELOPE, 0, envelope_body(CREATE_CAROL))
        assert int(response.body.error_code) == ErrorCode.cluster_authorization_failed
        assert response.body.response_data is None
    assert records_with(server, "User:carol") == []

    # Through the channel, the client behind such a broker sees UNKNOWN_SERVER_ERROR (Kafka hides envelope errors).
    completion = _forward_one_creation(server, ("alice", USERS["alice"]))
    assert completion.outcome is Outcome.ERROR
    assert [int(r.error_code) for r in completion.response.results] == [ErrorCode.unknown_server_error]


def _forward_one_creation(server: KstewardServer, sasl_plain: tuple[str, str]) -> Completion:
    """One CreateAcls through a ControllerChannel to ``server``'s controller listener, logged in as ``sasl_plain``."""

    async def run() -> Completion:
        channel = ControllerChannel((HOST, server.controller_port), sasl_plain=sasl_plain)
        channel.start()
        try:
            return await channel.forward(client_request(ApiKey.CREATE_ACLS, 3, ONE_CREATION, 9))
        finally:
            await channel.close()

    return asyncio.run(run())


def test_a_channel_that_cannot_log_in_answers_unknown_server_error(server: KstewardServer) -> None:
    completion = _forward_one_creation(server, ("broker", "wrong"))
    assert completion.outcome is Outcome.ERROR
    assert [int(r.error_code) for r in completion.response.results] == [ErrorCode.unknown_server_error]


@pytest.mark.parametrize(
    ("body", "code"),
    [
        (envelope_body(b""), ErrorCode.unsupported_version),
        (envelope_body(b"\x00\x1e\x00"), ErrorCode.unsupported_version),  # a truncated header
        (envelope_body(CREATE_CAROL[:20]), ErrorCode.unsupported_version),  # a truncated body
        (envelope_body(HUGE_COUNT), ErrorCode.unsupported_version),
        (envelope_body(UNSERVED_VERSION), ErrorCode.unsupported_version),
        (
            envelope_body(
                encode_request(
                    ApiKey.DESCRIBE_ACLS,
                    3,
                    5,
                    {
                        "resource_type_filter": 1,
                        "resource_name_filter": None,
                        "pattern_type_filter": 1,
                        "principal_filter": None,
                        "host_filter": None,
                        "operation": 1,
                        "permission_type": 1,
                    },
                )
            ),
            ErrorCode.invalid_request,
        ),
        (envelope_body(encode_request(ApiKey.ENVELOPE, 0, 5, envelope_body(CREATE_CAROL))), ErrorCode.invalid_request),
        (envelope_body(CREATE_CAROL, principal=b"\x00\x01garbage"), ErrorCode.principal_deserialization_failure),
        (envelope_body(CREATE_CAROL, principal=b""), ErrorCode.principal_deserialization_failure),
        (envelope_body(CREATE_CAROL, address=b"\x01\x02\x03"), ErrorCode.invalid_request),
    ],
    ids=[
        "empty",
        "short header",
        "short body",
        "huge count",
        "unserved version",
        "not forwardable",
        "nested",
        "bad principal",
        "no principal",
        "bad address",
    ],
)
def test_a_garbage_envelope_is_answered_and_the_server_carries_on(
    server: KstewardServer, body: dict[str, Any], code: ErrorCode
) -> None:
    with login(server.controller_port, "broker") as broker:
        response = broker.request(ApiKey.ENVELOPE, 0, body)
        assert int(response.body.error_code) == code
        assert response.body.response_data is None
        # The same connection still serves a good envelope.
        good = broker.request(
            ApiKey.ENVELOPE, 0, envelope_body(encode_request(ApiKey.CREATE_ACLS, 3, 6, {"creations": []}))
        )
        assert int(good.body.error_code) == 0 and good.body.response_data
    assert records_with(server, "User:carol") == []
    with connect(server.address) as conn:
        assert int(conn.api_versions().body.error_code) == 0


# --- the channel when the controller goes away ------------------------------------------------------------


def test_requests_wait_for_a_controller_that_comes_back_and_apply_once(server: KstewardServer) -> None:
    with login(server.port, "admin") as admin:
        grant = [acl(CLUSTER, "kafka-cluster", "User:alice", ALTER)]
        assert [int(r.error_code) for r in admin.request(ApiKey.CREATE_ACLS, 3, {"creations": grant}).body.results] == [
            0
        ]
    server.stop()
    requests = [
        client_request(ApiKey.CREATE_ACLS, 3, {"creations": [acl(TOPIC, f"t{i}", "User:dave", ALTER)]}, 30 + i)
        for i in range(3)
    ]

    async def run() -> list[Completion]:
        channel = ControllerChannel((HOST, server.controller_port), sasl_plain=("broker", USERS["broker"]))
        channel.start()
        try:
            pending = [asyncio.ensure_future(channel.forward(r)) for r in requests]
            await asyncio.to_thread(server.restart)  # the requests wait in the queue meanwhile
            return list(await asyncio.gather(*pending))
        finally:
            await channel.close()

    completions = asyncio.run(run())
    assert [c.request.correlation_id for c in completions] == [30, 31, 32]
    assert all(c.outcome is Outcome.RESPONSE and int(c.response.results[0].error_code) == 0 for c in completions)
    for i in range(3):
        assert len(records_with(server, "User:dave", f'"t{i}"')) == 1


def test_with_no_controller_the_client_gets_request_timed_out(server: KstewardServer) -> None:
    server.stop()

    async def run() -> Completion:
        manager = ForwardingManager(retry_timeout_s=0.5)  # Kafka's is 60 s; the rule is the same
        channel = ControllerChannel((HOST, server.controller_port), manager, backoff_s=0.05)
        channel.start()
        try:
            creations = {"creations": [acl(TOPIC, "t", "User:erin", ALTER)]}
            return await channel.forward(client_request(ApiKey.CREATE_ACLS, 3, creations, 40))
        finally:
            await channel.close()

    completion = asyncio.run(run())
    assert completion.outcome is Outcome.ERROR
    assert [int(r.error_code) for r in completion.response.results] == [ErrorCode.request_timed_out]
    frame = completion.frame()
    assert frame is not None and frame[4:8] == (40).to_bytes(4, "big")
