"""One partition's next state as a PartitionChangeRecord: Kafka's ``PartitionChangeBuilder``.

Every change of an existing partition goes through :func:`build_partition_change`: leadership that follows
liveness (``controller/leadership.py``), reassignments and their completion, AlterPartition from a
partition's leader, and leader elections (``controller/reassignment.py``). The steps, in Kafka's order
(docs/reassignment.md, "The partition change builder"):

1. *Complete a reassignment* when the target ISR holds every replica that stays: the removing replicas
   leave the replicas and the ISR, and adding / removing are cleared.
2. *Elect* (PREFERRED, ONLINE or UNCLEAN) among the target replicas; an unclean leader gets an ISR of
   itself alone and the leader recovery state RECOVERING.
3. *Bump the leader epoch* (write ``Leader`` unchanged) when replicas leave, and, before metadata.version
   3.6-IV0, when the ISR shrinks (KAFKA-15021).
4. The ISR when it differs and is not empty (without eligible leader replicas Kafka never writes an empty
   ISR); the replicas, their log directories, adding and removing when they differ.

None when nothing changes. Eligible leader replicas (KIP-966) are disabled, as ``eligible.leader.replicas
.version`` is not finalized: a partition that holds some from a foreign log has them cleared.
"""

from __future__ import annotations

import enum
import uuid
from collections.abc import Callable, Sequence
from typing import cast

from kio.schema.types import BrokerId
from kio.static.primitive import i8, i32

from ksteward.controller.replica_placement import MIGRATING_DIR, default_dir
from ksteward.metadata.image import MetadataImage, PartitionRegistration
from ksteward.metadata.records import (
    AnyPartitionChangeRecord,
    PartitionChangeRecordV0,
    PartitionChangeRecordV1,
    PartitionChangeRecordV2,
)

__all__ = [
    "NO_LEADER",
    "NO_LEADER_CHANGE",
    "RECOVERED",
    "RECOVERING",
    "Election",
    "build_partition_change",
    "is_reassigning",
]

NO_LEADER = -1
NO_LEADER_CHANGE = -2
RECOVERED = 0
RECOVERING = 1
_LEADER_RECOVERY_LEVEL = 3  # 3.2-IV0: LeaderRecoveryState (KIP-704)
_ISR_SHRINK_BUMPS_EPOCH_BELOW = 12  # 3.6-IV0 dropped the epoch bump on ISR shrink (KAFKA-15021)
_DIRECTORY_ASSIGNMENT_LEVEL = 17  # 3.7-IV2: PartitionChangeRecord v1, directories
_ELR_LEVEL = 23  # 4.0-IV1: PartitionChangeRecord v2


class Election(enum.Enum):
    """``PartitionChangeBuilder.Election``."""

    PREFERRED = "preferred"  # the first replica if it may lead, else keep a valid leader, else any ISR member
    ONLINE = "online"  # keep a valid leader, else the first ISR member that may lead
    UNCLEAN = "unclean"  # as ONLINE, then any replica that may lead, even out of the ISR


def is_reassigning(partition: PartitionRegistration) -> bool:
    """``PartitionReassignmentReplicas.isReassignmentInProgress``."""
    return bool(partition.adding_replicas or partition.removing_replicas)


def _complete_reassignment(
    isr: list[int], replicas: list[int], removing: list[int], adding: list[int]
) -> tuple[list[int], list[int]] | None:
    """``PartitionReassignmentReplicas.maybeCompleteReassignment``: (ISR, replicas) once it is done."""
    if not removing and not adding:
        return None
    if removing:
        isr = [r for r in isr if r not in removing]
        replicas = [r for r in replicas if r not in removing]
        if not isr or not replicas:
            return None
    if not set(replicas) <= set(isr):
        return None
    return isr, replicas


def _elect(
    partition: PartitionRegistration,
    replicas: Sequence[int],
    isr: Sequence[int],
    accept: Callable[[int], bool],
    election: Election,
) -> tuple[int, bool]:
    """``PartitionChangeBuilder.electLeader``: (the leader, whether the election was unclean)."""

    def valid(replica: int) -> bool:
        return replica in isr and accept(replica)

    current = int(partition.leader)
    if election is Election.PREFERRED and replicas and valid(replicas[0]):
        return replicas[0], False
    if valid(current):
        return current, False
    clean = next((r for r in replicas if valid(r)), None)
    if clean is not None:
        return clean, False
    if election is Election.UNCLEAN:
        unclean = next((r for r in replicas if accept(r)), None)
        if unclean is not None:
            return unclean, True
    return NO_LEADER, False


