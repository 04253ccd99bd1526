"""StandardAuthorizer: every rule of docs/authorizer.md §2.2-§2.6, readiness (§4.5) and ACL changes (§4.4)."""

from __future__ import annotations

import itertools
import uuid

import pytest

from ksteward.authorizer import (
    AclBinding,
    AclOperation,
    AuthorizationResult,
    AuthorizerNotReadyError,
    Rule,
    StandardAuthorizer,
    authorized_operations_bitfield,
)

ALLOWED, DENIED = AuthorizationResult.ALLOWED, AuthorizationResult.DENIED
Op = AclOperation
_ids = itertools.count()


def acl(
    name: str = "foo",
    principal: str = "User:bob",
    operation: str = "READ",
    permission: str = "ALLOW",
    *,
    resource_type: str = "TOPIC",
    pattern: str = "LITERAL",
    host: str = "*",
) -> AclBinding:
    return AclBinding(resource_type, name, pattern, principal, host, operation, permission)


def authorizer(*acls: AclBinding, **config: str) -> StandardAuthorizer:
    auth = StandardAuthorizer.from_config({key.replace("_", "."): value for key, value in config.items()})
    auth.load_snapshot({next(_ids): a for a in acls})
    return auth


def check(
    auth: StandardAuthorizer,
    name: str = "foo",
    operation: str = "READ",
    principal: str = "User:bob",
    *,
    resource_type: str = "TOPIC",
    host: str = "10.0.0.1",
) -> AuthorizationResult:
    result = auth.authorize(principal, host, operation, resource_type, name)
    assert auth.authorize_with_reason(principal, host, operation, resource_type, name).result is result
    return result


# --- §2.2 configuration -------------------------------------------------------------------------


def test_absent_keys_mean_no_super_users_and_default_deny() -> None:
    auth = authorizer()
    assert auth.super_users == frozenset()
    assert auth.allow_everyone_if_no_acl_found is False
    assert check(auth) is DENIED


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (" ", set()),
        (";  User:bob  ;  User:alice ", {"User:bob", "User:alice"}),
        ("User:bob;User:alice ", {"User:bob", "User:alice"}),
        (":alice", {":alice"}),  # an empty type is accepted
        ("User: bob", {"User: bob"}),  # kept as a string, inner space and all
        ("\tUser:bob\x00;\x1fUser:carol", {"User:bob", "User:carol"}),  # Java's trim: every char <= U+0020
    ],
)
def test_super_users_parsing(value: str, expected: set[str]) -> None:
    assert StandardAuthorizer.from_config({"super.users": value}).super_users == expected


@pytest.mark.parametrize("value", ["bob;:alice", "User:alice;bob", "bob"])
def test_super_users_piece_without_colon_is_rejected(value: str) -> None:
    with pytest.raises(ValueError, match="expected a string in format principalType:principalName but got bob"):
        StandardAuthorizer.from_config({"super.users": value})


def test_super_user_with_inner_space_never_matches() -> None:
    auth = authorizer(super_users="User: bob")
    assert check(auth, principal="User:bob") is DENIED


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("true", True),
        ("TRUE", True),
        ("  tRuE \n", True),
        (True, True),
        ("false", False),
        ("yes", False),
        ("1", False),
        ("", False),
        ("t rue", False),
    ],
)
def test_allow_everyone_parses_like_java_boolean(value: object, expected: bool) -> None:
    auth = StandardAuthorizer.from_config({"allow.everyone.if.no.acl.found": value})
    assert auth.allow_everyone_if_no_acl_found is expected


def test_node_id_and_unknown_keys() -> None:
    assert StandardAuthorizer.from_config({"node.id": " 3 "}).node_id == 3
    assert StandardAuthorizer.from_config({"node.id": "x"}).node_id == -1
    assert StandardAuthorizer.from_config({}).node_id == -1
    StandardAuthorizer.from_config({"some.other.key": "whatever", "authorizer.class.name": "x"})  # ignored


# --- §2.3 step 1: literal-only guard ------------------------------------------------------------


