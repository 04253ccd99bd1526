"""The controller's side of reassignments, AlterPartition and elections (controller/reassignment.py): the
records each step writes, replayed as the controller commits them, and Kafka's errors."""

from __future__ import annotations

from typing import Any

import pytest
from kio.schema.errors import ErrorCode
from membership_world import apply, commit, heartbeat, new_world, partition, register, with_topic

from ksteward.controller.membership import ClusterControlManager
from ksteward.controller.partition_change import RECOVERING
from ksteward.controller.reassignment import (
    AlterPartitionRequest,
    IsrChange,
    PartitionReassignment,
    alter_partition,
    alter_partition_reassignments,
    elect_leaders,
    list_partition_reassignments,
)
from ksteward.metadata.image import MetadataImage
from ksteward.metadata.records import PartitionChangeRecordV2


def flat(response: Any) -> list[Any]:
    """ElectLeaders outcomes, whatever their group."""
    assert isinstance(response, list), response
    return [o for _, group in response for o in group]


def never(_topic: str) -> bool:
    return False


def always(_topic: str) -> bool:
    return True


def world() -> tuple[MetadataImage, ClusterControlManager, dict[int, int]]:
    """The combined node's broker 1 and brokers 2, 3, 4, all unfenced; their epochs by id."""
    image, manager = new_world()
    epochs = {1: int(image.cluster[1].broker_epoch)}
    for broker_id in (2, 3, 4):
        image, epochs[broker_id] = register(image, manager, broker_id)
    return image, manager, epochs


def reassign(image: MetadataImage, *entries: PartitionReassignment, **kw: Any) -> tuple[MetadataImage, list[Any]]:
    result = alter_partition_reassignments(image, entries, unclean=kw.pop("unclean", never), **kw)
    return commit(image, result)


def isr_change(image: MetadataImage, topic: str, isr: tuple[int, ...], pid: int = 0, **kw: Any) -> IsrChange:
    p = partition(image, topic, pid)
    values: dict[str, Any] = {
        "partition": pid, "leader_epoch": int(p.leader_epoch), "partition_epoch": int(p.partition_epoch),
        "new_isr": tuple((b, -1) for b in isr),
    }  # fmt: skip
    values.update(kw)
    return IsrChange(**values)


def send_isr(
    image: MetadataImage, broker_id: int, epoch: int, topic: str, change: IsrChange
) -> tuple[MetadataImage, Any]:
    request = AlterPartitionRequest(broker_id, epoch, ((image.topics.by_name[topic].id, (change,)),))
    return commit(image, alter_partition(image, request, unclean=never))


def test_a_move_adds_then_completes_once_the_new_replicas_are_in_sync() -> None:
    image, _, epochs = world()
    image = with_topic(image, "t", (1, 2))
    image, errors = reassign(image, PartitionReassignment("t", 0, (3, 4)))
    assert [e.code for e in errors] == [ErrorCode.none]
    p = partition(image, "t")
    # Step 1: the target first, then the replicas it removes; who is in sync and who leads is unchanged.
    assert (p.replicas, p.adding_replicas, p.removing_replicas) == ((3, 4, 1, 2), (3, 4), (1, 2))
    assert (p.isr, p.leader, p.leader_epoch) == ((1, 2), 1, 0)
    ongoing = list_partition_reassignments(image, None)
    assert [(o.topic, o.partition, o.replicas, o.adding, o.removing) for o in ongoing] == [
        ("t", 0, (3, 4, 1, 2), (3, 4), (1, 2))
    ]
    # Step 2: the leader reports broker 3 in sync; the reassignment is not done yet.
    image, reply = send_isr(image, 1, epochs[1], "t", isr_change(image, "t", (1, 2, 3)))
    result = reply.topics[0][1][0]
    assert result.error == ErrorCode.none and result.isr == (1, 2, 3)
    assert partition(image, "t").replicas == (3, 4, 1, 2)
    # Step 3: broker 4 too: the removing replicas leave, and the leader, being removed, moves to broker 3.
    image, reply = send_isr(image, 1, epochs[1], "t", isr_change(image, "t", (1, 2, 3, 4)))
    assert reply.topics[0][1][0].error == ErrorCode.new_leader_elected
    p = partition(image, "t")
    assert (p.replicas, p.isr, p.leader, p.adding_replicas, p.removing_replicas) == ((3, 4), (3, 4), 3, (), ())
    assert p.leader_epoch == 1
    assert list_partition_reassignments(image, None) == []


def test_rearranging_the_same_replicas_completes_at_once() -> None:
    image, _, _ = world()
    image = with_topic(image, "t", (1, 2))
    image, errors = reassign(image, PartitionReassignment("t", 0, (2, 1)))
    assert [e.code for e in errors] == [ErrorCode.none]
    p = partition(image, "t")
    assert (p.replicas, p.adding_replicas, p.removing_replicas, p.leader) == ((2, 1), (), (), 1)


