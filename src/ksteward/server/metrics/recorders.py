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

Counts are exact; times and sizes come from the timed requests, as Kafka's quantiles come from a sample (a Yammer
histogram keeps a reservoir of 1,028): a connection times about one request in 48 (``TIMED_GAP_MIN``), and the
first of each new request type; every forwarded request's wait is kept; each histogram counts every request.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from itertools import groupby
from operator import itemgetter, sub
from random import randrange
from typing import Any

from ksteward.server.metrics.histogram import BYTES_BOUNDS, Histogram


class ApiStats:
    """One api key's figures since the node started."""

    __slots__ = ("by_version", "errors", "last_timed", "local", "remote", "request_bytes", "send", "total")

    def __init__(self) -> None:
        self.by_version: dict[int, int] = {}
        self.errors: dict[int, int] = {}  # error code -> count, NONE (0) included, as Kafka's ErrorsPerSec
        self.total = Histogram()
        self.local = Histogram()
        self.remote = Histogram()  # non-zero times only: the requests not in it waited 0 ms
        self.send = Histogram()
        self.request_bytes = Histogram(BYTES_BOUNDS)
        self.last_timed: list[Observation] = []  # the last fold's timed requests: they stand in for a fold with none

    @property
    def requests(self) -> int:
        return sum(self.by_version.values())

    def count(self, version: int, codes: tuple[int, ...], n: int) -> None:
        """``n`` more requests of ``version`` answered with ``codes``: the counters, exactly."""
        self.by_version[version] = self.by_version.get(version, 0) + n
        errors = self.errors
        for code in codes:
            errors[code] = errors.get(code, 0) + n

    def time(self, rows: list[Observation], requests: int) -> None:
        """The times and sizes of ``requests`` requests of this api, from the timed ones among them (``rows``):
        each histogram counts every request, the timed ones standing for the rest (each for about as many),
        and a large batch of timed ones is cut to a stratified random sample (see :data:`TIMED_PER_BATCH`).
        A forwarded request's wait for the controller is recorded for every one (:meth:`RequestMetrics.fold`)."""
        if rows:
            self.last_timed = rows
        else:
            rows = self.last_timed  # none of this fold's requests was timed: the last ones stand for them
        if not rows or requests <= 0:
            return
        step = len(rows) // TIMED_PER_BATCH
        if step > 1:  # one row at random out of each run of step rows stands for them
            rows = [rows[start + randrange(step)] for start in range(0, len(rows) - len(rows) % step, step)]
        weight, heavier = divmod(requests, len(rows))
        if heavier:
            self._observe(rows[:heavier], weight + 1)
        if weight:
            self._observe(rows[heavier:], weight)

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


#: One timed request as the connection hands it over: (api key, version, error codes, request bytes, the
#: monotonic clock (``loop.time()``'s) when it was decoded, when its response was ready and when the socket
#: took it, and the seconds it spent waiting for another node). A tuple of plain values.
Observation = tuple[int, int, tuple[int, ...], int, float, float, float, float]

#: Timed requests, or runs, kept before they are folded into the figures: a fold holds the event loop for about
#: 0.1 ms, and the lists stay small.
FOLD_EVERY = 1024

#: A connection times one request in about 48 (a random gap of ``TIMED_GAP_MIN`` plus ``TIMED_GAP_BITS`` random
#: bits: 32 to 63), besides the first of each new request type: a few hundred timed requests a second per request
#: type on a busy node, and about 1,900 over five minutes for a type served 300 times a second (a Yammer
#: histogram's reservoir holds 1,028), where timing every request cost most of the recorder's time. A gap of 8 to
#: 23 measured about 1.3% less throughput for ApiVersions on 50 connections (bench/README.md, the metrics section).
TIMED_GAP_MIN = 32
TIMED_GAP_BITS = 5

_KEY = itemgetter(0)
_SIZE = itemgetter(3)
_STARTED = itemgetter(4)
_HANDLED = itemgetter(5)
_SENT = itemgetter(6)
_REMOTE = itemgetter(7)


