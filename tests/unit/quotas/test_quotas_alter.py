"""AlterClientQuotas validation and record generation (Kafka's ClientQuotaControlManager)."""

from __future__ import annotations

import asyncio
import math
from collections.abc import Mapping
from typing import Any

import pytest
from kio.schema.errors import ErrorCode

from ksteward.controller.active import Controller
from ksteward.controller.quotas import (
    QuotaAlteration,
    QuotaOp,
    alter_client_quotas,
    entity_text,
    is_ip_literal,
)
from ksteward.controller.result import MAX_RECORDS_PER_USER_OP
from ksteward.metadata.delta import MetadataDelta
from ksteward.metadata.image import EMPTY_IMAGE, MetadataImage, QuotaEntity

Pairs = tuple[tuple[str, str | None], ...]


def alteration(entity: Pairs, **ops: float | None) -> QuotaAlteration:
    return QuotaAlteration(entity, tuple(QuotaOp(k, v) for k, v in ops.items()))


def one(
    entity: Pairs, ops: list[tuple[str, float | None]], quotas: Mapping[QuotaEntity, Mapping[str, float]] | None = None
) -> tuple[list[Any], Any]:
    done = alter_client_quotas(quotas or {}, [QuotaAlteration(entity, tuple(QuotaOp(k, v) for k, v in ops))])
    records, results = done.records, done.response
    assert len(results) == 1
    return records, results[0].error


USER_A: Pairs = (("user", "alice"),)

# Every rejection rule: (entity, ops, message). All are INVALID_REQUEST for that entity only.
REJECTIONS = [
    ((), [("producer_byte_rate", 1.0)], "Invalid empty client quota entity"),
    (
        (("user", "a"), ("user", "b")),
        [("producer_byte_rate", 1.0)],
        "Invalid client quota entity, duplicate entity entry user",
    ),
    ((("group", "g"),), [("producer_byte_rate", 1.0)], "Unhandled client quota entity type: group"),
    ((("user", ""),), [("producer_byte_rate", 1.0)], "Empty user not supported"),
    ((("client-id", ""),), [("producer_byte_rate", 1.0)], "Empty client-id not supported"),
    ((("ip", ""),), [("connection_creation_rate", 1.0)], "Empty ip not supported"),
    (
        (("ip", "1.2.3.4"), ("user", "u")),
        [("connection_creation_rate", 1.0)],
        "Invalid quota entity combination, IP entity shouldnot be combined with User or ClientId",
    ),
    (
        (("client-id", "c"), ("ip", None)),
        [("connection_creation_rate", 1.0)],
        "Invalid quota entity combination, IP entity shouldnot be combined with User or ClientId",
    ),
    ((("ip", "not-an-ip"),), [("connection_creation_rate", 1.0)], "not-an-ip is not a valid IP or resolvable host."),
    ((("ip", "1.2.3.256"),), [("connection_creation_rate", 1.0)], "1.2.3.256 is not a valid IP or resolvable host."),
    (USER_A, [("unknown_key", 1.0)], "Invalid configuration key unknown_key"),
    (USER_A, [("connection_creation_rate", 1.0)], "Invalid configuration key connection_creation_rate"),
    ((("ip", "::1"),), [("producer_byte_rate", 1.0)], "Invalid configuration key producer_byte_rate"),
    (USER_A, [("producer_byte_rate", 0.0)], "Quota producer_byte_rate must be greater than 0"),
    (USER_A, [("request_percentage", -1.5)], "Quota request_percentage must be greater than 0"),
    (USER_A, [("controller_mutation_rate", math.nan)], "Quota controller_mutation_rate must be greater than 0"),
    (USER_A, [("consumer_byte_rate", 1.5)], "consumer_byte_rate cannot be a fractional value."),
    (USER_A, [("producer_byte_rate", 1e19)], "Proposed value for producer_byte_rate is too large for a LONG."),
    (USER_A, [("producer_byte_rate", math.inf)], "Proposed value for producer_byte_rate is too large for a LONG."),
    (USER_A, [("request_percentage", math.inf)], "Quota request_percentage must be a finite number"),
    (
        (("ip", None),),
        [("connection_creation_rate", 2.0**31)],
        "Proposed value for connection_creation_rate is too large for an INT.",
    ),
    (
        (("ip", "10.0.0.1"),),
        [("connection_creation_rate", 2.5)],
        "connection_creation_rate cannot be a fractional value.",
    ),
    (
        USER_A,
        [("producer_byte_rate", 1.0), ("producer_byte_rate", 2.0)],
        "Duplicate quota key producer_byte_rate not updating quota for this entity "
        "ClientQuotaEntity(entries={user=alice})",
    ),
]


