"""The active controller's periodic ``NoOpRecord`` (KIP-835; Kafka's ``QuorumController`` task
``writeNoOpRecord``, every ``metadata.max.idle.interval.ms``, 500 ms by default, none when 0).

Kafka writes it whether or not other writes happened, so the high watermark moves about twice a second even on
an idle cluster: brokers and standby controllers see their long-polled Fetch answered within one interval, and
every node's applied offset (``CurrentMetadataOffset``, DescribeQuorum's log end offsets) keeps moving. Replay
ignores the record. A standby of a quorum skips its ticks; the active controller writes. Each tick waits for
its record to commit before the next interval starts, so a leader that cannot reach a majority appends one,
not one per interval, until check-quorum makes it resign.
"""

from __future__ import annotations

from ksteward.controller.active import Controller
from ksteward.server.tasks import run_controller_ticks


async def write_noop_records(controller: Controller, interval_ms: int) -> None:
    """Run until cancelled, or until the metadata log failed."""

    async def tick() -> None:
        if controller.is_active():  # a standby: nothing to write, and no exception to raise and catch
            await controller.write_noop_record()

    await run_controller_ticks("NoOpRecord writer", interval_ms / 1000, tick)
