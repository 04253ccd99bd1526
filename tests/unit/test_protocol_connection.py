"""The sans-IO connection, with plain function calls: bytes in, events out."""

from __future__ import annotations

import io
import struct
from typing import Any

import pytest
from kio.schema.errors import ErrorCode
from kio.serial import entity_reader, entity_writer

from ksteward.protocol.apis import ApiKey, api_name
from ksteward.protocol.build import build
from ksteward.protocol.codec import Request, UnsupportedApiVersionsRequest, request_class, response_class
from ksteward.protocol.connection import (
    NEED_DATA,
    RULES,
    AuthenticationReply,
    Close,
    CloseKind,
    Event,
    Reads,
    ServerConnection,
    State,
)
from ksteward.protocol.framing import frame
from ksteward.protocol.sasl import Credentials

SERVED = {
    ApiKey.API_VERSIONS: (0, 4),
    ApiKey.SASL_HANDSHAKE: (0, 1),
    ApiKey.SASL_AUTHENTICATE: (0, 2),
    ApiKey.METADATA: (0, 13),
    ApiKey.CREATE_ACLS: (1, 3),
}
SASL_LIMIT = 1000
REQUEST_LIMIT = 5000
ALICE = b"\x00alice\x00alice-secret"
CREDENTIALS = Credentials(
    plain_verify=lambda user, password: (user, password) == ("alice", "alice-secret"),
    scram_lookup=lambda mechanism, user: None,
    decoy_secret=b"d" * 32,
)
# A valid body for each API, so that only the state decides what happens to a request.
BODIES: dict[int, tuple[int, dict[str, Any]]] = {
    ApiKey.API_VERSIONS: (3, {"client_software_name": "unit", "client_software_version": "1"}),
    ApiKey.SASL_HANDSHAKE: (1, {"mechanism": "PLAIN"}),
    ApiKey.SASL_AUTHENTICATE: (2, {"auth_bytes": ALICE}),
    ApiKey.METADATA: (12, {"topics": None, "allow_auto_topic_creation": False,
                           "include_topic_authorized_operations": False}),
    ApiKey.CREATE_ACLS: (3, {"creations": []}),
}  # fmt: skip


def request(api_key: int, version: int, values: dict[str, Any], correlation_id: int = 7) -> bytes:
    """One request frame: size, header, body."""
    cls = request_class(api_key, version)
    header_cls = cls.__header_schema__
    header = {"request_api_key": api_key, "request_api_version": version, "correlation_id": correlation_id,
              "client_id": "unit"}  # fmt: skip
    out = io.BytesIO()
    entity_writer(header_cls)(out, build(header_cls, header))
    entity_writer(cls)(out, build(cls, values))
    return frame(out.getvalue())


def sample(api_key: int, correlation_id: int = 7) -> bytes:
    version, values = BODIES[api_key]
    return request(api_key, version, values, correlation_id)


def sasl_connection() -> ServerConnection:
    return ServerConnection(
        served=SERVED,
        sasl=True,
        enabled_mechanisms=("PLAIN",),
        credentials=CREDENTIALS,
        max_request_bytes=REQUEST_LIMIT,
        max_receive_before_login=SASL_LIMIT,
    )


def events(conn: ServerConnection, data: bytes = b"") -> list[Event]:
    """Feed ``data``, then take events up to NEED_DATA or a Close."""
    if data:
        conn.receive_data(data)
    taken: list[Event] = []
    while True:
        event = conn.next_event()
        if event is NEED_DATA:
            return taken
        taken.append(event)
        if isinstance(event, Close):
            return taken


def reply_body(reply: bytes, api_key: int, version: int) -> Any:
    """Decode a response frame built by the connection."""
    (size,) = struct.unpack_from(">i", reply)
    assert size == len(reply) - 4
    cls = response_class(api_key, version)
    _header, header_size = entity_reader(cls.__header_schema__)(reply[4:], 0)
    body, _ = entity_reader(cls)(reply[4:], header_size)
    return body


