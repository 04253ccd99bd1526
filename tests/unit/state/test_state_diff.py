"""The diff: ownership (nothing outside it is touched), opt-in deletion, drift against the last-apply record,
refusals, blast radius, and the lockout guard of a plan."""

from __future__ import annotations

from ksteward.authorizer import AclBinding, AuthorizerSettings, PatternType, ResourceType
from ksteward.cli.plan import plan_lockouts
from ksteward.state.diff import diff
from ksteward.state.model import (
    Action,
    Deletion,
    DesiredState,
    Origin,
    Ownership,
    Resources,
    ResourceSelector,
    ScramUser,
    TopicSpec,
)
from ksteward.state.ownership import owns_acl, owns_quota, owns_scram_user, owns_topic
from ksteward.state.render import text_lines


def read(topic: str, principal: str = "User:app", pattern: str = "LITERAL") -> AclBinding:
    return AclBinding("TOPIC", topic, pattern, principal, "*", "READ", "ALLOW")


OWN = Ownership(topic_prefixes=("orders.",), principals=frozenset({"User:app"}))
ALL_DELETES = Deletion(topics=True, configs=True, acls=True, quotas=True, scram_users=True)


def state(resources: Resources, ownership: Ownership = OWN, deletion: Deletion = ALL_DELETES) -> DesiredState:
    return DesiredState(resources, ownership, deletion)


def test_ownership_selectors() -> None:
    o = Ownership(topic_prefixes=("orders.",), principals=frozenset({"User:app"}),
                  resources=(ResourceSelector(ResourceType.GROUP, "team-", PatternType.PREFIXED),))  # fmt: skip
    assert owns_topic(o, "orders.x") and not owns_topic(o, "billing")
    assert not owns_topic(Ownership(all=True), "__consumer_offsets")
    assert owns_acl(o, read("anything", "User:app"))
    assert owns_acl(o, read("orders.x", "User:other"))
    assert owns_acl(o, read("orders.", "User:other", "PREFIXED"))
    assert not owns_acl(o, read("billing", "User:other"))
    assert owns_acl(o, AclBinding("GROUP", "team-a", "LITERAL", "User:z", "*", "READ", "ALLOW"))
    assert not owns_acl(o, AclBinding("GROUP", "other", "LITERAL", "User:z", "*", "READ", "ALLOW"))
    assert owns_quota(o, (("user", "app"),)) and not owns_quota(o, (("user", None),))
    assert owns_scram_user(o, "app") and not owns_scram_user(o, "bob")


def test_resources_outside_ownership_are_never_deleted_even_with_deletion_on() -> None:
    outside = [read("billing", "User:other"), read("orders", "User:other")]  # "orders" lacks the "orders." prefix
    live = Resources(
        topics={"billing": TopicSpec("billing", 1, 1), "orders.old": TopicSpec("orders.old", 1, 1)},
        acls=frozenset([*outside, read("orders.x", "User:other")]),
        quotas={(("user", "bob"),): {"producer_byte_rate": 1.0}},
        scram_users={"bob": ScramUser("bob", {"SCRAM-SHA-256": 4096})},
    )
    plan = diff(state(Resources()), live, None)
    assert [(t.name, t.action) for t in plan.topics] == [("orders.old", Action.DELETE)]
    assert [(c.binding, c.action) for c in plan.acls] == [(read("orders.x", "User:other"), Action.DELETE)]
    assert plan.quotas == [] and plan.scram == []


def test_deletion_is_opt_in_per_section() -> None:
    live = Resources(topics={"orders.old": TopicSpec("orders.old", 1, 1)}, acls=frozenset([read("orders.x")]))
    plan = diff(state(Resources(), deletion=Deletion(acls=True)), live, None)
    assert plan.topics == [] and [c.action for c in plan.acls] == [Action.DELETE]
    assert not diff(state(Resources(), deletion=Deletion()), live, None).has_changes


def test_declared_resources_outside_ownership_refuse_the_plan() -> None:
    plan = diff(state(Resources(topics={"billing": TopicSpec("billing", 1, 1)},
                                acls=frozenset([read("billing", "User:other")]))), Resources(), None)  # fmt: skip
    assert plan.refused
    assert any("topic(s)" in r and "billing" in r for r in plan.refusals)
    assert any("ACL(s)" in r for r in plan.refusals)


