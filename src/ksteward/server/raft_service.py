"""Fetch (api 1) and FetchSnapshot (api 59) on the controller listener: the KRaft leader's shell.

The single controller voter leads ``__cluster_metadata`` in the epoch it chose on start-up (the group
committer's ``epoch``, docs/raft.md "The leader's epoch"); its high watermark is the durable (fsynced) end
offset of the metadata log, and Fetch serves records up to it (docs/raft.md says why).
``raft.leader.RaftLeader`` decides every answer; this module authorizes, and parks a Fetch that finds
nothing new for up to its ``MaxWaitMs`` (Kafka's fetch purgatory). The committer's publish hook, called
once a batch is durable, wakes the parked fetches: no polling.

Authorization is Kafka's ``ControllerApis.handleFetch`` / ``handleFetchSnapshot``: CLUSTER_ACTION on
the cluster, else the request's error response with ``CLUSTER_AUTHORIZATION_FAILED``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any, Protocol, cast

from kio.schema.errors import ErrorCode

from ksteward.authorizer import CLUSTER_NAME
from ksteward.broker.authz import authorize
from ksteward.broker.context import Node, RequestContext
from ksteward.metadata.image import MetadataImage
from ksteward.metadata.log import MetadataLog
from ksteward.protocol.apis import ApiKey
from ksteward.protocol.build import build
from ksteward.protocol.codec import response_class
from ksteward.raft.leader import ParkedFetch, RaftLeader
from ksteward.raft.log_view import MetadataLogView
from ksteward.server.describe_quorum import clock_ms
from ksteward.server.tasks import Wakeups

__all__ = ["RaftService", "handle_fetch", "handle_fetch_snapshot"]


class RaftService:
    """The controller's leader state and the fetches waiting for new durable records."""

    def __init__(
        self,
        *,
        node_id: int,
        cluster_id: str,
        epoch: int,
        metadata_log: MetadataLog,
        endpoints: Mapping[str, tuple[str, int]],
    ) -> None:
        self.view = MetadataLogView(metadata_log, served_end=lambda: metadata_log.durable_offset)
        self.leader = RaftLeader(
            node_id=node_id, cluster_id=cluster_id, epoch=epoch, log=self.view, endpoints=endpoints
        )
        self._wakeups = Wakeups()

    def on_publish(self, image: MetadataImage, records: list[Any]) -> None:
        """The committer's publish hook: a batch became durable, so the high watermark moved."""
        self._wakeups.wake_all()

    def shut_down(self) -> None:
        """New fetches get BROKER_NOT_AVAILABLE; parked ones complete now."""
        self.leader.shutting_down = True
        self._wakeups.wake_all()

    async def wait_for_data(self, parked: ParkedFetch) -> None:
        """Return once the served end passes ``parked.fetch_offset``, at shutdown, or after ``max_wait_ms``."""
        deadline = asyncio.get_running_loop().time() + parked.max_wait_ms / 1000
        while self.view.end_offset <= parked.fetch_offset and not self.leader.shutting_down:
            if await self._wakeups.wait(deadline):
                return


class _RaftNode(Node, Protocol):
    @property
    def raft_service(self) -> RaftService: ...


def _service(node: Node) -> RaftService:
    return cast(_RaftNode, node).raft_service


def _cluster_action(node: Node, ctx: RequestContext) -> bool:
    """ControllerApis: ``authHelper.authorizeClusterOperation(request, CLUSTER_ACTION)``."""
    return authorize(node, ctx, "CLUSTER_ACTION", "CLUSTER", CLUSTER_NAME)


def fetch_error_response(request: Any, api_version: int, error: ErrorCode) -> Any:
    """Kafka's ``FetchRequest.getErrorResponse``: from v13 the top-level error code alone; before, every
    requested partition carries the error as well (older clients read only those)."""
    responses = []
    if api_version < 13:
        responses = [
            {"topic": t.topic, "topic_id": None, "partitions": [
                {"partition_index": p.partition, "error_code": error, "high_watermark": -1, "last_stable_offset": -1,
                 "log_start_offset": -1, "aborted_transactions": None, "records": None}
                for p in t.partitions]}
            for t in request.topics
        ]  # fmt: skip
    values = {"error_code": error, "session_id": getattr(request, "session_id", 0), "responses": responses}
    return build(response_class(ApiKey.FETCH, api_version), values)


async def handle_fetch(node: Node, ctx: RequestContext, request: Any) -> Any:
    if not _cluster_action(node, ctx):
        return fetch_error_response(request, ctx.api_version, ErrorCode.cluster_authorization_failed)
    quorum = getattr(node, "quorum", None)
    if quorum is not None:  # one of several voters: the Raft voter answers, as leader or not (server.quorum)
        return await quorum.handle_request(ApiKey.FETCH, ctx.api_version, request, ctx.listener)
    service = _service(node)
    # Each fetcher's progress is timed (LeaderState), on the clock DescribeQuorum reads it with.
    result = service.leader.handle_fetch(request, ctx.api_version, ctx.listener, clock_ms())
    if isinstance(result, ParkedFetch):
        await service.wait_for_data(result)
        result = service.leader.complete_fetch(request, ctx.api_version, ctx.listener, clock_ms())
    return result


async def handle_fetch_snapshot(node: Node, ctx: RequestContext, request: Any) -> Any:
    if not _cluster_action(node, ctx):
        values = {"error_code": ErrorCode.cluster_authorization_failed, "topics": []}
        return build(response_class(ApiKey.FETCH_SNAPSHOT, ctx.api_version), values)
    quorum = getattr(node, "quorum", None)
    if quorum is not None:
        return await quorum.handle_request(ApiKey.FETCH_SNAPSHOT, ctx.api_version, request, ctx.listener)
    return _service(node).leader.handle_fetch_snapshot(request, ctx.api_version, ctx.listener)