def in_state(state: State) -> ServerConnection:
    conn = sasl_connection()
    if state is State.AUTHENTICATE:
        events(conn, sample(ApiKey.SASL_HANDSHAKE))
    elif state is State.RAW_TOKENS:
        events(conn, request(ApiKey.SASL_HANDSHAKE, 0, {"mechanism": "PLAIN"}))
    elif state is State.AUTHENTICATED:
        events(conn, sample(ApiKey.SASL_HANDSHAKE) + sample(ApiKey.SASL_AUTHENTICATE))
    assert conn.state is state
    return conn


# --- which api keys each state accepts -------------------------------------------------------------

STATES_READING_REQUESTS = [s for s, rule in RULES.items() if rule.reads is Reads.REQUESTS]


@pytest.mark.parametrize("state", STATES_READING_REQUESTS, ids=lambda s: s.name)
@pytest.mark.parametrize("api_key", sorted(SERVED), ids=lambda k: ApiKey(k).name)
def test_each_state_takes_the_api_keys_its_rule_accepts(state: State, api_key: int) -> None:
    rule = RULES[state]
    conn = in_state(state)
    (event,) = events(conn, sample(api_key))
    if rule.accepts is None or api_key in rule.accepts:
        assert isinstance(event, Request | AuthenticationReply)
    else:
        # Refused from the header: Kafka's IllegalSaslStateException text, and the connection is done.
        reason = f"Unexpected Kafka request of type {api_name(api_key)} during {rule.during}."
        assert event == Close(CloseKind.INVALID, reason)
        assert conn.state is State.CLOSED


def test_the_table_names_what_kafka_allows_before_login() -> None:
    assert RULES[State.HANDSHAKE].accepts == {ApiKey.API_VERSIONS, ApiKey.SASL_HANDSHAKE}
    assert RULES[State.AUTHENTICATE].accepts == {ApiKey.SASL_AUTHENTICATE}
    assert RULES[State.AUTHENTICATED].accepts is None  # every served key
    assert RULES[State.AUTHENTICATED].frame_limit == "socket.request.max.bytes"
    assert {RULES[s].frame_limit for s in (State.HANDSHAKE, State.AUTHENTICATE, State.RAW_TOKENS)} == {
        "sasl.server.max.receive.size"
    }


def test_api_versions_before_login_is_a_request_to_serve() -> None:
    (event,) = events(sasl_connection(), sample(ApiKey.API_VERSIONS, correlation_id=41))
    assert isinstance(event, Request)
    assert (event.api_key, event.api_version, event.correlation_id) == (ApiKey.API_VERSIONS, 3, 41)
    assert event.body.client_software_name == "unit"


def test_api_versions_too_new_is_handed_over_for_kip_511() -> None:
    payload = bytearray(sample(ApiKey.API_VERSIONS, correlation_id=9))
    struct.pack_into(">h", payload, 6, 5)  # ApiVersions v5: above what is served
    (event,) = events(sasl_connection(), bytes(payload))
    assert isinstance(event, UnsupportedApiVersionsRequest)
    assert (event.api_version, event.correlation_id) == (5, 9)


def test_plain_login_then_every_served_api() -> None:
    conn = sasl_connection()
    handshake, authenticate = events(conn, sample(ApiKey.SASL_HANDSHAKE) + sample(ApiKey.SASL_AUTHENTICATE))
    assert isinstance(handshake, AuthenticationReply) and isinstance(authenticate, AuthenticationReply)
    body = reply_body(handshake.frame, ApiKey.SASL_HANDSHAKE, 1)
    assert (body.error_code, body.mechanisms) == (ErrorCode.none, ("PLAIN",))
    assert reply_body(authenticate.frame, ApiKey.SASL_AUTHENTICATE, 2).error_code == ErrorCode.none
    assert conn.authenticated and conn.principal == "User:alice"
    (metadata,) = events(conn, sample(ApiKey.METADATA))
    assert isinstance(metadata, Request) and metadata.api_key == ApiKey.METADATA


def test_after_login_the_sasl_apis_are_answered_illegal_sasl_state() -> None:
    conn = in_state(State.AUTHENTICATED)
    handshake, authenticate = events(conn, sample(ApiKey.SASL_HANDSHAKE) + sample(ApiKey.SASL_AUTHENTICATE))
    assert isinstance(handshake, AuthenticationReply) and isinstance(authenticate, AuthenticationReply)
    assert reply_body(handshake.frame, ApiKey.SASL_HANDSHAKE, 1).error_code == ErrorCode.illegal_sasl_state
    answer = reply_body(authenticate.frame, ApiKey.SASL_AUTHENTICATE, 2)
    assert answer.error_code == ErrorCode.illegal_sasl_state
    assert answer.error_message == "Re-authentication is not enabled on this listener"
    assert conn.authenticated


