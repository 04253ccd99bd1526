"""DescribeQuorum (api 55) where a controller runs: Kafka's ``ControllerApis.handleDescribeQuorum``.

DESCRIBE on the cluster is required, else the top-level CLUSTER_AUTHORIZATION_FAILED. The answer comes from
this node's Raft state (``ksteward.raft.describe_quorum``): the leader reports its ``RaftLeader.describe``
view, a voter that does not lead answers NOT_LEADER_OR_FOLLOWER. A broker-only node never runs this
handler: it forwards DescribeQuorum to the active controller in an Envelope (Kafka's
``KafkaApis.handleDescribeQuorumRequest`` calls ``forwardToControllerOrFail``), and the controller runs it
with the client's principal.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from kio.schema.errors import ErrorCode

from ksteward.authorizer import CLUSTER_NAME, AclOperation, ResourceType
from ksteward.broker.authz import CLUSTER_DENIED_MESSAGE, authorize
from ksteward.broker.context import Node, RequestContext
from ksteward.configs.server_config import ServerConfig
from ksteward.raft.describe_quorum import VoterNode, describe_quorum_response, top_level_error
from ksteward.raft.progress import QuorumDescription, ReplicaProgress

__all__ = ["QuorumProvider", "clock_ms", "handle_describe_quorum", "on_wall_clock", "quorum_provider", "voter_nodes"]

#: What DescribeQuorum reports: the leader's view, or None when this replica does not lead.
QuorumProvider = Callable[[], QuorumDescription | None]


def clock_ms() -> int:
    """The clock the leader times fetches with: monotonic, as the Raft drivers' timers are (``server.quorum``), so
    that a wall-clock step never expires an observer or check-quorum early."""
    return time.monotonic_ns() // 1_000_000


def on_wall_clock(description: QuorumDescription, clock_now_ms: int, wall_now_ms: int) -> QuorumDescription:
    """``description`` (timed by :func:`clock_ms`, read at ``clock_now_ms``) with every known timestamp moved to
    the wall clock: DescribeQuorum reports the leader's wall-clock time, as Kafka's ``LeaderState`` does."""

    def moved(progress: ReplicaProgress) -> ReplicaProgress:
        def at(ms: int) -> int:
            return ms if ms < 0 else wall_now_ms - (clock_now_ms - ms)

        return replace(progress, last_fetch_timestamp_ms=at(progress.last_fetch_timestamp_ms),
                       last_caught_up_timestamp_ms=at(progress.last_caught_up_timestamp_ms))  # fmt: skip

    voters = tuple(moved(v) for v in description.voters)
    return replace(description, voters=voters, observers=tuple(moved(o) for o in description.observers))


def _described(leader: Any) -> QuorumDescription:
    now = clock_ms()
    return on_wall_clock(leader.describe(now), now, time.time_ns() // 1_000_000)


def quorum_provider(node: Node) -> QuorumProvider:
    """The node's Raft view: a voter of several (``node.quorum``, leading or not) or the single voter, which
    always leads (``node.raft_service``)."""
    quorum = getattr(node, "quorum", None)
    if quorum is not None:

        def several() -> QuorumDescription | None:
            leader = quorum.voter.leader
            return None if leader is None else _described(leader)

        return several
    service = node.raft_service  # type: ignore[attr-defined]  # a controller node has one
    return lambda: _described(service.leader)


def voter_nodes(config: ServerConfig) -> tuple[VoterNode, ...]:
    """v2's ``Nodes``: each static voter at its ``controller.quorum.voters`` address, on the first controller
    listener (Kafka's ``VoterSet.fromInetSocketAddresses``, kraft.version 0). A lone controller with no voters
    configured reports its own controller listener."""
    if not config.controller_listener_names:
        return ()
    name = config.controller_listener_names[0]
    if config.quorum_voters:
        return tuple(VoterNode(v.node_id, ((name, v.host, v.port),)) for v in config.quorum_voters)
    own = config.advertised_controller_endpoint(name)
    if own is None:
        return ()
    return (VoterNode(config.node_id, ((name, *own),)),)


async def handle_describe_quorum(node: Node, ctx: RequestContext, request: Any) -> Any:
    if not authorize(node, ctx, AclOperation.DESCRIBE, ResourceType.CLUSTER, CLUSTER_NAME):
        return top_level_error(ctx.api_version, ErrorCode.cluster_authorization_failed, CLUSTER_DENIED_MESSAGE)
    description = quorum_provider(node)()
    return describe_quorum_response(request, ctx.api_version, description, voter_nodes(node.config))
