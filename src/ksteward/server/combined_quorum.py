"""A combined node (``process.roles=broker,controller``) in a quorum of several voters: Kafka's combined mode.

The node is one voter of the quorum, with the controller on top of it, as a controller-only voter is
(``server.quorum``, ``server.controller_quorum``), and a broker that shares the voter's log, as Kafka's combined
mode shares one ``KafkaRaftClient``: the broker answers from the image its controller publishes as the high
watermark passes each record (on a standby, its replay of the committed records).

The broker talks to the active controller as a broker-only node does (``server.controller_links``), over the
controller listener, whichever voter leads, this one included (Kafka's broker in combined mode reaches its
controller through the same ``NodeToControllerChannelManager``): it registers and heartbeats
(``BrokerLifecycle``), forwards every mutation in an Envelope (KIP-590), and on SIGTERM shuts down through the
controller first. Its session is the controller's to keep or fence, like any broker's.

Start-up: the log, the image and the controller; the controller listeners, and the voter (the other voters
elect with it); then the broker registers, and its client listeners open once the controller unfenced it.
"""

from __future__ import annotations

import logging

from prometheus_client.registry import Collector

from ksteward.broker.context import ApiTable
from ksteward.broker.forwarding import ForwardingManager
from ksteward.configs.server_config import ConfigError, ServerConfig
from ksteward.server.app import Server, StartupError
from ksteward.server.broker_metadata import PublishedMetadata
from ksteward.server.connection import Forward
from ksteward.server.controller_channel import Address, controller_login
from ksteward.server.controller_links import (
    ControllerLinks,
    UnfenceAborted,
    controller_connector,
    forwarding_api_table,
    metadata_directory_id,
)
from ksteward.server.metrics.collectors import ForwardingCollector

log = logging.getLogger(__name__)


def is_combined_voter(config: ServerConfig) -> bool:
    """``broker,controller`` with several ``controller.quorum.voters``: this module's node."""
    return config.is_broker and config.is_controller and len(config.quorum_voters) > 1


class CombinedQuorumServer(Server):
    """See the module docstring."""

    def __init__(self, config: ServerConfig) -> None:
        super().__init__(config)
        self._forwarding = ForwardingManager()
        self._links: ControllerLinks | None = None

    async def start(self) -> None:
        cfg = self._config
        try:
            sasl_plain = controller_login(cfg)
        except ConfigError as exc:
            raise StartupError(str(exc)) from None
        await self._start_controller()
        assert self._quorum is not None and self._committer is not None
        voter, committer = self._quorum.voter, self._committer
        voters = cfg.quorum_voter_endpoints
        bootstrap = cfg.controller_quorum_addresses

        def leader_address() -> Address | None:
            return voters.get(voter.leader_id)

        def controller_address() -> Address:
            return leader_address() or bootstrap[0]

        metadata = PublishedMetadata(lambda: committer.published, high_watermark=lambda: voter.high_watermark,
                                     leader_address=leader_address)  # fmt: skip
        committer.publish_hooks.append(metadata.on_publish)
        self._links = ControllerLinks(cfg, cluster_id=self._cluster_id, incarnation_id=self.incarnation_id,
                                      directory_id=metadata_directory_id(cfg), metadata=metadata,
                                      controller=controller_address,
                                      connect=controller_connector(cfg, self._forwarding, sasl_plain),
                                      forwarding=self._forwarding, sasl_plain=sasl_plain)  # fmt: skip
        runtimes = self._listener_runtimes()
        controller_names = set(cfg.controller_listener_names)
        await self._bind_listeners([e for e in cfg.listeners if e.name in controller_names], runtimes)
        self._start_quorum()  # the other voters reach this one on its controller listeners
        self._links.start()
        try:
            await self._links.wait_until_unfenced(self._stopping)
        except UnfenceAborted as exc:
            raise StartupError(str(exc)) from None
        await self._bind_listeners([e for e in cfg.listeners if e.name not in controller_names], runtimes)
        await self._start_metrics()

    def _client_api_table(self) -> ApiTable:
        return forwarding_api_table(self._forwarding)

    def _forward(self) -> Forward | None:
        assert self._links is not None
        return self._links.channel.forward

    def _role_collectors(self) -> list[Collector]:
        """The controller's, and the broker's forwarding queue."""
        assert self._links is not None
        channel = self._links.channel
        return [*super()._role_collectors(),
                ForwardingCollector(self._forwarding, channel.queue_time_ms, channel.remote_time_ms)]  # fmt: skip

    async def stop(self) -> None:
        """The broker's controlled shutdown first, while this node's voter still takes part (it may lead); then
        the links, and the controller and its voter as any voter stops (a leader resigns)."""
        if self._links is not None:
            await self._links.shut_down()
            await self._links.close()
        await super().stop()
