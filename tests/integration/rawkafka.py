"""A raw Kafka wire client for tests: frames over a plain socket, requests encoded with kio.

Deliberately independent of ``ksteward``'s own codec, so a bug there cannot hide itself by being on
both ends of the wire. Only kio (the codec the server uses too, but driven from its public
``load_request_schema`` / ``entity_writer`` / ``entity_reader``) and the standard library.
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import hmac
import io
import secrets
import socket
import struct
import types
import typing
from collections.abc import Mapping
from functools import cache
from typing import Any

from kio.index import load_request_schema, load_response_schema
from kio.serial import entity_reader, entity_writer

from ksteward.protocol.apis import ApiKey

_SIZE = struct.Struct(">i")
CLIENT_ID = "ksteward-raw-test"


class ConnectionClosed(Exception):
    """The peer closed the connection (EOF or reset) while we expected bytes."""


# --- building kio entities from plain values ---------------------------------------------------


def _entity_class(annotation: Any) -> type | None:
    """The kio entity class inside ``X``, ``tuple[X, ...]`` or ``... | None``, if any."""
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        for arg in typing.get_args(annotation):
            found = _entity_class(arg)
            if found is not None:
                return found
        return None
    if origin is tuple:
        return _entity_class(typing.get_args(annotation)[0])
    if isinstance(annotation, type) and dataclasses.is_dataclass(annotation):
        return annotation
    return None


@cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def build(cls: type, values: Mapping[str, Any]) -> Any:
    """Construct kio entity ``cls`` from ``values``; nested entities may be given as dicts."""
    hints = _hints(cls)
    kwargs: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        if f.name not in values:
            continue  # let the dataclass default apply, or fail loudly if there is none
        value = values[f.name]
        nested = _entity_class(hints[f.name])
        if nested is not None and value is not None:
            if isinstance(value, list | tuple):
                value = tuple(build(nested, v) if isinstance(v, Mapping) else v for v in value)
            elif isinstance(value, Mapping):
                value = build(nested, value)
        elif isinstance(value, list):
            value = tuple(value)
        kwargs[f.name] = value
    unknown = set(values) - {f.name for f in dataclasses.fields(cls)}
    if unknown:
        raise TypeError(f"{cls.__qualname__} has no fields {sorted(unknown)}")
    return cls(**kwargs)


# --- encoding and decoding ------------------------------------------------------------------------


def frame(payload: bytes) -> bytes:
    return _SIZE.pack(len(payload)) + payload


def _write(entity: Any) -> bytes:
    out = io.BytesIO()
    entity_writer(type(entity))(out, entity)
    return out.getvalue()


# ksteward's read-your-writes extension: the metadata offset in a flexible header's tagged fields, an int64.
METADATA_OFFSET_TAG = 0x4B53
_I64 = struct.Struct(">q")


def _uvarint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _read_uvarint(buf: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value, pos
        shift += 7


def header_tags(tags: Mapping[int, bytes]) -> bytes:
    """A tagged-field section (KIP-482), tags in ascending order."""
    parts = [_uvarint(len(tags))]
    for tag in sorted(tags):
        parts += [_uvarint(tag), _uvarint(len(tags[tag])), tags[tag]]
    return b"".join(parts)


def encode_request_parts(
    api_key: int,
    api_version: int,
    correlation_id: int,
    body: Mapping[str, Any] | None = None,
    client_id: str | None = CLIENT_ID,
    min_offset: int | None = None,
) -> tuple[bytes, bytes]:
    """(header bytes, body bytes) of one request, no length prefix. ``min_offset`` puts ksteward's
    read-your-writes offset in a flexible (v2) header's tagged fields."""
    cls = load_request_schema(api_key, api_version)
    header_cls = cls.__header_schema__
    header = _write(
        header_cls(
            request_api_key=api_key, request_api_version=api_version, correlation_id=correlation_id, client_id=client_id
        )
    )
    if min_offset is not None:
        assert cls.__flexible__ and header.endswith(b"\x00"), "only a flexible header has tagged fields"
        header = header[:-1] + header_tags({METADATA_OFFSET_TAG: _I64.pack(min_offset)})
    return header, _write(build(cls, body or {}))


def encode_request(
    api_key: int,
    api_version: int,
    correlation_id: int,
    body: Mapping[str, Any] | None = None,
    client_id: str | None = CLIENT_ID,
    min_offset: int | None = None,
) -> bytes:
    """Header plus body of one request (the frame payload, no length prefix)."""
    header, payload = encode_request_parts(api_key, api_version, correlation_id, body, client_id, min_offset)
    return header + payload


def api_versions_body(api_version: int) -> dict[str, str]:
    if api_version >= 3:
        return {"client_software_name": "ksteward-tests", "client_software_version": "1.0"}
    return {}