def test_cancel_reverts_to_the_original_replicas() -> None:
    image, _, epochs = world()
    image = with_topic(image, "t", (1, 2))
    image, _ = reassign(image, PartitionReassignment("t", 0, (1, 3)))
    image, _ = send_isr(image, 1, epochs[1], "t", isr_change(image, "t", (1, 2)))  # unchanged ISR: no record
    assert partition(image, "t").adding_replicas == (3,)
    image, errors = reassign(image, PartitionReassignment("t", 0, None))
    assert [e.code for e in errors] == [ErrorCode.none]
    p = partition(image, "t")
    assert (p.replicas, p.isr, p.adding_replicas, p.removing_replicas) == ((1, 2), (1, 2), (), ())
    _, errors = reassign(image, PartitionReassignment("t", 0, None))
    assert errors[0].code == ErrorCode.no_reassignment_in_progress
    assert errors[0].message == "No partition reassignment is in progress."


@pytest.mark.parametrize(
    ("entry", "code", "message"),
    [
        (PartitionReassignment("nope", 0, (1,)), ErrorCode.unknown_topic_or_partition,
         "Unable to find a topic named nope."),
        (PartitionReassignment("t", 7, (1,)), ErrorCode.unknown_topic_or_partition, "Unable to find partition t:7."),
        (PartitionReassignment("t", 0, (1, 9)), ErrorCode.invalid_replica_assignment,
         "The manual partition assignment includes broker 9, but no such broker is registered."),
        (PartitionReassignment("t", 0, (2, 2)), ErrorCode.invalid_replica_assignment,
         "The manual partition assignment includes the broker 2 more than once."),
        (PartitionReassignment("t", 0, ()), ErrorCode.invalid_replica_assignment,
         "The manual partition assignment includes an empty replica list."),
    ],
)  # fmt: skip
def test_reassignment_errors(entry: PartitionReassignment, code: ErrorCode, message: str) -> None:
    image, _, _ = world()
    image = with_topic(image, "t", (1, 2))
    result = alter_partition_reassignments(image, [entry, PartitionReassignment("t", 0, (2, 1))], unclean=never)
    assert [(e.code, e.message) for e in result.response] == [(code, message), (ErrorCode.none, None)]
    assert len(result.records) == 1  # the other entry still applies


def test_a_replication_factor_change_can_be_refused() -> None:
    image, _, _ = world()
    image = with_topic(image, "t", (1, 2))
    _, errors = reassign(image, PartitionReassignment("t", 0, (1, 2, 3)), allow_replication_factor_change=False)
    assert (errors[0].code, errors[0].message) == (
        ErrorCode.invalid_replication_factor,
        "The replication factor is changed from 2 to 3",
    )
    _, errors = reassign(image, PartitionReassignment("t", 0, (3, 4)), allow_replication_factor_change=False)
    assert errors[0].code == ErrorCode.none


def test_dropping_a_replica_completes_at_once_and_moves_its_leadership() -> None:
    image, _, _ = world()
    image = with_topic(image, "t", (2, 3))
    image, _ = reassign(image, PartitionReassignment("t", 0, (3,)))
    p = partition(image, "t")  # the ISR already holds every replica that stays
    assert (p.replicas, p.isr, p.leader, p.leader_epoch, p.removing_replicas) == ((3,), (3,), 3, 1, ())


def _leader_two(image: MetadataImage) -> MetadataImage:
    """Topic "p": replicas (1, 2), ISR (1, 2), led by 2 (the preferred replica 1 lost it once)."""
    image = with_topic(image, "p", (1, 2))
    topic = image.topics.by_name["p"]
    return apply(image, [PartitionChangeRecordV2(partition_id=0, topic_id=topic.id, leader=2)])  # type: ignore[arg-type]


def test_preferred_election() -> None:
    image, _, _ = world()
    image = _leader_two(image)
    result = elect_leaders(image, 0, [("p", [0]), ("p", [5]), ("nope", [0])])
    assert [(o.topic, o.partition, o.error.code) for o in flat(result.response)] == [
        ("p", 0, ErrorCode.none),
        ("p", 5, ErrorCode.unknown_topic_or_partition),
        ("nope", 0, ErrorCode.unknown_topic_or_partition),
    ]
    image, _ = commit(image, result)
    assert (partition(image, "p").leader, partition(image, "p").leader_epoch) == (1, 2)
    again = elect_leaders(image, 0, [("p", [0])])
    assert flat(again.response)[0].error.code == ErrorCode.election_not_needed
    assert elect_leaders(image, 0, None).response == [("p", [])]  # "every partition" leaves out unneeded ones


def test_preferred_leader_not_available_when_it_is_out_of_sync() -> None:
    image, _, _ = world()
    image = _leader_two(image)
    topic = image.topics.by_name["p"]
    image = apply(image, [PartitionChangeRecordV2(partition_id=0, topic_id=topic.id, isr=(2,))])  # type: ignore[arg-type]
    result = elect_leaders(image, 0, [("p", [0])])
    assert flat(result.response)[0].error.code == ErrorCode.preferred_leader_not_available and not result.records