class RequestRun:
    """Requests that one connection sent one after the other with the same api key and version and that were
    answered with the same error codes: ``count`` of them so far, ``folded`` of which the figures hold. A
    client repeats one request most of the time, so counting a request is one comparison and one addition here,
    with nothing allocated; a change starts a new run (:meth:`RequestMetrics.next_run`)."""

    __slots__ = ("api_key", "api_version", "codes", "count", "folded", "open")

    def __init__(self, api_key: int, api_version: int, codes: tuple[int, ...], count: int = 1) -> None:
        self.api_key = api_key
        self.api_version = api_version
        self.codes = codes
        self.count = count
        self.folded = 0
        self.open = True  # its connection may still add to it


#: What a connection's first request is compared with: no request matches it.
NO_RUN = RequestRun(-1, -1, (), 0)
NO_RUN.open = False


class RequestMetrics:
    """Every api key's :class:`ApiStats` on one node (all listeners together, as Kafka's RequestMetrics).

    The request path counts each request into its connection's :class:`RequestRun` (every run is listed in
    ``runs`` until folded and closed) and appends a timed request's :data:`Observation` to ``pending`` (always
    the same list: connections keep it), calling :meth:`fold` once ``FOLD_EVERY`` are waiting; a scrape folds
    first, so it sees every request answered before it. The fold counts the runs exactly and spreads each api's
    count over its timed requests in the histograms (``ApiStats.time``). On a node serving tens of thousands of
    small requests a second, building and keeping a tuple for every request was most of the metrics' cost
    (bench/README.md, the metrics section).
    """

    def __init__(self) -> None:
        self.by_api: dict[int, ApiStats] = {}
        self.pending: list[Observation] = []
        self.runs: list[RequestRun] = []
        self.remote_waits: list[tuple[int, float]] = []  # (api key, seconds) of every forwarded request

    def next_run(self, previous: RequestRun, api_key: int, api_version: int, codes: tuple[int, ...]) -> RequestRun:
        """A connection's request that does not continue its ``previous`` run: a new run, holding it."""
        previous.open = False
        if len(self.runs) >= FOLD_EVERY:
            self.fold()  # before the new run: its request and its timed row (appended next) meet in one fold
        run = RequestRun(api_key, api_version, codes)
        self.runs.append(run)
        return run

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
        self.add_one((api_key, api_version, tuple(codes), request_bytes, 0.0, handled, sent, remote_s))
        self.fold()

    def add_one(self, row: Observation) -> None:
        """One timed request answered outside a connection's runs: a closed run of its own, then its row (in
        that order: see :meth:`next_run`), and its wait for the controller when it was forwarded."""
        api_key, api_version, codes, remote_s = row[0], row[1], row[2], row[7]
        self.next_run(NO_RUN, api_key, api_version, codes).open = False
        self.pending.append(row)
        if remote_s:
            self.remote_waits.append((api_key, remote_s))

    def fold(self) -> None:
        """Fold the runs' new requests and the timed ones into each api's counters and histograms."""
        counted: dict[int, int] = {}
        for run in self.runs:
            n = run.count - run.folded
            if n:
                run.folded = run.count
                self._stats(run.api_key).count(run.api_version, run.codes, n)
                counted[run.api_key] = counted.get(run.api_key, 0) + n
        self.runs = [run for run in self.runs if run.open]
        rows = self.pending.copy()
        self.pending.clear()  # the same list: connections append to it
        timed: dict[int, list[Observation]] = {}
        if rows:
            keys = list(map(_KEY, rows))
            if keys.count(keys[0]) == len(keys):  # one api (the usual batch on a busy node): no sort
                timed[keys[0]] = rows
            else:
                rows.sort(key=_KEY)  # stable: each api's observations stay in order
                timed = {api_key: list(group) for api_key, group in groupby(rows, _KEY)}
        for api_key in counted.keys() | timed.keys():
            self._stats(api_key).time(timed.get(api_key, []), counted.get(api_key, 0))
        if self.remote_waits:
            waits = sorted(self.remote_waits, key=_KEY)
            self.remote_waits.clear()
            for api_key, group in groupby(waits, _KEY):
                self._stats(api_key).remote.observe_seconds([seconds for _, seconds in group])

    def _stats(self, api_key: int) -> ApiStats:
        stats = self.by_api.get(api_key)
        if stats is None:
            stats = self.by_api[api_key] = ApiStats()
        return stats


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
