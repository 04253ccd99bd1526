"""CreateAcls v4 on the controller (``controller.acls.replace_acls``, ``Controller.replace_acls``) and its wire
entities (``protocol.acl_transactions``): one batch or nothing, the precondition on the ACLs' last change, and
the bounds."""

from __future__ import annotations

import asyncio
import struct
from typing import Any

import pytest
from kio.schema.errors import ErrorCode

from ksteward.authorizer import AclBinding, AclBindingFilter
from ksteward.controller import acls as acl_control
from ksteward.controller.acls import replace_acls
from ksteward.controller.active import Controller
from ksteward.controller.result import NO_ERROR, ApiError
from ksteward.metadata.delta import MetadataDelta
from ksteward.metadata.image import EMPTY_IMAGE, MetadataImage, acl_binding
from ksteward.metadata.records import NoOpRecord, RegisterBrokerRecord
from ksteward.protocol.apis import ApiKey
from ksteward.protocol.build import build
from ksteward.protocol.codec import decode_request, encode_request, request_class
from ksteward.protocol.errors import InvalidRequestError
from ksteward.server.api_table import broker_api_table


def acl(name: str, principal: str = "User:bob", pattern: str = "LITERAL", operation: str = "READ") -> AclBinding:
    return AclBinding("TOPIC", name, pattern, principal, "*", operation, "ALLOW")


def apply(image: MetadataImage, records: Any) -> MetadataImage:
    delta = MetadataDelta(image)
    for record in records:
        delta.replay(record)
    return delta.apply(offset=image.offset + max(len(records), 1))


def stored(image: MetadataImage) -> set[AclBinding]:
    return {acl_binding(record) for record in image.acls.values()}


def with_acls(*acls: AclBinding) -> MetadataImage:
    result = replace_acls(EMPTY_IMAGE, list(acls), [], unchanged_since=-1)
    return apply(EMPTY_IMAGE, result.records)


def test_creations_and_deletions_are_one_batch() -> None:
    image = with_acls(acl("a"), acl("b"))
    result = replace_acls(image, [acl("c"), acl("a")], [acl("a").to_filter(), acl("b").to_filter()],
                          unchanged_since=image.offset)  # fmt: skip
    assert result.response.error == NO_ERROR
    # a is matched and named again: kept, so neither removed nor re-created
    assert (result.response.created, result.response.deleted) == (1, 1)
    assert stored(apply(image, result.records)) == {acl("a"), acl("c")}


def test_a_broad_filter_is_matched_against_the_acls_before_the_change() -> None:
    image = with_acls(acl("a"), acl("b", principal="User:alice"))
    broad = AclBindingFilter("TOPIC", None, "ANY", "User:bob", None, "ANY", "ANY")
    result = replace_acls(image, [acl("z")], [broad], unchanged_since=-1)
    assert stored(apply(image, result.records)) == {acl("b", principal="User:alice"), acl("z")}


def test_an_acl_change_after_the_precondition_refuses_everything() -> None:
    image = with_acls(acl("a"))
    planned_at = image.offset
    later = apply(image, replace_acls(image, [acl("b")], [], unchanged_since=-1).records)
    result = replace_acls(later, [acl("c")], [acl("a").to_filter()], unchanged_since=planned_at)
    assert result.records == ()
    assert result.response.error.code == ErrorCode.invalid_update_version
    assert f"changed at metadata offset {later.offset}, after offset {planned_at}" in str(result.response.error.message)
    assert result.response.changed_at == later.offset


def test_records_that_do_not_touch_acls_leave_the_precondition_alone() -> None:
    image = with_acls(acl("a"))
    planned_at = image.offset
    broker = RegisterBrokerRecord(broker_id=2, is_migrating_zk_broker=False, incarnation_id=None, broker_epoch=7,
                                  end_points=(), features=(), rack=None, fenced=True, in_controlled_shutdown=False,
                                  log_dirs=())  # fmt: skip
    later = apply(apply(image, [NoOpRecord()]), [broker])
    assert later.offset > planned_at and later.acls.changed_at == planned_at
    result = replace_acls(later, [acl("b")], [], unchanged_since=planned_at)
    assert result.response.error == NO_ERROR and len(result.records) == 1


def test_one_invalid_entry_applies_nothing_and_names_it() -> None:
    bad = AclBinding("CLUSTER", "not-kafka-cluster", "LITERAL", "User:bob", "*", "ALTER", "ALLOW")
    unparsable = ApiError(ErrorCode.invalid_request, "an ACL's operation cannot be ANY")
    result = replace_acls(EMPTY_IMAGE, [acl("ok"), bad, unparsable], [], unchanged_since=-1)
    assert result.records == ()
    assert result.response.error.code == ErrorCode.invalid_request
    assert [i for i, _ in result.response.creation_errors] == [1, 2]


def test_an_unknown_filter_field_is_a_deletion_error() -> None:
    unknown = AclBindingFilter("TOPIC", "a", "UNKNOWN", None, None, "ANY", "ANY")
    result = replace_acls(EMPTY_IMAGE, [], [unknown], unchanged_since=-1)
    assert result.response.error.code == ErrorCode.invalid_request
    assert [i for i, _ in result.response.deletion_errors] == [0]


