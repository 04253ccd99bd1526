"""One client connection: read frames, run the session's state machine, answer in order.

Requests on one connection are handled one at a time, in order, as Kafka mutes a channel while its
request is in flight; connections are independent tasks, so they are served concurrently. A bad
frame or an undecodable request closes this connection only, and is logged.
"""

from __future__ import annotations

import asyncio
import logging
import struct
from dataclasses import dataclass
from typing import Any

from kio.schema.errors import ErrorCode

from ksteward.broker.api_versions import unsupported_version_response
from ksteward.broker.context import ApiTable, Node, RequestContext
from ksteward.protocol.apis import api_name
from ksteward.protocol.build import build
from ksteward.protocol.codec import (
    PreEncoded,
    Request,
    UnsupportedApiVersionsRequest,
    decode_request,
    encode_response,
    response_class,
)
from ksteward.protocol.error_responses import error_values
from ksteward.protocol.errors import ProtocolError
from ksteward.protocol.framing import check_frame_size, frame
from ksteward.protocol.sasl import SaslAuthenticationError
from ksteward.server.addresses import java_host_address
from ksteward.server.session import ANONYMOUS, AuthSession, Credentials, State
from ksteward.server.tls import subject_dn

log = logging.getLogger(__name__)

API_VERSIONS, SASL_HANDSHAKE, SASL_AUTHENTICATE = 18, 17, 36
_SIZE = struct.Struct(">i")


class CloseConnection(Exception):
    """Stop serving this connection; the message says why (for the log)."""


@dataclass(frozen=True, slots=True)
class ListenerRuntime:
    name: str
    security_protocol: str
    table: ApiTable
    max_frame_bytes: int
    enabled_mechanisms: tuple[str, ...]
    credentials: Credentials | None
    failed_authentication_delay_s: float = 0.1

    @property
    def sasl(self) -> bool:
        return self.security_protocol.startswith("SASL_")


