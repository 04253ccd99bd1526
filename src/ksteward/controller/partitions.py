"""New partitions: CreatePartitions v0-v3 on the controller, and the PartitionRecord every new partition
gets, whether CreateTopics or CreatePartitions made it (Kafka's ``ReplicationControlManager.createPartitions``).

A count may only grow. The new partitions keep the topic's replication factor; their replicas are the
request's manual assignments (checked as CreateTopics checks them) or placed by the striped placer.
ALTER on the topic is the caller's decision, passed as ``may_alter``.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Sequence
from typing import cast

from kio.schema.errors import ErrorCode
from kio.schema.types import BrokerId
from kio.static.primitive import i32

from ksteward.controller.features import METADATA_VERSION, METADATA_VERSION_LEVEL
from ksteward.controller.replica_placement import (
    AssignmentError,
    PlacementError,
    default_dir,
    is_active,
    place_replicas,
    usable_brokers,
    validate_manual_assignment,
)
from ksteward.controller.result import MAX_RECORDS_PER_USER_OP, ApiError, ControllerResult
from ksteward.controller.topic_requests import CreatePartitionsResult, NameFilter, NewPartitions, QuotaCharge, allowed
from ksteward.metadata.image import MetadataImage
from ksteward.metadata.records import (
    AnyPartitionRecord,
    MetadataRecord,
    PartitionRecordV0,
    PartitionRecordV1,
    PartitionRecordV2,
)

__all__ = ["create_partitions", "partition_record"]

_DIRECTORY_ASSIGNMENT_LEVEL = 17  # metadata.version 3.7-IV2: PartitionRecord v1 (directories)
_ELR_LEVEL = 23  # metadata.version 4.0-IV1: PartitionRecord v2 (ELR fields)


def create_partitions(
    image: MetadataImage,
    topics: Sequence[NewPartitions],
    *,
    rng: random.Random,
    validate_only: bool = False,
    may_alter: NameFilter | None = None,
    charge: QuotaCharge | None = None,
) -> ControllerResult[tuple[CreatePartitionsResult, ...]]:
    """Raise partition counts. Results: duplicated names, then unauthorized topics, then the others in
    request order."""
    first: dict[str, NewPartitions] = {}
    duplicates: dict[str, None] = {}
    for topic in topics:
        if topic.name in first:
            duplicates[topic.name] = None
        else:
            first[topic.name] = topic
    results = [
        CreatePartitionsResult(name, ApiError(ErrorCode.invalid_request, "Duplicate topic name."))
        for name in duplicates
    ]
    candidates = [name for name in first if name not in duplicates]
    authorized = allowed(candidates, may_alter)
    results.extend(
        CreatePartitionsResult(name, ApiError(ErrorCode.topic_authorization_failed))
        for name in candidates
        if name not in authorized
    )
    records: list[MetadataRecord] = []
    for name in candidates:
        if name in authorized:
            outcome = _add_partitions(image, first[name], charge, rng)
            if isinstance(outcome, list) and len(records) + len(outcome) > MAX_RECORDS_PER_USER_OP:
                outcome = ApiError(ErrorCode.unknown_server_error)
            if isinstance(outcome, ApiError):
                results.append(CreatePartitionsResult(name, outcome))
            else:
                records.extend(outcome)
                results.append(CreatePartitionsResult(name))
    return ControllerResult(() if validate_only else tuple(records), tuple(results))


def _add_partitions(
    image: MetadataImage, request: NewPartitions, charge: QuotaCharge | None, rng: random.Random
) -> list[MetadataRecord] | ApiError:
    topic = image.topics.by_name.get(request.name)
    if topic is None:
        return ApiError(ErrorCode.unknown_topic_or_partition)
    current = len(topic.partitions)
    if request.count == current:
        return ApiError(ErrorCode.invalid_partitions, f"Topic already has {current} partition(s).")
    if request.count < current:
        message = (
            f"The topic {request.name} currently has {current} partition(s); {request.count} would not be an increase."
        )
        return ApiError(ErrorCode.invalid_partitions, message)
    additional = request.count - current
    if request.assignments is not None and len(request.assignments) != additional:
        message = (
            f"Attempted to add {additional} additional partition(s), but only "
            f"{len(request.assignments)} assignment(s) were specified."
        )
        return ApiError(ErrorCode.invalid_replica_assignment, message)
    if charge is not None:
        error = charge(additional)
        if error is not None:
            return error
    if not topic.partitions:
        return ApiError(ErrorCode.unknown_server_error)
    rf = len(topic.partitions[min(topic.partitions)].replicas)
    placed = _new_replicas(image, request, current, additional, rf, rng)
    if isinstance(placed, ApiError):
        return placed
    records: list[MetadataRecord] = []
    for offset, replicas in enumerate(placed):
        isr = tuple(b for b in replicas if is_active(image.cluster, b))
        if not isr:
            message = (
                f"Unable to replicate the partition {rf} time(s): "
                "All brokers are currently fenced or in controlled shutdown."
            )
            return ApiError(ErrorCode.invalid_replication_factor, message)
        records.append(partition_record(image, topic.id, current + offset, replicas, isr))
    return records


def _new_replicas(
    image: MetadataImage, request: NewPartitions, current: int, additional: int, rf: int, rng: random.Random
) -> list[tuple[int, ...]] | ApiError:
    """The replicas of each new partition: the request's assignments, checked, or placed."""
    cluster = image.cluster
    if request.assignments is None:
        try:
            # More than a batch holds fails the topic anyway (the caller checks): place no more.
            wanted = min(additional, MAX_RECORDS_PER_USER_OP + 1)
            return place_replicas(usable_brokers(cluster), wanted, rf, rng)
        except PlacementError as exc:
            return ApiError(ErrorCode.invalid_replication_factor, str(exc))
    placed: list[tuple[int, ...]] = []
    for offset, replicas in enumerate(request.assignments):
        try:
            validate_manual_assignment(cluster, replicas, rf)
        except AssignmentError as exc:
            return ApiError(ErrorCode.invalid_replica_assignment, str(exc))
        if not any(is_active(cluster, b) for b in replicas):
            message = (
                f"All brokers specified in the manual partition assignment for partition "
                f"{current + offset} are fenced or in controlled shutdown."
            )
            return ApiError(ErrorCode.invalid_replica_assignment, message)
        placed.append(tuple(replicas))
    return placed