@pytest.mark.parametrize("pattern", ["PREFIXED", "ANY", "MATCH", "UNKNOWN"])
def test_non_literal_action_raises(pattern: str) -> None:
    auth = authorizer(acl(), super_users="User:admin")
    with pytest.raises(ValueError, match="LITERAL"):
        auth.authorize("User:bob", "10.0.0.1", "READ", "TOPIC", "foo", pattern_type=pattern)
    with pytest.raises(ValueError):  # even for a super user: the guard comes first
        auth.authorize("User:admin", "10.0.0.1", "READ", "TOPIC", "foo", pattern_type=pattern)
    with pytest.raises(ValueError):
        auth.authorize_with_reason("User:bob", "10.0.0.1", "READ", "TOPIC", "foo", pattern_type=pattern)
    assert auth.authorize("User:bob", "10.0.0.1", "READ", "TOPIC", "foo", pattern_type="LITERAL") is ALLOWED


def test_action_resource_type_any_raises() -> None:
    with pytest.raises(ValueError):
        authorizer().authorize("User:bob", "h", "READ", "ANY", "foo")


def test_unrecognised_enum_names_raise() -> None:
    auth = authorizer()
    with pytest.raises(ValueError):
        auth.authorize("User:bob", "h", "REED", "TOPIC", "foo")
    with pytest.raises(ValueError):
        auth.authorize("User:bob", "h", "READ", "TOPICS", "foo")


def test_enum_arguments_accept_names_members_and_case() -> None:
    auth = authorizer(acl(operation="DESCRIBE_CONFIGS", resource_type="TRANSACTIONAL_ID"))
    for op, rt in [
        ("DESCRIBE_CONFIGS", "TRANSACTIONAL_ID"),
        ("describe_configs", "transactional_id"),
        (Op.DESCRIBE_CONFIGS, "TransactionalId"),
        (10, 5),
    ]:
        assert auth.authorize("User:bob", "h", op, rt, "foo") is ALLOWED  # type: ignore[arg-type]


# --- §2.3 step 3: super users -------------------------------------------------------------------


def test_super_user_is_allowed_despite_deny_all() -> None:
    auth = authorizer(acl("*", "User:*", "ALL", "DENY"), super_users="User:admin")
    assert check(auth, principal="User:admin", operation="ALTER") is ALLOWED
    decision = auth.authorize_with_reason("User:admin", "h", "ALTER", "TOPIC", "foo")
    assert decision.rule is Rule.SUPER_USER and decision.acl is None


def test_super_user_comparison_is_exact_and_case_sensitive() -> None:
    auth = authorizer(super_users="User:Admin")
    assert check(auth, principal="User:admin") is DENIED
    assert check(auth, principal="user:Admin") is DENIED
    assert check(auth, principal="User:Admin") is ALLOWED


def test_super_users_user_star_is_not_a_wildcard() -> None:
    auth = authorizer(super_users="User:*")
    assert check(auth, principal="User:bob") is DENIED
    assert check(auth, principal="User:*") is ALLOWED  # only a session that literally is User:*


# --- §2.3 step 4 and §4.5: readiness ------------------------------------------------------------


def test_not_ready_until_initial_load_except_super_users() -> None:
    auth = StandardAuthorizer.from_config({"super.users": "User:admin", "allow.everyone.if.no.acl.found": "true"})
    auth.add_acl(1, acl())  # log deltas may arrive before the load completes
    assert not auth.is_ready
    for call in (
        lambda: auth.authorize("User:bob", "h", "READ", "TOPIC", "foo"),
        lambda: auth.authorize_with_reason("User:bob", "h", "READ", "TOPIC", "foo"),
        lambda: auth.authorize_by_resource_type("User:bob", "h", "READ", "TOPIC"),
        lambda: auth.authorized_operations("User:bob", "h", "TOPIC", "foo"),
    ):
        with pytest.raises(AuthorizerNotReadyError):
            call()
    assert auth.authorize("User:admin", "h", "READ", "TOPIC", "foo") is ALLOWED
    assert auth.authorize_by_resource_type("User:admin", "h", "READ", "TOPIC") is ALLOWED
    auth.complete_initial_load()
    assert auth.is_ready
    assert check(auth) is ALLOWED


