"""The controller mutation quota (KIP-599): token buckets on a fake clock, strict and permissive
recording, and which quota applies to a (user, client id)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from kio.schema.errors import ErrorCode

from ksteward.controller.mutation_quota import MutationQuotas, bucket_rate, bucket_tags, rates_of
from ksteward.controller.quotas import canonical
from ksteward.controller.topic_requests import NewPartitions, NewTopic, TopicRef
from ksteward.metadata.image import QuotaEntity

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "topics"))
from topic_support import cluster, manager, with_topic


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def quota(rate: float, user: str | bool | None = False, client: str | bool | None = False) -> dict:
    pairs: list[tuple[str, str | None]] = []
    if user is not False:
        pairs.append(("user", user))  # type: ignore[arg-type]
    if client is not False:
        pairs.append(("client-id", client))  # type: ignore[arg-type]
    return {canonical(tuple(pairs)): {"controller_mutation_rate": rate}}


def quotas_for(*parts: dict) -> dict[QuotaEntity, dict[str, float]]:
    merged: dict[QuotaEntity, dict[str, float]] = {}
    for part in parts:
        merged.update(part)
    return merged


# --------------------------------------------------------------------------- the token bucket


def test_unlimited_without_a_quota() -> None:
    clock = FakeClock()
    q = MutationQuotas(clock)
    other_key = {canonical((("user", "u"),)): {"producer_byte_rate": 10.0}}
    recorder = q.recorder(other_key, "u", "c", strict=True)
    assert all(recorder.charge(1000) is None for _ in range(10))
    assert recorder.throttle_time_ms() == 0


def test_strict_accepts_until_the_bucket_is_negative_then_refuses() -> None:
    clock = FakeClock()
    q = MutationQuotas(clock)  # burst = 11 samples x 1 s x rate
    quotas = quota(2.0, client="c")  # burst 22
    recorder = q.recorder(quotas, "u", "c", strict=True)
    assert recorder.charge(20) is None  # 2 left
    assert recorder.charge(5) is None  # accepted whole although it overdraws: -3
    error = recorder.charge(1)
    assert error is not None and error.code == ErrorCode.throttling_quota_exceeded
    assert error.message == "The throttling quota has been exceeded."
    assert recorder.throttle_time_ms() == 1500  # 3 tokens at 2/s
    clock.now += 0.5
    assert recorder.throttle_time_ms() == 1000  # less the time elapsed since it was computed
    clock.now += 1.0  # back to zero: accepted again
    assert recorder.charge(1) is None


def test_strict_refusal_takes_no_tokens() -> None:
    clock = FakeClock()
    q = MutationQuotas(clock)
    quotas = quota(1.0, client="c")
    first = q.recorder(quotas, "u", "c", strict=True)
    assert first.charge(15) is None  # -4
    for _ in range(3):
        assert first.charge(1) is not None
    second = q.recorder(quotas, "u", "c", strict=True)  # a later request shares the bucket
    assert second.charge(1) is not None
    assert second.throttle_time_ms() == 4000


def test_permissive_accepts_and_reports_the_throttle() -> None:
    clock = FakeClock()
    q = MutationQuotas(clock)
    quotas = quota(1.0, client="c")
    recorder = q.recorder(quotas, "u", "c", strict=False)
    assert recorder.charge(11) is None
    assert recorder.throttle_time_ms() == 0
    assert recorder.charge(3) is None
    assert recorder.charge(3) is None
    assert recorder.throttle_time_ms() == 6000


def test_refill_is_capped_at_the_burst() -> None:
    clock = FakeClock()
    q = MutationQuotas(clock, samples=2, window_seconds=1.0)
    quotas = quota(5.0, client="c")  # burst 10
    recorder = q.recorder(quotas, "u", "c", strict=True)
    assert recorder.charge(10) is None
    clock.now += 3600
    assert recorder.charge(10) is None  # refilled to 10, not 18000
    assert recorder.charge(1) is None  # exactly 0 left is not negative
    assert recorder.charge(1) is not None


def test_throttle_time_rounds_half_up() -> None:
    clock = FakeClock()
    q = MutationQuotas(clock, samples=1, window_seconds=1.0)
    quotas = quota(3.0, client="c")  # burst 3
    recorder = q.recorder(quotas, "u", "c", strict=False)
    recorder.charge(4)  # -1 token at 3/s: 333.33 ms
    assert recorder.throttle_time_ms() == 333


def test_a_quota_change_applies_to_the_existing_bucket() -> None:
    clock = FakeClock()
    q = MutationQuotas(clock)
    assert q.recorder(quota(1.0, client="c"), "u", "c", strict=True).charge(12) is None  # -1
    faster = quota(100.0, client="c")
    recorder = q.recorder(faster, "u", "c", strict=True)
    assert recorder.charge(1) is not None  # still -1: the tokens carry over
    clock.now += 0.02  # +2 tokens at the new rate
    assert recorder.charge(1) is None


def test_full_buckets_are_forgotten() -> None:
    clock = FakeClock()
    q = MutationQuotas(clock)
    quotas = {canonical((("client-id", None),)): {"controller_mutation_rate": 1.0}}
    for i in range(3000):
        q.recorder(quotas, "u", f"client-{i}", strict=True).charge(1)
        clock.now += 1.0
    assert len(q._buckets) <= 1024


# --------------------------------------------------------------------------- which quota applies

# The eight levels, most specific first, and the bucket each shares.
LEVELS = [
    (quota(1.0, user="u", client="c"), ("u", "c")),
    (quota(2.0, user="u", client=None), ("u", "c")),
    (quota(3.0, user="u"), ("u", "")),
    (quota(4.0, user=None, client="c"), ("u", "c")),
    (quota(5.0, user=None, client=None), ("u", "c")),
    (quota(6.0, user=None), ("u", "")),
    (quota(7.0, client="c"), ("", "c")),
    (quota(8.0, client=None), ("", "c")),
]


@pytest.mark.parametrize("level", range(len(LEVELS)))
def test_precedence(level: int) -> None:
    # Every level from this one down is set: the most specific of them decides.
    rates = rates_of(quotas_for(*(q for q, _ in LEVELS[level:])))
    tags = bucket_tags(rates, "u", "c")
    assert tags == LEVELS[level][1]
    assert bucket_rate(rates, tags) == float(level + 1)


def test_other_users_and_clients_do_not_match() -> None:
    rates = rates_of(quotas_for(quota(1.0, user="u", client="c"), quota(3.0, user="u"), quota(7.0, client="c")))
    assert bucket_rate(rates, bucket_tags(rates, "v", "d")) is None
    assert bucket_rate(rates, bucket_tags(rates, "v", "c")) == 7.0
    assert bucket_rate(rates, bucket_tags(rates, "u", "d")) == 3.0


def test_only_controller_mutation_rate_counts() -> None:
    quotas = quotas_for(quota(3.0, user="u"))
    quotas[canonical((("client-id", "c"), ("user", "u")))] = {"producer_byte_rate": 100.0}
    assert rates_of(quotas) == {(("user", "u"),): 3.0}


def test_user_level_bucket_is_shared_by_every_client_id() -> None:
    clock = FakeClock()
    q = MutationQuotas(clock)
    quotas = quota(1.0, user="u")  # burst 11
    assert q.recorder(quotas, "u", "one", strict=True).charge(11) is None  # 0 left
    assert q.recorder(quotas, "u", "two", strict=True).charge(1) is None  # -1
    assert q.recorder(quotas, "u", "three", strict=True).charge(1) is not None
    assert q.recorder(quotas, "v", "four", strict=True).charge(100) is None  # another user: unlimited


def test_default_client_quota_gives_each_client_id_its_own_bucket() -> None:
    clock = FakeClock()
    q = MutationQuotas(clock)
    quotas = quota(1.0, client=None)
    assert q.recorder(quotas, "u", "one", strict=True).charge(12) is None
    assert q.recorder(quotas, "u", "one", strict=True).charge(1) is not None
    assert q.recorder(quotas, "u", "two", strict=True).charge(1) is None


# --------------------------------------------------------------------------- with the topic controller


def test_create_topics_charges_partitions_and_refuses_whole_topics() -> None:
    clock = FakeClock()
    q = MutationQuotas(clock)
    recorder = q.recorder(quota(1.0, client="c"), "u", "c", strict=True)  # burst 11
    topics = [NewTopic(f"t{i}", num_partitions=5, replication_factor=1) for i in range(4)]
    mutation = manager().create_topics(cluster(), topics, charge=recorder.charge)
    codes = [r.error.code for r in mutation.response]
    assert codes == [ErrorCode.none, ErrorCode.none, ErrorCode.none, ErrorCode.throttling_quota_exceeded]
    assert recorder.throttle_time_ms() == 4000  # 11 - 15 = -4 tokens at 1/s
    assert {type(r).__name__ for r in mutation.records} >= {"TopicRecord"}
    assert sum(type(r).__name__ == "TopicRecord" for r in mutation.records) == 3


def test_validate_only_still_charges() -> None:
    clock = FakeClock()
    q = MutationQuotas(clock)
    quotas = quota(1.0, client="c")
    topics = [NewTopic("t", num_partitions=12, replication_factor=1)]
    first = q.recorder(quotas, "u", "c", strict=True)
    assert manager().create_topics(cluster(), topics, validate_only=True, charge=first.charge).records == ()
    second = q.recorder(quotas, "u", "c", strict=True)
    refused = manager().create_topics(cluster(), topics, charge=second.charge).response[0]
    assert refused.error.code == ErrorCode.throttling_quota_exceeded


def test_delete_topics_and_create_partitions_charge_their_partitions() -> None:
    clock = FakeClock()
    q = MutationQuotas(clock, samples=1)  # burst = rate = 4
    quotas = quota(4.0, client="c")
    image = with_topic(with_topic(cluster(), "a", [(1,)] * 5), "b", [(1,)] * 2)
    deleting = q.recorder(quotas, "u", "c", strict=True)
    refs = [TopicRef("a"), TopicRef("b")]
    results = manager().delete_topics(image, refs, api_version=6, charge=deleting.charge).response
    # "a" (5 partitions) is accepted with 4 tokens left and overdraws the bucket; "b" is then refused.
    assert {r.name: r.error.code for r in results} == {"a": ErrorCode.none, "b": ErrorCode.throttling_quota_exceeded}
    assert deleting.throttle_time_ms() == 250
    clock.now += 100
    growing = q.recorder(quotas, "u", "c", strict=True)
    grown = manager().create_partitions(image, [NewPartitions("b", 9), NewPartitions("a", 6)], charge=growing.charge)
    assert [r.error.code for r in grown.response] == [ErrorCode.none, ErrorCode.throttling_quota_exceeded]
    assert growing.throttle_time_ms() == 750  # 4 - 7 = -3 tokens at 4/s


def test_the_metrics_see_each_buckets_tokens_and_throttles() -> None:
    clock = FakeClock()
    q = MutationQuotas(clock)
    quotas = quota(2.0, client="c")  # burst 22, shared by client id "c"
    recorder = q.recorder(quotas, "u", "c", strict=True)
    assert recorder.charge(25) is None  # -3
    assert recorder.charge(1) is not None  # refused: 1500 ms
    clock.now += 0.5
    assert recorder.charge(1) is not None  # refused: 1000 ms
    ((tags, (times, total_ms)),) = q.throttled.items()
    assert (times, total_ms) == (2, 2500)
    assert q.tokens(clock.now) == {tags: pytest.approx(-2.0)}
    clock.now += 100
    assert q.tokens(clock.now) == {tags: pytest.approx(22.0)}  # capped at the burst; the bucket itself untouched
