"""Partition reassignment, AlterPartition and leader elections on the controller: Kafka's
``ReplicationControlManager.alterPartitionReassignments``, ``listPartitionReassignments``, ``alterPartition``
and ``electLeaders`` (docs/reassignment.md).

Pure functions of the image and a request to a :class:`ControllerResult`; every partition change goes through
``partition_change.build_partition_change``. Authorization is the broker layer's (ALTER on the cluster for
the alter and the elections, DESCRIBE for the list, CLUSTER_ACTION for AlterPartition). ``unclean`` says
whether a topic allows unclean leader election (its effective ``unclean.leader.election.enable``).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from kio.schema.errors import ErrorCode

from ksteward.controller.features import METADATA_VERSION, METADATA_VERSION_LEVEL
from ksteward.controller.partition_change import (
    NO_LEADER,
    NO_LEADER_CHANGE,
    RECOVERED,
    RECOVERING,
    Election,
    build_partition_change,
    is_reassigning,
)
from ksteward.controller.replica_placement import AssignmentError, is_active, validate_manual_assignment
from ksteward.controller.result import EXCESSIVELY_LARGE_BATCH, MAX_RECORDS_PER_USER_OP, ApiError, ControllerResult
from ksteward.metadata.image import MetadataImage, PartitionRegistration, TopicImage
from ksteward.metadata.records import AnyPartitionChangeRecord

__all__ = [
    "AlterPartitionRequest",
    "AlterPartitionResult",
    "ElectionOutcome",
    "IsrChange",
    "OngoingReassignment",
    "PartitionReassignment",
    "alter_partition",
    "alter_partition_reassignments",
    "elect_leaders",
    "list_partition_reassignments",
]

UncleanFilter = Callable[[str], bool]
PREFERRED_ELECTION = 0  # ElectionType.PREFERRED
UNCLEAN_ELECTION = 1  # ElectionType.UNCLEAN
_NONE = ApiError(ErrorCode.none)


def _level(image: MetadataImage) -> int:
    return image.features.get(METADATA_VERSION, METADATA_VERSION_LEVEL)


def _change(
    image: MetadataImage, topic: TopicImage, pid: int, partition: PartitionRegistration, **targets: object
) -> AnyPartitionChangeRecord | None:
    """``PartitionChangeBuilder`` with Kafka's ``LeaderAcceptor``: a leader must be an active broker."""
    return build_partition_change(
        image, topic.id, pid, partition, accept=lambda b: is_active(image.cluster, b), level=_level(image),
        **targets,  # type: ignore[arg-type]
    )  # fmt: skip


# --- AlterPartitionReassignments (45) ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PartitionReassignment:
    topic: str
    partition: int
    replicas: tuple[int, ...] | None
    """The target replicas; None cancels the partition's reassignment."""


def alter_partition_reassignments(
    image: MetadataImage,
    reassignments: Sequence[PartitionReassignment],
    *,
    unclean: UncleanFilter,
    allow_replication_factor_change: bool = True,
) -> ControllerResult[list[ApiError]]:
    """One outcome per entry, in request order; the records of the successful ones, in one batch. Each entry is
    checked against ``image`` (as Kafka checks every entry against the state before the request)."""
    records: list[AnyPartitionChangeRecord] = []
    errors: list[ApiError] = []
    for entry in reassignments:
        outcome = _alter_one(image, entry, unclean, allow_replication_factor_change)
        if isinstance(outcome, ApiError):
            errors.append(outcome)
            continue
        if outcome is not None:
            if len(records) >= MAX_RECORDS_PER_USER_OP:  # Kafka's BoundedList, caught per partition
                errors.append(ApiError(ErrorCode.unknown_server_error, EXCESSIVELY_LARGE_BATCH))
                continue
            records.append(outcome)
        errors.append(_NONE)
    return ControllerResult(records, errors)