def test_plaintext_starts_logged_in_and_offers_no_mechanism() -> None:
    conn = ServerConnection(served=SERVED, principal="User:CN=client")
    assert conn.authenticated and conn.principal == "User:CN=client"
    metadata, handshake = events(conn, sample(ApiKey.METADATA) + sample(ApiKey.SASL_HANDSHAKE))
    assert isinstance(metadata, Request)
    assert isinstance(handshake, AuthenticationReply)
    body = reply_body(handshake.frame, ApiKey.SASL_HANDSHAKE, 1)
    assert (body.error_code, body.mechanisms) == (ErrorCode.illegal_sasl_state, ())


def test_raw_tokens_after_a_v0_handshake() -> None:
    conn = in_state(State.RAW_TOKENS)
    (event,) = events(conn, frame(ALICE))  # no Kafka header: the frame is the token
    assert event == AuthenticationReply(frame(b""))
    assert conn.authenticated and conn.principal == "User:alice"


# --- failed logins ---------------------------------------------------------------------------------


def test_a_refused_token_closes_after_its_reply_and_stays_closed() -> None:
    conn = in_state(State.AUTHENTICATE)
    (event,) = events(conn, request(ApiKey.SASL_AUTHENTICATE, 2, {"auth_bytes": b"\x00alice\x00wrong"}))
    assert isinstance(event, Close) and event.kind is CloseKind.AUTHENTICATION_FAILED
    assert event.reason == "SASL PLAIN exchange refused"
    assert event.reply is not None
    assert reply_body(event.reply, ApiKey.SASL_AUTHENTICATE, 2).error_code == ErrorCode.sasl_authentication_failed
    assert conn.state is State.CLOSED and not conn.authenticated
    assert events(conn, sample(ApiKey.API_VERSIONS)) == [event]  # nothing more is read


def test_an_unsupported_mechanism_is_answered_then_closed_and_not_logged() -> None:
    conn = sasl_connection()
    (event,) = events(conn, request(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "hunter2"}))
    assert isinstance(event, Close) and event.kind is CloseKind.AUTHENTICATION_FAILED
    assert "hunter2" not in event.reason
    assert event.reply is not None
    body = reply_body(event.reply, ApiKey.SASL_HANDSHAKE, 1)
    assert (body.error_code, body.mechanisms) == (ErrorCode.unsupported_sasl_mechanism, ("PLAIN",))


def test_a_refused_raw_token_closes_without_a_reply() -> None:
    conn = in_state(State.RAW_TOKENS)
    (event,) = events(conn, frame(b"\x00alice\x00wrong"))
    assert event == Close(CloseKind.AUTHENTICATION_FAILED, "SASL PLAIN exchange refused (raw SASL tokens)")


# --- frame sizes -----------------------------------------------------------------------------------


def test_before_login_a_frame_over_sasl_server_max_receive_size_is_refused_from_its_size() -> None:
    conn = sasl_connection()
    (event,) = events(conn, struct.pack(">i", SASL_LIMIT + 1))
    assert event == Close(
        CloseKind.INVALID, f"frame of {SASL_LIMIT + 1} bytes is larger than sasl.server.max.receive.size ({SASL_LIMIT})"
    )
    conn = sasl_connection()
    assert events(conn, struct.pack(">i", SASL_LIMIT)) == []  # at the limit: the body may follow


def test_after_login_socket_request_max_bytes_applies() -> None:
    conn = in_state(State.AUTHENTICATED)
    assert events(conn, struct.pack(">i", SASL_LIMIT + 1)) == []  # waiting for the body
    conn = in_state(State.AUTHENTICATED)
    (event,) = events(conn, struct.pack(">i", REQUEST_LIMIT + 1))
    assert event == Close(
        CloseKind.INVALID,
        f"frame of {REQUEST_LIMIT + 1} bytes is larger than socket.request.max.bytes ({REQUEST_LIMIT})",
    )


