"""DescribeCluster (api 60) on a controller listener: Kafka's ``ControllerApis.handleDescribeCluster`` (KIP-919).

An admin client that bootstraps from the controllers (``bootstrap.controllers``) asks with ``EndpointType``
CONTROLLER and learns the controllers and which of them is active. ksteward's controllers do not write
KIP-919's ``ControllerRegistrationRecord``; the list is the static voter set, each at its
``controller.quorum.voters`` address (a lone controller with no voters configured: its own controller listener),
on the listener the request came in on. The controller id is the Raft leader as this node knows it (-1 when it
knows none), as Kafka's ``raftManager.leaderAndEpoch``. A client listener answers brokers only
(``broker.cluster.handle_describe_cluster``); either kind refuses the other endpoint type as Kafka does.
"""

from __future__ import annotations

from typing import Any

from ksteward.broker.cluster import CONTROLLER_ENDPOINT, describe_cluster_answer
from ksteward.broker.context import Node, RequestContext
from ksteward.server.describe_quorum import voter_nodes

__all__ = ["handle_controller_describe_cluster"]


async def handle_controller_describe_cluster(node: Node, ctx: RequestContext, request: Any) -> Any:
    config = node.config

    def controllers() -> list[dict[str, Any]]:
        return [
            {"broker_id": voter.node_id, "host": host, "port": port, "rack": None, "is_fenced": False}
            for voter in voter_nodes(config)
            for name, host, port in voter.listeners
            if name == ctx.listener
        ]

    def leader() -> int:
        quorum = getattr(node, "quorum", None)
        return config.node_id if quorum is None else quorum.voter.leader_id

    return describe_cluster_answer(node, ctx, request, CONTROLLER_ENDPOINT, controllers, leader)
