"""Building Prometheus families under the names Strimzi's JMX exporter rules give Kafka's MBeans.

The rules (``kafka-metrics.yaml`` in strimzi/strimzi-kafka-operator, ``lowercaseOutputName: true``) name a
Yammer metric ``kafka.<domain>:type=<T>,name=<N>`` ``kafka_<domain>_<t>_<n>`` (``PerSec`` meters: ``..._total``;
histograms: the percentiles as ``quantile`` labels plus ``_count``), and a Kafka metric
``kafka.server:type=<group>,<tags>`` attribute ``<attr>`` ``kafka_server_<group>_<attr>`` with ``-`` as ``_``.
The README's "Metrics" section lists every series (docs/metrics.md: how the endpoint is built).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from ksteward.server.metrics.histogram import QUANTILES, Histogram, RecentWindow


def gauge(name: str, doc: str, value: float | None = None, labels: Sequence[str] = ()) -> GaugeMetricFamily:
    if value is not None:
        return GaugeMetricFamily(name, doc, value=value)
    return GaugeMetricFamily(name, doc, labels=list(labels))


def counter(name: str, doc: str, value: float | None = None, labels: Sequence[str] = ()) -> CounterMetricFamily:
    """A counter; the exposition adds ``_total`` to ``name``."""
    if value is not None:
        return CounterMetricFamily(name, doc, value=value)
    return CounterMetricFamily(name, doc, labels=list(labels))


def summary(
    name: str,
    doc: str,
    series: Iterable[tuple[Mapping[str, str], Histogram, int]],
    window: RecentWindow | None = None,
) -> Metric:
    """A Yammer histogram as the JMX exporter rules show it: ``name{quantile="0.99"}`` and ``name_count``
    (and ``name_sum``, which the rules lack). Each series is (labels, histogram, zeros): ``zeros`` counts
    observations of 0 that were not recorded (the parts of the request time ksteward never spends, see
    ``RequestMetrics``). With ``window``, the quantiles are those of its recent observations only."""
    rows = []
    for labels, histogram, zeros in series:
        recent = histogram if window is None else window.recent((name, *labels.items()), histogram)
        rows.append((labels, histogram, zeros, recent, zeros if window is None else 0))
    return summary_rows(name, doc, rows)


def summary_rows(
    name: str, doc: str, rows: Iterable[tuple[Mapping[str, str], Histogram, int, Histogram, int]]
) -> Metric:
    """:func:`summary` with the quantiles' histogram given: (labels, histogram, zeros, recent, recent zeros)."""
    family = Metric(name, doc, "summary")
    for labels, histogram, zeros, recent, recent_zeros in rows:
        for text, q in QUANTILES:
            family.add_sample(name, {**labels, "quantile": text}, recent.quantile(q, zeros=recent_zeros))
        family.add_sample(name + "_count", dict(labels), histogram.count + zeros)
        family.add_sample(name + "_sum", dict(labels), histogram.sum)
    return family