def partition_record(
    image: MetadataImage,
    topic_id: uuid.UUID | None,
    partition_id: int,
    replicas: tuple[int, ...],
    isr: tuple[int, ...],
) -> AnyPartitionRecord:
    """A new partition's record at the image's metadata.version, as Kafka writes it: leader = first ISR
    member, epochs 0, RECOVERED; each replica's default log directory from v1; no ELR fields (empty)."""
    level = image.features.get(METADATA_VERSION, METADATA_VERSION_LEVEL)
    brokers = cast(tuple[BrokerId, ...], replicas)
    in_sync = cast(tuple[i32, ...], isr)
    leader = cast(BrokerId, isr[0])
    if level < _DIRECTORY_ASSIGNMENT_LEVEL:
        return PartitionRecordV0(
            partition_id=cast(i32, partition_id), topic_id=topic_id, replicas=brokers, isr=in_sync, leader=leader,
            leader_epoch=i32(0), partition_epoch=i32(0),
        )  # fmt: skip
    directories = tuple(default_dir(image.cluster, b) for b in replicas)
    cls = PartitionRecordV2 if level >= _ELR_LEVEL else PartitionRecordV1
    return cls(
        partition_id=cast(i32, partition_id), topic_id=topic_id, replicas=brokers, isr=in_sync, leader=leader,
        leader_epoch=i32(0), partition_epoch=i32(0), directories=directories,
    )  # fmt: skip
