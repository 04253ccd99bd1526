"""``ksteward acls --who-can``, ``--explain``, the lockout guard and the warnings, against ``ksteward.authorizer``
on a table of cases: prefixes, DENY, ``User:*``, hosts, super users and allow-everyone."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from ksteward.authorizer import (
    AclBinding,
    AclOperation,
    AuthorizerSettings,
    PatternType,
    ResourceType,
    StandardAuthorizer,
)
from ksteward.cli.acls import answers
from ksteward.cli.acls.answers import KnownSettings
from ksteward.cli.acls.options import Pattern


def acl(name: str, pattern: str, principal: str, host: str, op: str, perm: str, rt: str = "TOPIC") -> AclBinding:
    return AclBinding(rt, name, pattern, principal, host, op, perm)


ACLS = {
    "a1": acl("orders", "LITERAL", "User:alice", "*", "READ", "ALLOW"),
    "a2": acl("ord", "PREFIXED", "User:bob", "*", "ALL", "ALLOW"),
    "a3": acl("orders", "LITERAL", "User:bob", "10.0.0.9", "READ", "DENY"),
    "a4": acl("*", "LITERAL", "User:*", "10.0.0.1", "READ", "ALLOW"),
    "a5": acl("orders-eu", "PREFIXED", "User:carol", "*", "WRITE", "ALLOW"),
    "a6": acl("orders", "LITERAL", "User:*", "*", "DESCRIBE", "ALLOW"),
    "a7": acl("orders", "LITERAL", "Group:ops", "*", "READ", "ALLOW"),
    "a8": acl("orders", "LITERAL", "User:mallory", "*", "ALL", "DENY"),
    "a9": acl("orders", "LITERAL", "User:*", "10.0.0.66", "ALL", "DENY"),
    "a10": acl("*", "PREFIXED", "User:zed", "*", "ALL", "ALLOW"),  # not a wildcard
}
PRINCIPALS = ["User:alice", "User:bob", "User:carol", "User:mallory", "User:admin", "Group:ops", "User:zed"]
HOSTS = ["10.0.0.1", "10.0.0.9", "10.0.0.66", "192.168.1.1"]
RESOURCES = ["orders", "ord-x", "orders-eu-1", "payments", "*x"]
OPERATIONS = [AclOperation.READ, AclOperation.WRITE, AclOperation.DESCRIBE]
SETTINGS = [
    AuthorizerSettings(frozenset({"User:admin"}), False),
    AuthorizerSettings(frozenset({"User:admin"}), True),
    AuthorizerSettings(frozenset(), True),
]


def reference(settings: AuthorizerSettings) -> StandardAuthorizer:
    """An authorizer built independently of the CLI's, from Kafka's property strings."""
    everyone = str(settings.allow_everyone_if_no_acl_found)
    auth = StandardAuthorizer.from_config(
        {"super.users": ";".join(settings.super_users), "allow.everyone.if.no.acl.found": everyone}
    )
    auth.load_snapshot(ACLS)
    return auth


def covers(row: dict[str, Any], principal: str, host: str) -> bool:
    def hit(value: str, actual: str, wildcard: str) -> bool:
        return value in (actual, wildcard)

    if not (hit(row["principal"], principal, "User:*") and hit(row["host"], host, "*")):
        return False
    return not any(hit(d["principal"], principal, "User:*") and hit(d["host"], host, "*") for d in row["narrowed_by"])


@pytest.mark.parametrize("settings", SETTINGS, ids=["super", "super+everyone", "everyone"])
def test_who_can_rows_cover_exactly_whom_the_authorizer_allows(settings: AuthorizerSettings) -> None:
    cli = answers.authorizer(ACLS.values(), settings)
    ref = reference(settings)
    for name, op in itertools.product(RESOURCES, OPERATIONS):
        rows = answers.who_can(cli, op, Pattern(ResourceType.TOPIC, name, PatternType.LITERAL))
        for principal, host in itertools.product(PRINCIPALS, HOSTS):
            allowed = ref.authorize(principal, host, op, "TOPIC", name).value == "ALLOWED"
            assert allowed == any(covers(r, principal, host) for r in rows), (name, op, principal, host, rows)


@pytest.mark.parametrize("settings", SETTINGS, ids=["super", "super+everyone", "everyone"])
def test_explain_is_the_authorizers_decision_and_deciding_acl(settings: AuthorizerSettings) -> None:
    cli = answers.authorizer(ACLS.values(), settings)
    ref = reference(settings)
    for name, op, principal, host in itertools.product(RESOURCES, OPERATIONS, PRINCIPALS, [*HOSTS, "*"]):
        got = answers.explain(cli, principal, host, op, Pattern(ResourceType.TOPIC, name, PatternType.LITERAL))
        want = ref.authorize_with_reason(principal, host, op, "TOPIC", name)
        assert (got["decision"], got["rule"]) == (want.result.value, want.rule.value)
        assert got["acl"] == (answers.binding_json(want.acl) if want.acl else None)


@pytest.mark.parametrize("principal, host, op, name, decision, rule, deciding", [
    ("User:alice", "10.0.0.5", "READ", "orders", "ALLOWED", "acl", "a1"),
    ("User:bob", "10.0.0.9", "READ", "orders", "DENIED", "acl", "a3"),         # DENY beats the prefix ALLOW
    ("User:bob", "10.0.0.5", "READ", "ord-x", "ALLOWED", "acl", "a2"),         # PREFIXED
    ("User:carol", "10.0.0.5", "WRITE", "orders-eu-1", "ALLOWED", "acl", "a5"),
    ("User:mallory", "10.0.0.1", "READ", "orders", "DENIED", "acl", "a8"),
    ("User:zed", "10.0.0.1", "READ", "orders", "ALLOWED", "acl", "a4"),        # User:* on one host, LITERAL *
    ("User:zed", "192.168.1.1", "READ", "orders", "DENIED", "no_matching_acl", None),
    ("User:zed", "10.0.0.5", "READ", "*x", "ALLOWED", "acl", "a10"),           # PREFIXED '*' matches '*x' only
    ("Group:ops", "10.0.0.66", "READ", "orders", "DENIED", "acl", "a9"),       # User:* DENY covers every type
    ("User:admin", "10.0.0.66", "READ", "orders", "ALLOWED", "super_user", None),
    # TOPIC * (a4) matches payments: the resource has ACLs, so no default applies (KAFKA-14435).
    ("User:zed", "10.0.0.5", "READ", "payments", "DENIED", "no_matching_acl", None),
])  # fmt: skip
def test_explain_table(principal: str, host: str, op: str, name: str, decision: str, rule: str,
                       deciding: str | None) -> None:  # fmt: skip
    cli = answers.authorizer(ACLS.values(), SETTINGS[1])
    got = answers.explain(
        cli, principal, host, AclOperation[op], Pattern(ResourceType.TOPIC, name, PatternType.LITERAL)
    )
    assert (got["decision"], got["rule"]) == (decision, rule)
    assert got["acl"] == (answers.binding_json(ACLS[deciding]) if deciding else None)
    if deciding:
        assert answers.binding_text(ACLS[deciding]) in got["reason"]


def test_who_can_names_super_users_and_allow_everyone() -> None:
    cli = answers.authorizer(ACLS.values(), SETTINGS[1])
    rows = answers.who_can(cli, AclOperation.READ, Pattern(ResourceType.GROUP, "payments", PatternType.LITERAL))
    assert [(r["principal"], r["host"], r["rule"]) for r in rows] == [
        ("User:admin", "*", "super_user"),
        ("User:*", "*", "allow_everyone_default"),
    ]
    assert "allow.everyone.if.no.acl.found=true" in rows[1]["reason"]
    rows = answers.who_can(cli, AclOperation.READ, Pattern(ResourceType.TOPIC, "orders", PatternType.LITERAL))
    by_who = {(r["principal"], r["host"]): r for r in rows}
    assert set(by_who) == {("User:admin", "*"), ("User:alice", "*"), ("User:bob", "*"), ("Group:ops", "*"),
                           ("User:*", "10.0.0.1")}  # fmt: skip
    assert by_who[("User:bob", "*")]["acl"] == answers.binding_json(ACLS["a2"])
    assert answers.binding_json(ACLS["a3"]) in by_who[("User:bob", "*")]["narrowed_by"]
    assert answers.binding_json(ACLS["a8"]) in by_who[("User:*", "10.0.0.1")]["narrowed_by"]


# --- the lockout guard --------------------------------------------------------------------------------

ALTER_ME = acl("kafka-cluster", "LITERAL", "User:me", "*", "ALTER", "ALLOW", "CLUSTER")
ALL_OPS = acl("kafka-cluster", "LITERAL", "User:ops", "*", "ALL", "ALLOW", "CLUSTER")
EVERYONE = acl("kafka-cluster", "LITERAL", "User:*", "*", "ALTER", "ALLOW", "CLUSTER")
ON_HOST = acl("kafka-cluster", "LITERAL", "User:me", "10.1.1.1", "ALTER", "ALLOW", "CLUSTER")
NO_SETTINGS = AuthorizerSettings()


def test_guard_refuses_removing_the_callers_own_right() -> None:
    losses = answers.lockouts([ALTER_ME, ALL_OPS], [ALTER_ME], NO_SETTINGS, {"User:me": ["127.0.0.1"]})
    assert [(x["principal"], x["hosts"]) for x in losses] == [("User:me", ["127.0.0.1", "*"])]
    assert losses[0]["allowed_by"][0] == answers.binding_json(ALTER_ME)


def test_guard_protects_listed_principals_and_only_what_is_lost() -> None:
    protected = {"User:me": [], "User:ops": []}
    assert [x["principal"] for x in answers.lockouts([ALTER_ME, ALL_OPS], [ALL_OPS], NO_SETTINGS, protected)] == [
        "User:ops"
    ]
    assert answers.lockouts([ALTER_ME, ALL_OPS], [ALL_OPS], NO_SETTINGS, {"User:me": []}) == []


def test_guard_allows_what_another_acl_super_users_or_allow_everyone_still_grant() -> None:
    me = {"User:me": ["127.0.0.1"]}
    assert answers.lockouts([ALTER_ME, EVERYONE], [ALTER_ME], NO_SETTINGS, me) == []
    assert answers.lockouts([ALTER_ME], [ALTER_ME], AuthorizerSettings(frozenset({"User:me"})), me) == []
    # No CLUSTER ACL left and allow.everyone.if.no.acl.found=true: still allowed by default.
    assert answers.lockouts([ALTER_ME], [ALTER_ME], AuthorizerSettings(frozenset(), True), me) == []
    # ... but while another principal's CLUSTER ACL remains, the default no longer applies (KAFKA-14435).
    assert answers.lockouts([ALTER_ME, ALL_OPS], [ALTER_ME], AuthorizerSettings(frozenset(), True), me) != []


def test_guard_checks_the_hosts_the_acls_name() -> None:
    losses = answers.lockouts([ON_HOST], [ON_HOST], NO_SETTINGS, {"User:me": []})
    assert [x["hosts"] for x in losses] == [["10.1.1.1"]]


# --- warnings ------------------------------------------------------------------------------------------


def codes(new: list[AclBinding], existing: dict[Pattern, list[AclBinding]], known: KnownSettings,
          topics: set[str] | None = None) -> list[str]:  # fmt: skip
    return [w["code"] for w in answers.add_warnings(new, existing, known, topics)]


KNOWN_FALSE = KnownSettings(AuthorizerSettings(frozenset(), False))
KNOWN_TRUE = KnownSettings(AuthorizerSettings(frozenset(), True))
UNKNOWN = KnownSettings(AuthorizerSettings(frozenset(), False), ["assumed"], allow_everyone_known=False)
ORDERS = Pattern(ResourceType.TOPIC, "orders", PatternType.LITERAL)


def test_warning_prefixed_star_and_allow_user_star() -> None:
    star = acl("*", "PREFIXED", "User:*", "*", "READ", "ALLOW")
    assert codes([star], {Pattern(ResourceType.TOPIC, "*", PatternType.PREFIXED): [ACLS["a1"]]}, KNOWN_FALSE) == [
        "prefixed-star",
        "allow-every-principal",
    ]
    assert codes([acl("*", "LITERAL", "User:*", "*", "READ", "DENY")], {}, KNOWN_FALSE) == []


def test_warning_first_acl_while_allow_everyone() -> None:
    new = [acl("orders", "LITERAL", "User:alice", "*", "READ", "ALLOW")]
    assert codes(new, {ORDERS: []}, KNOWN_TRUE) == ["first-acl-closes-resource"]
    assert codes(new, {ORDERS: []}, UNKNOWN) == ["first-acl-closes-resource"]
    assert "may be true" in answers.add_warnings(new, {ORDERS: []}, UNKNOWN, None)[0]["message"]
    assert codes(new, {ORDERS: []}, KNOWN_FALSE) == []
    assert codes(new, {ORDERS: [ACLS["a4"]]}, KNOWN_TRUE) == []  # the resource has ACLs already


def test_warning_topic_that_does_not_exist() -> None:
    new = [acl("orders", "LITERAL", "User:a", "*", "READ", "ALLOW"),
           acl("pay", "PREFIXED", "User:a", "*", "READ", "ALLOW"),
           acl("*", "LITERAL", "User:a", "*", "READ", "ALLOW")]  # fmt: skip
    warnings = answers.add_warnings(new, {}, KNOWN_FALSE, {"orders-2", "payments"})
    assert [w["message"] for w in warnings] == ["topic `orders` does not exist"]
    assert codes(new[:1], {}, KNOWN_FALSE, {"orders"}) == []
    assert codes(new[1:2], {}, KNOWN_FALSE, {"orders"}) == ["unknown-topic"]


def test_audit_whatif_without_pyspark_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    from ksteward.cli.acls import audit_whatif

    monkeypatch.setitem(sys.modules, "ksteward.pipeline.decide", None)  # what a missing pyspark looks like
    assert audit_whatif.audit_flips("dir", [], AuthorizerSettings(), create=[], delete=[]) is None
    assert audit_whatif.MISSING.startswith("pyspark is not installed")