def test_load_snapshot_completes_the_initial_load() -> None:
    auth = StandardAuthorizer()
    auth.load_snapshot({})
    assert auth.is_ready and check(auth) is DENIED


def test_readiness_error_is_not_a_value_error() -> None:
    assert not issubclass(AuthorizerNotReadyError, ValueError)


# --- §2.3 step 5: candidate ACLs ----------------------------------------------------------------


def test_literal_foo_is_not_a_prefix_of_foobar() -> None:
    auth = authorizer(acl("foo"))
    assert check(auth, "foobar") is DENIED
    assert check(auth, "fo") is DENIED
    assert check(auth, "foo") is ALLOWED


def test_prefixed_matches_names_starting_with_it_including_itself() -> None:
    auth = authorizer(acl("foo", pattern="PREFIXED"))
    assert check(auth, "foo") is ALLOWED
    assert check(auth, "foobar") is ALLOWED
    assert check(auth, "fo") is DENIED
    assert check(auth, "xfoo") is DENIED


def test_prefixed_longer_than_the_name_does_not_match() -> None:
    auth = authorizer(acl("foobar", pattern="PREFIXED"), allow_everyone_if_no_acl_found="true")
    assert check(auth, "foo") is ALLOWED  # the default: "foobar" is not a candidate for "foo"
    assert auth.authorize_with_reason("User:bob", "h", "READ", "TOPIC", "foo").rule is Rule.ALLOW_EVERYONE_DEFAULT


def test_literal_star_is_the_wildcard() -> None:
    auth = authorizer(acl("*"))
    assert check(auth, "anything") is ALLOWED
    assert check(auth, "*") is ALLOWED


def test_prefixed_star_is_not_a_wildcard() -> None:
    auth = authorizer(acl("*", pattern="PREFIXED"))
    assert check(auth, "anything") is DENIED
    assert check(auth, "*anything") is ALLOWED
    assert check(auth, "*") is ALLOWED


def test_empty_prefixed_name_matches_every_resource() -> None:
    auth = authorizer(acl("", pattern="PREFIXED"))  # only insertable below CreateAcls' validation
    assert check(auth, "anything") is ALLOWED
    assert check(auth, "") is ALLOWED


def test_names_are_case_sensitive() -> None:
    auth = authorizer(acl("Foo"), acl("Bar", pattern="PREFIXED"))
    assert check(auth, "foo") is DENIED
    assert check(auth, "Foo") is ALLOWED
    assert check(auth, "bar-1") is DENIED
    assert check(auth, "Bar-1") is ALLOWED


def test_names_with_colons_and_unicode() -> None:
    auth = authorizer(acl("a:b:c"), acl("ü/", pattern="PREFIXED"))
    assert check(auth, "a:b:c") is ALLOWED
    assert check(auth, "a:b") is DENIED
    assert check(auth, "ü/x") is ALLOWED


def test_acls_of_other_resource_types_never_count() -> None:
    auth = authorizer(acl("foo", resource_type="GROUP"), acl("*", resource_type="CLUSTER"))
    assert check(auth, "foo") is DENIED
    auth = authorizer(
        acl("foo", "User:carol", permission="DENY", resource_type="GROUP"), allow_everyone_if_no_acl_found="true"
    )
    assert check(auth, "foo") is ALLOWED  # the GROUP ACL does not make TOPIC foo "have ACLs"


def test_cluster_wildcard_matches_kafka_cluster() -> None:
    auth = authorizer(acl("*", operation="ALTER", resource_type="CLUSTER"))
    assert check(auth, "kafka-cluster", "ALTER", resource_type="CLUSTER") is ALLOWED


# --- §2.3 step 6: principal ---------------------------------------------------------------------


