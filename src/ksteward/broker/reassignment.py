"""ElectLeaders (43), AlterPartitionReassignments (45), ListPartitionReassignments (46) and AlterPartition (56).

As Kafka's ``ControllerApis``: the first three are forwarded by a broker to the controller (KIP-590) and need
ALTER (elections, reassignments) or DESCRIBE (the list) on the cluster; AlterPartition is a broker's request
on the controller listener and needs CLUSTER_ACTION. A denial fails the whole request with
CLUSTER_AUTHORIZATION_FAILED in the shape of the API's ``getErrorResponse``. The controller's rules are in
``controller/reassignment.py`` and docs/reassignment.md.
"""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from ksteward.authorizer import CLUSTER_NAME, AclOperation, ResourceType
from ksteward.broker.authz import CLUSTER_DENIED_MESSAGE, authorize
from ksteward.broker.context import Node, RequestContext
from ksteward.controller.reassignment import (
    PREFERRED_ELECTION,
    AlterPartitionRequest,
    IsrChange,
    PartitionReassignment,
)
from ksteward.protocol.apis import ApiKey
from ksteward.protocol.build import build
from ksteward.protocol.codec import response_class


def _may(node: Node, ctx: RequestContext, operation: AclOperation) -> bool:
    return authorize(node, ctx, operation, ResourceType.CLUSTER, CLUSTER_NAME)


async def handle_alter_partition_reassignments(node: Node, ctx: RequestContext, request: Any) -> Any:
    cls = response_class(ApiKey.ALTER_PARTITION_REASSIGNMENTS, ctx.api_version)
    allow_rf_change = bool(getattr(request, "allow_replication_factor_change", True))
    if not _may(node, ctx, AclOperation.ALTER):
        denied = {"error_code": ErrorCode.cluster_authorization_failed, "error_message": CLUSTER_DENIED_MESSAGE}
        responses = [
            {"name": t.name, "partitions": [{"partition_index": p.partition_index, **denied} for p in t.partitions]}
            for t in request.topics
        ]
        values = {**denied, "responses": responses, "allow_replication_factor_change": allow_rf_change}
        return build(cls, values)
    entries = [
        PartitionReassignment(
            str(t.name), int(p.partition_index), None if p.replicas is None else tuple(int(r) for r in p.replicas)
        )
        for t in request.topics
        for p in t.partitions
    ]
    errors = iter(
        await node.controller.alter_partition_reassignments(entries, allow_replication_factor_change=allow_rf_change)
    )
    responses = []
    for t in request.topics:
        partitions = []
        for p in t.partitions:
            error = next(errors)
            partitions.append(
                {"partition_index": p.partition_index, "error_code": error.code, "error_message": error.message}
            )
        responses.append({"name": t.name, "partitions": partitions})
    values = {
        "error_code": ErrorCode.none,
        "error_message": None,
        "responses": responses,
        "allow_replication_factor_change": allow_rf_change,
    }
    return build(cls, values)


async def handle_list_partition_reassignments(node: Node, ctx: RequestContext, request: Any) -> Any:
    cls = response_class(ApiKey.LIST_PARTITION_REASSIGNMENTS, ctx.api_version)
    if not _may(node, ctx, AclOperation.DESCRIBE):
        topics = [
            {"name": t.name, "partitions": [{"partition_index": i} for i in t.partition_indexes]}
            for t in request.topics or ()
        ]
        values = {
            "error_code": ErrorCode.cluster_authorization_failed,
            "error_message": CLUSTER_DENIED_MESSAGE,
            "topics": topics,
        }
        return build(cls, values)
    wanted = (
        None
        if request.topics is None
        else [(str(t.name), [int(i) for i in t.partition_indexes]) for t in request.topics]
    )
    ongoing = await node.controller.list_partition_reassignments(wanted)
    topics_out: dict[str, list[dict[str, Any]]] = {}
    for o in ongoing:
        topics_out.setdefault(o.topic, []).append(
            {
                "partition_index": o.partition,
                "replicas": list(o.replicas),
                "adding_replicas": list(o.adding),
                "removing_replicas": list(o.removing),
            }
        )
    values = {
        "error_code": ErrorCode.none,
        "error_message": None,
        "topics": [{"name": name, "partitions": parts} for name, parts in topics_out.items()],
    }
    return build(cls, values)