def test_far_more_than_kafkas_10000_records_are_one_change() -> None:
    many = [acl(f"t{i}") for i in range(25_000)]
    result = replace_acls(EMPTY_IMAGE, many, [], unchanged_since=-1)
    assert result.response.error == NO_ERROR and len(result.records) == 25_000


def test_too_large_a_change_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(acl_control, "MAX_ACL_TRANSACTION_RECORDS", 3)
    result = replace_acls(EMPTY_IMAGE, [acl(f"t{i}") for i in range(4)], [], unchanged_since=-1)
    assert result.records == ()
    assert result.response.error.code == ErrorCode.policy_violation
    monkeypatch.setattr(acl_control, "MAX_ACL_TRANSACTION_RECORDS", 10)
    monkeypatch.setattr(acl_control, "MAX_ACL_TRANSACTION_BYTES", 1000)
    result = replace_acls(EMPTY_IMAGE, [acl("x" * 400, principal=f"User:{i}") for i in range(3)], [],
                          unchanged_since=-1)  # fmt: skip
    assert result.response.error.code == ErrorCode.policy_violation


class _Writer:
    """The controller's writer, in memory: each batch applied to the image at its own offsets."""

    def __init__(self, image: MetadataImage) -> None:
        self.latest = image
        self.batches: list[list[Any]] = []

    def append(self, records: list[Any]) -> asyncio.Future[int]:
        self.latest = apply(self.latest, records)
        self.batches.append(records)
        future: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        future.set_result(self.latest.offset)
        return future


def test_the_controller_writes_one_batch_and_reports_its_offset() -> None:
    writer = _Writer(with_acls(acl("a")))
    controller = Controller(writer)

    async def run(**kwargs: Any) -> Any:
        return await controller.replace_acls([acl("b")], [acl("a").to_filter()], unchanged_since=-1, **kwargs)

    checked = asyncio.run(run(validate_only=True))
    assert writer.batches == [] and (checked.created, checked.deleted) == (1, 1)
    done = asyncio.run(run(validate_only=False))
    assert len(writer.batches) == 1 and len(writer.batches[0]) == 2
    assert done.changed_at == writer.latest.offset == writer.latest.acls.changed_at
    assert stored(writer.latest) == {acl("b")}


# --- the wire --------------------------------------------------------------------------------------------------

SERVED = broker_api_table().served


def _request(values: dict[str, Any]) -> bytes:
    body = build(request_class(ApiKey.CREATE_ACLS, 4), values)
    return encode_request(ApiKey.CREATE_ACLS, 4, 7, "t", body)


def test_the_request_round_trips() -> None:
    creation = {"resource_type": 2, "resource_name": "a", "resource_pattern_type": 3, "principal": "User:x",
                "host": "*", "operation": 3, "permission_type": 3}  # fmt: skip
    deletion = {"resource_type_filter": 2, "resource_name_filter": None, "pattern_type_filter": 1,
                "principal_filter": "User:y", "host_filter": None, "operation": 1, "permission_type": 1}  # fmt: skip
    values = {"creations": [creation], "deletions": [deletion], "acls_unchanged_since": 41, "validate_only": True}
    decoded = decode_request(_request(values), SERVED)
    body = decoded.body  # type: ignore[union-attr]
    assert (int(body.acls_unchanged_since), body.validate_only) == (41, True)
    assert body.creations[0].resource_name == "a" and body.deletions[0].principal_filter == "User:y"


def test_a_declared_count_the_frame_cannot_hold_is_refused_before_allocating() -> None:
    payload = _request({"creations": [], "deletions": []})
    # header (api key, version, correlation id, client id "t", no tags), then creations: a compact array that
    # declares 2**31 entries in the few bytes left
    header_end = struct.calcsize(">hhih") + 1 + 1
    bomb = payload[:header_end] + b"\x81\x80\x80\x80\x08" + payload[header_end + 1 :]
    with pytest.raises(InvalidRequestError, match="collection of size"):
        decode_request(bomb, SERVED)


def test_the_fast_binding_of_a_record_is_the_constructors() -> None:
    """``acl_binding``'s fast path gives what ``AclBinding(...)`` gives, for every code, or raises as it does."""
    import itertools

    from kio.static.primitive import i8

    from ksteward.authorizer import InvalidAclError
    from ksteward.metadata.records import AccessControlEntryRecord

    for rt, pt, op, perm in itertools.product(range(10), range(6), range(16), range(5)):
        record = AccessControlEntryRecord(id=None, resource_type=i8(rt), resource_name="r", pattern_type=i8(pt),
                                          principal="User:a", host="*", operation=i8(op),
                                          permission_type=i8(perm))  # fmt: skip
        try:
            expected = AclBinding(rt, "r", pt, "User:a", "*", op, perm)
        except InvalidAclError:
            with pytest.raises(InvalidAclError):
                acl_binding(record)
            continue
        got = acl_binding(record)
        assert got == expected and hash(got) == hash(expected)
        fields = ("resource_type", "pattern_type", "operation", "permission_type")
        assert [getattr(got, f) for f in fields] == [getattr(expected, f) for f in fields]