def test_principal_must_match_exactly_case_sensitively() -> None:
    auth = authorizer(acl(principal="User:bob"))
    assert check(auth, principal="User:bob") is ALLOWED
    assert check(auth, principal="User:Bob") is DENIED
    assert check(auth, principal="user:bob") is DENIED
    assert check(auth, principal="Group:bob") is DENIED


def test_user_star_matches_every_principal_of_every_type() -> None:
    auth = authorizer(acl(principal="User:*"))
    for principal in ("User:bob", "Group:devs", "ServiceAccount:x", "User:*"):
        assert check(auth, principal=principal) is ALLOWED


def test_group_star_is_not_a_wildcard() -> None:
    auth = authorizer(acl(principal="Group:*"))
    assert check(auth, principal="Group:devs") is DENIED
    assert check(auth, principal="User:bob") is DENIED
    assert check(auth, principal="Group:*") is ALLOWED


def test_principal_split_at_the_first_colon() -> None:
    auth = authorizer(acl(principal="User:CN=a:b"))
    assert check(auth, principal="User:CN=a:b") is ALLOWED
    assert check(auth, principal="User:CN=a") is DENIED


def test_stored_principal_without_colon_never_matches_but_counts_as_an_acl() -> None:
    # §2.6: Kafka throws here; ksteward does not copy that. The ACL never applies, even to a session
    # principal spelled the same way, but the resource still "has ACLs".
    auth = authorizer(acl(principal="bob"), allow_everyone_if_no_acl_found="true")
    assert check(auth, principal="User:bob") is DENIED
    assert check(auth, principal="bob") is DENIED
    assert auth.authorize_with_reason("bob", "h", "READ", "TOPIC", "foo").rule is Rule.NO_MATCHING_ACL
    assert check(auth, "other") is ALLOWED
    assert auth.authorize_by_resource_type("bob", "h", "READ", "TOPIC") is ALLOWED  # the probe's default


def test_session_principal_user_star_is_an_ordinary_principal() -> None:
    # §2.6: Kafka throws "duplicate element: User:*"; here it simply matches ACLs for User:*.
    auth = authorizer(acl(principal="User:*"), acl("bar", principal="User:bob"))
    assert check(auth, principal="User:*") is ALLOWED
    assert check(auth, "bar", principal="User:*") is DENIED
    assert auth.authorize_by_resource_type("User:*", "h", "READ", "TOPIC") is ALLOWED


# --- §2.3 step 6: host --------------------------------------------------------------------------


def test_host_is_exact_text() -> None:
    auth = authorizer(acl(host="127.0.0.1"))
    assert check(auth, host="127.0.0.1") is ALLOWED
    assert check(auth, host="127.0.0.2") is DENIED
    auth = authorizer(acl(host="localhost"))
    assert check(auth, host="127.0.0.1") is DENIED  # no DNS
    auth = authorizer(acl(host="10.0.0.0/8"))
    assert check(auth, host="10.0.0.1") is DENIED  # no CIDR


def test_ipv6_host_is_javas_uncompressed_text() -> None:
    auth = authorizer(acl(host="0:0:0:0:0:0:0:1"))
    assert check(auth, host="0:0:0:0:0:0:0:1") is ALLOWED
    assert check(auth, host="::1") is DENIED
    auth = authorizer(acl(host="::1"))
    assert check(auth, host="0:0:0:0:0:0:0:1") is DENIED


def test_host_star_matches_every_host_and_empty_host_matches_none() -> None:
    auth = authorizer(acl(host="*"), acl("bar", host=""))
    assert check(auth, host="192.168.1.1") is ALLOWED
    assert check(auth, "bar", host="192.168.1.1") is DENIED


# --- §2.3 step 6: operations and the implication table (§1.3) -----------------------------------

IMPLIED_BY_ALLOW = {
    (Op.READ, Op.DESCRIBE),
    (Op.WRITE, Op.DESCRIBE),
    (Op.DELETE, Op.DESCRIBE),
    (Op.ALTER, Op.DESCRIBE),
    (Op.ALTER_CONFIGS, Op.DESCRIBE_CONFIGS),
}
CONCRETE = [op for op in Op if op not in (Op.ANY, Op.UNKNOWN, Op.ALL)]


