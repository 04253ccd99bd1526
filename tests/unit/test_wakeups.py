"""``server.tasks.Wakeups``: a parked Fetch's wait, woken by new data or ended by its ``MaxWaitMs``."""

from __future__ import annotations

import asyncio

import pytest

from ksteward.server.tasks import Wakeups


def test_a_wake_resumes_every_waiter_with_false() -> None:
    async def scenario() -> list[bool]:
        wakeups = Wakeups()
        far = asyncio.get_running_loop().time() + 60
        waits = [asyncio.ensure_future(wakeups.wait(far)) for _ in range(3)]
        await asyncio.sleep(0)  # every waiter parked
        wakeups.wake_all()
        results = await asyncio.gather(*waits)
        assert not wakeups._parked
        return results

    assert asyncio.run(scenario()) == [False, False, False]


def test_the_deadline_resumes_with_true() -> None:
    async def scenario() -> bool:
        wakeups = Wakeups()
        result = await wakeups.wait(asyncio.get_running_loop().time() + 0.01)
        assert not wakeups._parked
        return result

    assert asyncio.run(scenario()) is True


def test_a_deadline_already_past_does_not_park() -> None:
    async def scenario() -> bool:
        wakeups = Wakeups()
        return await wakeups.wait(asyncio.get_running_loop().time() - 1)

    assert asyncio.run(scenario()) is True


def test_a_wake_reaches_only_those_parked_before_it() -> None:
    async def scenario() -> None:
        wakeups = Wakeups()
        far = asyncio.get_running_loop().time() + 60
        first = asyncio.ensure_future(wakeups.wait(far))
        await asyncio.sleep(0)
        wakeups.wake_all()
        second = asyncio.ensure_future(wakeups.wait(far))
        assert await first is False
        await asyncio.sleep(0)
        assert not second.done()
        wakeups.wake_all()
        assert await second is False

    asyncio.run(scenario())


def test_two_wakeups_woken_in_turn_resume_in_that_order() -> None:
    async def scenario() -> list[str]:
        voters, observers = Wakeups(), Wakeups()
        far = asyncio.get_running_loop().time() + 60
        order: list[str] = []

        async def park(wakeups: Wakeups, name: str) -> None:
            await wakeups.wait(far)
            order.append(name)

        tasks = [asyncio.ensure_future(park(observers, "observer")), asyncio.ensure_future(park(voters, "voter"))]
        await asyncio.sleep(0)
        voters.wake_all()
        observers.wake_all()
        await asyncio.gather(*tasks)
        return order

    assert asyncio.run(scenario()) == ["voter", "observer"]


def test_a_cancelled_waiter_leaves_nothing_parked() -> None:
    async def scenario() -> None:
        wakeups = Wakeups()
        wait = asyncio.ensure_future(wakeups.wait(asyncio.get_running_loop().time() + 60))
        await asyncio.sleep(0)
        assert len(wakeups._parked) == 1
        wait.cancel()
        with pytest.raises(asyncio.CancelledError):
            await wait
        assert not wakeups._parked

    asyncio.run(scenario())
