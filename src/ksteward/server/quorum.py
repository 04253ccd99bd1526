"""The asyncio driver of one controller voter in a quorum of several (issue 18; KIP-595, KIP-996).

``raft.voter.RaftVoter`` decides everything (states, votes, the high watermark, check-quorum); this shell
gives it time, sockets and files, and carries out its actions **in order, each finished before the next**
(``raft.voter_actions``). Every action but ``SendRequest`` is carried out synchronously on the event loop, so
no other event can come between a ``PersistElectionState`` (``write_quorum_state``: temp file, fsync, rename)
and what depends on it, and a voter's ``FlushLog`` (fsync) is done before the voter can produce its next Fetch:

- ``PersistElectionState``: ``quorum-state`` is written before anything acts on the transition;
- ``SendRequest``: a task sends it to that voter's controller listener (``server.voter_peers``) and feeds
  the response (or the failure) back; a follower's next Fetch is sent by the task that handled the last
  answer, in the same step (``_call``);
- ``AppendBatches`` / ``TruncateTo`` / snapshot steps: ``FollowerLog``; ``FlushLog``: ``MetadataLog.flush``;
- ``BecameLeader`` / ``LostLeadership`` / ``HighWatermarkUpdated``: the controller on top
  (``server.controller_quorum``): claim, renounce, commit;
- ``LeaderChanged``: logged.

A write to this voter's disk that fails (``quorum-state``, an append, an fsync) stops the process at once
(``server.fatal.halt``), as Kafka's fatal fault handler does for any error in its Raft IO thread: a voter must not
vote, fetch or lead past a write it could not make durable (docs/raft.md, "A voter whose disk fails"). So does a
peer's refusal of this voter's request (``RaftRefusedError``: CLUSTER_AUTHORIZATION_FAILED, INVALID_REQUEST).

Timers: one ``loop.call_at`` handle calls ``tick`` at ``next_deadline_ms``, moved earlier once a loop turn that
carried out actions brings the deadline forward (``_settle``, which also logs a state change; as the
simulation's scheduler does, ``tests/unit/raft/raft_sim.py``).
Requests: Vote, BeginQuorumEpoch, EndQuorumEpoch, Fetch and FetchSnapshot from the listener go to
``handle_request``; a Fetch the leader parks waits until the served (durable) end passes its offset, the high
watermark moves, ``max_wait_ms`` passes or the leadership ends (Kafka completes parked fetches on a high
watermark change too, in ``KafkaRaftClient.onUpdateLeaderHighWatermark`` since 4.1, KAFKA-14145; before, only
new records did), then ``complete_fetch`` answers it.
The leader's group commit reports each fsync (``on_leader_durable`` → ``on_log_flushed``).

Every election and resignation is logged with its epoch and reason (``raft state: ...`` lines).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
from collections.abc import Awaitable, Mapping
from typing import Any

from ksteward.configs.server_config import ServerConfig
from ksteward.controller.active import Controller
from ksteward.controller.result import NotControllerError
from ksteward.metadata.log import MetadataLog, MetadataLogError
from ksteward.protocol.apis import ApiKey
from ksteward.raft.election import QuorumConfig
from ksteward.raft.follower_log import FollowerLog
from ksteward.raft.leader import ParkedFetch
from ksteward.raft.log_view import MetadataLogView
from ksteward.raft.observer import (
    AbortSnapshotDownload,
    AppendBatches,
    HighWatermarkUpdated,
    InstallSnapshot,
    LeaderChanged,
    RaftRefusedError,
    StartSnapshotDownload,
    TruncateTo,
    WriteSnapshotChunk,
)
from ksteward.raft.quorum_state import QUORUM_STATE_FILE, QuorumStateError, read_quorum_state, write_quorum_state
from ksteward.raft.voter import RaftVoter
from ksteward.raft.voter_actions import (
    BecameLeader,
    FlushLog,
    LostLeadership,
    PersistElectionState,
    SendRequest,
    VoterAction,
)
from ksteward.server import fatal
from ksteward.server.committer import GroupCommitter
from ksteward.server.controller_channel import controller_login
from ksteward.server.controller_quorum import ControllerQuorumRole, ControllerState
from ksteward.server.metrics.histogram import Histogram
from ksteward.server.metrics.metadata_log import ElectionLatency
from ksteward.server.tasks import Wakeups, cancel_and_wait
from ksteward.server.voter_peers import ELECTION_LANE, FETCH_LANE, VoterPeers

log = logging.getLogger(__name__)

_FOLLOWER_LOG_ACTIONS = (
    AppendBatches,
    TruncateTo,
    StartSnapshotDownload,
    WriteSnapshotChunk,
    InstallSnapshot,
    AbortSnapshotDownload,
)
#: The actions that write this voter's disk: a failure stops the process (``_store``).
_STORAGE_ACTIONS = (PersistElectionState, FlushLog, *_FOLLOWER_LOG_ACTIONS)
_FETCH_KEYS = (ApiKey.FETCH, ApiKey.FETCH_SNAPSHOT)
#: How long a leader that stops (SIGTERM) waits for a successor after resigning (Kafka's graceful shutdown).
SHUTDOWN_TIMEOUT_MS = 2000
#: How long a standby controller may wait before it replays newly committed records (``_defer_apply``): at
#: most Kafka's own lag for a follower's high watermark, which before KIP-1166 arrives only with the next Fetch
#: answer, up to the Fetch's default ``MaxWaitMs`` (500 ms) later.
STANDBY_APPLY_DELAY_S = QuorumConfig().fetch_max_wait_ms / 1000


def _why(old: str, old_epoch: int, new: str, epoch: int) -> str:
    """The reason for a state change, as far as the driver sees it (the voter logs the details)."""
    if not old:
        return "read from quorum-state"
    if new == "Prospective":
        return "fetch timeout: no Fetch answer from the leader" if old == "Follower" else "election timeout"
    if new == "Candidate":
        return "a majority granted the pre-vote" if old == "Prospective" else "election"
    if new == "Leader":
        return "a majority granted the vote"
    if new == "Resigned":
        return "resigned the leadership"
    if epoch > old_epoch:
        return f"learnt epoch {epoch}"
    if new == "Follower":
        return "learnt the leader"
    return "election failed or timed out"


def _now_ms() -> int:
    return int(time.monotonic() * 1000)


class QuorumDriver:
    """See the module docstring."""

    def __init__(
        self,
        config: ServerConfig,
        *,
        cluster_id: str,
        metadata_log: MetadataLog,
        role: ControllerQuorumRole,
        endpoints: Mapping[str, tuple[str, int]],
        sasl_plain: tuple[str, str] | None,
        fsync_ms: Histogram | None = None,
    ) -> None:
        self._node_id = config.node_id
        self._fsync_ms = fsync_ms  # each follower fsync's time (ms), beside the group commit's when leading
        self._log = metadata_log
        self._role = role
        self._config = config.quorum
        voters = config.quorum_voter_endpoints
        self._state_path = metadata_log.directory / QUORUM_STATE_FILE
        self._follower_log = FollowerLog(metadata_log)
        # The leader serves its log up to its end, before its own fsync, as Kafka's leader does (log-end isolation;
        # parked fetches are released just before the fsync, KafkaRaftClient.flushLeaderLog): the leader's and a
        # follower's fsyncs overlap. The high watermark then counts the leader's log end, like Kafka's. A write
        # is still answered only once durable here too (GroupCommitter.advance_high_watermark resolves fsynced
        # batches only), and the high watermark is a follower's fetch offset, which moves only after its
        # FlushLog: every acknowledged write is durable on a majority (docs/cluster.md, "Quorum").
        self._view = MetadataLogView(metadata_log)
        self.voter = RaftVoter(
            node_id=config.node_id,
            cluster_id=cluster_id,
            voters=set(voters),
            log=self._view,
            endpoints=endpoints,
            config=self._config,
            rng=random.Random(),
        )
        self._peers = VoterPeers(
            {i: a for i, a in voters.items() if i != config.node_id},
            node_id=config.node_id,
            sasl_plain=sasl_plain,
            request_timeout_s=self._config.request_timeout_ms / 1000,
        )
        self._started = asyncio.Event()
        # The one timer: ``tick`` at the voter's next deadline, re-armed by ``_settle`` once a loop turn.
        self._timer: asyncio.TimerHandle | None = None
        self._timer_at = 0.0  # when ``_timer`` fires, on the loop's (monotonic) clock
        self._settling = False  # a ``_settle`` is scheduled: once, after this loop turn's batches of actions
        # Parked fetches waiting for any change: the voters' first (their next Fetch moves the high watermark).
        self._progress = Wakeups()
        self._observer_progress = Wakeups()
        self._tasks: set[asyncio.Task[None]] = set()
        self._described = ("", -1, -1)  # (state, epoch, leader) last logged
        self.elections = ElectionLatency()  # the raft-metrics election-latency figures
        self._closing = False
        self._stopped = False  # closed: no timer any more
        self._deferred_hw: HighWatermarkUpdated | None = None  # committed records the standby replays soon

    # --- lifecycle -------------------------------------------------------------------------------------
    def start(self) -> None:
        try:
            stored = read_quorum_state(self._state_path)
        except QuorumStateError:
            raise
        self._perform(self.voter.start(stored, _now_ms()))
        self._started.set()
        self._settle()

    async def close(self) -> None:
        """Graceful shutdown: a leader resigns (EndQuorumEpoch) and waits a little for a successor."""
        if self._started.is_set() and not self._closing:
            self._closing = True
            with contextlib.suppress(Exception):
                self._perform(self.voter.begin_shutdown(_now_ms(), SHUTDOWN_TIMEOUT_MS))
                deadline = time.monotonic() + SHUTDOWN_TIMEOUT_MS / 1000
                while not self.voter.shutdown_complete(_now_ms()) and time.monotonic() < deadline:
                    await asyncio.sleep(0.02)
        self._stopped = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        for task in list(self._tasks):
            await cancel_and_wait(task)
        self._notify_progress()
        await self._peers.close()

    @property
    def controller_active(self) -> bool:
        """Whether the controller on this voter is the active one: the Raft leader whose epoch's first record is
        committed (Kafka's ``QuorumController`` is active from its ``claim``, which ``handleLeaderChange`` calls
        only then)."""
        return self._role.state is ControllerState.ACTIVE

    # --- events ----------------------------------------------------------------------------------------
    async def handle_request(self, api_key: int, api_version: int, request: Any, listener: str) -> Any:
        """A Raft request from a peer or a broker: the voter's answer, after its actions were carried out."""
        await self._started.wait()
        response, actions = self.voter.handle_request(api_key, api_version, request, listener, _now_ms())
        self._perform(actions)
        if isinstance(response, ParkedFetch):
            await self._wait_parked(response)
            response, actions = self.voter.complete_fetch(request, api_version, listener, _now_ms())
            self._perform(actions)
        return response

    def on_leader_appended(self) -> None:
        """The leader appended a batch: parked fetches may take it now."""
        self._notify_progress()

    def on_leader_durable(self, end_offset: int) -> None:
        """The leader's group commit fsynced up to ``end_offset``: its own end counts toward the high watermark."""
        if not self._started.is_set():
            return
        self._perform(self.voter.on_log_flushed(_now_ms()))
        self._notify_progress()

    async def _wait_parked(self, parked: ParkedFetch) -> None:
        deadline = asyncio.get_running_loop().time() + parked.max_wait_ms / 1000
        view_end = lambda: self._log.next_offset  # noqa: E731 - the served end the leader reads up to
        hw, epoch = self.voter.high_watermark, self.voter.epoch
        wakeups = self._progress if parked.from_voter else self._observer_progress
        while view_end() <= parked.fetch_offset and self.voter.high_watermark == hw and self.voter.epoch == epoch:
            if self.voter.leader is None or self._closing:
                return
            if await wakeups.wait(deadline):
                return

    def _notify_progress(self) -> None:
        """Wake every parked fetch; the voters' resume first (the loop runs callbacks in the order scheduled)."""
        self._progress.wake_all()
        self._observer_progress.wake_all()

    def _arm_timer(self) -> None:
        """Make the timer fire by the voter's next deadline (``next_deadline_ms``: a tick earlier than needed is
        harmless), and at least once a second. A ``loop.call_at`` handle, moved only when the deadline comes
        earlier: a task waiting on an event with ``wait_for`` cost every batch of actions two new tasks and
        several loop callbacks, a few per cent of a voter's CPU per commit (bench/README.md, failover)."""
        if self._stopped:
            return
        loop = asyncio.get_running_loop()
        now = loop.time()
        at = min(self.voter.next_deadline_ms() / 1000, now + 1.0)
        timer = self._timer
        if timer is not None:
            if self._timer_at <= at:
                return
            timer.cancel()
        self._timer_at = max(at, now)
        self._timer = loop.call_at(self._timer_at, self._on_timer)

    def _on_timer(self) -> None:
        self._timer = None
        try:
            self._perform(self.voter.tick(_now_ms()))
        except Exception:  # a bug in one tick must not stop elections for good
            log.exception("raft tick failed")
            if self._timer is not None:
                self._timer.cancel()
            loop = asyncio.get_running_loop()
            self._timer_at = loop.time() + self._config.retry_backoff_ms / 1000
            self._timer = loop.call_at(self._timer_at, self._on_timer)

    # --- carrying out the voter's actions ---------------------------------------------------------------
    def _perform(self, actions: list[VoterAction]) -> None:
        if self._deferred_hw is not None and any(isinstance(a, (BecameLeader, LostLeadership)) for a in actions):
            self._apply_deferred()  # the image the controller claims (or keeps) holds every committed record
        for action in actions:
            if isinstance(action, _STORAGE_ACTIONS):
                self._store(action)
            elif isinstance(action, SendRequest):
                self._send(action)
            elif isinstance(action, BecameLeader):
                granted = sorted(int(v.voter_id) for v in getattr(action.leader_change, "granting_voters", ()))
                log.info("raft: elected leader of epoch %d with the votes of %s; the epoch starts at offset %d",
                         action.epoch, granted, action.epoch_start_offset)  # fmt: skip
                self._role.begin_claim(action.epoch, action.epoch_start_offset, action.leader_change)
            elif isinstance(action, LostLeadership):
                log.info("raft: resigned the leadership of epoch %d: %s", action.epoch, action.reason)
                self._role.renounce(action.reason)
                self._notify_progress()
            elif isinstance(action, HighWatermarkUpdated):
                self._commit(action.offset)
                self._notify_progress()
            elif isinstance(action, LeaderChanged):
                pass  # logged by ``_settle``, with the state it leads to
        if not self._settling:
            self._settling = True
            asyncio.get_running_loop().call_soon(self._settle)

    def _store(self, action: VoterAction) -> None:
        """Carry out a write to this voter's disk. A failed ``quorum-state`` write, an I/O error, or any refusal of
        a log whose fsync failed stops the process (the module docstring); a refused batch (a
        ``MetadataLogError`` of a working log) is raised to the caller, as before."""
        if isinstance(action, PersistElectionState):
            try:
                write_quorum_state(self._state_path, action.state)
            except QuorumStateError as exc:  # the OSError, with the file's name; the transition is never acted on
                fatal.halt("this voter could not write its quorum-state file (PersistElectionState)", exc)
            return
        try:
            if isinstance(action, FlushLog):
                started = time.perf_counter()
                self._log.flush()
                if self._fsync_ms is not None:
                    self._fsync_ms.observe((time.perf_counter() - started) * 1000)
            elif isinstance(action, _FOLLOWER_LOG_ACTIONS):
                self._follower_log.apply_one(action)
        except (OSError, MetadataLogError) as exc:
            reason = f"this voter could not write its metadata log ({type(action).__name__})"
            fatal.halt_if_the_disk_failed(reason, exc, self._log)
            raise

    def _settle(self) -> None:
        """After the batches of actions of one loop turn: log a state change and re-arm the timer. Once a turn,
        and after what the turn sends: a follower's next Fetch leaves before this runs (``_call``)."""
        self._settling = False
        self._log_state()
        self._arm_timer()

    def _log_state(self) -> None:
        voter = self.voter
        described = (voter.kind.value, voter.epoch, voter.leader_id)
        if described == self._described:
            return
        old_state, old_epoch, _ = self._described
        self._described = described
        self.elections.on_state(voter.kind, _now_ms())
        leader = f", leader {voter.leader_id}" if voter.leader_id >= 0 else ""
        log.info("raft state: %s in epoch %d%s (was %s; %s)", voter.kind.value, voter.epoch, leader,
                 old_state or "starting", _why(old_state, old_epoch, voter.kind.value, voter.epoch))  # fmt: skip

    def _send(self, action: SendRequest) -> None:
        task = asyncio.get_running_loop().create_task(self._call(action), name=f"raft-send-{action.request_id}")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _call(self, action: SendRequest) -> None:
        """Send ``action`` and hand its answer over. A Fetch answer's next Fetch is sent by this same task, in
        the same step (``_on_fetch_answer``): the request is written before the loop runs anything else."""
        # The voter times an unanswered request out itself; a late answer is still handed over (it ignores it).
        timeout_s = self._config.request_timeout_ms / 1000 + 1.0
        next_action: SendRequest | None = action
        while next_action is not None:
            action, next_action = next_action, None
            lane = FETCH_LANE if action.api_key in _FETCH_KEYS else ELECTION_LANE
            response = await self._peers.call(action.destination, action.api_key, action.api_version, action.body,
                                              lane=lane, timeout_s=timeout_s)  # fmt: skip
            try:
                if response is None:
                    await asyncio.sleep(self._config.retry_backoff_ms / 1000)
                    self._perform(self.voter.handle_request_failure(action.request_id, _now_ms()))
                elif action.api_key == ApiKey.FETCH:
                    next_action = self._on_fetch_answer(action.request_id, response)
                else:
                    self._perform(self.voter.handle_response(action.request_id, response, _now_ms()))
            except RaftRefusedError as exc:  # this node cannot take part, and retrying changes nothing
                fatal.halt(f"a peer refused this voter's {ApiKey(action.api_key).name} request", exc)
            except Exception:
                log.exception("raft: handling the answer to %s failed", ApiKey(action.api_key).name)

    def _on_fetch_answer(self, request_id: int, response: Any) -> SendRequest | None:
        """A Fetch answer: append and fsync it, and tick at once (the voter deferred the next Fetch until the
        log changed) rather than on the timer. What the answer committed is applied to the standby controller
        later (:meth:`_defer_apply`): the leader's high watermark waits for the next Fetch, not for this node's
        image. A next Fetch (or FetchSnapshot) that ends the tick's actions is returned, for the caller to send
        at once, in its own task (``_call``); anything else is carried out here, in order."""
        actions = self.voter.handle_response(request_id, response, _now_ms())
        committed = [a for a in actions if isinstance(a, HighWatermarkUpdated)]
        self._perform([a for a in actions if not isinstance(a, HighWatermarkUpdated)])
        follow_up = self.voter.tick(_now_ms())
        fetch = follow_up[-1] if follow_up else None
        if isinstance(fetch, SendRequest) and fetch.api_key in _FETCH_KEYS:
            follow_up.pop()
        else:
            fetch = None
        self._perform(follow_up)
        if committed:
            self._defer_apply(committed[-1])
        return fetch

    def _defer_apply(self, action: HighWatermarkUpdated) -> None:
        """Replay the newly committed records into the standby's image within ``STANDBY_APPLY_DELAY_S``, all
        the commits of that time in one pass. Replayed at once, every commit's replay on both standbys lands
        just as the leader needs the CPU to count the Fetch that commits the next record: with voters sharing
        cores, that cost the commit latency more than the replay itself (bench/README.md, failover). The
        image is needed up to date only once this node claims the leadership, and it is brought up to date
        first then (:meth:`_apply_deferred`, from :meth:`_perform`)."""
        first = self._deferred_hw is None
        self._deferred_hw = action
        if first:
            asyncio.get_running_loop().call_later(STANDBY_APPLY_DELAY_S, self._apply_deferred)

    def _apply_deferred(self) -> None:
        action, self._deferred_hw = self._deferred_hw, None
        if action is not None:
            self._perform([action])

    def _commit(self, high_watermark: int) -> None:
        """The controller takes the records below ``high_watermark``: replayed into a standby's image, or answered
        on the leader. A failure there stops the process: Kafka's controller fault handler is fatal
        (``SharedServer.fatalQuorumControllerFaultHandler``, and ``metadataLoaderFaultHandler`` on a controller),
        as an image that lacks a committed record must not serve reads, nor lead."""
        try:
            self._role.on_high_watermark(high_watermark)
        except Exception as exc:
            fatal.halt(f"this controller could not apply the records committed below offset {high_watermark}", exc)