def test_unclean_election_picks_a_live_replica_out_of_the_isr() -> None:
    image, manager, epochs = world()
    image = with_topic(image, "u", (2, 3))
    topic = image.topics.by_name["u"]
    image = apply(image, [PartitionChangeRecordV2(partition_id=0, topic_id=topic.id, isr=(2,))])  # type: ignore[arg-type]
    image, _ = commit(image, manager.process_heartbeat(image, heartbeat(2, epochs[2], image.offset, fence=True), 0.0))
    p = partition(image, "u")
    assert (p.leader, p.isr) == (-1, (2,))  # the last in-sync replica stays in the ISR, leaderless
    preferred = elect_leaders(image, 0, [("u", [0])])
    assert flat(preferred.response)[0].error.code == ErrorCode.preferred_leader_not_available
    image, outcomes = commit(image, elect_leaders(image, 1, [("u", [0])]))
    assert flat(outcomes)[0].error.code == ErrorCode.none
    p = partition(image, "u")
    assert (p.leader, p.isr, p.leader_recovery_state) == (3, (3,), RECOVERING)
    again = elect_leaders(image, 1, [("u", [0])])
    assert flat(again.response)[0].error.code == ErrorCode.election_not_needed


def test_unclean_election_needs_a_live_replica() -> None:
    image, manager, epochs = world()
    image = with_topic(image, "u", (2,))
    image, _ = commit(image, manager.process_heartbeat(image, heartbeat(2, epochs[2], image.offset, fence=True), 0.0))
    result = elect_leaders(image, 1, [("u", [0])])
    assert flat(result.response)[0].error.code == ErrorCode.eligible_leaders_not_available


def test_an_unknown_election_type_fails_the_request() -> None:
    image, _, _ = world()
    result = elect_leaders(image, 7, None)
    assert not isinstance(result.response, list) and result.response.code == ErrorCode.invalid_request


def test_alter_partition_checks_in_kafkas_order() -> None:
    image, manager, epochs = world()
    image = with_topic(image, "t", (1, 2, 3))
    topic_id = image.topics.by_name["t"].id

    def code(broker_id: int, change: IsrChange, epoch: int | None = None) -> ErrorCode:
        epoch = epochs[broker_id] if epoch is None else epoch
        request = AlterPartitionRequest(broker_id, epoch, ((topic_id, (change,)),))
        reply = alter_partition(image, request, unclean=never).response
        return reply.error.code if reply.error.code else reply.topics[0][1][0].error

    ok = isr_change(image, "t", (1, 2))
    assert code(1, ok) == ErrorCode.none
    assert code(1, ok, epoch=12345) == ErrorCode.stale_broker_epoch
    assert code(9, ok, epoch=1) == ErrorCode.stale_broker_epoch
    assert code(1, IsrChange(4, 0, 0, ((1, -1),))) == ErrorCode.unknown_topic_or_partition
    assert code(1, isr_change(image, "t", (1,), leader_epoch=1)) == ErrorCode.not_controller
    assert code(1, isr_change(image, "t", (1,), partition_epoch=1)) == ErrorCode.not_controller
    assert code(1, isr_change(image, "t", (1,), leader_epoch=-1)) == ErrorCode.fenced_leader_epoch
    assert code(2, isr_change(image, "t", (1,))) == ErrorCode.invalid_request  # not the leader
    assert code(1, isr_change(image, "t", (1,), partition_epoch=-1)) == ErrorCode.invalid_update_version
    assert code(1, isr_change(image, "t", (1, 4))) == ErrorCode.invalid_request  # 4 is not a replica
    assert code(1, isr_change(image, "t", (1, 1))) == ErrorCode.invalid_request
    assert code(1, isr_change(image, "t", (2, 3))) == ErrorCode.invalid_request  # without the leader
    assert code(1, isr_change(image, "t", (1,), leader_recovery_state=RECOVERING)) == ErrorCode.invalid_request
    stale = IsrChange(0, 0, 0, ((1, -1), (2, epochs[2] + 1)))
    assert code(1, stale) == ErrorCode.ineligible_replica
    fenced, _ = commit(image, manager.process_heartbeat(image, heartbeat(3, epochs[3], image.offset, fence=True), 0))
    request = AlterPartitionRequest(1, epochs[1], ((topic_id, (isr_change(fenced, "t", (1, 2, 3)),)),))
    reply = alter_partition(fenced, request, unclean=never).response
    assert reply.topics[0][1][0].error == ErrorCode.ineligible_replica
    unknown = AlterPartitionRequest(1, epochs[1], ((None, (ok,)),))
    assert alter_partition(image, unknown, unclean=always).response.topics[0][1][0].error == ErrorCode.unknown_topic_id
