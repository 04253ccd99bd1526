"""authorize_by_resource_type (docs/authorizer.md §2.7), including the BaseAuthorizerTest examples."""

from __future__ import annotations

import itertools

import pytest

from ksteward.authorizer import AclBinding, AuthorizationResult, AuthorizerNotReadyError, StandardAuthorizer
from ksteward.authorizer._by_type import _SortedStrs, prefix_successor

ALLOWED, DENIED = AuthorizationResult.ALLOWED, AuthorizationResult.DENIED
_ids = itertools.count()


def acl(
    name: str,
    permission: str = "ALLOW",
    *,
    pattern: str = "LITERAL",
    principal: str = "User:bob",
    operation: str = "READ",
    host: str = "*",
    resource_type: str = "TOPIC",
) -> AclBinding:
    return AclBinding(resource_type, name, pattern, principal, host, operation, permission)


def make(*acls: AclBinding, **config: str) -> StandardAuthorizer:
    auth = StandardAuthorizer.from_config({k.replace("_", "."): v for k, v in config.items()})
    auth.load_snapshot({next(_ids): a for a in acls})
    return auth


def by_type(
    auth: StandardAuthorizer,
    operation: str = "READ",
    resource_type: str = "TOPIC",
    principal: str = "User:bob",
    host: str = "10.0.0.1",
) -> AuthorizationResult:
    return auth.authorize_by_resource_type(principal, host, operation, resource_type)


# --- step 1: arguments --------------------------------------------------------------------------


@pytest.mark.parametrize(("operation", "resource_type"), [("ANY", "TOPIC"), ("UNKNOWN", "TOPIC"), ("READ", "ANY")])
def test_filter_values_are_rejected_even_for_super_users(operation: str, resource_type: str) -> None:
    auth = make(super_users="User:admin")
    with pytest.raises(ValueError):
        auth.authorize_by_resource_type("User:admin", "h", operation, resource_type)


def test_unknown_resource_type_is_rejected() -> None:
    with pytest.raises(ValueError):
        make().authorize_by_resource_type("User:bob", "h", "READ", "UNKNOWN")


# --- step 2: the probe on "hardcode" ------------------------------------------------------------


def test_super_user_is_allowed_despite_wildcard_deny() -> None:
    auth = make(acl("*", "DENY", principal="User:*", operation="ALL"), super_users="User:admin")
    assert by_type(auth, principal="User:admin") is ALLOWED
    assert by_type(auth) is DENIED


def test_probe_needs_readiness() -> None:
    auth = StandardAuthorizer.from_config({"allow.everyone.if.no.acl.found": "true"})
    with pytest.raises(AuthorizerNotReadyError):
        by_type(auth)
    auth.complete_initial_load()
    assert by_type(auth) is ALLOWED


def test_allow_everyone_with_only_unrelated_acls_is_allowed() -> None:
    auth = make(acl("foo", principal="User:carol"), allow_everyone_if_no_acl_found="true")
    assert by_type(auth) is ALLOWED
    assert by_type(make(acl("foo", principal="User:carol"))) is DENIED


def test_wildcard_acl_for_another_principal_turns_off_the_default() -> None:
    # The "*" ACL makes the probe resource "have ACLs"; the scan finds nothing for bob (RT039's shape).
    auth = make(acl("*", principal="User:carol"), allow_everyone_if_no_acl_found="true")
    assert by_type(auth) is DENIED


def test_probe_sees_prefixes_of_hardcode() -> None:
    auth = make(acl("hard", pattern="PREFIXED"))
    assert by_type(auth) is ALLOWED


def test_implication_reaches_the_probe_only() -> None:
    # RT041: a "*" READ allow answers DESCRIBE-by-type through the probe, although the scan alone would not.
    assert by_type(make(acl("*")), operation="DESCRIBE") is ALLOWED
    # Without the wildcard, READ on a literal does not imply DESCRIBE in the scan.
    assert by_type(make(acl("foo")), operation="DESCRIBE") is DENIED
    assert by_type(make(acl("hardcode")), operation="DESCRIBE") is ALLOWED  # the probe resource itself


