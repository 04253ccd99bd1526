"""GroupCommitter: writes that come one at a time are fsynced in line once the thread only added latency, and
writes that overlap share an fsync in the worker thread again (``ksteward.server.committer``)."""

from __future__ import annotations

import asyncio
import logging
import uuid
from pathlib import Path

from kio.static.primitive import i8

from ksteward.metadata.loader import load
from ksteward.metadata.log import MetadataLog
from ksteward.metadata.records import AccessControlEntryRecord
from ksteward.server.committer import INLINE_FLUSHES_PER_PROBE, SOLO_FLUSHES_BEFORE_INLINE, GroupCommitter

LOGGER = logging.getLogger("test")


def acl(name: str) -> AccessControlEntryRecord:
    return AccessControlEntryRecord(
        id=uuid.uuid4(), resource_type=i8(2), resource_name=name, pattern_type=i8(3), principal="User:alice",
        host="*", operation=i8(3), permission_type=i8(3),
    )  # fmt: skip


def test_one_writer_at_a_time_goes_inline_and_overlapping_writers_share_fsyncs(tmp_path: Path) -> None:
    async def run() -> tuple[list[bool], int, int, int]:
        image, log = load(tmp_path, LOGGER)
        committer = GroupCommitter(log, image, epoch=1, snapshot_bytes=1 << 30)
        committer.start()
        resolved_at_once = []
        for i in range(SOLO_FLUSHES_BEFORE_INLINE + 3 * INLINE_FLUSHES_PER_PROBE + 3):
            future = committer.append([acl(f"solo-{i}")])
            resolved_at_once.append(future.done())  # in line: durable before append returns
            await future
            await asyncio.sleep(0)  # one loop turn, as the writer's next request arrives in (not a timed wait)
        fsyncs_before = committer.fsyncs
        burst = [committer.append([acl(f"burst-{i}")]) for i in range(20)]  # in one turn of the loop
        await asyncio.gather(*burst)  # the first in line; the second sees the overlap and the rest share fsyncs
        burst_fsyncs = committer.fsyncs - fsyncs_before
        offset = committer.published.offset
        await committer.close(snapshot=False)
        log.close()
        return resolved_at_once, burst_fsyncs, offset, len(burst)

    resolved_at_once, burst_fsyncs, offset, burst = asyncio.run(run())
    solo = SOLO_FLUSHES_BEFORE_INLINE
    assert resolved_at_once[:solo] == [False] * solo  # through the worker thread until the pattern is seen
    assert resolved_at_once[solo : solo + INLINE_FLUSHES_PER_PROBE] == [True] * INLINE_FLUSHES_PER_PROBE
    assert resolved_at_once[solo + INLINE_FLUSHES_PER_PROBE] is False  # the probe goes through the thread
    # It found the writes still one at a time: the next run in line is twice as long, then another probe.
    second = solo + INLINE_FLUSHES_PER_PROBE + 1
    assert resolved_at_once[second : second + 2 * INLINE_FLUSHES_PER_PROBE] == [True] * (2 * INLINE_FLUSHES_PER_PROBE)
    assert resolved_at_once[second + 2 * INLINE_FLUSHES_PER_PROBE] is False
    assert burst_fsyncs <= 3 < burst  # overlapping writes shared fsyncs
    with MetadataLog.open(tmp_path, logger=LOGGER, read_only=True) as log:
        assert sum(len(b.records) for b in log.read(0)) == offset + 1  # every acknowledged batch is in the log


def test_every_fsync_is_timed_with_group_commit_off_too(tmp_path: Path) -> None:
    """``ksteward.metadata.group.commit.enable=false``: one fsync per batch, each in the fsync metrics."""

    async def run() -> tuple[int, int, int]:
        image, log = load(tmp_path, LOGGER)
        committer = GroupCommitter(log, image, epoch=1, snapshot_bytes=1 << 30, group_commit=False)
        for i in range(5):
            await committer.append([acl(f"one-{i}")])
        counts = committer.fsyncs, committer.fsync_ms.count, committer.batches_per_fsync.count
        await committer.close(snapshot=False)
        log.close()
        return counts

    assert asyncio.run(run()) == (5, 5, 5)
