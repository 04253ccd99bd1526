"""The broker's connection to the controller for forwarded requests: Kafka's "forwarding"
``NodeToControllerChannelManager``, as an asyncio shell around :class:`ksteward.broker.forwarding.ForwardingManager`.

One task sends the manager's envelopes one at a time over one connection to the controller listener and
feeds back what happens: a response (:meth:`ForwardingManager.on_response`), a lost connection or a
per-attempt timeout (``on_disconnect``: the request is retried at the front of the queue), a failed login
or a controller that does not serve Envelope v0 (``on_failure``: UNKNOWN_SERVER_ERROR). NOT_CONTROLLER
drops the connection, and the next attempt asks ``controller()`` for the address again: at once if the Raft
leader moved, else after ``refused_backoff_s``.

A connection starts with ApiVersions (the controller's ranges become
``ForwardingManager.controller_api_versions``, from which the broker's own ApiVersions are computed),
then a SASL PLAIN login when ``sasl_plain`` is given (the controller listener is SASL_PLAINTEXT), as
Kafka's ``NetworkClient`` does before the first request. Each attempt waits at most ``request_timeout_s``
for its answer (Kafka: ``min(controller.socket.timeout.ms, 60000)``). With no controller address known,
or after a failed connection, it waits ``backoff_s`` before trying again; the 60 s retry timeout keeps
running meanwhile.

Usage (a test, or the broker once it exists); :func:`controller_login` reads the login from the node's
configuration as Kafka does::

    channel = ControllerChannel(("127.0.0.1", 9093), sasl_plain=controller_login(config))
    channel.start()
    completion = await channel.forward(client_request)   # a ksteward.broker.forwarding.Completion
    await channel.close()
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar

from kio.schema.envelope.v0 import EnvelopeRequest, EnvelopeResponse
from kio.schema.errors import ErrorCode

from ksteward.broker.forwarding import ClientRequest, Completion, ForwardingManager, OutboundEnvelope
from ksteward.configs.server_config import ConfigError, ServerConfig
from ksteward.protocol.apis import ApiKey
from ksteward.protocol.build import build
from ksteward.protocol.codec import decode_response, encode_request, request_class
from ksteward.protocol.errors import ProtocolError
from ksteward.protocol.fast_envelope import ENVELOPE_VERSION, envelope_request, read_envelope_response
from ksteward.protocol.framing import DEFAULT_MAX_FRAME_BYTES, check_frame_size, frame
from ksteward.protocol.sasl import PLAIN_MECHANISM, jaas_config_for, parse_server_jaas_config
from ksteward.server.metrics.histogram import Histogram
from ksteward.server.tasks import cancel_and_wait

log = logging.getLogger(__name__)

Address = tuple[str, int]
T = TypeVar("T")
DEFAULT_REQUEST_TIMEOUT_S = 30.0  # Kafka's controller.socket.timeout.ms default
DEFAULT_BACKOFF_S = 0.1  # Kafka's NodeToControllerRequestThread polls every 100 ms with no controller known
DEFAULT_REFUSED_BACKOFF_S = 0.05  # Kafka's reconnect.backoff.ms: the wait to reconnect to a node that disconnected
_LEADER_CHECK_S = 0.1  # how often an attempt in flight checks whether the Raft leader moved
_MOVE_CHECK_S = 0.01  # how often a back-off after NOT_CONTROLLER checks whether the Raft leader moved


def controller_login(config: ServerConfig) -> tuple[str, str] | None:
    """The SASL PLAIN login a broker uses toward the controller, as Kafka's forwarding channel picks it:
    the first of ``controller.listener.names``, its protocol in ``listener.security.protocol.map``, the
    mechanism ``sasl.mechanism.controller.protocol`` (Kafka's default GSSAPI), and the ``username`` and
    ``password`` options of that listener's JAAS entry
    (``listener.name.<listener>.<mechanism>.sasl.jaas.config``). None for a PLAINTEXT controller listener.
    Raises :class:`ConfigError` for what this channel cannot do (SSL, another mechanism, no credentials)."""
    if not config.controller_listener_names:
        raise ConfigError("controller.listener.names is empty: there is no listener to reach the controller on")
    listener = config.controller_listener_names[0]
    protocol = _protocol_of(config, listener)
    if protocol == "PLAINTEXT":
        return None
    if protocol != "SASL_PLAINTEXT":
        raise ConfigError(f"the controller listener {listener} uses {protocol}; forwarding supports PLAINTEXT "
                          "and SASL_PLAINTEXT")  # fmt: skip
    mechanism = config.static.get("sasl.mechanism.controller.protocol", "GSSAPI").strip().upper()
    if mechanism != PLAIN_MECHANISM:
        raise ConfigError(f"sasl.mechanism.controller.protocol is {mechanism}; forwarding supports PLAIN")
    text = jaas_config_for(config.static, listener, mechanism)
    if text is None:
        raise ConfigError(f"listener.name.{listener.lower()}.plain.sasl.jaas.config is not set")
    try:
        options = parse_server_jaas_config(text).options
    except ValueError as exc:
        raise ConfigError(f"listener.name.{listener.lower()}.plain.sasl.jaas.config: {exc}") from None
    if "username" not in options or "password" not in options:
        raise ConfigError(f"listener.name.{listener.lower()}.plain.sasl.jaas.config has no username and password")
    return options["username"], options["password"]


def _protocol_of(config: ServerConfig, listener: str) -> str:
    """The listener's security protocol: from its endpoint if this node has one, else from the map (KRaft maps
    an unmapped controller listener to PLAINTEXT)."""
    for endpoint in config.listeners:
        if endpoint.name == listener:
            return endpoint.security_protocol
    for entry in config.static.get("listener.security.protocol.map", "").split(","):
        name, _, protocol = entry.partition(":")
        if name.strip().upper() == listener:
            return protocol.strip().upper()
    return "PLAINTEXT"


class ControllerCallError(Exception):
    """The controller's answer could not be read, or it refused the login: the connection is dropped."""


