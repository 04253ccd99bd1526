"""Requests waiting for the node to apply the metadata log up to an offset (read-your-writes; see
``ksteward.protocol.read_your_writes``)."""

from __future__ import annotations

import asyncio
import heapq
import itertools


class OffsetWaiters:
    """Futures keyed by offset, resolved in offset order as the applied offset advances."""

    def __init__(self) -> None:
        self._heap: list[tuple[int, int, asyncio.Future[None]]] = []
        self._order = itertools.count()

    async def wait(self, offset: int, applied: int) -> None:
        """Return once :meth:`advance` has reported an applied offset >= ``offset``; ``applied`` is now's."""
        if applied >= offset:
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._heap, (offset, next(self._order), future))
        await future  # a cancelled waiter stays in the heap until the offset passes; resolving it is a no-op

    def advance(self, applied: int) -> None:
        while self._heap and self._heap[0][0] <= applied:
            _, _, future = heapq.heappop(self._heap)
            if not future.done():
                future.set_result(None)