def _alter_one(
    image: MetadataImage, entry: PartitionReassignment, unclean: UncleanFilter, allow_rf_change: bool
) -> AnyPartitionChangeRecord | ApiError | None:
    topic = image.topics.by_name.get(entry.topic)
    if topic is None:
        return ApiError(ErrorCode.unknown_topic_or_partition, f"Unable to find a topic named {entry.topic}.")
    partition = topic.partitions.get(entry.partition)
    if partition is None:
        message = f"Unable to find partition {entry.topic}:{entry.partition}."
        return ApiError(ErrorCode.unknown_topic_or_partition, message)
    if entry.replicas is None:
        return _cancel(image, topic, entry.partition, partition, unclean)
    try:
        validate_manual_assignment(image.cluster, entry.replicas, None)
    except AssignmentError as exc:
        return ApiError(ErrorCode.invalid_replica_assignment, str(exc))
    original = [int(r) for r in partition.replicas if r not in partition.adding_replicas]
    if not allow_rf_change and len(entry.replicas) != len(original):  # KIP-860
        message = f"The replication factor is changed from {len(original)} to {len(entry.replicas)}"
        return ApiError(ErrorCode.invalid_replication_factor, message)
    # PartitionReassignmentReplicas: the target first, then the replicas it drops (they serve until it is done).
    current = [int(r) for r in partition.replicas]
    target = list(entry.replicas)
    removing = sorted(set(current) - set(target))
    adding = sorted(set(target) - set(current))
    replicas = target + removing
    return _change(
        image, topic, entry.partition, partition,
        target_replicas=replicas if replicas != current else None,
        target_removing=removing or None,
        target_adding=adding or None,
    )  # fmt: skip


def _cancel(
    image: MetadataImage, topic: TopicImage, pid: int, partition: PartitionRegistration, unclean: UncleanFilter
) -> AnyPartitionChangeRecord | ApiError | None:
    """``cancelPartitionReassignment`` with ``PartitionReassignmentRevert``: the adding replicas leave the
    replicas and the ISR, the removing ones stay."""
    if not is_reassigning(partition):
        return ApiError(ErrorCode.no_reassignment_in_progress, "No partition reassignment is in progress.")
    adding = {int(r) for r in partition.adding_replicas}
    replicas = [int(r) for r in partition.replicas if r not in adding]
    isr = [int(r) for r in partition.isr if r not in adding]
    allowed = unclean(topic.name)
    if not isr:  # every in-sync replica was being added: reverting needs an unclean election
        if not replicas:
            return ApiError(ErrorCode.invalid_replica_assignment,
                            "Invalid replica assignment: addingReplicas contains all replicas.")  # fmt: skip
        if not allowed:
            message = (
                f"Unable to revert partition assignment for {topic.name}:{pid} because it would require an "
                "unclean leader election."
            )
            return ApiError(ErrorCode.invalid_replica_assignment, message)
        isr = [replicas[0]]
    return _change(
        image, topic, pid, partition, election=Election.UNCLEAN if allowed else Election.ONLINE,
        target_isr=isr, target_replicas=replicas, target_removing=[], target_adding=[],
    )  # fmt: skip


# --- ListPartitionReassignments (46) -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class OngoingReassignment:
    topic: str
    partition: int
    replicas: tuple[int, ...]
    adding: tuple[int, ...]
    removing: tuple[int, ...]


def list_partition_reassignments(
    image: MetadataImage, topics: Sequence[tuple[str, Sequence[int]]] | None
) -> list[OngoingReassignment]:
    """Every ongoing reassignment (``topics`` None), or those of the named partitions; unknown names and
    partitions, and partitions not being reassigned, are left out (topics by name, partitions ascending)."""
    if topics is None:
        wanted = [(name, sorted(image.topics.by_name[name].partitions)) for name in sorted(image.topics.by_name)]
    else:
        wanted = [(name, list(pids)) for name, pids in topics]
    ongoing: list[OngoingReassignment] = []
    for name, pids in wanted:
        topic = image.topics.by_name.get(name)
        if topic is None:
            continue
        for pid in pids:
            p = topic.partitions.get(pid)
            if p is not None and is_reassigning(p):
                ongoing.append(OngoingReassignment(
                    name, pid, tuple(map(int, p.replicas)), tuple(map(int, p.adding_replicas)),
                    tuple(map(int, p.removing_replicas)),
                ))  # fmt: skip
    return ongoing


# --- ElectLeaders (43) -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ElectionOutcome:
    topic: str
    partition: int
    error: ApiError


