"""The sans-IO protocol core: framing, header decoding, unknown tags, version-generic building."""

from __future__ import annotations

import contextlib
import io
import struct
import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kio.schema.errors import ErrorCode
from kio.schema.index import api_key_map
from kio.serial import entity_reader, entity_writer

from ksteward.protocol.apis import ApiKey
from ksteward.protocol.build import build
from ksteward.protocol.codec import (
    Request,
    UnsupportedApiVersionsRequest,
    decode_request,
    encode_response,
    request_class,
    response_class,
)
from ksteward.protocol.errors import FrameError, InvalidRequestError
from ksteward.protocol.framing import FrameDecoder, frame

SERVED = {ApiKey.API_VERSIONS: (0, 4), ApiKey.METADATA: (0, 13)}


def _compact(s: bytes) -> bytes:
    return bytes([len(s) + 1]) + s


def _encode_request(api_key: int, version: int, body: object, correlation_id: int = 7) -> bytes:
    cls = request_class(api_key, version)
    out = io.BytesIO()
    header_cls = cls.__header_schema__
    values = {"request_api_key": api_key, "request_api_version": version, "correlation_id": correlation_id}
    values["client_id"] = "test-client"
    entity_writer(header_cls)(out, build(header_cls, values))
    entity_writer(cls)(out, body)
    return out.getvalue()


def _frames(decoder: FrameDecoder, max_bytes: int = 100) -> list[bytes]:
    frames = []
    while (payload := decoder.next_frame(max_bytes)) is not None:
        frames.append(payload)
    return frames


def test_frame_decoder_splits_and_joins_frames() -> None:
    dec = FrameDecoder()
    data = frame(b"abc") + frame(b"defg")
    dec.receive(data[:5])
    assert _frames(dec) == []
    dec.receive(data[5:])
    assert _frames(dec) == [b"abc", b"defg"]
    assert dec.buffered == 0


@pytest.mark.parametrize("size", [0, -1, 101])
def test_frame_decoder_refuses_bad_sizes(size: int) -> None:
    dec = FrameDecoder()
    dec.receive(struct.pack(">i", size))
    with pytest.raises(FrameError):
        dec.next_frame(100)


def test_frame_decoder_checks_each_frame_against_the_limit_given_for_it() -> None:
    dec = FrameDecoder()
    dec.receive(frame(b"a" * 50) + struct.pack(">i", 200))
    assert dec.next_frame(100) == b"a" * 50
    with pytest.raises(FrameError, match=r"larger than sasl\.server\.max\.receive\.size \(100\)"):
        dec.next_frame(100, "sasl.server.max.receive.size")
    assert dec.next_frame(1000) is None  # a larger limit lets the frame through; its body is not here yet


def test_decodes_api_versions_at_every_version() -> None:
    for version in range(5):
        cls = request_class(ApiKey.API_VERSIONS, version)
        body = build(cls, {"client_software_name": "ksteward-test", "client_software_version": "1.0"})
        req = decode_request(_encode_request(ApiKey.API_VERSIONS, version, body, correlation_id=version + 1), SERVED)
        assert isinstance(req, Request)
        assert (req.api_key, req.api_version, req.correlation_id) == (ApiKey.API_VERSIONS, version, version + 1)
        assert req.client_id == "test-client"


def test_too_new_api_versions_becomes_kip511_request() -> None:
    payload = struct.pack(">hhih", ApiKey.API_VERSIONS, 9, 42, 2) + b"ab"
    req = decode_request(payload, SERVED)
    assert req == UnsupportedApiVersionsRequest(api_version=9, correlation_id=42, client_id="ab")


def test_unserved_key_and_version_are_invalid_requests() -> None:
    with pytest.raises(InvalidRequestError, match="api key 19"):
        decode_request(struct.pack(">hhih", 19, 5, 1, -1), SERVED)
    with pytest.raises(InvalidRequestError, match="version 14"):
        decode_request(struct.pack(">hhih", ApiKey.METADATA, 14, 1, -1), SERVED)


