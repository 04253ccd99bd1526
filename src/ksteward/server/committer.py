"""The controller's single writer, with group commit.

``append`` replays the records into a delta first (a batch that cannot be replayed is never
written), writes the batch to the log at once, and returns a future that resolves when the batch is
durable. Each fsync runs in a worker thread; every batch appended while an fsync runs shares the next
one. The committed image is published only after its batch is durable, so readers never
see a mutation that a crash could take back.

When writes do not overlap (one client writing at a time), the worker thread only adds latency: the batch
waits for the thread and the loop's wakeup, and shares its fsync with nobody. So once
``SOLO_FLUSHES_BEFORE_INLINE`` fsyncs in a row made a single batch durable, the next batches are fsynced in
line, as ``group_commit=False`` does; after ``INLINE_FLUSHES_PER_PROBE`` of them one goes through the thread
again, and if writes now overlap (it made several batches durable), the thread stays. Each probe that finds
writes still one at a time doubles the run before the next, up to ``MAX_INLINE_FLUSHES_PER_PROBE``: a probe
costs a thread handoff, about 3% of a steady writer's throughput at a probe every 16. A second write in the
same event-loop turn as an in-line fsync (several requests were ready at once: writers overlap) ends the run
at once. A single writer then runs level with one fsync per write within the noise of bench/server.py
(0.97-1.02 over four runs; issue 17 asks for never slower), and writers that overlap still share fsyncs.

The committer writes in one leader epoch, ``epoch``, chosen when the controller starts
(``raft.quorum_state.begin_single_voter_epoch``); every batch carries it as its partitionLeaderEpoch.
``begin_epoch`` appends Kafka's LeaderChangeMessage control batch at the epoch's start
(``KafkaRaftClient.onBecomeLeader``), before any other batch of the epoch.

**With several voters** (``quorum=True``), durable is not committed: a batch is committed once the Raft high
watermark passes it, i.e. once a majority of voters has it durable (``LeaderState.maybeUpdateHighWatermark``).
Each fsync then reports the durable end to ``on_durable`` (the quorum driver counts it as the leader's own end
offset), and the batch waits until :meth:`advance_high_watermark` passes it (durable here *and* under the high
watermark: the leader serves its log end before its own fsync, so the high watermark can pass a batch first);
only then is its image published and its future resolved. :meth:`abandon` ends a leadership: every waiting
future fails with ``NotControllerError`` (the outcome is unknown: a new leader may still commit the batch) and
``latest`` goes back to the last committed image (Kafka's ``QuorumController.renounce`` reverting to
``lastStableOffset``). With one voter (the default) durable is committed, and nothing of this runs.
The leader's fsync is handed over one loop turn after the append, once the woken followers' Fetch answers are
written; one writer at a time is fsynced in line there, by the same rule as above (``_start_flush_soon``).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ksteward.controller.result import ConcurrentAclChange, NotControllerError
from ksteward.metadata.delta import MetadataDelta
from ksteward.metadata.image import MetadataImage
from ksteward.metadata.log import MetadataLog
from ksteward.metadata.records import encode_record
from ksteward.metadata.records.control import LeaderChangeMessage, encode_control_record
from ksteward.server.metrics.histogram import COUNT_BOUNDS, Histogram, SampledAvgMax

log = logging.getLogger(__name__)

SOLO_FLUSHES_BEFORE_INLINE = 4
INLINE_FLUSHES_PER_PROBE = 16
MAX_INLINE_FLUSHES_PER_PROBE = 1024


def _replayed_and_encoded(base: MetadataImage, records: list[Any]) -> tuple[MetadataDelta, list[bytes]]:
    delta = MetadataDelta(base)
    for record in records:
        delta.replay(record)
    return delta, [encode_record(r) for r in records]


@dataclass(frozen=True, slots=True)
class SnapshotFacts:
    """The last snapshot this node wrote: its size, how long it took, and when it was done (epoch seconds)."""

    size_bytes: int
    seconds: float
    written_at: float


class GroupCommitter:
    def __init__(
        self,
        metadata_log: MetadataLog,
        image: MetadataImage,
        *,
        epoch: int,
        snapshot_bytes: int,
        group_commit: bool = True,
        on_publish: Callable[[MetadataImage, list[Any]], asyncio.Future[None] | None] | None = None,
        quorum: bool = False,
        on_durable: Callable[[int], None] | None = None,
        on_append: Callable[[], None] | None = None,
        on_failure: Callable[[BaseException], None] | None = None,
    ) -> None:
        self._log = metadata_log
        #: Called once an fsync (with several voters, also a write) failed and every waiting write was failed: the
        #: server stops there (server.fatal).
        self._on_failure = on_failure
        self._quorum = quorum
        self._on_durable = on_durable
        self._on_append = on_append  # quorum mode: after each append (the leader serves its log end to fetchers)
        # quorum mode: durable batches waiting for the high watermark to pass them
        self._uncommitted: deque[tuple[int, MetadataImage, list[Any], asyncio.Future[int]]] = deque()
        self._high_watermark = -1  # the highest the quorum driver reported
        #: Whether this node leads and may write: always with one voter; with several, from ``activate`` (the
        #: quorum driver, once this node leads and has applied every committed record) to ``abandon``.
        self.active = not quorum
        #: The leader epoch every batch this committer writes carries.
        self.epoch = epoch
        self._latest = image
        self._published = image
        self._snapshot_bytes = snapshot_bytes
        self._group_commit = group_commit
        self._on_publish = on_publish
        #: Called after ``on_publish`` for every durable batch (the KRaft leader wakes parked fetches).
        self.publish_hooks: list[Callable[[MetadataImage, list[Any]], None]] = []
        self._pending: deque[tuple[int, MetadataImage, list[Any], asyncio.Future[int]]] = deque()
        self._snapshot_task: asyncio.Task[None] | None = None
        self._failure: BaseException | None = None
        self.fsyncs = 0
        self._flushing = False  # an fsync is running in a worker thread
        self._solo_flushes = 0  # fsyncs in a row, in the thread, that made a single batch durable
        self._inline_left = 0  # batches to fsync in line before the next probe through the thread
        self._inline_run = INLINE_FLUSHES_PER_PROBE  # the next run of in-line fsyncs: doubles while writes stay solo
        self._inline_this_turn = False  # an in-line fsync ran in this turn of the event loop
        # For the metrics endpoint: each fsync's time (ms), the batches each fsync made durable, the last snapshot.
        self.fsync_ms = Histogram()
        self.batches_per_fsync = Histogram(COUNT_BOUNDS, discrete=True)
        #: Kafka's raft-metrics ``commit-latency-avg`` / ``-max``: ms per record from a batch's append to its
        #: commit (``KafkaRaftClient.appendBatch``): with several voters, until the high watermark passes it.
        self.commit_latency = SampledAvgMax()
        self._appended_at: dict[int, tuple[float, int]] = {}  # a batch's last offset -> (append time, records)
        self.last_snapshot: SnapshotFacts | None = None

    @property
    def latest(self) -> MetadataImage:
        """The controller's view: every appended batch, durable or not."""
        return self._latest

    @property
    def published(self) -> MetadataImage:
        """The durable view that brokers answer from."""
        return self._published

    def start(self) -> None:
        """Nothing to start: each fsync is a worker-thread job started by the append that finds none running."""

    def append(self, records: list[Any]) -> asyncio.Future[int]:
        """Append one atomic batch now; the future resolves with its last offset once durable."""
        if not self.active:
            raise NotControllerError("this controller is not the active controller")
        if self._failure is not None:
            raise RuntimeError("the metadata log failed; this node no longer accepts writes") from self._failure
        delta = MetadataDelta(self._latest)
        for record in records:
            delta.replay(record)
        values = [encode_record(r) for r in records]
        now_ms = int(time.time() * 1000)
        last_offset = self._append_to_log(values, timestamp_ms=now_ms)
        self._latest = delta.apply(offset=last_offset, epoch=self.epoch, timestamp_ms=now_ms)
        return self._enqueue(last_offset, records)

    async def append_in_thread(self, records: list[Any]) -> int:
        """:meth:`append` for a large batch (an atomic ACL change of 10^5 ACLs, docs/acl-transactions.md): the
        replay and the encoding run in a worker thread, so the loop keeps its turn meanwhile (heartbeats, other
        requests); the batch is then written and published exactly as :meth:`append` does, and this returns its
        last offset once durable. If a batch was appended in the meantime the work is done again on top of it;
        if that batch changed the ACLs, :class:`ConcurrentAclChange` is raised and nothing is written."""
        for _ in range(3):
            if not self.active:  # checked again after the worker thread: leadership may be lost meanwhile
                raise NotControllerError("this controller is not the active controller")
            if self._failure is not None:
                raise RuntimeError("the metadata log failed; this node no longer accepts writes") from self._failure
            base = self._latest
            delta, values = await asyncio.to_thread(_replayed_and_encoded, base, records)
            if self._latest is base:
                now_ms = int(time.time() * 1000)
                last_offset = self._append_to_log(values, timestamp_ms=now_ms)
                self._latest = delta.apply(offset=last_offset, epoch=self.epoch, timestamp_ms=now_ms)
                return await self._enqueue(last_offset, records)
            if self._latest.acls is not base.acls:
                raise ConcurrentAclChange("the ACLs changed while this change was being prepared")
        return await self.append(records)  # appends kept coming: replay on the loop, as any batch

    def begin_epoch(self, message: LeaderChangeMessage, epoch: int | None = None) -> asyncio.Future[int]:
        """Append the epoch's LeaderChangeMessage control batch; the future resolves once it is durable.

        Kafka's new leader writes it at once because its high watermark may only pass a record of its own
        epoch (``LeaderState.maybeUpdateHighWatermark``); the image moves past it with nothing to replay.
        With several voters it is written before ``activate``, in ``epoch``, after every record of earlier
        epochs in the log (``latest`` is not moved: the records before it are not replayed yet)."""
        if self._quorum:
            self.epoch = epoch if epoch is not None else self.epoch
            key, value = encode_control_record(message)
            last_offset = self._append_to_log([value], timestamp_ms=int(time.time() * 1000), control=True, keys=[key])
            future: asyncio.Future[int] = asyncio.get_running_loop().create_future()
            future.add_done_callback(lambda f: f.cancelled() or f.exception())  # nobody need await it
            self._pending.append((last_offset, self._latest, [], future))
            if not self._flushing:
                self._start_flush()
            if self._on_append is not None:
                self._on_append()
            return future
        if self._failure is not None:
            raise RuntimeError("the metadata log failed; this node no longer accepts writes") from self._failure
        key, value = encode_control_record(message)
        now_ms = int(time.time() * 1000)
        last_offset = self._append_to_log([value], timestamp_ms=now_ms, control=True, keys=[key])
        self._latest = MetadataDelta(self._latest).apply(offset=last_offset, epoch=self.epoch)
        return self._enqueue(last_offset, [])

    def _append_to_log(self, values: list[bytes], *, timestamp_ms: int, control: bool = False,
                       keys: list[bytes | None] | None = None) -> int:  # fmt: skip
        """Write one batch in this committer's epoch; its last offset. The log cuts a failed write back. With
        several voters an I/O error also fails every waiting write and calls ``on_failure`` (the voter stops, as
        after a failed fsync); one controller fails only that write and goes on."""
        try:
            _, last_offset = self._log.append(values, timestamp_ms=timestamp_ms, leader_epoch=self.epoch,
                                              control=control, keys=keys)  # fmt: skip
        except OSError as exc:
            if self._quorum:
                self._fail_writes(exc, "write")
            raise
        return last_offset

    def _enqueue(self, last_offset: int, records: list[Any]) -> asyncio.Future[int]:
        """Publish the batch ending at ``last_offset`` once durable; the future resolves with that offset."""
        future: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        if records:
            self._appended_at[last_offset] = (time.monotonic(), len(records))
        if self._quorum:  # never in line: the commit waits for the other voters anyway
            self._pending.append((last_offset, self._latest, records, future))
            if self._on_append is not None:
                self._on_append()  # first: the followers' Fetch answers leave before the fsync is handed over
            if not self._flushing:
                self._flushing = True
                asyncio.get_running_loop().call_soon(self._start_flush_soon)
            return future
        if not self._group_commit:
            # The baseline group commit is measured against: every batch pays its own fsync, in
            # line, before the next one can be written.
            try:
                self._flush_one()
            except BaseException as exc:
                self._fail_writes(exc)
                raise
            self._answer_when_published(self._publish(self._latest, records), future, last_offset)
            self._committed(last_offset)
            self._maybe_snapshot()
            return future
        if self._inline_left and not self._flushing and not self._pending:
            if not self._inline_this_turn:
                self._inline_left -= 1
                self._flush_inline(last_offset, records, future)
                return future
            # A second write in the event loop's turn of an in-line fsync: writers overlap (several requests
            # were ready at once). Back to sharing fsyncs in the thread, and to probing often after.
            self._inline_left = self._solo_flushes = 0
            self._inline_run = INLINE_FLUSHES_PER_PROBE
        self._pending.append((last_offset, self._latest, records, future))
        if not self._flushing:
            self._start_flush()
        return future

    def _flush_inline(self, last_offset: int, records: list[Any], future: asyncio.Future[int]) -> None:
        """One batch made durable now, on the loop (no other write overlaps it: see the module docstring)."""
        try:
            self._flush_one()
        except BaseException as exc:
            future.set_exception(RuntimeError("metadata log fsync failed"))
            self._fail_writes(exc)
            return
        self._answer_when_published(self._publish(self._latest, records), future, last_offset)
        self._committed(last_offset)
        self._maybe_snapshot()
        self._inline_this_turn = True
        asyncio.get_running_loop().call_soon(self._end_inline_turn)

    def _flush_one(self) -> None:
        """fsync, on the loop, what is appended (one batch), timed into the fsync metrics."""
        self._fsync_on_loop()
        self.batches_per_fsync.observe(1)

    def _fsync_on_loop(self) -> None:
        started = time.perf_counter()
        self._log.flush()
        self.fsyncs += 1
        self.fsync_ms.observe((time.perf_counter() - started) * 1000)

    def _end_inline_turn(self) -> None:
        self._inline_this_turn = False

    def _start_flush_soon(self) -> None:
        """quorum mode: hand the fsync over once the woken followers' Fetch answers are written (they run first:
        their tasks were woken before this was scheduled), so that the worker thread does not take the GIL
        from the loop while it encodes them (Kafka's leader, too, flushes after releasing the parked fetches)."""
        if not self._pending:  # the leadership ended in between
            self._flushing = False
        elif self._inline_left and len(self._pending) == 1:
            self._inline_left -= 1
            self._flush_inline_in_quorum()
        else:
            if len(self._pending) > 1:  # writes overlap: share fsyncs in the thread, and probe often again after
                self._inline_left = self._solo_flushes = 0
                self._inline_run = INLINE_FLUSHES_PER_PROBE
            self._start_flush()

    def _flush_inline_in_quorum(self) -> None:
        """quorum mode, one writer at a time: the batch fsynced on the loop, right after the followers' Fetch
        answers left (it runs after them: see :meth:`_start_flush_soon`). Its fsync overlaps theirs as the
        thread's did, without the thread's handoff: the wake-up of the worker, the GIL passed back and forth and
        the loop woken again when it is done cost the leader a fifth of its CPU a commit (bench/README.md)."""
        target = self._pending[-1][0]
        try:
            self._fsync_on_loop()
        except BaseException as exc:
            self._fail_writes(exc)
            return
        self._durable_in_quorum(target)

    def _start_flush(self) -> None:
        """fsync everything appended so far in a worker thread; :meth:`_flushed` runs on the loop when it is done.

        A callback, not a task awaiting the thread: a waiting request is answered one event-loop turn after its
        fsync, not three (wake the flusher, resume it after the thread, resume the request). Under load every
        turn is a pass over every ready connection (issue 17)."""
        self._flushing = True
        target = self._pending[-1][0]
        started = time.perf_counter()
        done = asyncio.get_running_loop().run_in_executor(None, self._log.flush)
        done.add_done_callback(lambda f: self._flushed(f, target, started))

    def _flushed(self, done: asyncio.Future[None], target: int, started: float) -> None:
        if self._quorum and not self.active and not self._pending:  # the leadership ended during this fsync
            self._flushing = False
            return
        failure = done.exception() if not done.cancelled() else asyncio.CancelledError()
        if failure is not None:
            self._fail_writes(failure)
            return
        self.fsyncs += 1
        self.fsync_ms.observe((time.perf_counter() - started) * 1000)
        if self._quorum:
            count = self._durable_in_quorum(target)
            self._note_solo(count)
            return
        durable = []
        while self._pending and self._pending[0][0] <= target:
            offset, image, records, fut = self._pending.popleft()
            self._answer_when_published(self._make_visible(image, records), fut, offset)
            self._committed(offset)
            durable.append((image, records))
        self.batches_per_fsync.observe(len(durable))
        self._note_solo(len(durable))
        # The hooks (the Raft leader waking parked fetches) run after every waiting request was resolved,
        # so the event loop writes the clients' answers before it encodes the followers' fetch responses.
        for image, records in durable:
            self._run_hooks(image, records)
        self._maybe_snapshot()
        if self._pending:  # appended during the fsync: the next one is theirs
            self._start_flush()
        else:
            self._flushing = False

    def _fail_writes(self, failure: BaseException, what: str = "fsync") -> None:
        """An fsync (or, with several voters, a write) failed: fatal for writes, as in Kafka. Every waiting
        write fails."""
        log.critical("metadata log %s failed; refusing further writes: %s", what, failure)
        self._failure = failure
        self._flushing = False
        self._appended_at.clear()
        while self._pending:
            _, _, _, fut = self._pending.popleft()
            if not fut.done():
                fut.set_exception(RuntimeError(f"metadata log {what} failed"))
        if self._on_failure is not None:
            self._on_failure(failure)

    def _note_solo(self, durable: int) -> None:
        """After an fsync in the thread that made ``durable`` batches durable: after enough in a row that made one
        batch durable each, with nothing else waiting, the next ones are fsynced in line (the module docstring)."""
        self._solo_flushes = self._solo_flushes + 1 if durable == 1 and not self._pending else 0
        if self._solo_flushes >= SOLO_FLUSHES_BEFORE_INLINE:
            self._inline_left = self._inline_run
            self._inline_run = min(self._inline_run * 2, MAX_INLINE_FLUSHES_PER_PROBE)
        elif not self._solo_flushes:  # writes overlap: after the next quiet spell, probe often again
            self._inline_run = INLINE_FLUSHES_PER_PROBE

    def _durable_in_quorum(self, target: int) -> int:
        """quorum mode: the batches up to ``target`` are durable here; they wait for the high watermark. Before
        ``activate`` only the epoch's LeaderChange batch is written here: its future means durable, and the
        quorum driver publishes it with the records before it once committed (``publish_committed``)."""
        count = 0
        while self._pending and self._pending[0][0] <= target:
            entry = self._pending.popleft()
            if self.active:
                self._uncommitted.append(entry)
            elif not entry[3].done():
                entry[3].set_result(entry[0])
            count += 1
        self.batches_per_fsync.observe(count)
        if self._pending:
            self._start_flush()
        else:
            self._flushing = False
        if self._on_durable is not None:
            self._on_durable(target + 1)
        if self.active:  # the high watermark may have passed these batches before they were durable here
            self.advance_high_watermark(self._high_watermark)
        return count

    def advance_high_watermark(self, high_watermark: int) -> None:
        """quorum mode: every durable batch below ``high_watermark`` (exclusive) is committed: publish it and
        answer its request; then the hooks (the Raft leader waking parked fetches) run, as after an fsync."""
        self._high_watermark = max(self._high_watermark, high_watermark)
        committed = []
        while self._uncommitted and self._uncommitted[0][0] < high_watermark:
            offset, image, records, fut = self._uncommitted.popleft()
            self._answer_when_published(self._make_visible(image, records), fut, offset)
            self._committed(offset)
            committed.append((image, records))
        for image, records in committed:
            self._run_hooks(image, records)
        if committed:
            self._maybe_snapshot()

    def newest_pending(self) -> asyncio.Future[int] | None:
        """quorum mode: the future of the newest write not committed yet, or None."""
        if self._pending:
            return self._pending[-1][3]
        if self._uncommitted:
            return self._uncommitted[-1][3]
        return None

    def activate(self, epoch: int) -> None:
        """quorum mode: this node leads ``epoch`` and its image holds every committed record: accept writes."""
        self.epoch = epoch
        self._latest = self._published
        self.active = True

    async def idle(self) -> None:
        """Wait until no fsync of this committer runs (before another writer, the follower, touches the log)."""
        while self._flushing:
            await asyncio.sleep(0.005)

    def abandon(self) -> None:
        """quorum mode: this leadership ended. Waiting writes fail with NotControllerError (unknown outcome) and
        ``latest`` reverts to the last committed image; nothing is accepted until the next ``activate``."""
        self.active = False
        waiting = [*self._pending, *self._uncommitted]
        self._pending.clear()
        self._uncommitted.clear()
        self._appended_at.clear()
        for *_, fut in waiting:
            if not fut.done():
                fut.set_exception(NotControllerError("this controller lost its leadership before the write committed"))
        self._latest = self._published

    def publish_committed(self, image: MetadataImage, records: list[Any]) -> None:
        """quorum mode, as a standby: records another leader wrote became committed and were replayed into
        ``image``; readers switch to it and the publishers see the records, as after a commit of our own."""
        self._latest = image
        self._publish(image, records)
        self._maybe_snapshot()

    def _publish(self, image: MetadataImage, records: list[Any]) -> asyncio.Future[None] | None:
        """Make one durable batch visible: readers switch to its image, publishers see its records."""
        applying = self._make_visible(image, records)
        self._run_hooks(image, records)
        return applying

    def _make_visible(self, image: MetadataImage, records: list[Any]) -> asyncio.Future[None] | None:
        """Readers switch to ``image`` and ``on_publish`` gets the records. It may finish applying them later
        (a large ACL change goes to the authorizer in a worker thread): it then returns when that is done."""
        self._published = image
        if self._on_publish is not None:
            return self._on_publish(image, records)
        return None

    def _committed(self, offset: int) -> None:
        """The batch ending at ``offset`` is committed: its commit latency, per record, as Kafka counts it (a
        batch with no records, such as the epoch's LeaderChange, was not noted and is not counted)."""
        appended = self._appended_at.pop(offset, None)
        if appended is not None:
            at, records = appended
            self.commit_latency.record((time.monotonic() - at) * 1000 / records)

    @staticmethod
    def _answer_when_published(applying: asyncio.Future[None] | None, future: asyncio.Future[int], offset: int) -> None:
        """Resolve the writer's ``future`` with ``offset`` once the publisher has applied its batch: an answer
        still means that this node decides with the change (an ACL deleted no longer allows anything here)."""
        if future.done():
            return
        if applying is None or applying.done():
            future.set_result(offset)
        else:

            def answer(_: asyncio.Future[None]) -> None:
                if not future.done():
                    future.set_result(offset)

            applying.add_done_callback(answer)

    def _run_hooks(self, image: MetadataImage, records: list[Any]) -> None:
        for hook in self.publish_hooks:
            hook(image, records)

    def _maybe_snapshot(self) -> None:
        if self._snapshot_task is not None and not self._snapshot_task.done():
            return
        if self._log.bytes_since_snapshot < self._snapshot_bytes:
            return
        image = self._published
        self._snapshot_task = asyncio.get_running_loop().create_task(
            asyncio.to_thread(self.write_snapshot, image), name="metadata-snapshot"
        )

    def write_snapshot(self, image: MetadataImage) -> None:
        """Write ``image`` as a snapshot and drop the segments it covers (runs in a worker thread)."""
        if image.offset < 0:
            return
        end_offset = image.offset + 1
        started = time.monotonic()
        # The snapshot id's epoch is that of its last record (Kafka's ``createSnapshot``), not the current one.
        path = self._log.write_snapshot(
            end_offset,
            image.epoch,
            (encode_record(r) for r in image.records()),
            last_contained_timestamp_ms=image.timestamp_ms,
        )
        self._log.delete_segments_before(end_offset)
        seconds = time.monotonic() - started
        self.last_snapshot = SnapshotFacts(path.stat().st_size, seconds, time.time())  # one assignment: thread-safe
        log.info("wrote snapshot %s in %.3fs", path.name, seconds)

    async def close(self, *, snapshot: bool) -> None:
        """Drain pending writes, and on a clean stop write a final snapshot."""
        if self._quorum and self.active:
            self.abandon()  # nothing commits once the node stops serving its followers
        if self._pending and self._failure is None:
            await asyncio.gather(*(fut for *_, fut in list(self._pending)), return_exceptions=True)
        if self._snapshot_task is not None:
            await asyncio.gather(self._snapshot_task, return_exceptions=True)
        if snapshot and self._failure is None:
            snapshots = self._log.snapshots()
            newest_end = snapshots[0].end_offset if snapshots else -1
            if self._published.offset + 1 > newest_end:
                await asyncio.to_thread(self.write_snapshot, self._published)