class ControllerLoginError(Exception):
    """The SASL login was refused: the request gets UNKNOWN_SERVER_ERROR, as on Kafka's authentication failure."""


#: What a failed call to the controller raises: the caller drops the connection and tries again later.
CALL_ERRORS = (OSError, ConnectionError, EOFError, ControllerCallError, ControllerLoginError, TimeoutError)


class ControllerConnection:
    """One connection to a controller listener: length-prefixed frames, one call at a time."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, client_id: str) -> None:
        self._reader = reader
        self._writer = writer
        self._client_id = client_id
        self._correlation = itertools.count(1)

    async def call(self, api_key: int, version: int, body: Any) -> Any:
        """Send one request (``body``: a kio entity or a dict of its values) and return the response body."""
        correlation_id = next(self._correlation)
        if isinstance(body, Mapping):
            body = build(request_class(api_key, version), body)
        payload = await self._exchange(encode_request(api_key, version, correlation_id, self._client_id, body))
        return self._decoded(api_key, version, correlation_id, payload)

    async def call_envelope(self, envelope: EnvelopeRequest) -> Any:
        """``call`` for an Envelope v0, written and read without kio when it has the plain shape
        (``protocol.fast_envelope``); the EnvelopeResponse."""
        correlation_id = next(self._correlation)
        request = envelope_request(correlation_id, self._client_id, envelope.request_data,
                                   envelope.request_principal, envelope.client_host_address)  # fmt: skip
        payload = await self._exchange(request)
        plain = read_envelope_response(payload)
        if plain is None:
            return self._decoded(ApiKey.ENVELOPE, ENVELOPE_VERSION, correlation_id, payload)
        answered_id, data, code = plain
        self._check_correlation(answered_id, correlation_id)
        try:
            return EnvelopeResponse(response_data=data, error_code=ErrorCode(code))
        except ValueError:
            raise ControllerCallError(f"unreadable response to api {ApiKey.ENVELOPE}: error code {code}") from None

    async def _exchange(self, request: bytes) -> bytes:
        """Write one request (header and body) and read the response's header and body."""
        self._writer.write(frame(request))
        await self._writer.drain()
        size = int.from_bytes(await self._reader.readexactly(4), "big", signed=True)
        try:
            check_frame_size(size, DEFAULT_MAX_FRAME_BYTES, "the response size limit")
        except ProtocolError as exc:
            raise ControllerCallError(str(exc)) from None
        return await self._reader.readexactly(size)

    def _decoded(self, api_key: int, version: int, correlation_id: int, payload: bytes) -> Any:
        try:
            response = decode_response(api_key, version, payload)
        except ProtocolError as exc:
            raise ControllerCallError(f"unreadable response to api {api_key}: {exc}") from None
        self._check_correlation(response.correlation_id, correlation_id)
        return response.body

    @staticmethod
    def _check_correlation(answered: int, expected: int) -> None:
        if answered != expected:
            raise ControllerCallError(f"response for correlation id {answered}, expected {expected}")

    async def close(self) -> None:
        self._writer.close()
        with contextlib.suppress(OSError, ConnectionError):
            await self._writer.wait_closed()