def elect_leaders(
    image: MetadataImage, election_type: int, topics: Sequence[tuple[str, Sequence[int]]] | None
) -> ControllerResult[list[tuple[str, list[ElectionOutcome]]] | ApiError]:
    """``electLeaders``: one group per request entry, one outcome per named partition; with ``topics`` None one
    group per topic, leaving out the partitions whose election is not needed (a topic may be left with none).
    An unknown election type fails the request (INVALID_REQUEST)."""
    if election_type not in (PREFERRED_ELECTION, UNCLEAN_ELECTION):
        return ControllerResult([], ApiError(ErrorCode.invalid_request, f"Unknown election type {election_type}"))
    election = Election.PREFERRED if election_type == PREFERRED_ELECTION else Election.UNCLEAN
    everything = topics is None
    if topics is None:
        topics = [(name, sorted(image.topics.by_name[name].partitions)) for name in sorted(image.topics.by_name)]
    records: list[AnyPartitionChangeRecord] = []
    groups: list[tuple[str, list[ElectionOutcome]]] = []
    for name, pids in topics:
        outcomes: list[ElectionOutcome] = []
        groups.append((name, outcomes))
        for pid in pids:
            error, record = _elect_one(image, name, pid, election)
            if record is not None:
                if len(records) >= MAX_RECORDS_PER_USER_OP:
                    return ControllerResult([], ApiError(ErrorCode.policy_violation, EXCESSIVELY_LARGE_BATCH))
                records.append(record)
            if not (everything and error.code == ErrorCode.election_not_needed):
                outcomes.append(ElectionOutcome(name, pid, error))
    return ControllerResult(records, groups)


def _elect_one(
    image: MetadataImage, name: str, pid: int, election: Election
) -> tuple[ApiError, AnyPartitionChangeRecord | None]:
    topic = image.topics.by_name.get(name)
    if topic is None:
        return ApiError(ErrorCode.unknown_topic_or_partition, f"No such topic as {name}"), None
    partition = topic.partitions.get(pid)
    if partition is None:
        return ApiError(ErrorCode.unknown_topic_or_partition, f"No such partition as {name}-{pid}"), None
    preferred = int(partition.replicas[0]) if partition.replicas else NO_LEADER
    if (election is Election.PREFERRED and partition.leader == preferred) or (
        election is Election.UNCLEAN and partition.leader != NO_LEADER
    ):
        return ApiError(ErrorCode.election_not_needed), None
    record = _change(image, topic, pid, partition, election=election)
    if record is None:
        code = (
            ErrorCode.preferred_leader_not_available
            if election is Election.PREFERRED
            else ErrorCode.eligible_leaders_not_available
        )
        return ApiError(code), None
    return _NONE, record


# --- AlterPartition (56) -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class IsrChange:
    """One partition of an AlterPartition request (v2 ``NewIsr`` has broker epoch -1 for every member)."""

    partition: int
    leader_epoch: int
    partition_epoch: int
    new_isr: tuple[tuple[int, int], ...]
    """(broker id, broker epoch or -1) of each proposed ISR member."""
    leader_recovery_state: int = RECOVERED


@dataclass(frozen=True, slots=True)
class AlterPartitionRequest:
    broker_id: int
    broker_epoch: int
    topics: tuple[tuple[uuid.UUID | None, tuple[IsrChange, ...]], ...]


@dataclass(frozen=True, slots=True)
class AlterPartitionResult:
    """A partition's answer: the error, and the partition's state after the request (when it succeeded)."""

    partition: int
    error: ErrorCode
    leader: int = NO_LEADER
    leader_epoch: int = -1
    isr: tuple[int, ...] = ()
    leader_recovery_state: int = RECOVERED
    partition_epoch: int = -1


@dataclass(frozen=True, slots=True)
class AlterPartitionReply:
    error: ApiError
    topics: list[tuple[uuid.UUID | None, list[AlterPartitionResult]]] = field(default_factory=list)