class Connection:
    def __init__(
        self, node: Node, listener: ListenerRuntime, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        self.node = node
        self.listener = listener
        self.reader = reader
        self.writer = writer
        peer = writer.get_extra_info("peername") or ("unknown", 0)
        self.client_host = java_host_address(str(peer[0]))
        self.peer = f"{self.client_host}:{peer[1]}"
        principal = ANONYMOUS
        peercert = writer.get_extra_info("peercert")
        if peercert and not listener.sasl:
            principal = f"User:{subject_dn(peercert) or 'ANONYMOUS'}"
        self.session = AuthSession(
            sasl=listener.sasl,
            enabled_mechanisms=listener.enabled_mechanisms,
            credentials=listener.credentials,
            initial_principal=principal,
        )

    async def serve(self) -> None:
        try:
            while True:
                try:
                    header = await self.reader.readexactly(4)
                except asyncio.IncompleteReadError as exc:
                    if exc.partial:
                        log.info(
                            "closing connection from %s on %s: truncated frame size", self.peer, self.listener.name
                        )
                    return
                (size,) = _SIZE.unpack(header)
                check_frame_size(size, self.listener.max_frame_bytes)
                try:
                    payload = await self.reader.readexactly(size)
                except asyncio.IncompleteReadError:
                    log.info("closing connection from %s on %s: frame truncated", self.peer, self.listener.name)
                    return
                response = await self._handle(payload)
                if response is not None:
                    self.writer.write(response)
                    await self.writer.drain()
                if self.session.state is State.FAILED:
                    # Kafka delays the close after a failed login (KIP-306): clients that drop
                    # bytes arriving together with a close would otherwise miss the error.
                    await asyncio.sleep(self.listener.failed_authentication_delay_s)
                    return
        except ProtocolError as exc:
            log.warning("closing connection from %s on %s: %s", self.peer, self.listener.name, exc)
        except CloseConnection as exc:
            log.warning("closing connection from %s on %s: %s", self.peer, self.listener.name, exc)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        except Exception:
            log.exception("closing connection from %s on %s after an internal error", self.peer, self.listener.name)
        finally:
            self.writer.close()

    async def _handle(self, payload: bytes) -> bytes | None:
        session = self.session
        if session.state is State.RAW_TOKENS:
            return self._raw_token(payload)
        try:
            request = decode_request(payload, self.listener.table.served)
        except ProtocolError:
            log.debug("undecodable request from %s: %s", self.peer, payload[:512].hex())
            raise
        if isinstance(request, UnsupportedApiVersionsRequest):
            response = unsupported_version_response(self.listener.table, self.node)
            return encode_response(API_VERSIONS, 0, request.correlation_id, response)
        if request.dropped_tags:
            log.debug("skipped %d unknown tagged fields from %s", request.dropped_tags, self.peer)
        key = request.api_key
        if session.state is State.HANDSHAKE and key not in (API_VERSIONS, SASL_HANDSHAKE):
            raise CloseConnection(f"Unexpected Kafka request of type {key} during SASL handshake.")
        if session.state is State.AUTHENTICATE and key != SASL_AUTHENTICATE:
            raise CloseConnection(f"Unexpected Kafka request of type {key} during SASL authentication.")
        if key == SASL_HANDSHAKE:
            return self._sasl_handshake(request)
        if key == SASL_AUTHENTICATE:
            return self._sasl_authenticate(request)
        spec = self.listener.table.spec(key)
        assert spec.handler is not None
        ctx = RequestContext(
            principal=session.principal,
            client_host=self.client_host,
            listener=self.listener.name,
            security_protocol=self.listener.security_protocol,
            client_id=request.client_id,
            api_key=key,
            api_version=request.api_version,
            api_table=self.listener.table,
            correlation_id=request.correlation_id,
        )
        try:
            response = await spec.handler(self.node, ctx, request.body)
        except ProtocolError:
            raise  # a request Kafka would fail to parse: the connection is closed, as Kafka closes it
        except Exception:
            values = error_values(key, request.body)
            if values is None:
                raise
            # As Kafka does: log it, and answer every entry of the request with UNKNOWN_SERVER_ERROR.
            log.exception("%s v%d from %s failed; answering UNKNOWN_SERVER_ERROR", api_name(key), ctx.api_version,
                          self.peer)  # fmt: skip
            response = build(response_class(key, request.api_version), values)
        if isinstance(response, PreEncoded):
            return response.frame
        return encode_response(key, request.api_version, request.correlation_id, response)

    def _respond(self, request: Request, values: dict[str, Any]) -> bytes:
        cls = response_class(request.api_key, request.api_version)
        return encode_response(request.api_key, request.api_version, request.correlation_id, build(cls, values))

    def _sasl_handshake(self, request: Request) -> bytes:
        session = self.session
        mechanisms = list(self.listener.enabled_mechanisms) if self.listener.sasl else []
        if session.state is not State.HANDSHAKE:
            return self._respond(request, {"error_code": ErrorCode.illegal_sasl_state, "mechanisms": mechanisms})
        mechanism = request.body.mechanism
        if session.handshake(mechanism, request.api_version):
            return self._respond(request, {"error_code": ErrorCode.none, "mechanisms": mechanisms})
        log.info("closing connection from %s: unsupported SASL mechanism %r", self.peer, mechanism)
        return self._respond(request, {"error_code": ErrorCode.unsupported_sasl_mechanism, "mechanisms": mechanisms})

    def _sasl_authenticate(self, request: Request) -> bytes:
        session = self.session
        if session.state is not State.AUTHENTICATE:
            return self._respond(
                request,
                {
                    "error_code": ErrorCode.illegal_sasl_state,
                    "error_message": "SaslAuthenticate request received without a preceding SaslHandshake"
                    if session.state is State.HANDSHAKE
                    else "Re-authentication is not enabled on this listener",
                    "auth_bytes": b"",
                    "session_lifetime_ms": 0,
                },
            )
        try:
            challenge = session.authenticate(request.body.auth_bytes)
        except SaslAuthenticationError as exc:
            log.info("authentication failed for %s on %s", self.peer, self.listener.name)
            return self._respond(
                request,
                {
                    "error_code": ErrorCode.sasl_authentication_failed,
                    "error_message": str(exc),
                    "auth_bytes": b"",
                    "session_lifetime_ms": 0,
                },
            )
        return self._respond(
            request,
            {"error_code": ErrorCode.none, "error_message": None, "auth_bytes": challenge, "session_lifetime_ms": 0},
        )

    def _raw_token(self, payload: bytes) -> bytes | None:
        """KIP-43's v0 flow: SASL tokens framed by length only. Failure closes without a reply."""
        try:
            challenge = self.session.authenticate(payload)
        except SaslAuthenticationError:
            log.info("authentication failed for %s on %s (raw SASL tokens)", self.peer, self.listener.name)
            return None
        return frame(challenge)