def _elect_error_values(request: Any, code: ErrorCode, message: str | None) -> dict[str, Any]:
    """``ElectLeadersRequest.getErrorResponse``: every named partition gets the error."""
    results = [
        {
            "topic": t.topic,
            "partition_result": [
                {"partition_id": p, "error_code": code, "error_message": message} for p in t.partitions
            ],
        }
        for t in request.topic_partitions or ()
    ]
    return {"error_code": code, "replica_election_results": results}


async def handle_elect_leaders(node: Node, ctx: RequestContext, request: Any) -> Any:
    cls = response_class(ApiKey.ELECT_LEADERS, ctx.api_version)
    if not _may(node, ctx, AclOperation.ALTER):
        return build(cls, _elect_error_values(request, ErrorCode.cluster_authorization_failed, CLUSTER_DENIED_MESSAGE))
    election_type = int(getattr(request, "election_type", PREFERRED_ELECTION))  # v0: preferred only
    wanted = (
        None
        if request.topic_partitions is None
        else [(str(t.topic), [int(p) for p in t.partitions]) for t in request.topic_partitions]
    )
    outcome = await node.controller.elect_leaders(election_type, wanted)
    if not isinstance(outcome, list):
        return build(cls, _elect_error_values(request, outcome.code, outcome.message))
    results = [
        {
            "topic": topic,
            "partition_result": [
                {"partition_id": o.partition, "error_code": o.error.code, "error_message": o.error.message}
                for o in group
            ],
        }
        for topic, group in outcome
    ]
    values = {"error_code": ErrorCode.none, "replica_election_results": results}
    return build(cls, values)


def alter_partition_request(request: Any) -> AlterPartitionRequest:
    """The wire request (v2 ``NewIsr`` or v3 ``NewIsrWithEpochs``) as the controller reads it."""
    topics = []
    for t in request.topics:
        changes = []
        for p in t.partitions:
            if hasattr(p, "new_isr_with_epochs"):
                isr = tuple((int(b.broker_id), int(b.broker_epoch)) for b in p.new_isr_with_epochs)
            else:
                isr = tuple((int(b), -1) for b in p.new_isr)
            changes.append(
                IsrChange(
                    int(p.partition_index),
                    int(p.leader_epoch),
                    int(p.partition_epoch),
                    isr,
                    int(p.leader_recovery_state),
                )
            )
        topics.append((t.topic_id, tuple(changes)))
    return AlterPartitionRequest(int(request.broker_id), int(request.broker_epoch), tuple(topics))


async def handle_alter_partition(node: Node, ctx: RequestContext, request: Any) -> Any:
    cls = response_class(ApiKey.ALTER_PARTITION, ctx.api_version)
    if not _may(node, ctx, AclOperation.CLUSTER_ACTION):
        return build(cls, {"error_code": ErrorCode.cluster_authorization_failed, "topics": []})
    reply = await node.controller.alter_partition(alter_partition_request(request))
    if reply.error.code != ErrorCode.none:
        return build(cls, {"error_code": reply.error.code, "topics": []})
    topics = [
        {
            "topic_id": topic_id,
            "partitions": [
                {
                    "partition_index": r.partition,
                    "error_code": r.error,
                    "leader_id": r.leader,
                    "leader_epoch": r.leader_epoch,
                    "isr": list(r.isr),
                    "leader_recovery_state": r.leader_recovery_state,
                    "partition_epoch": r.partition_epoch,
                }
                for r in results
            ],
        }
        for topic_id, results in reply.topics
    ]
    return build(cls, {"error_code": ErrorCode.none, "topics": topics})
