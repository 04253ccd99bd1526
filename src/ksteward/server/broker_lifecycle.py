"""A broker-only node's session with the controller: Kafka's ``BrokerLifecycleManager``.

1. **Register** (BrokerRegistration, api 62) with this process's incarnation id, its advertised listeners,
   the features it supports and its metadata directory id; retried until the controller accepts it
   (DUPLICATE_BROKER_REGISTRATION while an older incarnation's session is still valid, a controller that is
   not reachable yet).
2. **Heartbeat** (BrokerHeartbeat, api 63) every ``broker.heartbeat.interval.ms`` with the offset of the
   last record the broker applied. Until the broker has caught up with the log it asks to stay fenced
   (``WantFence``), as Kafka's broker does before its initial catch-up; the controller unfences it once that
   offset reaches its registration record (docs/cluster-membership.md). ``unfenced`` is set on the first
   reply with ``IsFenced=false``.
3. **Controlled shutdown**: ``shut_down`` sends ``WantShutDown`` at once and then at every interval until a
   reply says ``ShouldShutDown``, or a deadline passes.

Retries follow Kafka. A call that reached no controller (no connection, a timeout) or that the controller
answered NOT_CONTROLLER is sent again after ``backoff_s`` (100 ms) to the controller the broker knows then:
Kafka's ``NodeToControllerChannelManager`` re-queues such a request itself and the lifecycle manager never sees
it. Any other error in an answer is a refusal, retried with ``BrokerLifecycleManager``'s exponential back-off:
100 ms, doubled after each refusal in a row up to ``broker.session.timeout.ms``, with 2% jitter
(``ExponentialBackoff(100, 2, brokerSessionTimeoutMs, 0.02)``), and reset by an accepted call.

The rules on the controller's side are in docs/cluster-membership.md.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import random
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeGuard

from kio.schema.errors import ErrorCode

from ksteward.configs.server_config import ServerConfig
from ksteward.controller.cluster import SECURITY_PROTOCOL_CODES
from ksteward.controller.features import SUPPORTED_FEATURES
from ksteward.protocol.apis import ApiKey
from ksteward.server.broker_metadata import BrokerMetadata
from ksteward.server.controller_channel import ActiveControllerLink, Address, Connect
from ksteward.server.tasks import cancel_and_wait

log = logging.getLogger(__name__)

_REGISTRATION_VERSION = 4
_HEARTBEAT_VERSION = 2


@dataclass(frozen=True, slots=True)
class ExponentialBackoff:
    """Kafka's ``org.apache.kafka.common.utils.ExponentialBackoff``: ``initial_ms * multiplier ** attempts``,
    the exponent capped where the term reaches ``max_ms``, times a random factor in ``1 ± jitter``, and never
    above ``max_ms``."""

    initial_ms: float
    multiplier: float
    max_ms: float
    jitter: float

    def backoff_ms(self, attempts: int, rng: random.Random) -> float:
        exp_max = math.log(self.max_ms / self.initial_ms, self.multiplier) if self.max_ms > self.initial_ms else 0.0
        term = self.initial_ms * self.multiplier ** min(attempts, exp_max)
        factor = rng.uniform(1 - self.jitter, 1 + self.jitter) if self.jitter > 0 else 1.0
        return min(term * factor, self.max_ms)


class BrokerLifecycle:
    """Registration, heartbeats and controlled shutdown of one broker (see the module docstring)."""

    def __init__(
        self,
        config: ServerConfig,
        *,
        cluster_id: str,
        incarnation_id: uuid.UUID,
        directory_id: uuid.UUID | None,
        follower: BrokerMetadata,
        controller: Callable[[], Address],
        connect: Connect,
        backoff_s: float = 0.1,
        rng: random.Random | None = None,
    ) -> None:
        self._config = config
        self._cluster_id = cluster_id
        self.incarnation_id = incarnation_id
        self._directory_id = directory_id
        self._follower = follower
        self._link = ActiveControllerLink(controller, connect)
        self._backoff_s = backoff_s
        # BrokerLifecycleManager.resendExponentialBackoff: for refusals (see the module docstring).
        self._refusal_backoff = ExponentialBackoff(100, 2, config.broker_session_timeout_ms, 0.02)
        self._rng = rng or random.Random()
        self._failed_attempts = 0  # refusals in a row (Kafka's failedAttempts)
        self._retry_s = backoff_s  # how long to wait after the last call that was not accepted
        self._interval_s = config.broker_heartbeat_interval_ms / 1000
        self.broker_epoch = -1
        self.unfenced = asyncio.Event()
        self.should_shut_down = asyncio.Event()
        self._want_shut_down = False
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._refused: tuple[str, ErrorCode, int] | None = None  # (what, error, times in a row) being refused

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run(), name="broker-lifecycle")

    async def shut_down(self, timeout_s: float) -> bool:
        """Controlled shutdown: heartbeat with ``WantShutDown`` until the controller says ``ShouldShutDown``.
        False when the deadline passed first (the broker then stops anyway, as Kafka's does)."""
        if self.broker_epoch < 0:
            return False
        self._want_shut_down = True
        self._wake.set()
        try:
            await asyncio.wait_for(self.should_shut_down.wait(), timeout_s)
        except TimeoutError:
            log.warning("controlled shutdown did not complete within %.1f s; stopping anyway", timeout_s)
            return False
        log.info("controlled shutdown complete")
        return True

    async def close(self) -> None:
        await cancel_and_wait(self._task)
        self._task = None
        await self._link.close()

    async def _run(self) -> None:
        while self.broker_epoch < 0:
            if not await self._register():
                await asyncio.sleep(self._retry_s)
        while not self.should_shut_down.is_set():
            ok = await self._heartbeat()
            self._wake.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), self._interval_s if ok else self._retry_s)

    async def _register(self) -> bool:
        cfg = self._config
        body = {
            "broker_id": cfg.node_id,
            "cluster_id": self._cluster_id,
            "incarnation_id": self.incarnation_id,
            "listeners": [
                {
                    "name": e.name,
                    "host": e.host,
                    "port": e.port,
                    "security_protocol": SECURITY_PROTOCOL_CODES[e.security_protocol],
                }
                for e in cfg.advertised_listeners
            ],
            "features": [
                {"name": name, "min_supported_version": lo, "max_supported_version": hi}
                for name, (lo, hi) in SUPPORTED_FEATURES.items()
            ],
            "rack": cfg.static.get("broker.rack") or None,
            "is_migrating_zk_broker": False,
            "log_dirs": [self._directory_id] if self._directory_id is not None else [],
            "previous_broker_epoch": -1,
        }
        response = await self._link.call(ApiKey.BROKER_REGISTRATION, _REGISTRATION_VERSION, body)
        if not self._accepted(response, "registration"):
            return False
        self.broker_epoch = int(response.broker_epoch)
        log.info("registered broker %d with epoch %d", cfg.node_id, self.broker_epoch)
        return True

    def _accepted(self, response: Any | None, what: str) -> TypeGuard[Any]:
        """Whether the controller accepted the call; if not, ``_retry_s`` is when to try again (see the module
        docstring): ``backoff_s`` when no controller answered or the one asked is not the active controller,
        the exponential back-off after a refusal."""
        if response is None or response.error_code == ErrorCode.not_controller:
            if response is not None:
                log.debug("broker %s answered NOT_CONTROLLER; retrying", what)
            self._retry_s = self._backoff_s
            return False
        error = ErrorCode(response.error_code)
        if error is ErrorCode.none:
            self._failed_attempts = 0
            self._note_refusal(what, None)
            return True
        self._retry_s = self._refusal_backoff.backoff_ms(self._failed_attempts, self._rng) / 1000
        self._failed_attempts += 1
        self._note_refusal(what, error)
        return False

    def _note_refusal(self, what: str, error: ErrorCode | None) -> None:
        """Log a refused registration or heartbeat once, at WARNING (Kafka's ``BrokerLifecycleManager`` warns
        of each refusal): its repeats at DEBUG, and the first acceptance after refusals at INFO, with their
        count."""
        refused = self._refused
        if error is None:
            if refused is not None:
                log.info("broker %s accepted after %d refusals with %s", what, refused[2], refused[1].name)
                self._refused = None
            return
        if refused is not None and refused[:2] == (what, error):
            self._refused = (what, error, refused[2] + 1)
            log.debug("broker %s refused with %s again; retrying in %.0f ms", what, error.name, self._retry_s * 1000)
            return
        self._refused = (what, error, 1)
        log.warning(
            "broker %s refused with %s; retrying with a back-off from %.0f ms up to broker.session.timeout.ms "
            "(%d ms)", what, error.name, self._refusal_backoff.initial_ms, self._config.broker_session_timeout_ms,
        )  # fmt: skip

    async def _heartbeat(self) -> bool:
        body = {
            "broker_id": self._config.node_id,
            "broker_epoch": self.broker_epoch,
            "current_metadata_offset": self._follower.applied_offset,
            "want_fence": not self._follower.caught_up and not self.unfenced.is_set(),
            "want_shut_down": self._want_shut_down,
            "offline_log_dirs": [],
        }
        response = await self._link.call(ApiKey.BROKER_HEARTBEAT, _HEARTBEAT_VERSION, body)
        if not self._accepted(response, "heartbeat"):
            return False
        if not response.is_fenced and not self.unfenced.is_set():
            log.info("broker %d is unfenced", self._config.node_id)
            self.unfenced.set()
        if response.should_shut_down:
            self.should_shut_down.set()
        return True
