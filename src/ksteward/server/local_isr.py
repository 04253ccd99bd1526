"""The combined node's own broker as a partition leader: its AlterPartition requests go straight to the controller
in the same process (``Controller.alter_partition``), after each published batch. The rules are those of
``server/isr_reporter.py`` on a broker-only node (docs/reassignment.md, "Catching up").
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from kio.schema.errors import ErrorCode

from ksteward.broker.isr_expansion import IsrExpansions, PartitionKey, alter_partition_request
from ksteward.controller.active import Controller
from ksteward.metadata.image import MetadataImage

log = logging.getLogger(__name__)


class LocalIsrReporter:
    def __init__(self, controller: Controller, node_id: int) -> None:
        self._controller = controller
        self._node_id = node_id
        self._expansions = IsrExpansions()
        self._tasks: set[asyncio.Task[None]] = set()

    def on_publish(self, image: MetadataImage, _records: list[Any]) -> None:
        """A publish hook: ask for what the new image makes due (the next publish retries what failed)."""
        registration = image.cluster.get(self._node_id)
        if registration is None:
            return
        due = self._expansions.due(image, self._node_id)
        if due:
            task = asyncio.get_running_loop().create_task(self._send(int(registration.broker_epoch), due))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _send(self, epoch: int, due: dict[PartitionKey, dict[str, Any]]) -> None:
        try:
            reply = await self._controller.alter_partition(alter_partition_request(self._node_id, epoch, due))
        except Exception as exc:  # the log failed: nothing more is written
            log.info("AlterPartition not applied (%s)", type(exc).__name__)
            self._expansions.retry(due)
            return
        if reply.error.code != ErrorCode.none:
            self._expansions.retry(due)
            return
        for topic_id, results in reply.topics:
            failed = [(topic_id, r.partition) for r in results
                      if r.error not in (ErrorCode.none, ErrorCode.new_leader_elected)]  # fmt: skip
            self._expansions.retry(failed)
