"""The schema walker that bounds every declared length before kio's native reader sees a request.

Two directions: it must accept every valid request exactly (random kio-encoded requests of every
served api and version, walked to their last byte), and refuse every length the bytes cannot hold.
The exhaustive refusal check, every length field of every served request, lives with the fuzz test
(``tests/integration/test_fuzz_frames.py``); here are the targeted cases and the acceptance side.
"""

from __future__ import annotations

import io
import struct
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kio.index import load_request_schema
from kio.serial import entity_writer
from kio.serial.writers import write_unsigned_varint

from ksteward.protocol.apis import ApiKey
from ksteward.protocol.codec import decode_request, request_class
from ksteward.protocol.errors import InvalidRequestError
from ksteward.protocol.schema_walk import _State, _walk, check_message, strip_unknown_tags
from ksteward.protocol.varint import read_uvarint, write_uvarint
from ksteward.server.api_table import broker_api_table, controller_api_table

SERVED = sorted(
    {(key, version) for table in (broker_api_table(), controller_api_table()) for key, (lo, hi) in
     table.served.items() for version in range(lo, hi + 1)}
)  # fmt: skip


def _encode(entity: Any) -> bytes:
    out = io.BytesIO()
    entity_writer(type(entity))(out, entity)
    return out.getvalue()


def _header(api_key: int, version: int) -> tuple[type, bytes]:
    cls = request_class(api_key, version)
    header_cls = cls.__header_schema__
    header = header_cls(request_api_key=api_key, request_api_version=version, correlation_id=1, client_id="t")
    return cls, _encode(header)


@pytest.mark.parametrize(("api_key", "version"), SERVED)
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data())
def test_every_valid_request_is_walked_to_its_last_byte(api_key: int, version: int, data: st.DataObject) -> None:
    cls, header = _header(api_key, version)
    body = _encode(data.draw(st.from_type(cls)))
    payload = header + body
    assert _walk(payload, 0, (cls.__header_schema__, cls), _State(None, 0)) == len(payload)
    assert check_message(payload, 0, (cls.__header_schema__, cls)) == 0
    # And anything one byte short is refused, never read past its end.
    with pytest.raises(InvalidRequestError):
        check_message(payload[:-1], 0, (cls.__header_schema__, cls))


def _metadata_v12(body: bytes) -> bytes:
    return struct.pack(">hhih", 3, 12, 1, 1) + b"t" + b"\x00" + body


SERVED_MAP = broker_api_table().served


def test_the_20_byte_frame_that_aborted_the_process_is_refused() -> None:
    """CreateTopics v5 (header v2), a compact array declaring 4,294,967,294 topics in 5 bytes."""
    payload = struct.pack(">hhih", 19, 5, 1, 4) + b"bomb" + b"\x00" + b"\xff\xff\xff\xff\x0f"
    with pytest.raises(InvalidRequestError, match="tried to allocate a collection of size 4294967294"):
        decode_request(payload, SERVED_MAP)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"\x03" + b"\x00" * 16 + b"\x02a\x00", "collection of size 2"),  # 2 topics, bytes for one
        (b"\x02" + b"\x00" * 16 + b"\x7fa\x00" + b"\x00\x00\x00", "name of 126 bytes"),  # a string past the end
        (b"\x02" + b"\x00" * 16 + b"\xff\xff\xff\xff\xff\x01", "longer than five bytes"),
        (b"\x01\x00\x00\x05", "5 tagged fields"),  # no topics, flags, then a tag count past the end
        (b"\x01\x00\x00\x01\x05\xff\xff\xff\xff\x07", "tagged field 5 of 2147483647 bytes"),
    ],
)
def test_lengths_the_bytes_cannot_hold_are_refused(body: bytes, message: str) -> None:
    with pytest.raises(InvalidRequestError, match=message):
        decode_request(_metadata_v12(body), SERVED_MAP)


def test_a_string_longer_than_kafka_allows_is_refused() -> None:
    name = b"x" * 0x8000
    body = b"\x02" + b"\x00" * 16 + write_uvarint(len(name) + 1) + name + b"\x00" + b"\x00\x00\x00"
    with pytest.raises(InvalidRequestError, match="invalid length 32768"):
        decode_request(_metadata_v12(body), SERVED_MAP)


def test_unknown_tagged_fields_are_counted_and_stripped() -> None:
    cls, header = _header(18, 3)
    body = _encode(load_request_schema(ApiKey.API_VERSIONS, 3)(client_software_name="x", client_software_version="1"))
    tagged = body[:-1] + b"\x02" + write_uvarint(77) + write_uvarint(3) + b"abc" + write_uvarint(90) + b"\x00"
    payload = header + tagged
    assert check_message(payload, 0, (cls.__header_schema__, cls)) == 2
    cleaned, dropped = strip_unknown_tags(payload, 0, (cls.__header_schema__, cls))
    assert (cleaned, dropped) == (header + body, 2)
    request = decode_request(payload, SERVED_MAP)
    assert request.dropped_tags == 2
    assert request.body.client_software_name == "x"


def test_varints() -> None:
    for value in (0, 1, 127, 128, 300, 2**21, 2**32 - 1):
        assert read_uvarint(write_uvarint(value), 0) == (value, len(write_uvarint(value)))
        written = io.BytesIO()
        write_unsigned_varint(written, value)  # kio's writer stays the reference
        assert write_uvarint(value) == written.getvalue()
    with pytest.raises(InvalidRequestError, match="truncated"):
        read_uvarint(b"\x80", 0)
    with pytest.raises(InvalidRequestError, match="longer than five bytes"):
        read_uvarint(b"\x80" * 5 + b"\x01", 0)
