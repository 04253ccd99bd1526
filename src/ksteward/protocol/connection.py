"""The server side of one Kafka connection, sans-IO: bytes in, events out, in the manner of h11's ``Connection``.

The shell that owns the socket hands over whatever bytes arrive (:meth:`ServerConnection.receive_data`,
``b""`` at end of stream) and asks for :meth:`ServerConnection.next_event` until it gets
:data:`NEED_DATA`. Each event is one of:

- a :class:`~ksteward.protocol.codec.Request` to serve (its header and decoded body), or an
  :class:`~ksteward.protocol.codec.UnsupportedApiVersionsRequest`, to be answered in KIP-511's v0 format;
- an :class:`AuthenticationReply`: the answer to a SaslHandshake or SaslAuthenticate request, or the
  server's next token of a KIP-43 raw exchange, built here and written as is;
- a :class:`Close`: stop serving, with the reason to log, and the reply to write first, if any.

Frames are taken one at a time, and only when the shell asks for the next event, so each is read under
the authentication state its predecessors left (Kafka likewise mutes a channel while its request is in
flight). What each state accepts is one table, :data:`RULES`: which API keys a request may carry, the
size limit of a frame (``sasl.server.max.receive.size`` before login, as Kafka's
``SaslServerAuthenticator`` applies it, ``socket.request.max.bytes`` after), and the state each
authentication outcome leads to. Before login the request header alone decides whether a request may be
sent, so the body of any other request is never decoded for an anonymous peer.

Nothing here touches a socket or a clock: the idle timer (``connections.max.idle.ms``) and the delay
before closing after a failed login (KIP-306) belong to the shell, ``ksteward.server.connection``.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kio.schema.errors import ErrorCode

from ksteward.protocol.apis import ApiKey, api_name
from ksteward.protocol.build import build
from ksteward.protocol.codec import (
    Request,
    UnsupportedApiVersionsRequest,
    decode_request,
    encode_response,
    peek_header,
    response_class,
)
from ksteward.protocol.errors import FrameError, InvalidRequestError, ProtocolError
from ksteward.protocol.framing import DEFAULT_MAX_FRAME_BYTES, FrameDecoder, frame
from ksteward.protocol.sasl import (
    Credentials,
    PlainServer,
    SaslAuthenticationError,
    ScramServer,
    UnsupportedSaslMechanismError,
    mechanism_server,
)

__all__ = [
    "ANONYMOUS",
    "DEFAULT_SASL_MAX_RECEIVE_BYTES",
    "NEED_DATA",
    "RULES",
    "AuthenticationReply",
    "Close",
    "CloseKind",
    "Event",
    "NeedData",
    "Outcome",
    "Reads",
    "Rule",
    "ServerConnection",
    "State",
]

ANONYMOUS = "User:ANONYMOUS"
DEFAULT_SASL_MAX_RECEIVE_BYTES = 524_288  # Kafka's sasl.server.max.receive.size default
SASL_MAX_RECEIVE = "sasl.server.max.receive.size"
REQUEST_MAX = "socket.request.max.bytes"


# --- events --------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class NeedData:
    """No complete frame is buffered: receive more bytes, then ask again."""


NEED_DATA = NeedData()


@dataclass(frozen=True, slots=True)
class AuthenticationReply:
    """A complete, length-prefixed response frame that the connection built itself."""

    frame: bytes


class CloseKind(enum.Enum):
    PEER_CLOSED = "peer closed"  # end of stream between frames: nothing to report
    TRUNCATED = "truncated"  # end of stream inside a frame
    INVALID = "invalid"  # a frame or request Kafka refuses: bad size, undecodable, illegal SASL state
    AUTHENTICATION_FAILED = "authentication failed"  # KIP-306: the shell delays the close


@dataclass(frozen=True, slots=True)
class Close:
    """Stop serving this connection. ``reason`` is for the log and never holds request bytes."""

    kind: CloseKind
    reason: str
    reply: bytes | None = None  # a last response frame to write before closing


Event = Request | UnsupportedApiVersionsRequest | AuthenticationReply | Close | NeedData


# --- the state table -----------------------------------------------------------------------------


class State(enum.Enum):
    HANDSHAKE = "handshake"  # SASL, before login: ApiVersions or SaslHandshake
    AUTHENTICATE = "authenticate"  # SASL, after SaslHandshake v1+: SaslAuthenticate
    RAW_TOKENS = "raw_tokens"  # SASL, after SaslHandshake v0 (KIP-43): bare tokens with no Kafka header
    AUTHENTICATED = "authenticated"  # every API the listener serves; PLAINTEXT and SSL start here
    CLOSED = "closed"  # nothing more is read; a failed login ends here


class Reads(enum.Enum):
    REQUESTS = "requests"  # Kafka requests: header, then body
    RAW_TOKENS = "raw tokens"  # SASL tokens framed by their size only
    NOTHING = "nothing"


class Outcome(enum.Enum):
    """What a SASL step led to; :data:`RULES` says which state follows."""

    MECHANISM_SELECTED = "mechanism selected"  # SaslHandshake v1+
    MECHANISM_SELECTED_V0 = "mechanism selected, v0"  # SaslHandshake v0: raw tokens follow
    LOGGED_IN = "logged in"
    LOGIN_FAILED = "login failed"  # an unsupported mechanism, or a token the mechanism refused


@dataclass(frozen=True, slots=True)
class Rule:
    reads: Reads
    accepts: frozenset[int] | None = None  # api keys a request may carry; None: every key served
    during: str = ""  # the phase, in the words of Kafka's IllegalSaslStateException
    frame_limit: str = SASL_MAX_RECEIVE  # the config that bounds a frame's size in this state
    then: Mapping[Outcome, State] = field(default_factory=dict)


# Kafka's SaslServerAuthenticator: before login, ApiVersions and SaslHandshake, then SaslAuthenticate
# until the mechanism completes; any other request is an illegal SASL state and closes the connection.
# After login, SaslHandshake and SaslAuthenticate are answered here with ILLEGAL_SASL_STATE (there is no
# re-authentication, KIP-368); every other request goes to the shell.
RULES: Mapping[State, Rule] = {
    State.HANDSHAKE: Rule(
        Reads.REQUESTS,
        accepts=frozenset({ApiKey.API_VERSIONS, ApiKey.SASL_HANDSHAKE}),
        during="SASL handshake",
        then={
            Outcome.MECHANISM_SELECTED: State.AUTHENTICATE,
            Outcome.MECHANISM_SELECTED_V0: State.RAW_TOKENS,
            Outcome.LOGIN_FAILED: State.CLOSED,
        },
    ),
    State.AUTHENTICATE: Rule(
        Reads.REQUESTS,
        accepts=frozenset({ApiKey.SASL_AUTHENTICATE}),
        during="SASL authentication",
        then={Outcome.LOGGED_IN: State.AUTHENTICATED, Outcome.LOGIN_FAILED: State.CLOSED},
    ),
    State.RAW_TOKENS: Rule(
        Reads.RAW_TOKENS, then={Outcome.LOGGED_IN: State.AUTHENTICATED, Outcome.LOGIN_FAILED: State.CLOSED}
    ),
    State.AUTHENTICATED: Rule(Reads.REQUESTS, frame_limit=REQUEST_MAX),
    State.CLOSED: Rule(Reads.NOTHING),
}


# --- the connection ------------------------------------------------------------------------------


class ServerConnection:
    """One connection's protocol state: feed it bytes, take events (see the module's docstring)."""

    def __init__(
        self,
        *,
        served: Mapping[int, tuple[int, int]],
        sasl: bool = False,
        enabled_mechanisms: tuple[str, ...] = (),
        credentials: Credentials | None = None,
        max_request_bytes: int = DEFAULT_MAX_FRAME_BYTES,
        max_receive_before_login: int = DEFAULT_SASL_MAX_RECEIVE_BYTES,
        principal: str = ANONYMOUS,
    ) -> None:
        """``served`` maps each api key the listener serves to its (min, max) version; ``principal`` is
        the client's before any SASL login (its certificate's subject on an SSL listener)."""
        self._served = served
        self._sasl = sasl
        self._enabled = enabled_mechanisms
        self._credentials = credentials
        self._limits = {
            SASL_MAX_RECEIVE: min(max_request_bytes, max_receive_before_login),
            REQUEST_MAX: max_request_bytes,
        }
        self._frames = FrameDecoder()
        self._eof = False
        self._state = State.HANDSHAKE if sasl else State.AUTHENTICATED
        self._mechanism: PlainServer | ScramServer | None = None
        self._closed: Close | None = None
        self._principal = principal
        self._token_authenticated = False

    @property
    def state(self) -> State:
        return self._state

    @property
    def authenticated(self) -> bool:
        return self._state is State.AUTHENTICATED

    @property
    def principal(self) -> str:
        """Who the client is: ``User:<name>`` once logged in."""
        return self._principal

    @property
    def token_authenticated(self) -> bool:
        """Whether the login used a delegation token (KIP-48): such a session may not manage tokens."""
        return self._token_authenticated

    @property
    def token_requester(self) -> str | None:
        """Who created the delegation token of a token login (for the log line), else None."""
        mechanism = self._mechanism
        return mechanism.token_requester if isinstance(mechanism, ScramServer) else None

    def receive_data(self, data: bytes) -> None:
        """Bytes from the peer, in order; ``b""`` when the peer has closed its side."""
        if self._closed is not None:
            return  # nothing more is read: do not hold on to it
        if data:
            self._frames.receive(data)
        else:
            self._eof = True

    def next_event(self) -> Event:
        """The next thing to do. After a :class:`Close`, the same :class:`Close` again."""
        if self._closed is not None:
            return self._closed
        rule = RULES[self._state]
        try:
            payload = self._frames.next_frame(self._limits[rule.frame_limit], rule.frame_limit)
        except FrameError as exc:
            return self._close(CloseKind.INVALID, str(exc))
        if payload is None:
            return self._end_of_data()
        if rule.reads is Reads.RAW_TOKENS:
            return self._raw_token(payload)
        return self._request(payload, rule)

    # --- frames ----------------------------------------------------------------------------------

    def _end_of_data(self) -> Event:
        if not self._eof:
            return NEED_DATA
        buffered = self._frames.buffered
        if not buffered:
            return self._close(CloseKind.PEER_CLOSED, "closed by the peer")
        return self._close(CloseKind.TRUNCATED, "truncated frame size" if buffered < 4 else "frame truncated")

    def _request(self, payload: bytes, rule: Rule) -> Event:
        try:
            api_key, api_version, _ = peek_header(payload)
        except InvalidRequestError as exc:
            return self._close(CloseKind.INVALID, str(exc))
        if rule.accepts is not None and api_key not in rule.accepts:
            # Kafka's IllegalSaslStateException text; the body is never decoded.
            return self._close(
                CloseKind.INVALID, f"Unexpected Kafka request of type {api_name(api_key)} during {rule.during}."
            )
        try:
            request = decode_request(payload, self._served)
        except ProtocolError as exc:
            # Kafka logs no payload: the api, version and size name the request; the reason is the
            # parser's own text (field names and counts), never the request's bytes.
            return self._close(
                CloseKind.INVALID, f"cannot parse {api_name(api_key)} v{api_version} ({len(payload)} bytes): {exc}"
            )
        if isinstance(request, Request):
            if request.api_key == ApiKey.SASL_HANDSHAKE:
                return self._sasl_handshake(request)
            if request.api_key == ApiKey.SASL_AUTHENTICATE:
                return self._sasl_authenticate(request)
        return request

    def _close(self, kind: CloseKind, reason: str, *, reply: bytes | None = None) -> Close:
        self._state = State.CLOSED
        self._closed = Close(kind, reason, reply)
        return self._closed

    def _advance(self, outcome: Outcome) -> None:
        self._state = RULES[self._state].then[outcome]  # a KeyError here is a bug in this module

    # --- SASL --------------------------------------------------------------------------------------

    def _sasl_handshake(self, request: Request) -> Event:
        mechanisms = list(self._enabled) if self._sasl else []
        if self._state is not State.HANDSHAKE:
            return self._reply(request, {"error_code": ErrorCode.illegal_sasl_state, "mechanisms": mechanisms})
        server = self._mechanism_server(request.body.mechanism)
        if server is None:
            self._advance(Outcome.LOGIN_FAILED)
            values = {"error_code": ErrorCode.unsupported_sasl_mechanism, "mechanisms": mechanisms}
            # The client's mechanism name stays out of the log: it may be a password sent by mistake.
            return self._login_failed("unsupported SASL mechanism", self._response(request, values))
        self._mechanism = server
        self._advance(Outcome.MECHANISM_SELECTED_V0 if request.api_version == 0 else Outcome.MECHANISM_SELECTED)
        return self._reply(request, {"error_code": ErrorCode.none, "mechanisms": mechanisms})

    def _mechanism_server(self, mechanism: str) -> PlainServer | ScramServer | None:
        if mechanism not in self._enabled or self._credentials is None:
            return None
        try:
            return mechanism_server(mechanism, self._credentials)
        except UnsupportedSaslMechanismError:
            return None

    def _sasl_authenticate(self, request: Request) -> Event:
        if self._state is not State.AUTHENTICATE:
            return self._reply(
                request,
                {"error_code": ErrorCode.illegal_sasl_state, "auth_bytes": b"", "session_lifetime_ms": 0,
                 "error_message": "Re-authentication is not enabled on this listener"},
            )  # fmt: skip
        try:
            challenge = self._step(request.body.auth_bytes)
        except SaslAuthenticationError as exc:
            values = {"error_code": ErrorCode.sasl_authentication_failed, "error_message": str(exc),
                      "auth_bytes": b"", "session_lifetime_ms": 0}  # fmt: skip
            return self._login_failed(self._failed_exchange(), self._response(request, values))
        values = {
            "error_code": ErrorCode.none,
            "error_message": None,
            "auth_bytes": challenge,
            "session_lifetime_ms": 0,
        }
        return self._reply(request, values)

    def _raw_token(self, token: bytes) -> Event:
        """KIP-43's v0 flow: SASL tokens framed by their size only. A failure closes with no reply."""
        try:
            challenge = self._step(token)
        except SaslAuthenticationError:
            return self._login_failed(f"{self._failed_exchange()} (raw SASL tokens)", None)
        return AuthenticationReply(frame(challenge))

    def _step(self, token: bytes) -> bytes:
        """One SASL step. Raises :class:`SaslAuthenticationError` on failure, and the login has failed."""
        assert self._mechanism is not None  # AUTHENTICATE and RAW_TOKENS follow a selected mechanism
        try:
            challenge = self._mechanism.step(token)
        except SaslAuthenticationError:
            self._advance(Outcome.LOGIN_FAILED)
            raise
        if self._mechanism.complete:
            # The authorization id: the user, or a delegation token's owner (Kafka's DefaultKafkaPrincipalBuilder).
            self._principal = f"User:{self._mechanism.authorization_id}"
            self._token_authenticated = isinstance(self._mechanism, ScramServer) and self._mechanism.token_authenticated
            self._advance(Outcome.LOGGED_IN)
        return challenge

    def _failed_exchange(self) -> str:
        assert self._mechanism is not None
        return f"SASL {self._mechanism.mechanism_name} exchange refused"

    def _login_failed(self, reason: str, reply: bytes | None) -> Close:
        return self._close(CloseKind.AUTHENTICATION_FAILED, reason, reply=reply)

    def _reply(self, request: Request, values: dict[str, Any]) -> AuthenticationReply:
        return AuthenticationReply(self._response(request, values))

    @staticmethod
    def _response(request: Request, values: dict[str, Any]) -> bytes:
        cls = response_class(request.api_key, request.api_version)
        return encode_response(request.api_key, request.api_version, request.correlation_id, build(cls, values))
