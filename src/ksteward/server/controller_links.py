"""A broker's links to the active controller, over the controller listener: forwarding (KIP-590,
``ControllerChannel``), registration, heartbeats and controlled shutdown (``BrokerLifecycle``) and AlterPartition
(``IsrReporter``). Kafka's ``BrokerServer`` keeps one ``NodeToControllerChannelManager`` for each.

A broker-only node uses them (``server.broker_server``), and so does a combined node in a quorum of several
voters (``server.combined_quorum``): its broker registers with, and forwards to, whichever voter leads, itself
included, as Kafka's combined mode does.
"""

from __future__ import annotations

import asyncio
import base64
import logging
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ksteward.broker.api_versions import api_versions_answer, request_error
from ksteward.broker.context import ApiSpec, ApiTable, Node, RequestContext
from ksteward.broker.forwarding import ForwardingManager
from ksteward.configs.server_config import ServerConfig
from ksteward.metadata.meta_properties import read_meta_properties
from ksteward.protocol.apis import ApiKey
from ksteward.server.api_table import broker_api_table
from ksteward.server.broker_lifecycle import BrokerLifecycle
from ksteward.server.broker_metadata import BrokerMetadata
from ksteward.server.controller_channel import (
    Address,
    Connect,
    ControllerChannel,
    ControllerConnection,
    open_controller_connection,
)
from ksteward.server.isr_reporter import IsrReporter

log = logging.getLogger(__name__)

CONNECT_TIMEOUT_S = 5.0
#: The longest wait for this broker's image to show it unfenced before its listeners open anyway.
IMAGE_UNFENCE_WAIT_S = 10.0


class UnfenceAborted(Exception):
    """The broker stopped, or could not follow the log, before the controller unfenced it."""


def controller_connector(
    config: ServerConfig, forwarding: ForwardingManager, sasl_plain: tuple[str, str] | None
) -> Callable[..., Any]:
    """``connect(address, timeout_s=CONNECT_TIMEOUT_S)``: a connection to a controller, whose ApiVersions
    answer sets the controller's ranges that ``forwarding`` advertises."""

    async def connect(address: Address, timeout_s: float = CONNECT_TIMEOUT_S) -> ControllerConnection:
        connection, versions = await open_controller_connection(
            address, sasl_plain=sasl_plain, client_id=f"ksteward-broker-{config.node_id}", timeout_s=timeout_s
        )
        forwarding.controller_api_versions = versions
        return connection

    return connect


def metadata_directory_id(config: ServerConfig) -> uuid.UUID | None:
    """The ``directory.id`` in ``meta.properties`` of the metadata log directory (the broker registers it as
    one of its ``LogDirs``); None when it has none."""
    value = read_meta_properties(Path(config.metadata_log_dir)).get("directory.id", "").strip()
    return uuid.UUID(bytes=base64.urlsafe_b64decode(value + "==")) if value else None


def forwarding_api_table(forwarding: ForwardingManager) -> ApiTable:
    """The broker's table, with ApiVersions advertising the controller's ranges for forwardable APIs."""

    async def handle(node: Node, ctx: RequestContext, request: Any) -> Any:
        advertised = forwarding.advertised_api_versions(dict(ctx.api_table.served))
        return api_versions_answer(node, ctx, request_error(ctx, request), advertised)

    specs = [
        ApiSpec(s.api_key, s.min_version, s.max_version, handle) if s.api_key == ApiKey.API_VERSIONS else s
        for s in broker_api_table()
    ]
    return ApiTable(specs)


class ControllerLinks:
    """The three links of one broker (see the module docstring); :meth:`start`, then :meth:`close`."""

    def __init__(
        self,
        config: ServerConfig,
        *,
        cluster_id: str,
        incarnation_id: uuid.UUID,
        directory_id: uuid.UUID | None,
        metadata: BrokerMetadata,
        controller: Callable[[], Address],
        connect: Connect,
        forwarding: ForwardingManager,
        sasl_plain: tuple[str, str] | None,
    ) -> None:
        self._config = config
        self._metadata = metadata
        self.channel = ControllerChannel(
            controller, forwarding, sasl_plain=sasl_plain, client_id=f"ksteward-forwarding-{config.node_id}"
        )
        self.lifecycle = BrokerLifecycle(
            config,
            cluster_id=cluster_id,
            incarnation_id=incarnation_id,
            directory_id=directory_id,
            follower=metadata,
            controller=controller,
            connect=connect,
        )
        lifecycle = self.lifecycle
        self.isr_reporter = IsrReporter(
            node_id=config.node_id,
            follower=metadata,
            broker_epoch=lambda: lifecycle.broker_epoch,
            controller=controller,
            connect=connect,
            interval_s=config.broker_heartbeat_interval_ms / 1000,
        )

    def start(self) -> None:
        self.lifecycle.start()
        self.channel.start()
        self.isr_reporter.start()

    async def wait_until_unfenced(self, stopping: asyncio.Event) -> None:
        """Until the controller unfenced this broker and its image shows it (Kafka's ``BrokerServer.startup``
        waits for the initial catch-up and the unfencing); :class:`UnfenceAborted` when ``stopping`` is set or
        following the log stops first."""
        metadata = self._metadata
        waits = {
            asyncio.ensure_future(self.lifecycle.unfenced.wait()),
            asyncio.ensure_future(stopping.wait()),
            asyncio.ensure_future(metadata.stopped.wait()),
        }
        try:
            await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for waiter in waits:
                waiter.cancel()
        if metadata.stopped.is_set():
            raise UnfenceAborted(f"cannot follow the metadata log: {metadata.failure}")
        if stopping.is_set():
            raise UnfenceAborted("stopped before the controller unfenced this broker")
        await self._wait_until_image_unfenced()

    async def _wait_until_image_unfenced(self) -> None:
        """The heartbeat that unfences this broker can arrive before the record that says so: until this broker's
        image has applied it, Metadata would list no alive broker and no controller (-1), and a client such as
        librdkafka waits for a controller that its request timeout may not outlast. So the listeners open once the
        image shows this broker unfenced, or after ``IMAGE_UNFENCE_WAIT_S`` (then they open anyway)."""
        metadata = self._metadata
        node_id = self._config.node_id

        def shown_unfenced() -> bool:
            registration = metadata.image.cluster.get(node_id)
            return registration is not None and not registration.fenced

        try:
            async with asyncio.timeout(IMAGE_UNFENCE_WAIT_S):
                await metadata.wait_for(shown_unfenced)
        except TimeoutError:
            log.info("opening the listeners before this broker's image shows it unfenced")

    async def shut_down(self) -> None:
        """Controlled shutdown through the active controller (``WantShutDown``), when this broker was unfenced."""
        if self.lifecycle.unfenced.is_set():
            await self.lifecycle.shut_down(timeout_s=self._config.broker_session_timeout_ms / 1000)

    async def close(self) -> None:
        await self.isr_reporter.close()
        await self.lifecycle.close()
        await self.channel.close()