def metadata_body(api_version: int, topics: list[str] | None = None) -> dict[str, Any]:
    """A Metadata request body for ``api_version``: ``topics=None`` asks for all topics, ``[]`` for none."""
    body: dict[str, Any] = {"topics": None if topics is None else [{"name": t} for t in topics]}
    if api_version >= 4:
        body["allow_auto_topic_creation"] = False
    if api_version >= 8:
        body["include_topic_authorized_operations"] = False
    if 8 <= api_version <= 10:
        body["include_cluster_authorized_operations"] = False
    return body


METADATA_PARTITION = [{"topic_name": "__cluster_metadata", "partitions": [{"partition_index": 0}]}]


def describe_quorum(conn: RawConnection, api_version: int = 2, topics: list[dict[str, Any]] | None = None) -> Any:
    """The body of a DescribeQuorum answer, for ``__cluster_metadata``-0 unless ``topics`` says otherwise."""
    return conn.request(
        ApiKey.DESCRIBE_QUORUM, api_version, {"topics": METADATA_PARTITION if topics is None else topics}
    ).body


def quorum_partition(address: tuple[str, int]) -> Any:
    """``__cluster_metadata``-0 in a DescribeQuorum v2 answer from ``address``, on a connection of its own."""
    with connect(address) as conn:
        return describe_quorum(conn).topics[0].partitions[0]


def api_versions_v5_payload(correlation_id: int) -> bytes:
    """An ApiVersions v5 request (newer than any server knows), encoded as v4 with the version patched.

    Any future ApiVersions version keeps header v2 and at least v4's body, so this is what a newer
    client would send.
    """
    payload = bytearray(encode_request(ApiKey.API_VERSIONS, 4, correlation_id, api_versions_body(4)))
    struct.pack_into(">h", payload, 2, 5)
    return bytes(payload)


@dataclasses.dataclass(frozen=True)
class Response:
    correlation_id: int
    body: Any
    raw: bytes  # the whole frame payload (header and body)
    metadata_offset: int | None = None  # ksteward's read-your-writes header tag, if the header carries it


def _flexible_response_header(payload: bytes) -> tuple[int, int | None, int]:
    """(correlation id, metadata offset or None, header size) of a v1 response header, read by hand: kio's
    reader refuses the tags it does not know, and KIP-482 says a client skips them."""
    (correlation_id,) = struct.unpack_from(">i", payload, 0)
    count, pos = _read_uvarint(payload, 4)
    offset = None
    for _ in range(count):
        tag, pos = _read_uvarint(payload, pos)
        size, pos = _read_uvarint(payload, pos)
        if tag == METADATA_OFFSET_TAG:
            assert size == _I64.size, f"metadata offset tag of {size} bytes"
            (offset,) = _I64.unpack_from(payload, pos)
        pos += size
    return correlation_id, offset, pos


@cache
def _response_schema(api_key: int, api_version: int) -> Any:
    """kio's response class, with any ``datetime_i64`` field read as a plain int64: kio refuses a negative
    one, and Kafka writes -1 in refused delegation-token responses (``DelegationTokenManager.ErrorTimestamp``)."""
    cls = load_response_schema(api_key, api_version)
    fields = dataclasses.fields(cls)
    if not any(f.metadata.get("kafka_type") == "datetime_i64" for f in fields):
        return cls
    hints = _hints(cls)
    specs = [
        (f.name, int, dataclasses.field(metadata={"kafka_type": "int64"}))
        if f.metadata.get("kafka_type") == "datetime_i64"
        else (f.name, hints[f.name], dataclasses.field(metadata=f.metadata))
        for f in fields
    ]
    namespace = {k: getattr(cls, k) for k in ("__type__", "__version__", "__flexible__", "__api_key__",
                                              "__header_schema__")}  # fmt: skip
    return dataclasses.make_dataclass(cls.__name__, specs, namespace=namespace, frozen=True, kw_only=True)


def decode_response(api_key: int, api_version: int, payload: bytes) -> Response:
    """Decode one response frame payload (no length prefix); it must be consumed exactly."""
    cls = _response_schema(api_key, api_version)
    offset = None
    if cls.__header_schema__.__flexible__:
        correlation_id, offset, hsize = _flexible_response_header(payload)
    else:
        header, hsize = entity_reader(cls.__header_schema__)(payload, 0)
        correlation_id = int(header.correlation_id)
    body, bsize = entity_reader(cls)(payload, hsize)
    if hsize + bsize != len(payload):
        raise AssertionError(
            f"response to api {api_key} v{api_version}: {len(payload) - hsize - bsize} bytes left over after decoding"
        )
    return Response(correlation_id=correlation_id, body=body, raw=payload, metadata_offset=offset)


# --- the socket -----------------------------------------------------------------------------------


