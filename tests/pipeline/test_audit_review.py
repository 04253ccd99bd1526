"""The audit's tables that answer the next question (issue 21, item 6): which unused ACLs are safe to delete and
why, who relied on ACLs no longer in the state, and what (resource, operation) is denied most."""

from __future__ import annotations

from pyspark.sql import SparkSession
from test_audit import NO_SETTINGS, acl, acls_frame, at, event, events_frame

from ksteward.pipeline.jobs.audit import audit, report_data
from ksteward.pipeline.schemas import AuthorizerSettings

ACLS = [
    acl("used", "orders"),  # alice READ orders: hit
    acl("alice-idle", "payments", operation="WRITE"),  # alice has another grant: safe
    acl("bob-only", "reports", "User:bob"),  # bob's one grant, and bob was allowed elsewhere: keep
    acl("star-public", "public", "User:*"),  # what allowed bob
    acl("deny-eve", "x", "User:eve", "WRITE", "DENY"),  # a DENY: keep
    acl("carol-secret", "secret", "User:carol"),  # shadowed by carol's DENY ALL: safe
    acl("deny-carol", "secret", "User:carol", "ALL", "DENY"),
    acl("dave-logs", "logs", "User:dave"),  # dave has an unattributed event: keep
    acl("wide", "ord", "User:erin", pattern="PREFIXED"),  # covers erin-orders
    acl("erin-orders", "orders", "User:erin"),  # redundant because of "wide": safe
]

EVENTS = [
    event(at(1), "User:alice", "READ", "orders", True, "acl", "used", line=1),
    event(at(2), "User:bob", "READ", "public", True, "acl", "star-public", line=2),
    event(at(3), "User:dave", "READ", "nothing", True, line=3),  # re-decided as denied: unattributed
    event(at(4), "User:alice", "READ", "old", True, "acl", "gone", line=4),  # an ACL deleted since
    event(at(5), "User:bob", "WRITE", "old", True, "acl", "gone", line=5),
    event(at(6), "User:bob", "READ", "old", True, "acl", "gone", line=6),
    *(event(at(7), "User:eve", "WRITE", "x", False, "acl", "deny-eve", line=10 + i) for i in range(3)),
    event(at(8), "User:eve", "READ", "orders", False, "no_matching_acl", line=20),
    event(at(8), "User:mallory", "READ", "orders", False, "no_matching_acl", line=21),
]


def test_unused_acls_are_marked_safe_or_kept_with_the_reason(spark: SparkSession) -> None:
    result = audit(events_frame(spark, EVENTS), acls_frame(spark, ACLS), NO_SETTINGS, start=None, end=None)
    marks = {r["acl_id"]: (r["safe_to_delete"], r["why"]) for r in result.unused_acls.collect()}
    assert marks == {
        "alice-idle": (True, "no hit in the window"),
        "bob-only": (False, "the only grant of a principal that made allowed requests"),
        "deny-carol": (False, "a DENY: deleting it allows more, never less; left to you"),
        "carol-secret": (True, "shadowed by a DENY: it never takes effect"),
        "dave-logs": (False, "unattributed events of its principal may have used it"),
        "erin-orders": (True, "redundant: another ALLOW grants all it grants"),
        "wide": (True, "no hit in the window"),
    }  # "deny-eve" decided three events: not unused
    totals = result.totals.first()
    assert totals is not None and totals["unattributed"] == 1
    result.unpersist()


def test_the_last_acl_on_a_resource_is_kept_when_everyone_is_allowed_without_acls(spark: SparkSession) -> None:
    settings = AuthorizerSettings(allow_everyone_if_no_acl_found=True)
    acls = acls_frame(spark, [acl("lonely", "lonely", "User:frank"), acl("a", "orders"), acl("b", "orders", "User:g")])
    result = audit(events_frame(spark, EVENTS[:1]), acls, settings, start=None, end=None)
    marks = {r["acl_id"]: (r["safe_to_delete"], r["why"]) for r in result.unused_acls.collect()}
    assert marks == {
        "lonely": (False, "the last ACL on its resource: allow.everyone.if.no.acl.found would open it to all"),
        "b": (True, "no hit in the window"),  # "a" is still on orders
        "a": (False, "the only grant of a principal that made allowed requests"),  # alice's event credits "used"
    }
    result.unpersist()


def test_hits_on_acls_gone_name_who_used_them_and_the_tops(spark: SparkSession) -> None:
    result = audit(events_frame(spark, EVENTS), acls_frame(spark, ACLS), NO_SETTINGS, start=None, end=None)
    (gone,) = result.acl_hits_not_in_state.collect()
    assert (gone["acl_id"], gone["hits"], gone["principals"], gone["resources"], gone["operations"]) == (
        "gone", 3, 2, 1, 2)  # fmt: skip
    assert (gone["principals_seen"], gone["resources_seen"], gone["operations_seen"]) == (
        ["User:alice", "User:bob"], ["TOPIC:old"], ["READ", "WRITE"])  # fmt: skip
    resources = [tuple(r) for r in result.top_denied_resources.orderBy("rank").collect()]
    assert [r[:5] for r in resources] == [(1, "TOPIC", "x", 3, 1), (2, "TOPIC", "orders", 2, 2)]
    operations = [
        (r["rank"], r["operation"], r["denials"], r["principals"]) for r in result.top_denied_operations.collect()
    ]
    assert sorted(operations) == [(1, "WRITE", 3, 1), (2, "READ", 2, 2)]

    data = report_data(result)
    assert data.top_denied_resources == [("TOPIC:x", 3), ("TOPIC:orders", 2)]
    assert data.top_denied_operations == [("WRITE", 3), ("READ", 2)]
    assert [(r["acl_id"], r["hits"]) for r in data.most_used_acls] == [("deny-eve", 3), ("star-public", 1), ("used", 1)]
    assert [r["acl_id"] for r in data.hits_not_in_state] == ["gone"]
    assert data.covered_acls[0]["kind"] == "shadowed"  # shadowed ALLOWs first
    assert data.totals["acls_safe_to_delete"] == 4
    result.unpersist()
