"""A broker whose heartbeats are refused says so once, not every 100 ms: the first refusal at WARNING (Kafka's
``BrokerLifecycleManager`` warns of a refused heartbeat), its repeats at DEBUG, and the first acceptance after
them at INFO with their count."""

from __future__ import annotations

import asyncio
import logging
import uuid
from types import SimpleNamespace
from typing import Any

import pytest
from kio.schema.errors import ErrorCode

from ksteward.configs.server_config import parse_server_config
from ksteward.server.broker_lifecycle import BrokerLifecycle

CONFIG = parse_server_config({
    "process.roles": "broker", "node.id": "2", "listeners": "PLAINTEXT://127.0.0.1:9092",
    "controller.listener.names": "CONTROLLER", "controller.quorum.voters": "1@127.0.0.1:9093",
    "metadata.log.dir": "/nonexistent",
})  # fmt: skip


class ScriptedLink:
    """The controller's answers to this broker's heartbeats, one error code per call."""

    def __init__(self, errors: list[ErrorCode]) -> None:
        self.errors = errors

    async def call(self, api_key: int, version: int, body: Any) -> Any:
        return SimpleNamespace(error_code=self.errors.pop(0), is_fenced=False, should_shut_down=False)


def heartbeats(errors: list[ErrorCode]) -> list[bool]:
    follower = SimpleNamespace(applied_offset=7, caught_up=True)
    lifecycle = BrokerLifecycle(CONFIG, cluster_id="c", incarnation_id=uuid.uuid4(), directory_id=None,
                                follower=follower, controller=lambda: ("127.0.0.1", 9093),  # type: ignore[arg-type]
                                connect=None)  # type: ignore[arg-type]  # fmt: skip
    lifecycle._link = ScriptedLink(list(errors))  # type: ignore[assignment]

    async def run() -> list[bool]:
        return [await lifecycle._heartbeat() for _ in errors]

    return asyncio.run(run())


def test_a_run_of_refused_heartbeats_is_logged_once_and_its_end_once(caplog: pytest.LogCaptureFixture) -> None:
    denied, stale = ErrorCode.cluster_authorization_failed, ErrorCode.stale_broker_epoch
    caplog.set_level(logging.INFO, logger="ksteward.server.broker_lifecycle")
    answers = heartbeats([denied, denied, denied, ErrorCode.none, ErrorCode.none, stale, stale])
    assert answers == [False, False, False, True, True, False, False]
    lines = [(r.levelname, r.getMessage()) for r in caplog.records]
    assert lines == [
        ("WARNING", "broker heartbeat refused with cluster_authorization_failed; retrying every 100 ms"),
        ("INFO", "broker heartbeat accepted after 3 refusals with cluster_authorization_failed"),
        ("INFO", "broker 2 is unfenced"),
        ("WARNING", "broker heartbeat refused with stale_broker_epoch; retrying every 100 ms"),
    ]
