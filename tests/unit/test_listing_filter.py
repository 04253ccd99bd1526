"""``authz.listing_filter`` (a Metadata listing's per-topic DESCRIBE check) decides and counts exactly as
``authz.authorize`` with ``log_if_denied=False`` does, for a plain user, a super user, without an authorizer, and
on an audited node (where it goes through ``authorize``, which writes the allowed decisions)."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from ksteward.authorizer import AclBinding, AclOperation, ResourceType, StandardAuthorizer
from ksteward.broker.authz import authorize, listing_filter
from ksteward.broker.context import ApiTable, AuthorizationCounts, RequestContext
from ksteward.protocol.apis import ApiKey

TOPICS = ["orders", "orders-eu", "payments", "audit", "ord"]


@dataclasses.dataclass
class AuthNode:
    authorizer: Any
    audit: Any = None


class Audit:
    def __init__(self) -> None:
        self.lines: list[Any] = []

    def write(self, event: Any) -> None:
        self.lines.append(event)


def context(principal: str) -> RequestContext:
    return RequestContext(principal, "10.0.0.1", "PLAINTEXT", "PLAINTEXT", None, ApiKey.METADATA, 12, ApiTable([]),
                          authorizations=AuthorizationCounts())  # fmt: skip


def authorizer() -> StandardAuthorizer:
    auth = StandardAuthorizer.from_config({"super.users": "User:admin"})
    auth.load_snapshot([
        (1, AclBinding("TOPIC", "ord", "PREFIXED", "User:alice", "*", "DESCRIBE", "ALLOW")),
        (2, AclBinding("TOPIC", "orders-eu", "LITERAL", "User:alice", "*", "ALL", "DENY")),
        (3, AclBinding("TOPIC", "payments", "LITERAL", "User:bob", "*", "READ", "ALLOW")),
    ])  # fmt: skip
    return auth


@pytest.mark.parametrize("principal", ["User:alice", "User:bob", "User:admin", "User:nobody"])
@pytest.mark.parametrize("with_authorizer", [True, False])
@pytest.mark.parametrize("audited", [False, True])
def test_the_listing_filter_decides_and_counts_as_authorize(
    principal: str, with_authorizer: bool, audited: bool
) -> None:
    auth = authorizer() if with_authorizer else None
    mine, theirs = Audit(), Audit()
    bound = listing_filter(AuthNode(auth, mine if audited else None), listed := context(principal),
                           AclOperation.DESCRIBE, ResourceType.TOPIC)  # fmt: skip
    decided = [bound(name) for name in TOPICS]
    one_by_one = context(principal)
    node = AuthNode(auth, theirs if audited else None)
    expected = [authorize(node, one_by_one, AclOperation.DESCRIBE, ResourceType.TOPIC, name, log_if_denied=False)
                for name in TOPICS]  # fmt: skip
    assert decided == expected
    assert dataclasses.astuple(listed.authorizations) == dataclasses.astuple(one_by_one.authorizations)
    assert len(mine.lines) == len(theirs.lines)  # the allowed ones, when audited
    if principal == "User:alice" and with_authorizer:
        assert decided == [True, False, False, False, True]  # the prefix allows, the DENY on orders-eu wins
