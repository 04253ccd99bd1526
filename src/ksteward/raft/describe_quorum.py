"""DescribeQuorum (api 55, v0-2) for ``__cluster_metadata-0``, sans-IO: Kafka's
``KafkaRaftClient.handleDescribeQuorumRequest`` and ``RaftUtil.singletonDescribeQuorumResponse``.

The caller authorizes (DESCRIBE on the cluster) and passes what this replica knows: the leader's
``QuorumDescription`` (``RaftLeader.describe``), or None on a replica that does not lead, and the voters'
endpoints (v2's ``Nodes``). The order of checks is Kafka's:

1. a request that does not name exactly ``__cluster_metadata`` partition 0 gets UNKNOWN_TOPIC_OR_PARTITION
   on every partition it named (``DescribeQuorumRequest.getPartitionLevelErrorResponse``);
2. a replica that is not the leader answers NOT_LEADER_OR_FOLLOWER on the metadata partition, the top level
   NONE (``DescribeQuorumResponse.singletonErrorResponse``);
3. the leader answers with its view: voters (itself included) and observers, their log end offsets and,
   from v1, their last fetch and last caught-up times; from v2 their directory ids and the voters' nodes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from kio.schema.errors import ErrorCode

from ksteward.protocol.apis import ApiKey
from ksteward.protocol.build import build
from ksteward.protocol.codec import response_class

from . import METADATA_PARTITION, METADATA_TOPIC_NAME
from .progress import QuorumDescription, ReplicaProgress

__all__ = [
    "NOT_LEADER_MESSAGE",
    "UNKNOWN_PARTITION_MESSAGE",
    "VoterNode",
    "describe_quorum_response",
    "top_level_error",
]

#: ``Errors.NOT_LEADER_OR_FOLLOWER.message()`` and ``Errors.UNKNOWN_TOPIC_OR_PARTITION.message()``: the
#: partition's error message (v2) is the code's default text, as Kafka's error responses send it.
NOT_LEADER_MESSAGE = (
    "For requests intended only for the leader, this error indicates that the broker is not the current leader. "
    "For requests intended for any replica, this error indicates that the broker is not a replica of the topic "
    "partition."
)
UNKNOWN_PARTITION_MESSAGE = "This server does not host this topic-partition."
_UNKNOWN = UNKNOWN_PARTITION_MESSAGE


@dataclass(frozen=True, slots=True)
class VoterNode:
    """One entry of v2's ``Nodes``: a voter and its listener endpoints (name, host, port)."""

    node_id: int
    listeners: tuple[tuple[str, str, int], ...]


def _asks_for_metadata_partition(request: Any) -> bool:
    """Kafka's ``hasValidTopicPartition``: exactly one topic, ``__cluster_metadata``, with exactly partition 0."""
    topics = request.topics
    if len(topics) != 1 or topics[0].topic_name != METADATA_TOPIC_NAME:
        return False
    partitions = topics[0].partitions
    return len(partitions) == 1 and int(partitions[0].partition_index) == METADATA_PARTITION


def _partition_error(index: int, error: ErrorCode, message: str) -> dict[str, Any]:
    # The generated PartitionData's defaults: Kafka fills only the index and the error.
    return {"partition_index": index, "error_code": error, "error_message": message, "leader_id": 0,
            "leader_epoch": 0, "high_watermark": 0, "current_voters": [], "observers": []}  # fmt: skip


def _replica(progress: ReplicaProgress) -> dict[str, Any]:
    return {
        "replica_id": progress.replica_id,
        "replica_directory_id": progress.replica_directory_id,
        "log_end_offset": progress.log_end_offset,
        "last_fetch_timestamp": progress.last_fetch_timestamp_ms,
        "last_caught_up_timestamp": progress.last_caught_up_timestamp_ms,
    }


def _nodes(nodes: Sequence[VoterNode]) -> list[dict[str, Any]]:
    return [
        {
            "node_id": n.node_id,
            "listeners": [{"name": name, "host": host, "port": port} for name, host, port in n.listeners],
        }
        for n in nodes
    ]


def top_level_error(api_version: int, error: ErrorCode, message: str | None = None) -> Any:
    """``DescribeQuorumRequest.getErrorResponse``: the top-level error alone (e.g. CLUSTER_AUTHORIZATION_FAILED)."""
    values: dict[str, Any] = {"error_code": error, "error_message": message, "topics": [], "nodes": []}
    return build(response_class(ApiKey.DESCRIBE_QUORUM, api_version), values)


def describe_quorum_response(
    request: Any, api_version: int, description: QuorumDescription | None, nodes: Sequence[VoterNode]
) -> Any:
    """The response this replica gives ``request`` (see the module docstring for the order of checks)."""
    cls = response_class(ApiKey.DESCRIBE_QUORUM, api_version)
    if not _asks_for_metadata_partition(request):
        topics = [
            {"topic_name": t.topic_name, "partitions": [
                _partition_error(int(p.partition_index), ErrorCode.unknown_topic_or_partition, _UNKNOWN)
                for p in t.partitions]}
            for t in request.topics
        ]  # fmt: skip
        return build(cls, {"error_code": ErrorCode.none, "error_message": None, "topics": topics, "nodes": []})
    if description is None:
        partition = _partition_error(METADATA_PARTITION, ErrorCode.not_leader_or_follower, NOT_LEADER_MESSAGE)
        topics = [{"topic_name": METADATA_TOPIC_NAME, "partitions": [partition]}]
        return build(cls, {"error_code": ErrorCode.none, "error_message": None, "topics": topics, "nodes": []})
    partition = {
        "partition_index": METADATA_PARTITION,
        "error_code": ErrorCode.none,
        "error_message": None,
        "leader_id": description.leader_id,
        "leader_epoch": description.leader_epoch,
        "high_watermark": description.high_watermark,
        "current_voters": [_replica(v) for v in description.voters],
        "observers": [_replica(o) for o in description.observers],
    }
    topics = [{"topic_name": METADATA_TOPIC_NAME, "partitions": [partition]}]
    return build(cls, {"error_code": ErrorCode.none, "error_message": None, "topics": topics, "nodes": _nodes(nodes)})