def test_unknown_tagged_fields_in_header_and_body_are_skipped() -> None:
    header = struct.pack(">hhih", ApiKey.API_VERSIONS, 3, 42, 9) + b"my-client" + b"\x01" + b"\x07\x03abc"
    body = _compact(b"apache-kafka-java") + _compact(b"3.9.0") + b"\x02\x09\x01z\x0a\x00"
    req = decode_request(header + body, SERVED)
    assert isinstance(req, Request)
    assert req.body.client_software_name == "apache-kafka-java"
    assert req.client_id == "my-client"
    assert req.dropped_tags == 3


def test_trailing_bytes_are_ignored_as_kafka_ignores_them() -> None:
    # The exact Metadata v13 request librdkafka 2.16 sends: a complete body, then 01 00 00.
    payload = bytes.fromhex("0003000d00000003000772646b61666b610000000000010000")
    req = decode_request(payload, SERVED)
    assert isinstance(req, Request)
    assert req.client_id == "rdkafka"
    assert req.body.topics is None
    assert req.body.allow_auto_topic_creation is False


@given(st.binary(max_size=64))
def test_garbage_bodies_raise_only_invalid_request(garbage: bytes) -> None:
    payload = struct.pack(">hhih", ApiKey.METADATA, 12, 1, 3) + b"cli" + garbage
    with contextlib.suppress(InvalidRequestError):
        decode_request(payload, SERVED)


def test_build_keeps_only_the_fields_a_version_has() -> None:
    values = {
        "brokers": [{"node_id": 1, "host": "h", "port": 9092, "rack": "r1"}],
        "cluster_id": "c",
        "controller_id": 1,
        "topics": [
            {
                "error_code": ErrorCode.none,
                "name": "t",
                "topic_id": uuid.uuid4(),
                "is_internal": False,
                "partitions": [],
                "topic_authorized_operations": 5,
            }
        ],
        "cluster_authorized_operations": 3,
    }
    v0 = build(response_class(ApiKey.METADATA, 0), values)
    v12 = build(response_class(ApiKey.METADATA, 12), values)
    assert not hasattr(v0, "cluster_id")
    assert v12.cluster_id == "c"
    assert v12.topics[0].topic_authorized_operations == 5
    assert v12.throttle_time.total_seconds() == 0


def test_build_names_a_missing_required_field() -> None:
    with pytest.raises(TypeError, match="brokers"):
        build(response_class(ApiKey.METADATA, 5), {"topics": []})


def test_encode_response_uses_the_api_header_version() -> None:
    resp = build(response_class(ApiKey.API_VERSIONS, 3), {"error_code": ErrorCode.none, "api_keys": []})
    data = encode_response(ApiKey.API_VERSIONS, 3, 99, resp)
    (size, correlation_id) = struct.unpack_from(">ii", data)
    assert size == len(data) - 4
    assert correlation_id == 99
    # ApiVersions responses always use header v0: the body starts right after the correlation id.
    body, _ = entity_reader(type(resp))(data, 8)
    assert body.error_code == ErrorCode.none


def test_invalid_utf8_in_client_id_is_an_invalid_request() -> None:
    # Found by the live fuzz test: kio raises InvalidUnicode, which must not escape as a crash.
    payload = struct.pack(">hhih", ApiKey.API_VERSIONS, 0, 1, 2) + b"\xff\xfe"
    with pytest.raises(InvalidRequestError, match="cannot decode"):
        decode_request(payload, SERVED)


_FUZZ_SERVED = {
    ApiKey.METADATA: (0, 13),
    ApiKey.API_VERSIONS: (0, 4),
    ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: (0, 0),
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS: (0, 0),
    ApiKey.DESCRIBE_CLUSTER: (0, 2),
}


@given(st.sampled_from(sorted(_FUZZ_SERVED)), st.integers(0, 13), st.binary(max_size=80))
def test_any_header_and_body_bytes_raise_only_invalid_request(key: int, version: int, rest: bytes) -> None:
    with contextlib.suppress(InvalidRequestError):
        decode_request(struct.pack(">hhi", key, version, 1) + rest, _FUZZ_SERVED)


def test_api_key_enum_names_every_key_of_kios_schema_index() -> None:
    # The tests' raw client takes its key numbers from ApiKey, so ApiKey is checked against kio here.
    assert {int(key): key.name.lower() for key in ApiKey} == dict(api_key_map)
