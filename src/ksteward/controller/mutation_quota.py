"""The controller mutation quota (KIP-599): ``controller_mutation_rate`` on topic mutations.

Sans-IO, with an injectable clock. Kafka's ``ControllerMutationQuotaManager`` keeps, per quota
bucket, a token bucket (``TokenBucket``) that refills at the quota's rate (partitions per second)
up to a burst of ``samples x window x rate`` (11 x 1 s by default: ``controller.quota.window.num``,
``controller.quota.window.size.seconds``). Each partition created or deleted takes one token.

- **strict** (CreateTopics v6+, DeleteTopics v5+, CreatePartitions v3+): a mutation is refused with
  THROTTLING_QUOTA_EXCEEDED while the bucket is below zero; otherwise it is accepted whole, even if
  it drives the bucket negative;
- **permissive** (older versions): every mutation is accepted, and a negative bucket only sets the
  throttle time;
- the throttle time is the time the bucket needs to climb back to zero: ``round(-tokens / rate * 1000)``
  ms, less the time elapsed since it was computed.

Which quota applies, and which bucket it is charged to, follow Kafka's default quota callback
(``ClientQuotaManager``): the first of these entities that sets ``controller_mutation_rate`` decides:

1. user=<user>, client-id=<client-id>      5. user=<default>, client-id=<default>
2. user=<user>, client-id=<default>        6. user=<default>
3. user=<user>                             7. client-id=<client-id>
4. user=<default>, client-id=<client-id>   8. client-id=<default>

The bucket is shared as widely as the entity that decided: (user, client-id) for 1, 2, 4 and 5,
the user for 3 and 6, the client id for 7 and 8. With no such entity, mutations are unlimited.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from kio.schema.errors import ErrorCode

from ksteward.controller.quotas import CLIENT_ID, CONTROLLER_MUTATION_RATE, USER
from ksteward.controller.topic_requests import ApiError
from ksteward.metadata.image import QuotaEntity

Clock = Callable[[], float]
"""Seconds, monotonic."""
Tags = tuple[str, str]
"""A bucket's (user, client id) metric tags; "" where the bucket is shared across that dimension."""

DEFAULT_SAMPLES = 11
DEFAULT_WINDOW_SECONDS = 1.0
THROTTLED = ApiError(ErrorCode.throttling_quota_exceeded, "The throttling quota has been exceeded.")
_PRUNE_ABOVE = 1024
#: Where throttles are counted once ``_PRUNE_ABOVE`` buckets have been: many client ids must not grow the figures.
OTHER_TAGS: Tags = ("<other>", "<other>")


def _pair(user: str | None, client_id: str | None) -> QuotaEntity:
    return ((CLIENT_ID, client_id), (USER, user))  # sorted by type, as the image keys entities


def _user(user: str | None) -> QuotaEntity:
    return ((USER, user),)


def _client(client_id: str | None) -> QuotaEntity:
    return ((CLIENT_ID, client_id),)


def rates_of(quotas: Mapping[QuotaEntity, Mapping[str, float]]) -> dict[QuotaEntity, float]:
    """The entities that set ``controller_mutation_rate``, with their rate."""
    return {
        entity: values[CONTROLLER_MUTATION_RATE]
        for entity, values in quotas.items()
        if CONTROLLER_MUTATION_RATE in values
    }


def bucket_tags(rates: Mapping[QuotaEntity, float], user: str, client_id: str) -> Tags:
    """Kafka's ``quotaMetricTags``: which bucket a (user, client id) is charged to."""
    if _pair(user, client_id) in rates or _pair(user, None) in rates:
        return user, client_id
    if _user(user) in rates:
        return user, ""
    if _pair(None, client_id) in rates or _pair(None, None) in rates:
        return user, client_id
    if _user(None) in rates:
        return user, ""
    return "", client_id


def bucket_rate(rates: Mapping[QuotaEntity, float], tags: Tags) -> float | None:
    """Kafka's ``quotaLimit``: the rate of a bucket, None for unlimited."""
    user, client_id = tags
    if user and client_id:
        candidates = [_pair(user, client_id), _pair(user, None), _pair(None, client_id), _pair(None, None)]
    elif user:
        candidates = [_user(user), _user(None)]
    elif client_id:
        candidates = [_client(client_id), _client(None)]
    else:
        return None
    return next((rates[e] for e in candidates if e in rates), None)


@dataclass(slots=True)
class TokenBucket:
    """Kafka's ``TokenBucket``; a new bucket is full, as Kafka's is on its first refill."""

    tokens: float
    updated: float
    burst: float

    def refill(self, rate: float, burst: float, now: float) -> None:
        self.burst = burst
        elapsed = now - self.updated
        gained = rate * elapsed if elapsed > 0 else 0.0  # never inf x 0 for an infinite rate
        self.tokens = min(burst, self.tokens + gained)
        self.updated = max(self.updated, now)

    def throttle_ms(self, rate: float) -> int:
        """The ms until the bucket is back to zero (Java's ``Math.round``); 0 unless it is negative."""
        return math.floor(-self.tokens / rate * 1000 + 0.5) if self.tokens < 0 else 0