# --- steps 3-8: the scan ------------------------------------------------------------------------


def test_group_prefix_sequence_from_base_authorizer_test() -> None:
    auth = make()
    steps = [
        (acl("abcde", pattern="PREFIXED", resource_type="GROUP"), ALLOWED),
        (acl("abcd", "DENY", pattern="PREFIXED", resource_type="GROUP"), DENIED),
        (acl("abc", pattern="PREFIXED", resource_type="GROUP"), ALLOWED),
        (acl("a", "DENY", pattern="PREFIXED", resource_type="GROUP"), DENIED),
        (acl("ab", pattern="PREFIXED", resource_type="GROUP"), DENIED),
    ]
    for binding, expected in steps:
        auth.add_acl(next(_ids), binding)
        assert by_type(auth, resource_type="GROUP") is expected, binding


def test_allowed_prefix_with_literal_wildcard_deny() -> None:
    auth = make(acl("hello", pattern="PREFIXED"), acl("*", "DENY"))
    assert by_type(auth) is DENIED


def test_deny_on_a_different_topic_does_not_dominate() -> None:
    auth = make(acl("topic1"), acl("topic2", "DENY"))
    assert by_type(auth) is ALLOWED


def test_deny_on_the_same_literal_dominates() -> None:
    auth = make(acl("topic1"), acl("topic1", "DENY"))
    assert by_type(auth) is DENIED
    auth.add_acl(next(_ids), acl("topic2"))
    assert by_type(auth) is ALLOWED


def test_denied_literal_never_dominates_an_allowed_prefix() -> None:
    assert by_type(make(acl("foo", pattern="PREFIXED"), acl("foo", "DENY"))) is ALLOWED


def test_denied_prefix_dominates_allowed_literals_and_longer_prefixes() -> None:
    assert by_type(make(acl("foobar"), acl("foo", "DENY", pattern="PREFIXED"))) is DENIED
    assert by_type(make(acl("foobar", pattern="PREFIXED"), acl("foo", "DENY", pattern="PREFIXED"))) is DENIED
    assert by_type(make(acl("fo", pattern="PREFIXED"), acl("foo", "DENY", pattern="PREFIXED"))) is ALLOWED
    assert by_type(make(acl("foo"), acl("foobar", "DENY", pattern="PREFIXED"))) is ALLOWED


def test_wildcard_allow_wins_unless_wildcard_deny() -> None:
    assert by_type(make(acl("*"), acl("a", "DENY", pattern="PREFIXED"), acl("hardcode", "DENY"))) is ALLOWED
    assert by_type(make(acl("*"), acl("*", "DENY", principal="User:*"))) is DENIED


def test_no_implication_in_the_scan_but_all_counts() -> None:
    auth = make(acl("foo", operation="WRITE"), acl("hardcode", principal="User:x"))
    assert by_type(auth, operation="DESCRIBE") is DENIED
    assert by_type(auth, operation="WRITE") is ALLOWED
    auth = make(acl("foo", operation="ALL"), acl("hardcode", principal="User:x"))
    assert by_type(auth, operation="DESCRIBE_CONFIGS") is ALLOWED
    auth = make(acl("foo"), acl("foo", "DENY", operation="ALL"), acl("hardcode", principal="User:x"))
    assert by_type(auth) is DENIED