@pytest.mark.parametrize(("entity", "ops", "message"), REJECTIONS)
def test_rejections(entity: Pairs, ops: list[tuple[str, float | None]], message: str) -> None:
    records, error = one(entity, ops)
    assert records == []
    assert (error.code, error.message) == (ErrorCode.invalid_request, message)


# Accepted values at the edges of each rule.
ACCEPTED = [
    (USER_A, "producer_byte_rate", 1.0),
    (USER_A, "consumer_byte_rate", 1.0000001),  # within Kafka's 1e-6 of an integer
    (USER_A, "producer_byte_rate", float(2**63)),  # (double) Long.MAX_VALUE itself is not "too large"
    (USER_A, "request_percentage", 0.001),
    (USER_A, "controller_mutation_rate", 1e300),  # DOUBLE keys have no upper bound
    ((("client-id", None),), "controller_mutation_rate", 2.5),
    ((("client-id", "c"), ("user", None)), "request_percentage", 50.0),
    ((("ip", None),), "connection_creation_rate", float(2**31 - 1)),
    ((("ip", "fe80::1%eth0"),), "connection_creation_rate", 3.0),
    ((("ip", "[2001:db8::1]"),), "connection_creation_rate", 3.0),
]


@pytest.mark.parametrize(("entity", "key", "value"), ACCEPTED)
def test_accepted(entity: Pairs, key: str, value: float) -> None:
    records, error = one(entity, [(key, value)])
    assert error.code == ErrorCode.none
    assert [(r.key, float(r.value), r.remove) for r in records] == [(key, value, False)]
    assert sorted((e.entity_type, e.entity_name) for e in records[0].entity) == sorted(entity)


def test_ip_literals() -> None:
    assert is_ip_literal("127.0.0.1") and is_ip_literal("::1") and is_ip_literal("[::1]")
    assert not is_ip_literal("[127.0.0.1]") and not is_ip_literal("localhost") and not is_ip_literal("1.2.3")


def test_unchanged_values_and_absent_removals_write_nothing() -> None:
    current = {(("user", "alice"),): {"producer_byte_rate": 100.0}}
    records, error = one(USER_A, [("producer_byte_rate", 100.0), ("consumer_byte_rate", None)], current)
    assert error.code == ErrorCode.none and records == []


def test_removal_is_not_validated() -> None:
    # Kafka validates only values being set: an unknown key can be "removed" (a no-op) without error.
    current = {(("user", "alice"),): {"producer_byte_rate": 100.0}}
    records, error = one(USER_A, [("bogus", None), ("producer_byte_rate", None)], current)
    assert error.code == ErrorCode.none
    assert [(r.key, r.remove) for r in records] == [("producer_byte_rate", True)]


def test_one_bad_op_fails_the_whole_entity() -> None:
    records, error = one(USER_A, [("producer_byte_rate", 5.0), ("consumer_byte_rate", -1.0)])
    assert error.code == ErrorCode.invalid_request and records == []