class MutationQuotaRecorder:
    """One request's view of its quota: ``charge`` is the controller's :data:`QuotaCharge`."""

    def __init__(self, quotas: MutationQuotas, tags: Tags, rate: float | None, strict: bool) -> None:
        self._quotas = quotas
        self._tags = tags
        self._rate = rate
        self.strict = strict
        self._throttle_ms = 0
        self._recorded_at = 0.0

    def charge(self, permits: int) -> ApiError | None:
        rate = self._rate
        if rate is None:
            return None
        now = self._quotas.clock()
        bucket = self._quotas.bucket(self._tags, rate, now)
        if self.strict:
            if bucket.tokens < 0:
                self._throttled(bucket.throttle_ms(rate), now)
                return THROTTLED
            bucket.tokens = min(bucket.burst, bucket.tokens - permits)
            return None
        bucket.tokens = min(bucket.burst, bucket.tokens - permits)
        if bucket.tokens < 0:
            self._throttled(bucket.throttle_ms(rate), now)
        return None

    def _throttled(self, throttle_ms: int, now: float) -> None:
        self._throttle_ms = throttle_ms
        self._recorded_at = now
        throttled = self._quotas.throttled
        tags = self._tags if self._tags in throttled or len(throttled) < _PRUNE_ABOVE else OTHER_TAGS
        times, total_ms = throttled.get(tags, (0, 0))
        throttled[tags] = (times + 1, total_ms + throttle_ms)

    def throttle_time_ms(self) -> int:
        """The throttle time to report, less what has elapsed since it was computed."""
        if self._throttle_ms == 0:
            return 0
        elapsed_ms = (self._quotas.clock() - self._recorded_at) * 1000
        return max(0, int(self._throttle_ms - elapsed_ms))


class MutationQuotas:
    """The node's mutation quota buckets. Unlimited until some entity sets ``controller_mutation_rate``."""

    def __init__(
        self,
        clock: Clock = time.monotonic,
        samples: int = DEFAULT_SAMPLES,
        window_seconds: float = DEFAULT_WINDOW_SECONDS,
    ) -> None:
        self.clock = clock
        self.burst_seconds = samples * window_seconds
        self._buckets: dict[Tags, TokenBucket] = {}
        #: Per bucket: mutations throttled (or refused) since start, and their throttle times' sum in ms (metrics).
        self.throttled: dict[Tags, tuple[int, int]] = {}
        self._rates_of: Mapping[QuotaEntity, Mapping[str, float]] | None = None
        self._rates: dict[QuotaEntity, float] = {}

    def _rates_for(self, quotas: Mapping[QuotaEntity, Mapping[str, float]]) -> dict[QuotaEntity, float]:
        if quotas is not self._rates_of:  # the image replaces the mapping whenever a quota changes
            self._rates = rates_of(quotas)
            self._rates_of = quotas
        return self._rates

    def resolve(
        self, quotas: Mapping[QuotaEntity, Mapping[str, float]], user: str, client_id: str
    ) -> tuple[Tags, float | None]:
        """The bucket a (user, client id) is charged to and its rate (None: unlimited)."""
        rates = self._rates_for(quotas)
        if not rates:
            return ("", client_id), None
        tags = bucket_tags(rates, user, client_id)
        return tags, bucket_rate(rates, tags)

    def recorder(
        self, quotas: Mapping[QuotaEntity, Mapping[str, float]], user: str, client_id: str, *, strict: bool
    ) -> MutationQuotaRecorder:
        tags, rate = self.resolve(quotas, user, client_id)
        return MutationQuotaRecorder(self, tags, rate, strict)

    def bucket(self, tags: Tags, rate: float, now: float) -> TokenBucket:
        """The bucket for ``tags``, refilled to ``now``."""
        burst = self.burst_seconds * rate
        found = self._buckets.get(tags)
        if found is None:
            if len(self._buckets) >= _PRUNE_ABOVE:
                self._prune(now)
            found = self._buckets[tags] = TokenBucket(burst, now, burst)
        found.refill(rate, burst, now)
        return found

    def tokens(self, now: float) -> dict[Tags, float]:
        """Each live bucket's tokens as of ``now``, without touching the buckets (Kafka's ``tokens`` metric)."""
        out = {}
        for tags, bucket in self._buckets.items():
            rate = bucket.burst / self.burst_seconds if self.burst_seconds else 0.0
            out[tags] = min(bucket.burst, bucket.tokens + rate * max(now - bucket.updated, 0.0))
        return out

    def _prune(self, now: float) -> None:
        """Forget buckets that have refilled completely: a new bucket is the same (Kafka expires idle sensors)."""
        for tags, bucket in list(self._buckets.items()):
            rate = bucket.burst / self.burst_seconds if self.burst_seconds else 0.0
            if bucket.tokens + rate * (now - bucket.updated) >= bucket.burst:
                del self._buckets[tags]
