"""Stopping a background task for certain, and the controller's periodic tasks.

``task.cancel()`` once is not enough on Python 3.11: ``asyncio.wait_for`` swallows a cancellation
that arrives just as the awaitable it wraps completes (bpo-42130, fixed in 3.12 by the rewrite of
``wait_for`` on ``asyncio.timeout``). A loop such as a follower's fetch loop then carries on, and a
shutdown that awaits it waits forever. :func:`cancel_and_wait` cancels again until the task is done.

:class:`Wakeups` parks a coroutine until the next wake or a deadline: a parked Fetch's ``MaxWaitMs``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from ksteward.controller.result import NotControllerError

log = logging.getLogger(__name__)

_RECANCEL_S = 0.5  # how long one cancellation is given before the next; a bound, not a synchronisation


async def cancel_and_wait(task: asyncio.Task[Any] | None) -> None:
    """Cancel ``task`` until it has ended, then wait for it. An exception it ended with is raised."""
    if task is None:
        return
    while not task.done():
        task.cancel()
        await asyncio.wait({task}, timeout=_RECANCEL_S)
    with contextlib.suppress(asyncio.CancelledError):
        await task


class Wakeups:
    """Coroutines parked until the next :meth:`wake_all` or their deadline, like Kafka's fetch purgatory.

    Each wait is one future in a set and one ``loop.call_at`` that resolves it at the deadline: cheaper than
    ``asyncio.wait_for`` or ``asyncio.timeout`` (a task, or a context and a cancellation, on every wait), and
    a parked Fetch on the Raft leader waits once per committed batch. Two ``Wakeups`` woken one after the
    other resume in that order (the loop runs callbacks in the order they were scheduled).
    """

    __slots__ = ("_parked",)

    def __init__(self) -> None:
        self._parked: set[asyncio.Future[bool]] = set()

    def wake_all(self) -> None:
        parked, self._parked = self._parked, set()
        for waiter in parked:
            if not waiter.done():
                waiter.set_result(False)

    async def wait(self, deadline: float) -> bool:
        """Wait for the next :meth:`wake_all`; True if ``deadline`` (the loop's clock) came first."""
        loop = asyncio.get_running_loop()
        if loop.time() >= deadline:
            return True
        waiter: asyncio.Future[bool] = loop.create_future()
        self._parked.add(waiter)
        expiry = loop.call_at(deadline, _expire, waiter)
        try:
            return await waiter
        finally:
            expiry.cancel()
            self._parked.discard(waiter)


def _expire(waiter: asyncio.Future[bool]) -> None:
    if not waiter.done():
        waiter.set_result(True)


async def run_controller_ticks(what: str, interval_s: float, tick: Callable[[], Awaitable[None]]) -> None:
    """Await ``tick()`` every ``interval_s`` (each one finished before the next interval starts) until cancelled,
    or until the metadata log failed.

    - NotControllerError: a standby of a quorum, or the leadership moved during the tick; the next tick tries again.
    - RuntimeError: the metadata log failed, no more writes; logged and the loop ends.
    - Anything else is a bug; it is logged (``what`` names the task) and must not end the task for good.
    """
    while True:
        await asyncio.sleep(interval_s)
        try:
            await tick()
        except NotControllerError:
            continue
        except RuntimeError as exc:
            log.error("%s stopped: %s", what, exc)
            return
        except Exception:
            log.exception("%s failed", what)
