"""CreateAcls and DeleteAcls on the controller (Kafka's ``AclControlManager``): pure calls on images.

Each test builds an image, asks ``AclControlManager`` for the records and results of one request, and
replays the records to check what the next image holds. The ACL section of the image (``AclsImage``) is
checked alongside: its 7-tuple index is what duplicates are found in and what filters scan.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable

import pytest
from kio.schema.errors import ErrorCode
from kio.static.primitive import i8

from ksteward.authorizer import AclBinding, AclBindingFilter
from ksteward.controller.acls import AclControlManager, AclDeletionResult
from ksteward.controller.result import EXCESSIVELY_LARGE_BATCH, MAX_RECORDS_PER_USER_OP, NO_ERROR, ApiError
from ksteward.metadata.delta import MetadataDelta
from ksteward.metadata.image import EMPTY_IMAGE, MetadataImage, acl_binding
from ksteward.metadata.records import AccessControlEntryRecord, MetadataRecord, RemoveAccessControlEntryRecord

MANAGER = AclControlManager()


def acl(
    name: str = "orders",
    principal: str = "User:bob",
    operation: str = "READ",
    permission: str = "ALLOW",
    *,
    resource_type: str = "TOPIC",
    pattern: str = "LITERAL",
    host: str = "*",
) -> AclBinding:
    return AclBinding(resource_type, name, pattern, principal, host, operation, permission)


def apply(image: MetadataImage, records: Iterable[MetadataRecord]) -> MetadataImage:
    delta = MetadataDelta(image)
    for record in records:
        delta.replay(record)
    return delta.apply(offset=image.offset + 1)


def created(image: MetadataImage, *acls: AclBinding) -> MetadataImage:
    result = MANAGER.create_acls(image, acls)
    assert result.response == [NO_ERROR] * len(acls)
    return apply(image, result.records)


def stored(image: MetadataImage) -> set[AclBinding]:
    return {acl_binding(record) for record in image.acls.values()}


def invalid(message: str) -> ApiError:
    return ApiError(ErrorCode.invalid_request, message)


# --- CreateAcls ---------------------------------------------------------------------------------


def test_create_writes_one_record_per_new_acl() -> None:
    a, b = acl(), acl("payments", operation="WRITE", pattern="PREFIXED")
    result = MANAGER.create_acls(EMPTY_IMAGE, [a, b])
    assert result.response == [NO_ERROR, NO_ERROR]
    assert all(isinstance(r, AccessControlEntryRecord) for r in result.records)
    assert len({r.id for r in result.records}) == 2
    image = apply(EMPTY_IMAGE, result.records)
    assert stored(image) == {a, b}
    assert set(image.acls.by_binding) == {a, b}
    assert {image.acls.by_binding[a], image.acls.by_binding[b]} == {r.id for r in result.records}


def test_record_carries_the_wire_codes() -> None:
    (record,) = MANAGER.create_acls(EMPTY_IMAGE, [acl(host="10.0.0.1", permission="DENY")]).records
    assert (record.resource_type, record.pattern_type, record.operation, record.permission_type) == (
        i8(2), i8(3), i8(3), i8(2),
    )  # fmt: skip
    assert (record.resource_name, record.principal, record.host) == ("orders", "User:bob", "10.0.0.1")


def test_duplicate_of_a_stored_acl_succeeds_and_writes_nothing() -> None:
    image = created(EMPTY_IMAGE, acl())
    result = MANAGER.create_acls(image, [acl(), acl("other")])
    assert result.response == [NO_ERROR, NO_ERROR]
    assert [acl_binding(r) for r in result.records] == [acl("other")]


def test_duplicate_within_one_request_is_written_once() -> None:
    result = MANAGER.create_acls(EMPTY_IMAGE, [acl(), acl(), acl()])
    assert result.response == [NO_ERROR] * 3
    assert len(result.records) == 1


@pytest.mark.parametrize(
    ("binding", "error"),
    [
        (
            acl("other", resource_type="CLUSTER"),
            invalid("The only valid name for the CLUSTER resource is kafka-cluster"),
        ),
        (acl(""), invalid("Invalid empty resource name")),
        (acl(resource_type="UNKNOWN"), invalid("Invalid resourceType UNKNOWN")),
        (acl(pattern="UNKNOWN"), invalid("Invalid patternType UNKNOWN")),
        (acl(operation="UNKNOWN"), invalid("Invalid operation UNKNOWN")),
        (acl(permission="UNKNOWN"), invalid("Invalid permissionType UNKNOWN")),
        (acl(principal="bob"), invalid("Could not parse principal from `bob`: expected principalType:principalName")),
        (acl(principal=":bob"), invalid("Could not parse principal from `:bob`: expected principalType:principalName")),
    ],
)
def test_an_invalid_creation_fails_alone(binding: AclBinding, error: ApiError) -> None:
    result = MANAGER.create_acls(EMPTY_IMAGE, [acl("before"), binding, acl("after")])
    assert result.response == [NO_ERROR, error, NO_ERROR]
    assert [acl_binding(r) for r in result.records] == [acl("before"), acl("after")]


def test_cluster_acl_on_kafka_cluster_is_valid() -> None:
    image = created(EMPTY_IMAGE, acl("kafka-cluster", resource_type="CLUSTER", operation="ALTER"))
    assert len(image.acls) == 1


def test_too_many_new_acls_fail_the_whole_request() -> None:
    creations = [acl(f"t{i}") for i in range(MAX_RECORDS_PER_USER_OP + 1)]
    result = MANAGER.create_acls(EMPTY_IMAGE, creations)
    assert list(result.records) == []
    assert result.response == [ApiError(ErrorCode.policy_violation, EXCESSIVELY_LARGE_BATCH)] * len(creations)


def test_the_limit_counts_records_not_creations() -> None:
    creations = [acl(f"t{i}") for i in range(MAX_RECORDS_PER_USER_OP)] + [acl("t0")]
    result = MANAGER.create_acls(EMPTY_IMAGE, creations)
    assert len(result.records) == MAX_RECORDS_PER_USER_OP
    assert result.response == [NO_ERROR] * len(creations)


def test_new_ids_avoid_the_stored_ones() -> None:
    image = created(EMPTY_IMAGE, *(acl(f"t{i}") for i in range(20)))
    records = MANAGER.create_acls(image, [acl(f"u{i}") for i in range(20)]).records
    assert not {r.id for r in records} & set(image.acls)


# --- DeleteAcls ---------------------------------------------------------------------------------


READ_ORDERS = acl()
WRITE_ORDERS = acl(operation="WRITE")
PREFIX_PAY = acl("pay", "User:alice", pattern="PREFIXED")
DENY_ALL = acl("*", "User:*", "ALL", "DENY")


@pytest.fixture
def four() -> MetadataImage:
    return created(EMPTY_IMAGE, READ_ORDERS, WRITE_ORDERS, PREFIX_PAY, DENY_ALL)


def removed_ids(records: Iterable[MetadataRecord]) -> set[uuid.UUID | None]:
    ids = set()
    for record in records:
        assert isinstance(record, RemoveAccessControlEntryRecord)
        ids.add(record.id)
    return ids


@pytest.mark.parametrize(
    ("acl_filter", "expected"),
    [
        (AclBindingFilter.ANY, {READ_ORDERS, WRITE_ORDERS, PREFIX_PAY, DENY_ALL}),
        (AclBindingFilter(resource_name="orders"), {READ_ORDERS, WRITE_ORDERS}),
        (AclBindingFilter(operation="WRITE"), {WRITE_ORDERS}),
        (AclBindingFilter(principal="User:*"), {DENY_ALL}),
        (AclBindingFilter(pattern_type="PREFIXED"), {PREFIX_PAY}),
        (AclBindingFilter("TOPIC", "payments", "MATCH"), {PREFIX_PAY, DENY_ALL}),
        (AclBindingFilter(permission_type="DENY"), {DENY_ALL}),
        (AclBindingFilter("GROUP"), set()),
    ],
)
def test_delete_with_a_filter(four: MetadataImage, acl_filter: AclBindingFilter, expected: set[AclBinding]) -> None:
    result = MANAGER.delete_acls(four, [acl_filter])
    (outcome,) = result.response
    assert outcome.error == NO_ERROR
    assert set(outcome.matching) == expected and len(outcome.matching) == len(expected)
    assert removed_ids(result.records) == {four.acls.by_binding[b] for b in expected}
    after = apply(four, result.records)
    assert stored(after) == stored(four) - expected
    assert set(after.acls.by_binding) == stored(four) - expected


def test_filters_match_the_acls_as_they_were_before_the_request(four: MetadataImage) -> None:
    result = MANAGER.delete_acls(four, [AclBindingFilter(resource_name="orders"), AclBindingFilter(operation="READ")])
    first, second = result.response
    assert set(first.matching) == {READ_ORDERS, WRITE_ORDERS}
    assert set(second.matching) == {READ_ORDERS, PREFIX_PAY}  # READ_ORDERS again: listed, removed once
    assert len(result.records) == 3
    assert stored(apply(four, result.records)) == {DENY_ALL}


@pytest.mark.parametrize(
    ("acl_filter", "message"),
    [
        (AclBindingFilter(resource_type="UNKNOWN"), "Unknown patternFilter."),
        (AclBindingFilter(pattern_type="UNKNOWN"), "Unknown patternFilter."),
        (AclBindingFilter(operation="UNKNOWN"), "Unknown entryFilter."),
        (AclBindingFilter(permission_type="UNKNOWN"), "Unknown entryFilter."),
    ],
)
def test_an_unknown_filter_fails_alone(four: MetadataImage, acl_filter: AclBindingFilter, message: str) -> None:
    result = MANAGER.delete_acls(four, [acl_filter, AclBindingFilter(operation="WRITE")])
    assert result.response == [AclDeletionResult(invalid(message)), AclDeletionResult(NO_ERROR, (WRITE_ORDERS,))]
    assert removed_ids(result.records) == {four.acls.by_binding[WRITE_ORDERS]}


def test_a_filter_that_would_pass_the_limit_fails_alone() -> None:
    image = created(EMPTY_IMAGE, *(acl(f"t{i}") for i in range(MAX_RECORDS_PER_USER_OP)))
    image = created(image, acl("x", "User:amy"))
    result = MANAGER.delete_acls(image, [AclBindingFilter(principal="User:amy"), AclBindingFilter.ANY])
    first, second = result.response
    assert first == AclDeletionResult(NO_ERROR, (acl("x", "User:amy"),))
    assert second == AclDeletionResult(ApiError(ErrorCode.unknown_server_error))
    assert len(result.records) == 1


def test_delete_on_an_empty_image_matches_nothing() -> None:
    result = MANAGER.delete_acls(EMPTY_IMAGE, [AclBindingFilter.ANY])
    assert result.response == [AclDeletionResult(NO_ERROR, ())]
    assert list(result.records) == []


# --- the image's ACL section ----------------------------------------------------------------------


def record(n: int, operation: int = 3) -> AccessControlEntryRecord:
    return AccessControlEntryRecord(
        id=uuid.UUID(int=n), resource_type=i8(2), resource_name="t", pattern_type=i8(3), principal="User:a",
        host="*", operation=i8(operation), permission_type=i8(3),
    )  # fmt: skip


def test_index_leaves_out_records_no_binding_can_hold() -> None:
    any_operation = record(7, operation=1)
    image = apply(EMPTY_IMAGE, [any_operation])
    assert image.acls[uuid.UUID(int=7)] is any_operation and len(image.acls) == 1
    assert dict(image.acls.by_binding) == {}
    assert list(apply(image, [RemoveAccessControlEntryRecord(id=uuid.UUID(int=7))]).acls) == []


def test_one_seven_tuple_under_two_ids_indexes_the_first() -> None:
    image = apply(EMPTY_IMAGE, [record(1), record(2)])
    binding = acl_binding(record(1))
    assert dict(image.acls.by_binding) == {binding: uuid.UUID(int=1)}
    after = apply(image, [RemoveAccessControlEntryRecord(id=uuid.UUID(int=2))])
    assert dict(after.acls.by_binding) == {binding: uuid.UUID(int=1)}
