"""DescribeClientQuotas filter semantics (Kafka's ClientQuotasImage.describe)."""

from __future__ import annotations

import pytest
from kio.schema.errors import ErrorCode

from ksteward.broker.quotas import (
    MATCH_DEFAULT,
    MATCH_EXACT,
    MATCH_SPECIFIED,
    FilterComponent,
    QuotaFilterError,
    matching_quotas,
)
from ksteward.controller.quotas import canonical
from ksteward.metadata.image import QuotaEntity


def _entity(user: str | bool | None = False, client: str | bool | None = False) -> QuotaEntity:
    """False: the type is absent; None: the default entity."""
    pairs: list[tuple[str, str | None]] = []
    if user is not False:
        pairs.append(("user", user))  # type: ignore[arg-type]
    if client is not False:
        pairs.append(("client-id", client))  # type: ignore[arg-type]
    return canonical(tuple(pairs))


# Eleven user/client-id entities and two ip entities.
QUOTAS = {
    _entity("user-1", "client-id-1"): {"request_percentage": 50.5},
    _entity("user-2", "client-id-1"): {"request_percentage": 51.5},
    _entity("user-3", "client-id-2"): {"request_percentage": 52.5},
    _entity(None, "client-id-1"): {"request_percentage": 53.5},
    _entity("user-1", None): {"request_percentage": 54.5},
    _entity("user-3", None): {"request_percentage": 55.5},
    _entity("user-1"): {"request_percentage": 56.5},
    _entity("user-2"): {"request_percentage": 57.5},
    _entity("user-3"): {"request_percentage": 58.5},
    _entity(None): {"request_percentage": 59.5},
    _entity(client="client-id-2"): {"request_percentage": 60.5},
    (("ip", "1.2.3.4"),): {"connection_creation_rate": 10.0},
    (("ip", "2.3.4.5"),): {"connection_creation_rate": 20.0},
}


def exact(entity_type: str, name: str) -> FilterComponent:
    return FilterComponent(entity_type, MATCH_EXACT, name)


def default(entity_type: str) -> FilterComponent:
    return FilterComponent(entity_type, MATCH_DEFAULT)


def specified(entity_type: str) -> FilterComponent:
    return FilterComponent(entity_type, MATCH_SPECIFIED)


def found(components: list[FilterComponent], strict: bool) -> set[QuotaEntity]:
    return {entity for entity, _ in matching_quotas(QUOTAS, components, strict)}


CASES = [
    # (components, strict, expected entities)
    ([exact("user", "user-1"), exact("client-id", "client-id-1")], True, {_entity("user-1", "client-id-1")}),
    ([exact("user", "user-2"), default("client-id")], True, set()),
    ([default("user"), exact("client-id", "client-id-1")], True, {_entity(None, "client-id-1")}),
    ([exact("user", "user-1")], False, {_entity("user-1", "client-id-1"), _entity("user-1", None), _entity("user-1")}),
    ([exact("user", "unknown")], False, set()),
    ([exact("client-id", "client-id-2")], False, {_entity("user-3", "client-id-2"), _entity(client="client-id-2")}),
    ([default("user")], False, {_entity(None, "client-id-1"), _entity(None)}),
    ([exact("user", "user-2")], True, {_entity("user-2")}),
    ([exact("client-id", "client-id-1")], True, set()),
    # SPECIFIED matches any name of the type, the default entity included (Kafka's containsKey).
    ([specified("user")], True, {_entity("user-1"), _entity("user-2"), _entity("user-3"), _entity(None)}),
    ([specified("user")], False, {e for e in QUOTAS if any(t == "user" for t, _ in e)}),
    ([specified("client-id")], True, {_entity(client="client-id-2")}),
    ([specified("client-id")], False, {e for e in QUOTAS if any(t == "client-id" for t, _ in e)}),
    ([specified("ip")], False, {(("ip", "1.2.3.4"),), (("ip", "2.3.4.5"),)}),
    ([exact("ip", "1.2.3.4")], True, {(("ip", "1.2.3.4"),)}),
    ([], False, set(QUOTAS)),
    ([], True, set()),
]


@pytest.mark.parametrize(("components", "strict", "expected"), CASES)
def test_matching(components: list[FilterComponent], strict: bool, expected: set[QuotaEntity]) -> None:
    assert found(components, strict) == expected


def test_counts_match_kafkas_own_table() -> None:
    # The sizes Kafka's ClientQuotasRequestTest expects of the same thirteen entities.
    assert len(found([specified("user")], True)) == 4
    assert len(found([specified("user")], False)) == 10
    assert len(found([specified("client-id")], False)) == 7
    assert len(found([], False)) == 13


def test_values_and_order() -> None:
    result = matching_quotas(QUOTAS, [specified("user")], True)
    # Default entities sort before named ones of the same type; values are the stored ones.
    assert [entity for entity, _ in result] == [_entity(None), _entity("user-1"), _entity("user-2"), _entity("user-3")]
    assert dict(result[1][1]) == {"request_percentage": 56.5}


BAD_FILTERS = [
    ([FilterComponent("", MATCH_SPECIFIED)], ErrorCode.invalid_request, "Invalid empty entity type."),
    (
        [exact("user", "a"), default("user")],
        ErrorCode.invalid_request,
        "Entity type user cannot appear more than once in the filter.",
    ),
    (
        [specified("client-id"), specified("client-id")],
        ErrorCode.invalid_request,
        "Entity type client-id cannot appear more than once in the filter.",
    ),
    ([specified("group")], ErrorCode.unsupported_version, "Unsupported entity type group"),
    (
        [FilterComponent("user", MATCH_EXACT, None)],
        ErrorCode.invalid_request,
        "Request specified MATCH_TYPE_EXACT, but set match string to null.",
    ),
    (
        [FilterComponent("user", MATCH_DEFAULT, "x")],
        ErrorCode.invalid_request,
        "Request specified MATCH_TYPE_DEFAULT, but also specified a match string.",
    ),
    (
        [FilterComponent("user", MATCH_SPECIFIED, "x")],
        ErrorCode.invalid_request,
        "Request specified MATCH_TYPE_SPECIFIED, but also specified a match string.",
    ),
    ([FilterComponent("user", 3)], ErrorCode.invalid_request, "Unknown match type 3"),
    (
        [specified("ip"), default("user")],
        ErrorCode.invalid_request,
        "Invalid entity filter component combination. IP filter component should not be used with user or "
        "clientId filter component.",
    ),
    (
        [exact("client-id", "c"), exact("ip", "1.2.3.4")],
        ErrorCode.invalid_request,
        "Invalid entity filter component combination. IP filter component should not be used with user or "
        "clientId filter component.",
    ),
]


@pytest.mark.parametrize(("components", "code", "message"), BAD_FILTERS)
def test_bad_filters(components: list[FilterComponent], code: ErrorCode, message: str) -> None:
    with pytest.raises(QuotaFilterError) as caught:
        matching_quotas(QUOTAS, components, False)
    assert (caught.value.code, str(caught.value)) == (code, message)
