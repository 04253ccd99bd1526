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
from collections import Counter
from collections.abc import Iterable
from itertools import chain, groupby
from operator import itemgetter, sub
from random import randrange
from typing import Any

from ksteward.server.metrics.histogram import BYTES_BOUNDS, Histogram


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

    def add(self, rows: list[Observation]) -> None:
        """Observations of this api: the counters exactly; the times and sizes of a large batch from a
        stratified random sample (see :data:`TIMED_PER_BATCH`)."""
        _count_into(self.by_version, list(map(_VERSION, rows)))
        codes = list(map(_CODES, rows))
        first = codes[0]
        if codes.count(first) == len(codes):  # the usual batch: every response with the same codes
            errors = self.errors
            for code in first:
                errors[code] = errors.get(code, 0) + len(codes)
        else:
            _count_into(self.errors, list(chain.from_iterable(codes)))
        remote = list(filter(None, map(_REMOTE, rows)))  # forwarded requests only, every one (see the collector)
        if remote:
            self.remote.observe_seconds(remote)
        step = len(rows) // TIMED_PER_BATCH
        if step > 1:  # one row at random out of each run of step rows stands for them; the few left for themselves
            whole = len(rows) - len(rows) % step
            self._observe([rows[start + randrange(step)] for start in range(0, whole, step)], step)
            rows = rows[whole:]
        if rows:
            self._observe(rows, 1)

    def _observe(self, rows: list[Observation], weight: int) -> None:
        started, handled, sent, remote = (list(map(column, rows)) for column in (_STARTED, _HANDLED, _SENT, _REMOTE))
        self.total.observe_seconds(list(map(sub, sent, started)), weight)
        # The handler's time less its wait for another node (measured inside it on the same clock, so not below 0).
        self.local.observe_seconds(list(map(sub, map(sub, handled, started), remote)), weight)
        self.send.observe_seconds(list(map(sub, sent, handled)), weight)
        self.request_bytes.observe_many(list(map(_SIZE, rows)), weight=weight)


#: Of one api's observations in one fold, about this many are timed: a batch of more is cut into this many runs
#: of ``step`` rows, and one row drawn at random from each run stands for its run (stratified sampling: a
#: request pattern that repeats cannot line up with the draw). The counts stay exact and the quantiles are
#: estimated from the sample, as Kafka's own are (Yammer's histograms keep a reservoir of 1,028 samples); a
#: few hundred samples a second per request type are plenty for a 99.9th percentile over five minutes.
TIMED_PER_BATCH = 32


#: One served request as the connection hands it over: (api key, version, error codes, request bytes, the
#: monotonic clock (``loop.time()``'s) when it was decoded, when its response was ready and when the socket
#: took it, and the seconds it spent waiting for another node). A tuple of plain values: building and
#: appending it is the request path's only metrics work.
Observation = tuple[int, int, tuple[int, ...], int, float, float, float, float]

#: Observations kept before they are folded into the figures. A fold of one api's requests with one version and
#: the same error codes (a busy node's usual batch: no sort, one ``list.count`` per column) costs about 0.08 µs
#: an observation at this size in a micro-benchmark (0.12 µs before those shortcuts; each api's part has a fixed
#: cost, the timed sample's, about 23 µs), so it holds the event loop for about 0.1 ms and the list stays small;
#: folding every 4,096 was not faster in bench/metrics.py.
FOLD_EVERY = 1024

_KEY = itemgetter(0)
_VERSION = itemgetter(1)
_CODES = itemgetter(2)
_SIZE = itemgetter(3)
_STARTED = itemgetter(4)
_HANDLED = itemgetter(5)
_SENT = itemgetter(6)
_REMOTE = itemgetter(7)


class RequestMetrics:
    """Every api key's :class:`ApiStats` on one node (all listeners together, as Kafka's RequestMetrics).

    The request path only appends an :data:`Observation` to ``pending`` (always the same list: connections
    keep it) and calls :meth:`fold` once ``FOLD_EVERY`` are waiting; a scrape folds first, so it sees every
    request answered before it. A fold works on whole columns in C (``map``, ``list.count``, ``bisect``)
    instead of a few dozen Python steps per request: on a node serving tens of thousands of small requests a
    second, updating the figures request by request cost a sixth of its throughput (bench/README.md).
    """

    def __init__(self) -> None:
        self.by_api: dict[int, ApiStats] = {}
        self.pending: list[Observation] = []

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
        """One answered request with its times in milliseconds, folded at once (for callers off the hot path)."""
        remote_s = remote_ms / 1000
        handled = local_ms / 1000 + remote_s
        sent = handled + send_ms / 1000
        self.pending.append((api_key, api_version, tuple(codes), request_bytes, 0.0, handled, sent, remote_s))
        self.fold()

    def fold(self) -> None:
        """Fold the pending observations into each api's counters and histograms."""
        if not self.pending:
            return
        rows = self.pending.copy()
        self.pending.clear()  # the same list: connections append to it
        keys = list(map(_KEY, rows))
        if keys.count(keys[0]) == len(keys):  # one api (the usual batch on a busy node): no sort
            self._stats(keys[0]).add(rows)
            return
        rows.sort(key=_KEY)  # stable: each api's observations stay in order
        for api_key, group in groupby(rows, _KEY):
            self._stats(api_key).add(list(group))

    def _stats(self, api_key: int) -> ApiStats:
        stats = self.by_api.get(api_key)
        if stats is None:
            stats = self.by_api[api_key] = ApiStats()
        return stats


def _count_into(into: dict[int, int], values: list[int]) -> None:
    """Add how often each value occurs. A batch holds one or a few versions and error codes: ``list.count``
    per distinct value scans in C at a few ns a value, twice as fast as a ``Counter``; many distinct values
    take the ``Counter``."""
    if not values:
        return
    first = values[0]
    if values.count(first) == len(values):  # one value: the usual batch
        into[first] = into.get(first, 0) + len(values)
        return
    distinct = set(values)
    counts = Counter(values).items() if len(distinct) > 4 else ((v, values.count(v)) for v in distinct)
    for value, n in counts:
        into[value] = into.get(value, 0) + n


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


def error_codes(response: Any) -> tuple[int, ...]:
    """The response's top-level error code and each entry's, as Kafka's ``errorCounts`` counts them for
    most APIs (one level of entries: a Metadata response's partition errors are not counted). Called for every
    response a node with metrics answers that is not pre-encoded (those carry their codes): a response with only
    a top-level code (DescribeClientQuotas, many others) takes one attribute read, no generator (about 0.12 µs
    against 0.54 µs)."""
    cls = type(response)
    plan = _PLANS.get(cls)
    if plan is None:
        if not dataclasses.is_dataclass(cls):
            return ()
        plan = _plan(cls)
    top, lists = plan
    if not lists:
        return (int(response.error_code),) if top else ()
    codes = [int(response.error_code)] if top else []
    for name in lists:
        codes.extend(int(entry.error_code) for entry in getattr(response, name))
    return tuple(codes)
