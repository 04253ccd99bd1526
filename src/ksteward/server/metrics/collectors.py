"""Collectors: each turns one part of the node's state into Prometheus families when ``/metrics`` is scraped.

Gauges are read from the state at scrape time (the image, the log, the authorizer); counters and histograms
are the request path's plain figures (``ksteward.server.metrics.recorders``). Rates that Kafka reports as
meters (``connection-creation-rate``, KIP-771's ``*-rate-per-minute``) are computed here from the totals,
over the window between scrapes (:class:`RateWindow`). Every collector runs on the event-loop thread.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Iterator

from kio.schema.errors import ErrorCode
from prometheus_client.core import Metric
from prometheus_client.registry import Collector

from ksteward.authorizer import StandardAuthorizer
from ksteward.broker.context import AuthorizationCounts
from ksteward.broker.forwarding import ForwardingManager
from ksteward.controller.mutation_quota import MutationQuotas
from ksteward.metadata.image import MetadataImage
from ksteward.policy.loader import REJECTIONS
from ksteward.protocol.apis import api_name
from ksteward.server.metrics.families import counter, gauge, summary, summary_rows
from ksteward.server.metrics.histogram import Histogram, RecentWindow
from ksteward.server.metrics.recorders import ApiStats, RequestMetrics, SocketServerMetrics

_REQUEST = "kafka_network_requestmetrics_"
_SOCKET = "kafka_server_socket_server_metrics_"
_AUTHORIZER = "kafka_server_kafka_security_authorizer_metrics_"
_CONTROLLER = "kafka_controller_kafkacontroller_"
_NETWORK_PROCESSOR = "0"  # one event loop serves every connection: Kafka's networkProcessor tag has one value


class RateWindow:
    """A per-second rate of a growing total, over the last ``window_s`` of scrapes (Kafka's ``Rate`` uses a
    sampled window too). The first scrape gives the total over the time since ``start``."""

    def __init__(self, window_s: float = 60.0, clock: Callable[[], float] = time.monotonic) -> None:
        self._window_s = window_s
        self._clock = clock
        self._samples: deque[tuple[float, float]] = deque([(clock(), 0.0)])

    def rate(self, total: float) -> float:
        now = self._clock()
        samples = self._samples
        while len(samples) > 1 and now - samples[1][0] >= self._window_s:
            samples.popleft()
        then, before = samples[0]
        samples.append((now, total))
        return (total - before) / (now - then) if now > then else 0.0


def _error_name(code: int) -> str:
    try:
        return ErrorCode(code).name.upper()
    except ValueError:
        return f"UNKNOWN_{code}"


class RequestCollector(Collector):
    """``kafka.network:type=RequestMetrics``: per request type (and version, for RequestsPerSec)."""

    def __init__(self, metrics: RequestMetrics, window: RecentWindow | None = None) -> None:
        self._metrics = metrics
        self._window = window or RecentWindow()

    def collect(self) -> Iterator[Metric]:
        window = self._window
        self._metrics.fold()  # every request answered before the scrape
        by_api = sorted((api_name(key), stats) for key, stats in self._metrics.by_api.items())
        requests = counter(_REQUEST + "requests", "Requests served (RequestsPerSec)", labels=("request", "version"))
        errors = counter(_REQUEST + "errors", "Response error codes (ErrorsPerSec)", labels=("request", "error"))
        for name, stats in by_api:
            for version, n in sorted(stats.by_version.items()):
                requests.add_metric([name, str(version)], n)
            for code, n in sorted(stats.errors.items()):
                errors.add_metric([name, _error_name(code)], n)
        yield requests
        yield errors
        none = Histogram()
        yield summary(_REQUEST + "totaltimems", "Request time in ms, from decoded to sent (TotalTimeMs)",
                      (({"request": n}, s.total, 0) for n, s in by_api), window)  # fmt: skip
        yield summary(_REQUEST + "requestqueuetimems", "Always 0: no request queue (RequestQueueTimeMs)",
                      (({"request": n}, none, s.requests) for n, s in by_api))  # fmt: skip
        yield summary(_REQUEST + "localtimems", "Handler time in ms (LocalTimeMs)",
                      (({"request": n}, s.local, 0) for n, s in by_api), window)  # fmt: skip
        yield self._remote(by_api)
        yield summary(_REQUEST + "responsequeuetimems", "Always 0: no response queue (ResponseQueueTimeMs)",
                      (({"request": n}, none, s.requests) for n, s in by_api))  # fmt: skip
        yield summary(_REQUEST + "responsesendtimems", "Writing the response in ms (ResponseSendTimeMs)",
                      (({"request": n}, s.send, 0) for n, s in by_api), window)  # fmt: skip
        yield summary(_REQUEST + "requestbytes", "Request size in bytes (RequestBytes)",
                      (({"request": n}, s.request_bytes, 0) for n, s in by_api), window)  # fmt: skip

    def _remote(self, by_api: list[tuple[str, ApiStats]]) -> Metric:
        """RemoteTimeMs: only non-zero times are observed, so the zeros are the requests (TotalTimeMs' count,
        overall and recently) less the remote observations."""
        window, rows = self._window, []
        for name, stats in by_api:
            recent_total = window.recent((_REQUEST + "totaltimems", ("request", name)), stats.total).count
            recent = window.recent((_REQUEST + "remotetimems", ("request", name)), stats.remote)
            zeros = stats.total.count - stats.remote.count
            rows.append(({"request": name}, stats.remote, zeros, recent, recent_total - recent.count))
        return summary_rows(_REQUEST + "remotetimems", "Wait for the controller in ms (RemoteTimeMs)", rows)


class SocketServerCollector(Collector):
    """``kafka.server:type=socket-server-metrics`` by listener, and the event loop's idle share."""

    def __init__(self, metrics: SocketServerMetrics) -> None:
        self._metrics = metrics
        self._creation = {name: RateWindow(30.0) for name in metrics.by_listener}
        self._wall = time.perf_counter()
        self._cpu = time.thread_time()

    def _idle(self) -> float:
        """1 - the event-loop thread's CPU share since the last scrape: the time it was not running Python
        code or system calls for the node (Kafka's NetworkProcessorAvgIdlePercent, a fraction 0..1)."""
        wall, cpu = time.perf_counter(), time.thread_time()
        elapsed, busy = wall - self._wall, cpu - self._cpu
        self._wall, self._cpu = wall, cpu
        return min(max(1.0 - busy / elapsed, 0.0), 1.0) if elapsed > 0 else 1.0

    def collect(self) -> Iterator[Metric]:
        labels = ("listener", "networkProcessor")
        count = gauge(_SOCKET + "connection_count", "Open connections", labels=labels)
        rate = gauge(_SOCKET + "connection_creation_rate", "New connections per second", labels=labels)
        created = counter(_SOCKET + "connection_creation", "Connections accepted", labels=labels)
        ok = counter(_SOCKET + "successful_authentication", "Connections that authenticated", labels=labels)
        failed = counter(_SOCKET + "failed_authentication", "Failed logins", labels=labels)
        for name, stats in sorted(self._metrics.by_listener.items()):
            key = [name, _NETWORK_PROCESSOR]
            count.add_metric(key, stats.open)
            window = self._creation.get(name) or self._creation.setdefault(name, RateWindow(30.0))
            rate.add_metric(key, window.rate(stats.created))
            created.add_metric(key, stats.created)
            ok.add_metric(key, stats.successful_authentications)
            failed.add_metric(key, stats.failed_authentications)
        yield from (count, rate, created, ok, failed)
        idle = self._idle()
        yield gauge("kafka_network_socketserver_networkprocessoravgidle_percent", "Event loop idle share", idle)
        yield gauge("kafka_server_kafkarequesthandlerpool_requesthandleravgidle_percent",
                    "Event loop idle share (the same loop runs the handlers)", idle)  # fmt: skip