def test_drift_is_told_from_file_changes_by_the_record() -> None:
    applied = Resources(acls=frozenset([read("orders.a"), read("orders.b")]),
                        topics={"orders.t": TopicSpec("orders.t", 1, 1, {"retention.ms": "1"})})  # fmt: skip
    # Out of band: orders.a's ACL deleted, orders.z's added, the topic's config changed. In the file: orders.b dropped,
    # orders.c added.
    live = Resources(acls=frozenset([read("orders.b"), read("orders.z")]),
                     topics={"orders.t": TopicSpec("orders.t", 1, 1, {"retention.ms": "2"})})  # fmt: skip
    want = Resources(acls=frozenset([read("orders.a"), read("orders.c")]), topics=applied.topics)
    plan = diff(state(want), live, applied)
    origins = {(c.binding.resource_name, c.action): c.origin for c in plan.acls}
    assert origins == {
        ("orders.a", Action.CREATE): Origin.DRIFT,  # deleted outside the tool
        ("orders.c", Action.CREATE): Origin.FILE,
        ("orders.b", Action.DELETE): Origin.FILE,
        ("orders.z", Action.DELETE): Origin.DRIFT,  # created outside the tool
    }
    (topic,) = plan.topics
    assert topic.origin is Origin.DRIFT and dict(topic.configs_set) == {"retention.ms": "1"}
    assert len(plan.drift()) == 3
    text = "\n".join(text_lines(plan, file="f", cluster_id="c", notes=[]))
    assert "- acl User:app ALLOW READ TOPIC:LITERAL:orders.z    [drift: created outside the tool" in text
    assert "+ acl User:app ALLOW READ TOPIC:LITERAL:orders.a    [drift: deleted outside the tool" in text
    unrecorded = diff(state(want), live, None)
    assert {c.origin for c in unrecorded.acls} == {Origin.UNRECORDED}


def test_topic_rules() -> None:
    live = Resources(topics={"orders.t": TopicSpec("orders.t", 4, 3, {"a": "1", "b": "2"})})
    grow = diff(state(Resources(topics={"orders.t": TopicSpec("orders.t", 6, 3, {"a": "9"})})), live, None)
    (t,) = grow.topics
    assert (t.partitions_before, t.partitions_after, dict(t.configs_set), t.configs_deleted) == (4, 6, {"a": "9"},
                                                                                                 ("b",))  # fmt: skip
    assert not grow.refused
    shrink = diff(state(Resources(topics={"orders.t": TopicSpec("orders.t", 2, 1, {"a": "1", "b": "2"})})), live, None)
    assert len(shrink.refusals) == 2  # fewer partitions, another replication factor
    keep = diff(state(Resources(topics={"orders.t": TopicSpec("orders.t", 4, None, {"a": "1"})}),
                      deletion=Deletion()), live, None)  # fmt: skip
    assert not keep.has_changes and not keep.refused


def test_quota_and_scram_changes() -> None:
    live = Resources(quotas={(("user", "app"),): {"producer_byte_rate": 1.0, "request_percentage": 5.0}},
                     scram_users={"app": ScramUser("app", {"SCRAM-SHA-256": 4096, "SCRAM-SHA-512": 4096})})  # fmt: skip
    want = Resources(quotas={(("user", "app"),): {"producer_byte_rate": 2.0}},
                     scram_users={"app": ScramUser("app", {"SCRAM-SHA-256": 8192}, "PW")})  # fmt: skip
    plan = diff(state(want), live, None)
    (q,) = plan.quotas
    assert (q.action, dict(q.set), q.removed) == (Action.UPDATE, {"producer_byte_rate": 2.0}, ("request_percentage",))
    assert [(s.mechanism, s.action, s.iterations) for s in plan.scram] == [
        ("SCRAM-SHA-256", Action.UPDATE, 8192),
        ("SCRAM-SHA-512", Action.DELETE, None),
    ]
    assert plan.blast_radius.principals == 1 and plan.blast_radius.resources == 2


def test_blast_radius_counts_distinct_principals_and_resources() -> None:
    want = Resources(acls=frozenset([read("orders.a"), read("orders.a", "User:b"), read("orders.b", "User:b")]))
    plan = diff(state(want, Ownership(topic_prefixes=("orders.",))), Resources(), None)
    assert (plan.blast_radius.principals, plan.blast_radius.resources) == (2, 2)


def test_the_lockout_guard_sees_removed_allows_and_new_denies() -> None:
    alter = AclBinding("CLUSTER", "kafka-cluster", "LITERAL", "User:ops", "*", "ALTER", "ALLOW")
    settings = AuthorizerSettings()
    (lock,) = plan_lockouts(frozenset([alter]), [], [alter], settings, {"User:ops": ["10.0.0.1"]})
    assert lock["principal"] == "User:ops"
    deny = AclBinding("CLUSTER", "kafka-cluster", "LITERAL", "User:ops", "*", "ALTER", "DENY")
    (lock,) = plan_lockouts(frozenset([alter]), [deny], [], settings, {"User:ops": []})
    assert lock["principal"] == "User:ops" and "DENY" in lock["after"]
    assert plan_lockouts(frozenset([alter]), [], [], settings, {"User:ops": []}) == []
    super_user = AuthorizerSettings(super_users=frozenset({"User:ops"}))
    assert plan_lockouts(frozenset([alter]), [], [alter], super_user, {"User:ops": []}) == []


def test_a_topic_the_file_starts_to_manage_is_an_in_file_change_not_drift() -> None:
    live = Resources(topics={"orders.new": TopicSpec("orders.new", 1, 1, {"retention.ms": "1"})})
    want = Resources(topics={"orders.new": TopicSpec("orders.new", 1, 1, {"retention.ms": "2"})})
    (change,) = diff(state(want, deletion=Deletion()), live, Resources()).topics
    assert change.origin is Origin.FILE and change.action is Action.UPDATE
