"""Requests in, responses out: the sans-IO heart of the wire protocol.

:func:`decode_request` turns one frame's payload into a typed :class:`Request`;
:func:`encode_response` turns a kio response entity back into a length-prefixed frame. Neither
touches a socket. Errors are :class:`InvalidRequestError`, which the connection answers by closing,
as Kafka's ``SocketServer`` does.
"""

from __future__ import annotations

import io
import struct
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

from kio.index import load_request_schema, load_response_schema
from kio.schema.envelope.v0 import EnvelopeRequest, EnvelopeResponse
from kio.schema.request_header.v2.header import RequestHeader as FlexibleRequestHeader
from kio.schema.response_header.v1.header import ResponseHeader as FlexibleResponseHeader
from kio.serial import entity_reader, entity_writer
from kio.serial.errors import BufferUnderflow, DecodeError

from ksteward.protocol import extensions
from ksteward.protocol.apis import ApiKey
from ksteward.protocol.errors import InvalidRequestError
from ksteward.protocol.fast_envelope import envelope_response, read_envelope_request_body
from ksteward.protocol.fast_fetch import fetch_request_body, fetch_response_body
from ksteward.protocol.framing import FrameParts, frame, request_header_v2
from ksteward.protocol.read_your_writes import offset_tags, request_min_offset, response_offset
from ksteward.protocol.schema_walk import check_message, strip_unknown_tags

_PEEK = struct.Struct(">hhi")
_CORRELATION_ID = struct.Struct(">i")


@dataclass(frozen=True, slots=True)
class Request:
    """A decoded request: its header fields and its kio body entity."""

    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    body: Any
    dropped_tags: int = 0
    min_offset: int | None = None  # ksteward's read-your-writes header tag (protocol.read_your_writes)


@dataclass(frozen=True, slots=True)
class UnsupportedApiVersionsRequest:
    """An ApiVersions request above the versions served (KIP-511): answered in v0 format."""

    api_version: int
    correlation_id: int
    client_id: str | None


@dataclass(frozen=True, slots=True)
class PreEncoded:
    """A complete response frame a handler encoded itself (see ``fast_describe_acls``), whole or in parts."""

    frame: bytes | FrameParts
    #: The error codes the frame holds, top level and per entry (the request metrics' ErrorsPerSec).
    error_codes: tuple[int, ...] = ()


def peek_header(payload: bytes) -> tuple[int, int, int]:
    """(api_key, api_version, correlation_id): the fixed start of every request header."""
    if len(payload) < _PEEK.size:
        raise InvalidRequestError(f"request of {len(payload)} bytes is too short for a header")
    key, version, correlation_id = _PEEK.unpack_from(payload, 0)
    return key, version, correlation_id


@cache
def request_class(api_key: int, api_version: int) -> Any:
    extension = extensions.REQUESTS.get((api_key, api_version))
    return extension if extension is not None else load_request_schema(api_key, api_version)


@cache
def response_class(api_key: int, api_version: int) -> Any:
    extension = extensions.RESPONSES.get((api_key, api_version))
    return extension if extension is not None else load_response_schema(api_key, api_version)


@cache
def _reader(cls: Any) -> Callable[[bytes, int], tuple[Any, int]]:
    return entity_reader(cls)


@cache
def _writer(cls: Any) -> Callable[[io.BytesIO, Any], None]:
    return entity_writer(cls)


def _legacy_client_id(payload: bytes) -> str | None:
    """The client id of a v1-format header, best effort (for KIP-511's fallback)."""
    if len(payload) < 10:
        return None
    (length,) = struct.unpack_from(">h", payload, 8)
    if length < 0 or 10 + length > len(payload):
        return None
    return payload[10 : 10 + length].decode("utf-8", "replace")


_KIO_ERRORS = (DecodeError, BufferUnderflow, ValueError, KeyError, UnicodeDecodeError, OverflowError, TypeError)


def _read_message(
    payload: bytes, cls: Any, read_offset: Callable[[bytes], int | None] | None
) -> tuple[Any, Any, int, int | None]:
    """(header, body, unknown tags dropped, read-your-writes offset) of a request or response ``cls``.

    Every declared length is bounded before kio's native reader allocates for it. kio refuses tagged fields
    it does not know, and KIP-482 says skip them: they are dropped, after ``read_offset`` (when the header is
    flexible) has read ksteward's offset tag from the header. A failure is an :class:`InvalidRequestError`
    naming the exception's type only: kio's message can quote the bytes (a bad UTF-8 sequence, an enum value),
    and connections log this text."""
    header_cls = cls.__header_schema__
    classes = (header_cls, cls)
    dropped = check_message(payload, 0, classes)
    offset = None
    if dropped:
        offset = read_offset(payload) if read_offset is not None else None
        payload, dropped = strip_unknown_tags(payload, 0, classes)
    try:
        header, header_size = _reader(header_cls)(payload, 0)
        body, _ = _reader(cls)(payload, header_size)
    except _KIO_ERRORS as exc:
        raise InvalidRequestError(f"cannot decode api key {cls.__api_key__} v{cls.__version__}: "
                                  f"{type(exc).__name__}") from None  # fmt: skip
    return header, body, dropped, offset


