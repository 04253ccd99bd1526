"""How a broker retries a registration or heartbeat the controller did not accept, and how it logs that.

- A refusal (an error other than NOT_CONTROLLER in the answer) is retried with Kafka's
  ``BrokerLifecycleManager`` back-off: 100 ms, doubled after each refusal in a row, up to
  ``broker.session.timeout.ms``, with 2% jitter; an accepted call resets it.
- No answer, or NOT_CONTROLLER, is retried after 100 ms and does not count as a refusal (Kafka's
  ``NodeToControllerChannelManager`` re-queues those itself).
- A run of refusals is logged once: the first at WARNING, the repeats at DEBUG, and the first acceptance after
  them at INFO with their count.
"""

from __future__ import annotations

import asyncio
import logging
import random
import uuid
from types import SimpleNamespace
from typing import Any

import pytest
from kio.schema.errors import ErrorCode

from ksteward.configs.server_config import parse_server_config
from ksteward.server.broker_lifecycle import BrokerLifecycle, ExponentialBackoff

CONFIG = parse_server_config({
    "process.roles": "broker", "node.id": "2", "listeners": "PLAINTEXT://127.0.0.1:9092",
    "controller.listener.names": "CONTROLLER", "controller.quorum.voters": "1@127.0.0.1:9093",
    "metadata.log.dir": "/nonexistent", "broker.session.timeout.ms": "2000",
})  # fmt: skip
DENIED, STALE = ErrorCode.cluster_authorization_failed, ErrorCode.stale_broker_epoch
NO_ANSWER = None


class ScriptedLink:
    """The controller's answers to this broker's heartbeats, one error code (or no answer) per call."""

    def __init__(self, errors: list[ErrorCode | None]) -> None:
        self.errors = errors

    async def call(self, api_key: int, version: int, body: Any) -> Any:
        error = self.errors.pop(0)
        if error is None:
            return None
        return SimpleNamespace(error_code=error, is_fenced=False, should_shut_down=False)


def heartbeats(errors: list[ErrorCode | None]) -> list[tuple[bool, float]]:
    """Each heartbeat's outcome, and how long the broker would wait after it if it was not accepted (ms)."""
    follower = SimpleNamespace(applied_offset=7, caught_up=True)
    lifecycle = BrokerLifecycle(CONFIG, cluster_id="c", incarnation_id=uuid.uuid4(), directory_id=None,
                                follower=follower, controller=lambda: ("127.0.0.1", 9093),  # type: ignore[arg-type]
                                connect=None, rng=random.Random(5))  # type: ignore[arg-type]  # fmt: skip
    lifecycle._link = ScriptedLink(list(errors))  # type: ignore[assignment]

    async def run() -> list[tuple[bool, float]]:
        out = []
        for _ in errors:
            ok = await lifecycle._heartbeat()
            out.append((ok, round(lifecycle._retry_s * 1000, 3)))
        return out

    return asyncio.run(run())


def test_refusals_back_off_exponentially_up_to_the_session_timeout_and_success_resets_it() -> None:
    answers = heartbeats([DENIED] * 7 + [ErrorCode.none, STALE])
    waits = [wait for ok, wait in answers if not ok]
    assert [ok for ok, _ in answers] == [False] * 7 + [True, False]
    nominal = [100, 200, 400, 800, 1600, 2000, 2000, 100]
    for wait, expected in zip(waits, nominal, strict=True):
        assert expected * 0.98 <= wait <= min(expected * 1.02, 2000)
    assert waits[5] <= 2000 and waits[6] <= 2000  # never above broker.session.timeout.ms
    assert len(set(waits[:5])) == 5


def test_no_answer_and_not_controller_are_retried_after_100_ms_and_do_not_grow_the_back_off() -> None:
    answers = heartbeats([DENIED, DENIED, NO_ANSWER, ErrorCode.not_controller, DENIED])
    waits = [wait for _, wait in answers]
    assert waits[2] == waits[3] == 100
    assert 400 * 0.98 <= waits[4] <= 400 * 1.02  # the third refusal in a row: the NOT_CONTROLLER between counts not


def test_kafkas_exponential_backoff_without_jitter() -> None:
    backoff = ExponentialBackoff(100, 2, 1000, 0.0)
    rng = random.Random(1)
    assert [backoff.backoff_ms(n, rng) for n in range(6)] == [100, 200, 400, 800, 1000, 1000]
    assert ExponentialBackoff(100, 2, 50, 0.0).backoff_ms(3, rng) == 50  # max below initial: capped


def test_a_run_of_refused_heartbeats_is_logged_once_and_its_end_once(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="ksteward.server.broker_lifecycle")
    answers = heartbeats(
        [DENIED, DENIED, DENIED, ErrorCode.none, ErrorCode.none, STALE, STALE, ErrorCode.not_controller]
    )
    assert [ok for ok, _ in answers] == [False, False, False, True, True, False, False, False]
    lines = [(r.levelname, r.getMessage()) for r in caplog.records]
    session = "retrying with a back-off from 100 ms up to broker.session.timeout.ms (2000 ms)"
    assert lines == [
        ("WARNING", f"broker heartbeat refused with cluster_authorization_failed; {session}"),
        ("INFO", "broker heartbeat accepted after 3 refusals with cluster_authorization_failed"),
        ("INFO", "broker 2 is unfenced"),
        ("WARNING", f"broker heartbeat refused with stale_broker_epoch; {session}"),
    ]