def alter_partition(
    image: MetadataImage, request: AlterPartitionRequest, *, unclean: UncleanFilter
) -> ControllerResult[AlterPartitionReply]:
    """``alterPartition`` (v2+: topics by id): the requester's broker epoch, then each partition's checks
    (``validateAlterPartitionData``), then the builder; an ISR that completes a reassignment completes it."""
    registration = image.cluster.get(request.broker_id)
    if registration is None:
        message = f"No broker registration found for broker id {request.broker_id}"
        return ControllerResult([], AlterPartitionReply(ApiError(ErrorCode.stale_broker_epoch, message)))
    if int(registration.broker_epoch) != request.broker_epoch:
        message = f"Expected broker epoch {registration.broker_epoch}, but got broker epoch {request.broker_epoch}"
        return ControllerResult([], AlterPartitionReply(ApiError(ErrorCode.stale_broker_epoch, message)))
    records: list[AnyPartitionChangeRecord] = []
    reply = AlterPartitionReply(_NONE)
    for topic_id, changes in request.topics:
        topic = image.topics.by_id.get(topic_id) if topic_id is not None else None
        if topic is None:
            reply.topics.append((topic_id, [AlterPartitionResult(c.partition, ErrorCode.unknown_topic_id)
                                            for c in changes]))  # fmt: skip
            continue
        results: list[AlterPartitionResult] = []
        for change in changes:
            record, result = _alter_isr(image, topic, request.broker_id, change, unclean)
            if record is not None:
                records.append(record)
            results.append(result)
        reply.topics.append((topic_id, results))
    return ControllerResult(records, reply)


def _alter_isr(
    image: MetadataImage, topic: TopicImage, broker_id: int, change: IsrChange, unclean: UncleanFilter
) -> tuple[AnyPartitionChangeRecord | None, AlterPartitionResult]:
    partition = topic.partitions.get(change.partition)
    error = _isr_change_error(image, partition, broker_id, change)
    if error is not ErrorCode.none or partition is None:
        return None, AlterPartitionResult(change.partition, error)
    record = _change(
        image, topic, change.partition, partition,
        election=Election.UNCLEAN if unclean(topic.name) else Election.ONLINE,
        target_isr=[b for b, _ in change.new_isr], target_recovery_state=change.leader_recovery_state,
    )  # fmt: skip
    if record is not None:
        partition = partition.merge(record)
        if record.leader not in (broker_id, NO_LEADER_CHANGE):
            # Completing a reassignment moved the leadership away from the requester: it must learn the new
            # state from the metadata log before it tries again (ReplicationControlManager.alterPartition).
            return record, AlterPartitionResult(change.partition, ErrorCode.new_leader_elected)
    return record, AlterPartitionResult(
        change.partition, ErrorCode.none, int(partition.leader), int(partition.leader_epoch),
        tuple(map(int, partition.isr)), int(partition.leader_recovery_state), int(partition.partition_epoch),
    )  # fmt: skip


def _isr_change_error(
    image: MetadataImage, partition: PartitionRegistration | None, broker_id: int, change: IsrChange
) -> ErrorCode:
    """``validateAlterPartitionData``, in Kafka's order."""
    if partition is None:
        return ErrorCode.unknown_topic_or_partition
    if change.leader_epoch > partition.leader_epoch or change.partition_epoch > partition.partition_epoch:
        return ErrorCode.not_controller  # the requester has seen a newer state than this controller
    if change.leader_epoch < partition.leader_epoch:
        return ErrorCode.fenced_leader_epoch
    if broker_id != partition.leader:
        return ErrorCode.invalid_request
    if change.partition_epoch < partition.partition_epoch:
        return ErrorCode.invalid_update_version
    new_isr = [b for b, _ in change.new_isr]
    replicas = {int(r) for r in partition.replicas}
    if len(set(new_isr)) != len(new_isr) or any(b < 0 or b not in replicas for b in new_isr):
        return ErrorCode.invalid_request  # Replicas.validateIsr
    if partition.leader not in new_isr:
        return ErrorCode.invalid_request  # the ISR must hold the leader
    if change.leader_recovery_state not in (RECOVERED, RECOVERING):
        return ErrorCode.invalid_request  # LeaderRecoveryState.of refuses it
    if change.leader_recovery_state == RECOVERING and len(new_isr) > 1:
        return ErrorCode.invalid_request
    if partition.leader_recovery_state == RECOVERED and change.leader_recovery_state == RECOVERING:
        return ErrorCode.invalid_request
    for member, epoch in change.new_isr:  # ineligibleReplicasForIsr
        reg = image.cluster.get(member)
        if reg is None or reg.in_controlled_shutdown or reg.fenced or (epoch != -1 and epoch != reg.broker_epoch):
            return ErrorCode.ineligible_replica
    return ErrorCode.none
