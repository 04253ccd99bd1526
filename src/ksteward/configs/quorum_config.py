"""Kafka's ``controller.quorum.*`` timeouts (``org.apache.kafka.raft.QuorumConfig``), in milliseconds.

Every node reads them while its ``server.properties`` is parsed (``ServerConfig.quorum``, from
``configs.server_config``), whatever its roles, as Kafka's ``KafkaConfig`` does: a value that is not a whole number
of milliseconds stops any node's start-up with a message naming the key. The voters run their Raft timers on them;
a broker's Raft observer bounds its requests to the controllers with ``controller.quorum.request.timeout.ms``.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["QuorumConfig"]


@dataclass(frozen=True, slots=True)
class QuorumConfig:
    """``controller.quorum.*`` settings (Kafka 4.0 defaults), in milliseconds."""

    election_timeout_ms: int = 1000
    fetch_timeout_ms: int = 2000
    election_backoff_max_ms: int = 1000
    request_timeout_ms: int = 2000
    retry_backoff_ms: int = 20
    fetch_max_wait_ms: int = 500

    @property
    def check_quorum_timeout_ms(self) -> int:
        """``LeaderState.CHECK_QUORUM_TIMEOUT_FACTOR`` (1.5) times the fetch timeout."""
        return self.fetch_timeout_ms * 3 // 2

    @property
    def begin_quorum_epoch_period_ms(self) -> int:
        """``LeaderState.beginQuorumEpochTimeoutMs``: the leader re-announces itself every fetch timeout / 2."""
        return self.fetch_timeout_ms // 2
