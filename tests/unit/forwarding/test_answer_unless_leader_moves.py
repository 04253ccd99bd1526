"""``controller_channel.answer_unless_leader_moves``: a call to a controller that stopped answering is abandoned as a
lost connection once the Raft leader moved, is a timeout when it did not, and returns the answer otherwise. The
forwarding channel and the broker's heartbeats (``ActiveControllerLink``) both wait this way."""

from __future__ import annotations

import asyncio

import pytest

from ksteward.server.controller_channel import answer_unless_leader_moves


async def _never() -> str:
    await asyncio.Event().wait()
    return "never"


async def _answered() -> str:
    await asyncio.sleep(0)
    return "answer"


def test_the_answer_comes_back() -> None:
    assert asyncio.run(answer_unless_leader_moves(_answered(), 60.0, lambda: True)) == "answer"


def test_a_silent_controller_is_abandoned_once_the_leader_moved() -> None:
    async def scenario() -> None:
        asks = 0

        def moved() -> bool:
            nonlocal asks
            asks += 1
            return asks >= 3  # the leader moves after two checks

        # A minute's timeout: were the call not abandoned, it would end in TimeoutError, not ConnectionError.
        with pytest.raises(ConnectionError):
            await answer_unless_leader_moves(_never(), 60.0, moved)
        assert asks == 3

    asyncio.run(scenario())


def test_a_silent_controller_times_out_while_the_leader_stays() -> None:
    with pytest.raises(TimeoutError):
        asyncio.run(answer_unless_leader_moves(_never(), 0.3, lambda: False))
