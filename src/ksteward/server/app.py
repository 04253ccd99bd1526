"""The running node: data directory, metadata log, group committer, listeners, shutdown.

``Server`` implements the broker's :class:`~ksteward.broker.context.Node` protocol. One process holds
both roles (``process.roles=broker,controller``): the controller writes the metadata log, and the
broker answers from the committed image. ``process.roles=controller`` runs the same class without the broker's
registration and client listeners; a broker-only node is :class:`ksteward.server.broker_server.BrokerServer`
(docs/cluster.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import hashlib
import logging
import signal
import time
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from prometheus_client.registry import Collector

from ksteward.authorizer import AuditLogWriter, StandardAuthorizer
from ksteward.broker.context import ApiTable
from ksteward.broker.token_logins import TokenLogins
from ksteward.configs.resolve import ConfigResolver
from ksteward.configs.server_config import ConfigError, Endpoint, ServerConfig
from ksteward.configs.topic_catalog import validate_topic_configs
from ksteward.controller.active import Controller
from ksteward.controller.cluster import BrokerRegistration
from ksteward.controller.configs import ConfigControlManager
from ksteward.controller.delegation_tokens import DelegationTokenControlManager, DelegationTokenSettings
from ksteward.controller.membership import ClusterControlManager
from ksteward.controller.mutation_quota import DEFAULT_SAMPLES, DEFAULT_WINDOW_SECONDS, MutationQuotas
from ksteward.controller.result import ApiError
from ksteward.controller.topic_requests import CreatedTopicConfig, TopicSettings
from ksteward.controller.topics import TopicControlManager
from ksteward.metadata.dir_lock import DirectoryLock, DirectoryLockError, lock_directories
from ksteward.metadata.image import MetadataImage
from ksteward.metadata.loader import MetadataLoadError, load
from ksteward.metadata.log import MetadataLog
from ksteward.metadata.meta_properties import FILE_NAME as META_PROPERTIES
from ksteward.metadata.meta_properties import MetaPropertiesError, ensure_meta_properties
from ksteward.policy import PolicyLoadError
from ksteward.policy.loader import Policies
from ksteward.protocol.sasl import (
    Credentials,
    ScramCredential,
    ScramMechanism,
    jaas_config_for,
    parse_server_jaas_config,
    plain_users,
    plain_verifier,
)
from ksteward.raft.quorum_state import QuorumStateError, begin_single_voter_epoch
from ksteward.server.acl_publisher import AclPublisher
from ksteward.server.api_table import broker_api_table, controller_api_table
from ksteward.server.collector import collector_paused, freeze_loaded_state
from ksteward.server.committer import GroupCommitter
from ksteward.server.connection import Connection, Forward, ListenerRuntime
from ksteward.server.controller_quorum import leader_change
from ksteward.server.fatal import halt
from ksteward.server.local_isr import LocalIsrReporter
from ksteward.server.metrics import MetricsSettings, MetricsStartError, NodeMetrics, metrics_settings
from ksteward.server.metrics.collectors import (
    ControllerEventCollector,
    ControllerMutationCollector,
    ImageCollector,
    PolicyCollector,
)
from ksteward.server.metrics.metadata_log import MetadataLogCollector, RaftView, current_vote, raft_state_name
from ksteward.server.noop_writer import write_noop_records
from ksteward.server.offset_waiters import OffsetWaiters
from ksteward.server.quorum import QuorumDriver, build_quorum_driver
from ksteward.server.raft_service import RaftService
from ksteward.server.session_check import fence_stale_brokers
from ksteward.server.tasks import cancel_and_wait
from ksteward.server.tls import server_context
from ksteward.server.token_sweep import sweep_expired_tokens

log = logging.getLogger(__name__)

# A ksteward extension, for the benchmark's baseline: "false" fsyncs every batch on its own.
GROUP_COMMIT_KEY = "ksteward.metadata.group.commit.enable"


class StartupError(Exception):
    """The server cannot start; the message is the one line the operator sees."""


@dataclass
class _Bound:
    endpoint: Endpoint
    server: asyncio.Server


class Server:
    def __init__(self, config: ServerConfig) -> None:
        self._config = config
        self._cluster_id = ""
        self._metadata_log: MetadataLog | None = None
        self._committer: GroupCommitter | None = None
        self._raft: RaftService | None = None
        self._quorum: QuorumDriver | None = None
        self._listeners: list[_Bound] = []
        self._connections: set[asyncio.Task[None]] = set()
        self._stopping = asyncio.Event()
        #: Why the node stopped by itself (None: asked to, by a signal or the caller); the exit status is then 1.
        self.failure: str | None = None
        self._decoy_secret = b""
        self._controller: Controller | None = None
        self._authorizer: StandardAuthorizer | None = None
        self._audit: AuditLogWriter | None = None
        self._policies: Policies | None = None
        self._dir_locks: list[DirectoryLock] = []
        self._session_check: asyncio.Task[None] | None = None
        self._token_sweep: asyncio.Task[None] | None = None
        self._noop_writer: asyncio.Task[None] | None = None
        self._token_logins: TokenLogins | None = None
        self._applied = OffsetWaiters()
        self.incarnation_id = uuid.uuid4()
        self._metrics: NodeMetrics | None = None
        self._acl_publisher: AclPublisher | None = None  # set with the authorizer
        self._metrics_settings: MetricsSettings | None = None

    # --- Node protocol -------------------------------------------------------------------------
    @property
    def config(self) -> ServerConfig:
        return self._config

    @property
    def cluster_id(self) -> str:
        return self._cluster_id

    @property
    def image(self) -> MetadataImage:
        assert self._committer is not None
        return self._committer.published

    @property
    def controller(self) -> Controller:
        assert self._controller is not None
        return self._controller

    def config_resolver(self) -> ConfigResolver:
        return self.controller.configs.resolver(self.image)

    @property
    def authorizer(self) -> StandardAuthorizer | None:
        return self._authorizer

    @property
    def audit(self) -> AuditLogWriter | None:
        return self._audit

    async def wait_until_applied(self, offset: int) -> None:
        await self._applied.wait(offset, self.image.offset)

    @property
    def raft_service(self) -> RaftService:
        """The KRaft leader serving Fetch and FetchSnapshot on the controller listener."""
        assert self._raft is not None
        return self._raft

    # --- lifecycle -----------------------------------------------------------------------------
    async def _load_metadata(self) -> tuple[MetadataImage, MetadataLog]:
        """The image and the open log of ``metadata.log.dir`` (``metadata.loader.load``, in a worker thread); a
        log that cannot be opened or rebuilt stops the start with one line."""
        cfg = self._config
        try:
            return await asyncio.to_thread(load, cfg.metadata_log_dir, log, segment_bytes=cfg.segment_bytes,
                                           replay_log=not self._log_may_hold_uncommitted)  # fmt: skip
        except (OSError, MetadataLoadError) as exc:
            raise StartupError(f"cannot open the metadata log in {cfg.metadata_log_dir}: {exc}") from None

    def _lock_data_dirs(self) -> list[Path]:
        """Lock ``metadata.log.dir`` and every ``log.dirs`` entry, and return them. Before anything in them is
        read or written (meta.properties, leftovers, recovery), as Kafka's LogManager.lockLogDirs: a second
        process on a directory stops here, changing nothing."""
        cfg = self._config
        dirs = [cfg.metadata_log_dir]
        dirs += [p for p in configured_log_dirs(cfg) if p != cfg.metadata_log_dir]
        try:
            self._dir_locks = lock_directories(dirs)
        except DirectoryLockError as exc:
            raise StartupError(str(exc)) from None
        return dirs

    async def start(self) -> None:
        await self._start_controller()
        runtimes = self._listener_runtimes()
        await self._bind_listeners(self._config.listeners, runtimes)
        self._start_quorum()  # after the listeners: the other voters reach this one there
        await self._start_metrics()

    async def _start_controller(self) -> None:
        """Everything before the listeners: the data directories, the log and image, the authorizer, the
        committer and the controller, and (one voter) the new epoch's first record."""
        cfg = self._config
        self._prepare_metrics()
        dirs = self._lock_data_dirs()
        formatting = not (cfg.metadata_log_dir / META_PROPERTIES).exists()
        try:
            self._cluster_id = ensure_meta_properties(dirs, cfg.node_id, cfg.static.get("cluster.id") or None)
            self._decoy_secret = hashlib.sha256((cfg.metadata_log_dir / META_PROPERTIES).read_bytes()).digest()
        except MetaPropertiesError as exc:
            raise StartupError(str(exc)) from None
        if formatting and self._several_voters:
            log.warning("formatted an empty metadata log directory for voter %d of a static quorum: right for a new "
                        "cluster; if this voter lost its disk, a majority counting it may elect a leader that lacks "
                        "committed records (docs/raft.md, \"A voter that lost its disk\")", cfg.node_id)  # fmt: skip
        with collector_paused():  # a bulk load of long-lived objects (server.collector)
            image, metadata_log = await self._load_metadata()
            self._metadata_log = metadata_log
            if self._several_voters:  # elected later, by the quorum (server.quorum)
                epoch = max([metadata_log.last_fetched_epoch, *(s.epoch for s in metadata_log.snapshots()), 0])
            else:
                epoch = await asyncio.to_thread(self._begin_epoch, metadata_log)
            self._start_authorizer(image)
        freeze_loaded_state()
        self._committer = GroupCommitter(
            metadata_log,
            image,
            epoch=epoch,
            snapshot_bytes=cfg.snapshot_bytes,
            group_commit=cfg.static.get(GROUP_COMMIT_KEY, "true").strip().lower() != "false",
            on_publish=self._on_publish,
            quorum=self._several_voters,
            on_durable=self._on_leader_durable,
            on_append=self._on_leader_appended,
            # A controller stops at once when its fsync fails, as Kafka's does (server.fatal).
            on_failure=self._on_log_failure,
        )
        # What fetchers are told the leader's address is: KIP-853's advertised controller listener, else the
        # listener itself (Kafka's KafkaConfig.effectiveAdvertisedControllerListeners).
        controller_endpoints = {name: address for name in cfg.controller_listener_names
                                if (address := cfg.advertised_controller_endpoint(name)) is not None}  # fmt: skip
        self._raft = RaftService(node_id=cfg.node_id, cluster_id=self._cluster_id, epoch=self._committer.epoch,
                                 metadata_log=metadata_log, endpoints=controller_endpoints)  # fmt: skip
        self._committer.publish_hooks.append(self._raft.on_publish)
        self._committer.publish_hooks.append(lambda image, _records: self._applied.advance(image.offset))
        topics = self._topic_manager()
        configs = ConfigControlManager(node_id=cfg.node_id, static=cfg.static, policies=self._policies)
        membership = ClusterControlManager(
            self._cluster_id,
            session_timeout_s=cfg.broker_session_timeout_ms / 1000,
            # A combined node's broker registers in process with its own, lone controller; in a quorum of
            # several voters it registers with whichever leads (server.combined_quorum).
            local_broker_id=cfg.node_id if cfg.is_broker and not self._several_voters else None,
        )
        self._controller = Controller(self._committer, topics, configs, membership, clock=time.monotonic)
        self._controller.mutation_quotas = self._mutation_quotas()
        tokens = self._token_settings()
        self._controller.delegation_tokens = DelegationTokenControlManager(tokens)
        self._committer.start()
        if self._several_voters:
            self._quorum = self._quorum_driver(controller_endpoints)
        else:
            # The epoch's first record, durable before anything else is written or served: the high watermark
            # then always covers a record of the current epoch (docs/raft.md, "The leader's epoch").
            await self._committer.begin_epoch(leader_change(cfg.node_id, (cfg.node_id,), (cfg.node_id,)))
            log.info("leading the metadata log in epoch %d", epoch)
            await self._controller.bootstrap(self._broker_registration())
        if cfg.is_broker and not self._several_voters:  # its own broker leads partitions too (docs/reassignment.md)
            self._committer.publish_hooks.append(LocalIsrReporter(self._controller, cfg.node_id).on_publish)
        self._session_check = asyncio.get_running_loop().create_task(
            fence_stale_brokers(self._controller, self._config.broker_session_timeout_ms), name="broker-session-check"
        )
        if tokens.enabled:
            sweep = sweep_expired_tokens(self._controller, tokens.expiry_check_interval_ms / 1000)
            self._token_sweep = asyncio.get_running_loop().create_task(sweep, name="delegation-token-sweep")
        if cfg.metadata_max_idle_interval_ms > 0:
            noops = write_noop_records(self._controller, cfg.metadata_max_idle_interval_ms)
            self._noop_writer = asyncio.get_running_loop().create_task(noops, name="noop-record-writer")

    async def _bind_listeners(self, endpoints: Iterable[Endpoint], runtimes: Mapping[str, ListenerRuntime]) -> None:
        for endpoint in endpoints:
            await self._bind(endpoint, runtimes[endpoint.name])
            log.info("listening on %s", self._listeners[-1].endpoint)

    def _start_quorum(self) -> None:
        """Start the Raft voter of a quorum of several (nothing for one voter, which already leads)."""
        if self._quorum is not None:
            try:
                self._quorum.start()
            except QuorumStateError as exc:
                raise StartupError(str(exc)) from None

    @property
    def _several_voters(self) -> bool:
        """A controller in a quorum of several voters (issue 18): elected, not leading by itself."""
        return self._config.is_controller and len(self._config.quorum_voters) > 1

    @property
    def _log_may_hold_uncommitted(self) -> bool:
        """Several controllers lead this log (voters, or bootstrap servers, beyond one): the local log may end
        in records that were never committed, which the next leader may truncate. The node then starts from its
        newest snapshot and replays its log only as the high watermark it learns passes it (Kafka's
        MetadataLoader publishes only committed batches). One controller serves only committed records."""
        cfg = self._config
        return len(cfg.quorum_voters) > 1 or len(cfg.quorum_bootstrap_servers) > 1

    @property
    def quorum(self) -> QuorumDriver | None:
        """The Raft voter's driver when this node is one of several voters (it serves Vote and the like)."""
        return self._quorum

    def _quorum_driver(self, endpoints: Mapping[str, tuple[str, int]]) -> QuorumDriver:
        """The voter and the controller on top of it (server.quorum, server.controller_quorum)."""
        assert self._metadata_log is not None and self._committer is not None and self._controller is not None
        try:
            return build_quorum_driver(self._config, self._cluster_id, self._metadata_log, self._committer,
                                       self._controller, endpoints)  # fmt: skip
        except (ConfigError, ValueError) as exc:
            raise StartupError(str(exc)) from None

    def _on_log_failure(self, error: BaseException) -> None:
        halt("this controller could not write or fsync its metadata log", error)

    def _on_leader_appended(self) -> None:
        if self._quorum is not None:
            self._quorum.on_leader_appended()

    def _on_leader_durable(self, end_offset: int) -> None:
        if self._quorum is not None:
            self._quorum.on_leader_durable(end_offset)

    # --- metrics -------------------------------------------------------------------------------
    def _prepare_metrics(self) -> None:
        """Check ``metrics.port`` / ``metrics.host`` before anything starts; the recorders exist from here on."""
        try:
            self._metrics_settings = metrics_settings(self._config.static)
        except ValueError as exc:
            raise StartupError(str(exc)) from None
        if self._metrics_settings is not None:
            self._metrics = NodeMetrics()
            for endpoint in self._config.listeners:
                self._metrics.sockets.listener(endpoint.name)

    async def _start_metrics(self) -> None:
        """Register this node's collectors and open ``/metrics`` (docs/metrics.md)."""
        metrics, settings = self._metrics, self._metrics_settings
        if metrics is None or settings is None:
            return
        try:
            await metrics.start(settings, self._authorizer, self._role_collectors())
        except MetricsStartError as exc:
            raise StartupError(str(exc)) from None
        log.info("serving metrics on http://%s:%d/metrics", settings.host, settings.port)

    def _role_collectors(self) -> list[Collector]:
        """The controller's: KafkaController's gauges from the image, the metadata log it leads."""
        assert self._metadata_log is not None and self._committer is not None
        metadata_log, committer = self._metadata_log, self._committer
        quorum, node_id = self._quorum, self._config.node_id
        if quorum is None:  # the one voter: it leads, and publishes only what is durable (committed)
            raft = RaftView(
                state=lambda: "leader",
                log_end_offset=lambda: metadata_log.next_offset,
                high_watermark=lambda: committer.published.offset + 1,
                epoch=lambda: committer.epoch,
                leader=lambda: node_id,
                snapshot_count=lambda: len(metadata_log.snapshots()),
                vote=lambda: node_id,
                log_end_epoch=lambda: metadata_log.last_fetched_epoch,
            )
            image = ImageCollector(lambda: self.image, controller=True, errors=self._metadata_errors)
        else:  # one voter of several: what its Raft state says (Kafka's KafkaRaftMetrics, QuorumController)
            voter = quorum.voter
            raft = RaftView(
                state=lambda: raft_state_name(voter.kind, voter.voted_id),
                log_end_offset=lambda: metadata_log.next_offset,
                high_watermark=lambda: voter.high_watermark,
                epoch=lambda: voter.epoch,
                leader=lambda: voter.leader_id,
                snapshot_count=lambda: len(metadata_log.snapshots()),
                vote=lambda: current_vote(voter.kind, node_id, voter.voted_id),
                log_end_epoch=lambda: metadata_log.last_fetched_epoch,
                elections=quorum.elections,
            )
            # The published image holds only committed records, on the active controller as on a standby.
            image = ImageCollector(lambda: self.image, controller=True, errors=self._metadata_errors,
                                   active=lambda: quorum.controller_active)  # fmt: skip
        events = ControllerEventCollector()
        assert self._controller is not None
        self._controller.on_event_processed = events.processing_ms.observe
        return [
            events,
            image,
            MetadataLogCollector(raft, lambda: committer),
            ControllerMutationCollector(lambda: self._controller.mutation_quotas if self._controller else None),
            PolicyCollector(),
        ]

    async def _close_metrics(self) -> None:
        if self._metrics is not None:
            await self._metrics.endpoint.close()

    def _begin_epoch(self, metadata_log: MetadataLog) -> int:
        """This node is the only voter: it leads in a new epoch, persisted in ``quorum-state`` first
        (``raft.quorum_state``). The log's last epoch counts its snapshots too, for a log cut back to one."""
        log_epoch = max([metadata_log.last_fetched_epoch, *(s.epoch for s in metadata_log.snapshots())])
        try:
            return begin_single_voter_epoch(metadata_log.directory, self._config.node_id, log_epoch)
        except QuorumStateError as exc:
            raise StartupError(f"{exc} (without the file, this node leads in the epoch after its log's last)") from None

    def _mutation_quotas(self) -> MutationQuotas:
        """KIP-599's buckets hold ``controller.quota.window.num`` windows of
        ``controller.quota.window.size.seconds`` each (Kafka's defaults: 11 of 1 s)."""
        static = self._config.static
        try:
            samples = int(static.get("controller.quota.window.num", DEFAULT_SAMPLES))
            seconds = float(static.get("controller.quota.window.size.seconds", DEFAULT_WINDOW_SECONDS))
        except ValueError as exc:
            raise StartupError(f"controller.quota.window.*: {exc}") from None
        if samples < 1 or not seconds >= 1:
            raise StartupError(
                "controller.quota.window.num and controller.quota.window.size.seconds must be at least 1"
            )
        return MutationQuotas(samples=samples, window_seconds=seconds)

    def _topic_manager(self) -> TopicControlManager:
        """Topic administration with the config catalog's checks and the configured policies."""
        cfg = self._config
        try:
            self._policies = Policies.from_config(cfg.static)
        except PolicyLoadError as exc:
            raise StartupError(str(exc)) from None

        def validate_configs(topic: str, configs: Mapping[str, str | None]) -> ApiError | None:
            return validate_topic_configs(configs, log_defaults=self._resolver().topic_log_defaults())

        def describe_configs(topic: str, configs: Mapping[str, str]) -> list[CreatedTopicConfig]:
            return [
                CreatedTopicConfig(
                    name=e.name,
                    value=e.value,
                    read_only=e.read_only,
                    config_source=int(e.source),
                    is_sensitive=e.is_sensitive,
                )
                for e in self._resolver().describe_topic(configs)
            ]

        return TopicControlManager(
            TopicSettings.from_config(cfg.static),
            self._policies,
            validate_configs=validate_configs,
            describe_configs=describe_configs,
        )

    def _resolver(self) -> ConfigResolver:
        """Effective broker-level values: this node's and the cluster's dynamic configs over server.properties."""
        assert self._committer is not None and self._controller is not None
        return self._controller.configs.resolver(self._committer.latest)

    def _metadata_errors(self) -> int:
        """ACL records the authorizer could not apply (MetadataErrorCount)."""
        return 0 if self._acl_publisher is None else self._acl_publisher.errors

    def _start_authorizer(self, image: MetadataImage) -> None:
        """Build the authorizer from the loaded image: a snapshot load, which completes the initial load."""
        cfg = self._config
        if not cfg.authorizer_class_name:
            return
        try:
            self._authorizer = StandardAuthorizer.from_config(
                {
                    "super.users": cfg.static.get("super.users", ""),
                    "allow.everyone.if.no.acl.found": cfg.static.get("allow.everyone.if.no.acl.found", "false"),
                }
            )
        except ValueError as exc:
            raise StartupError(f"authorizer: {exc}") from None
        # The image's ACL section holds every ACL as a binding already: share those, convert nothing.
        bindings = [(acl_id, binding) for binding, acl_id in image.acls.by_binding.items()]
        if len(bindings) < len(image.acls):
            log.warning("ignoring %d ACLs that cannot be evaluated", len(image.acls) - len(bindings))
        self._authorizer.load_snapshot(bindings, offset=image.offset)
        self._acl_publisher = AclPublisher(self._authorizer)
        audit_dir = cfg.static.get("audit.log.dir", "").strip()
        if audit_dir:
            try:
                self._audit = AuditLogWriter(
                    Path(audit_dir),
                    max_bytes=cfg.audit_log_max_bytes,
                    allowed=cfg.audit_log_allowed,
                    denied=cfg.audit_log_denied,
                    cluster_id=self._cluster_id,
                )
            except OSError as exc:
                raise StartupError(f"audit.log.dir {audit_dir}: {exc.strerror or exc}") from None

    def _on_publish(self, image: MetadataImage, records: list[object]) -> asyncio.Future[None] | None:
        """Apply a durable batch's ACL changes to the authorizer, in log order (a future while a large one is
        applied in a worker thread: see ``AclPublisher``)."""
        if self._acl_publisher is None:
            return None
        return self._acl_publisher.publish(image.offset, records)

    def _token_settings(self) -> DelegationTokenSettings:
        """The ``delegation.token.*`` keys; a bad value stops the start with one line naming the key."""
        try:
            return DelegationTokenSettings.from_config(self._config.static)
        except ValueError as exc:
            raise StartupError(str(exc)) from None

    def _broker_registration(self) -> BrokerRegistration | None:
        """What this node registers as a broker; None for a controller-only node."""
        cfg = self._config
        if not cfg.is_broker:
            return None
        rack = cfg.static.get("broker.rack") or None
        return BrokerRegistration(cfg.node_id, self.incarnation_id, tuple(cfg.advertised_listeners), rack)

    def _client_api_table(self) -> ApiTable:
        """The APIs this node's client (non-controller) listeners serve."""
        return broker_api_table()

    def _forward(self) -> Forward | None:
        """How client listeners forward mutations; None: this node runs them itself (it is the controller)."""
        return None

    def _listener_runtimes(self) -> dict[str, ListenerRuntime]:
        cfg = self._config
        tokens = self._token_settings()
        if tokens.secret_key:  # SCRAM logins with a delegation token (KIP-48)
            self._token_logins = TokenLogins(lambda: self.image, tokens.secret_key)
        broker_table: ApiTable = self._client_api_table()
        controller_table: ApiTable = controller_api_table()
        metrics = self._metrics
        runtimes = {}
        for endpoint in cfg.listeners:
            is_controller = endpoint.name in cfg.controller_listener_names
            credentials = self._credentials(endpoint) if endpoint.uses_sasl else None
            runtimes[endpoint.name] = ListenerRuntime(
                name=endpoint.name,
                security_protocol=endpoint.security_protocol,
                table=controller_table if is_controller else broker_table,
                max_frame_bytes=cfg.socket_request_max_bytes,
                enabled_mechanisms=cfg.sasl_enabled_mechanisms if endpoint.uses_sasl else (),
                credentials=credentials,
                failed_authentication_delay_s=cfg.failed_authentication_delay_ms / 1000,
                max_receive_before_auth=cfg.sasl_server_max_receive_size,
                idle_timeout_s=cfg.connections_max_idle_ms / 1000,
                forward=None if is_controller else self._forward(),
                request_metrics=metrics.requests if metrics is not None else None,
                socket_metrics=metrics.sockets.listener(endpoint.name) if metrics is not None else None,
                authorizations=metrics.authorizations if metrics is not None else None,
            )
        return runtimes

    def _credentials(self, endpoint: Endpoint) -> Credentials:
        cfg = self._config
        users: dict[str, str] = {}
        if "PLAIN" in cfg.sasl_enabled_mechanisms:
            text = jaas_config_for(cfg.static, endpoint.name, "PLAIN")
            if text is None:
                raise StartupError(
                    f"listener {endpoint.name} enables SASL PLAIN but has no JAAS config: set "
                    f"listener.name.{endpoint.name.lower()}.plain.sasl.jaas.config"
                )
            try:
                users = plain_users(parse_server_jaas_config(text).options)
            except ValueError as exc:
                raise StartupError(f"listener {endpoint.name}: bad sasl.jaas.config: {exc}") from None

        def scram_lookup(mechanism: ScramMechanism, user: str) -> ScramCredential | None:
            record = self.image.scram.get((int(mechanism), user))
            if record is None:
                return None
            return ScramCredential(
                salt=record.salt,
                stored_key=record.stored_key,
                server_key=record.server_key,
                iterations=record.iterations,
            )

        return Credentials(
            plain_verify=plain_verifier(users),
            scram_lookup=scram_lookup,
            decoy_secret=self._decoy_secret,
            token_lookup=None if self._token_logins is None else self._token_logins.lookup,
        )

    async def _bind(self, endpoint: Endpoint, runtime: ListenerRuntime) -> None:
        ssl_context = None
        if endpoint.uses_ssl:
            try:
                ssl_context = server_context(self._config.ssl_settings(endpoint.name))
            except ConfigError as exc:
                raise StartupError(str(exc)) from None

        async def on_connect(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            task = asyncio.current_task()
            assert task is not None
            self._connections.add(task)
            try:
                await Connection(self, runtime, reader, writer).serve()
            except asyncio.CancelledError:
                writer.close()  # shutdown cancels open connections; that is not an error
            finally:
                self._connections.discard(task)

        try:
            server = await asyncio.start_server(
                on_connect,
                host=endpoint.host or None,
                port=endpoint.port,
                ssl=ssl_context,
                limit=2**16,
                reuse_address=True,
            )
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                raise StartupError(f"listener {endpoint}: port {endpoint.port} is already in use") from None
            raise StartupError(f"listener {endpoint}: cannot listen: {exc.strerror or exc}") from None
        self._listeners.append(_Bound(endpoint, server))

    def request_stop(self, failure: str | None = None) -> None:
        """Stop serving; ``failure`` says why when the node cannot go on (``serve`` then exits with status 1)."""
        if failure is not None and self.failure is None:
            self.failure = failure
        self._stopping.set()

    def install_signal_handlers(self) -> None:
        """SIGTERM and SIGINT stop the server cleanly (call before announcing readiness)."""
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self.request_stop)

    async def serve_until_stopped(self) -> None:
        await self._stopping.wait()
        log.info("shutting down")
        await self.stop()

    async def stop(self) -> None:
        await self._close_metrics()
        for task in (self._session_check, self._token_sweep, self._noop_writer):
            if task is not None:
                with contextlib.suppress(Exception):
                    await cancel_and_wait(task)
        if self._quorum is not None:
            await self._quorum.close()
        if self._raft is not None:
            self._raft.shut_down()
        for bound in self._listeners:
            bound.server.close()
        # cancel_and_wait, not one cancel(): a handler's wait_for may swallow it (see server.tasks), and a
        # broker's connection would then keep fetching and hold the shutdown until the broker left.
        await asyncio.gather(*(cancel_and_wait(task) for task in list(self._connections)), return_exceptions=True)
        if self._committer is not None:
            await self._committer.close(snapshot=True)
        if self._metadata_log is not None:  # also when the start stopped between the load and the committer
            await asyncio.to_thread(self._metadata_log.close)
        if self._audit is not None:
            self._audit.close()
        if self._policies is not None:
            self._policies.close()
        for lock in self._dir_locks:  # last: nothing of ours writes the directories any more
            lock.release()
        self._dir_locks = []
        log.info("stopped")


def configured_log_dirs(cfg: ServerConfig) -> list[Path]:
    raw = cfg.static.get("log.dirs") or cfg.static.get("log.dir") or ""
    return [Path(p.strip()) for p in raw.split(",") if p.strip()]
