"""A broker-only node's AlterPartition requests (api 56) to the controller: the asyncio shell around
:class:`ksteward.broker.isr_expansion.IsrExpansions` (Kafka's ``AlterPartitionManager``).

After every change of the broker's image (and at least every heartbeat interval, for retries), it asks the
controller to add the caught-up adding replicas of the partitions this broker leads to their ISR, over its own
connection to the controller listener. The controller answers once the PartitionChangeRecord is durable; the
broker learns the result from the metadata log, as every other broker does. docs/reassignment.md.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import Any

from kio.schema.errors import ErrorCode

from ksteward.broker.isr_expansion import ALTER_PARTITION_VERSION, IsrExpansions, alter_partition_body
from ksteward.protocol.apis import ApiKey
from ksteward.server.broker_metadata import BrokerMetadata
from ksteward.server.controller_channel import ActiveControllerLink, Address, Connect
from ksteward.server.tasks import cancel_and_wait

log = logging.getLogger(__name__)


class IsrReporter:
    def __init__(
        self,
        *,
        node_id: int,
        follower: BrokerMetadata,
        broker_epoch: Callable[[], int],
        controller: Callable[[], Address],
        connect: Connect,
        interval_s: float,
    ) -> None:
        self._node_id = node_id
        self._follower = follower
        self._broker_epoch = broker_epoch
        self._link = ActiveControllerLink(controller, connect)
        self._interval_s = interval_s
        self._expansions = IsrExpansions()
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run(), name="isr-reporter")

    async def close(self) -> None:
        await cancel_and_wait(self._task)
        self._task = None
        await self._link.close()

    async def _run(self) -> None:
        follower = self._follower
        while True:
            await self._next_image(follower.image)
            if follower.stopped.is_set():
                return
            epoch = self._broker_epoch()
            if epoch < 0:
                continue
            due = self._expansions.due(follower.image, self._node_id)
            if due:
                await self._send(epoch, due)

    async def _next_image(self, seen: object) -> None:
        """Until the image is not ``seen`` any more, or one interval passed."""
        follower = self._follower
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(follower.wait_for(lambda: follower.image is not seen), self._interval_s)

    async def _send(self, epoch: int, due: dict[Any, dict[str, Any]]) -> None:
        body = alter_partition_body(self._node_id, epoch, due)
        response = await self._link.call(ApiKey.ALTER_PARTITION, ALTER_PARTITION_VERSION, body)
        if response is None or response.error_code != ErrorCode.none:
            if response is not None:
                log.info("AlterPartition refused with %s", ErrorCode(response.error_code).name)
            self._expansions.retry(due)
            return
        for topic in response.topics:
            for p in topic.partitions:
                code = ErrorCode(p.error_code)
                if code not in (ErrorCode.none, ErrorCode.new_leader_elected):
                    log.info("AlterPartition for partition %d refused with %s", p.partition_index, code.name)
                    self._expansions.retry([(topic.topic_id, int(p.partition_index))])
