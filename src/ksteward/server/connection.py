"""One client connection's shell: the socket, the idle timer, the close delay, dispatch and logging.

The protocol itself (frames, the size limits, the SASL states and which requests each allows, the SASL
replies) is :class:`ksteward.protocol.connection.ServerConnection`, fed the bytes read here. Requests on one
connection are handled one at a time, in order, as Kafka mutes a channel while its request is in flight;
connections are independent tasks, so they are served concurrently. A bad frame or an undecodable request
closes this connection only, and is logged with its api key, version, size and peer, never its bytes.

A connection that stays idle for ``connections.max.idle.ms`` (no complete request, or half a frame that
never completes) is closed, and so is one that has not authenticated within that time of connecting.
After a failed login the close waits ``connection.failed.authentication.delay.ms`` (KIP-306).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from random import getrandbits
from time import monotonic, perf_counter
from typing import Any

from kio.schema.errors import ErrorCode

from ksteward.broker.api_versions import unsupported_version_response
from ksteward.broker.config_forwarding import (
    CONFIG_ALTER_API_KEYS,
    forwarded_payload,
    reassemble,
    remaining_request,
)
from ksteward.broker.configs import preprocess_alter
from ksteward.broker.context import ApiTable, AuthorizationCounts, Node, RequestContext
from ksteward.broker.delegation_tokens import BROKER_PRECHECKS
from ksteward.broker.forwarding import FORWARDABLE_API_KEYS, ClientRequest, Completion, Outcome
from ksteward.controller.result import NotControllerError
from ksteward.protocol.addresses import java_host_address
from ksteward.protocol.apis import ApiKey, api_name
from ksteward.protocol.build import build
from ksteward.protocol.codec import (
    PreEncoded,
    Request,
    UnsupportedApiVersionsRequest,
    encode_response,
    response_class,
)
from ksteward.protocol.connection import (
    ANONYMOUS,
    DEFAULT_SASL_MAX_RECEIVE_BYTES,
    AuthenticationReply,
    Close,
    CloseKind,
    Event,
    NeedData,
    Rule,
    ServerConnection,
)
from ksteward.protocol.error_responses import error_values
from ksteward.protocol.errors import ProtocolError
from ksteward.protocol.framing import FrameParts, frame_bytes
from ksteward.protocol.read_your_writes import UNTAGGED_READS, response_offset, with_offset_tag
from ksteward.protocol.sasl import Credentials
from ksteward.safe_log import log_failure
from ksteward.server.metrics.recorders import (
    FOLD_EVERY,
    NO_RUN,
    TIMED_GAP_BITS,
    TIMED_GAP_MIN,
    ListenerStats,
    RequestMetrics,
    error_codes,
)
from ksteward.server.tls import subject_dn

log = logging.getLogger(__name__)

DEFAULT_IDLE_TIMEOUT_S = 600.0  # Kafka's connections.max.idle.ms
_READ_BYTES = 65_536  # at most this much is read ahead of the frame being served
_WRITE_SLICE = 1 << 20  # a larger response is handed to the transport a slice at a time, waiting for it to drain


#: A broker-only node's forwarding path (``ControllerChannel.forward``): the client's request in, its end out.
Forward = Callable[[ClientRequest], Awaitable[Completion]]


class _PayloadKeepingConnection(ServerConnection):
    """Keeps the bytes of the last request (header and body as the client sent them): a forwarded request
    travels in its Envelope unchanged (Kafka's ``ForwardingManager`` sends the client's request buffer)."""

    last_payload: bytes = b""

    def _request(self, payload: bytes, rule: Rule) -> Event:
        self.last_payload = payload
        return super()._request(payload, rule)


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
    forward: Forward | None = None  # set on a broker-only node's client listeners: mutations go to the controller
    # Set when the node serves metrics (metrics.port): what this listener's connections record.
    request_metrics: RequestMetrics | None = None
    socket_metrics: ListenerStats | None = None
    authorizations: AuthorizationCounts | None = None

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
        self.protocol = _PayloadKeepingConnection(
            served=listener.table.served,
            sasl=listener.sasl,
            enabled_mechanisms=listener.enabled_mechanisms,
            credentials=listener.credentials,
            max_request_bytes=listener.max_frame_bytes,
            max_receive_before_login=listener.max_receive_before_auth,
            principal=principal,
        )
        self._connected_at = self._last_active = 0.0  # event-loop times, set when serving starts
        self._busy = False
        self._idle_timer: asyncio.TimerHandle | None = None
        # For the request metrics: the error codes of the last response, and its wait for the controller.
        self._codes: tuple[int, ...] = ()
        self._remote_s = 0.0
        self._token_login_logged = False
        self._authenticated = False  # counted once in socket-server-metrics' successful-authentication-total

    async def serve(self) -> None:
        loop = asyncio.get_running_loop()
        self._connected_at = self._last_active = loop.time()
        self._idle_timer = loop.call_at(self._connected_at + self.listener.idle_timeout_s, self._check_idle)
        sockets = self.listener.socket_metrics
        metrics = self.listener.request_metrics
        pending = metrics.pending if metrics is not None else []
        run = NO_RUN  # this connection's run of like requests (RequestRun): counting one is an addition
        run_key, run_version = -1, -1  # run's, kept here too: comparing locals reads no attributes
        run_codes: tuple[int, ...] = ()
        untimed = 1  # requests until the next timed one (TIMED_GAP_MIN, TIMED_GAP_BITS); only moves with metrics on
        if sockets is not None:
            sockets.created += 1
        try:
            while True:
                event = self.protocol.next_event()
                if isinstance(event, NeedData):
                    self.protocol.receive_data(await self.reader.read(_READ_BYTES))
                    continue
                if isinstance(event, Close):
                    if sockets is not None and event.kind is CloseKind.AUTHENTICATION_FAILED:
                        sockets.failed_authentications += 1
                    await self._close(event)
                    return
                self._busy = True  # a request being served is not idleness; a reader that never reads is
                started = 0.0
                if metrics is not None:
                    untimed -= 1
                    # Timed: one in about 48, and one of another type than the last (each type has timed ones).
                    if untimed <= 0 or type(event) is not Request or event.api_key != run_key:
                        untimed = 0
                        started = monotonic()  # loop.time()'s clock: see sent below
                if isinstance(event, AuthenticationReply):
                    response: bytes | FrameParts | None = event.frame
                    self._note_token_login()
                else:
                    response = await self._serve(event)
                self._busy = False
                if response is None:  # a forwarded request the controller could not parse (KIP-590)
                    log.info("closing connection from %s on %s: the controller refused a forwarded request's version",
                             self.peer, self.listener.name)  # fmt: skip
                    return
                handled = 0.0 if untimed else monotonic()
                if type(response) is bytes and len(response) <= _WRITE_SLICE:
                    self.writer.write(response)
                    await self.writer.drain()
                else:
                    await self._write_in_slices(response)
                self._last_active = loop.time()
                if metrics is not None:  # Kafka's RequestChannel.updateRequestMetrics (RequestMetrics.fold)
                    if type(event) is Request:
                        codes = self._codes
                        self._codes = ()
                        if codes == run_codes and event.api_key == run_key and event.api_version == run_version:
                            run.count += 1
                        else:
                            run_key, run_version, run_codes = event.api_key, event.api_version, codes
                            run = metrics.next_run(run, run_key, run_version, codes)
                        if not untimed:
                            pending.append((run_key, run_version, codes, len(self.protocol.last_payload) + 4,
                                            started, handled, self._last_active, self._remote_s))  # fmt: skip
                            untimed = TIMED_GAP_MIN + getrandbits(TIMED_GAP_BITS)  # 32-63, in C
                            if len(pending) >= FOLD_EVERY:
                                metrics.fold()
                        if self._remote_s:  # every forwarded request's wait for the controller
                            metrics.remote_waits.append((run_key, self._remote_s))
                            self._remote_s = 0.0
                    elif type(event) is UnsupportedApiVersionsRequest:
                        self._record_unsupported(metrics, started, handled, self._last_active)
                if sockets is not None and not self._authenticated and self.protocol.authenticated:
                    self._authenticated = True  # after the reply that completed the login, or the first one
                    sockets.successful_authentications += 1
        except ProtocolError as exc:  # from a handler: a request Kafka would fail to parse
            log.warning("closing connection from %s on %s: %s", self.peer, self.listener.name, exc)
        except ConnectionError:
            pass
        except Exception as exc:
            what = f"closing connection from {self.peer} on {self.listener.name} after an internal error"
            log_failure(log, what, exc, stack_level=logging.ERROR)
        finally:
            run.open = False  # its requests are counted at the next fold, and it is then dropped
            if sockets is not None:
                sockets.closed += 1
            if self._idle_timer is not None:
                self._idle_timer.cancel()
            self.writer.close()

    async def _write_in_slices(self, response: bytes | FrameParts) -> None:
        """A large response (Metadata of 100,000 topics is 12 MiB) written about ``_WRITE_SLICE`` bytes at a time,
        waiting for the transport to drain and yielding to the loop in between (a loopback socket may take it all
        at once, and ``drain`` then returns without a yield): one copy (or one join of its parts) of the whole
        frame held the loop for tens of ms."""
        parts: Iterable[bytes | memoryview]
        if isinstance(response, bytes):  # one bytes object: its slices, each joined (copied) alone
            view = memoryview(response)
            parts = (view[start : start + _WRITE_SLICE] for start in range(0, len(view), _WRITE_SLICE))
        else:
            parts = response
        batch: list[bytes | memoryview] = []
        size = 0
        for part in parts:
            batch.append(part)
            size += len(part)
            if size >= _WRITE_SLICE:
                self.writer.write(b"".join(batch))
                await self.writer.drain()
                await asyncio.sleep(0)
                batch, size = [], 0
        self.writer.write(b"".join(batch))
        await self.writer.drain()

    def _note_token_login(self) -> None:
        """Log a delegation-token login once, with the token's requester (the session is its owner)."""
        if self._token_login_logged or not self.protocol.token_authenticated:
            return
        self._token_login_logged = True
        log.info("%s on %s logged in as %s with a delegation token requested by %s", self.peer,
                 self.listener.name, self.protocol.principal, self.protocol.token_requester)  # fmt: skip

    def _record_unsupported(self, metrics: RequestMetrics, started: float, handled: float, sent: float) -> None:
        """An ApiVersions request above the served versions, answered with UNSUPPORTED_VERSION in v0 (KIP-511)."""
        codes = (int(ErrorCode.unsupported_version),)
        size = len(self.protocol.last_payload) + 4  # with the size prefix, as Kafka's RequestBytes
        metrics.add_one((int(ApiKey.API_VERSIONS), 0, codes, size, started, handled, sent, 0.0))

    def _keep_for_metrics(self, response: Any) -> None:
        """The response's error codes (Kafka's ``errorCounts``) for the request metrics, when they are on."""
        if self.listener.request_metrics is not None:
            self._codes = response.error_codes if isinstance(response, PreEncoded) else error_codes(response)

    async def _close(self, close: Close) -> None:
        """Log why, write the last reply if there is one, and wait out KIP-306's delay after a failed login."""
        peer, listener = self.peer, self.listener.name
        if close.kind is CloseKind.AUTHENTICATION_FAILED:
            log.info("authentication failed for %s on %s: %s", peer, listener, close.reason)
        elif close.kind is CloseKind.TRUNCATED:
            log.info("closing connection from %s on %s: %s", peer, listener, close.reason)
        elif close.kind is CloseKind.INVALID:
            log.warning("closing connection from %s on %s: %s", peer, listener, close.reason)
        if close.reply is not None:
            self.writer.write(close.reply)
            await self.writer.drain()
        if close.kind is CloseKind.AUTHENTICATION_FAILED:
            # Clients that drop bytes arriving together with a close would otherwise miss the error.
            await asyncio.sleep(self.listener.failed_authentication_delay_s)

    def _check_idle(self) -> None:
        """Close the connection once it has been idle, or unauthenticated, for ``connections.max.idle.ms``
        (Kafka's ``Selector`` idle expiry); otherwise look again at the next deadline. A request being
        served is not idleness."""
        loop = asyncio.get_running_loop()
        timeout = self.listener.idle_timeout_s
        authenticated = self.protocol.authenticated
        deadline = self._last_active + timeout
        if not authenticated:
            deadline = min(deadline, self._connected_at + timeout)
        if self._busy or loop.time() < deadline:
            next_check = max(deadline, loop.time() + timeout / 10) if self._busy else deadline
            self._idle_timer = loop.call_at(next_check, self._check_idle)
            return
        why = "idle" if authenticated else "not authenticated"
        log.info("closing connection from %s on %s: %s for connections.max.idle.ms (%d ms)", self.peer,
                 self.listener.name, why, round(timeout * 1000))  # fmt: skip
        self.writer.close()

    async def _serve(self, request: Request | UnsupportedApiVersionsRequest) -> bytes | FrameParts | None:
        """Run the request's handler and encode its response; None closes the connection."""
        if isinstance(request, UnsupportedApiVersionsRequest):
            response = unsupported_version_response(self.listener.table, self.node)
            return encode_response(ApiKey.API_VERSIONS, 0, request.correlation_id, response)
        if request.dropped_tags:
            log.debug("skipped %d unknown tagged fields from %s", request.dropped_tags, self.peer)
        key = request.api_key
        # Only an authenticated client may make a request wait (a login must not park the connection).
        offset = request.min_offset if self.protocol.authenticated else None
        if offset is not None and not await self._applied(offset):
            return self._answer_every_entry(request, ErrorCode.request_timed_out)
        forward = self.listener.forward
        ctx = RequestContext(
            principal=self.protocol.principal,
            client_host=self.client_host,
            listener=self.listener.name,
            security_protocol=self.listener.security_protocol,
            client_id=request.client_id,
            api_key=key,
            api_version=request.api_version,
            api_table=self.listener.table,
            correlation_id=request.correlation_id,
            authorizations=self.listener.authorizations,
            token_authenticated=self.protocol.token_authenticated,
        )
        if forward is not None and key in FORWARDABLE_API_KEYS and key not in CONFIG_ALTER_API_KEYS:
            precheck = BROKER_PRECHECKS.get(key)
            refusal = None if precheck is None else precheck(self.node, ctx, request.body)
            if refusal is None:
                return await self._forward(forward, request)
            self._keep_for_metrics(refusal)  # refused here, as Kafka's KafkaApis refuses before forwarding
            return encode_response(key, request.api_version, request.correlation_id, refusal)
        committed = None  # the controller's offset, when a broker rewrote a forwarded config alteration
        try:
            if forward is not None and key in CONFIG_ALTER_API_KEYS:
                forwarded = await self._forward_config_alter(forward, ctx, request)
                if not isinstance(forwarded, tuple):
                    return forwarded  # the client's request went on unchanged (or None: close the connection)
                response, committed = forwarded
            else:
                spec = self.listener.table.spec(key)
                assert spec.handler is not None  # only the SASL APIs have none, and the protocol answers those
                response = await spec.handler(self.node, ctx, request.body)
        except ProtocolError:
            raise  # a request Kafka would fail to parse: the connection is closed, as Kafka closes it
        except NotControllerError:
            values = error_values(key, request.body, ErrorCode.not_controller)
            if values is None:
                raise
            response = build(response_class(key, request.api_version), values)
        except Exception as exc:
            values = error_values(key, request.body)
            if values is None:
                raise
            # As Kafka does: log it, and answer every entry of the request with UNKNOWN_SERVER_ERROR.
            what = f"{api_name(key)} v{ctx.api_version} from {self.peer} failed; answering UNKNOWN_SERVER_ERROR"
            log_failure(log, what, exc, stack_level=logging.ERROR)
            response = build(response_class(key, request.api_version), values)
        self._keep_for_metrics(response)
        if request.min_offset is None:
            committed = None  # the client did not ask for the offset (ksteward.protocol.read_your_writes)
        elif forward is None and key in FORWARDABLE_API_KEYS and key not in UNTAGGED_READS:
            # Answered here as the controller, after the commit: the offset a client may read after, on any
            # broker (ksteward.protocol.read_your_writes).
            committed = self.node.image.offset
        if isinstance(response, PreEncoded):
            if committed is None or not response_class(key, request.api_version).__header_schema__.__flexible__:
                return response.frame
            return with_offset_tag(frame_bytes(response.frame), committed)
        return encode_response(key, request.api_version, request.correlation_id, response, metadata_offset=committed)

    async def _applied(self, offset: int) -> bool:
        """Wait for this node to apply the metadata log up to ``offset`` (a read-your-writes request); False
        after ``ksteward.read.your.writes.timeout.ms``."""
        try:
            async with asyncio.timeout(self.node.config.read_your_writes_timeout_ms / 1000):
                await self.node.wait_until_applied(offset)
        except TimeoutError:
            return False
        return True

    def _answer_every_entry(self, request: Request, code: ErrorCode) -> bytes | None:
        """Every entry of the request answered with ``code``; None (close) for an API without entries."""
        values = error_values(request.api_key, request.body, code)
        if values is None:
            log.info("closing connection from %s: %s v%d timed out waiting for metadata offset %s", self.peer,
                     api_name(request.api_key), request.api_version, request.min_offset)  # fmt: skip
            return None
        response = build(response_class(request.api_key, request.api_version), values)
        self._keep_for_metrics(response)
        return encode_response(request.api_key, request.api_version, request.correlation_id, response)

    async def _forward(self, forward: Forward, request: Request) -> bytes | None:
        """Send the request to the controller in an Envelope and return what the client gets (Kafka's
        ``ForwardingManager.forwardRequest``): the controller's response, an error for every entry, or None
        (UNSUPPORTED_VERSION from the controller: the client reconnects and re-reads ApiVersions)."""
        client = ClientRequest(
            payload=self.protocol.last_payload,
            api_key=request.api_key,
            api_version=request.api_version,
            correlation_id=request.correlation_id,
            body=request.body,
            principal=self.protocol.principal,
            client_host=self.client_host,
            token_authenticated=self.protocol.token_authenticated,
        )
        started = perf_counter()
        completion = await forward(client)
        self._remote_s = perf_counter() - started
        self._keep_for_metrics(completion.response)
        return completion.frame(with_offset=request.min_offset is not None)

    async def _forward_config_alter(
        self, forward: Forward, ctx: RequestContext, request: Request
    ) -> tuple[Any, int | None] | bytes | None:
        """AlterConfigs / IncrementalAlterConfigs on a broker-only node (Kafka's ``KafkaApis``): this node's
        preprocess, then only the resources it left go to the controller, in a new body under the client's header;
        the answer has one entry per original resource, in order, with the controller's committed offset when it
        gave one. None: close the connection (the controller refused the version).

        When the preprocess answered no resource, the new body would be the client's and the reassembled answer
        the controller's (the same entries, in the same order): the client's bytes go on unchanged, as any other
        forwarded request's, and the controller's answer comes back as it is (the frame, bytes)."""
        incremental = request.api_key == ApiKey.INCREMENTAL_ALTER_CONFIGS
        preprocessed = preprocess_alter(self.node, ctx, request.body, incremental=incremental)
        if preprocessed and all(outcome is None for outcome in preprocessed):
            return await self._forward(forward, request)
        remaining = remaining_request(request.body, preprocessed)
        forwarded, offset = None, None
        if remaining is not None:
            payload = forwarded_payload(
                request.api_key, request.api_version, request.correlation_id, request.client_id, remaining
            )
            client = ClientRequest(
                payload=payload,
                api_key=request.api_key,
                api_version=request.api_version,
                correlation_id=request.correlation_id,
                body=remaining,
                principal=self.protocol.principal,
                client_host=self.client_host,
                token_authenticated=self.protocol.token_authenticated,
            )
            started = perf_counter()
            completion = await forward(client)
            self._remote_s = perf_counter() - started
            if completion.outcome is Outcome.CLOSE_CONNECTION:
                return None
            forwarded = completion.response
            if completion.response_data is not None:
                offset = response_offset(completion.response_data)
        response = reassemble(request.api_key, request.api_version, request.body, preprocessed, forwarded)
        return response, offset