def build_partition_change(
    image: MetadataImage,
    topic_id: uuid.UUID | None,
    partition_id: int,
    partition: PartitionRegistration,
    *,
    accept: Callable[[int], bool],
    level: int,
    election: Election = Election.ONLINE,
    target_isr: Sequence[int] | None = None,
    target_replicas: Sequence[int] | None = None,
    target_removing: Sequence[int] | None = None,
    target_adding: Sequence[int] | None = None,
    target_recovery_state: int | None = None,
) -> AnyPartitionChangeRecord | None:
    """The record that moves ``partition`` to the targets (each None: unchanged), or None if nothing changes.
    ``accept`` is Kafka's ``LeaderAcceptor``: whether a broker may lead (normally: it is active)."""
    isr = [int(b) for b in (partition.isr if target_isr is None else target_isr)]
    replicas = [int(b) for b in (partition.replicas if target_replicas is None else target_replicas)]
    removing = [int(b) for b in (partition.removing_replicas if target_removing is None else target_removing)]
    adding = [int(b) for b in (partition.adding_replicas if target_adding is None else target_adding)]
    recovery = int(partition.leader_recovery_state if target_recovery_state is None else target_recovery_state)

    completed = _complete_reassignment(isr, replicas, removing, adding)
    if completed is not None:
        isr, replicas = completed
        removing, adding = [], []

    leader_field = NO_LEADER_CHANGE
    isr_field: list[int] | None = None
    recovery_field = -1
    leader, unclean = _elect(partition, replicas, isr, accept, election)
    if leader != partition.leader:
        leader_field = leader
        if unclean:  # the new leader may miss records: it is the whole ISR, and recovers (KIP-704)
            isr_field = [leader]
            if partition.leader_recovery_state != RECOVERING and level >= _LEADER_RECOVERY_LEVEL:
                recovery_field = RECOVERING
    if leader_field == NO_LEADER_CHANGE and not set(partition.replicas) <= set(replicas):
        leader_field = int(partition.leader)  # replicas leave: bump the leader epoch
    if isr_field is None and isr and isr != list(partition.isr):
        isr_field = isr
    if (
        level < _ISR_SHRINK_BUMPS_EPOCH_BELOW
        and leader_field == NO_LEADER_CHANGE
        and isr_field is not None
        and not set(partition.isr) <= set(isr_field)
    ):
        leader_field = int(partition.leader)
    if recovery_field == -1 and recovery != partition.leader_recovery_state:
        recovery_field = recovery

    replicas_field = replicas if replicas and replicas != list(partition.replicas) else None
    directories_field = _directories(image, partition, replicas) if level >= _DIRECTORY_ASSIGNMENT_LEVEL else None
    removing_field = removing if removing != list(partition.removing_replicas) else None
    adding_field = adding if adding != list(partition.adding_replicas) else None
    clear_elr = level >= _ELR_LEVEL and bool(partition.elr)
    if (
        leader_field == NO_LEADER_CHANGE and isr_field is None and replicas_field is None and directories_field is None
        and removing_field is None and adding_field is None and recovery_field == -1 and not clear_elr
    ):  # fmt: skip
        return None
    values: dict[str, object] = {
        "partition_id": i32(partition_id),
        "topic_id": topic_id,
        "leader": BrokerId(leader_field),
        "isr": _ids(isr_field),
        "replicas": _ids(replicas_field),
        "removing_replicas": _ids(removing_field),
        "adding_replicas": _ids(adding_field),
        "leader_recovery_state": i8(recovery_field),
    }
    if level >= _ELR_LEVEL:
        return PartitionChangeRecordV2(
            **values,  # type: ignore[arg-type]
            directories=directories_field,
            eligible_leader_replicas=() if clear_elr else None,
        )
    if level >= _DIRECTORY_ASSIGNMENT_LEVEL:
        return PartitionChangeRecordV1(**values, directories=directories_field)  # type: ignore[arg-type]
    return PartitionChangeRecordV0(**values)  # type: ignore[arg-type]


def _ids(values: list[int] | None) -> tuple[BrokerId, ...] | None:
    return None if values is None else cast(tuple[BrokerId, ...], tuple(values))


def _directories(
    image: MetadataImage, partition: PartitionRegistration, replicas: list[int]
) -> tuple[uuid.UUID | None, ...] | None:
    """The log directory of each target replica: a replica that stays keeps its own, a new one starts in its
    broker's default (``ClusterControlManager.defaultDir``); None when that is what the partition has. A
    partition read from a record without directories has every replica MIGRATING, as Kafka's does."""
    current = tuple(partition.directories) or (MIGRATING_DIR,) * len(partition.replicas)
    known = dict(zip((int(r) for r in partition.replicas), current, strict=False))
    target = tuple(known[r] if r in known else default_dir(image.cluster, r) for r in replicas)
    return None if not replicas or target == current else target
