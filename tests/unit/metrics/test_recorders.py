"""The metrics package's plain parts: the histogram's quantiles, rates between scrapes, a response's error
codes, and ``metrics.port`` / ``metrics.host``."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kio.schema.errors import ErrorCode

from ksteward.protocol.apis import ApiKey
from ksteward.protocol.build import build
from ksteward.protocol.codec import response_class
from ksteward.server.metrics import MetricsSettings, metrics_settings
from ksteward.server.metrics.collectors import RateWindow
from ksteward.server.metrics.histogram import COUNT_BOUNDS, Histogram, RecentWindow
from ksteward.server.metrics.recorders import FOLD_EVERY, NO_RUN, Observation, RequestMetrics, RequestRun, error_codes


def test_quantiles_interpolate_inside_the_bucket() -> None:
    h = Histogram((1.0, 2.0, 4.0))
    for v in (0.5, 1.5, 1.5, 3.0):
        h.observe(v)
    assert h.count == 4 and h.sum == pytest.approx(6.5)
    assert h.quantile(0.25) == pytest.approx(1.0)  # the first bucket (0, 1] holds one of four
    assert h.quantile(0.5) == pytest.approx(1.5)
    assert h.quantile(1.0) == pytest.approx(4.0)
    assert Histogram().quantile(0.99) == 0.0


def test_unrecorded_zeros_pull_the_quantiles_down() -> None:
    h = Histogram((1.0, 2.0))
    h.observe(2.0)
    assert h.quantile(0.5, zeros=3) == 0.0
    assert h.quantile(0.99, zeros=3) > 1.0


def test_a_discrete_histogram_answers_bucket_bounds() -> None:
    h = Histogram(COUNT_BOUNDS, discrete=True)
    for v in (1, 1, 3):
        h.observe(v)
    assert h.quantile(0.5) == 1.0
    assert h.quantile(0.99) == 4.0


def test_a_rate_is_taken_over_the_window_between_scrapes() -> None:
    now = [0.0]
    window = RateWindow(60.0, clock=lambda: now[0])
    now[0] = 10.0
    assert window.rate(50) == pytest.approx(5.0)  # since it was made
    now[0] = 70.0
    assert window.rate(110) == pytest.approx(1.0)  # over the last minute: from 50 at 10 s to 110 at 70 s
    now[0] = 130.0
    assert window.rate(110) == pytest.approx(0.0)  # nothing new in the last minute


def test_error_codes_come_from_the_top_level_and_every_entry() -> None:
    cls = response_class(ApiKey.CREATE_ACLS, 3)
    results = [{"error_code": ErrorCode.none, "error_message": None},
               {"error_code": ErrorCode.invalid_request, "error_message": "bad"}]  # fmt: skip
    response = build(cls, {"throttle_time": 0, "results": results})
    assert error_codes(response) == (0, int(ErrorCode.invalid_request))
    api_versions = build(response_class(ApiKey.API_VERSIONS, 3), {"error_code": 35, "api_keys": []})
    assert error_codes(api_versions) == (35,)  # a top-level code only: the short path
    assert all(type(code) is int for code in error_codes(response) + error_codes(api_versions))
    reassignments = build(response_class(ApiKey.ALTER_PARTITION_REASSIGNMENTS, 0), {
        "throttle_time": 0, "error_code": 0, "error_message": None,
        "responses": [{"name": "t", "partitions": [{"partition_index": 0, "error_code": 3, "error_message": None}]}],
    })  # fmt: skip
    assert error_codes(reassignments) == (0,)  # one level of entries: the partitions' codes are not counted
    scram = build(response_class(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, 0), {
        "throttle_time": 0, "error_code": 0, "error_message": None,
        "results": [{"user": "alice", "error_code": 0, "error_message": None, "credential_infos": []},
                    {"user": "bob", "error_code": 93, "error_message": "no such user", "credential_infos": []}],
    })  # fmt: skip
    assert error_codes(scram) == (0, 0, 93)  # the top-level code and each entry's
    assert error_codes(object()) == ()


def test_one_request_is_recorded_per_version_and_error() -> None:
    metrics = RequestMetrics()
    metrics.record(29, 3, 40, (0,), 1.0, 0.0, 0.5)
    metrics.record(29, 2, 40, (31,), 1.0, 2.0, 0.5)
    stats = metrics.by_api[29]
    assert stats.by_version == {3: 1, 2: 1} and stats.errors == {0: 1, 31: 1}
    assert stats.requests == 2 and stats.total.count == 2 and stats.remote.count == 1
    assert stats.total.sum == pytest.approx(5.0)


def test_metrics_settings() -> None:
    assert metrics_settings({}) is None
    assert metrics_settings({"metrics.port": " "}) is None
    assert metrics_settings({"metrics.port": "9404"}) == MetricsSettings("127.0.0.1", 9404)
    assert metrics_settings({"metrics.port": "9404", "metrics.host": "::1"}) == MetricsSettings("::1", 9404)
    for bad, message in (("0", "between 1 and 65535, not 0"), ("65536", "not 65536"), ("x", "an integer")):
        with pytest.raises(ValueError, match=message):
            metrics_settings({"metrics.port": bad})


def test_recent_quantiles_forget_what_is_older_than_the_window() -> None:
    now = [0.0]
    window = RecentWindow(300.0, clock=lambda: now[0])
    h = Histogram((1.0, 10.0, 100.0))
    for _ in range(100):
        h.observe(50.0)  # slow at first
    assert window.recent("k", h).quantile(0.5) > 10.0  # no earlier scrape: everything so far
    now[0] = 300.0
    for _ in range(100):
        h.observe(0.5)  # then fast
    assert window.recent("k", h).quantile(0.99) <= 1.0  # only the last five minutes
    assert h.quantile(0.5) > 0.5  # the cumulative figures (_count, _sum) keep everything


def _row(key: int, version: int, codes: tuple[int, ...], local_s: float, remote_s: float = 0.0) -> Observation:
    """One request as the connection appends it: decoded at 10.0, answered after ``local_s + remote_s``, and
    taken by the socket 1 ms later."""
    handled = 10.0 + local_s + remote_s
    return (key, version, codes, 64, 10.0, handled, handled + 0.001, remote_s)


Served = tuple[int, int, tuple[int, ...], float, float]  # api key, version, error codes, local and remote seconds


def _serve(metrics: RequestMetrics, requests: list[Served], timed: list[bool] | None = None, run: RequestRun = NO_RUN,
           *, close: bool = True) -> RequestRun:  # fmt: skip
    """Record ``requests`` as one connection's serve loop does (``server.connection.Connection.serve``): each is
    counted into the connection's run, its wait for the controller kept when it was forwarded, and it is timed
    when ``timed`` says so or when its api key differs from the run's (the first request of a new type)."""
    for i, (key, version, codes, local_s, remote_s) in enumerate(requests):
        is_timed = (timed[i] if timed is not None else True) or key != run.api_key
        if codes == run.codes and key == run.api_key and version == run.api_version:
            run.count += 1
        else:
            run = metrics.next_run(run, key, version, codes)
        if remote_s:
            metrics.remote_waits.append((key, remote_s))
        if is_timed:
            metrics.pending.append(_row(key, version, codes, local_s, remote_s))
    if close:
        run.open = False
    return run


