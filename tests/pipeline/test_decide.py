"""``decide`` equals ``StandardAuthorizer.authorize_with_reason``: result, rule and deciding ACL."""

from __future__ import annotations

import itertools
import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyspark.sql import DataFrame, SparkSession

from ksteward.authorizer import AclBinding, StandardAuthorizer, acl_id_text
from ksteward.pipeline.decide import acl_frame, decide, decide_distinct, reference_authorizer
from ksteward.pipeline.local_frames import local_frame
from ksteward.pipeline.schemas import REQUEST_COLUMNS, AuthorizerSettings

# Small alphabets, so that names, prefixes, principals and hosts collide.
NAMES = ("", "a", "ab", "abc", "abd", "b", "*", "*a")
PRINCIPALS = ("User:alice", "User:bob", "User:*", "Group:devs", "alice")
HOSTS = ("10.0.0.1", "10.0.0.2", "*")
REQUEST_OPS = ("READ", "WRITE", "DESCRIBE", "DESCRIBE_CONFIGS", "ALTER_CONFIGS", "ALTER", "DELETE", "CREATE")
ACL_OPS = ("ALL", "READ", "WRITE", "DESCRIBE", "DESCRIBE_CONFIGS", "ALTER_CONFIGS", "ALTER", "DELETE", "CREATE")
# Every resource type: the types are independent in the authorizer, so one example is seven ACL sets at once.
TYPES = ("UNKNOWN", "TOPIC", "GROUP", "CLUSTER", "TRANSACTIONAL_ID", "DELEGATION_TOKEN", "USER")
REQUESTS = [
    (p, h, op, rt, name) for rt, name, p, h, op in itertools.product(TYPES, NAMES, PRINCIPALS, HOSTS, REQUEST_OPS)
]


def expected(auth: StandardAuthorizer, request: tuple[str, ...]) -> tuple[bool, str, str | None]:
    principal, host, op, rt, name = request
    d = auth.authorize_with_reason(principal, host, op, rt, name)
    return d.allowed, d.rule.value, None if d.acl_id is None else acl_id_text(d.acl_id)


def requests_frame(spark: SparkSession, requests: list[tuple[str, ...]]) -> DataFrame:
    rows = [(*r, i) for i, r in enumerate(requests)]
    return local_frame(spark, rows, ", ".join([*(f"{c} string" for c in REQUEST_COLUMNS), "seq long"]))


def check(spark: SparkSession, acls: dict[str, AclBinding], s: AuthorizerSettings, requests: DataFrame) -> int:
    """Decide every request in one Spark job and compare each row with the library; the number compared."""
    auth = reference_authorizer(acls, s)
    got = decide(requests, acl_frame(spark, acls.items()), s).collect()
    mismatches = []
    for row in got:
        request = tuple(row[c] for c in REQUEST_COLUMNS)
        want = expected(auth, request)
        if (row.granted, row.rule, row.acl_id) != want:
            mismatches.append((request, (row.granted, row.rule, row.acl_id), want))
    assert not mismatches, f"{len(mismatches)} mismatches, first: {mismatches[:5]}\nACLs: {acls}"
    return len(got)


def binding(rt: str, name: str, pattern: str, principal: str, host: str, op: str, perm: str) -> AclBinding:
    return AclBinding(rt, name, pattern, principal, host, op, perm)


acl_strategy = st.builds(
    binding,
    st.sampled_from(TYPES),
    st.sampled_from(NAMES),
    st.sampled_from(("LITERAL", "PREFIXED", "LITERAL", "PREFIXED", "UNKNOWN")),
    st.sampled_from((*PRINCIPALS, "User:alice", "User:*")),
    st.sampled_from(HOSTS),
    st.sampled_from((*ACL_OPS, "UNKNOWN")),
    st.sampled_from(("ALLOW", "DENY", "ALLOW", "DENY", "UNKNOWN")),
)
settings_strategy = st.builds(
    AuthorizerSettings,
    st.frozensets(st.sampled_from(("User:alice", "User:*", "Group:devs")), max_size=2),
    st.booleans(),
)


@pytest.fixture(scope="module")
def all_requests(spark: SparkSession) -> DataFrame:
    return requests_frame(spark, REQUESTS).cache()


#: ACL sets drawn for the property test: 12 in ``make test`` (each a Spark job over every request: ~3 s);
#: ``make test-slow`` sets KSTEWARD_DECIDE_EXAMPLES=200.
DECIDE_EXAMPLES = int(os.environ.get("KSTEWARD_DECIDE_EXAMPLES", "12"))


