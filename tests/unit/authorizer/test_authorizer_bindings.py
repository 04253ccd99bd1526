"""Enums (docs/authorizer.md §1), AclBinding, and AclBindingFilter (§3.1) with the §3.4 examples."""

from __future__ import annotations

import pickle

import pytest

from ksteward.authorizer import (
    SUPPORTED_OPERATIONS,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
    StandardAuthorizer,
    parse_enum,
)

Op, Perm, Pat, RT = AclOperation, AclPermissionType, PatternType, ResourceType

# --- §1: codes and parsing ----------------------------------------------------------------------


def test_wire_codes() -> None:
    assert [(m.name, int(m)) for m in RT] == [
        ("UNKNOWN", 0),
        ("ANY", 1),
        ("TOPIC", 2),
        ("GROUP", 3),
        ("CLUSTER", 4),
        ("TRANSACTIONAL_ID", 5),
        ("DELEGATION_TOKEN", 6),
        ("USER", 7),
    ]
    assert [(m.name, int(m)) for m in Pat] == [
        ("UNKNOWN", 0),
        ("ANY", 1),
        ("MATCH", 2),
        ("LITERAL", 3),
        ("PREFIXED", 4),
    ]
    assert [int(m) for m in Op] == list(range(15))
    assert Op.DESCRIBE == 8 and Op.DESCRIBE_CONFIGS == 10 and Op.DESCRIBE_TOKENS == 14
    assert [(m.name, int(m)) for m in Perm] == [("UNKNOWN", 0), ("ANY", 1), ("DENY", 2), ("ALLOW", 3)]
    assert len(Op) <= 30  # the authorized-operations field is 32 bits


@pytest.mark.parametrize("cls", [RT, Pat, Op, Perm])
def test_from_code_unknown_codes(cls: type[RT]) -> None:
    for code in (-1, 99, 127):
        assert cls.from_code(code).is_unknown
    for member in cls:
        assert cls.from_code(int(member)) is member


def test_from_string_upper_cases_except_pattern_type() -> None:
    assert Op.from_string("describe_configs") is Op.DESCRIBE_CONFIGS
    assert RT.from_string("transactional_id") is RT.TRANSACTIONAL_ID
    assert Perm.from_string("Allow") is Perm.ALLOW
    assert Op.from_string("nope") is Op.UNKNOWN
    assert Pat.from_string("PREFIXED") is Pat.PREFIXED
    assert Pat.from_string("prefixed") is Pat.UNKNOWN
    assert Pat.from_string("Literal") is Pat.UNKNOWN


def test_display_names() -> None:
    assert RT.TRANSACTIONAL_ID.display_name == "TransactionalId"
    assert RT.DELEGATION_TOKEN.display_name == "DelegationToken"
    assert Op.DESCRIBE_CONFIGS.display_name == "DescribeConfigs"
    assert Op.IDEMPOTENT_WRITE.display_name == "IdempotentWrite"
    assert Perm.ALLOW.display_name == "Allow" and Perm.DENY.display_name == "Deny"
    assert RT.from_display_name("TransactionalId") is RT.TRANSACTIONAL_ID
    assert RT.from_display_name("TRANSACTIONALID") is RT.TRANSACTIONAL_ID
    assert RT.from_display_name("TRANSACTIONAL_ID") is RT.UNKNOWN
    assert RT.from_display_name("topic") is RT.UNKNOWN
    assert Op.from_display_name("DescribeConfigs") is Op.DESCRIBE_CONFIGS


def test_parse_enum() -> None:
    assert parse_enum(Op, "read") is Op.READ
    assert parse_enum(Op, 3) is Op.READ
    assert parse_enum(Op, 99) is Op.UNKNOWN
    assert parse_enum(Op, Op.ALL) is Op.ALL
    assert parse_enum(RT, "TransactionalId") is RT.TRANSACTIONAL_ID
    assert parse_enum(Pat, "PREFIXED") is Pat.PREFIXED
    for cls, value in [(Pat, "prefixed"), (Op, "REED"), (RT, "TOPICS"), (Op, True), (Op, None)]:
        with pytest.raises(ValueError):
            parse_enum(cls, value)  # type: ignore[type-var]


def test_supported_operations_table() -> None:
    assert set(SUPPORTED_OPERATIONS[RT.TOPIC]) == {
        Op.READ,
        Op.WRITE,
        Op.CREATE,
        Op.DESCRIBE,
        Op.DELETE,
        Op.ALTER,
        Op.DESCRIBE_CONFIGS,
        Op.ALTER_CONFIGS,
    }
    assert set(SUPPORTED_OPERATIONS[RT.GROUP]) == {
        Op.READ,
        Op.DESCRIBE,
        Op.DELETE,
        Op.DESCRIBE_CONFIGS,
        Op.ALTER_CONFIGS,
    }
    assert set(SUPPORTED_OPERATIONS[RT.CLUSTER]) == {
        Op.CREATE,
        Op.CLUSTER_ACTION,
        Op.DESCRIBE_CONFIGS,
        Op.ALTER_CONFIGS,
        Op.IDEMPOTENT_WRITE,
        Op.ALTER,
        Op.DESCRIBE,
    }
    assert set(SUPPORTED_OPERATIONS[RT.TRANSACTIONAL_ID]) == {Op.DESCRIBE, Op.WRITE}
    assert set(SUPPORTED_OPERATIONS[RT.DELEGATION_TOKEN]) == {Op.DESCRIBE}
    assert set(SUPPORTED_OPERATIONS[RT.USER]) == {Op.CREATE_TOKENS, Op.DESCRIBE_TOKENS}


