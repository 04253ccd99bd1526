"""Metadata (key 3) and DescribeCluster (key 60): the cluster as the committed image has it.

Brokers are listed with their endpoint for the listener the request arrived on, as Kafka does, so a
client that bootstrapped on one listener is never sent to another. Only unfenced brokers are listed
(Kafka's ``KRaftMetadataCache.getAliveBrokerNodes``; brokers in controlled shutdown are still unfenced),
and the ``ControllerId`` is a random unfenced broker, as a KRaft broker reports it: clients send their
controller-bound requests to a broker, which forwards them (KIP-590).
"""

from __future__ import annotations

import random
import uuid
from typing import Any

from kio.schema.errors import ErrorCode

from ksteward.authorizer import CLUSTER_NAME, AclOperation, ResourceType
from ksteward.broker.authz import authorize, authorized_operations
from ksteward.broker.context import Node, RequestContext
from ksteward.metadata.image import MetadataImage
from ksteward.protocol.apis import ApiKey
from ksteward.protocol.build import build
from ksteward.protocol.codec import response_class
from ksteward.protocol.error_responses import error_values

ZERO_UUID = uuid.UUID(int=0)
AUTHORIZED_OPERATIONS_OMITTED = -(2**31)  # Integer.MIN_VALUE: "not requested"
INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state", "__share_group_state"})


def _brokers(image: MetadataImage, listener: str, include_fenced: bool = False) -> list[dict[str, Any]]:
    brokers = []
    for broker_id, reg in sorted(image.cluster.items()):
        if reg.fenced and not include_fenced:
            continue
        endpoint = next((e for e in reg.end_points if e.name == listener), None)
        if endpoint is None:
            continue
        brokers.append(
            {
                "node_id": broker_id,
                "broker_id": broker_id,
                "host": endpoint.host,
                "port": endpoint.port,
                "rack": reg.rack,
                "is_fenced": reg.fenced,
            }
        )
    return brokers


def random_alive_broker(image: MetadataImage) -> int:
    """Kafka's ``KRaftMetadataCache.getRandomAliveBrokerId``: any unfenced broker, whatever its listeners;
    -1 (``MetadataResponse.NO_CONTROLLER_ID``) when every broker is fenced."""
    alive = [broker_id for broker_id, reg in image.cluster.items() if not reg.fenced]
    return random.choice(alive) if alive else -1


def _denied_topic(name: str) -> dict[str, Any]:
    return {"error_code": ErrorCode.topic_authorization_failed, "name": name, "topic_id": ZERO_UUID, "partitions": []}


def _topic_entry(node: Node, ctx: RequestContext, image: MetadataImage, name: str, include_ops: bool) -> dict[str, Any]:
    topic = image.topics.by_name.get(name)
    if topic is None:
        return {
            "error_code": ErrorCode.unknown_topic_or_partition,
            "name": name,
            "topic_id": ZERO_UUID,
            "partitions": [],
        }
    partitions = [
        {
            "error_code": ErrorCode.none,
            "partition_index": pid,
            "leader_id": p.leader,
            "leader_epoch": p.leader_epoch,
            "replica_nodes": list(p.replicas),
            "isr_nodes": list(p.isr),
            "offline_replicas": [r for r in p.replicas if r not in image.cluster or image.cluster[r].fenced],
        }
        for pid, p in sorted(topic.partitions.items())
    ]
    return {
        "error_code": ErrorCode.none,
        "name": topic.name,
        "topic_id": topic.id,
        "is_internal": topic.name in INTERNAL_TOPICS,
        "partitions": partitions,
        "topic_authorized_operations": authorized_operations(node, ctx, ResourceType.TOPIC, topic.name)
        if include_ops
        else AUTHORIZED_OPERATIONS_OMITTED,
    }


def cluster_authorized_operations(node: Node, ctx: RequestContext, requested: bool) -> int:
    """Kafka fills the cluster bitfield only when asked, and only for callers that may DESCRIBE it."""
    if not requested:
        return AUTHORIZED_OPERATIONS_OMITTED
    if not authorize(node, ctx, AclOperation.DESCRIBE, ResourceType.CLUSTER, CLUSTER_NAME):
        return 0
    return authorized_operations(node, ctx, ResourceType.CLUSTER, CLUSTER_NAME)


def _requested_topic_ids(requested: Any) -> list[uuid.UUID]:
    """The distinct non-zero topic ids of the request, in request order (Kafka's ``MetadataRequest.topicIds``)."""
    ids = (getattr(t, "topic_id", None) for t in requested)
    return list(dict.fromkeys(i for i in ids if i not in (None, ZERO_UUID)))