Connect = Callable[[Address], Awaitable[ControllerConnection]]


async def answer_unless_leader_moves(call: Awaitable[T], timeout_s: float, moved: Callable[[], bool]) -> T:
    """``call``'s answer, within ``timeout_s`` (TimeoutError after that). A controller that stopped (SIGSTOP, a
    partition) keeps its connection open, so every ``_LEADER_CHECK_S`` ``moved()`` is asked whether the Raft
    leader is now elsewhere; once it is, the call is abandoned with ConnectionError and the caller retries at
    the new leader, without waiting out the timeout."""
    loop = asyncio.get_running_loop()
    abandoned = False
    check: asyncio.TimerHandle | None = None

    def check_leader() -> None:
        nonlocal abandoned, check
        if moved():
            abandoned = True
            deadline.reschedule(loop.time())  # ends the wait now, as a timeout
        else:
            check = loop.call_later(_LEADER_CHECK_S, check_leader)

    try:
        async with asyncio.timeout(timeout_s) as deadline:
            check = loop.call_later(_LEADER_CHECK_S, check_leader)
            try:
                return await call
            finally:
                check.cancel()
    except TimeoutError:
        if abandoned:
            raise ConnectionError("the Raft leader moved while a request was in flight") from None
        raise


class ActiveControllerLink:
    """A broker's own requests to the active controller (registration and heartbeats, AlterPartition) over one
    connection. A new Raft leader (``controller()`` names another address) moves the connection there first, as
    Kafka's ``NodeToControllerChannelManager`` targets the current leader. A call that fails or times out, or
    that is answered NOT_CONTROLLER (Kafka disconnects and forgets the controller), drops the connection: the
    next call connects to the address ``controller()`` gives then. ``timeout_s`` bounds each call, and a call
    in flight (or its connection being set up) is abandoned once ``controller()`` names another address: a
    heartbeat sent to a controller that stopped (SIGSTOP) goes to the new leader as soon as the broker knows
    it, not after ``timeout_s``, so the fresh session the new leader gave the broker does not run out."""

    def __init__(self, controller: Callable[[], Address], connect: Connect, *, timeout_s: float = 5.0) -> None:
        self._controller = controller
        self._connect = connect
        self._timeout_s = timeout_s
        self._connection: ControllerConnection | None = None
        self._address: Address | None = None

    async def call(self, api_key: int, version: int, body: Any) -> Any | None:
        """The response body; None when the call failed (logged at debug level, without the request)."""
        try:
            address = self._controller()
            if self._connection is not None and address != self._address:
                await self.close()
            moved = lambda: self._controller() != address  # noqa: E731 - the Raft leader is elsewhere now
            if self._connection is None:
                self._connection = await answer_unless_leader_moves(self._connect(address), self._timeout_s, moved)
                self._address = address
            response = await answer_unless_leader_moves(
                self._connection.call(api_key, version, body), self._timeout_s, moved
            )
        except CALL_ERRORS as exc:
            log.debug("%s to the controller failed (%s)", ApiKey(api_key).name, type(exc).__name__)
            await self.close()
            return None
        if response.error_code == ErrorCode.not_controller:
            await self.close()
        return response

    async def close(self) -> None:
        connection, self._connection = self._connection, None
        if connection is not None:
            await connection.close()


