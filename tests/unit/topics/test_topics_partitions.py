"""CreatePartitions v0-v3 on the controller: increase only, assignments checked, validate_only."""

from __future__ import annotations

import datetime
import uuid

import pytest
from kio.schema.create_partitions.v3.request import (
    CreatePartitionsAssignment,
    CreatePartitionsRequest,
    CreatePartitionsTopic,
)
from kio.schema.errors import ErrorCode
from kio.schema.types import BrokerId, TopicName
from kio.static.primitive import i32, i32Timedelta
from topic_support import apply, broker, cluster, manager, with_topic

from ksteward.controller.topics import ApiError, CreatePartitionsResult, NewPartitions
from ksteward.metadata.records import PartitionRecordV2

TOPIC_ID = uuid.UUID(int=0xB1)


@pytest.fixture
def image():  # type: ignore[no-untyped-def]
    image = cluster(broker(1), broker(2), broker(3), broker(4, fenced=True))
    return with_topic(image, "orders", [(1, 2), (2, 3)], topic_id=TOPIC_ID)


def error_of(done, name: str = "orders") -> tuple[ErrorCode, str | None]:  # type: ignore[no-untyped-def]
    [result] = [r for r in done.response if r.name == name]
    return result.error.code, result.error.message


def test_increase_places_new_partitions_after_the_existing_ones(image) -> None:  # type: ignore[no-untyped-def]
    done = manager().create_partitions(image, [NewPartitions("orders", 5)])
    assert list(done.response) == [CreatePartitionsResult("orders")]
    assert [p.partition_id for p in done.records] == [2, 3, 4]
    for p in done.records:
        assert isinstance(p, PartitionRecordV2) and p.topic_id == TOPIC_ID
        assert len(p.replicas) == 2 and len(set(p.replicas)) == 2 and p.leader == p.isr[0] != 4
        assert 4 not in p.isr
    after = apply(image, done.records)
    assert sorted(after.topics.by_name["orders"].partitions) == [0, 1, 2, 3, 4]


def test_manual_assignments_for_the_new_partitions(image) -> None:  # type: ignore[no-untyped-def]
    done = manager().create_partitions(image, [NewPartitions("orders", 4, ((3, 1), (4, 2)))])
    assert error_of(done) == (ErrorCode.none, None)
    assert [(p.partition_id, p.replicas, p.isr, p.leader) for p in done.records] == [
        (2, (3, 1), (3, 1), 3),
        (3, (4, 2), (2,), 2),
    ]


def test_same_count() -> None:
    image = with_topic(cluster(), "orders", [(1,), (2,)])
    done = manager().create_partitions(image, [NewPartitions("orders", 2)])
    assert error_of(done) == (ErrorCode.invalid_partitions, "Topic already has 2 partition(s).")


@pytest.mark.parametrize("count", [1, 0, -1])
def test_decrease(image, count: int) -> None:  # type: ignore[no-untyped-def]
    done = manager().create_partitions(image, [NewPartitions("orders", count)])
    message = f"The topic orders currently has 2 partition(s); {count} would not be an increase."
    assert error_of(done) == (ErrorCode.invalid_partitions, message)


def test_unknown_topic(image) -> None:  # type: ignore[no-untyped-def]
    done = manager().create_partitions(image, [NewPartitions("nope", 3)])
    assert error_of(done, "nope") == (ErrorCode.unknown_topic_or_partition, None)


def test_duplicates_then_unauthorized_then_the_rest(image) -> None:  # type: ignore[no-untyped-def]
    image = with_topic(image, "payments", [(1,)])
    done = manager().create_partitions(
        image,
        [NewPartitions("orders", 3), NewPartitions("dup", 3), NewPartitions("payments", 2), NewPartitions("dup", 4)],
        may_alter=lambda names: {"orders"} & set(names),
    )
    assert list(done.response) == [
        CreatePartitionsResult("dup", ApiError(ErrorCode.invalid_request, "Duplicate topic name.")),
        CreatePartitionsResult("payments", ApiError(ErrorCode.topic_authorization_failed)),
        CreatePartitionsResult("orders"),
    ]
    assert [p.topic_id for p in done.records] == [TOPIC_ID]


