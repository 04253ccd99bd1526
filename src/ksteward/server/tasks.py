"""Stopping a background task for certain.

``task.cancel()`` once is not enough on Python 3.11: ``asyncio.wait_for`` swallows a cancellation
that arrives just as the awaitable it wraps completes (bpo-42130, fixed in 3.12 by the rewrite of
``wait_for`` on ``asyncio.timeout``). A loop such as a follower's fetch loop then carries on, and a
shutdown that awaits it waits forever. :func:`cancel_and_wait` cancels again until the task is done.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

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
