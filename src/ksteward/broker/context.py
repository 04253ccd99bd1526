"""What a handler knows about the request it serves and the node serving it.

Handlers depend on the :class:`Node` protocol, not on the asyncio server that implements it, so
the dependency points down: ``server`` -> ``broker``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Hashable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from ksteward.authorizer import AuditLogWriter, StandardAuthorizer
from ksteward.broker.forwarding import FORWARDABLE_API_KEYS
from ksteward.configs.resolve import ConfigResolver
from ksteward.configs.server_config import ServerConfig
from ksteward.controller.active import Controller
from ksteward.metadata.image import MetadataImage


@dataclass(slots=True)
class AuthorizationCounts:
    """A node's authorization decisions since it started (KIP-771's authorizer metrics count the same:
    one per action authorized, allowed or denied). Incremented on the event-loop thread only."""

    allowed: int = 0
    denied: int = 0


@dataclass(frozen=True, slots=True)
class RequestContext:
    principal: str  # "User:alice"; "User:ANONYMOUS" on PLAINTEXT
    client_host: str  # Java text form (see ksteward.protocol.addresses)
    listener: str
    security_protocol: str
    client_id: str | None
    api_key: int
    api_version: int
    api_table: ApiTable
    correlation_id: int = 0
    authorizations: AuthorizationCounts | None = None  # set when the node serves metrics
    token_authenticated: bool = False  # logged in with a delegation token (Kafka's KafkaPrincipal.tokenAuthenticated)
    forwarded: bool = False  # run from a broker's Envelope (Kafka's RequestChannel.Request.isForwarded)


class Node(Protocol):
    """The running node, as handlers see it."""

    @property
    def config(self) -> ServerConfig: ...

    @property
    def cluster_id(self) -> str: ...

    @property
    def image(self) -> MetadataImage:
        """The latest committed (durable) metadata image."""
        ...

    @property
    def controller(self) -> Controller:
        """The controller of a node with the controller role (a broker-only node has none: it forwards)."""
        ...

    def config_resolver(self) -> ConfigResolver:
        """This node's broker-level config layers (dynamic per-broker, cluster default, static) in ``image``."""
        ...

    @property
    def authorizer(self) -> StandardAuthorizer | None:
        """None when ``authorizer.class.name`` is empty: every request is allowed."""
        ...

    @property
    def audit(self) -> AuditLogWriter | None: ...

    async def wait_until_applied(self, offset: int) -> None:
        """Return once ``image`` holds the metadata log up to ``offset`` (read-your-writes)."""
        ...


Handler = Callable[[Node, RequestContext, Any], Awaitable[Any]]


@dataclass(frozen=True, slots=True)
class ApiSpec:
    api_key: int
    min_version: int
    max_version: int
    handler: Handler | None  # None: handled by the connection itself (SASL)


class ApiTable:
    """The APIs a listener serves. ApiVersions advertises exactly this table."""

    def __init__(self, specs: list[ApiSpec]) -> None:
        self._specs = {s.api_key: s for s in specs}
        self.served: Mapping[int, tuple[int, int]] = {s.api_key: (s.min_version, s.max_version) for s in specs}
        #: The part of ``served`` an Envelope may carry (KIP-590).
        self.forwardable: Mapping[int, tuple[int, int]] = {
            key: versions for key, versions in self.served.items() if key in FORWARDABLE_API_KEYS
        }
        #: Encoded answers that depend only on this table and the metadata image (ApiVersions), by the handler's key.
        self.answers: dict[Hashable, bytes] = {}

    def spec(self, api_key: int) -> ApiSpec:
        return self._specs[api_key]

    def __iter__(self) -> Iterator[ApiSpec]:
        return iter(sorted(self._specs.values(), key=lambda s: s.api_key))
