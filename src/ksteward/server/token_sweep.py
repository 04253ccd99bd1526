"""The controller's periodic delegation-token sweep (Kafka's ``QuorumController`` event
``sweepExpiredDelegationTokens``): every ``delegation.token.expiry.check.interval.ms`` it removes the tokens past
their expiry or max timestamp, with one ``RemoveDelegationTokenRecord`` each."""

from __future__ import annotations

import asyncio
import logging

from ksteward.controller.active import Controller
from ksteward.controller.result import NotControllerError

log = logging.getLogger(__name__)


async def sweep_expired_tokens(controller: Controller, interval_s: float) -> None:
    """Run until cancelled; a tick that fails is logged and the next one tries again."""
    while True:
        await asyncio.sleep(interval_s)
        try:
            removed = await controller.sweep_expired_delegation_tokens()
        except NotControllerError:  # a standby of a quorum: the active controller sweeps
            continue
        except RuntimeError as exc:  # the metadata log failed: no more writes
            log.error("delegation token sweep stopped: %s", exc)
            return
        except Exception:
            log.exception("delegation token sweep failed")
            continue
        for token_id in removed:
            # Kafka logs the same line; the id is the token's SCRAM user name, not its secret (the HMAC).
            log.info("Delegation token expired for token: %s", token_id)
