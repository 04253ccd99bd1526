"""DescribeTopicPartitions (key 75, KIP-966): topics and their partitions, a page at a time.

Kafka's ``DescribeTopicPartitionsRequestHandler`` and ``KRaftMetadataCache.getTopicMetadataForDescribeTopicResponse``,
served by brokers only (the API's listeners are ``["broker"]``). docs/admin-apis.md, "DescribeTopicPartitions".

- An empty topic list means every topic; topics the caller may not DESCRIBE are then left out. A listed topic the
  caller may not DESCRIBE is answered TOPIC_AUTHORIZATION_FAILED with the zero id, after the page, whether it
  exists or not.
- Topics are taken in name order from the cursor's topic on (the cursor's partition index applies to that topic
  only). A page holds at most ``min(ResponsePartitionLimit, max.request.partition.size.limit)`` partitions (at
  least 1); a topic cut short, or the first topic not reached, is the ``NextCursor``.
- A cursor whose topic is not in a non-empty topic list, or whose partition index is negative, fails the whole
  request with INVALID_REQUEST (every listed topic gets it), as Kafka's InvalidRequestException does.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from typing import Any

from kio.schema.errors import ErrorCode

from ksteward.authorizer import AclOperation, ResourceType
from ksteward.broker.authz import authorize, authorized_operations
from ksteward.broker.cluster import INTERNAL_TOPICS
from ksteward.broker.context import Node, RequestContext
from ksteward.controller.topic_names import invalid_reason
from ksteward.metadata.image import MetadataImage, TopicImage
from ksteward.protocol.apis import ApiKey
from ksteward.protocol.build import build
from ksteward.protocol.codec import response_class
from ksteward.protocol.error_responses import error_values

ZERO_UUID = uuid.UUID(int=0)
NO_LEADER_ID = -1


class _Page:
    """The response being filled: topics in order, the partitions still allowed, and the next cursor."""

    def __init__(self, limit: int) -> None:
        self.topics: list[dict[str, Any]] = []
        self.remaining = limit
        self.next_cursor: dict[str, Any] | None = None


def _leader_id(image: MetadataImage, leader: int, listener: str) -> int:
    """Kafka's ``getAliveEndpoint``: the leader when it is registered with an endpoint on this listener."""
    reg = image.cluster.get(leader)
    if reg is None or not any(e.name == listener for e in reg.end_points):
        return NO_LEADER_ID
    return leader


def _offline(image: MetadataImage, replicas: Iterable[int], listener: str) -> list[int]:
    """Kafka's ``getOfflineReplicas``: unregistered, fenced, or without an endpoint on this listener."""
    offline = []
    for broker_id in replicas:
        reg = image.cluster.get(broker_id)
        if reg is None or reg.fenced or not any(e.name == listener for e in reg.end_points):
            offline.append(broker_id)
    return offline


def _partitions(
    image: MetadataImage, topic: TopicImage, listener: str, start: int, max_count: int
) -> tuple[list[dict[str, Any]], int]:
    """Partitions ``start`` up to ``max_count`` of them, and the index of the next one (-1: none left)."""
    count = len(topic.partitions)
    upper = min(count, start + max_count)
    next_index = upper if upper < count else -1
    entries = []
    for partition_id in range(start, upper):
        p = topic.partitions.get(partition_id)
        if p is None:
            continue  # Kafka logs "The partition N does not exist" and skips it
        entries.append(
            {
                "error_code": ErrorCode.none,
                "partition_index": partition_id,
                "leader_id": _leader_id(image, p.leader, listener),
                "leader_epoch": p.leader_epoch,
                "replica_nodes": list(p.replicas),
                "isr_nodes": list(p.isr),
                "eligible_leader_replicas": list(p.elr),
                "last_known_elr": list(p.last_known_elr),
                "offline_replicas": _offline(image, p.replicas, listener),
            }
        )
    return entries, next_index


def _missing_topic(name: str) -> dict[str, Any]:
    error = ErrorCode.invalid_topic_exception if invalid_reason(name) else ErrorCode.unknown_topic_or_partition
    return {"error_code": error, "name": name, "topic_id": ZERO_UUID, "is_internal": name in INTERNAL_TOPICS,
            "partitions": []}  # fmt: skip


def _fill(page: _Page, image: MetadataImage, names: list[str], listener: str, cursor: Any, skip_missing: bool) -> None:
    """Kafka's ``getTopicMetadataForDescribeTopicResponse`` over ``names`` (sorted, authorized)."""
    for name in names:
        if page.remaining == 0:
            # Every partition of the topics before was served: the next page starts at this topic.
            page.next_cursor = {"topic_name": name, "partition_index": 0}
            return
        topic = image.topics.by_name.get(name)
        if topic is None:
            if not skip_missing:
                page.topics.append(_missing_topic(name))
            continue
        start = cursor.partition_index if cursor is not None and name == cursor.topic_name else 0
        partitions, next_index = _partitions(image, topic, listener, start, page.remaining)
        page.topics.append(
            {
                "error_code": ErrorCode.none,
                "name": name,
                "topic_id": topic.id or ZERO_UUID,
                "is_internal": name in INTERNAL_TOPICS,
                "partitions": partitions,
            }
        )
        if next_index != -1:
            page.next_cursor = {"topic_name": name, "partition_index": next_index}
            return
        page.remaining -= len(partitions)


def _invalid_request(ctx: RequestContext, request: Any) -> Any:
    values = error_values(ApiKey.DESCRIBE_TOPIC_PARTITIONS, request, ErrorCode.invalid_request)
    assert values is not None
    return build(response_class(ApiKey.DESCRIBE_TOPIC_PARTITIONS, ctx.api_version), values)


async def handle_describe_topic_partitions(node: Node, ctx: RequestContext, request: Any) -> Any:
    image = node.image
    cursor = request.cursor
    cursor_name = cursor.topic_name if cursor is not None else ""
    fetch_all = not request.topics
    if fetch_all:
        candidates = {name for name in image.topics.by_name if name >= cursor_name}
    else:
        candidates = {t.name for t in request.topics if t.name >= cursor_name}
        if cursor is not None and cursor.topic_name not in candidates:
            return _invalid_request(ctx, request)  # "topic list should contain the cursor topic"
    if cursor is not None and cursor.partition_index < 0:
        return _invalid_request(ctx, request)  # "cursor partition must be valid"
    authorized, denied = [], []
    for name in sorted(candidates):
        if authorize(node, ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, name):
            authorized.append(name)
        elif not fetch_all:
            # The existence of a topic the caller may not describe is not revealed: no id, no partitions.
            denied.append({"error_code": ErrorCode.topic_authorization_failed, "name": name, "topic_id": ZERO_UUID,
                           "is_internal": False, "partitions": []})  # fmt: skip
    limit = max(min(node.config.max_request_partition_size_limit, request.response_partition_limit), 1)
    page = _Page(limit)
    _fill(page, image, authorized, ctx.listener, cursor, skip_missing=fetch_all)
    for topic in page.topics:
        topic["topic_authorized_operations"] = authorized_operations(node, ctx, ResourceType.TOPIC, topic["name"])
    values = {"throttle_time": 0, "topics": page.topics + denied, "next_cursor": page.next_cursor}
    return build(response_class(ApiKey.DESCRIBE_TOPIC_PARTITIONS, ctx.api_version), values)
