"""The wire protocol at its edges, with raw sockets: versions, bad frames, tags, pipelining, SASL order."""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import Any

import pytest
import rawkafka
from harness import KstewardServer
from kio.schema.errors import ErrorCode

from ksteward.protocol.apis import ApiKey
from ksteward.protocol.varint import write_uvarint

MAX_FRAME = 1024

# APIs every broker listener has served from the start, at these versions; the table may grow.
SERVED = {
    ApiKey.API_VERSIONS: (0, 4),
    ApiKey.METADATA: (0, 13),
    ApiKey.DESCRIBE_CLUSTER: (0, 2),
    ApiKey.SASL_HANDSHAKE: (0, 1),
    ApiKey.SASL_AUTHENTICATE: (0, 2),
    ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: (0, 0),
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS: (0, 0),
}


@pytest.fixture(scope="module")
def small_frames_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KstewardServer]:
    """The shipped PLAINTEXT config with socket.request.max.bytes=1024."""
    server = KstewardServer(
        tmp_path_factory.mktemp("edges"), "server", {"socket.request.max.bytes": str(MAX_FRAME)}, name="edges"
    )
    try:
        yield server.start()
    finally:
        server.kill()


def assert_serving(server: KstewardServer) -> None:
    """A fresh connection still gets an ApiVersions answer."""
    with rawkafka.connect(server.address) as conn:
        assert conn.api_versions(3).body.error_code == ErrorCode.none


def advertised(body: Any) -> dict[int, tuple[int, int]]:
    keys = [int(k.api_key) for k in body.api_keys]
    assert len(keys) == len(set(keys)), f"api keys advertised twice: {keys}"
    return {int(k.api_key): (int(k.min_version), int(k.max_version)) for k in body.api_keys}


def assert_served_table(body: Any) -> None:
    table = advertised(body)
    for key, versions in SERVED.items():
        assert table.get(key) == versions, f"api key {key}: advertised {table.get(key)}, expected {versions}"
    assert ApiKey.GET_TELEMETRY_SUBSCRIPTIONS not in table  # librdkafka starts telemetry if this is advertised


# --- ApiVersions ---------------------------------------------------------------------------------


@pytest.mark.parametrize("version", [0, 1, 2, 3, 4])
def test_api_versions_answered_at_each_version(small_frames_server: KstewardServer, version: int) -> None:
    with rawkafka.connect(small_frames_server.address) as conn:
        response = conn.api_versions(version)  # decodes exactly as v<version>, checks the correlation id
    assert response.body.error_code == ErrorCode.none
    assert_served_table(response.body)
    if version >= 3:
        finalized = {f.name: int(f.max_version_level) for f in response.body.finalized_features}
        assert finalized.get("metadata.version", 0) > 0, f"metadata.version is not finalized: {finalized}"


@pytest.mark.parametrize("listener", ["plaintext", "sasl"])
def test_api_versions_too_new_gets_kip511_answer(
    small_frames_server: KstewardServer, sasl_server: KstewardServer, listener: str
) -> None:
    server = small_frames_server if listener == "plaintext" else sasl_server
    with rawkafka.connect(server.address) as conn:
        conn.send_frame(rawkafka.api_versions_v5_payload(correlation_id=4242))
        response = rawkafka.decode_response(ApiKey.API_VERSIONS, 0, conn.read_frame())  # v0 format, header v0
        assert response.correlation_id == 4242
        assert response.body.error_code == ErrorCode.unsupported_version
        assert_served_table(response.body)
        # KIP-511: the client retries at a version we serve, on the same connection.
        assert conn.api_versions(4).body.error_code == ErrorCode.none


def test_api_versions_v3_with_bad_software_name_is_invalid_request(small_frames_server: KstewardServer) -> None:
    with rawkafka.connect(small_frames_server.address) as conn:
        response = conn.request(
            ApiKey.API_VERSIONS, 3, {"client_software_name": "-bad name-", "client_software_version": "1.0"}
        )
    assert response.body.error_code == ErrorCode.invalid_request


# --- requests the server cannot serve ------------------------------------------------------------