def test_scan_filters_by_host_principal_and_type() -> None:
    base = acl("hardcode", principal="User:x")  # keeps the probe from answering
    assert by_type(make(base, acl("foo", host="10.0.0.2"))) is DENIED
    assert by_type(make(base, acl("foo", host="10.0.0.1"))) is ALLOWED
    assert by_type(make(base, acl("foo", principal="User:*"))) is ALLOWED
    assert by_type(make(base, acl("foo", principal="Group:*")), principal="Group:devs") is DENIED
    assert by_type(make(base, acl("foo", principal="User:*")), principal="Group:devs") is ALLOWED
    assert by_type(make(base, acl("foo", resource_type="GROUP"))) is DENIED
    assert by_type(make(base, acl("foo", principal="bob")), principal="bob") is DENIED  # no colon: never kept


def test_deny_for_user_star_on_another_host_does_not_count() -> None:
    base = acl("hardcode", principal="User:x")
    assert by_type(make(base, acl("foo"), acl("foo", "DENY", principal="User:*", host="10.9.9.9"))) is ALLOWED
    assert by_type(make(base, acl("foo"), acl("foo", "DENY", principal="User:*", host="10.0.0.1"))) is DENIED


def test_empty_names() -> None:
    base = acl("hardcode", principal="User:x")
    # An empty allowed prefix is never dominated (lengths 1..0 are checked), an empty denied prefix never
    # dominates anything, and an empty allowed literal is dominated only by an empty denied literal.
    assert by_type(make(base, acl("", pattern="PREFIXED"), acl("", "DENY", pattern="PREFIXED"))) is ALLOWED
    assert by_type(make(base, acl("foo"), acl("", "DENY", pattern="PREFIXED"))) is ALLOWED
    assert by_type(make(base, acl(""), acl("", "DENY"))) is DENIED


def test_changes_keep_the_index_in_step() -> None:
    auth = make(acl("hardcode", principal="User:x"))
    auth.add_acl("allow", acl("foo"))
    assert by_type(auth) is ALLOWED
    auth.add_acl("deny", acl("foo", "DENY"))
    assert by_type(auth) is DENIED
    auth.remove_acl("deny")
    assert by_type(auth) is ALLOWED
    auth.add_acl("pdeny", acl("f", "DENY", pattern="PREFIXED"))
    assert by_type(auth) is DENIED
    auth.add_acl("other", acl("gar"))
    assert by_type(auth) is ALLOWED
    auth.remove_acl("other")
    auth.remove_acl("pdeny")
    auth.remove_acl("allow")
    assert by_type(auth) is DENIED


def test_many_dominated_allows_are_skipped_by_prefix() -> None:
    # Every allowed literal and prefix starts with a denied prefix: one skip, not one step per name.
    allows = [acl(f"svc-{i}") for i in range(3000)] + [acl(f"svc-p{i}", pattern="PREFIXED") for i in range(300)]
    auth = make(acl("hardcode", principal="User:x"), acl("svc-", "DENY", pattern="PREFIXED"), *allows)
    assert by_type(auth) is DENIED
    auth.add_acl("escape", acl("svd"))
    assert by_type(auth) is ALLOWED


# --- the sorted container -----------------------------------------------------------------------


def test_sorted_strs_add_remove_and_neighbours() -> None:
    items = _SortedStrs()
    words = [f"w{i:05d}" for i in range(0, 3000, 3)]
    for w in reversed(words):
        items.add(w)
    assert list(items) == sorted(words) and len(items) == len(words)
    assert items.ceiling("w00001") == "w00003"
    assert items.higher("w00003") == "w00006"
    assert items.ceiling("x") is None and items.higher(words[-1]) is None
    for w in words[::2]:
        items.remove(w)
    assert list(items) == sorted(words[1::2])
    with pytest.raises(KeyError):
        items.remove("w00001")
    assert items.first() == words[1]


def test_prefix_successor() -> None:
    assert prefix_successor("ab") == "ac"
    assert prefix_successor("a" + chr(0x10FFFF)) == "b"
    assert prefix_successor(chr(0x10FFFF)) is None
    for name in ("ab", "abz", "ab" + chr(0x10FFFF) + "x"):
        assert "ab" <= name < prefix_successor("ab")  # type: ignore[operator]
