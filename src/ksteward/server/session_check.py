"""The controller's periodic broker session check (Kafka's ``maybeFenceStaleBroker`` task): every tick fences
the brokers whose last heartbeat is older than ``broker.session.timeout.ms``. A tick every eighth of a session
bounds how late a dead broker is fenced. A standby of a quorum skips its ticks: the active controller checks."""

from __future__ import annotations

import asyncio
import logging
import time

from ksteward.controller.active import Controller
from ksteward.controller.result import NotControllerError

log = logging.getLogger(__name__)


async def fence_stale_brokers(controller: Controller, session_timeout_ms: int) -> None:
    """Run until cancelled, or until the metadata log failed."""
    interval = max(session_timeout_ms / 8000, 0.01)
    while True:
        await asyncio.sleep(interval)
        try:
            fenced = await controller.fence_stale_brokers(time.monotonic())
        except NotControllerError:  # a standby of a quorum: the active controller checks the sessions
            continue
        except RuntimeError as exc:  # the metadata log failed: no more writes, nothing to check
            log.error("broker session check stopped: %s", exc)
            return
        except Exception:  # a bug must not end the check for good: the next tick tries again
            log.exception("broker session check failed")
            continue
        for broker_id in fenced:
            log.info("fenced broker %d: its session timed out", broker_id)
