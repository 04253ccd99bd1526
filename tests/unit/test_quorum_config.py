"""``server.quorum.quorum_config``: Kafka's ``controller.quorum.*`` timeouts (``QuorumConfig``), read by the voters
and, for ``controller.quorum.request.timeout.ms``, by a broker's Raft observer. A bad value names its key."""

from __future__ import annotations

import pytest

from ksteward.raft.election import QuorumConfig
from ksteward.server.quorum import quorum_config


def test_kafkas_defaults_when_nothing_is_set() -> None:
    assert quorum_config({}) == QuorumConfig()
    assert quorum_config({"controller.quorum.request.timeout.ms": " "}) == QuorumConfig()


def test_each_key_is_read() -> None:
    config = quorum_config({
        "controller.quorum.election.timeout.ms": "500",
        "controller.quorum.fetch.timeout.ms": "1000",
        "controller.quorum.election.backoff.max.ms": "700",
        "controller.quorum.request.timeout.ms": "1500",
        "controller.quorum.retry.backoff.ms": "30",
    })  # fmt: skip
    assert (config.election_timeout_ms, config.fetch_timeout_ms, config.election_backoff_max_ms,
            config.request_timeout_ms, config.retry_backoff_ms) == (500, 1000, 700, 1500, 30)  # fmt: skip


@pytest.mark.parametrize(("raw", "message"), [("soon", "an integer"), ("1.5", "an integer"), ("-1", "at least 0")])
def test_a_bad_value_names_its_key(raw: str, message: str) -> None:
    with pytest.raises(ValueError, match=rf"controller\.quorum\.request\.timeout\.ms .*{message}"):
        quorum_config({"controller.quorum.request.timeout.ms": raw})