class ControllerChannel:
    """Forward requests to the controller through one connection (see the module docstring)."""

    def __init__(
        self,
        controller: Address | Callable[[], Address | None],
        manager: ForwardingManager | None = None,
        *,
        sasl_plain: tuple[str, str] | None = None,
        client_id: str = "ksteward-forwarding",
        request_timeout_s: float = DEFAULT_REQUEST_TIMEOUT_S,
        backoff_s: float = DEFAULT_BACKOFF_S,
        refused_backoff_s: float = DEFAULT_REFUSED_BACKOFF_S,
    ) -> None:
        self._controller = controller if callable(controller) else (lambda: controller)
        self.manager = manager or ForwardingManager()
        self._sasl_plain = sasl_plain
        self._client_id = client_id
        self._request_timeout_s = request_timeout_s
        self._backoff_s = backoff_s
        self._refused_backoff_s = refused_backoff_s
        self._connection: ControllerConnection | None = None
        self._address: Address | None = None  # where ``_connection`` goes
        self._unreachable = False  # the last connection attempt failed
        self._refused_by: Address | None = None  # the controller whose last answer was NOT_CONTROLLER
        self._waiting: dict[int, asyncio.Future[Completion]] = {}
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        # KIP-938's ForwardingManager QueueTimeMs and RemoteTimeMs, for the metrics endpoint: the ms a request
        # waited before its first send, and the ms from sending an envelope to the controller's answer.
        self.queue_time_ms = Histogram()
        self.remote_time_ms = Histogram()
        self._submitted: dict[int, float] = {}  # request id -> loop time, until its first send or its end

    # --- the broker's side -----------------------------------------------------------------------------

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run(), name="ksteward-forwarding")

    async def forward(self, request: ClientRequest) -> Completion:
        """Queue ``request`` behind any others and wait for its end (a response, an error or a close)."""
        loop = asyncio.get_running_loop()
        request_id = self.manager.submit(request, loop.time())
        self._submitted[request_id] = loop.time()
        future: asyncio.Future[Completion] = loop.create_future()
        self._waiting[request_id] = future
        self._wake.set()
        return await future

    async def close(self) -> None:
        """Stop sending; requests still waiting fail with ConnectionError (the broker is shutting down)."""
        await cancel_and_wait(self._task)
        self._task = None
        await self._drop_connection()
        for future in self._waiting.values():
            if not future.done():
                future.set_exception(ConnectionError("the forwarding channel is closed"))
        self._waiting.clear()

    # --- the sending task ------------------------------------------------------------------------------

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            outbound = self.manager.next_envelope(loop.time())
            self._settle()
            if outbound is None:
                await self._idle(loop)
                continue
            try:
                await self._deliver(outbound)
            except Exception as exc:  # a bug here must not strand the request: it is retried
                log.error("forwarding failed unexpectedly: %s", type(exc).__name__)
                await self._drop_connection()
                self.manager.on_disconnect(outbound.attempt)
                await asyncio.sleep(self._backoff_s)
            self._settle()

    async def _idle(self, loop: asyncio.AbstractEventLoop) -> None:
        """Wait for a new request, or until the oldest waiting one times out."""
        self._wake.clear()
        deadline = self.manager.next_deadline()
        timeout = None if deadline is None else max(deadline - loop.time(), 0.0)
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout):  # not wait_for: no task per wait
                await self._wake.wait()

    async def _deliver(self, outbound: OutboundEnvelope) -> None:
        try:
            connection = await self._connect()
        except ControllerLoginError as exc:
            log.error("cannot log in to the controller: %s", exc)
            self.manager.on_failure(outbound.attempt)
            await asyncio.sleep(self._backoff_s)
            return
        except (OSError, ConnectionError, EOFError, ControllerCallError, TimeoutError) as exc:
            # Once per outage at INFO: the retries come every backoff_s until the controller is back.
            level = logging.DEBUG if self._unreachable else logging.INFO
            self._unreachable = True
            log.log(level, "no connection to the controller (%s); retrying", type(exc).__name__)
            self.manager.on_disconnect(outbound.attempt)
            await asyncio.sleep(self._backoff_s)
            return
        versions = self.manager.controller_api_versions or {}
        low, high = versions.get(ApiKey.ENVELOPE, (0, -1))
        if not low <= ENVELOPE_VERSION <= high:  # Kafka's version mismatch: the client gets UNKNOWN_SERVER_ERROR
            log.error("the controller does not serve Envelope v%d", ENVELOPE_VERSION)
            self.manager.on_failure(outbound.attempt)
            return
        loop = asyncio.get_running_loop()
        sent = loop.time()
        submitted = self._submitted.pop(outbound.request_id, None)
        if submitted is not None:
            self.queue_time_ms.observe((sent - submitted) * 1000)
        try:
            response = await self._await_answer(connection, outbound.envelope)
            self.remote_time_ms.observe((loop.time() - sent) * 1000)
        except (OSError, ConnectionError, EOFError, ControllerCallError, TimeoutError) as exc:
            log.info("lost the controller connection with a request in flight (%s); retrying", type(exc).__name__)
            await self._drop_connection()
            self.manager.on_disconnect(outbound.attempt)
            return
        if not self.manager.on_response(outbound.attempt, response):
            self._refused_by = None
            return
        address = self._address
        # Once per controller at INFO: a voter that resigned refuses until the next election names another.
        level = logging.DEBUG if address == self._refused_by else logging.INFO
        self._refused_by = address
        log.log(level, "the controller answered NOT_CONTROLLER; looking for the controller again")
        await self._drop_connection()
        await self._back_off_unless_moved(address)

    async def _back_off_unless_moved(self, address: Address | None) -> None:
        """After NOT_CONTROLLER from ``address``: ask it again only after ``refused_backoff_s``, or sooner if the Raft
        leader moves. Kafka's NetworkClient reconnects to the node that just refused after ``reconnect.backoff.ms``
        (50 ms). Without the wait, a combined node whose voter resigned (it names itself leader until the next
        election) would ask itself again every few milliseconds for the whole election timeout."""
        loop = asyncio.get_running_loop()
        end = loop.time() + self._refused_backoff_s
        while self._controller() in (None, address) and (left := end - loop.time()) > 0:
            await asyncio.sleep(min(left, _MOVE_CHECK_S))

    async def _await_answer(self, connection: ControllerConnection, envelope: EnvelopeRequest) -> Any:
        """Send ``envelope`` and return the controller's answer, within ``request_timeout_s``; abandoned as a lost
        connection once the Raft leader moved elsewhere (:func:`answer_unless_leader_moves`). Kafka's request then
        waits for ``controller.socket.timeout.ms``; retrying sooner is as safe, since an abandoned attempt is only
        ever retried, never answered twice (``ForwardingManager``).

        The envelope is written in this step, not by a new task: a task would start a loop turn later, after
        whatever else is ready then (a Fetch answer to apply, say), and the client waits for all of it."""
        address = self._address
        return await answer_unless_leader_moves(
            connection.call_envelope(envelope),
            self._request_timeout_s,
            lambda: address is not None and self._controller() not in (None, address),
        )

    async def _connect(self) -> ControllerConnection:
        address = self._controller()
        if self._connection is not None and address in (None, self._address):
            return self._connection
        await self._drop_connection()  # the Raft leader moved: so did the active controller
        if address is None:
            raise ConnectionError("no controller is known")
        # A controller that stopped accepts the connection and never answers ApiVersions: given up on once the
        # Raft leader moved, as an envelope in flight is.
        connection, versions = await answer_unless_leader_moves(
            open_controller_connection(
                address, sasl_plain=self._sasl_plain, client_id=self._client_id, timeout_s=self._request_timeout_s
            ),
            self._request_timeout_s,
            lambda: self._controller() not in (None, address),
        )
        self.manager.controller_api_versions = versions
        self._connection, self._address = connection, address
        if self._unreachable:
            log.info("connected to the controller at %s:%d", *address)
            self._unreachable = False
        return connection

    async def _drop_connection(self) -> None:
        connection, self._connection = self._connection, None
        if connection is not None:
            await connection.close()

    def _settle(self) -> None:
        """Hand each finished request to whoever waits for it."""
        for completion in self.manager.completions():
            self._submitted.pop(completion.request_id, None)
            future = self._waiting.pop(completion.request_id, None)
            if future is not None and not future.done():
                future.set_result(completion)


