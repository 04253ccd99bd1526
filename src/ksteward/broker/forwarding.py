"""The broker's side of forwarding (KIP-590), sans-IO: Kafka's ``ForwardingManager`` and the queue of its
``NodeToControllerRequestThread``.

A broker wraps each forwardable request (:data:`FORWARDABLE_API_KEYS`) in an Envelope with the client's
principal and address (:meth:`ForwardingManager.submit`), and sends the envelopes to the active controller
one at a time, in order (:meth:`ForwardingManager.next_envelope`). What comes back decides the client's
answer, as Kafka's table does:

================================================  =============================================================
the controller's answer                           what happens
================================================  =============================================================
a response with error 0                           the client gets the controller's response, as it was encoded
NOT_CONTROLLER, or the connection is lost          the request goes back to the *front* of the queue, and is
                                                  sent again once a controller is reachable
UNSUPPORTED_VERSION                               the client's connection is closed (it reconnects and re-reads
                                                  ApiVersions; the controller may have changed)
any other envelope error, an authentication        the client gets UNKNOWN_SERVER_ERROR in every entry (a
failure, a version mismatch, an unreadable         misconfigured cluster is not the client's business)
response
60 s after it was submitted, still unanswered      the client gets REQUEST_TIMED_OUT in every entry
================================================  =============================================================

Only one envelope is in flight at a time, so the controller sees a broker's requests in the order clients
sent them. A request is completed exactly once and is sent again only when it was not answered (a lost
connection, or NOT_CONTROLLER, which the controller sends without applying anything); an answer for an
attempt that is no longer in flight is ignored. Time is passed in by the caller: this module has no
clock, no socket and no task. ``ksteward.server.controller_channel`` drives it over a real connection.
"""

from __future__ import annotations

import enum
import functools
import ipaddress
import itertools
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kio.schema.envelope.v0 import EnvelopeRequest, EnvelopeResponse
from kio.schema.errors import ErrorCode

from ksteward.protocol.apis import ApiKey
from ksteward.protocol.build import build
from ksteward.protocol.codec import decode_response, encode_response, response_class
from ksteward.protocol.error_responses import error_values
from ksteward.protocol.errors import InvalidRequestError
from ksteward.protocol.principal import KafkaPrincipal, serialize_principal
from ksteward.protocol.read_your_writes import without_header_tags

__all__ = [
    "FORWARDABLE_API_KEYS",
    "RETRY_TIMEOUT_S",
    "ClientRequest",
    "Completion",
    "ForwardingManager",
    "OutboundEnvelope",
    "Outcome",
    "client_address_bytes",
    "forwardable_api_versions",
]

# Kafka's ApiKeys.forwardable: the requests a KRaft broker never executes itself.
FORWARDABLE_API_KEYS: frozenset[int] = frozenset(
    {
        ApiKey.CREATE_TOPICS,
        ApiKey.DELETE_TOPICS,
        ApiKey.CREATE_ACLS,
        ApiKey.DELETE_ACLS,
        ApiKey.ALTER_CONFIGS,
        ApiKey.CREATE_PARTITIONS,
        ApiKey.CREATE_DELEGATION_TOKEN,
        ApiKey.RENEW_DELEGATION_TOKEN,
        ApiKey.EXPIRE_DELEGATION_TOKEN,
        ApiKey.ELECT_LEADERS,
        ApiKey.INCREMENTAL_ALTER_CONFIGS,
        ApiKey.ALTER_PARTITION_REASSIGNMENTS,
        ApiKey.LIST_PARTITION_REASSIGNMENTS,
        ApiKey.ALTER_CLIENT_QUOTAS,
        ApiKey.ALTER_USER_SCRAM_CREDENTIALS,
        ApiKey.DESCRIBE_QUORUM,
        ApiKey.UPDATE_FEATURES,
        ApiKey.UNREGISTER_BROKER,
        ApiKey.ALLOCATE_PRODUCER_IDS,
        ApiKey.ADD_RAFT_VOTER,
        ApiKey.REMOVE_RAFT_VOTER,
    }
)

# The forwarding channel's retry timeout: fixed at 60 000 ms in Kafka's BrokerServer, not configurable.
RETRY_TIMEOUT_S = 60.0

_FRAME_SIZE_BYTES = 4
_ENVELOPE_ERRORS_TO_CLIENT = ErrorCode.unknown_server_error


