"""What a combined voter's broker reads of its metadata (``server.broker_metadata.PublishedMetadata``).

- It is caught up once its image holds every record below the first high watermark its voter learnt, and
  stays so while the high watermark moves on ahead of a standby's batched replay (else the broker would ask
  to stay fenced for good).
- ``wait_for`` returns once a publish makes the condition hold, and at once when it already does.
- The controller's address is the leader's, and none while no leader is known.
"""

from __future__ import annotations

import asyncio
import dataclasses

from ksteward.metadata.image import EMPTY_IMAGE, MetadataImage
from ksteward.server.broker_metadata import PublishedMetadata


class Voter:
    def __init__(self) -> None:
        self.image = EMPTY_IMAGE
        self.high_watermark = -1
        self.leader: tuple[str, int] | None = None


def published(voter: Voter) -> PublishedMetadata:
    return PublishedMetadata(lambda: voter.image, high_watermark=lambda: voter.high_watermark,
                             leader_address=lambda: voter.leader)  # fmt: skip


def at(offset: int) -> MetadataImage:
    return dataclasses.replace(EMPTY_IMAGE, offset=offset)


def test_caught_up_once_the_image_reaches_the_first_high_watermark_and_from_then_on() -> None:
    voter = Voter()
    metadata = published(voter)
    assert not metadata.caught_up  # no high watermark learnt yet
    voter.high_watermark = 10  # records 0..9 are committed
    voter.image = at(5)
    assert not metadata.caught_up
    voter.high_watermark = 20  # committed on: the target stays the first high watermark learnt
    voter.image = at(9)
    assert metadata.caught_up and metadata.applied_offset == 9
    voter.high_watermark = 40  # the replay trails the high watermark again: still caught up
    assert metadata.caught_up


def test_the_controller_address_is_the_leaders() -> None:
    voter = Voter()
    metadata = published(voter)
    assert metadata.controller_address is None
    voter.leader = ("127.0.0.1", 9093)
    assert metadata.controller_address == ("127.0.0.1", 9093)
    assert not metadata.stopped.is_set() and metadata.failure is None


def test_wait_for_returns_after_the_publish_that_makes_the_condition_hold() -> None:
    async def run() -> None:
        voter = Voter()
        metadata = published(voter)
        await asyncio.wait_for(metadata.wait_for(lambda: True), 1.0)  # holds already
        waiter = asyncio.ensure_future(metadata.wait_for(lambda: metadata.image.offset >= 2))
        for offset in (0, 1):
            voter.image = at(offset)
            metadata.on_publish(voter.image, [])
            await asyncio.sleep(0)
            await asyncio.sleep(0)
            assert not waiter.done()
        voter.image = at(2)
        metadata.on_publish(voter.image, [])
        await asyncio.wait_for(waiter, 1.0)

    asyncio.run(run())
