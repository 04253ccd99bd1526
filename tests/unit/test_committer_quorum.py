"""GroupCommitter with several voters (``quorum=True``): durable is not committed. A write is answered only once
the high watermark passes it; losing the leadership fails what waits with NotControllerError and reverts
``latest`` to the last committed image; a standby accepts no write (``ksteward.server.committer``)."""

from __future__ import annotations

import asyncio
import logging
import uuid
from pathlib import Path

import pytest
from kio.static.primitive import i8

from ksteward.controller.active import Controller
from ksteward.controller.result import NotControllerError
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


async def _until(condition: object, what: str) -> None:
    for _ in range(500):
        if callable(condition) and condition():
            return
        await asyncio.sleep(0.01)
    raise AssertionError(what)


def test_a_write_is_answered_once_the_high_watermark_passes_it_not_once_durable(tmp_path: Path) -> None:
    async def run() -> None:
        image, log = load(tmp_path, LOGGER)
        durable: list[int] = []
        committer = GroupCommitter(log, image, epoch=1, snapshot_bytes=1 << 30, quorum=True, on_durable=durable.append)
        with pytest.raises(NotControllerError):
            committer.append([acl("standby")])  # not leading yet
        committer.activate(2)
        first = committer.append([acl("a")])
        await _until(lambda: durable, "the fsync reported the durable end")
        assert durable[-1] == 1 and not first.done()  # durable here, not yet on a majority
        assert committer.published.offset == -1 and committer.latest.offset == 0
        committer.advance_high_watermark(1)
        assert await first == 0
        assert committer.published.offset == 0
        await committer.close(snapshot=False)
        log.close()

    asyncio.run(run())


def test_losing_the_leadership_fails_waiting_writes_and_reverts_to_the_committed_image(tmp_path: Path) -> None:
    async def run() -> None:
        image, log = load(tmp_path, LOGGER)
        committer = GroupCommitter(log, image, epoch=1, snapshot_bytes=1 << 30, quorum=True)
        committer.activate(1)
        committed = committer.append([acl("committed")])
        await _until(lambda: committer._uncommitted, "durable")
        committer.advance_high_watermark(1)
        await committed
        lost = [committer.append([acl(f"lost-{i}")]) for i in range(3)]
        assert len(committer.latest.acls) == 4
        committer.abandon()
        for future in lost:
            with pytest.raises(NotControllerError):
                await future
        assert committer.latest is committer.published and len(committer.latest.acls) == 1
        with pytest.raises(NotControllerError):
            committer.append([acl("after")])
        await committer.close(snapshot=False)
        log.close()

    asyncio.run(run())


def test_a_standby_controller_refuses_every_operation_with_not_controller(tmp_path: Path) -> None:
    async def run() -> None:
        image, log = load(tmp_path, LOGGER)
        committer = GroupCommitter(log, image, epoch=1, snapshot_bytes=1 << 30, quorum=True)
        controller = Controller(committer)
        controller.is_active = lambda: committer.active
        with pytest.raises(NotControllerError):
            await controller.fence_stale_brokers(0.0)  # writes nothing, and still refused on a standby
        log.close()

    asyncio.run(run())


def test_a_high_watermark_that_passes_a_batch_before_its_local_fsync_answers_it_once_durable(tmp_path: Path) -> None:
    async def run() -> None:
        image, log = load(tmp_path, LOGGER)
        committer = GroupCommitter(log, image, epoch=1, snapshot_bytes=1 << 30, quorum=True)
        committer.activate(1)
        future = committer.append([acl("a")])
        committer.advance_high_watermark(1)  # a follower has it; this node's fsync is still running
        assert not future.done()
        assert await future == 0  # answered by the fsync's completion, with no new high watermark
        assert committer.published.offset == 0
        await committer.close(snapshot=False)
        log.close()

    asyncio.run(run())


