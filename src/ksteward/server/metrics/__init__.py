"""The node's Prometheus endpoint (``metrics.port``, ``metrics.host``): Kafka's metric names, as Strimzi's JMX
exporter rules turn its MBeans into Prometheus series, so that an operator's Kafka dashboards read ksteward.

One :class:`NodeMetrics` per node: its own ``CollectorRegistry`` (never prometheus-client's global one), the
request path's recorders, and the endpoint. Each part of the node adds its collector with :meth:`NodeMetrics.add`:
a later series (forwarding queue and remote times, replication lag) is one more collector. The README's
"Metrics" section lists every series with the Kafka MBean it stands for.
"""

from __future__ import annotations

import errno
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from prometheus_client.registry import Collector, CollectorRegistry

from ksteward.authorizer import StandardAuthorizer
from ksteward.broker.context import AuthorizationCounts
from ksteward.server.metrics.collectors import AuthorizerCollector, RequestCollector, SocketServerCollector
from ksteward.server.metrics.endpoint import MetricsEndpoint
from ksteward.server.metrics.recorders import RequestMetrics, SocketServerMetrics

__all__ = ["MetricsSettings", "MetricsStartError", "NodeMetrics", "metrics_settings"]

DEFAULT_HOST = "127.0.0.1"


@dataclass(frozen=True, slots=True)
class MetricsSettings:
    host: str
    port: int


def metrics_settings(props: Mapping[str, str]) -> MetricsSettings | None:
    """``metrics.port`` (1..65535) and ``metrics.host`` (loopback by default); None when the port is unset.
    ValueError with the one line the operator sees."""
    raw = (props.get("metrics.port") or "").strip()
    if not raw:
        return None
    try:
        port = int(raw)
    except ValueError:
        raise ValueError(f"metrics.port must be an integer, not {raw!r}") from None
    if not 1 <= port <= 65535:
        raise ValueError(f"metrics.port must be between 1 and 65535, not {port}")
    host = (props.get("metrics.host") or "").strip() or DEFAULT_HOST
    return MetricsSettings(host, port)


class MetricsStartError(Exception):
    """The endpoint cannot listen; the message is the one line the operator sees."""


class NodeMetrics:
    def __init__(self) -> None:
        # auto_describe off: registering a collector must not run it (its rate windows start at the first scrape).
        self.registry = CollectorRegistry(auto_describe=False)
        self.requests = RequestMetrics()
        self.sockets = SocketServerMetrics()
        self.authorizations = AuthorizationCounts()
        self.endpoint = MetricsEndpoint(self.registry)

    def add(self, collector: Collector) -> None:
        self.registry.register(collector)

    async def start(
        self, settings: MetricsSettings, authorizer: StandardAuthorizer | None, role: Sequence[Collector]
    ) -> None:
        """Register the collectors every node has, then ``role``'s, and listen."""
        self.add(RequestCollector(self.requests))
        self.add(SocketServerCollector(self.sockets))
        if authorizer is not None:
            self.add(AuthorizerCollector(self.authorizations, authorizer))
        for collector in role:
            self.add(collector)
        where = f"metrics.port {settings.port} on {settings.host}"
        try:
            await self.endpoint.start(settings.host, settings.port)
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                raise MetricsStartError(f"{where} is already in use") from None
            raise MetricsStartError(f"{where}: cannot listen: {exc.strerror or exc}") from None