# --- AclBinding ---------------------------------------------------------------------------------


def binding(**changes: object) -> AclBinding:
    fields: dict[str, object] = {
        "resource_type": "TOPIC",
        "resource_name": "foo",
        "pattern_type": "LITERAL",
        "principal": "User:bob",
        "host": "*",
        "operation": "READ",
        "permission_type": "ALLOW",
    }
    fields.update(changes)
    return AclBinding(**fields)  # type: ignore[arg-type]


def test_binding_normalises_and_compares_by_all_seven_fields() -> None:
    a = binding(operation="read", resource_type=RT.TOPIC)
    assert a.operation is Op.READ and a.resource_type is RT.TOPIC and a.pattern_type is Pat.LITERAL
    assert a == binding() and hash(a) == hash(binding())
    assert a != binding(host="10.0.0.1")
    assert binding(resource_type=2, pattern_type=3, operation=3, permission_type=3) == a  # record codes
    assert pickle.loads(pickle.dumps(a)) == a
    with pytest.raises(AttributeError):
        a.host = "x"  # type: ignore[misc]


@pytest.mark.parametrize(
    "changes",
    [
        {"resource_type": "ANY"},
        {"pattern_type": "ANY"},
        {"pattern_type": "MATCH"},
        {"operation": "ANY"},
        {"permission_type": "ANY"},
        {"principal": None},
        {"host": None},
        {"resource_name": None},
    ],
)
def test_binding_rejects_filter_values(changes: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        binding(**changes)


def test_binding_accepts_unknown_and_anything_createacls_would_reject() -> None:
    unknown = binding(operation="UNKNOWN", resource_type=99)
    assert unknown.is_unknown and unknown.resource_type is RT.UNKNOWN
    assert not binding().is_unknown
    binding(resource_name="")  # an empty name: validation is CreateAcls' job
    binding(principal="bob", host="")  # no colon, empty host
    binding(resource_type="CLUSTER", resource_name="not-kafka-cluster", operation="READ")


def test_binding_to_filter_matches_only_itself() -> None:
    a = binding()
    f = a.to_filter()
    assert f.matches(a) and f.find_indefinite_field() is None and f.matches_at_most_one
    assert not f.matches(binding(host="10.0.0.1"))


# --- §3.1 filters -------------------------------------------------------------------------------


def test_filter_any() -> None:
    assert AclBindingFilter() == AclBindingFilter.ANY
    assert AclBindingFilter.ANY.is_any
    assert (AclBindingFilter.ANY.resource_type, AclBindingFilter.ANY.pattern_type) == (RT.ANY, Pat.ANY)
    assert AclBindingFilter.ANY.matches(binding(pattern_type="PREFIXED", permission_type="DENY"))
    assert not AclBindingFilter(resource_type="TOPIC").is_any


def test_filter_pattern_rules() -> None:
    literal, prefixed, wildcard = binding(), binding(pattern_type="PREFIXED"), binding(resource_name="*")
    f = AclBindingFilter
    # 1. resource type
    assert not f(resource_type="GROUP").matches(literal)
    # 2. pattern type unless ANY/MATCH
    assert f(pattern_type="PREFIXED").matches(prefixed) and not f(pattern_type="PREFIXED").matches(literal)
    # 3. a null name matches every name, MATCH included
    assert f(pattern_type="MATCH").matches(prefixed)
    # 4. ANY or the same pattern type: exact names; "*" matches only ACLs named "*"
    assert f(resource_name="foo", pattern_type="ANY").matches(prefixed)
    assert not f(resource_name="foobar", pattern_type="ANY").matches(prefixed)
    assert f(resource_name="*", pattern_type="ANY").matches(wildcard)
    assert not f(resource_name="*", pattern_type="ANY").matches(literal)
    assert not f(resource_name="foo", pattern_type="LITERAL").matches(wildcard)
    # 5. MATCH: the stored patterns that would apply to a concrete name
    assert f(resource_name="foo", pattern_type="MATCH").matches(wildcard)
    assert f(resource_name="foobar", pattern_type="MATCH").matches(prefixed)
    assert not f(resource_name="foobar", pattern_type="MATCH").matches(literal)
    assert not f(resource_name="fo", pattern_type="MATCH").matches(prefixed)


def test_filter_entry_rules() -> None:
    wildcard_principal = binding(principal="User:*")
    f = AclBindingFilter
    assert f(principal="User:*").matches(wildcard_principal)
    assert not f(principal="User:*").matches(binding())  # exact string, not a wildcard
    assert not f(host="*").matches(binding(host="10.0.0.1"))
    assert not f(operation="READ").matches(binding(operation="ALL"))
    assert f(operation="ALL").matches(binding(operation="ALL"))
    assert not f(permission_type="DENY").matches(binding())
    assert f(permission_type="ANY").matches(binding(permission_type="DENY"))


def test_filter_unknown_and_indefinite_fields() -> None:
    f = AclBindingFilter
    assert f(resource_type="UNKNOWN").is_unknown
    assert f(pattern_type="UNKNOWN").is_unknown
    assert f(operation="UNKNOWN").is_unknown
    assert f(permission_type="UNKNOWN").is_unknown
    assert not f().is_unknown
    full = {
        "resource_type": "TOPIC",
        "resource_name": "foo",
        "pattern_type": "LITERAL",
        "principal": "User:bob",
        "host": "*",
        "operation": "READ",
        "permission_type": "ALLOW",
    }
    assert f(**full).find_indefinite_field() is None  # type: ignore[arg-type]
    assert f(**{**full, "pattern_type": "ANY"}).find_indefinite_field() is None  # type: ignore[arg-type]
    reasons = [
        ({"resource_type": "ANY"}, "Resource type is ANY."),
        ({"resource_type": "UNKNOWN"}, "Resource type is UNKNOWN."),
        ({"resource_name": None}, "Resource name is NULL."),
        ({"pattern_type": "MATCH"}, "Resource pattern type is MATCH."),
        ({"pattern_type": "UNKNOWN"}, "Resource pattern type is UNKNOWN."),
        ({"principal": None}, "Principal is NULL"),
        ({"host": None}, "Host is NULL"),
        ({"operation": "ANY"}, "Operation is ANY"),
        ({"operation": "UNKNOWN"}, "Operation is UNKNOWN"),
        ({"permission_type": "ANY"}, "Permission type is ANY"),
        ({"permission_type": "UNKNOWN"}, "Permission type is UNKNOWN"),
    ]
    for change, reason in reasons:
        assert f(**{**full, **change}).find_indefinite_field() == reason  # type: ignore[arg-type]
    # The first reason wins, in the order above.
    assert f(resource_type="ANY", principal=None).find_indefinite_field() == "Resource type is ANY."
    assert f(**{**full, "principal": None, "host": None}).find_indefinite_field() == "Principal is NULL"  # type: ignore[arg-type]
    assert (
        f(**{**full, "operation": "UNKNOWN", "permission_type": "ANY"}).find_indefinite_field()
        == "Operation is UNKNOWN"
    )  # type: ignore[arg-type]
    assert f(**{**full, "host": None, "operation": "ANY"}).find_indefinite_field() == "Host is NULL"  # type: ignore[arg-type]


# --- §3.4 examples ------------------------------------------------------------------------------

EXAMPLES = {
    "a0": AclBinding("TOPIC", "foo-1", "LITERAL", "User:alice", "*", "READ", "ALLOW"),
    "a1": AclBinding("TOPIC", "foo-1", "LITERAL", "User:alice", "192.168.0.1", "WRITE", "ALLOW"),
    "a2": AclBinding("TOPIC", "bar-1", "LITERAL", "User:alice", "*", "DESCRIBE", "ALLOW"),
    "a3": AclBinding("TOPIC", "bar-", "PREFIXED", "User:*", "*", "READ", "ALLOW"),
    "a4": AclBinding("TOPIC", "*", "LITERAL", "User:bob", "*", "READ", "DENY"),
    "a5": AclBinding("GROUP", "bar-1", "LITERAL", "User:alice", "*", "ALL", "ALLOW"),
    "a6": AclBinding("TOPIC", "b", "PREFIXED", "User:carol", "*", "ALL", "ALLOW"),
}


@pytest.mark.parametrize(
    ("acl_filter", "expected"),
    [
        (AclBindingFilter("ANY", "bar-1", "MATCH"), {"a2", "a3", "a4", "a5", "a6"}),
        (AclBindingFilter("ANY", "bar-1", "ANY"), {"a2", "a5"}),
        (AclBindingFilter("TOPIC", "*", "MATCH"), {"a4"}),
        (AclBindingFilter(principal="User:*"), {"a3"}),
        (AclBindingFilter(operation="READ"), {"a0", "a3", "a4"}),
        (AclBindingFilter("ANY", None, "PREFIXED"), {"a3", "a6"}),
        (AclBindingFilter.ANY, set(EXAMPLES)),
        (AclBindingFilter(host="192.168.0.1"), {"a1"}),
    ],
)
def test_section_3_4_examples(acl_filter: AclBindingFilter, expected: set[str]) -> None:
    assert {name for name, acl in EXAMPLES.items() if acl_filter.matches(acl)} == expected
    auth = StandardAuthorizer()
    auth.load_snapshot(EXAMPLES)
    assert {name for name, _ in auth.acls_with_ids(acl_filter)} == expected
    assert sorted(map(repr, auth.acls(acl_filter))) == sorted(repr(EXAMPLES[name]) for name in expected)