@pytest.mark.parametrize(("granted", "requested"), list(itertools.product(CONCRETE, CONCRETE)))
def test_allow_implication_table_both_ways(granted: Op, requested: Op) -> None:
    auth = authorizer(acl(operation=granted.name))
    expected = granted == requested or (granted, requested) in IMPLIED_BY_ALLOW
    assert (check(auth, operation=requested.name) is ALLOWED) == expected


@pytest.mark.parametrize(("denied", "requested"), list(itertools.product(CONCRETE, CONCRETE)))
def test_deny_implies_nothing(denied: Op, requested: Op) -> None:
    # DENY X plus ALLOW ALL: the request is denied exactly when X is the requested operation.
    auth = authorizer(acl(operation=denied.name, permission="DENY"), acl(operation="ALL"))
    assert (check(auth, operation=requested.name) is DENIED) == (denied == requested)


@pytest.mark.parametrize("requested", CONCRETE)
def test_allow_all_grants_and_deny_all_denies_every_operation(requested: Op) -> None:
    assert check(authorizer(acl(operation="ALL")), operation=requested.name) is ALLOWED
    auth = authorizer(acl(operation="ALL", permission="DENY"), acl(operation=requested.name))
    assert check(auth, operation=requested.name) is DENIED


def test_no_other_implications() -> None:
    assert check(authorizer(acl(operation="CREATE")), operation="DESCRIBE") is DENIED
    assert check(authorizer(acl(operation="ALTER")), operation="ALTER_CONFIGS") is DENIED
    assert check(authorizer(acl(operation="DESCRIBE")), operation="DESCRIBE_CONFIGS") is DENIED
    assert check(authorizer(acl(operation="WRITE")), operation="READ") is DENIED
    for op in CONCRETE:
        if op is not Op.IDEMPOTENT_WRITE:
            assert check(authorizer(acl(operation="IDEMPOTENT_WRITE")), operation=op.name) is DENIED


def test_deny_read_does_not_deny_describe() -> None:
    auth = authorizer(acl(operation="READ", permission="DENY"), acl(operation="DESCRIBE"))
    assert check(auth, operation="DESCRIBE") is ALLOWED
    auth = authorizer(acl(operation="ALTER_CONFIGS", permission="DENY"), acl(operation="DESCRIBE_CONFIGS"))
    assert check(auth, operation="DESCRIBE_CONFIGS") is ALLOWED


# --- §2.3 step 7: decision ----------------------------------------------------------------------


def test_deny_wins_over_allow_whatever_the_pattern() -> None:
    assert check(authorizer(acl(), acl(permission="DENY"))) is DENIED
    assert check(authorizer(acl("foo"), acl("fo", pattern="PREFIXED", permission="DENY"))) is DENIED
    assert check(authorizer(acl("foo"), acl("*", principal="User:*", permission="DENY"))) is DENIED
    assert check(authorizer(acl("*"), acl("foo", permission="DENY"))) is DENIED
    assert check(authorizer(acl(operation="ALL"), acl(host="10.0.0.1", permission="DENY"))) is DENIED


def test_deny_all_wildcard_beats_everything_but_super_users() -> None:
    auth = authorizer(
        acl("*", "User:*", "ALL", "DENY"),
        acl("foo", operation="ALL"),
        acl("f", pattern="PREFIXED"),
        super_users="User:s",
    )
    for op in CONCRETE:
        assert check(auth, operation=op.name) is DENIED
    assert check(auth, principal="User:s") is ALLOWED


