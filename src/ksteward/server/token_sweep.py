"""The controller's periodic delegation-token sweep (Kafka's ``QuorumController`` event
``sweepExpiredDelegationTokens``): every ``delegation.token.expiry.check.interval.ms`` it removes the tokens past
their expiry or max timestamp, with one ``RemoveDelegationTokenRecord`` each. A standby of a quorum is refused
(NotControllerError) and skips the tick: the active controller sweeps."""

from __future__ import annotations

import logging

from ksteward.controller.active import Controller
from ksteward.server.tasks import run_controller_ticks

log = logging.getLogger(__name__)


async def sweep_expired_tokens(controller: Controller, interval_s: float) -> None:
    """Run until cancelled, or until the metadata log failed; a tick that fails is logged and the next one tries
    again."""

    async def tick() -> None:
        for token_id in await controller.sweep_expired_delegation_tokens():
            # Kafka logs the same line; the id is the token's SCRAM user name, not its secret (the HMAC).
            log.info("Delegation token expired for token: %s", token_id)

    await run_controller_ticks("delegation token sweep", interval_s, tick)
