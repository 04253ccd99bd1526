"""DeleteTopics on the controller (docs/topics-and-configs.md), the DeleteTopicPolicy and v7 validate_only (KIP-934)."""

from __future__ import annotations

import datetime
import uuid

import pytest
from kio.schema.delete_topics.v5.request import DeleteTopicsRequest as DeleteTopicsRequestV5
from kio.schema.delete_topics.v6.request import DeleteTopicsRequest as DeleteTopicsRequestV6
from kio.schema.delete_topics.v6.request import DeleteTopicState
from kio.schema.errors import ErrorCode
from kio.schema.types import TopicName
from kio.static.primitive import i32Timedelta
from topic_support import RecordingDeletePolicy, apply, cluster, manager, with_topic

from ksteward.controller.topics import ApiError, DeleteTopicResult, TopicRef, TopicSettings
from ksteward.metadata.records import RemoveTopicRecord
from ksteward.policy import Policies
from ksteward.policy.builtin import ProtectInternalTopics

ORDERS, PAYMENTS, OFFSETS = uuid.UUID(int=0xA1), uuid.UUID(int=0xA2), uuid.UUID(int=0xA3)
UNKNOWN_ID = uuid.UUID(int=0xEE)


@pytest.fixture
def image():  # type: ignore[no-untyped-def]
    image = with_topic(cluster(), "orders", [(1,), (2,)], {"retention.ms": "5"}, topic_id=ORDERS)
    image = with_topic(image, "payments", topic_id=PAYMENTS)
    return with_topic(image, "__consumer_offsets", topic_id=OFFSETS)


def results(done) -> set[DeleteTopicResult]:  # type: ignore[no-untyped-def]
    return set(done.response)


def ok(name: str, topic_id: uuid.UUID) -> DeleteTopicResult:
    return DeleteTopicResult(name, topic_id, ApiError(ErrorCode.none))


def err(name: str | None, topic_id: uuid.UUID | None, code: ErrorCode, message: str | None) -> DeleteTopicResult:
    return DeleteTopicResult(name, topic_id, ApiError(code, message))


UNKNOWN_NAME = "This server does not host this topic-partition."
UNKNOWN_ID_MESSAGE = "This server does not host this topic ID."
DENIED = "Topic authorization failed."


def test_delete_by_name_and_by_id(image) -> None:  # type: ignore[no-untyped-def]
    done = manager().delete_topics(image, [TopicRef("orders"), TopicRef(topic_id=PAYMENTS)], api_version=6)
    assert results(done) == {ok("orders", ORDERS), ok("payments", PAYMENTS)}
    assert set(done.records) == {RemoveTopicRecord(topic_id=ORDERS), RemoveTopicRecord(topic_id=PAYMENTS)}
    after = apply(image, done.records)
    assert set(after.topics.by_name) == {"__consumer_offsets"}
    assert (2, "orders") not in after.configs  # configs go with the topic on replay


def test_unknown_name_and_id(image) -> None:  # type: ignore[no-untyped-def]
    done = manager().delete_topics(image, [TopicRef("nope"), TopicRef(topic_id=UNKNOWN_ID)], api_version=6)
    assert results(done) == {
        err("nope", None, ErrorCode.unknown_topic_or_partition, UNKNOWN_NAME),
        err(None, UNKNOWN_ID, ErrorCode.unknown_topic_id, UNKNOWN_ID_MESSAGE),
    }
    assert done.records == ()


def test_duplicates_and_malformed_entries(image) -> None:  # type: ignore[no-untyped-def]
    refs = [
        TopicRef("orders"), TopicRef("orders"), TopicRef("orders"),
        TopicRef(topic_id=PAYMENTS), TopicRef(topic_id=PAYMENTS),
        TopicRef(), TopicRef("orders", ORDERS),
    ]  # fmt: skip
    done = manager().delete_topics(image, refs, api_version=6)
    assert sorted(done.response, key=repr) == sorted(
        [
            err("orders", None, ErrorCode.invalid_request, "Duplicate topic name."),
            err(None, PAYMENTS, ErrorCode.invalid_request, "Duplicate topic id."),
            err(None, None, ErrorCode.invalid_request, "Neither topic name nor id were specified."),
            err("orders", ORDERS, ErrorCode.invalid_request, "You may not specify both topic name and topic id."),
        ],
        key=repr,
    )
    assert done.records == ()


