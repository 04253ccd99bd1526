"""One client connection: read frames, run the session's state machine, answer in order.

Requests on one connection are handled one at a time, in order, as Kafka mutes a channel while its
request is in flight; connections are independent tasks, so they are served concurrently. A bad
frame or an undecodable request closes this connection only, and is logged with its api key,
version, size and peer, never its bytes.

Before a SASL connection has logged in, a frame may be at most ``sasl.server.max.receive.size``
bytes, and the request header alone decides whether it may be sent: only ApiVersions and
SaslHandshake, then SaslAuthenticate, are ever decoded for an anonymous peer. A connection that
stays idle for ``connections.max.idle.ms`` (no complete request, or half a frame that never
completes) is closed, and so is one that has not authenticated within that time of connecting.
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
    peek_header,
    response_class,
)
from ksteward.protocol.error_responses import error_values
from ksteward.protocol.errors import ProtocolError
from ksteward.protocol.framing import check_frame_size, frame
from ksteward.protocol.sasl import SaslAuthenticationError
from ksteward.safe_log import log_failure
from ksteward.server.addresses import java_host_address
from ksteward.server.session import (
    ANONYMOUS,
    API_VERSIONS,
    SASL_AUTHENTICATE,
    SASL_HANDSHAKE,
    AuthSession,
    Credentials,
    State,
)
from ksteward.server.tls import subject_dn

log = logging.getLogger(__name__)

_SIZE = struct.Struct(">i")
DEFAULT_SASL_MAX_RECEIVE_BYTES = 524_288  # Kafka's sasl.server.max.receive.size
DEFAULT_IDLE_TIMEOUT_S = 600.0  # Kafka's connections.max.idle.ms


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
    max_receive_before_auth: int = DEFAULT_SASL_MAX_RECEIVE_BYTES
    idle_timeout_s: float = DEFAULT_IDLE_TIMEOUT_S

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
        self._connected_at = self._last_active = 0.0  # event-loop times, set when serving starts
        self._busy = False
        self._idle_timer: asyncio.TimerHandle | None = None

    async def serve(self) -> None:
        loop = asyncio.get_running_loop()
        self._connected_at = self._last_active = loop.time()
        self._idle_timer = loop.call_at(self._connected_at + self.listener.idle_timeout_s, self._check_idle)
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
                if self.session.authenticated:
                    check_frame_size(size, self.listener.max_frame_bytes)
                else:
                    check_frame_size(size, self._max_receive_before_auth(), "sasl.server.max.receive.size")
                try:
                    payload = await self.reader.readexactly(size)
                except asyncio.IncompleteReadError:
                    log.info("closing connection from %s on %s: frame truncated", self.peer, self.listener.name)
                    return
                self._busy = True  # a request being served is not idleness; a reader that never reads is
                response = await self._handle(payload)
                self._busy = False
                if response is not None:
                    self.writer.write(response)
                    await self.writer.drain()
                self._last_active = loop.time()
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
        except Exception as exc:
            what = f"closing connection from {self.peer} on {self.listener.name} after an internal error"
            log_failure(log, what, exc, stack_level=logging.ERROR)
        finally:
            if self._idle_timer is not None:
                self._idle_timer.cancel()
            self.writer.close()

    def _max_receive_before_auth(self) -> int:
        return min(self.listener.max_frame_bytes, self.listener.max_receive_before_auth)

    def _check_idle(self) -> None:
        """Close the connection once it has been idle, or unauthenticated, for ``connections.max.idle.ms``
        (Kafka's ``Selector`` idle expiry); otherwise look again at the next deadline. A request being
        served is not idleness."""
        loop = asyncio.get_running_loop()
        timeout = self.listener.idle_timeout_s
        deadline = self._last_active + timeout
        if not self.session.authenticated:
            deadline = min(deadline, self._connected_at + timeout)
        if self._busy or loop.time() < deadline:
            next_check = max(deadline, loop.time() + timeout / 10) if self._busy else deadline
            self._idle_timer = loop.call_at(next_check, self._check_idle)
            return
        why = "idle" if self.session.authenticated else "not authenticated"
        log.info("closing connection from %s on %s: %s for connections.max.idle.ms (%d ms)", self.peer,
                 self.listener.name, why, round(timeout * 1000))  # fmt: skip
        self.writer.close()

    async def _handle(self, payload: bytes) -> bytes | None:
        session = self.session
        if session.state is State.RAW_TOKENS:
            return self._raw_token(payload)
        if not session.authenticated:
            # The header alone decides what an anonymous peer may send; nothing else is decoded.
            api_key, _version, _correlation_id = peek_header(payload)
            refusal = session.refusal(api_key)
            if refusal is not None:
                raise CloseConnection(f"Unexpected Kafka request of type {api_name(api_key)} {refusal}.")
        try:
            request = decode_request(payload, self.listener.table.served)
        except ProtocolError:
            key, version, _ = peek_header(payload)
            log.debug("undecodable request from %s: api key %d v%d, %d bytes", self.peer, key, version, len(payload))
            raise
        if isinstance(request, UnsupportedApiVersionsRequest):
            response = unsupported_version_response(self.listener.table, self.node)
            return encode_response(API_VERSIONS, 0, request.correlation_id, response)
        if request.dropped_tags:
            log.debug("skipped %d unknown tagged fields from %s", request.dropped_tags, self.peer)
        key = request.api_key
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
        except Exception as exc:
            values = error_values(key, request.body)
            if values is None:
                raise
            # As Kafka does: log it, and answer every entry of the request with UNKNOWN_SERVER_ERROR.
            what = f"{api_name(key)} v{ctx.api_version} from {self.peer} failed; answering UNKNOWN_SERVER_ERROR"
            log_failure(log, what, exc, stack_level=logging.ERROR)
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
        log.info("closing connection from %s: unsupported SASL mechanism", self.peer)
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