@settings(max_examples=DECIDE_EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(acls=st.lists(acl_strategy, max_size=80, unique=True), s=settings_strategy)
def test_decide_equals_the_reference_authorizer(
    spark: SparkSession, all_requests: DataFrame, acls: list[AclBinding], s: AuthorizerSettings
) -> None:
    by_id = {f"acl-{i:02d}": acl for i, acl in enumerate(acls)}
    assert check(spark, by_id, s, all_requests) == len(REQUESTS)


# --- one test per rule -----------------------------------------------------------------------------------


def one(
    spark: SparkSession,
    acls: list[AclBinding],
    request: tuple[str, str, str, str, str],
    s: AuthorizerSettings | None = None,
) -> tuple[bool, str, str | None]:
    """Decide one request with Spark, check it against the library, and return it."""
    s = s or AuthorizerSettings()
    by_id = {f"acl-{i}": acl for i, acl in enumerate(acls)}
    row = decide(requests_frame(spark, [request]), acl_frame(spark, by_id.items()), s).collect()[0]
    got = (row.granted, row.rule, row.acl_id)
    assert got == expected(reference_authorizer(by_id, s), request)
    return got


ALICE_READ_ORDERS = ("User:alice", "10.0.0.1", "READ", "TOPIC", "orders")


def test_super_user_wins_over_a_deny(spark: SparkSession) -> None:
    deny = binding("TOPIC", "*", "LITERAL", "User:*", "*", "ALL", "DENY")
    s = AuthorizerSettings(frozenset({"User:alice"}))
    assert one(spark, [deny], ALICE_READ_ORDERS, s) == (True, "super_user", None)
    # User:* in super.users is not a wildcard
    s = AuthorizerSettings(frozenset({"User:*"}))
    assert one(spark, [deny], ALICE_READ_ORDERS, s) == (False, "acl", "acl-0")


def test_allow_everyone_only_when_no_acl_matches_the_resource(spark: SparkSession) -> None:
    on = AuthorizerSettings(allow_everyone_if_no_acl_found=True)
    assert one(spark, [], ALICE_READ_ORDERS, on) == (True, "allow_everyone_default", None)
    assert one(spark, [], ALICE_READ_ORDERS) == (False, "no_matching_acl", None)
    other_type = binding("GROUP", "orders", "LITERAL", "User:bob", "*", "READ", "ALLOW")
    assert one(spark, [other_type], ALICE_READ_ORDERS, on) == (True, "allow_everyone_default", None)
    for acl in (
        binding("TOPIC", "orders", "LITERAL", "User:bob", "*", "READ", "DENY"),  # deny-only, someone else
        binding("TOPIC", "ord", "PREFIXED", "User:alice", "*", "WRITE", "ALLOW"),  # another operation
        binding("TOPIC", "orders", "LITERAL", "User:alice", "10.9.9.9", "READ", "ALLOW"),  # another host
        binding("TOPIC", "*", "LITERAL", "User:bob", "*", "READ", "ALLOW"),  # the wildcard, someone else
    ):
        assert one(spark, [acl], ALICE_READ_ORDERS, on) == (False, "no_matching_acl", None)


def test_deny_wins_whatever_its_pattern(spark: SparkSession) -> None:
    allow = binding("TOPIC", "orders", "LITERAL", "User:alice", "*", "READ", "ALLOW")
    deny = binding("TOPIC", "o", "PREFIXED", "User:*", "10.0.0.1", "READ", "DENY")
    assert one(spark, [allow, deny], ALICE_READ_ORDERS) == (False, "acl", "acl-1")
    assert one(spark, [allow, deny], ("User:alice", "10.0.0.2", "READ", "TOPIC", "orders")) == (True, "acl", "acl-0")


def test_implied_operations_are_allow_only(spark: SparkSession) -> None:
    describe = ("User:alice", "10.0.0.1", "DESCRIBE", "TOPIC", "orders")
    for op in ("READ", "WRITE", "DELETE", "ALTER", "ALL"):
        assert one(spark, [binding("TOPIC", "orders", "LITERAL", "User:alice", "*", op, "ALLOW")], describe)[0]
    for op in ("CREATE", "ALTER_CONFIGS", "DESCRIBE_CONFIGS"):
        assert not one(spark, [binding("TOPIC", "orders", "LITERAL", "User:alice", "*", op, "ALLOW")], describe)[0]
    describe_configs = ("User:alice", "10.0.0.1", "DESCRIBE_CONFIGS", "TOPIC", "orders")
    assert one(
        spark, [binding("TOPIC", "orders", "LITERAL", "User:alice", "*", "ALTER_CONFIGS", "ALLOW")], describe_configs
    )[0]
    # DENY READ does not deny DESCRIBE; DENY ALL does
    allow_all = binding("TOPIC", "orders", "LITERAL", "User:alice", "*", "ALL", "ALLOW")
    deny_read = binding("TOPIC", "orders", "LITERAL", "User:alice", "*", "READ", "DENY")
    assert one(spark, [allow_all, deny_read], describe) == (True, "acl", "acl-0")
    deny_all = binding("TOPIC", "orders", "LITERAL", "User:alice", "*", "ALL", "DENY")
    assert one(spark, [allow_all, deny_all], describe) == (False, "acl", "acl-1")


def test_wildcards(spark: SparkSession) -> None:
    literal_star = binding("TOPIC", "*", "LITERAL", "User:*", "*", "READ", "ALLOW")
    assert one(spark, [literal_star], ALICE_READ_ORDERS) == (True, "acl", "acl-0")
    prefixed_star = binding("TOPIC", "*", "PREFIXED", "User:*", "*", "READ", "ALLOW")  # not a wildcard
    assert one(spark, [prefixed_star], ALICE_READ_ORDERS) == (False, "no_matching_acl", None)
    assert one(spark, [prefixed_star], ("User:alice", "h", "READ", "TOPIC", "*x"))[0]
    group_star = binding("TOPIC", "orders", "LITERAL", "Group:*", "*", "READ", "ALLOW")  # not a wildcard
    assert not one(spark, [group_star], ("Group:devs", "h", "READ", "TOPIC", "orders"))[0]
    # User:* matches principals of every type; host * matches every host, a named host only itself
    assert one(spark, [literal_star], ("Group:devs", "h", "READ", "TOPIC", "orders"))[0]
    on_host = binding("TOPIC", "orders", "LITERAL", "User:alice", "10.0.0.1", "READ", "ALLOW")
    assert one(spark, [on_host], ALICE_READ_ORDERS)[0]
    assert not one(spark, [on_host], ("User:alice", "10.0.0.2", "READ", "TOPIC", "orders"))[0]


def test_prefixes_match_by_name_start_only(spark: SparkSession) -> None:
    for name, pattern, granted in (
        ("ord", "PREFIXED", True),
        ("orders", "PREFIXED", True),
        ("orders-x", "PREFIXED", False),
        ("ord", "LITERAL", False),
        ("rders", "PREFIXED", False),
    ):
        acl = binding("TOPIC", name, pattern, "User:alice", "*", "READ", "ALLOW")
        assert one(spark, [acl], ALICE_READ_ORDERS)[0] is granted


def test_the_deciding_acl_is_kafkas_first_deny_or_last_allow(spark: SparkSession) -> None:
    acls = [
        binding("TOPIC", "orders", "LITERAL", "User:alice", "*", "READ", "ALLOW"),
        binding("TOPIC", "ord", "PREFIXED", "User:alice", "*", "READ", "ALLOW"),
        binding("TOPIC", "*", "LITERAL", "User:*", "*", "READ", "ALLOW"),
        binding("TOPIC", "or", "PREFIXED", "User:alice", "*", "ALL", "ALLOW"),
    ]
    assert one(spark, acls, ALICE_READ_ORDERS) == (True, "acl", "acl-2")  # the wildcard section comes last
    assert one(spark, acls[:2] + acls[3:], ALICE_READ_ORDERS) == (True, "acl", "acl-2")  # shortest prefix last
    denies = [
        binding("TOPIC", "o", "PREFIXED", "User:*", "*", "READ", "DENY"),
        binding("TOPIC", "orders", "LITERAL", "User:alice", "*", "READ", "DENY"),
        binding("TOPIC", "orders", "LITERAL", "User:alice", "*", "ALL", "DENY"),
    ]
    assert one(spark, denies, ALICE_READ_ORDERS) == (False, "acl", "acl-2")  # ALL (2) sorts before READ (3)


def test_distinct_keys_and_carried_columns(spark: SparkSession) -> None:
    acls = acl_frame(spark, [("a1", binding("TOPIC", "orders", "LITERAL", "User:alice", "*", "READ", "ALLOW"))])
    events = requests_frame(spark, [ALICE_READ_ORDERS] * 3 + [("User:bob", "h", "READ", "TOPIC", "orders")])
    decided = decide(events, acls, AuthorizerSettings())
    assert decided.columns == [*REQUEST_COLUMNS, "seq", "granted", "rule", "acl_id"]
    assert sorted((r.seq, r.granted) for r in decided.collect()) == [(0, True), (1, True), (2, True), (3, False)]
    table = decide_distinct(events, acls, AuthorizerSettings())
    assert table.count() == 2


def test_no_nested_loop_join_in_the_plan(spark: SparkSession) -> None:
    acls = acl_frame(spark, [("a1", binding("TOPIC", "ord", "PREFIXED", "User:alice", "*", "READ", "ALLOW"))])
    decided = decide(requests_frame(spark, [ALICE_READ_ORDERS]), acls, AuthorizerSettings())
    plan = decided._jdf.queryExecution().executedPlan().toString()
    assert "Join" in plan
    assert "NestedLoopJoin" not in plan
    assert "CartesianProduct" not in plan
    assert "PythonUDF" not in plan and "BatchEvalPython" not in plan and "ArrowEvalPython" not in plan