@pytest.mark.parametrize(
    ("assignments", "code", "message"),
    [
        (((1, 2),), ErrorCode.invalid_replica_assignment,
         "Attempted to add 2 additional partition(s), but only 1 assignment(s) were specified."),
        (((1, 2), (1,)), ErrorCode.invalid_replica_assignment,
         "The manual partition assignment includes a partition with 1 replica(s), but this is not consistent "
         "with previous partitions, which have 2 replica(s)."),
        (((1, 2), (1, 9)), ErrorCode.invalid_replica_assignment,
         "The manual partition assignment includes broker 9, but no such broker is registered."),
        (((1, 1), (1, 2)), ErrorCode.invalid_replica_assignment,
         "The manual partition assignment includes the broker 1 more than once."),
        (((1, 2), ()), ErrorCode.invalid_replica_assignment,
         "The manual partition assignment includes an empty replica list."),
    ],
)  # fmt: skip
def test_invalid_assignments(image, assignments, code, message) -> None:  # type: ignore[no-untyped-def]
    done = manager().create_partitions(image, [NewPartitions("orders", 4, assignments)])
    assert error_of(done) == (code, message) and done.records == ()


def test_assignment_of_only_fenced_brokers() -> None:
    image = with_topic(cluster(broker(1), broker(4, fenced=True)), "orders", [(1,)])
    done = manager().create_partitions(image, [NewPartitions("orders", 3, ((1,), (4,)))])
    message = (
        "All brokers specified in the manual partition assignment for partition 2 are fenced or in controlled shutdown."
    )
    assert error_of(done) == (ErrorCode.invalid_replica_assignment, message)


def test_placement_failure_keeps_the_placers_message() -> None:
    image = with_topic(cluster(broker(1), broker(2), broker(3)), "wide", [(1, 2, 3)])
    image = apply(image, [broker(3, shutting_down=True)])
    done = manager().create_partitions(image, [NewPartitions("wide", 2)])
    message = "The target replication factor of 3 cannot be reached because only 2 broker(s) are registered."
    assert error_of(done, "wide") == (ErrorCode.invalid_replication_factor, message)


def test_validate_only_checks_and_writes_nothing(image) -> None:  # type: ignore[no-untyped-def]
    charged: list[int] = []
    done = manager().create_partitions(
        image, [NewPartitions("orders", 6), NewPartitions("nope", 2)], validate_only=True, charge=charged.append
    )
    assert done.records == () and charged == [4]
    assert error_of(done) == (ErrorCode.none, None)
    assert error_of(done, "nope")[0] == ErrorCode.unknown_topic_or_partition


def test_quota_charge_refuses(image) -> None:  # type: ignore[no-untyped-def]
    quota = ApiError(ErrorCode.throttling_quota_exceeded, "slow")
    done = manager().create_partitions(image, [NewPartitions("orders", 3)], charge=lambda n: quota)
    assert error_of(done) == (quota.code, quota.message) and done.records == ()


def test_record_limit_fails_the_topic_that_overflows() -> None:
    image = with_topic(with_topic(cluster(), "a", [(1,)]), "b", [(1,)])
    done = manager().create_partitions(image, [NewPartitions("a", 9_001), NewPartitions("b", 1_002)])
    assert error_of(done, "a") == (ErrorCode.none, None)
    assert error_of(done, "b") == (ErrorCode.unknown_server_error, None)
    assert len(done.records) == 9_000


def test_from_kio() -> None:
    request = CreatePartitionsRequest(
        topics=(
            CreatePartitionsTopic(name=TopicName("a"), count=i32(3), assignments=None),
            CreatePartitionsTopic(
                name=TopicName("b"),
                count=i32(2),
                assignments=(CreatePartitionsAssignment(broker_ids=(BrokerId(2), BrokerId(1))),),
            ),
        ),
        timeout=i32Timedelta.parse(datetime.timedelta(seconds=1)),
        validate_only=False,
    )
    assert [NewPartitions.from_kio(t) for t in request.topics] == [
        NewPartitions("a", 3),
        NewPartitions("b", 2, ((2, 1),)),
    ]


def test_huge_count_fails_without_placing_every_partition() -> None:
    image = with_topic(cluster(), "a", [(1,)])
    done = manager().create_partitions(image, [NewPartitions("a", 2**31 - 1)])
    assert error_of(done, "a") == (ErrorCode.unknown_server_error, None) and done.records == ()