class RawConnection:
    """One TCP connection speaking length-prefixed frames, with a timeout on every read."""

    def __init__(self, host: str, port: int, timeout: float = 10.0) -> None:
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.timeout = timeout
        self._next_correlation_id = 1

    def __enter__(self) -> RawConnection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.sock.close()

    def next_correlation_id(self) -> int:
        cid = self._next_correlation_id
        self._next_correlation_id += 1
        return cid

    # bytes
    def send_raw(self, data: bytes) -> None:
        self.sock.sendall(data)

    def send_frame(self, payload: bytes) -> None:
        self.sock.sendall(frame(payload))

    def _read_exactly(self, n: int) -> bytes:
        buf = bytearray()
        while len(buf) < n:
            try:
                chunk = self.sock.recv(n - len(buf))
            except (ConnectionResetError, BrokenPipeError) as exc:
                raise ConnectionClosed(f"connection reset after {len(buf)} of {n} bytes") from exc
            if not chunk:
                raise ConnectionClosed(f"connection closed after {len(buf)} of {n} bytes")
            buf += chunk
        return bytes(buf)

    def read_frame(self) -> bytes:
        """One response frame's payload. Raises ConnectionClosed on EOF, socket.timeout on timeout."""
        (size,) = _SIZE.unpack(self._read_exactly(4))
        if size < 0:
            raise AssertionError(f"negative frame size {size} from the server")
        return self._read_exactly(size)

    def read_until_closed(self) -> bytes | None:
        """Everything the server sends until it closes the connection (EOF or reset).

        None if the connection is still open when the read timeout expires.
        """
        received = bytearray()
        try:
            while True:
                chunk = self.sock.recv(65536)
                if not chunk:
                    return bytes(received)
                received += chunk
        except (ConnectionResetError, BrokenPipeError):
            return bytes(received)
        except TimeoutError:
            return None

    # requests
    def send_request(
        self,
        api_key: int,
        api_version: int,
        body: Mapping[str, Any] | None = None,
        correlation_id: int | None = None,
        min_offset: int | None = None,
    ) -> int:
        cid = self.next_correlation_id() if correlation_id is None else correlation_id
        self.send_frame(encode_request(api_key, api_version, cid, body, min_offset=min_offset))
        return cid

    def request(
        self, api_key: int, api_version: int, body: Mapping[str, Any] | None = None, min_offset: int | None = None
    ) -> Response:
        """Send one request and read its response, checking the correlation id."""
        cid = self.send_request(api_key, api_version, body, min_offset=min_offset)
        response = decode_response(api_key, api_version, self.read_frame())
        if response.correlation_id != cid:
            raise AssertionError(f"sent correlation id {cid}, got {response.correlation_id}")
        return response

    def api_versions(self, api_version: int = 3) -> Response:
        return self.request(ApiKey.API_VERSIONS, api_version, api_versions_body(api_version))

    def sasl_plain(
        self, username: str, password: str, *, handshake_version: int = 1, authenticate_version: int = 2
    ) -> Response:
        """SaslHandshake(PLAIN) then SaslAuthenticate; returns the SaslAuthenticate response."""
        handshake = self.request(ApiKey.SASL_HANDSHAKE, handshake_version, {"mechanism": "PLAIN"})
        if int(handshake.body.error_code) != 0:
            raise AssertionError(f"SaslHandshake(PLAIN) failed: {handshake.body}")
        token = b"\0" + username.encode() + b"\0" + password.encode()
        return self.request(ApiKey.SASL_AUTHENTICATE, authenticate_version, {"auth_bytes": token})

    def sasl_scram(
        self, username: str, password: str, mechanism: str = "SCRAM-SHA-256", *, token: bool = False
    ) -> Response:
        """SaslHandshake then a SCRAM exchange (RFC 5802, written here from the RFC), with KIP-48's
        ``tokenauth=true`` extension when ``token``; returns the last SaslAuthenticate response."""
        handshake = self.request(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": mechanism})
        if int(handshake.body.error_code) != 0:
            raise AssertionError(f"SaslHandshake({mechanism}) failed: {handshake.body}")
        hash_name = "sha256" if mechanism == "SCRAM-SHA-256" else "sha512"
        nonce = secrets.token_hex(12)
        bare = f"n={username.replace('=', '=3D').replace(',', '=2C')},r={nonce}" + (",tokenauth=true" if token else "")
        first = self.request(ApiKey.SASL_AUTHENTICATE, 2, {"auth_bytes": b"n,," + bare.encode()})
        if int(first.body.error_code) != 0:
            return first
        server_first = bytes(first.body.auth_bytes)
        fields = dict(part.split(b"=", 1) for part in server_first.split(b","))
        salted = hashlib.pbkdf2_hmac(hash_name, password.encode(), base64.b64decode(fields[b"s"]), int(fields[b"i"]))
        client_key = hmac.new(salted, b"Client Key", hash_name).digest()
        stored_key = hashlib.new(hash_name, client_key).digest()
        without_proof = b"c=biws,r=" + fields[b"r"]
        auth_message = bare.encode() + b"," + server_first + b"," + without_proof
        signature = hmac.new(stored_key, auth_message, hash_name).digest()
        proof = bytes(a ^ b for a, b in zip(client_key, signature, strict=True))
        final = without_proof + b",p=" + base64.b64encode(proof)
        return self.request(ApiKey.SASL_AUTHENTICATE, 2, {"auth_bytes": final})


def connect(address: tuple[str, int], timeout: float = 10.0) -> RawConnection:
    return RawConnection(address[0], address[1], timeout=timeout)