def test_a_fold_counts_every_request_and_error_exactly() -> None:
    metrics = RequestMetrics()
    pending = metrics.pending
    requests: list[Served] = [(3, 12, (0,), 0.002, 0.0)] * 1_000 + [(3, 11, (0, 3), 0.002, 0.0)] * 37
    requests += [(29, 3, (31,), 0.004, 0.02)] * 5
    _serve(metrics, requests, [i % 16 == 0 for i in range(len(requests))])  # some timed, as a connection times some
    assert len(pending) < len(requests) // 8
    metrics.fold()
    assert metrics.pending is pending and not pending  # connections keep the list: it is emptied, not replaced
    assert metrics.runs == []  # the connection's runs are closed: counted, then dropped
    metadata, acls = metrics.by_api[3], metrics.by_api[29]
    assert metadata.by_version == {12: 1_000, 11: 37} and metadata.errors == {0: 1_037, 3: 37}
    assert acls.by_version == {3: 5} and acls.errors == {31: 5}
    # Timed or not, every histogram counts every request, and the sums stay whole-batch figures.
    for h in (metadata.total, metadata.local, metadata.send, metadata.request_bytes):
        assert h.count == 1_037
    assert metadata.total.sum == pytest.approx(1_037 * 3.0)  # 2 ms handling + 1 ms sending, in ms
    assert metadata.request_bytes.sum == pytest.approx(1_037 * 64)
    assert metadata.remote.count == 0
    assert acls.remote.count == 5 and acls.remote.sum == pytest.approx(5 * 20.0)  # every forwarded one
    assert acls.local.sum == pytest.approx(5 * 4.0)  # the handler's time less the wait for the controller