def test_errors_are_per_entity_and_order_of_first_appearance() -> None:
    done = alter_client_quotas(
        {},
        [
            alteration((("user", "bob"),), producer_byte_rate=10.0),
            alteration((("user", ""),), producer_byte_rate=10.0),
            alteration((("client-id", "c"), ("user", "bob")), controller_mutation_rate=3.0),
        ],
    )
    records, results = done.records, done.response
    assert [r.entity for r in results] == [(("user", "bob"),), (("user", ""),), (("client-id", "c"), ("user", "bob"))]
    assert [r.error.code for r in results] == [ErrorCode.none, ErrorCode.invalid_request, ErrorCode.none]
    assert [(r.key, float(r.value)) for r in records] == [
        ("producer_byte_rate", 10.0),
        ("controller_mutation_rate", 3.0),
    ]


def test_entity_named_twice_is_refused_once_and_writes_nothing() -> None:
    # The same entity with its types in another order is the same entity.
    done = alter_client_quotas(
        {},
        [
            alteration((("user", "u"), ("client-id", None)), producer_byte_rate=10.0),
            alteration((("client-id", None), ("user", "u")), consumer_byte_rate=10.0),
            alteration((("user", "v"),), producer_byte_rate=10.0),
        ],
    )
    records, results = done.records, done.response
    assert records and all(r.entity[0].entity_name == "v" for r in records)
    assert len(results) == 2
    assert results[0].error.code == ErrorCode.invalid_request
    assert results[0].error.message == "Ignoring duplicate entity ClientQuotaEntity(entries={client-id=null, user=u})"


def test_entity_text_is_javas() -> None:
    assert entity_text((("user", "u"), ("client-id", "c"))) == "ClientQuotaEntity(entries={client-id=c, user=u})"
    assert entity_text((("ip", None),)) == "ClientQuotaEntity(entries={ip=null})"


def test_too_many_records_fail_every_entry() -> None:
    many = [alteration((("user", f"u{i}"),), producer_byte_rate=1.0) for i in range(MAX_RECORDS_PER_USER_OP + 1)]
    done = alter_client_quotas({}, many)
    records, results = done.records, done.response
    assert records == []
    assert len(results) == len(many) and {r.error.code for r in results} == {ErrorCode.policy_violation}


class _Writer:
    """The controller's writer, in memory: applies each batch to the image."""

    def __init__(self) -> None:
        self.latest: MetadataImage = EMPTY_IMAGE
        self.batches: list[list[Any]] = []

    def append(self, records: list[Any]) -> asyncio.Future[int]:
        delta = MetadataDelta(self.latest)
        for record in records:
            delta.replay(record)
        self.latest = delta.apply(offset=self.latest.offset + len(records))
        self.batches.append(records)
        future: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        future.set_result(self.latest.offset)
        return future


def test_controller_writes_one_batch_and_nothing_when_validating() -> None:
    writer = _Writer()
    controller = Controller(writer)
    changes = [
        alteration((("user", None),), producer_byte_rate=1024.0, request_percentage=25.0),
        alteration((("client-id", "c"), ("user", "u")), controller_mutation_rate=2.0),
        alteration((("ip", "nope"),), connection_creation_rate=3.0),
    ]

    async def run(validate_only: bool) -> list[Any]:
        return await controller.alter_client_quotas(changes, validate_only=validate_only)

    results = asyncio.run(run(True))
    assert [r.error.code for r in results] == [ErrorCode.none, ErrorCode.none, ErrorCode.invalid_request]
    assert writer.batches == [] and not writer.latest.client_quotas

    asyncio.run(run(False))
    assert len(writer.batches) == 1 and len(writer.batches[0]) == 3
    assert dict(writer.latest.client_quotas) == {
        (("user", None),): {"producer_byte_rate": 1024.0, "request_percentage": 25.0},
        (("client-id", "c"), ("user", "u")): {"controller_mutation_rate": 2.0},
    }
    asyncio.run(run(False))  # the same values again: nothing to write
    assert len(writer.batches) == 1