def test_name_that_maps_to_a_supplied_id(image) -> None:  # type: ignore[no-untyped-def]
    done = manager().delete_topics(image, [TopicRef(topic_id=ORDERS), TopicRef("orders")], api_version=6)
    message = "The provided topic name maps to an ID that was already supplied."
    assert results(done) == {err("orders", ORDERS, ErrorCode.invalid_request, message)}
    assert done.records == ()


@pytest.mark.parametrize(
    ("api_version", "code"),
    [(1, ErrorCode.invalid_request), (2, ErrorCode.invalid_request), (3, ErrorCode.topic_deletion_disabled),
     (6, ErrorCode.topic_deletion_disabled)],
)  # fmt: skip
def test_deletion_disabled_fails_the_whole_request(image, api_version: int, code: ErrorCode) -> None:  # type: ignore[no-untyped-def]
    m = manager(settings=TopicSettings(delete_topic_enable=False))
    policy = RecordingDeletePolicy()
    m.policies = Policies(delete_topic=policy)
    done = m.delete_topics(image, [TopicRef("orders"), TopicRef(topic_id=UNKNOWN_ID)], api_version=api_version)
    assert list(done.response) == [err("orders", None, code, None), err(None, UNKNOWN_ID, code, None)]
    assert done.records == () and policy.seen == []


def test_authorization_decides_between_unknown_and_denied(image) -> None:  # type: ignore[no-untyped-def]
    describable = {"orders", "payments", "ghost"}
    deletable = {"orders"}
    done = manager().delete_topics(
        image,
        [TopicRef("orders"), TopicRef("payments"), TopicRef("ghost"), TopicRef("hidden"),
         TopicRef(topic_id=OFFSETS), TopicRef(topic_id=UNKNOWN_ID)],
        api_version=6,
        may_describe=lambda names: describable & set(names),
        may_delete=lambda names: deletable & set(names),
    )  # fmt: skip
    assert results(done) == {
        ok("orders", ORDERS),
        err("payments", None, ErrorCode.topic_authorization_failed, DENIED),  # describable, not deletable
        err("ghost", None, ErrorCode.unknown_topic_or_partition, UNKNOWN_NAME),  # describable, absent
        err("hidden", None, ErrorCode.topic_authorization_failed, DENIED),  # not describable: existence hidden
        err(None, OFFSETS, ErrorCode.topic_authorization_failed, DENIED),  # by id, name not describable
        err(None, UNKNOWN_ID, ErrorCode.unknown_topic_id, UNKNOWN_ID_MESSAGE),  # ids are not secret
    }
    assert list(done.records) == [RemoveTopicRecord(topic_id=ORDERS)]


def test_by_id_denied_but_describable_shows_the_name(image) -> None:  # type: ignore[no-untyped-def]
    done = manager().delete_topics(
        image, [TopicRef(topic_id=PAYMENTS)], api_version=6, may_describe=lambda n: set(n), may_delete=lambda n: set()
    )
    assert results(done) == {err("payments", PAYMENTS, ErrorCode.topic_authorization_failed, DENIED)}


def test_results_are_shuffled(image) -> None:  # type: ignore[no-untyped-def]
    refs = [TopicRef(f"missing-{i}") for i in range(20)]
    orders = {tuple(r.name for r in manager(seed=seed).delete_topics(image, refs, api_version=6).response)
              for seed in range(5)}  # fmt: skip
    assert len(orders) > 1


