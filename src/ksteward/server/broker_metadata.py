"""What a broker's links to the active controller read of its metadata (``server.controller_links``).

A broker-only node follows the log itself (``MetadataFollower``). A combined node (``broker,controller``) in a
quorum of several voters shares its voter's log, as Kafka's combined mode shares one ``KafkaRaftClient``: its
broker reads the image the voter's controller publishes as the high watermark passes each record
(:class:`PublishedMetadata`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Protocol

from ksteward.metadata.image import MetadataImage
from ksteward.server.controller_channel import Address


class BrokerMetadata(Protocol):
    """The committed image a broker answers from, and how far it got."""

    @property
    def image(self) -> MetadataImage: ...

    @property
    def applied_offset(self) -> int:
        """The offset of the last record in the image (-1: none), for BrokerHeartbeat."""
        ...

    @property
    def caught_up(self) -> bool:
        """Every committed record this node heard of is in the image (Kafka's first "caught up")."""
        ...

    @property
    def controller_address(self) -> Address | None:
        """The Raft leader's endpoint on the controller listener, once known."""
        ...

    @property
    def stopped(self) -> asyncio.Event:
        """Set when following the log stopped for good (``failure`` says why)."""
        ...

    @property
    def failure(self) -> BaseException | None: ...

    async def wait_for(self, condition: Callable[[], bool]) -> None:
        """Wait until ``condition()`` holds after a publish (or already holds), or following stopped."""
        ...


class PublishedMetadata:
    """A combined voter's image, as its controller publishes it (``GroupCommitter.published``: a standby's
    replay of committed records, or the active controller's own committed writes). Call :meth:`on_publish`
    from the committer's publish hooks. Following never stops here: a voter that cannot apply a committed
    record stops the process (``server.quorum``)."""

    def __init__(
        self,
        image: Callable[[], MetadataImage],
        *,
        high_watermark: Callable[[], int],
        leader_address: Callable[[], Address | None],
    ) -> None:
        self._image = image
        self._high_watermark = high_watermark
        self._leader_address = leader_address
        self._published = asyncio.Event()
        self._stopped = asyncio.Event()
        self._target = -1  # the first high watermark learnt, to catch up to
        self._caught_up = False

    @property
    def image(self) -> MetadataImage:
        return self._image()

    @property
    def applied_offset(self) -> int:
        return self._image().offset

    @property
    def caught_up(self) -> bool:
        """Once the image held every record below the first high watermark this voter learnt, and from then on.
        Not "below the current one": a standby replays what the high watermark passes in batches (up to
        ``server.quorum.STANDBY_APPLY_DELAY_S`` apart) while records keep being committed (the NoOpRecords of
        ``metadata.max.idle.interval.ms`` among them), so its image is behind the current high watermark most of
        the time, and a broker that waited for that would ask to stay fenced for good."""
        if not self._caught_up:
            if self._target < 0:
                self._target = self._high_watermark()
            self._caught_up = self._target >= 0 and self._image().offset + 1 >= self._target
        return self._caught_up

    @property
    def controller_address(self) -> Address | None:
        return self._leader_address()

    @property
    def stopped(self) -> asyncio.Event:
        return self._stopped

    @property
    def failure(self) -> BaseException | None:
        return None

    def on_publish(self, _image: MetadataImage, _records: list[object]) -> None:
        """Wake the waiters: a new image was published."""
        self._published.set()
        self._published = asyncio.Event()

    async def wait_for(self, condition: Callable[[], bool]) -> None:
        while not condition():
            await self._published.wait()