def build_quorum_driver(
    config: ServerConfig,
    cluster_id: str,
    metadata_log: MetadataLog,
    committer: GroupCommitter,
    controller: Controller,
    endpoints: Mapping[str, tuple[str, int]],
) -> QuorumDriver:
    """The voter of a node in a quorum of several (controller-only or combined) and the controller on top of
    it; raises ConfigError or ValueError for what cannot run."""
    role = ControllerQuorumRole(node_id=config.node_id, metadata_log=metadata_log, committer=committer,
                                controller=controller)  # fmt: skip
    # On activation: finalize the features of a new log (the first leader of a new cluster), as a single
    # controller does at its start (Controller.bootstrap).
    role.on_active.append(lambda _epoch: _spawn(controller.bootstrap(None), "controller-activation"))
    return QuorumDriver(config, cluster_id=cluster_id, metadata_log=metadata_log, role=role, endpoints=endpoints,
                        sasl_plain=controller_login(config), fsync_ms=committer.fsync_ms)  # fmt: skip


_background: set[asyncio.Task[Any]] = set()


def _spawn(coroutine: Awaitable[Any], name: str) -> None:
    async def run() -> None:
        try:
            await coroutine
        except NotControllerError:
            pass  # the leadership ended again at once
        except Exception:
            log.exception("%s failed", name)

    task = asyncio.get_running_loop().create_task(run(), name=name)
    _background.add(task)
    task.add_done_callback(_background.discard)
