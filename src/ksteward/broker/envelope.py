"""Envelope (api 58) on the controller: run a request a broker forwarded, as the client that sent it (KIP-590).

Kafka's ``ControllerApis.handleEnvelopeRequest`` and ``EnvelopeUtils.handleEnvelopeRequest``, in order:

1. The connection's own principal (the forwarding broker) needs CLUSTER_ACTION on the cluster, else the
   envelope is answered with CLUSTER_AUTHORIZATION_FAILED ("Principal ... does not have required
   CLUSTER_ACTION for envelope").
2. The client's principal is read with the principal serde (``ksteward.protocol.principal``); a failure
   is PRINCIPAL_DESERIALIZATION_FAILURE.
3. The client's address must be 4 or 16 bytes (Java's ``InetAddress.getByAddress``), else INVALID_REQUEST.
4. The embedded request header is read; a failure is UNSUPPORTED_VERSION. An API that is not forwardable
   (Kafka's ``ApiKeys.forwardable``) is INVALID_REQUEST, so envelopes cannot nest.
5. The embedded body is decoded with the same bounds check as any request; a failure, or an API or
   version this listener does not serve, is UNSUPPORTED_VERSION (the broker then closes its client's
   connection, and the client re-reads ApiVersions).
6. The inner request runs through the listener's own handler with a context of the client's principal
   and address and the envelope's listener. Every audit event of that run names the forwarding broker
   too (``ksteward.authorizer.forwarded_by``).
7. The inner response (header and body, at the inner version) goes back in ``ResponseData`` with error 0,
   unless it carries NOT_CONTROLLER anywhere: then the envelope carries NOT_CONTROLLER and no data, so that
   the broker looks for the new controller and retries (``RequestChannel.Request.buildResponseSend``).

An inner handler that fails unexpectedly answers its request with UNKNOWN_SERVER_ERROR in every entry, as
the connection does for a direct request; one that refuses the request as unparsable (a
:class:`ProtocolError`, which closes a direct connection) is UNSUPPORTED_VERSION here, where Kafka's
parse of the forwarded request fails. The envelope's connection stays open in every case. The full rules
are in ``docs/forwarding.md``.
"""

from __future__ import annotations

import dataclasses
import functools
import ipaddress
import logging
from typing import Any

from kio.schema.envelope.v0 import EnvelopeResponse
from kio.schema.errors import ErrorCode

from ksteward.authorizer import CLUSTER_NAME, AclOperation, ResourceType, forwarded_by
from ksteward.broker.authz import authorize
from ksteward.broker.context import Node, RequestContext
from ksteward.broker.forwarding import FORWARDABLE_API_KEYS
from ksteward.controller.result import NotControllerError
from ksteward.protocol.addresses import java_ip_text
from ksteward.protocol.apis import api_name
from ksteward.protocol.build import build
from ksteward.protocol.codec import PreEncoded, Request, decode_request, encode_response, peek_header, response_class
from ksteward.protocol.error_responses import error_values
from ksteward.protocol.errors import ProtocolError
from ksteward.protocol.framing import frame_bytes
from ksteward.protocol.principal import PrincipalSerdeError, deserialize_principal
from ksteward.protocol.read_your_writes import UNTAGGED_READS, with_offset_tag
from ksteward.safe_log import log_failure

log = logging.getLogger(__name__)

_FRAME_SIZE_BYTES = 4


class EnvelopeError(Exception):
    """The envelope itself is refused: answered with ``code`` and no ResponseData."""

    def __init__(self, code: ErrorCode, reason: str) -> None:
        super().__init__(reason)
        self.code = code


def client_host_text(address: bytes) -> str:
    """The client's raw address bytes in Java's ``getHostAddress()`` form, as ACL hosts are written:
    IPv4 dotted, IPv6 as eight unpadded hex groups, an IPv4-mapped IPv6 address as its IPv4 address.
    Anything but 4 or 16 bytes is INVALID_REQUEST ("Failed to parse client address from envelope")."""
    if len(address) not in (4, 16):
        raise EnvelopeError(ErrorCode.invalid_request, "Failed to parse client address from envelope")
    return java_ip_text(ipaddress.ip_address(address))


# A broker sends many envelopes with one principal and one client address: each is decoded once (bounded: the
# least recently used drop out; a refusal raises, and is not cached).
_principal = functools.lru_cache(maxsize=1024)(deserialize_principal)
_host_text = functools.lru_cache(maxsize=1024)(client_host_text)


def _envelope(code: ErrorCode, data: bytes | None = None) -> EnvelopeResponse:
    return EnvelopeResponse(response_data=data, error_code=code)


async def handle_envelope(node: Node, ctx: RequestContext, request: Any) -> EnvelopeResponse:
    try:
        return await _handle_envelope(node, ctx, request)
    except Exception as exc:
        # Kafka's RequestHandlerHelper.handleError: the envelope itself answers UNKNOWN_SERVER_ERROR, and the
        # broker's connection stays open.
        log_failure(log, f"Envelope from {ctx.principal} failed; answering UNKNOWN_SERVER_ERROR", exc,
                    stack_level=logging.ERROR)  # fmt: skip
        return _envelope(ErrorCode.unknown_server_error)


