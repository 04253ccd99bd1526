"""Stopping a background task for certain, and the controller's periodic tasks.

``task.cancel()`` once is not enough on Python 3.11: ``asyncio.wait_for`` swallows a cancellation
that arrives just as the awaitable it wraps completes (bpo-42130, fixed in 3.12 by the rewrite of
``wait_for`` on ``asyncio.timeout``). A loop such as a follower's fetch loop then carries on, and a
shutdown that awaits it waits forever. :func:`cancel_and_wait` cancels again until the task is done.
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
