"""AddRaftVoter (80) and RemoveRaftVoter (81) where a controller runs: Kafka's ``ControllerApis.handleAddRaftVoter``
and ``handleRemoveRaftVoter``.

ALTER on the cluster is required (``authHelper.authorizeClusterOperation(request, ALTER)``), else the request's
error response, CLUSTER_AUTHORIZATION_FAILED. The answer comes from this replica's Raft state
(``ksteward.raft.voter_changes``): a voter of several (``node.quorum``), leading or not, or the single controller,
which always leads (``node.raft_service``). A broker-only node never runs these handlers: it forwards both to the
active controller in an Envelope (``KafkaApis`` calls ``forwardToControllerOrFail``), which runs them with the
client's principal.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kio.schema.errors import ErrorCode

from ksteward.authorizer import CLUSTER_NAME, AclOperation, ResourceType
from ksteward.broker.authz import CLUSTER_DENIED_MESSAGE, authorize
from ksteward.broker.context import Node, RequestContext
from ksteward.protocol.apis import ApiKey
from ksteward.protocol.build import build
from ksteward.protocol.codec import response_class
from ksteward.raft.voter_changes import QuorumView, VoterChangeAnswer, add_voter, remove_voter

__all__ = ["handle_add_raft_voter", "handle_remove_raft_voter", "quorum_view"]


def quorum_view(node: Node) -> QuorumView:
    """This replica's leadership and high watermark, as a voter change sees them."""
    quorum = getattr(node, "quorum", None)
    leader = quorum.voter.leader if quorum is not None else node.raft_service.leader  # type: ignore[attr-defined]
    leading = leader is not None and leader.active
    listeners = node.config.controller_listener_names
    return QuorumView(
        cluster_id=node.cluster_id,
        leading=leading,
        shutting_down=bool(leading and leader.shutting_down),
        high_watermark=leader.high_watermark if leading else -1,
        default_listener=listeners[0] if listeners else "",
    )


async def handle_add_raft_voter(node: Node, ctx: RequestContext, request: Any) -> Any:
    return _handle(ApiKey.ADD_RAFT_VOTER, add_voter, node, ctx, request)


async def handle_remove_raft_voter(node: Node, ctx: RequestContext, request: Any) -> Any:
    return _handle(ApiKey.REMOVE_RAFT_VOTER, remove_voter, node, ctx, request)


def _handle(api_key: int, decide: Callable[[QuorumView, Any], VoterChangeAnswer], node: Node, ctx: RequestContext,
            request: Any) -> Any:  # fmt: skip
    if authorize(node, ctx, AclOperation.ALTER, ResourceType.CLUSTER, CLUSTER_NAME):
        answer = decide(quorum_view(node), request)
    else:
        answer = VoterChangeAnswer(ErrorCode.cluster_authorization_failed, CLUSTER_DENIED_MESSAGE)
    values = {"throttle_time": 0, "error_code": answer.error, "error_message": answer.message}
    return build(response_class(api_key, ctx.api_version), values)