def test_delete_policy_sees_name_and_id_and_refuses_per_topic(image) -> None:  # type: ignore[no-untyped-def]
    policy = RecordingDeletePolicy(refuse={"orders": "orders is precious"})
    done = manager(policies=Policies(delete_topic=policy)).delete_topics(
        image, [TopicRef("orders"), TopicRef(topic_id=PAYMENTS), TopicRef("nope")], api_version=6
    )
    assert {(m.topic, m.topic_id) for m in policy.seen} == {("orders", ORDERS), ("payments", PAYMENTS)}
    assert err("orders", ORDERS, ErrorCode.policy_violation, "orders is precious") in results(done)
    assert ok("payments", PAYMENTS) in results(done)
    assert list(done.records) == [RemoveTopicRecord(topic_id=PAYMENTS)]


def test_delete_policy_runs_after_authorization(image) -> None:  # type: ignore[no-untyped-def]
    policy = RecordingDeletePolicy()
    manager(policies=Policies(delete_topic=policy)).delete_topics(
        image, [TopicRef("orders")], api_version=6, may_delete=lambda names: set()
    )
    assert policy.seen == []


def test_protect_internal_topics_stops_a_fully_authorized_caller(image) -> None:  # type: ignore[no-untyped-def]
    protect = ProtectInternalTopics()
    protect.configure({"protect.internal.topics.regex": "pay.*"})
    done = manager(policies=Policies(delete_topic=protect)).delete_topics(
        image, [TopicRef("__consumer_offsets"), TopicRef("payments"), TopicRef("orders")], api_version=6
    )
    codes = {r.name: r.error.code for r in done.response}
    assert codes == {
        "__consumer_offsets": ErrorCode.policy_violation,
        "payments": ErrorCode.policy_violation,
        "orders": ErrorCode.none,
    }
    assert list(done.records) == [RemoveTopicRecord(topic_id=ORDERS)]


def test_validate_only_runs_every_check_and_policy_and_deletes_nothing(image) -> None:  # type: ignore[no-untyped-def]
    policy = RecordingDeletePolicy(refuse={"payments": "no"})
    charged: list[int] = []
    m = manager(policies=Policies(delete_topic=policy))
    refs = [TopicRef("orders"), TopicRef("payments"), TopicRef("nope")]
    checked = m.delete_topics(image, refs, api_version=7, validate_only=True, charge=lambda n: charged.append(n))
    assert checked.records == ()
    assert results(checked) == {
        ok("orders", ORDERS),
        err("payments", PAYMENTS, ErrorCode.policy_violation, "no"),
        err("nope", None, ErrorCode.unknown_topic_or_partition, UNKNOWN_NAME),
    }
    assert len(policy.seen) == 2 and charged == [2]
    real = m.delete_topics(image, refs, api_version=7)
    assert results(real) == results(checked) and list(real.records) == [RemoveTopicRecord(topic_id=ORDERS)]


def test_policy_crash_fails_that_topic(image) -> None:  # type: ignore[no-untyped-def]
    m = manager(policies=Policies(delete_topic=RecordingDeletePolicy(crash=True)))
    done = m.delete_topics(image, [TopicRef("orders")], api_version=6)
    assert results(done) == {err("orders", ORDERS, ErrorCode.unknown_server_error, None)}


def test_quota_charge_refuses_a_topic(image) -> None:  # type: ignore[no-untyped-def]
    quota = ApiError(ErrorCode.throttling_quota_exceeded, "slow down")
    done = manager().delete_topics(
        image, [TopicRef("orders"), TopicRef("payments")], api_version=6, charge=lambda n: quota if n == 2 else None
    )
    assert results(done) == {err("orders", ORDERS, quota.code, quota.message), ok("payments", PAYMENTS)}


def test_topic_refs_from_kio() -> None:
    v5 = DeleteTopicsRequestV5(
        topic_names=(TopicName("a"), TopicName("b")), timeout=i32Timedelta.parse(datetime.timedelta(seconds=1))
    )
    assert TopicRef.list_from_kio(v5) == [TopicRef("a"), TopicRef("b")]
    v6 = DeleteTopicsRequestV6(
        topics=(DeleteTopicState(name=TopicName("a"), topic_id=None), DeleteTopicState(topic_id=ORDERS)),
        timeout=i32Timedelta.parse(datetime.timedelta(seconds=1)),
    )
    assert TopicRef.list_from_kio(v6) == [TopicRef("a"), TopicRef(None, ORDERS)]