def _raw_header(api_key: int, api_version: int, correlation_id: int) -> bytes:
    client_id = b"raw"
    return struct.pack(">hhih", api_key, api_version, correlation_id, len(client_id)) + client_id


@pytest.mark.parametrize(
    "payload",
    [
        pytest.param(_raw_header(1000, 0, 7), id="unknown-api-key"),
        pytest.param(_raw_header(ApiKey.METADATA, 99, 7) + b"\x00" * 8, id="metadata-v99"),
        pytest.param(_raw_header(ApiKey.API_VERSIONS, -1, 7), id="api-versions-v-1"),
        pytest.param(b"\x00\x12", id="too-short-for-a-header"),
        pytest.param(_raw_header(ApiKey.METADATA, 1, 7) + b"\x00\x00", id="truncated-body"),
    ],
)
def test_bad_request_closes_only_that_connection(small_frames_server: KstewardServer, payload: bytes) -> None:
    with (
        rawkafka.connect(small_frames_server.address) as bystander,
        rawkafka.connect(small_frames_server.address) as conn,
    ):
        assert bystander.api_versions(0).body.error_code == ErrorCode.none
        conn.send_frame(payload)
        assert conn.read_until_closed() == b"", "the server must close the connection without answering"
        # The connection that was open alongside is unaffected, and new ones are served.
        assert bystander.api_versions(3).body.error_code == ErrorCode.none
    assert_serving(small_frames_server)


def _api_versions_of_size(size: int) -> bytes:
    """A valid ApiVersions v3 request whose frame payload is exactly ``size`` bytes."""
    for n in range(1, size):
        body = {"client_software_name": "a" * n, "client_software_version": "1.0"}
        payload = rawkafka.encode_request(ApiKey.API_VERSIONS, 3, 99, body)
        if len(payload) == size:
            return payload
    raise AssertionError(f"cannot build an ApiVersions request of {size} bytes")


def test_frame_of_exactly_max_bytes_is_served(small_frames_server: KstewardServer) -> None:
    payload = _api_versions_of_size(MAX_FRAME)
    with rawkafka.connect(small_frames_server.address) as conn:
        conn.send_frame(payload)
        response = rawkafka.decode_response(ApiKey.API_VERSIONS, 3, conn.read_frame())
    assert response.correlation_id == 99
    assert response.body.error_code == ErrorCode.none


@pytest.mark.parametrize("size", [MAX_FRAME + 1, 2_000_000_000])
def test_frame_above_max_bytes_closes_connection_and_is_logged(small_frames_server: KstewardServer, size: int) -> None:
    since = small_frames_server.log_size()
    with rawkafka.connect(small_frames_server.address) as conn:
        if size == MAX_FRAME + 1:
            conn.send_frame(_api_versions_of_size(size))  # a well-formed request, one byte too big
        else:
            conn.send_raw(struct.pack(">i", size) + b"\x00" * 64)  # only the size; the rest never comes
        assert conn.read_until_closed() == b"", "an oversized frame must be refused without an answer"
    # One line naming the size received and the limit (or the setting) it broke.
    small_frames_server.wait_for_log(rf"\b{size}\b.*(\b{MAX_FRAME}\b|socket\.request\.max\.bytes)", since=since)
    assert_serving(small_frames_server)


@pytest.mark.parametrize("size", [0, -1])
def test_empty_or_negative_frame_size_closes_connection(small_frames_server: KstewardServer, size: int) -> None:
    with rawkafka.connect(small_frames_server.address) as conn:
        conn.send_raw(struct.pack(">i", size))
        assert conn.read_until_closed() == b""
    assert_serving(small_frames_server)


# --- tagged fields -------------------------------------------------------------------------------


def _with_unknown_tag(encoded: bytes, tag: int, data: bytes) -> bytes:
    """Replace an empty tagged-field section (the final 0x00) with one unknown tag."""
    assert encoded.endswith(b"\x00"), "expected an empty tagged-field section at the end"
    return encoded[:-1] + b"\x01" + write_uvarint(tag) + write_uvarint(len(data)) + data