def forwardable_api_versions(
    own: Mapping[int, tuple[int, int]], controller: Mapping[int, tuple[int, int]] | None
) -> dict[int, tuple[int, int]]:
    """What a broker advertises in ApiVersions (Kafka's ``ApiVersionsResponse.intersectForwardableApis``).

    A forwardable API is advertised at the intersection of the broker's range and the active controller's,
    and not at all when the controller lacks it or the ranges do not meet; every other API keeps the
    broker's own range. Until the controller's versions are known (``None``), the broker's own ranges.
    """
    if controller is None:
        return dict(own)
    advertised: dict[int, tuple[int, int]] = {}
    for api_key, (low, high) in own.items():
        if api_key not in FORWARDABLE_API_KEYS:
            advertised[api_key] = (low, high)
            continue
        theirs = controller.get(api_key)
        if theirs is None:
            continue
        low, high = max(low, theirs[0]), min(high, theirs[1])
        if low <= high:
            advertised[api_key] = (low, high)
    return advertised


def client_address_bytes(host: str) -> bytes:
    """The client's address as an Envelope carries it (``InetAddress.getAddress``): 4 or 16 bytes.
    ``host`` is the Java text form the broker's request context holds; raises ValueError for a non-address."""
    return ipaddress.ip_address(host.split("%", 1)[0]).packed


# A connection sends many requests with one principal and one address: each is serialized once (bounded: the
# least recently used drop out).
@functools.lru_cache(maxsize=1024)
def _principal_bytes(principal: str, token_authenticated: bool) -> bytes:
    return serialize_principal(KafkaPrincipal.parse(principal, token_authenticated=token_authenticated))


_address_bytes = functools.lru_cache(maxsize=1024)(client_address_bytes)


@dataclass(frozen=True, slots=True)
class ClientRequest:
    """A client's request as the broker received it."""

    payload: bytes  # the request header and body exactly as the client sent them (the frame, less its size)
    api_key: int
    api_version: int
    correlation_id: int
    body: Any  # the decoded body: the error responses name its entries
    principal: str  # "User:alice"
    client_host: str  # Java text form (ksteward.protocol.addresses.java_host_address)
    token_authenticated: bool = False  # the client logged in with a delegation token (the principal serde's flag)


class Outcome(enum.Enum):
    RESPONSE = "response"  # the controller answered: pass its response on
    ERROR = "error"  # the broker answers every entry with an error (UNKNOWN_SERVER_ERROR, REQUEST_TIMED_OUT)
    CLOSE_CONNECTION = "close connection"  # UNSUPPORTED_VERSION: close the client's connection


@dataclass(frozen=True, slots=True)
class Completion:
    """The end of one forwarded request: what the client gets."""

    request_id: int
    request: ClientRequest
    outcome: Outcome
    response: Any = None  # the kio response entity (RESPONSE and ERROR)
    response_data: bytes | None = None  # RESPONSE: the controller's response header and body, unchanged

    def frame(self, *, with_offset: bool = True) -> bytes | None:
        """The length-prefixed frame to write to the client; None to close its connection instead. Without
        ``with_offset`` (the client did not ask for read-your-writes), the controller's header tags are dropped."""
        if self.outcome is Outcome.CLOSE_CONNECTION:
            return None
        data = self.response_data
        if data is not None:
            request = self.request
            if not with_offset and response_class(request.api_key, request.api_version).__header_schema__.__flexible__:
                data = without_header_tags(data)
            return len(data).to_bytes(_FRAME_SIZE_BYTES, "big", signed=True) + data
        request = self.request
        return encode_response(request.api_key, request.api_version, request.correlation_id, self.response)


@dataclass(frozen=True, slots=True)
class OutboundEnvelope:
    """One attempt to deliver a request: send ``envelope``; report its answer with ``attempt``."""

    attempt: int
    request_id: int
    envelope: EnvelopeRequest


@dataclass
class _Item:
    request_id: int
    request: ClientRequest
    envelope: EnvelopeRequest
    submitted_at: float


