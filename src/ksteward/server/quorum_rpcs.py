"""Vote (52), BeginQuorumEpoch (53) and EndQuorumEpoch (54) on the controller listener (KIP-595, KIP-996).

Kafka's ``ControllerApis.handleVote`` / ``handleBeginQuorumEpoch`` / ``handleEndQuorumEpoch`` first call
``authHelper.authorizeClusterOperation(request, CLUSTER_ACTION)``; a principal without it gets the request's
error response, top-level ``CLUSTER_AUTHORIZATION_FAILED`` and no topics. The Raft voter decides every other
answer (``server.quorum.QuorumDriver``, which persists the election state before it answers). A single
controller (it elects itself, with no quorum to ask) answers top-level ``BROKER_NOT_AVAILABLE``, which a Raft
sender treats as "back off" (``KafkaRaftClient.maybeHandleCommonResponse``).
"""

from __future__ import annotations

from typing import Any, Protocol, cast

from kio.schema.errors import ErrorCode

from ksteward.authorizer import CLUSTER_NAME
from ksteward.broker.authz import authorize
from ksteward.broker.context import Node, RequestContext
from ksteward.protocol.apis import ApiKey
from ksteward.protocol.build import build
from ksteward.protocol.codec import response_class

__all__ = ["handle_begin_quorum_epoch", "handle_end_quorum_epoch", "handle_vote"]


class QuorumRequests(Protocol):
    async def handle_request(self, api_key: int, api_version: int, request: Any, listener: str) -> Any: ...


class _QuorumNode(Node, Protocol):
    @property
    def quorum(self) -> QuorumRequests | None: ...


def _top_level_error(api_key: int, api_version: int, error: ErrorCode) -> Any:
    return build(response_class(api_key, api_version), {"error_code": error, "topics": []})


async def _handle(api_key: int, node: Node, ctx: RequestContext, request: Any) -> Any:
    if not authorize(node, ctx, "CLUSTER_ACTION", "CLUSTER", CLUSTER_NAME):
        return _top_level_error(api_key, ctx.api_version, ErrorCode.cluster_authorization_failed)
    quorum = getattr(cast(_QuorumNode, node), "quorum", None)
    if quorum is None:
        return _top_level_error(api_key, ctx.api_version, ErrorCode.broker_not_available)
    return await quorum.handle_request(api_key, ctx.api_version, request, ctx.listener)


async def handle_vote(node: Node, ctx: RequestContext, request: Any) -> Any:
    return await _handle(ApiKey.VOTE, node, ctx, request)


async def handle_begin_quorum_epoch(node: Node, ctx: RequestContext, request: Any) -> Any:
    return await _handle(ApiKey.BEGIN_QUORUM_EPOCH, node, ctx, request)


async def handle_end_quorum_epoch(node: Node, ctx: RequestContext, request: Any) -> Any:
    return await _handle(ApiKey.END_QUORUM_EPOCH, node, ctx, request)
