"""``SampledAvgMax``: Kafka's ``Avg`` and ``Max`` over sampled windows (``SampledStat``), which raft-metrics'
``commit-latency-avg`` / ``-max`` report, and the committer's per-record commit latency that feeds them."""

from __future__ import annotations

import asyncio
import logging
import math
import uuid
from pathlib import Path

import pytest
from kio.static.primitive import i8

from ksteward.metadata.loader import load
from ksteward.metadata.records import AccessControlEntryRecord
from ksteward.metadata.records.control import LeaderChangeMessage
from ksteward.server.committer import GroupCommitter
from ksteward.server.metrics.histogram import SampledAvgMax


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_no_event_reads_nan_as_kafka_does() -> None:
    stat = SampledAvgMax(clock=Clock())
    assert math.isnan(stat.avg()) and math.isnan(stat.max())


def test_mean_and_max_over_the_samples_that_count() -> None:
    clock = Clock()
    stat = SampledAvgMax(samples=2, window_s=30.0, clock=clock)
    for value in (1.0, 3.0):
        stat.record(value)
    clock.now += 30  # the first sample is complete: a second one starts
    stat.record(8.0)
    clock.now += 25  # the first one's last event is 55 s old: it still counts
    assert stat.avg() == pytest.approx(4.0) and stat.max() == 8.0
    clock.now += 6  # 61 s: it no longer does
    stat.record(2.0)  # into a third sample (Kafka keeps samples + 1)
    assert stat.avg() == pytest.approx(5.0) and stat.max() == 8.0
    clock.now += 31  # a fourth reuses the first's slot; the second's last event is 62 s old
    stat.record(6.0)
    assert stat.avg() == pytest.approx(4.0) and stat.max() == 6.0


def test_a_sample_with_no_event_for_two_windows_no_longer_counts() -> None:
    clock = Clock()
    stat = SampledAvgMax(samples=2, window_s=30.0, clock=clock)
    stat.record(5.0)
    clock.now += 59.9
    assert stat.avg() == 5.0
    clock.now += 0.1
    assert math.isnan(stat.avg()) and math.isnan(stat.max())
    stat.record(7.0)
    assert stat.avg() == 7.0 and stat.max() == 7.0


def _acl(name: str) -> AccessControlEntryRecord:
    return AccessControlEntryRecord(
        id=uuid.uuid4(), resource_type=i8(2), resource_name=name, pattern_type=i8(3), principal="User:alice",
        host="*", operation=i8(3), permission_type=i8(3),
    )  # fmt: skip


@pytest.mark.parametrize("quorum", [False, True], ids=["one voter", "several voters"])
def test_the_committer_times_each_commit_per_record_from_its_append(tmp_path: Path, quorum: bool) -> None:
    """With one voter a batch commits once durable; with several, once the high watermark passes it too. The
    LeaderChange control batch has no records and is not counted (Kafka appends it outside ``appendBatch``)."""

    async def run() -> tuple[float, float, float]:
        image, log = load(tmp_path, logging.getLogger("test"))
        committer = GroupCommitter(log, image, epoch=1, snapshot_bytes=1 << 30, quorum=quorum)
        if quorum:
            committer.activate(1)
        committer.begin_epoch(LeaderChangeMessage(version=0, leader_id=1, voters=[], granting_voters=[]))
        before = committer.commit_latency.avg()
        writes = [committer.append([_acl("a")]), committer.append([_acl(f"b{i}") for i in range(4)])]
        if quorum:
            while len(committer._uncommitted) < 3:
                await asyncio.sleep(0.005)
            assert math.isnan(committer.commit_latency.avg())  # durable here, not committed yet
            committer.advance_high_watermark(log.next_offset)
        await asyncio.gather(*writes)
        result = before, committer.commit_latency.avg(), committer.commit_latency.max()
        await committer.close(snapshot=False)
        log.close()
        return result

    before, avg, most = asyncio.run(run())
    assert math.isnan(before)
    assert 0 < avg <= most