class AuthorizerCollector(Collector):
    """KIP-771's authorizer metrics (group ``kafka.security.authorizer.metrics``)."""

    def __init__(self, counts: AuthorizationCounts, authorizer: StandardAuthorizer) -> None:
        self._counts = counts
        self._authorizer = authorizer
        self._rates = {kind: RateWindow(60.0) for kind in ("request", "allowed", "denied")}

    def collect(self) -> Iterator[Metric]:
        allowed, denied = self._counts.allowed, self._counts.denied
        totals = {"request": allowed + denied, "allowed": allowed, "denied": denied}
        yield gauge(_AUTHORIZER + "acls_total_count", "ACLs in the authorizer", self._authorizer.acl_count())
        for kind, total in totals.items():
            per_minute = self._rates[kind].rate(total) * 60
            yield gauge(_AUTHORIZER + f"authorization_{kind}_rate_per_minute", f"Authorizations ({kind}) a minute",
                        per_minute)  # fmt: skip
            yield counter(_AUTHORIZER + f"authorization_{kind}", f"Authorizations ({kind}) since start", total)


class ImageCollector(Collector):
    """``kafka.controller:type=KafkaController`` on a controller, ``broker-metadata-metrics`` on a broker-only
    node: what the applied metadata image holds and how far it is."""

    def __init__(
        self,
        image: Callable[[], MetadataImage],
        *,
        controller: bool,
        errors: Callable[[], int] = lambda: 0,
        active: Callable[[], bool] = lambda: True,
    ) -> None:
        self._image = image
        self._controller = controller
        self._errors = errors  # records this node could not apply (Kafka's MetadataErrorCount)
        # A controller: whether it is the active one (a single controller always is; in a quorum, the Raft
        # leader once its epoch's first record is committed, as Kafka's QuorumController.claim sets it).
        self._active = active

    def collect(self) -> Iterator[Metric]:
        image = self._image()
        now_ms = time.time() * 1000
        lag = max(now_ms - image.timestamp_ms, 0.0) if image.timestamp_ms >= 0 else 0.0
        if not self._controller:
            prefix = "kafka_server_brokermetadatametrics_"
            yield gauge(prefix + "last_applied_record_offset", "Last applied offset", image.offset)
            yield gauge(prefix + "last_applied_record_timestamp", "Its append time (ms)", image.timestamp_ms)
            yield gauge(prefix + "last_applied_record_lag_ms", "Now minus that time", lag)
            yield gauge(prefix + "metadata_apply_error_count", "Records that failed to apply", self._errors())
            yield gauge(prefix + "metadata_load_error_count", "Failed loads", 0)
            return
        topics = image.topics.by_id.values()
        brokers = image.cluster.values()
        fenced = sum(1 for b in brokers if getattr(b, "fenced", False))
        values = {
            "activecontrollercount": 1 if self._active() else 0,
            "globaltopiccount": len(image.topics),
            "globalpartitioncount": sum(len(t.partitions) for t in topics),
            "activebrokercount": len(image.cluster) - fenced,
            "fencedbrokercount": fenced,
            "lastappliedrecordoffset": image.offset,
            "lastcommittedrecordoffset": image.offset,  # published only once committed: applied == committed
            "lastappliedrecordtimestamp": image.timestamp_ms,
            "lastappliedrecordlagms": lag,
            "metadataerrorcount": self._errors(),
        }
        for name, value in values.items():
            yield gauge(_CONTROLLER + name, f"KafkaController {name}", value)


