"""The direct Envelope v0 codecs (``protocol.fast_envelope``) against kio, the reference, byte for byte."""

from __future__ import annotations

import io
import struct

from hypothesis import given
from hypothesis import strategies as st
from kio.schema.envelope.v0 import EnvelopeRequest, EnvelopeResponse
from kio.schema.errors import ErrorCode
from kio.schema.request_header.v2.header import RequestHeader
from kio.schema.response_header.v1.header import ResponseHeader
from kio.serial import entity_reader, entity_writer

from ksteward.protocol.apis import ApiKey
from ksteward.protocol.codec import decode_request, decode_response
from ksteward.protocol.fast_envelope import (
    envelope_request,
    envelope_response,
    read_envelope_request_body,
    read_envelope_response,
)
from ksteward.protocol.read_your_writes import offset_tags

SERVED = {ApiKey.ENVELOPE: (0, 0)}
client_ids = st.one_of(st.none(), st.text(max_size=40))
blobs = st.binary(max_size=300)
codes = st.sampled_from([ErrorCode.none, ErrorCode.not_controller, ErrorCode.cluster_authorization_failed])


def kio_bytes(*entities: object) -> bytes:
    """The reference: kio's own writer, entity after entity (``codec`` now takes the direct path)."""
    out = io.BytesIO()
    for entity in entities:
        entity_writer(type(entity))(out, entity)
    return out.getvalue()


def kio_request(payload: bytes) -> tuple[RequestHeader, EnvelopeRequest]:
    header, size = entity_reader(RequestHeader)(payload, 0)
    body, _ = entity_reader(EnvelopeRequest)(payload, size)
    return header, body


@given(st.integers(-(2**31), 2**31 - 1), client_ids, blobs, st.one_of(st.none(), blobs), st.binary(max_size=16))
def test_the_request_is_kios_bytes_and_reads_back(
    correlation_id: int, client_id: str | None, data: bytes, principal: bytes | None, address: bytes
) -> None:
    envelope = EnvelopeRequest(request_data=data, request_principal=principal, client_host_address=address)
    ours = envelope_request(correlation_id, client_id, data, principal, address)
    header = RequestHeader(request_api_key=ApiKey.ENVELOPE, request_api_version=0, correlation_id=correlation_id,
                           client_id=client_id)  # fmt: skip
    assert ours == kio_bytes(header, envelope)
    assert kio_request(ours) == (header, envelope)
    assert read_envelope_request_body(ours) == (client_id, data, principal, address)
    request = decode_request(ours, SERVED)
    assert (request.correlation_id, request.client_id, request.body) == (correlation_id, client_id, envelope)


@given(st.integers(-(2**31), 2**31 - 1), codes, st.one_of(st.none(), blobs))
def test_the_response_is_kios_bytes_and_reads_back(correlation_id: int, code: ErrorCode, data: bytes | None) -> None:
    response = EnvelopeResponse(response_data=data, error_code=code)
    ours = envelope_response(correlation_id, int(code), data)
    reference = kio_bytes(ResponseHeader(correlation_id=correlation_id), response)
    assert ours == len(reference).to_bytes(4, "big") + reference
    assert read_envelope_response(ours[4:]) == (correlation_id, data, int(code))
    decoded = decode_response(ApiKey.ENVELOPE, 0, ours[4:])
    assert (decoded.correlation_id, decoded.body) == (correlation_id, response)


def test_tagged_fields_go_the_general_way() -> None:
    plain = envelope_request(7, "broker-2", b"inner", None, b"\x7f\x00\x00\x01")
    header_end = struct.calcsize(">hhih") + len("broker-2")
    tagged = plain[:header_end] + offset_tags(42) + plain[header_end + 1 :]
    assert read_envelope_request_body(tagged) is None
    request = decode_request(tagged, SERVED)  # kio's reader, with the offset tag read and dropped
    assert request.min_offset == 42 and request.body.request_data == b"inner"
    body_tagged = plain[:-1] + b"\x01\x05\x00"  # one unknown tag (5), empty
    assert read_envelope_request_body(body_tagged) is None
    answer = envelope_response(3, 0, b"x")
    assert read_envelope_response(answer[4:8] + b"\x01\x05\x00" + answer[9:]) is None


def test_malformed_bytes_go_the_general_way() -> None:
    plain = envelope_request(7, None, b"inner", b"p", b"\x7f\x00\x00\x01")
    for cut in range(len(plain) - 1):
        assert read_envelope_request_body(plain[:cut]) is None
    null_data = plain[: struct.calcsize(">hhih") + 1] + b"\x00" + plain[struct.calcsize(">hhih") + 7 :]
    assert read_envelope_request_body(null_data) is None  # RequestData is not nullable
    answer = envelope_response(3, 0, b"xyz")[4:]
    for cut in range(len(answer) - 1):
        assert read_envelope_response(answer[:cut]) is None
