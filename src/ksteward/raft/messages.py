"""Vote (52), BeginQuorumEpoch (53) and EndQuorumEpoch (54) messages as kio entities, for any version.

Kafka's ``RaftUtil`` builders (``singletonVoteRequest``, ``singletonBeginQuorumEpochResponse``, ...): one
topic, ``__cluster_metadata``, one partition, 0. ``ksteward.protocol.build`` keeps the fields a version has,
so one description serves v0-2 of Vote and v0-1 of the epoch messages. kio names Vote's partition fields
``replica_epoch`` / ``replica_id`` in every version (``CandidateEpoch`` / ``CandidateId`` before v2).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from kio.schema.errors import ErrorCode

from ksteward.protocol.apis import ApiKey
from ksteward.protocol.build import build
from ksteward.protocol.codec import request_class, response_class

from . import METADATA_PARTITION, METADATA_TOPIC_NAME

__all__ = [
    "begin_quorum_epoch_request",
    "end_quorum_epoch_request",
    "epoch_response",
    "leader_endpoints",
    "metadata_partition",
    "vote_request",
    "vote_response",
]

_ZERO_UUID = uuid.UUID(int=0)


def metadata_partition(message: Any) -> Any | None:
    """The one partition of a request or response about ``__cluster_metadata-0``; None for anything else
    (``RaftUtil.hasValidTopicPartition``: exactly one topic of that name with exactly partition 0)."""
    topics = message.topics
    if len(topics) != 1 or topics[0].topic_name != METADATA_TOPIC_NAME or len(topics[0].partitions) != 1:
        return None
    partition = topics[0].partitions[0]
    return partition if partition.partition_index == METADATA_PARTITION else None


def leader_endpoints(endpoints: Mapping[str, tuple[str, int]]) -> list[dict[str, Any]]:
    return [{"name": name, "host": host, "port": port} for name, (host, port) in sorted(endpoints.items())]


def _topic(partition: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"topic_name": METADATA_TOPIC_NAME, "partitions": [{"partition_index": METADATA_PARTITION, **partition}]}]


def vote_request(
    version: int,
    *,
    cluster_id: str | None,
    voter_id: int,
    epoch: int,
    replica_id: int,
    last_epoch: int,
    last_offset: int,
    pre_vote: bool,
    replica_directory_id: uuid.UUID | None = None,
    voter_directory_id: uuid.UUID | None = None,
) -> Any:
    partition = {
        "replica_epoch": epoch,
        "replica_id": replica_id,
        "replica_directory_id": replica_directory_id or _ZERO_UUID,
        "voter_directory_id": voter_directory_id or _ZERO_UUID,
        "last_offset_epoch": last_epoch,
        "last_offset": last_offset,
        "pre_vote": pre_vote,
    }
    values = {"cluster_id": cluster_id, "voter_id": voter_id, "topics": _topic(partition)}
    return build(request_class(ApiKey.VOTE, version), values)


def vote_response(
    version: int,
    *,
    error: ErrorCode = ErrorCode.none,
    top_error: ErrorCode = ErrorCode.none,
    leader_id: int = -1,
    epoch: int = -1,
    granted: bool = False,
    node_endpoints: Sequence[dict[str, Any]] = (),
) -> Any:
    values: dict[str, Any] = {"error_code": top_error, "topics": []}
    if top_error == ErrorCode.none:
        values["topics"] = _topic(
            {"error_code": error, "leader_id": leader_id, "leader_epoch": epoch, "vote_granted": granted}
        )
    if version >= 1:
        values["node_endpoints"] = list(node_endpoints)
    return build(response_class(ApiKey.VOTE, version), values)


def begin_quorum_epoch_request(
    version: int,
    *,
    cluster_id: str | None,
    voter_id: int,
    leader_id: int,
    epoch: int,
    endpoints: Mapping[str, tuple[str, int]],
    voter_directory_id: uuid.UUID | None = None,
) -> Any:
    partition = {"voter_directory_id": voter_directory_id or _ZERO_UUID, "leader_id": leader_id, "leader_epoch": epoch}
    values = {
        "cluster_id": cluster_id,
        "voter_id": voter_id,
        "topics": _topic(partition),
        "leader_endpoints": leader_endpoints(endpoints),
    }
    return build(request_class(ApiKey.BEGIN_QUORUM_EPOCH, version), values)


def end_quorum_epoch_request(
    version: int,
    *,
    cluster_id: str | None,
    leader_id: int,
    epoch: int,
    preferred: Sequence[int],
    endpoints: Mapping[str, tuple[str, int]],
) -> Any:
    partition = {
        "leader_id": leader_id,
        "leader_epoch": epoch,
        "preferred_successors": list(preferred),
        "preferred_candidates": [{"candidate_id": c, "candidate_directory_id": _ZERO_UUID} for c in preferred],
    }
    values = {"cluster_id": cluster_id, "topics": _topic(partition), "leader_endpoints": leader_endpoints(endpoints)}
    return build(request_class(ApiKey.END_QUORUM_EPOCH, version), values)


def epoch_response(
    api_key: int,
    version: int,
    *,
    error: ErrorCode = ErrorCode.none,
    top_error: ErrorCode = ErrorCode.none,
    leader_id: int = -1,
    epoch: int = -1,
    node_endpoints: Sequence[dict[str, Any]] = (),
) -> Any:
    """A BeginQuorumEpoch or EndQuorumEpoch response: they have the same shape."""
    values: dict[str, Any] = {"error_code": top_error, "topics": []}
    if top_error == ErrorCode.none:
        values["topics"] = _topic({"error_code": error, "leader_id": leader_id, "leader_epoch": epoch})
    if version >= 1:
        values["node_endpoints"] = list(node_endpoints)
    return build(response_class(api_key, version), values)


def preferred_candidates(partition: Any) -> list[int]:
    """EndQuorumEpoch's preferred successors: ``PreferredCandidates`` from v1, ``PreferredSuccessors`` before."""
    candidates = getattr(partition, "preferred_candidates", None)
    if candidates is not None:
        return [int(c.candidate_id) for c in candidates]
    return [int(c) for c in getattr(partition, "preferred_successors", ())]


def directory_matches(wanted: uuid.UUID | None, local: uuid.UUID | None) -> bool:
    """An absent (or zero) directory id matches any (``ReplicaKey``)."""
    if wanted is None or wanted == _ZERO_UUID:
        return True
    return wanted == local
