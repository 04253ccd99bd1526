"""The pure parts of the controller's Envelope handler: the client's address bytes in Java's text form,
and finding NOT_CONTROLLER anywhere in an inner response."""

from __future__ import annotations

import pytest
from kio.schema.errors import ErrorCode

from ksteward.broker.envelope import EnvelopeError, carries_error, client_host_text
from ksteward.protocol.apis import ApiKey
from ksteward.protocol.build import build
from ksteward.protocol.codec import response_class


@pytest.mark.parametrize(
    ("raw", "text"),
    [
        (bytes([127, 0, 0, 1]), "127.0.0.1"),
        (b"\x00" * 15 + b"\x01", "0:0:0:0:0:0:0:1"),
        (bytes.fromhex("20010db8000000000000000000000001"), "2001:db8:0:0:0:0:0:1"),
        (b"\x00" * 10 + b"\xff\xff" + bytes([10, 1, 2, 3]), "10.1.2.3"),  # IPv4-mapped: Java's Inet4Address
    ],
)
def test_client_address_bytes_as_java_prints_them(raw: bytes, text: str) -> None:
    assert client_host_text(raw) == text


@pytest.mark.parametrize("raw", [b"", b"\x01\x02\x03", b"\x00" * 5, b"\x00" * 17])
def test_other_address_lengths_are_invalid_request(raw: bytes) -> None:
    with pytest.raises(EnvelopeError) as info:
        client_host_text(raw)
    assert info.value.code == ErrorCode.invalid_request


def test_not_controller_is_found_at_any_depth() -> None:
    cls = response_class(ApiKey.CREATE_ACLS, 3)
    ok = build(cls, {"results": [{"error_code": ErrorCode.none, "error_message": None}]})
    nested = build(cls, {"results": [{"error_code": ErrorCode.none, "error_message": None},
                                     {"error_code": ErrorCode.not_controller, "error_message": None}]})  # fmt: skip
    assert not carries_error(ok, ErrorCode.not_controller)
    assert carries_error(nested, ErrorCode.not_controller)
    top = build(response_class(ApiKey.DESCRIBE_CLUSTER, 1), {"error_code": ErrorCode.not_controller,
                "error_message": None, "cluster_id": "c", "controller_id": 1, "brokers": [],
                "cluster_authorized_operations": 0, "endpoint_type": 2})  # fmt: skip
    assert carries_error(top, ErrorCode.not_controller)
