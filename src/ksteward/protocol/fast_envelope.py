"""Direct codecs for Envelope v0 (api 58, KIP-590), the one request every forwarded mutation rides in.

A forwarded request is encoded by the broker, decoded by the controller, and its answer encoded by the
controller and decoded by the broker: four passes through kio (and the bounds walk before each kio read) on
every forwarded mutation's path. The messages are three byte fields and an error code, so these functions
write and read them with ``struct`` instead. ``tests/unit/test_fast_envelope.py`` checks them byte for byte
against kio, which stays the reference.

The readers take only the common shape, with no tagged fields in the header or the body; anything else (and
anything malformed) returns None and the caller goes the general way (``codec``), which keeps its exact
behaviour: skipping unknown tags (KIP-482), reading ksteward's offset tag, and its errors.

Envelope v0 is flexible: request header v2 (api key, version, correlation id, a nullable INT16-length client
id, tags), then ``RequestData`` (compact bytes), ``RequestPrincipal`` (compact nullable bytes),
``ClientHostAddress`` (compact bytes), tags; response header v1 (correlation id, tags), then ``ResponseData``
(compact nullable bytes), ``ErrorCode`` (int16), tags.
"""

from __future__ import annotations

import struct

from ksteward.protocol.apis import ApiKey
from ksteward.protocol.errors import InvalidRequestError
from ksteward.protocol.framing import frame, request_header_v2
from ksteward.protocol.varint import read_uvarint, write_uvarint

ENVELOPE_VERSION = 0

_HEADER = struct.Struct(">hhih")  # api key, api version, correlation id, client id length
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_NO_TAGS = b"\x00"
_NULL = b"\x00"  # a null compact (nullable) field: length 0


def _compact(value: bytes) -> bytes:
    return write_uvarint(len(value) + 1) + value


def envelope_request(
    correlation_id: int, client_id: str | None, request_data: bytes, principal: bytes | None, address: bytes
) -> bytes:
    """An Envelope v0 request's header and body (no size prefix), as ``codec.encode_request`` writes it."""
    header = request_header_v2(ApiKey.ENVELOPE, ENVELOPE_VERSION, correlation_id, client_id)
    body = _compact(request_data) + (_NULL if principal is None else _compact(principal)) + _compact(address)
    return header + body + _NO_TAGS


def envelope_response(correlation_id: int, error_code: int, response_data: bytes | None) -> bytes:
    """A whole Envelope v0 response frame (size prefix, header v1, body), as ``codec.encode_response`` writes
    it."""
    data = _NULL if response_data is None else _compact(response_data)
    return frame(_I32.pack(correlation_id) + _NO_TAGS + data + _I16.pack(error_code) + _NO_TAGS)


def _read_compact(buf: bytes, pos: int) -> tuple[bytes | None, int] | None:
    """A compact nullable byte field at ``pos``: (value, next position); None if it does not fit."""
    try:
        size, pos = read_uvarint(buf, pos)
    except InvalidRequestError:  # cut off, or longer than five bytes
        return None
    if size == 0:
        return None, pos  # null
    end = pos + size - 1
    if end > len(buf):
        return None
    return buf[pos:end], end


def read_envelope_request_body(payload: bytes) -> tuple[str | None, bytes, bytes | None, bytes] | None:
    """(client id, request data, principal, client address) of an Envelope v0 request (header and body, no size
    prefix) with no tagged fields; None for any other shape, or bytes that do not parse this way."""
    if len(payload) < _HEADER.size:
        return None
    _key, _version, _correlation_id, length = _HEADER.unpack_from(payload, 0)
    pos = _HEADER.size
    client_id = None
    if length >= 0:
        if pos + length > len(payload):
            return None
        try:
            client_id = payload[pos : pos + length].decode()
        except UnicodeDecodeError:
            return None
        pos += length
    elif length != -1:
        return None
    if payload[pos : pos + 1] != _NO_TAGS:
        return None
    fields = []
    pos += 1
    for _ in range(3):
        read = _read_compact(payload, pos)
        if read is None:
            return None
        value, pos = read
        fields.append(value)
    request_data, principal, address = fields
    if request_data is None or address is None or payload[pos : pos + 1] != _NO_TAGS:
        return None  # a null in a non-nullable field, or tags: the general reader decides
    return client_id, request_data, principal, address


def read_envelope_response(payload: bytes) -> tuple[int, bytes | None, int] | None:
    """(correlation id, response data, error code) of an Envelope v0 response (header and body, no size prefix)
    with no tagged fields; None for any other shape, or bytes that do not parse this way."""
    if len(payload) < 5 or payload[4:5] != _NO_TAGS:
        return None
    (correlation_id,) = _I32.unpack_from(payload, 0)
    read = _read_compact(payload, 5)
    if read is None:
        return None
    data, pos = read
    if pos + 3 > len(payload) or payload[pos + 2 : pos + 3] != _NO_TAGS:
        return None
    (error_code,) = _I16.unpack_from(payload, pos)
    return correlation_id, data, error_code
