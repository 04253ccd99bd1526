"""A client's CreateAcls v3 as a broker holds it, and the controller's answer to it, for the forwarding tests."""

from __future__ import annotations

import io
from typing import Any

from kio.schema.errors import ErrorCode
from kio.serial import entity_writer

from ksteward.broker.forwarding import ClientRequest
from ksteward.protocol.apis import ApiKey
from ksteward.protocol.build import build
from ksteward.protocol.codec import Request, decode_request, encode_response, request_class, response_class

VERSION = 3
CREATION = {
    "resource_type": 2,
    "resource_name": "t",
    "resource_pattern_type": 3,
    "principal": "User:x",
    "host": "*",
    "operation": 4,
    "permission_type": 3,
}


def create_acls_payload(correlation_id: int) -> bytes:
    """CreateAcls v3 with one creation: the header and body a client sends."""
    cls = request_class(ApiKey.CREATE_ACLS, VERSION)
    header_cls = cls.__header_schema__
    header = {
        "request_api_key": ApiKey.CREATE_ACLS,
        "request_api_version": VERSION,
        "correlation_id": correlation_id,
        "client_id": "c",
    }
    out = io.BytesIO()
    entity_writer(header_cls)(out, build(header_cls, header))
    entity_writer(cls)(out, build(cls, {"creations": [CREATION]}))
    return out.getvalue()


def client_request(correlation_id: int = 7, principal: str = "User:alice", host: str = "10.0.0.1") -> ClientRequest:
    payload = create_acls_payload(correlation_id)
    decoded = decode_request(payload, {ApiKey.CREATE_ACLS: (VERSION, VERSION)})
    assert isinstance(decoded, Request)
    return ClientRequest(payload, ApiKey.CREATE_ACLS, VERSION, correlation_id, decoded.body, principal, host)


def response_data(correlation_id: int, code: ErrorCode = ErrorCode.none) -> bytes:
    """The controller's CreateAcls v3 response, header and body, as an envelope carries it."""
    body = build(
        response_class(ApiKey.CREATE_ACLS, VERSION), {"results": [{"error_code": code, "error_message": None}]}
    )
    return encode_response(ApiKey.CREATE_ACLS, VERSION, correlation_id, body)[4:]


def result_codes(response: Any) -> list[int]:
    return [int(r.error_code) for r in response.results]