def test_resource_with_acls_but_none_applying_is_denied_even_with_allow_everyone() -> None:
    other_resource_acls = [
        acl(principal="User:carol", permission="DENY"),  # a deny-only ACL for another principal
        acl(operation="WRITE"),  # a different operation
        acl(host="10.9.9.9"),  # a different host
        acl("*", principal="User:carol"),  # any wildcard-named ACL of the same type
        acl("f", principal="User:carol", pattern="PREFIXED"),  # a prefix ACL for someone else
    ]
    for other in other_resource_acls:
        auth = authorizer(other, allow_everyone_if_no_acl_found="true")
        assert check(auth) is DENIED, other
        assert auth.authorize_with_reason("User:bob", "10.0.0.1", "READ", "TOPIC", "foo").rule is Rule.NO_MATCHING_ACL


def test_default_applies_only_without_matching_patterns() -> None:
    auth = authorizer(acl("bar"), allow_everyone_if_no_acl_found="true")
    assert check(auth, "foo") is ALLOWED
    assert auth.authorize_with_reason("User:x", "h", "READ", "TOPIC", "foo").rule is Rule.ALLOW_EVERYONE_DEFAULT
    auth = authorizer(acl("bar"), allow_everyone_if_no_acl_found="false")
    assert check(auth, "foo") is DENIED
    assert auth.authorize_with_reason("User:x", "h", "READ", "TOPIC", "foo").rule is Rule.NO_MATCHING_ACL


def test_unknown_permission_acts_as_a_deny_like_kafkas_find_result() -> None:
    auth = authorizer(acl(), acl(permission="UNKNOWN"))
    assert check(auth) is DENIED
    assert check(auth, operation="DESCRIBE") is ALLOWED  # a non-ALLOW entry implies nothing


def test_unknown_pattern_type_is_scanned_as_a_prefix_like_kafkas() -> None:
    auth = authorizer(acl("fo", pattern="UNKNOWN"))
    assert check(auth, "foo") is ALLOWED
    assert check(auth, "bar") is DENIED


# --- the reason (Decision) ----------------------------------------------------------------------


def test_decision_names_the_deciding_acl_and_image_offset() -> None:
    auth = StandardAuthorizer()
    allow, deny = acl("fo", pattern="PREFIXED"), acl("foo", operation="WRITE", permission="DENY")
    auth.load_snapshot({"a": allow, "d": deny}, offset=41)
    auth.add_acl("x", acl("zzz"), offset=42)
    decision = auth.authorize_with_reason("User:bob", "h", "READ", "TOPIC", "foo")
    assert (decision.result, decision.rule, decision.acl_id, decision.acl) == (ALLOWED, Rule.ACL, "a", allow)
    assert decision.image_offset == 42 == auth.image_offset
    decision = auth.authorize_with_reason("User:bob", "h", "WRITE", "TOPIC", "foo")
    assert (decision.result, decision.acl_id, decision.acl) == (DENIED, "d", deny)
    assert decision.allowed is False
    auth.remove_acl("x", offset=43)
    assert auth.authorize_with_reason("User:bob", "h", "READ", "TOPIC", "foo").image_offset == 43


def test_decision_prefers_the_first_deny_in_kafkas_scan_order() -> None:
    auth = StandardAuthorizer()
    auth.load_snapshot(
        {
            "wild": acl("*", operation="ALL", permission="DENY"),
            "short": acl("f", pattern="PREFIXED", permission="DENY"),
            "exact": acl("foo", permission="DENY"),
        }
    )
    assert auth.authorize_with_reason("User:bob", "h", "READ", "TOPIC", "foo").acl_id == "exact"
    assert auth.authorize_with_reason("User:bob", "h", "READ", "TOPIC", "fx").acl_id == "short"
    assert auth.authorize_with_reason("User:bob", "h", "READ", "TOPIC", "x").acl_id == "wild"


def test_decision_prefers_the_last_allow_in_kafkas_scan_order() -> None:
    # Kafka remembers the last applicable ALLOW it meets: exact name, then shorter prefixes, then "*".
    auth = StandardAuthorizer()
    auth.load_snapshot(
        {"exact": acl("foo"), "short": acl("f", pattern="PREFIXED"), "longer": acl("fo", pattern="PREFIXED")}
    )
    assert auth.authorize_with_reason("User:bob", "h", "READ", "TOPIC", "foo").acl_id == "short"
    auth.add_acl("wild", acl("*", principal="User:*"))
    assert auth.authorize_with_reason("User:bob", "h", "READ", "TOPIC", "foo").acl_id == "wild"
    # Within one name: operation, principal, host order; ALL (2) sorts before READ (3).
    auth = StandardAuthorizer()
    auth.load_snapshot({"all": acl(operation="ALL"), "read": acl(), "star": acl(principal="User:*")})
    assert auth.authorize_with_reason("User:bob", "h", "READ", "TOPIC", "foo").acl_id == "read"