def decode_request(payload: bytes, served: Mapping[int, tuple[int, int]]) -> Request | UnsupportedApiVersionsRequest:
    """Decode one request. ``served`` maps api key to its (min, max) served version."""
    api_key, api_version, correlation_id = peek_header(payload)
    versions = served.get(api_key)
    if versions is None:
        raise InvalidRequestError(f"unknown or unserved api key {api_key}")
    low, high = versions
    if not low <= api_version <= high:
        if api_key == ApiKey.API_VERSIONS and api_version > high:
            return UnsupportedApiVersionsRequest(api_version, correlation_id, _legacy_client_id(payload))
        raise InvalidRequestError(f"api key {api_key} version {api_version} is not served (supported {low}-{high})")
    if api_key == ApiKey.ENVELOPE and api_version == 0:  # every forwarded mutation: read without kio if plain
        envelope = read_envelope_request_body(payload)
        if envelope is not None:
            client_id, data, principal, address = envelope
            body = EnvelopeRequest(request_data=data, request_principal=principal, client_host_address=address)
            return Request(api_key, api_version, correlation_id, client_id, body, 0, None)
    cls = request_class(api_key, api_version)
    flexible = cls.__header_schema__ is FlexibleRequestHeader
    header, body, dropped, min_offset = _read_message(payload, cls, request_min_offset if flexible else None)
    # Bytes after a complete body are ignored, as Kafka's generated parsers ignore them:
    # librdkafka 2.16 sends three extra bytes after a Metadata v13 body.
    return Request(
        api_key=api_key,
        api_version=api_version,
        correlation_id=correlation_id,
        client_id=getattr(header, "client_id", None),
        body=body,
        dropped_tags=dropped,
        min_offset=min_offset,
    )


def encode_response(
    api_key: int, api_version: int, correlation_id: int, response: Any, *, metadata_offset: int | None = None
) -> bytes:
    """Header (v0 or v1, as the API version dictates) plus body, length-prefixed. ``metadata_offset`` goes
    into a v1 header's tagged fields (``read_your_writes``); a v0 header has none and goes without it."""
    cls: Any = type(response)
    if cls is EnvelopeResponse and metadata_offset is None:  # every forwarded mutation's answer
        return envelope_response(correlation_id, int(response.error_code), response.response_data)
    if api_key == ApiKey.FETCH and metadata_offset is None:  # the metadata log's replication (fast_fetch)
        fetch = fetch_response_body(api_version, response)
        if fetch is not None:
            return frame(_CORRELATION_ID.pack(correlation_id) + b"\x00" + fetch)
    header_cls = cls.__header_schema__
    out = io.BytesIO()
    if metadata_offset is not None and header_cls is FlexibleResponseHeader:
        out.write(_CORRELATION_ID.pack(correlation_id) + offset_tags(metadata_offset))
    else:
        _writer(header_cls)(out, header_cls(correlation_id=correlation_id))
    _writer(cls)(out, response)
    return frame(out.getvalue())


def encode_response_body(response: Any) -> bytes:
    """A response's body alone (no size, no header): what a cache of answers keeps (``answer_frame``)."""
    cls: Any = type(response)
    out = io.BytesIO()
    _writer(cls)(out, response)
    return out.getvalue()


def answer_frame(correlation_id: int, body: bytes, *, flexible_header: bool) -> bytes:
    """A response frame around a body from ``encode_response_body``: size, correlation id, and an empty tagged
    field section when the header is v1 (flexible)."""
    header = _CORRELATION_ID.pack(correlation_id) + (b"\x00" if flexible_header else b"")
    return frame(header + body)


# --- the client side: what ksteward sends as a client (to a controller, or as the admin client) --------------


@dataclass(frozen=True, slots=True)
class Response:
    """A decoded response: its correlation id, its kio body, and the read-your-writes offset in its header."""

    correlation_id: int
    body: Any
    metadata_offset: int | None = None


def encode_request(
    api_key: int,
    api_version: int,
    correlation_id: int,
    client_id: str | None,
    body: Any,
    *,
    min_offset: int | None = None,
) -> bytes:
    """One request's header and body (``body``: a kio entity), without the frame size. ``min_offset`` goes into
    a v2 header's tagged fields (``read_your_writes``); a v1 header has none and goes without it."""
    if api_key == ApiKey.FETCH and min_offset is None:  # every follower's and broker's metadata Fetch
        fetch = fetch_request_body(api_version, body)
        if fetch is not None:
            return request_header_v2(api_key, api_version, correlation_id, client_id) + fetch
    cls: Any = request_class(api_key, api_version)
    out = io.BytesIO()
    out.write(encode_request_header(api_key, api_version, correlation_id, client_id, min_offset=min_offset))
    _writer(cls)(out, body)
    return out.getvalue()


def encode_request_header(
    api_key: int, api_version: int, correlation_id: int, client_id: str | None, *, min_offset: int | None = None
) -> bytes:
    """A request's header alone (for a body encoded without kio, as ``fast_acl_transactions`` does)."""
    header_cls = request_class(api_key, api_version).__header_schema__
    out = io.BytesIO()
    header = header_cls(request_api_key=api_key, request_api_version=api_version, correlation_id=correlation_id,
                        client_id=client_id)  # fmt: skip
    _writer(header_cls)(out, header)
    if min_offset is not None and header_cls is FlexibleRequestHeader:
        out.seek(out.tell() - 1)  # kio's empty tag section, one zero byte, gives way to the offset
        out.write(offset_tags(min_offset))
    return out.getvalue()


def decode_response(api_key: int, api_version: int, payload: bytes) -> Response:
    """Decode one response (header and body, no frame size). Every declared length is bounded first; tagged
    fields kio does not know are skipped (KIP-482). Raises :class:`InvalidRequestError` if it cannot be read."""
    cls = response_class(api_key, api_version)
    flexible = cls.__header_schema__ is FlexibleResponseHeader
    header, body, _, offset = _read_message(payload, cls, response_offset if flexible else None)
    return Response(int(header.correlation_id), body, offset)
