"""The asyncio driver of a controller voter (``ksteward.server.quorum.QuorumDriver``), the scheduling it adds to
the voter's decisions: writers answered by a high watermark move go before a voter's Fetch already waiting in
that turn of the loop; the timer task is woken only when the voter's deadline moves earlier; a follower's next
Fetch is sent by the task that handled the last answer.

The driver is real; its voter, controller role and peer connections are stand-ins, so that each test decides
what the voter answers and sees in which order the driver runs things (the processes on loopback are in
tests/integration/test_quorum_failover.py)."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from ksteward.configs.server_config import parse_server_config
from ksteward.controller.active import Controller
from ksteward.metadata.loader import load
from ksteward.protocol.apis import ApiKey
from ksteward.raft.observer import HighWatermarkUpdated
from ksteward.raft.voter_actions import SendRequest
from ksteward.server.committer import GroupCommitter
from ksteward.server.controller_quorum import ControllerQuorumRole
from ksteward.server.quorum import QuorumDriver, _now_ms

NODE = 1


class FakeVoter:
    """What the driver reads of a voter, with answers the test sets."""

    def __init__(self, deadline_ms: int) -> None:
        self.kind = SimpleNamespace(value="Leader")
        self.epoch = 3
        self.leader_id = NODE
        self.high_watermark = 0
        self.leader: object = object()
        self.deadline_ms = deadline_ms
        self.ticks = 0
        self.handled: list[str] = []
        self.tick_actions: list[Any] = []
        self.answer_actions: list[Any] = []

    def next_deadline_ms(self) -> int:
        return self.deadline_ms

    def tick(self, now_ms: int) -> list[Any]:
        self.ticks += 1
        actions, self.tick_actions = self.tick_actions, []
        return actions

    def handle_request(self, api_key: int, *_: Any) -> tuple[Any, list[Any]]:
        self.handled.append(ApiKey(api_key).name)
        return SimpleNamespace(answer=api_key), []

    def handle_response(self, request_id: int, response: Any, now_ms: int) -> list[Any]:
        return self.answer_actions


class FakeRole:
    """The controller on top: a high watermark move answers the writers waiting for it."""

    def __init__(self) -> None:
        self.waiting: list[asyncio.Future[int]] = []

    def on_high_watermark(self, offset: int) -> None:
        for writer in self.waiting:
            writer.set_result(offset)


class FakePeers:
    """Answers each Fetch at once, up to ``answers`` of them, then never again; notes the sending task."""

    def __init__(self, answers: int) -> None:
        self.answers = answers
        self.senders: list[asyncio.Task[Any] | None] = []
        self.never: asyncio.Future[None] | None = None

    async def call(self, node_id: int, api_key: int, *_: Any, **__: Any) -> Any:
        self.senders.append(asyncio.current_task())
        if len(self.senders) > self.answers:
            self.never = asyncio.get_running_loop().create_future()
            await self.never
        return SimpleNamespace(api_key=api_key)

    async def close(self) -> None:
        pass


def driver(tmp_path: Path, voter: FakeVoter) -> QuorumDriver:
    config = parse_server_config({
        "node.id": str(NODE), "process.roles": "controller", "controller.listener.names": "CONTROLLER",
        "listeners": "CONTROLLER://127.0.0.1:0", "metadata.log.dir": str(tmp_path),
        "controller.quorum.voters": "1@127.0.0.1:9093,2@127.0.0.1:9094,3@127.0.0.1:9095",
    })  # fmt: skip
    image, log = load(tmp_path, logging.getLogger("test"))
    committer = GroupCommitter(log, image, epoch=0, snapshot_bytes=1 << 30, quorum=True)
    role = ControllerQuorumRole(node_id=NODE, metadata_log=log, committer=committer,
                                controller=Controller(committer))  # fmt: skip
    quorum = QuorumDriver(config, cluster_id="c" * 22, metadata_log=log, role=role, endpoints={}, sasl_plain=None)
    quorum.voter = voter  # type: ignore[assignment]
    return quorum


def test_a_voter_fetch_waiting_in_the_turn_goes_after_the_writers_a_high_watermark_move_answered(
    tmp_path: Path,
) -> None:
    async def run() -> None:
        voter = FakeVoter(deadline_ms=_now_ms() + 60_000)
        quorum = driver(tmp_path, voter)
        role = FakeRole()
        quorum._role = role  # type: ignore[assignment]
        quorum._started.set()
        order: list[str] = []
        loop = asyncio.get_running_loop()
        answered: asyncio.Future[int] = loop.create_future()
        role.waiting.append(answered)

        async def writer() -> None:
            await answered
            order.append("writer answered")

        async def follower_fetch() -> None:
            await quorum.handle_request(ApiKey.FETCH, 17, object(), "CONTROLLER")
            order.append("fetch handled")

        waiting_writer = loop.create_task(writer())
        await asyncio.sleep(0)  # the writer waits for its commit
        fetch = loop.create_task(follower_fetch())  # a follower's Fetch, read in this turn: queued first
        quorum._perform([HighWatermarkUpdated(offset=5)])  # the other follower's Fetch moved the high watermark
        await asyncio.gather(waiting_writer, fetch)
        assert order == ["writer answered", "fetch handled"]
        # Only in the turn of the move: the next Fetch is handled at once.
        await quorum.handle_request(ApiKey.FETCH, 17, object(), "CONTROLLER")
        assert voter.handled == ["FETCH", "FETCH"] and not quorum._writers_answered

    asyncio.run(run())


def test_a_high_watermark_move_on_a_follower_does_not_hold_fetches_back(tmp_path: Path) -> None:
    async def run() -> None:
        voter = FakeVoter(deadline_ms=_now_ms() + 60_000)
        voter.leader_id = 2
        quorum = driver(tmp_path, voter)
        quorum._role = FakeRole()  # type: ignore[assignment]
        quorum._perform([HighWatermarkUpdated(offset=5)])
        assert not quorum._writers_answered

    asyncio.run(run())


def test_the_timer_task_is_woken_only_when_the_deadline_moves_earlier(tmp_path: Path) -> None:
    async def run() -> None:
        voter = FakeVoter(deadline_ms=_now_ms() + 30_000)  # beyond the 1 s cap: the timer sleeps 1 s
        quorum = driver(tmp_path, voter)
        timers = asyncio.get_running_loop().create_task(quorum._run_timers())
        for _ in range(3):
            await asyncio.sleep(0)
        wake = quorum._timer_wake
        assert wake is not None and not wake.done() and voter.ticks == 0

        voter.deadline_ms = _now_ms() + 20_000  # later than the timer's own 1 s: nothing to do sooner
        quorum._perform([])
        assert not wake.done() and quorum._timer_wake is wake

        voter.deadline_ms = _now_ms()  # due now (a retry, a timeout): the timer ticks at once
        quorum._perform([])
        assert wake.done()
        while voter.ticks == 0:
            await asyncio.sleep(0)
        assert quorum._timer_wake is not wake  # asleep again, on a new deadline
        timers.cancel()
        await asyncio.gather(timers, return_exceptions=True)

    asyncio.run(run())


def test_a_followers_next_fetch_is_sent_by_the_task_that_handled_the_last_answer(tmp_path: Path) -> None:
    async def run() -> None:
        voter = FakeVoter(deadline_ms=_now_ms() + 60_000)
        voter.kind = SimpleNamespace(value="Follower")
        voter.leader_id = 2
        quorum = driver(tmp_path, voter)
        peers = FakePeers(answers=3)
        quorum._peers = peers  # type: ignore[assignment]
        request_ids = iter(range(2, 100))

        def next_fetch() -> SendRequest:
            return SendRequest(destination=2, api_key=ApiKey.FETCH, api_version=17, body=None,
                               request_id=next(request_ids))  # fmt: skip

        original = voter.tick

        def tick(now_ms: int) -> list[Any]:  # every answer handled: the voter asks for the next Fetch
            original(now_ms)
            return [next_fetch()]

        voter.tick = tick  # type: ignore[method-assign]
        quorum._send(SendRequest(destination=2, api_key=ApiKey.FETCH, api_version=17, body=None, request_id=1))
        while peers.never is None:
            await asyncio.sleep(0)
        assert len(peers.senders) == 4  # three answered, the fourth waits
        assert len(set(peers.senders)) == 1  # all from the first send's task
        assert len(quorum._tasks) == 1
        for task in list(quorum._tasks):
            task.cancel()
        await asyncio.gather(*quorum._tasks, return_exceptions=True)

    asyncio.run(run())