# --- authorized operations (§1.6) ---------------------------------------------------------------


def test_authorized_operations_bitfield() -> None:
    auth = authorizer(acl(operation="WRITE"), acl(operation="ALTER_CONFIGS"), super_users="User:admin")
    field = authorized_operations_bitfield(auth, "User:bob", "h", "TOPIC", "foo")
    expected = (1 << Op.WRITE) | (1 << Op.DESCRIBE) | (1 << Op.ALTER_CONFIGS) | (1 << Op.DESCRIBE_CONFIGS)
    assert field == expected
    admin = authorized_operations_bitfield(auth, "User:admin", "h", "GROUP", "g")
    assert admin == sum(1 << op for op in (Op.READ, Op.DESCRIBE, Op.DELETE, Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS))
    assert authorized_operations_bitfield(auth, "User:bob", "h", "TOPIC", "other") == 0
    everyone = authorizer(allow_everyone_if_no_acl_found="true")
    assert authorized_operations_bitfield(everyone, "User:x", "h", "USER", "User:y") == (1 << 13) | (1 << 14)


# --- §4.4: changes ------------------------------------------------------------------------------


def test_add_and_remove_change_answers() -> None:
    auth = authorizer()
    acl_id = uuid.uuid4()
    auth.add_acl(acl_id, acl())
    assert check(auth) is ALLOWED and auth.acl_count() == 1
    assert auth.remove_acl(acl_id) == acl()
    assert check(auth) is DENIED and auth.acl_count() == 0


def test_add_existing_id_or_duplicate_tuple_raises() -> None:
    auth = authorizer()
    auth.add_acl(1, acl())
    with pytest.raises(ValueError, match="already exists"):
        auth.add_acl(1, acl("other"))
    with pytest.raises(ValueError, match="already stored"):
        auth.add_acl(2, acl())
    assert auth.acl_count() == 1
    auth.add_acl(3, acl(host="10.0.0.1"))  # differs in one field: a different ACL


def test_remove_unknown_id_raises_key_error() -> None:
    auth = authorizer()
    with pytest.raises(KeyError):
        auth.remove_acl("nope")
    auth.add_acl(1, acl())
    auth.remove_acl(1)
    with pytest.raises(KeyError):
        auth.remove_acl(1)


def test_add_acl_needs_a_binding() -> None:
    with pytest.raises(TypeError):
        authorizer().add_acl(1, ("TOPIC", "foo"))  # type: ignore[arg-type]


def test_load_snapshot_replaces_everything_and_rejects_duplicates_atomically() -> None:
    auth = authorizer(acl("old"))
    auth.load_snapshot([(1, acl("new")), (2, acl("new", operation="WRITE"))])
    assert check(auth, "old") is DENIED and check(auth, "new") is ALLOWED
    with pytest.raises(ValueError):
        auth.load_snapshot([(1, acl("x")), (2, acl("x"))])
    assert check(auth, "new") is ALLOWED and auth.acl_count() == 2  # the failed load published nothing


def test_removing_the_last_acl_on_a_name_restores_the_default() -> None:
    auth = authorizer(allow_everyone_if_no_acl_found="true")
    auth.add_acl(1, acl(host="10.0.0.9"))
    auth.add_acl(2, acl("f", pattern="PREFIXED", principal="User:x"))
    auth.add_acl(3, acl("*", principal="User:x"))
    assert check(auth) is DENIED
    for acl_id in (1, 2, 3):
        auth.remove_acl(acl_id)
    assert check(auth) is ALLOWED
