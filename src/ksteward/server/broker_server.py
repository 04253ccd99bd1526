"""The broker-only process (``process.roles=broker``): no controller inside it.

It follows the controller's metadata log into its own ``metadata.log.dir`` (``MetadataFollower``), answers
reads from the committed image, registers and heartbeats (``BrokerLifecycle``), opens its client listeners
once the controller has unfenced it, forwards every mutation to the controller in an Envelope (KIP-590,
``ControllerChannel``), and on SIGTERM shuts down through the controller (``WantShutDown``). Kafka's
``BrokerServer``; docs/cluster.md.

It reuses the combined node's listeners, login and authorizer set-up (:class:`ksteward.server.app.Server`);
everything that writes the metadata log (``Controller``, ``GroupCommitter``, the Raft leader, the session
check) is left out.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import uuid
from pathlib import Path

from prometheus_client.registry import Collector

from ksteward.broker.context import ApiTable
from ksteward.broker.forwarding import ForwardingManager
from ksteward.configs.catalog import ConfigResourceType
from ksteward.configs.resolve import ConfigResolver
from ksteward.configs.server_config import ConfigError, ServerConfig
from ksteward.controller.active import Controller
from ksteward.metadata.image import MetadataImage
from ksteward.metadata.meta_properties import FILE_NAME, MetaPropertiesError, ensure_meta_properties
from ksteward.server.app import Server, StartupError
from ksteward.server.collector import collector_paused, freeze_loaded_state
from ksteward.server.connection import Forward
from ksteward.server.controller_channel import Address, ControllerConnection, controller_login
from ksteward.server.controller_links import (
    ControllerLinks,
    UnfenceAborted,
    controller_connector,
    forwarding_api_table,
    metadata_directory_id,
)
from ksteward.server.metadata_follower import MetadataFollower
from ksteward.server.metrics.collectors import ForwardingCollector, ImageCollector
from ksteward.server.metrics.metadata_log import MetadataLogCollector, RaftView
from ksteward.server.tasks import cancel_and_wait

log = logging.getLogger(__name__)


class BrokerServer(Server):
    """A broker-only node; implements the :class:`~ksteward.broker.context.Node` protocol without a controller."""

    def __init__(self, config: ServerConfig) -> None:
        super().__init__(config)
        self._follower: MetadataFollower | None = None
        self._links: ControllerLinks | None = None
        self._forwarding = ForwardingManager()
        self._resolver_cache: tuple[object, ConfigResolver] | None = None
        self._watchdog: asyncio.Task[None] | None = None

    # --- Node protocol -------------------------------------------------------------------------
    @property
    def image(self) -> MetadataImage:
        assert self._follower is not None
        return self._follower.image

    async def wait_until_applied(self, offset: int) -> None:
        assert self._follower is not None
        await self._follower.wait_for(lambda: self.image.offset >= offset)

    @property
    def controller(self) -> Controller:
        raise RuntimeError("a broker-only node has no controller: its mutations are forwarded")

    def config_resolver(self) -> ConfigResolver:
        """As ``ConfigControlManager.resolver``: rebuilt only when the image's configs section changed."""
        configs = self.image.configs
        cached = self._resolver_cache
        if cached is not None and cached[0] is configs:
            return cached[1]
        broker = int(ConfigResourceType.BROKER)
        resolver = ConfigResolver(
            broker_configs=configs.get((broker, str(self._config.node_id)), {}),
            cluster_defaults=configs.get((broker, ""), {}),
            static=self._config.static,
        )
        self._resolver_cache = (configs, resolver)
        return resolver

    @property
    def follower(self) -> MetadataFollower:
        assert self._follower is not None
        return self._follower

    # --- lifecycle -----------------------------------------------------------------------------
    async def start(self) -> None:
        cfg = self._config
        self._prepare_metrics()
        dirs = self._lock_data_dirs()
        directory_id = self._format(dirs)
        try:
            sasl_plain = controller_login(cfg)
        except ConfigError as exc:
            raise StartupError(str(exc)) from None
        with collector_paused():  # a bulk load of long-lived objects (server.collector)
            image, metadata_log = await self._load_metadata()
            self._start_authorizer(image)
        freeze_loaded_state()
        bootstrap = cfg.controller_quorum_addresses
        # The broker's Raft observer bounds its requests with controller.quorum.request.timeout.ms.
        request_timeout_s = cfg.quorum.request_timeout_ms / 1000
        connect = controller_connector(cfg, self._forwarding, sasl_plain)

        async def observer_connect(address: Address) -> ControllerConnection:
            # As a Raft request's: a voter that stopped (SIGSTOP) accepts the TCP connection but never answers
            # ApiVersions, and the observer moves on to another voter after controller.quorum.request.timeout.ms.
            connection: ControllerConnection = await connect(address, request_timeout_s)
            return connection

        def controller_address() -> Address:
            assert self._follower is not None
            return self._follower.controller_address or bootstrap[0]

        self._follower = MetadataFollower(
            metadata_log=metadata_log,
            image=image,
            authorizer=self._authorizer,
            cluster_id=self._cluster_id,
            node_id=cfg.node_id,
            directory_id=directory_id,
            bootstrap=bootstrap,
            connect=observer_connect,
            voter_endpoints=cfg.quorum_voter_endpoints,
            request_timeout_s=request_timeout_s,
        )
        self._links = ControllerLinks(cfg, cluster_id=self._cluster_id, incarnation_id=self.incarnation_id,
                                      directory_id=directory_id, metadata=self._follower,
                                      controller=controller_address, connect=connect, forwarding=self._forwarding,
                                      sasl_plain=sasl_plain)  # fmt: skip
        self._follower.start()
        self._links.start()
        try:
            await self._links.wait_until_unfenced(self._stopping)
        except UnfenceAborted as exc:
            raise StartupError(str(exc)) from None
        self._watchdog = asyncio.get_running_loop().create_task(self._stop_when_told(), name="broker-watchdog")
        await self._bind_listeners(cfg.listeners, self._listener_runtimes())
        await self._start_metrics()

    def _role_collectors(self) -> list[Collector]:
        """A broker-only node's: broker-metadata-metrics from its image, the log it observes, the forwarding queue."""
        follower = self.follower
        assert self._links is not None
        channel = self._links.channel
        observer, follower_log = follower.observer, follower.follower_log
        raft = RaftView(
            state=lambda: "observer",
            log_end_offset=lambda: follower_log.log.next_offset,
            high_watermark=lambda: observer.high_watermark if observer.high_watermark is not None else -1,
            epoch=lambda: observer.epoch,
            leader=lambda: observer.leader_id if observer.leader_id is not None else -1,
            snapshot_count=lambda: len(follower_log.log.snapshots()),
            log_end_epoch=lambda: follower_log.log.last_fetched_epoch,
        )
        return [
            ImageCollector(lambda: self.image, controller=False),
            MetadataLogCollector(raft, lambda: None),
            ForwardingCollector(self._forwarding, channel.queue_time_ms, channel.remote_time_ms),
        ]

    def _format(self, dirs: list[Path]) -> uuid.UUID | None:
        """meta.properties: a broker joins the controller's cluster, so its cluster id must be configured
        (``cluster.id``) the first time; Kafka's storage tool formats every node with it. Returns the metadata
        directory's id, which the broker registers (``LogDirs``)."""
        cfg = self._config
        fresh = not (cfg.metadata_log_dir / FILE_NAME).exists()
        if fresh and not (cfg.static.get("cluster.id") or "").strip():
            raise StartupError(
                f"{cfg.metadata_log_dir} is not formatted: set cluster.id to the controller's cluster id"
            )
        try:
            self._cluster_id = ensure_meta_properties(dirs, cfg.node_id, cfg.static.get("cluster.id") or None)
            meta = (cfg.metadata_log_dir / FILE_NAME).read_bytes()
        except MetaPropertiesError as exc:
            raise StartupError(str(exc)) from None
        self._decoy_secret = hashlib.sha256(meta).digest()
        return metadata_directory_id(cfg)

    async def _stop_when_told(self) -> None:
        """Stop the node when following fails for good (a RaftFatalError, a log that cannot be written)."""
        assert self._follower is not None
        await self._follower.stopped.wait()
        log.error("the metadata log can no longer be followed; shutting down")
        failure = self._follower.failure
        self.request_stop(f"the metadata log can no longer be followed ({type(failure).__name__}: {failure})")

    # --- listeners -----------------------------------------------------------------------------
    def _client_api_table(self) -> ApiTable:
        return forwarding_api_table(self._forwarding)

    def _forward(self) -> Forward | None:
        assert self._links is not None
        return self._links.channel.forward

    # --- shutdown ------------------------------------------------------------------------------
    async def stop(self) -> None:
        await self._close_metrics()
        if self._watchdog is not None:
            with contextlib.suppress(Exception):
                await cancel_and_wait(self._watchdog)
        if self._links is not None:
            await self._links.shut_down()
        for bound in self._listeners:
            bound.server.close()
        # cancel_and_wait, not one cancel(): a handler's wait_for may swallow it (see server.tasks), and a
        # broker's connection would then keep fetching and hold the shutdown until the broker left.
        await asyncio.gather(*(cancel_and_wait(task) for task in list(self._connections)), return_exceptions=True)
        if self._links is not None:
            await self._links.close()
        if self._follower is not None:
            await self._follower.close()
        if self._audit is not None:
            self._audit.close()
        for lock in self._dir_locks:
            lock.release()
        self._dir_locks = []
        log.info("stopped")
