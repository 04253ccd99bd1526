"""The controller's periodic broker session check (Kafka's ``maybeFenceStaleBroker`` task): every tick fences
the brokers whose last heartbeat is older than ``broker.session.timeout.ms``. A tick every eighth of a session
bounds how late a dead broker is fenced. A standby of a quorum is refused (NotControllerError) and skips the
tick: the active controller checks."""

from __future__ import annotations

import logging
import time

from ksteward.controller.active import Controller
from ksteward.server.tasks import run_controller_ticks

log = logging.getLogger(__name__)


async def fence_stale_brokers(controller: Controller, session_timeout_ms: int) -> None:
    """Run until cancelled, or until the metadata log failed."""

    async def tick() -> None:
        for broker_id in await controller.fence_stale_brokers(time.monotonic()):
            log.info("fenced broker %d: its session timed out", broker_id)

    await run_controller_ticks("broker session check", max(session_timeout_ms / 8000, 0.01), tick)
