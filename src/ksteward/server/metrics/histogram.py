"""A fixed-bucket histogram cheap enough for the request path, and the Kafka-style quantiles read from it.

``observe`` is one C-level bisect and two additions: no lock, no allocation. It is safe because every
observation and every scrape run on the node's one event-loop thread (the endpoint is served from that loop,
see ``ksteward.server.metrics.endpoint``). Kafka's Yammer histograms report percentiles
(``50thPercentile`` ... ``999thPercentile``), which the JMX exporter rules turn into ``quantile`` labels;
here they are estimated at scrape time from the buckets, interpolating inside the bucket that holds the
quantile. Yammer's reservoir favours the last five minutes; :class:`RecentWindow` gives the quantiles over the
observations of the last five minutes, from the bucket counts kept at earlier scrapes.
"""

from __future__ import annotations

import time
from bisect import bisect_left
from collections import Counter, deque
from collections.abc import Callable, Hashable, Sequence
from itertools import repeat

#: Kafka's Yammer percentiles, as the Strimzi rules label them: ``(\d+)thPercentile`` -> ``quantile="0.$1"``.
QUANTILES: tuple[tuple[str, float], ...] = (
    ("0.50", 0.50),
    ("0.75", 0.75),
    ("0.95", 0.95),
    ("0.98", 0.98),
    ("0.99", 0.99),
    ("0.999", 0.999),
)

#: Milliseconds: from 10 µs to a minute, about three buckets a decade.
MS_BOUNDS: tuple[float, ...] = (
    0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 25.0, 50.0, 100.0, 250.0, 500.0,
    1_000.0, 2_500.0, 5_000.0, 10_000.0, 30_000.0, 60_000.0,
)  # fmt: skip

#: Bytes: powers of four from 16 B to 64 MiB.
BYTES_BOUNDS: tuple[float, ...] = tuple(float(4**i) for i in range(2, 14))


#: Counts (a group commit's batches): 1, 2, 4, ... 4096.
COUNT_BOUNDS: tuple[float, ...] = tuple(float(2**i) for i in range(13))


class Histogram:
    """Counts per bucket (``counts[i]``: values <= ``bounds[i]``, the last one above every bound) and the sum."""

    __slots__ = ("_seconds_bounds", "bounds", "counts", "discrete", "sum")

    def __init__(self, bounds: Sequence[float] = MS_BOUNDS, *, discrete: bool = False) -> None:
        self.bounds = tuple(bounds)
        self.discrete = discrete  # whole numbers: a quantile is its bucket's upper bound, not interpolated
        self.counts = [0] * (len(self.bounds) + 1)
        self.sum = 0.0
        self._seconds_bounds: tuple[float, ...] | None = None

    def observe(self, value: float) -> None:
        self.counts[bisect_left(self.bounds, value)] += 1
        self.sum += value

    def observe_many(
        self,
        values: list[float] | list[int],
        *,
        weight: int = 1,
        bounds: tuple[float, ...] | None = None,
        scale: float = 1.0,
    ) -> None:
        """Many observations at once, bucketed in C, each standing for ``weight`` (a sample's). ``values`` may be
        in another unit than the bounds: ``bounds`` are then the bounds in that unit and ``scale`` turns their
        sum into the histogram's."""
        counts = self.counts
        for index, n in Counter(map(bisect_left, repeat(bounds or self.bounds), values)).items():
            counts[index] += n * weight
        self.sum += sum(values) * scale * weight

    def observe_seconds(self, values: list[float], weight: int = 1) -> None:
        """Many durations in seconds (differences of clock readings) into this histogram of milliseconds."""
        seconds = self._seconds_bounds
        if seconds is None:
            seconds = self._seconds_bounds = tuple(b / 1000 for b in self.bounds)
        self.observe_many(values, weight=weight, bounds=seconds, scale=1000.0)

    @property
    def count(self) -> int:
        return sum(self.counts)

    def merged(self, others: Sequence[Histogram]) -> Histogram:
        """A new histogram holding this one's observations and ``others``' (same bounds)."""
        total = Histogram(self.bounds, discrete=self.discrete)
        for h in (self, *others):
            total.sum += h.sum
            for i, n in enumerate(h.counts):
                total.counts[i] += n
        return total

    def quantile(self, q: float, *, zeros: int = 0) -> float:
        """The value below which a fraction ``q`` of the observations lie, plus ``zeros`` observations of 0
        that were never recorded (a part of the request time that ksteward never spends, or spends only
        sometimes: see ``RequestMetrics``). 0.0 without observations."""
        counts = self.counts
        total = sum(counts) + zeros
        if total == 0:
            return 0.0
        rank = q * total
        if rank <= zeros:
            return 0.0
        seen = float(zeros)
        lower = 0.0
        for i, n in enumerate(counts):
            upper = self.bounds[i] if i < len(self.bounds) else lower * 2 or 1.0
            if n and seen + n >= rank:
                return upper if self.discrete else lower + (upper - lower) * (rank - seen) / n
            seen += n
            lower = upper
        return lower