async def _handle_envelope(node: Node, ctx: RequestContext, request: Any) -> EnvelopeResponse:
    if not authorize(node, ctx, AclOperation.CLUSTER_ACTION, ResourceType.CLUSTER, CLUSTER_NAME):
        log.info("refusing an Envelope from %s (%s): no CLUSTER_ACTION on the cluster", ctx.principal, ctx.client_host)
        return _envelope(ErrorCode.cluster_authorization_failed)
    try:
        inner, inner_ctx = _unwrap(ctx, request)
        with forwarded_by(ctx.principal, ctx.client_host):
            payload = await _serve_inner(node, inner_ctx, inner)
    except EnvelopeError as exc:
        log.info("refusing an Envelope from %s (%s): %s", ctx.principal, ctx.client_host, exc)
        return _envelope(exc.code)
    if payload is None:
        return _envelope(ErrorCode.not_controller)
    return _envelope(ErrorCode.none, payload)


def _unwrap(ctx: RequestContext, request: Any) -> tuple[Request, RequestContext]:
    """The inner request and the context it runs in (steps 2 to 5 of the module docstring)."""
    try:
        principal = _principal(request.request_principal or b"")
    except PrincipalSerdeError as exc:
        raise EnvelopeError(
            ErrorCode.principal_deserialization_failure, f"Failed to deserialize client principal from envelope: {exc}"
        ) from None
    client_host = _host_text(request.client_host_address)
    data = request.request_data
    try:
        api_key, api_version, _ = peek_header(data)
    except ProtocolError:
        raise EnvelopeError(ErrorCode.unsupported_version, "Failed to parse request header from envelope") from None
    if api_key not in FORWARDABLE_API_KEYS:
        raise EnvelopeError(
            ErrorCode.invalid_request, f"API {api_name(api_key)} is not enabled or is not eligible for forwarding"
        )
    try:
        inner = decode_request(data, ctx.api_table.forwardable)
    except ProtocolError as exc:
        reason = f"Failed to parse forwarded {api_name(api_key)} v{api_version}: {exc}"
        raise EnvelopeError(ErrorCode.unsupported_version, reason) from None
    assert isinstance(inner, Request)  # ApiVersions, the only other outcome, is not forwardable
    inner_ctx = RequestContext(  # not dataclasses.replace, which reads the fields each time
        principal=str(principal),
        client_host=client_host,
        listener=ctx.listener,
        security_protocol=ctx.security_protocol,
        client_id=inner.client_id,
        api_key=inner.api_key,
        api_version=inner.api_version,
        api_table=ctx.api_table,
        correlation_id=inner.correlation_id,
        authorizations=ctx.authorizations,
        token_authenticated=principal.token_authenticated,
        forwarded=True,
    )
    return inner, inner_ctx


async def _serve_inner(node: Node, ctx: RequestContext, request: Request) -> bytes | None:
    """The inner response's header and body; None if it carries NOT_CONTROLLER."""
    spec = ctx.api_table.spec(request.api_key)
    assert spec.handler is not None  # every forwardable API ksteward serves has a handler
    try:
        response = await spec.handler(node, ctx, request.body)
    except ProtocolError as exc:
        raise EnvelopeError(ErrorCode.unsupported_version, f"forwarded request refused as unparsable: {exc}") from None
    except NotControllerError:
        return None  # not the active controller (any more): the broker retries with the new one
    except Exception as exc:
        values = error_values(request.api_key, request.body)
        if values is None:
            raise
        what = f"forwarded {api_name(request.api_key)} v{ctx.api_version} from {ctx.principal} failed"
        log_failure(log, f"{what}; answering UNKNOWN_SERVER_ERROR", exc, stack_level=logging.ERROR)
        response = build(response_class(request.api_key, request.api_version), values)
    # The offset the client may read after, on any broker (ksteward.protocol.read_your_writes).
    offset = None if request.api_key in UNTAGGED_READS else node.image.offset
    if isinstance(response, PreEncoded):
        frame = frame_bytes(response.frame)
        if offset is not None and response_class(request.api_key, request.api_version).__header_schema__.__flexible__:
            frame = with_offset_tag(frame, offset)
        return frame[_FRAME_SIZE_BYTES:]
    if carries_error(response, ErrorCode.not_controller):
        return None
    frame = encode_response(request.api_key, request.api_version, request.correlation_id, response,
                            metadata_offset=offset)  # fmt: skip
    return frame[_FRAME_SIZE_BYTES:]


def carries_error(entity: Any, code: ErrorCode) -> bool:
    """Whether any ``error_code`` field of a kio entity, at any depth, is ``code`` (Kafka's ``errorCounts``)."""
    plan = _FIELD_PLANS.get(type(entity))
    if plan is None:
        if not dataclasses.is_dataclass(entity):
            return False
        names = tuple(f.name for f in dataclasses.fields(entity))
        plan = _FIELD_PLANS[type(entity)] = ("error_code" in names, tuple(n for n in names if n != "error_code"))
    has_code, others = plan
    if has_code and entity.error_code == code:
        return True
    for name in others:
        value = getattr(entity, name)
        if isinstance(value, tuple):
            if any(carries_error(v, code) for v in value):
                return True
        elif dataclasses.is_dataclass(value) and carries_error(value, code):
            return True
    return False


#: Per entity class: whether it has an ``error_code`` field, and its other fields (``dataclasses.fields`` is
#: not free, and every forwarded answer is checked).
_FIELD_PLANS: dict[type, tuple[bool, tuple[str, ...]]] = {}
