"""The periodic NoOpRecord task (KIP-835, ``server/noop_writer.py``): it writes only while its controller is
active, carries on after a lost leadership or a bug, and stops when the metadata log failed."""

from __future__ import annotations

import asyncio
from typing import Any, cast

from ksteward.controller.active import Controller
from ksteward.controller.result import NotControllerError
from ksteward.server.noop_writer import write_noop_records
from ksteward.server.tasks import cancel_and_wait


class _Controller:
    """What the task reads of a Controller: ``is_active`` and ``write_noop_record``."""

    def __init__(self, outcomes: list[BaseException | None], active: list[bool]) -> None:
        self.outcomes, self.active = outcomes, active
        self.ticks = 0  # is_active calls: one a tick
        self.writes = 0
        self.done = asyncio.Event()

    def is_active(self) -> bool:
        self.ticks += 1
        active = self.active[min(self.ticks, len(self.active)) - 1]
        if not active and self.ticks >= len(self.active) + len(self.outcomes):
            self.done.set()
        return active

    async def write_noop_record(self) -> None:
        self.writes += 1
        outcome = self.outcomes[self.writes - 1] if self.writes <= len(self.outcomes) else None
        if self.writes >= len(self.outcomes):
            self.done.set()
        if outcome is not None:
            raise outcome


async def _run(fake: _Controller, *, until_done: bool = True) -> asyncio.Task[None]:
    task = asyncio.get_running_loop().create_task(write_noop_records(cast(Controller, cast(Any, fake)), 1))
    if until_done:
        await asyncio.wait_for(fake.done.wait(), 10)
    return task


def test_it_writes_on_the_active_controller_and_carries_on_after_failures() -> None:
    async def main() -> None:
        fake = _Controller([None, NotControllerError("moved"), ValueError("a bug"), None], active=[True])
        task = await _run(fake)
        await cancel_and_wait(task)
        assert fake.writes >= 4  # the lost leadership and the bug did not end the task

    asyncio.run(main())


def test_a_standby_writes_nothing() -> None:
    async def main() -> None:
        fake = _Controller([], active=[False, False, False])
        task = await _run(fake)
        await cancel_and_wait(task)
        assert fake.ticks >= 3 and fake.writes == 0

    asyncio.run(main())


def test_a_failed_metadata_log_ends_the_task() -> None:
    async def main() -> None:
        fake = _Controller([RuntimeError("the metadata log failed")], active=[True])
        task = await _run(fake, until_done=False)
        await asyncio.wait_for(task, 10)  # it returns by itself
        assert fake.writes == 1

    asyncio.run(main())
