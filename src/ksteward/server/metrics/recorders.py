"""What the request path records: plain counters and histograms, updated in place on the event-loop thread.

Kafka's ``RequestChannel.updateRequestMetrics`` marks, per request, ``RequestsPerSec`` (by request and
version), ``ErrorsPerSec`` (by request and error, from the response's ``errorCounts``) and updates the
``TotalTimeMs`` histogram with its parts and ``RequestBytes``. ksteward records the same here, per api key,
and nothing else: the collectors (``ksteward.server.metrics.collectors``) turn these into Prometheus families
when ``/metrics`` is scraped. No lock is taken: observations and scrapes run on the same thread.

The parts of the request time, as ksteward has them (docs/metrics.md):
- ``RequestQueueTimeMs`` and ``ResponseQueueTimeMs`` are 0: the request is handled as soon as its frame is
  decoded and the response is written as soon as it is encoded (no request or response queue between threads).
  They are not observed; the collector reports them with the request count and zero quantiles.
- ``RemoteTimeMs`` is the wait for another node: on a broker-only node, a forwarded request's round trip to the
  controller (Kafka's forwarding waits in the same place); 0 for every other request. Only non-zero times are
  observed; the collector counts the rest as zeros.
- ``LocalTimeMs`` is the handler's time minus the remote time (it includes a controller's commit wait).
- ``ResponseSendTimeMs`` is writing the response until the socket has taken it (``drain``).
"""

from __future__ import annotations

import dataclasses
from bisect import bisect_left
from collections.abc import Iterable, Iterator
from typing import Any

from ksteward.server.metrics.histogram import BYTES_BOUNDS, MS_BOUNDS, Histogram


class ApiStats:
    """One api key's figures since the node started."""

    __slots__ = ("by_version", "errors", "local", "remote", "request_bytes", "send", "total")

    def __init__(self) -> None:
        self.by_version: dict[int, int] = {}
        self.errors: dict[int, int] = {}  # error code -> count, NONE (0) included, as Kafka's ErrorsPerSec
        self.total = Histogram()
        self.local = Histogram()
        self.remote = Histogram()  # non-zero times only: the requests not in it waited 0 ms
        self.send = Histogram()
        self.request_bytes = Histogram(BYTES_BOUNDS)

    @property
    def requests(self) -> int:
        return sum(self.by_version.values())


class RequestMetrics:
    """Every api key's :class:`ApiStats` on one node (all listeners together, as Kafka's RequestMetrics)."""

    def __init__(self) -> None:
        self.by_api: dict[int, ApiStats] = {}

    def record(
        self,
        api_key: int,
        api_version: int,
        request_bytes: int,
        codes: Iterable[int],
        local_ms: float,
        remote_ms: float,
        send_ms: float,
    ) -> None:
        """One answered request. The histograms are updated inline (``Histogram.observe``'s two lines, without
        the call): this runs once per request, and a call costs as much as the update."""
        stats = self.by_api.get(api_key)
        if stats is None:
            stats = self.by_api[api_key] = ApiStats()
        try:  # a version and an error code seen before: one lookup instead of get-then-set
            stats.by_version[api_version] += 1
        except KeyError:
            stats.by_version[api_version] = 1
        errors = stats.errors
        for code in codes:
            try:
                errors[code] += 1
            except KeyError:
                errors[code] = 1
        total_ms = local_ms + remote_ms + send_ms
        h = stats.total
        h.counts[bisect_left(MS_BOUNDS, total_ms)] += 1
        h.sum += total_ms
        h = stats.local
        h.counts[bisect_left(MS_BOUNDS, local_ms)] += 1
        h.sum += local_ms
        if remote_ms:  # only forwarded requests wait for another node; the others count as 0 (see the collector)
            h = stats.remote
            h.counts[bisect_left(MS_BOUNDS, remote_ms)] += 1
            h.sum += remote_ms
        h = stats.send
        h.counts[bisect_left(MS_BOUNDS, send_ms)] += 1
        h.sum += send_ms
        h = stats.request_bytes
        h.counts[bisect_left(BYTES_BOUNDS, request_bytes)] += 1
        h.sum += request_bytes


@dataclasses.dataclass(slots=True)
class ListenerStats:
    """Kafka's ``socket-server-metrics`` of one listener (one network processor here: the event loop)."""

    created: int = 0
    closed: int = 0
    successful_authentications: int = 0
    failed_authentications: int = 0

    @property
    def open(self) -> int:
        return self.created - self.closed


class SocketServerMetrics:
    def __init__(self) -> None:
        self.by_listener: dict[str, ListenerStats] = {}

    def listener(self, name: str) -> ListenerStats:
        stats = self.by_listener.get(name)
        if stats is None:
            stats = self.by_listener[name] = ListenerStats()
        return stats


# --- the error codes of a response (Kafka's AbstractResponse.errorCounts) -----------------------------------

_Plan = tuple[bool, tuple[str, ...]]
_PLANS: dict[type, _Plan] = {}


def _plan(cls: type) -> _Plan:
    """Where ``cls``'s error codes are: a top-level ``error_code``, and the entry lists whose entries have one."""
    top = False
    lists: list[str] = []
    for f in dataclasses.fields(cls):
        if f.name == "error_code":
            top = True
            continue
        args = getattr(f.type, "__args__", ())
        entry = args[0] if args else None
        if (
            isinstance(entry, type)
            and dataclasses.is_dataclass(entry)
            and any(g.name == "error_code" for g in dataclasses.fields(entry))
        ):
            lists.append(f.name)
    plan = (top, tuple(lists))
    _PLANS[cls] = plan
    return plan


def error_codes(response: Any) -> Iterator[int]:
    """The response's top-level error code and each entry's, as Kafka's ``errorCounts`` counts them for
    most APIs (one level of entries: a Metadata response's partition errors are not counted)."""
    cls = type(response)
    plan = _PLANS.get(cls)
    if plan is None:
        if not dataclasses.is_dataclass(cls):
            return
        plan = _plan(cls)
    top, lists = plan
    if top:
        yield int(response.error_code)
    for name in lists:
        for entry in getattr(response, name):
            yield int(entry.error_code)
