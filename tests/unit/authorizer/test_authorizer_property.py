"""The indexed authorizer against a brute-force reference written straight from docs/authorizer.md §2-§3.

The reference is a plain loop over every stored ACL, one function per rule, with no index and no bit
masks. Small alphabets (names, principals, hosts) make patterns, wildcards and prefixes collide often.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ksteward.authorizer import (
    SUPPORTED_OPERATIONS,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AuthorizationResult,
    AuthorizerNotReadyError,
    PatternType,
    ResourceType,
    Rule,
    StandardAuthorizer,
)

ALLOWED, DENIED = AuthorizationResult.ALLOWED, AuthorizationResult.DENIED
Op, Perm, Pat, RT = AclOperation, AclPermissionType, PatternType, ResourceType

# --- the reference ------------------------------------------------------------------------------

# §1.3: the operations an ALLOW of each kind grants besides itself. Nothing else implies anything.
IMPLIED_BY_ALLOW = {
    Op.DESCRIBE: {Op.READ, Op.WRITE, Op.DELETE, Op.ALTER, Op.DESCRIBE},
    Op.DESCRIBE_CONFIGS: {Op.ALTER_CONFIGS, Op.DESCRIBE_CONFIGS},
}


def split_principal(text: str) -> tuple[str, str] | None:
    """§2.3 step 6: split at the first colon; a principal without one never matches (§2.6, not Kafka's throw)."""
    if ":" not in text:
        return None
    kind, name = text.split(":", 1)
    return kind, name


def pattern_matches(acl: AclBinding, resource_type: RT, name: str) -> bool:
    """§2.3 step 5."""
    if acl.resource_type != resource_type:
        return False
    if acl.pattern_type == Pat.LITERAL:
        return acl.resource_name == name or acl.resource_name == "*"
    if acl.pattern_type == Pat.PREFIXED:
        return name.startswith(acl.resource_name)
    return False


def principal_applies(acl_principal: str, principal: str) -> bool:
    parsed = split_principal(acl_principal)
    return parsed is not None and (parsed == split_principal(principal) or parsed == ("User", "*"))


def applies(acl: AclBinding, principal: str, host: str, op: Op) -> bool:
    """§2.3 step 6: principal, host and operation (implication for ALLOW only)."""
    if not principal_applies(acl.principal, principal):
        return False
    if acl.host != "*" and acl.host != host:
        return False
    if acl.operation == Op.ALL:
        return True
    if acl.permission_type == Perm.ALLOW:
        return acl.operation == op or acl.operation in IMPLIED_BY_ALLOW.get(op, set())
    return acl.operation == op


def ref_authorize(
    acls: Iterable[AclBinding],
    supers: set[str],
    allow_everyone: bool,
    ready: bool,
    principal: str,
    host: str,
    op: Op,
    resource_type: RT,
    name: str,
) -> AuthorizationResult:
    """§2.3 steps 3-7."""
    if principal in supers:
        return ALLOWED
    if not ready:
        raise AuthorizerNotReadyError
    candidates = [a for a in acls if pattern_matches(a, resource_type, name)]
    applicable = [a for a in candidates if applies(a, principal, host, op)]
    if any(a.permission_type == Perm.DENY for a in applicable):
        return DENIED
    if any(a.permission_type == Perm.ALLOW for a in applicable):
        return ALLOWED
    if candidates:
        return DENIED
    return ALLOWED if allow_everyone else DENIED


def ref_deciding_acl(
    acls: Iterable[AclBinding], principal: str, host: str, op: Op, resource_type: RT, name: str
) -> AclBinding | None:
    """§2.4/§6.1: Kafka's scan (names descending, then the ``*`` section); first DENY, else last ALLOW."""
    acls = list(acls)
    first = [
        a
        for a in acls
        if a.resource_type == resource_type
        and name.startswith(a.resource_name)
        and (a.pattern_type != Pat.LITERAL or a.resource_name == name)
    ]
    first.sort(
        key=lambda a: (-len(a.resource_name), a.pattern_type, a.operation, a.principal, a.host, a.permission_type)
    )
    second = [
        a for a in acls if a.resource_type == resource_type and a.pattern_type == Pat.LITERAL and a.resource_name == "*"
    ]
    second.sort(key=lambda a: (a.operation, a.principal, a.host, a.permission_type))
    last_allow = None
    for acl in first + second:
        if applies(acl, principal, host, op):
            if acl.permission_type != Perm.ALLOW:
                return acl
            last_allow = acl
    return last_allow


def ref_by_resource_type(
    acls: Iterable[AclBinding],
    supers: set[str],
    allow_everyone: bool,
    ready: bool,
    principal: str,
    host: str,
    op: Op,
    resource_type: RT,
) -> AuthorizationResult:
    """§2.7, Kafka's default ``authorizeByResourceType``, literally."""
    if resource_type in (RT.ANY, RT.UNKNOWN) or op in (Op.ANY, Op.UNKNOWN):
        raise ValueError
    if ref_authorize(acls, supers, allow_everyone, ready, principal, host, op, resource_type, "hardcode") == ALLOWED:
        return ALLOWED
    deny_literals: set[str] = set()
    deny_prefixes: set[str] = set()
    allow_literals: set[str] = set()
    allow_prefixes: set[str] = set()
    wildcard_allow = False
    for acl in acls:
        if acl.resource_type != resource_type:
            continue
        if acl.host != host and acl.host != "*":
            continue
        if split_principal(acl.principal) != split_principal(principal) and acl.principal != "User:*":
            continue
        if split_principal(acl.principal) is None and acl.principal != "User:*":
            continue
        if acl.operation != op and acl.operation != Op.ALL:
            continue
        if acl.permission_type == Perm.DENY:
            if acl.pattern_type == Pat.LITERAL:
                if acl.resource_name == "*":
                    return DENIED
                deny_literals.add(acl.resource_name)
            elif acl.pattern_type == Pat.PREFIXED:
                deny_prefixes.add(acl.resource_name)
            continue
        if acl.permission_type != Perm.ALLOW:
            continue
        if acl.pattern_type == Pat.LITERAL:
            if acl.resource_name == "*":
                wildcard_allow = True
                continue
            allow_literals.add(acl.resource_name)
        elif acl.pattern_type == Pat.PREFIXED:
            allow_prefixes.add(acl.resource_name)
    if wildcard_allow:
        return ALLOWED

    def dominated(name: str) -> bool:
        return any(name[:n] in deny_prefixes for n in range(1, len(name) + 1))

    for literal in allow_literals:
        if literal in deny_literals or dominated(literal):
            continue
        return ALLOWED
    for prefix in allow_prefixes:
        if not dominated(prefix):
            return ALLOWED
    return DENIED


def ref_filter_matches(f: AclBindingFilter, acl: AclBinding) -> bool:
    """§3.1, rule by rule."""
    if f.resource_type != RT.ANY and f.resource_type != acl.resource_type:
        return False
    if f.pattern_type not in (Pat.ANY, Pat.MATCH) and f.pattern_type != acl.pattern_type:
        return False
    if f.resource_name is not None:
        if f.pattern_type == Pat.ANY or f.pattern_type == acl.pattern_type:
            if f.resource_name != acl.resource_name:
                return False
        elif acl.pattern_type == Pat.LITERAL:
            if not (acl.resource_name == f.resource_name or acl.resource_name == "*"):
                return False
        elif not f.resource_name.startswith(acl.resource_name):
            return False
    if f.principal is not None and f.principal != acl.principal:
        return False
    if f.host is not None and f.host != acl.host:
        return False
    if f.operation != Op.ANY and f.operation != acl.operation:
        return False
    return f.permission_type == Perm.ANY or f.permission_type == acl.permission_type


# --- strategies ---------------------------------------------------------------------------------

NAMES = ["", "a", "ab", "abc", "b", "ba", "*", "*a", "a*", "hardcode", "hard", "h", "kafka-cluster"]
ACL_PRINCIPALS = ["User:alice", "User:bob", "User:*", "Group:alice", "Group:*", "alice", "User:a:b", "user:alice"]
REQUEST_PRINCIPALS = ["User:alice", "User:bob", "Group:alice", "User:*", "User:a:b", "User:admin"]
ACL_HOSTS = ["*", "10.0.0.1", "10.0.0.2", "0:0:0:0:0:0:0:1", "", "localhost"]
REQUEST_HOSTS = ["10.0.0.1", "10.0.0.2", "0:0:0:0:0:0:0:1", "127.0.0.1"]
TYPES = [RT.TOPIC, RT.GROUP, RT.CLUSTER]
CONCRETE_OPS = [op for op in Op if op not in (Op.ANY, Op.UNKNOWN)]
REQUEST_OPS = [op for op in CONCRETE_OPS if op is not Op.ALL]

bindings = st.builds(
    AclBinding,
    resource_type=st.sampled_from(TYPES),
    resource_name=st.sampled_from(NAMES),
    pattern_type=st.sampled_from([Pat.LITERAL, Pat.PREFIXED]),
    principal=st.sampled_from(ACL_PRINCIPALS),
    host=st.sampled_from(ACL_HOSTS),
    operation=st.sampled_from(CONCRETE_OPS),
    permission_type=st.sampled_from([Perm.ALLOW, Perm.DENY]),
)
acl_sets = st.lists(bindings, max_size=25, unique=True)
requests = st.tuples(
    st.sampled_from(REQUEST_PRINCIPALS),
    st.sampled_from(REQUEST_HOSTS),
    st.sampled_from(REQUEST_OPS),
    st.sampled_from(TYPES),
    st.sampled_from(NAMES),
)
configs = st.tuples(
    st.sets(st.sampled_from(["User:admin", "User:*", "User:alice"]), max_size=2),
    st.booleans(),
)
filters = st.builds(
    AclBindingFilter,
    resource_type=st.sampled_from([RT.ANY, *TYPES]),
    resource_name=st.none() | st.sampled_from(NAMES),
    pattern_type=st.sampled_from([Pat.ANY, Pat.MATCH, Pat.LITERAL, Pat.PREFIXED]),
    principal=st.none() | st.sampled_from(ACL_PRINCIPALS),
    host=st.none() | st.sampled_from(ACL_HOSTS),
    operation=st.sampled_from([Op.ANY, *CONCRETE_OPS]),
    permission_type=st.sampled_from([Perm.ANY, Perm.ALLOW, Perm.DENY]),
)

PROPERTY_SETTINGS = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def make(supers: set[str], allow_everyone: bool, acls: list[AclBinding]) -> StandardAuthorizer:
    auth = StandardAuthorizer.from_config(
        {"super.users": ";".join(sorted(supers)), "allow.everyone.if.no.acl.found": str(allow_everyone)}
    )
    auth.load_snapshot({i: acl for i, acl in enumerate(acls)})
    return auth


def check_request(
    auth: StandardAuthorizer, acls: list[AclBinding], supers: set[str], allow_everyone: bool, request: tuple
) -> None:
    principal, host, op, rt, name = request
    expected = ref_authorize(acls, supers, allow_everyone, True, principal, host, op, rt, name)
    assert auth.authorize(principal, host, op, rt, name) is expected, request
    decision = auth.authorize_with_reason(principal, host, op, rt, name)
    assert decision.result is expected
    if decision.rule is Rule.ACL:
        assert decision.acl == ref_deciding_acl(acls, principal, host, op, rt, name)
        assert acls[decision.acl_id] is decision.acl
    elif decision.rule is Rule.SUPER_USER:
        assert principal in supers
    else:
        assert ref_deciding_acl(acls, principal, host, op, rt, name) is None
        has_acls = any(pattern_matches(a, rt, name) for a in acls)
        assert decision.rule is (
            Rule.ALLOW_EVERYONE_DEFAULT if not has_acls and allow_everyone else Rule.NO_MATCHING_ACL
        )
    by_type = ref_by_resource_type(acls, supers, allow_everyone, True, principal, host, op, rt)
    assert auth.authorize_by_resource_type(principal, host, op, rt) is by_type, request


@PROPERTY_SETTINGS
@given(acls=acl_sets, config=configs, reqs=st.lists(requests, min_size=1, max_size=15))
def test_authorize_and_by_resource_type_match_the_reference(
    acls: list[AclBinding], config: tuple[set[str], bool], reqs: list[tuple]
) -> None:
    supers, allow_everyone = config
    auth = make(supers, allow_everyone, acls)
    for request in reqs:
        check_request(auth, acls, supers, allow_everyone, request)


@PROPERTY_SETTINGS
@given(acls=acl_sets, config=configs, reqs=st.lists(requests, min_size=1, max_size=8))
def test_authorized_operations_match_the_reference(
    acls: list[AclBinding], config: tuple[set[str], bool], reqs: list[tuple]
) -> None:
    supers, allow_everyone = config
    auth = make(supers, allow_everyone, acls)
    for principal, host, _, rt, name in reqs:
        expected = 0
        for op in SUPPORTED_OPERATIONS[rt]:
            if ref_authorize(acls, supers, allow_everyone, True, principal, host, op, rt, name) is ALLOWED:
                expected |= 1 << op
        assert auth.authorized_operations(principal, host, rt, name) == expected


@PROPERTY_SETTINGS
@given(acls=acl_sets, acl_filter=filters)
def test_acls_filter_matches_the_reference(acls: list[AclBinding], acl_filter: AclBindingFilter) -> None:
    auth = make(set(), False, acls)
    expected = [a for a in acls if ref_filter_matches(acl_filter, a)]
    assert sorted(map(repr, auth.acls(acl_filter))) == sorted(map(repr, expected))
    assert all(acl_filter.matches(a) == ref_filter_matches(acl_filter, a) for a in acls)
    got_ids = sorted(i for i, _ in auth.acls_with_ids(acl_filter))
    assert got_ids == sorted(i for i, a in enumerate(acls) if ref_filter_matches(acl_filter, a))


changes = st.lists(
    st.one_of(
        st.tuples(st.just("add"), bindings),
        st.tuples(st.just("remove"), st.integers(0, 40)),
        # The same ACL with the other permission: the allow/deny twins that the by-type index pairs up.
        st.tuples(st.just("twin"), st.integers(0, 40)),
    ),
    max_size=40,
)


@PROPERTY_SETTINGS
@given(
    initial=acl_sets,
    steps=changes,
    config=configs,
    reqs=st.lists(requests, min_size=1, max_size=6),
    acl_filter=filters,
)
def test_random_add_remove_sequences_match_the_reference(
    initial: list[AclBinding],
    steps: list[tuple],
    config: tuple[set[str], bool],
    reqs: list[tuple],
    acl_filter: AclBindingFilter,
) -> None:
    supers, allow_everyone = config
    auth = make(supers, allow_everyone, initial)
    state: dict[int, AclBinding] = dict(enumerate(initial))
    next_id = len(initial)
    for kind, arg in steps:
        if kind == "twin" and state:
            original = state[sorted(state)[arg % len(state)]]
            flipped = Perm.DENY if original.permission_type == Perm.ALLOW else Perm.ALLOW
            kind, arg = "add", dataclasses.replace(original, permission_type=flipped)
        if kind == "add":
            if arg in state.values():
                with pytest.raises(ValueError):
                    auth.add_acl(next_id, arg)
            else:
                auth.add_acl(next_id, arg)
                state[next_id] = arg
            next_id += 1
        elif kind == "twin":
            continue
        elif state:
            victim = sorted(state)[arg % len(state)]
            assert auth.remove_acl(victim) is state.pop(victim)
        else:
            with pytest.raises(KeyError):
                auth.remove_acl(arg)
        assert auth.acl_count() == len(state)
        # After every change, the index must answer as a fresh reference over the remaining ACLs.
        acls = list(state.values())
        ids = list(state)
        for principal, host, op, rt, name in reqs:
            expected = ref_authorize(acls, supers, allow_everyone, True, principal, host, op, rt, name)
            assert auth.authorize(principal, host, op, rt, name) is expected
            by_type = ref_by_resource_type(acls, supers, allow_everyone, True, principal, host, op, rt)
            assert auth.authorize_by_resource_type(principal, host, op, rt) is by_type
            decision = auth.authorize_with_reason(principal, host, op, rt, name)
            if decision.rule is Rule.ACL:
                assert decision.acl == ref_deciding_acl(acls, principal, host, op, rt, name)
                assert state[decision.acl_id] is decision.acl
        assert sorted(i for i, _ in auth.acls_with_ids()) == sorted(ids)
        # The by-name lookup a filter uses follows every change too.
        expected_ids = sorted(i for i, a in state.items() if ref_filter_matches(acl_filter, a))
        assert sorted(i for i, _ in auth.acls_with_ids(acl_filter)) == expected_ids
    # And a snapshot of the final state answers exactly like the incrementally maintained index, and the
    # by-type index's sorted "free" lists (an optimisation the answers do not reveal) are the same.
    rebuilt = make(supers, allow_everyone, list(state.values()))
    assert by_type_structure(auth) == by_type_structure(rebuilt)
    for principal, host, op, rt, name in reqs:
        assert rebuilt.authorize(principal, host, op, rt, name) is auth.authorize(principal, host, op, rt, name)
        assert rebuilt.authorize_by_resource_type(principal, host, op, rt) is auth.authorize_by_resource_type(
            principal, host, op, rt
        )


def by_type_structure(auth: StandardAuthorizer) -> dict:
    """The by-type index's groups as plain data, with each free list checked against its definition."""
    out = {}
    for rt, groups in auth._index.by_type._types.items():
        for key, g in groups.items():
            free_lit, free_pre = list(g.free_lit), list(g.free_pre)
            assert free_lit == sorted(g.allow_lit - g.deny_lit)
            assert free_pre == sorted(p for p in g.allow_pre if not (p and p in g.deny_pre))
            lengths = {}
            for name in g.deny_pre:
                lengths[len(name)] = lengths.get(len(name), 0) + 1
            assert g.deny_pre_lengths == lengths
            out[(rt, key)] = (
                g.allow_lit,
                g.deny_lit,
                g.allow_pre,
                g.deny_pre,
                g.allow_wild,
                g.deny_wild,
                free_lit,
                free_pre,
            )
    return out


@settings(max_examples=150, deadline=None)
@given(acls=acl_sets, config=configs, request=requests)
def test_not_ready_answers_only_super_users(
    acls: list[AclBinding], config: tuple[set[str], bool], request: tuple
) -> None:
    supers, allow_everyone = config
    auth = StandardAuthorizer.from_config(
        {"super.users": ";".join(supers), "allow.everyone.if.no.acl.found": str(allow_everyone)}
    )
    for i, acl in enumerate(acls):
        auth.add_acl(i, acl)
    principal, host, op, rt, name = request
    try:
        expected = ref_authorize(acls, supers, allow_everyone, False, principal, host, op, rt, name)
    except AuthorizerNotReadyError:
        with pytest.raises(AuthorizerNotReadyError):
            auth.authorize(principal, host, op, rt, name)
        with pytest.raises(AuthorizerNotReadyError):
            auth.authorize_by_resource_type(principal, host, op, rt)
    else:
        assert auth.authorize(principal, host, op, rt, name) is expected
        assert auth.authorize_by_resource_type(principal, host, op, rt) is expected