class RecentWindow:
    """The observations of the last ``window_s`` of one histogram per key, as a histogram: its counts now less
    its counts at the newest earlier scrape at least ``window_s`` old (or since the start, before there is one).
    A snapshot is kept every tenth of the window at most, so a key holds about eleven."""

    def __init__(self, window_s: float = 300.0, clock: Callable[[], float] = time.monotonic) -> None:
        self._window_s = window_s
        self._clock = clock
        self._snapshots: dict[Hashable, deque[tuple[float, list[int]]]] = {}

    def recent(self, key: Hashable, histogram: Histogram) -> Histogram:
        now = self._clock()
        counts = list(histogram.counts)
        snapshots = self._snapshots.get(key)
        if snapshots is None:
            snapshots = self._snapshots[key] = deque()
        while len(snapshots) > 1 and now - snapshots[1][0] >= self._window_s:
            snapshots.popleft()
        base = snapshots[0][1] if snapshots and now - snapshots[0][0] >= self._window_s else None
        if not snapshots or now - snapshots[-1][0] >= self._window_s / 10:
            snapshots.append((now, counts))
        view = Histogram(histogram.bounds, discrete=histogram.discrete)
        view.counts = counts if base is None else [c - b for c, b in zip(counts, base, strict=True)]
        return view


class SampledAvgMax:
    """Kafka's ``Avg`` and ``Max`` stats of one sensor (``org.apache.kafka.common.metrics.stats.SampledStat``), with
    Kafka's defaults ``metrics.num.samples`` 2 and ``metrics.sample.window.ms`` 30000. An event goes into the
    current sample; once that one is ``window_s`` old, the next slot of ``samples`` + 1 (Kafka keeps one more, for
    the sample that overlaps the window's start) is reset and takes the events. At a read, a sample whose last
    event is ``samples * window_s`` old or more is reset first. With no event left, both read NaN, as Kafka's do."""

    __slots__ = ("_clock", "_counts", "_current", "_expire_s", "_last", "_maxes", "_starts", "_totals", "_window_s")

    def __init__(self, samples: int = 2, window_s: float = 30.0, clock: Callable[[], float] = time.monotonic) -> None:
        now = clock()
        slots = samples + 1
        self._clock = clock
        self._window_s = window_s
        self._expire_s = samples * window_s
        self._current = 0
        self._starts = [now] * slots
        self._last = [now] * slots
        self._counts = [0] * slots
        self._totals = [0.0] * slots
        self._maxes = [float("-inf")] * slots

    def record(self, value: float) -> None:
        now = self._clock()
        i = self._current
        if now - self._starts[i] >= self._window_s:
            i = self._current = (i + 1) % len(self._starts)
            self._reset(i, now)
        self._counts[i] += 1
        self._totals[i] += value
        self._last[i] = now
        if value > self._maxes[i]:
            self._maxes[i] = value

    def avg(self) -> float:
        count = self._purge()
        return sum(self._totals) / count if count else float("nan")

    def max(self) -> float:
        return max(self._maxes) if self._purge() else float("nan")

    def _purge(self) -> int:
        """Reset the samples with no event in the last ``samples * window_s``; the events left."""
        now = self._clock()
        for i, last in enumerate(self._last):
            if now - last >= self._expire_s:
                self._reset(i, now)
        return sum(self._counts)

    def _reset(self, i: int, now: float) -> None:
        self._starts[i] = self._last[i] = now
        self._counts[i] = 0
        self._totals[i] = 0.0
        self._maxes[i] = float("-inf")