class ForwardingManager:
    """One broker's forwarding queue (see the module docstring). Call with the current time in seconds."""

    def __init__(self, *, retry_timeout_s: float = RETRY_TIMEOUT_S) -> None:
        self.retry_timeout_s = retry_timeout_s
        self._queue: deque[_Item] = deque()
        self._in_flight: tuple[int, _Item] | None = None  # (attempt, item)
        self._completions: list[Completion] = []
        self._request_ids = itertools.count(1)
        self._attempts = itertools.count(1)
        self.controller_api_versions: Mapping[int, tuple[int, int]] | None = None

    # --- the broker's side -----------------------------------------------------------------------------

    def submit(self, request: ClientRequest, now: float) -> int:
        """Queue ``request`` at the back; returns its id, which its :class:`Completion` carries.
        Raises ValueError if its principal or client address cannot go in an Envelope."""
        envelope = EnvelopeRequest(
            request_data=request.payload,
            request_principal=_principal_bytes(request.principal, request.token_authenticated),
            client_host_address=_address_bytes(request.client_host),
        )
        request_id = next(self._request_ids)
        self._queue.append(_Item(request_id, request, envelope, now))
        return request_id

    def completions(self) -> list[Completion]:
        """The requests finished since the last call, in the order they finished."""
        done, self._completions = self._completions, []
        return done

    def advertised_api_versions(self, own: Mapping[int, tuple[int, int]]) -> dict[int, tuple[int, int]]:
        return forwardable_api_versions(own, self.controller_api_versions)

    @property
    def queued(self) -> int:
        """Requests waiting or in flight (Kafka's ForwardingManager ``QueueLength``)."""
        return len(self._queue) + (self._in_flight is not None)

    @property
    def in_flight(self) -> int | None:
        """The request id of the envelope in flight, if any."""
        return None if self._in_flight is None else self._in_flight[1].request_id

    # --- the channel's side ----------------------------------------------------------------------------

    def next_envelope(self, now: float) -> OutboundEnvelope | None:
        """The next envelope to send, if none is in flight; requests past the retry timeout complete first."""
        self.expire(now)
        if self._in_flight is not None or not self._queue:
            return None
        item = self._queue.popleft()
        attempt = next(self._attempts)
        self._in_flight = (attempt, item)
        return OutboundEnvelope(attempt, item.request_id, item.envelope)

    def next_deadline(self) -> float | None:
        """When the oldest waiting request times out (call :meth:`expire` then), or None."""
        if not self._queue:
            return None
        return min(item.submitted_at for item in self._queue) + self.retry_timeout_s

    def expire(self, now: float) -> None:
        """Complete every waiting request older than the retry timeout with REQUEST_TIMED_OUT. The one in
        flight is left alone: it may still be answered, and if it is not it comes back here."""
        kept: deque[_Item] = deque()
        for item in self._queue:
            if now - item.submitted_at >= self.retry_timeout_s:
                self._fail(item, ErrorCode.request_timed_out)
            else:
                kept.append(item)
        self._queue = kept

    def on_response(self, attempt: int, response: EnvelopeResponse) -> bool:
        """The controller answered ``attempt``. Returns True if the channel must disconnect and look for
        the controller again (NOT_CONTROLLER); the request is then back at the front of the queue."""
        item = self._take(attempt)
        if item is None:
            return False
        code = ErrorCode(response.error_code)
        if code == ErrorCode.not_controller:
            self._queue.appendleft(item)
            return True
        if code == ErrorCode.unsupported_version:
            self._completions.append(Completion(item.request_id, item.request, Outcome.CLOSE_CONNECTION))
        elif code != ErrorCode.none or response.response_data is None:
            self._fail(item, _ENVELOPE_ERRORS_TO_CLIENT)
        else:
            self._pass_on(item, response.response_data)
        return False

    def on_disconnect(self, attempt: int | None = None) -> None:
        """The connection to the controller was lost (or never made) with ``attempt`` unanswered: the
        request goes back to the front of the queue. None, or an attempt not in flight: nothing to retry."""
        if attempt is None:
            return
        item = self._take(attempt)
        if item is not None:
            self._queue.appendleft(item)

    def on_failure(self, attempt: int) -> None:
        """``attempt`` cannot be delivered: an authentication failure with the controller, or a controller
        that does not serve Envelope v0 (Kafka's version mismatch). The client gets UNKNOWN_SERVER_ERROR."""
        item = self._take(attempt)
        if item is not None:
            self._fail(item, _ENVELOPE_ERRORS_TO_CLIENT)

    # --- internals -------------------------------------------------------------------------------------

    def _take(self, attempt: int) -> _Item | None:
        """The in-flight item if ``attempt`` is the one in flight; None for a stale or unknown attempt."""
        if self._in_flight is None or self._in_flight[0] != attempt:
            return None
        item = self._in_flight[1]
        self._in_flight = None
        return item

    def _fail(self, item: _Item, code: ErrorCode) -> None:
        request = item.request
        values = error_values(request.api_key, request.body, code)
        if values is None:  # not an API ksteward serves: it cannot have been forwarded by ksteward's broker
            raise ValueError(f"no error response for api key {request.api_key}")
        response = build(response_class(request.api_key, request.api_version), values)
        self._completions.append(Completion(item.request_id, request, Outcome.ERROR, response))

    def _pass_on(self, item: _Item, data: bytes) -> None:
        """Parse the controller's response against the client's request (Kafka's
        ``AbstractResponse.parseResponse``): an unreadable one, or one for another correlation id, is
        UNKNOWN_SERVER_ERROR."""
        request = item.request
        try:
            # Tags kio does not know (the controller's read-your-writes offset) are skipped, as KIP-482 says;
            # the client still gets ``data`` unchanged.
            response = decode_response(request.api_key, request.api_version, data)
        except InvalidRequestError:
            self._fail(item, ErrorCode.unknown_server_error)
            return
        if response.correlation_id != request.correlation_id:
            self._fail(item, ErrorCode.unknown_server_error)
            return
        body = response.body
        self._completions.append(Completion(item.request_id, request, Outcome.RESPONSE, body, data))