@pytest.mark.parametrize("where", ["body", "header", "both"])
def test_unknown_tagged_fields_are_skipped(small_frames_server: KstewardServer, where: str) -> None:
    header, body = rawkafka.encode_request_parts(ApiKey.API_VERSIONS, 3, 77, rawkafka.api_versions_body(3))
    if where in ("body", "both"):
        body = _with_unknown_tag(body, 7, b"abc")
    if where in ("header", "both"):
        header = _with_unknown_tag(header, 10_000, b"\x01\x02\x03\x04\x05")
    with rawkafka.connect(small_frames_server.address) as conn:
        conn.send_frame(header + body)
        response = rawkafka.decode_response(ApiKey.API_VERSIONS, 3, conn.read_frame())
        assert response.correlation_id == 77
        assert response.body.error_code == ErrorCode.none
        assert_served_table(response.body)
        # The connection is still in step: the next request is answered normally.
        assert conn.api_versions(4).body.error_code == ErrorCode.none


def test_unknown_tagged_field_in_metadata_request(small_frames_server: KstewardServer) -> None:
    header, body = rawkafka.encode_request_parts(ApiKey.METADATA, 12, 78, rawkafka.metadata_body(12, []))
    with rawkafka.connect(small_frames_server.address) as conn:
        conn.send_frame(header + _with_unknown_tag(body, 42, b"future"))
        response = rawkafka.decode_response(ApiKey.METADATA, 12, conn.read_frame())
    assert response.correlation_id == 78
    assert response.body.cluster_id == small_frames_server.cluster_id


# --- many requests -------------------------------------------------------------------------------


def _request_mix(i: int) -> tuple[int, int, dict[str, Any]]:
    kind = i % 5
    if kind == 0:
        return ApiKey.API_VERSIONS, i % 5, rawkafka.api_versions_body(i % 5)
    if kind == 1:
        return ApiKey.METADATA, 1, rawkafka.metadata_body(1)
    if kind == 2:
        return ApiKey.METADATA, 12, rawkafka.metadata_body(12, [])
    if kind == 3:
        return ApiKey.DESCRIBE_CLUSTER, 1, {"include_cluster_authorized_operations": False}
    return ApiKey.API_VERSIONS, 3, rawkafka.api_versions_body(3)


def test_pipelined_requests_are_answered_in_order(small_frames_server: KstewardServer) -> None:
    sent = []
    data = b""
    for i in range(20):
        api_key, version, body = _request_mix(i)
        correlation_id = 1_000_003 * (i + 1) % 2_147_483_647  # not sequential: the server must echo them
        data += rawkafka.frame(rawkafka.encode_request(api_key, version, correlation_id, body))
        sent.append((api_key, version, correlation_id))
    with rawkafka.connect(small_frames_server.address) as conn:
        conn.send_raw(data)  # all 20 before reading any answer
        answered = []
        for api_key, version, _ in sent:
            response = rawkafka.decode_response(api_key, version, conn.read_frame())
            answered.append((api_key, version, response.correlation_id))
            if hasattr(response.body, "cluster_id"):  # Metadata v2+ and DescribeCluster
                assert response.body.cluster_id == small_frames_server.cluster_id
    assert answered == sent


def test_concurrent_connections_are_all_served(small_frames_server: KstewardServer) -> None:
    conns = [rawkafka.connect(small_frames_server.address) for _ in range(20)]
    try:
        ids = []
        for i, conn in enumerate(conns):
            ids.append(
                conn.send_request(ApiKey.API_VERSIONS, i % 5, rawkafka.api_versions_body(i % 5), correlation_id=500 + i)
            )
        # Read the last connection first: every connection is served while the others stay open.
        for i in reversed(range(len(conns))):
            response = rawkafka.decode_response(ApiKey.API_VERSIONS, i % 5, conns[i].read_frame())
            assert response.correlation_id == ids[i]
            assert response.body.error_code == ErrorCode.none
    finally:
        for conn in conns:
            conn.close()


# --- SASL listener ---------------------------------------------------------------------------------