def test_an_open_run_is_counted_at_every_fold_and_kept_until_it_closes() -> None:
    metrics = RequestMetrics()
    run = _serve(metrics, [(18, 3, (0,), 0.001, 0.0)] * 10, [False] * 10, close=False)
    metrics.fold()
    assert metrics.runs == [run] and metrics.by_api[18].requests == 10
    run = _serve(metrics, [(18, 3, (0,), 0.001, 0.0)] * 5, [False] * 5, run)  # the same run goes on, then closes
    metrics.fold()
    stats = metrics.by_api[18]
    assert metrics.runs == [] and stats.requests == 15 and stats.errors == {0: 15}
    # The second fold timed none of its five: the first fold's timed request stands for them.
    assert stats.total.count == 15 and stats.total.sum == pytest.approx(15 * 2.0)


def test_a_fold_forced_by_many_runs_keeps_a_new_types_count_and_its_timed_request_together() -> None:
    metrics = RequestMetrics()
    # A client whose answers alternate between two error codes starts a run with every request.
    _serve(metrics, [(3, 12, (0,) if i % 2 else (3,), 0.001, 0.0) for i in range(FOLD_EVERY)], [False] * FOLD_EVERY)
    assert len(metrics.runs) == FOLD_EVERY and metrics.by_api == {}
    _serve(metrics, [(18, 3, (0,), 0.005, 0.0)])  # a new type: this run forces the fold of the others first
    assert 18 not in metrics.by_api and metrics.by_api[3].requests == FOLD_EVERY
    metrics.fold()
    versions = metrics.by_api[18]
    assert versions.requests == 1 and versions.total.count == 1 and versions.total.sum == pytest.approx(6.0)


def test_a_large_batch_is_timed_from_a_sample_that_a_repeating_pattern_cannot_fool() -> None:
    metrics = RequestMetrics()
    # 1,000 timed requests, one in every 31 slow: a sample of every 31st row (1,000 // 32) would hold only slow ones.
    _serve(metrics, [(18, 3, (0,), 0.2 if i % 31 == 0 else 0.0001, 0.0) for i in range(1_000)])
    metrics.fold()
    total = metrics.by_api[18].total
    assert total.count == 1_000
    assert total.quantile(0.5) < 2.5  # 1.1 ms: the fast requests are the median, as they are in the traffic


@given(
    st.lists(
        st.tuples(
            st.sampled_from((3, 18, 29)),
            st.integers(0, 3),
            st.sampled_from(((0,), (0, 3), (), (31, 31))),
            st.booleans(),  # timed
            st.booleans(),  # forwarded
            st.booleans(),  # a fold (a scrape, or FOLD_EVERY reached) after it
        ),
        max_size=300,
    ),
    st.integers(1, 3),
)
def test_any_requests_are_counted_as_request_by_request_counting_does(requests: list[Any], connections: int) -> None:
    metrics = RequestMetrics()
    runs = [NO_RUN] * connections
    for i, (key, version, codes, timed, forwarded, fold) in enumerate(requests):
        c = i % connections  # the connections' requests interleave
        runs[c] = _serve(metrics, [(key, version, codes, 0.001, 0.002 if forwarded else 0.0)], [timed], runs[c],
                         close=False)  # fmt: skip
        if fold:
            metrics.fold()
    for run in runs:
        run.open = False
    metrics.fold()
    assert metrics.runs == []
    for key in {key for key, *_ in requests} | set(metrics.by_api):
        mine = [(version, codes, forwarded) for k, version, codes, _, forwarded, _ in requests if k == key]
        stats = metrics.by_api[key]
        assert stats.by_version == Counter(version for version, _, _ in mine)
        assert stats.errors == Counter(code for _, codes, _ in mine for code in codes)
        assert stats.total.count == stats.local.count == stats.request_bytes.count == len(mine)
        assert stats.remote.count == sum(1 for *_, forwarded in mine if forwarded)