class ForwardingCollector(Collector):
    """``kafka.server:type=ForwardingManager`` (KIP-938) on a broker-only node: the queue's length now, and the
    times the forwarding channel (``ControllerChannel``) observed."""

    def __init__(self, manager: ForwardingManager, queue_time_ms: Histogram, remote_time_ms: Histogram) -> None:
        self._manager = manager
        self._queue_time_ms = queue_time_ms
        self._remote_time_ms = remote_time_ms
        self._window = RecentWindow()

    def collect(self) -> Iterator[Metric]:
        prefix = "kafka_server_forwardingmanager_"
        yield gauge(prefix + "queuelength", "Forwarded requests waiting or in flight", self._manager.queued)
        yield summary(prefix + "queuetimems", "ms a request waited before it was first sent",
                      [({}, self._queue_time_ms, 0)], self._window)  # fmt: skip
        yield summary(prefix + "remotetimems", "ms from sending an envelope to the controller's answer",
                      [({}, self._remote_time_ms, 0)], self._window)  # fmt: skip


class ControllerMutationCollector(Collector):
    """The ``controller_mutation`` quota (KIP-599), as Kafka's ``ControllerMutation`` quota sensors: per bucket
    (``user``, ``client_id``), its tokens now and the mean throttle time of its throttled mutations."""

    def __init__(self, quotas: Callable[[], MutationQuotas | None]) -> None:
        self._quotas = quotas

    def collect(self) -> Iterator[Metric]:
        quotas = self._quotas()
        if quotas is None:
            return
        labels = ("user", "client_id")
        tokens = gauge("kafka_server_controllermutation_tokens", "Tokens left in the bucket", labels=labels)
        for (user, client), left in sorted(quotas.tokens(quotas.clock()).items()):
            tokens.add_metric([user, client], left)
        throttle = gauge("kafka_server_controllermutation_throttle_time", "Mean throttle ms", labels=labels)
        throttled = counter("ksteward_controller_mutation_throttled", "Mutations throttled", labels=labels)
        for (user, client), (times, total_ms) in sorted(quotas.throttled.items()):
            throttle.add_metric([user, client], total_ms / times)
            throttled.add_metric([user, client], times)
        yield from (tokens, throttle, throttled)


class PolicyCollector(Collector):
    """PolicyViolations per policy class (``ksteward.policy.loader.REJECTIONS``); Kafka has no such metric."""

    def collect(self) -> Iterator[Metric]:
        family = counter("ksteward_policy_rejections", "Requests a policy refused", labels=("policy",))
        for name, n in sorted(REJECTIONS.items()):
            family.add_metric([name], n)
        yield family


class ControllerEventCollector(Collector):
    """``kafka.controller:type=ControllerEventManager``. A ksteward controller event (a mutation, a heartbeat, a
    registration, the session check) runs when it is called, on the event loop: it never waits in a queue, so
    EventQueueTimeMs is 0 for each. EventQueueProcessingTimeMs is its time up to its records appended
    (``Controller.on_event_processed``)."""

    def __init__(self) -> None:
        self.processing_ms = Histogram()
        self._window = RecentWindow()

    def collect(self) -> Iterator[Metric]:
        prefix = "kafka_controller_controllereventmanager_"
        events = self.processing_ms.count
        yield summary(prefix + "eventqueuetimems", "Always 0: events run when called", [({}, Histogram(), events)])
        yield summary(prefix + "eventqueueprocessingtimems", "ms from an event's start to its records appended",
                      [({}, self.processing_ms, 0)], self._window)  # fmt: skip