PRE_AUTH_REQUESTS = [
    pytest.param(ApiKey.METADATA, 12, rawkafka.metadata_body(12, []), id="metadata-v12"),
    pytest.param(ApiKey.METADATA, 1, rawkafka.metadata_body(1), id="metadata-v1"),
    pytest.param(ApiKey.DESCRIBE_CLUSTER, 0, {"include_cluster_authorized_operations": False}, id="describe-cluster"),
    pytest.param(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, 0, {"users": None}, id="describe-scram"),
]


@pytest.mark.parametrize(("api_key", "version", "body"), PRE_AUTH_REQUESTS)
@pytest.mark.parametrize("after_api_versions", [False, True], ids=["first", "after-api-versions"])
def test_request_before_sasl_authentication_closes_connection(
    sasl_server: KstewardServer, api_key: int, version: int, body: dict[str, Any], after_api_versions: bool
) -> None:
    with rawkafka.connect(sasl_server.address) as conn:
        if after_api_versions:
            assert conn.api_versions(3).body.error_code == ErrorCode.none
        conn.send_request(api_key, version, body)
        assert conn.read_until_closed() == b"", "an unauthenticated request must not be answered"
    assert_serving(sasl_server)


def test_request_between_handshake_and_authenticate_closes_connection(sasl_server: KstewardServer) -> None:
    with rawkafka.connect(sasl_server.address) as conn:
        handshake = conn.request(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"})
        assert handshake.body.error_code == ErrorCode.none
        conn.send_request(ApiKey.METADATA, 1, rawkafka.metadata_body(1))
        assert conn.read_until_closed() == b""
    assert_serving(sasl_server)


def test_unsupported_sasl_mechanism_lists_the_enabled_ones(sasl_server: KstewardServer) -> None:
    with rawkafka.connect(sasl_server.address) as conn:
        response = conn.request(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "GSSAPI"})
        assert response.body.error_code == ErrorCode.unsupported_sasl_mechanism
        assert sorted(response.body.mechanisms) == ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]
        assert conn.read_until_closed() == b"", "Kafka closes the connection after an unsupported mechanism"


def test_failed_authentication_is_answered_then_closed(sasl_server: KstewardServer) -> None:
    with rawkafka.connect(sasl_server.address) as conn:
        response = conn.sasl_plain("admin", "not-the-password")
        assert response.body.error_code == ErrorCode.sasl_authentication_failed
        assert response.body.error_message, "the client should be told why"
        assert conn.read_until_closed() == b""
    assert_serving(sasl_server)


def test_authenticated_connection_is_served(sasl_server: KstewardServer) -> None:
    with rawkafka.connect(sasl_server.address) as conn:
        assert conn.sasl_plain("alice", "alice-secret").body.error_code == ErrorCode.none
        metadata = conn.request(ApiKey.METADATA, 12, rawkafka.metadata_body(12)).body
        described = conn.request(ApiKey.DESCRIBE_CLUSTER, 1, {"include_cluster_authorized_operations": False}).body
    node = sasl_server.node_id
    assert metadata.cluster_id == described.cluster_id == sasl_server.cluster_id
    assert int(metadata.controller_id) == int(described.controller_id) == node
    assert [(int(b.node_id), b.host, int(b.port)) for b in metadata.brokers] == [(node, "127.0.0.1", sasl_server.port)]
    assert [(int(b.broker_id), b.host, int(b.port)) for b in described.brokers] == [
        (node, "127.0.0.1", sasl_server.port)
    ]
    assert described.error_code == ErrorCode.none


def test_sasl_authenticate_before_handshake_is_illegal_state(sasl_server: KstewardServer) -> None:
    with rawkafka.connect(sasl_server.address) as conn:
        conn.send_request(ApiKey.SASL_AUTHENTICATE, 2, {"auth_bytes": b"\0admin\0admin-secret"})
        received = conn.read_until_closed()
    assert received is not None, "the connection must be closed"
    # Kafka closes it without an answer; answering ILLEGAL_SASL_STATE first is also acceptable.
    if received:
        payload = received[4:]
        response = rawkafka.decode_response(ApiKey.SASL_AUTHENTICATE, 2, payload)
        assert response.body.error_code == ErrorCode.illegal_sasl_state
    assert_serving(sasl_server)