def test_a_leader_with_one_writer_at_a_time_fsyncs_in_line_and_overlapping_writes_share_fsyncs(tmp_path: Path) -> None:
    """As with one voter (test_group_commit_modes), but the fsync in line runs one loop turn after the append, once
    the followers' Fetch answers are written, and a write is still answered only under the high watermark."""

    async def run() -> tuple[list[bool], list[bool], int, int]:
        image, log = load(tmp_path, LOGGER)
        durable: list[int] = []
        committer = GroupCommitter(log, image, epoch=1, snapshot_bytes=1 << 30, quorum=True, on_durable=durable.append)
        committer.activate(1)
        durable_next_turn, answered_before_hw = [], []
        for offset in range(SOLO_FLUSHES_BEFORE_INLINE + INLINE_FLUSHES_PER_PROBE + 2):
            future = committer.append([acl(f"solo-{offset}")])
            await asyncio.sleep(0)  # the turn the woken Fetches are answered in; an fsync in line follows them
            durable_next_turn.append(bool(durable) and durable[-1] == offset + 1)
            await _until(lambda end=offset + 1: durable and durable[-1] == end, "durable")
            answered_before_hw.append(future.done())
            committer.advance_high_watermark(offset + 1)
            assert await future == offset
        fsyncs_before = committer.fsyncs
        burst = [committer.append([acl(f"burst-{i}")]) for i in range(20)]  # in one turn of the loop
        end = committer.latest.offset + 1
        await _until(lambda: durable[-1] == end, "the burst durable")
        committer.advance_high_watermark(end)
        await asyncio.gather(*burst)
        burst_fsyncs = committer.fsyncs - fsyncs_before
        await committer.close(snapshot=False)
        log.close()
        return durable_next_turn, answered_before_hw, burst_fsyncs, len(burst)

    durable_next_turn, answered_before_hw, burst_fsyncs, burst = asyncio.run(run())
    solo = SOLO_FLUSHES_BEFORE_INLINE
    assert durable_next_turn[:solo] == [False] * solo  # through the worker thread until the pattern is seen
    assert durable_next_turn[solo : solo + INLINE_FLUSHES_PER_PROBE] == [True] * INLINE_FLUSHES_PER_PROBE
    assert durable_next_turn[solo + INLINE_FLUSHES_PER_PROBE] is False  # the probe goes through the thread
    assert not any(answered_before_hw)  # durable here is not committed
    assert burst_fsyncs <= 3 < burst  # overlapping writes went back to sharing fsyncs in the thread


def _leader_reporting_failures(tmp_path: Path) -> tuple[MetadataLog, GroupCommitter, list[BaseException]]:
    """An active quorum-mode committer whose ``on_failure`` records the errors (the server halts there)."""
    image, log = load(tmp_path, LOGGER)
    failures: list[BaseException] = []
    committer = GroupCommitter(log, image, epoch=1, snapshot_bytes=1 << 30, quorum=True, on_failure=failures.append)
    committer.activate(2)
    return log, committer, failures


def test_a_failed_fsync_fails_the_waiting_write_and_reports_the_error_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The leader of several voters (one voter alike): the server halts on ``on_failure`` (server.fatal); every
    write after it is refused."""

    async def run() -> None:
        log, committer, failures = _leader_reporting_failures(tmp_path)
        error = OSError(5, "Input/output error")

        def failing_fsync(fd: int) -> None:
            raise error

        monkeypatch.setattr("os.fsync", failing_fsync)
        write = committer.append([acl("a")])
        with pytest.raises(RuntimeError, match="fsync failed"):
            await write
        assert failures == [error] and log.failed is error
        with pytest.raises(RuntimeError, match="no longer accepts writes"):
            committer.append([acl("b")])
        monkeypatch.undo()
        await committer.close(snapshot=False)
        log.close()

    asyncio.run(run())


def test_a_failed_write_on_a_leader_of_several_voters_reports_the_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A disk that is full (or failing) when the leader appends: the batch is cut back, the request gets the
    error, and ``on_failure`` stops the voter (server.fatal). One controller would fail only that write."""

    async def run() -> None:
        log, committer, failures = _leader_reporting_failures(tmp_path)
        error = OSError(28, "No space left on device")

        def failing_write(fd: int, data: bytes) -> None:
            raise error

        monkeypatch.setattr("ksteward.metadata.log.write_all", failing_write)
        with pytest.raises(OSError, match="No space left"):
            committer.append([acl("a")])
        assert failures == [error] and log.next_offset == 0 and committer.latest.offset == -1
        monkeypatch.undo()
        await committer.close(snapshot=False)
        log.close()

    asyncio.run(run())