async def open_controller_connection(
    address: Address, *, sasl_plain: tuple[str, str] | None, client_id: str, timeout_s: float
) -> tuple[ControllerConnection, dict[int, tuple[int, int]]]:
    """Connect to a controller listener as Kafka's ``NetworkClient`` does before its first request: ApiVersions
    (the controller's ranges are returned), then a SASL PLAIN login when ``sasl_plain`` is given. Raises
    :class:`ControllerLoginError` for a refused login, and OSError, TimeoutError or ControllerCallError otherwise."""
    reader, writer = await asyncio.wait_for(asyncio.open_connection(*address), timeout_s)
    connection = ControllerConnection(reader, writer, client_id)
    try:
        versions = await asyncio.wait_for(_handshake(connection, sasl_plain), timeout_s)
    except BaseException:
        await connection.close()
        raise
    return connection, versions


async def _handshake(
    connection: ControllerConnection, sasl_plain: tuple[str, str] | None
) -> dict[int, tuple[int, int]]:
    versions = await connection.call(
        ApiKey.API_VERSIONS, 3, {"client_software_name": "ksteward", "client_software_version": "0"}
    )
    if versions.error_code != ErrorCode.none:
        raise ControllerCallError(f"ApiVersions failed with error {int(versions.error_code)}")
    ranges = {int(k.api_key): (int(k.min_version), int(k.max_version)) for k in versions.api_keys}
    if sasl_plain is None:
        return ranges
    user, password = sasl_plain
    handshake = await connection.call(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"})
    if handshake.error_code != ErrorCode.none:
        raise ControllerLoginError(f"SaslHandshake(PLAIN) refused with error {int(handshake.error_code)}")
    token = b"\0" + user.encode() + b"\0" + password.encode()
    auth = await connection.call(ApiKey.SASL_AUTHENTICATE, 2, {"auth_bytes": token})
    if auth.error_code != ErrorCode.none:
        raise ControllerLoginError(f"SaslAuthenticate refused with error {int(auth.error_code)}")
    return ranges