def test_the_pre_login_limit_is_never_above_socket_request_max_bytes() -> None:
    conn = ServerConnection(served=SERVED, sasl=True, max_request_bytes=100, max_receive_before_login=1000)
    (event,) = events(conn, struct.pack(">i", 101))
    assert isinstance(event, Close) and "sasl.server.max.receive.size (100)" in event.reason


def test_a_large_request_pipelined_behind_its_login_gets_the_post_login_limit() -> None:
    topics = [{"name": "t" * 200, "topic_id": None}] * 6
    big = request(ApiKey.METADATA, 12, {**BODIES[ApiKey.METADATA][1], "topics": topics})
    assert SASL_LIMIT < len(big) < REQUEST_LIMIT
    conn = sasl_connection()
    taken = events(conn, sample(ApiKey.SASL_HANDSHAKE) + sample(ApiKey.SASL_AUTHENTICATE) + big)
    assert [type(e) for e in taken] == [AuthenticationReply, AuthenticationReply, Request]


@pytest.mark.parametrize("size", [0, -1])
def test_empty_or_negative_frame_sizes_close(size: int) -> None:
    (event,) = events(in_state(State.AUTHENTICATED), struct.pack(">i", size))
    assert event == Close(CloseKind.INVALID, f"invalid frame size {size}")


# --- the header before the body ---------------------------------------------------------------------


def test_a_request_refused_from_its_header_is_never_decoded() -> None:
    header = struct.pack(">hhih", ApiKey.METADATA, 12, 1, 4) + b"evil" + b"\x00"
    (event,) = events(sasl_connection(), frame(header + b"\xff" * 400))  # a body that cannot decode
    assert event == Close(CloseKind.INVALID, "Unexpected Kafka request of type Metadata during SASL handshake.")


def test_an_undecodable_request_names_key_version_and_size_never_bytes() -> None:
    header = request(ApiKey.CREATE_ACLS, 3, {"creations": []})[4:-2]  # the header alone
    payload = header + b"\x02\x01\x10body-secret-D7\x00" + b"\xff" * 8
    (event,) = events(in_state(State.AUTHENTICATED), frame(payload))
    assert isinstance(event, Close) and event.kind is CloseKind.INVALID
    assert event.reason.startswith(f"cannot parse CreateAcls v3 ({len(payload)} bytes): ")
    assert "secret" not in event.reason


def test_a_payload_too_short_for_a_header_closes() -> None:
    (event,) = events(in_state(State.AUTHENTICATED), frame(b"\x00\x12"))
    assert isinstance(event, Close) and event.kind is CloseKind.INVALID and "too short" in event.reason


# --- frames across feeds ----------------------------------------------------------------------------


def test_a_frame_split_across_feeds() -> None:
    conn = sasl_connection()
    data = sample(ApiKey.API_VERSIONS, correlation_id=3)
    for i in range(len(data) - 1):
        assert events(conn, data[i : i + 1]) == []
    (event,) = events(conn, data[-1:])
    assert isinstance(event, Request) and event.correlation_id == 3


def test_two_frames_in_one_feed_come_out_in_order() -> None:
    conn = in_state(State.AUTHENTICATED)
    first, second = events(conn, sample(ApiKey.METADATA, 1) + sample(ApiKey.API_VERSIONS, 2))
    assert isinstance(first, Request) and isinstance(second, Request)
    assert [(first.api_key, first.correlation_id), (second.api_key, second.correlation_id)] == [
        (ApiKey.METADATA, 1),
        (ApiKey.API_VERSIONS, 2),
    ]
    assert conn.next_event() is NEED_DATA


@pytest.mark.parametrize(
    ("tail", "expected"),
    [
        (b"", Close(CloseKind.PEER_CLOSED, "closed by the peer")),
        (b"\x00\x00", Close(CloseKind.TRUNCATED, "truncated frame size")),
        (struct.pack(">i", 10) + b"abc", Close(CloseKind.TRUNCATED, "frame truncated")),
    ],
)
def test_end_of_stream(tail: bytes, expected: Close) -> None:
    conn = in_state(State.AUTHENTICATED)
    (event,) = events(conn, sample(ApiKey.METADATA) + tail)
    assert isinstance(event, Request)  # a complete frame before the end is still served
    conn.receive_data(b"")
    assert conn.next_event() == expected