def _invalid_request(request: Any) -> dict[str, Any]:
    """Kafka's ``MetadataRequest.getErrorResponse`` for INVALID_REQUEST: every topic as the request named it,
    a null name written as "" (the response's name is not nullable before v12), the id echoed, no brokers."""
    values = error_values(ApiKey.METADATA, request, ErrorCode.invalid_request)
    assert values is not None
    for topic in values["topics"]:
        if topic["name"] is None:
            topic["name"] = ""
    return values


def _topics_by_id(
    node: Node, ctx: RequestContext, image: MetadataImage, topic_ids: list[uuid.UUID], include_ops: bool
) -> list[dict[str, Any]]:
    """Kafka's ``KafkaApis.handleTopicMetadataRequest`` when ``useTopicId``: ids are not sensitive, names are.

    An unknown id gets UNKNOWN_TOPIC_ID; a topic the caller may not DESCRIBE gets TOPIC_AUTHORIZATION_FAILED
    with a null name and its id kept (``metadataCache.getTopicId(topic)``), so the id never reveals the name.
    """
    topics: list[dict[str, Any]] = []
    for topic_id in topic_ids:
        topic = image.topics.by_id.get(topic_id)
        if topic is None:
            topics.append({"error_code": ErrorCode.unknown_topic_id, "name": None, "topic_id": topic_id,
                           "partitions": []})  # fmt: skip
        elif not authorize(node, ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, topic.name):
            topics.append({"error_code": ErrorCode.topic_authorization_failed, "name": None, "topic_id": topic_id,
                           "partitions": []})  # fmt: skip
        else:
            topics.append(_topic_entry(node, ctx, image, topic.name, include_ops))
    return topics


async def handle_metadata(node: Node, ctx: RequestContext, request: Any) -> Any:
    image = node.image
    version = ctx.api_version
    include_ops = bool(getattr(request, "include_topic_authorized_operations", False))
    requested = request.topics
    if version == 0 and not requested:
        requested = None  # v0: an empty list means every topic
    topics: list[dict[str, Any]] = []
    if requested is None:
        # Listing every topic shows only those the caller may describe, and logs no denials.
        topics = [
            _topic_entry(node, ctx, image, name, include_ops)
            for name in sorted(image.topics.by_name)
            if authorize(node, ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, name, log_if_denied=False)
        ]
    elif version < 12 and any(
        t.name is None or getattr(t, "topic_id", None) not in (None, ZERO_UUID) for t in requested
    ):
        # v10 and v11 carry the fields but Kafka serves neither: KafkaApis.handleTopicMetadataRequest throws
        # InvalidRequestException ("Topic name can not be null" / "Topic IDs are not supported in requests
        # for version"), which is answered with MetadataRequest.getErrorResponse, naming no topic itself.
        return build(response_class(ApiKey.METADATA, version), _invalid_request(request))
    elif topic_ids := _requested_topic_ids(requested):
        # As Kafka's useTopicId: once any id is given, the request is answered by id alone (names ignored).
        topics = _topics_by_id(node, ctx, image, topic_ids, include_ops)
    else:
        for t in requested:
            name = getattr(t, "name", None)
            if name is None:
                topics.append(
                    {"error_code": ErrorCode.invalid_request, "name": None, "topic_id": ZERO_UUID, "partitions": []}
                )
                continue
            if not authorize(node, ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, name):
                topics.append(_denied_topic(name))
                continue
            topics.append(_topic_entry(node, ctx, image, name, include_ops))
    values = {
        "error_code": ErrorCode.none,  # v13+ (KIP-1102): a top-level error for rebootstrapping clients
        "brokers": _brokers(image, ctx.listener),
        "cluster_id": node.cluster_id,
        "controller_id": random_alive_broker(image),
        "topics": topics,
        "cluster_authorized_operations": cluster_authorized_operations(
            node, ctx, bool(getattr(request, "include_cluster_authorized_operations", False))
        ),
    }
    return build(response_class(ApiKey.METADATA, version), values)


async def handle_describe_cluster(node: Node, ctx: RequestContext, request: Any) -> Any:
    cls = response_class(ApiKey.DESCRIBE_CLUSTER, ctx.api_version)
    endpoint_type = getattr(request, "endpoint_type", 1)
    values: dict[str, Any] = {
        "error_code": ErrorCode.none,
        "error_message": None,
        "endpoint_type": endpoint_type,
        "cluster_id": node.cluster_id,
        "controller_id": random_alive_broker(node.image),
        "brokers": [],
        "cluster_authorized_operations": cluster_authorized_operations(
            node, ctx, bool(getattr(request, "include_cluster_authorized_operations", False))
        ),
    }
    if endpoint_type != 1:
        values["error_code"] = ErrorCode.unsupported_endpoint_type
        values["error_message"] = f"Unsupported endpoint type {endpoint_type}: this listener describes brokers (1)"
        return build(cls, values)
    values["brokers"] = _brokers(
        node.image, ctx.listener, include_fenced=bool(getattr(request, "include_fenced_brokers", False))
    )
    return build(cls, values)
