"""Publication (docs/authorizer.md §4.4): readers never see half a snapshot or half a change.

A writer thread swaps or changes the ACLs as fast as it can while a reader thread hammers the read API
with a tiny GIL switch interval, so the threads interleave inside single calls. Every answer must be one
that some complete ACL state gives. The requests are chosen so that a torn read gives an answer no
complete state gives.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from ksteward.authorizer import (
    SUPPORTED_OPERATIONS,
    AclBinding,
    AclBindingFilter,
    AuthorizationResult,
    ResourceType,
    Rule,
    StandardAuthorizer,
)

ALLOWED, DENIED = AuthorizationResult.ALLOWED, AuthorizationResult.DENIED
RUN_SECONDS = 1.5


@contextmanager
def fast_switching() -> Iterator[None]:
    previous = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        yield
    finally:
        sys.setswitchinterval(previous)


def hammer(write_once: Callable[[], None], read_once: Callable[[], None]) -> int:
    """Run ``write_once`` in a loop in another thread while calling ``read_once``; return the read count."""
    stop = threading.Event()
    errors: list[BaseException] = []

    def writer() -> None:
        try:
            while not stop.is_set():
                write_once()
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    thread = threading.Thread(target=writer, daemon=True)
    reads = 0
    with fast_switching():
        thread.start()
        deadline = time.monotonic() + RUN_SECONDS
        try:
            while time.monotonic() < deadline:
                read_once()
                reads += 1
        finally:
            stop.set()
            thread.join()
    assert not errors, errors
    return reads


def acl(name: str, permission: str = "ALLOW", pattern: str = "LITERAL", operation: str = "READ") -> AclBinding:
    return AclBinding("TOPIC", name, pattern, "User:bob", "*", operation, permission)


def test_readers_see_one_snapshot_or_the_other() -> None:
    # Set A: an allow on "foo" dominated by a prefix deny -> DENIED. Set B: nothing on "foo" -> DENIED.
    # A read that took A's literal and B's (empty) prefix table would answer ALLOWED.
    set_a = {"allow": acl("foo"), "deny": acl("f", "DENY", "PREFIXED"), "a-only": acl("zzz")}
    set_b = {"other": acl("bar"), "b-only": acl("yyy", operation="WRITE")}
    auth = StandardAuthorizer()
    auth.load_snapshot(set_a)
    expected_sets = [set(set_a.values()), set(set_b.values())]
    flip = [False]

    def swap() -> None:
        auth.load_snapshot(set_b if flip[0] else set_a)
        flip[0] = not flip[0]

    def read() -> None:
        assert auth.authorize("User:bob", "h", "READ", "TOPIC", "foo") is DENIED
        decision = auth.authorize_with_reason("User:bob", "h", "READ", "TOPIC", "foo")
        assert (decision.rule, decision.acl_id) in {(Rule.ACL, "deny"), (Rule.NO_MATCHING_ACL, None)}
        assert set(auth.acls()) in expected_sets
        assert set(auth.acls(AclBindingFilter(resource_type="TOPIC"))) in expected_sets
        assert auth.acl_count() in (3, 2)

    assert hammer(swap, read) > 100


def test_single_changes_are_seen_whole_and_in_order() -> None:
    # The log applies A (DENY ALL on "foo"), then B (ALLOW READ on "*"), then removes B, then A.
    # States: {} -> default ALLOWED; {A} and {A, B} -> DENIED by A. An ALLOWED decided by B would mean a
    # reader saw B without A: a state the log never had.
    auth = StandardAuthorizer.from_config({"allow.everyone.if.no.acl.found": "true"})
    auth.complete_initial_load()
    deny_all, allow_wild = acl("foo", "DENY", operation="ALL"), acl("*")
    every_topic_op = sum(1 << op for op in SUPPORTED_OPERATIONS[ResourceType.TOPIC])

    def cycle() -> None:
        auth.add_acl("A", deny_all)
        auth.add_acl("B", allow_wild)
        auth.remove_acl("B")
        auth.remove_acl("A")

    def read() -> None:
        decision = auth.authorize_with_reason("User:bob", "h", "READ", "TOPIC", "foo")
        assert decision.acl_id != "B", decision
        assert decision.rule in (Rule.ALLOW_EVERYONE_DEFAULT, Rule.ACL)
        bits = auth.authorized_operations("User:bob", "h", "TOPIC", "foo")
        assert bits in (0, every_topic_op), bin(bits)  # every op denied, or the default for all of them

    assert hammer(cycle, read) > 100


def test_by_resource_type_sees_whole_changes() -> None:
    # Base: bob may READ x0..x1999 from host h, and User:* is denied each of them (a different group, so the
    # scan must walk them all: a long read). The log then adds a DENY on prefix "s" and only then an ALLOW
    # on "svc" that it dominates, and removes them in reverse. Every state answers DENIED; a scan that
    # missed the deny but found the allow would answer ALLOWED.
    def binding(name: str, principal: str, host: str, operation: str, permission: str, pattern: str) -> AclBinding:
        return AclBinding("TOPIC", name, pattern, principal, host, operation, permission)

    base: dict[object, AclBinding] = {"probe": binding("hardcode", "User:x", "*", "READ", "ALLOW", "LITERAL")}
    for i in range(2000):
        base[("allow", i)] = binding(f"x{i}", "User:bob", "h", "READ", "ALLOW", "LITERAL")
        base[("deny", i)] = binding(f"x{i}", "User:*", "h", "READ", "DENY", "LITERAL")
    base["keeps-the-group"] = binding("zzz", "User:*", "*", "ALL", "DENY", "LITERAL")
    auth = StandardAuthorizer()
    auth.load_snapshot(base)
    deny = binding("s", "User:*", "*", "ALL", "DENY", "PREFIXED")
    allow = binding("svc", "User:*", "*", "ALL", "ALLOW", "LITERAL")

    def cycle() -> None:
        auth.add_acl("deny", deny)
        auth.add_acl("allow", allow)
        auth.remove_acl("allow")
        auth.remove_acl("deny")

    def read() -> None:
        assert auth.authorize_by_resource_type("User:bob", "h", "READ", "TOPIC") is DENIED

    assert hammer(cycle, read) > 10


def test_fast_path_sees_whole_changes() -> None:
    # Same log shape for authorize() itself: DENY READ on "foo", then ALLOW READ on "*", then the reverse.
    # With the default off, every state answers DENIED; seeing the allow without the deny answers ALLOWED.
    auth = StandardAuthorizer()
    auth.complete_initial_load()
    deny, allow_wild = acl("foo", "DENY"), acl("*")

    def cycle() -> None:
        auth.add_acl("A", deny)
        auth.add_acl("B", allow_wild)
        auth.remove_acl("B")
        auth.remove_acl("A")

    def read() -> None:
        assert auth.authorize("User:bob", "h", "READ", "TOPIC", "foo") is DENIED

    assert hammer(cycle, read) > 100
