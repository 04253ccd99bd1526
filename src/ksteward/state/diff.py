"""The diff: a file, the live cluster and the record of the last apply -> a :class:`~ksteward.state.model.Plan`.

Only owned resources take part (``ownership``). For each, the file says what should be, the cluster what is,
and the record (when there is one) what the tool last wrote; a difference between the cluster and the
record is drift (:class:`~ksteward.state.model.Origin`). ACLs are compared as hash sets, so 100,000 against
100,000 is a few set operations: O(n).

Rules the diff enforces as refusals (nothing may be applied): a listed resource outside the ownership, a
replication-factor change (that is a reassignment, ``ksteward topics``' business), fewer partitions than
the topic has (Kafka cannot remove partitions).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from ksteward.authorizer import AclBinding

from .acltext import acl_text
from .model import (
    AclChange,
    Action,
    BlastRadius,
    DesiredState,
    Origin,
    Plan,
    QuotaChange,
    QuotaEntity,
    Resources,
    ScramChange,
    ScramUser,
    TopicChange,
    TopicSpec,
)
from .ownership import owns_acl, owns_quota, owns_scram_user, owns_topic

MAX_LISTED = 20  # refusals name at most this many resources, then count the rest


def diff(desired: DesiredState, live: Resources, record: Resources | None) -> Plan:
    """The plan that makes the owned part of ``live`` what ``desired`` asks."""
    plan = Plan(recorded=record is not None)
    o = desired.ownership
    want = desired.resources
    _refuse_unowned(plan, "topic", [t for t in want.topics if not owns_topic(o, t)])
    _refuse_unowned(plan, "ACL", [f"{a.principal} {acl_text(a)}" for a in want.acls if not owns_acl(o, a)])
    _refuse_unowned(plan, "quota entity", [str(e) for e in want.quotas if not owns_quota(o, e)])
    _refuse_unowned(plan, "SCRAM user", [u for u in want.scram_users if not owns_scram_user(o, u)])
    plan.desired_owned = want
    rec = record or Resources()
    plan.topics = _topics(desired, live, rec, plan)
    plan.acls = _acls(desired, live, rec, record is not None)
    plan.quotas = _quotas(desired, live, rec, record is not None)
    plan.scram = _scram(desired, live, rec, record is not None)
    plan.blast_radius = blast_radius(plan)
    return plan


def _refuse_unowned(plan: Plan, kind: str, names: list[str]) -> None:
    if names:
        shown = ", ".join(sorted(names)[:MAX_LISTED]) + (f" and {len(names) - MAX_LISTED} more" if len(names) >
                                                           MAX_LISTED else "")  # fmt: skip
        plan.refusals.append(f"{len(names)} {kind}(s) listed in the file but outside its ownership selectors: {shown}")


def _origin(recorded: bool, live_matches_record: bool) -> Origin:
    if not recorded:
        return Origin.UNRECORDED
    return Origin.FILE if live_matches_record else Origin.DRIFT


# --- topics ------------------------------------------------------------------------------------------------


def _topics(desired: DesiredState, live: Resources, rec: Resources, plan: Plan) -> list[TopicChange]:
    o, want, recorded = desired.ownership, desired.resources.topics, plan.recorded
    out: list[TopicChange] = []
    for name in sorted(want):
        spec, now = want[name], live.topics.get(name)
        if now is None:
            origin = _origin(recorded, name not in rec.topics)  # recorded but gone: deleted out of band
            out.append(TopicChange(name, Action.CREATE, origin, None, spec.partitions, spec.replication_factor,
                                   dict(spec.configs)))  # fmt: skip
            continue
        change = _topic_update(desired, spec, now, rec.topics.get(name), plan)
        if change is not None:
            out.append(change)
    if desired.deletion.topics:
        for name in sorted(set(live.topics) - set(want)):
            if owns_topic(o, name):
                origin = _origin(recorded, name in rec.topics)  # in the record: the file dropped it
                now = live.topics[name]
                out.append(TopicChange(name, Action.DELETE, origin, partitions_before=now.partitions,
                                       configs_before=dict(now.configs)))  # fmt: skip
    return out


def _topic_update(
    desired: DesiredState, spec: TopicSpec, now: TopicSpec, was: TopicSpec | None, plan: Plan
) -> TopicChange | None:
    if spec.replication_factor is not None and spec.replication_factor != now.replication_factor:
        plan.refusals.append(
            f"topic {spec.name}: replication factor {now.replication_factor} -> {spec.replication_factor} "
            "needs a reassignment, which a plan does not do"
        )
    if spec.partitions < now.partitions:
        plan.refusals.append(f"topic {spec.name}: has {now.partitions} partitions, the file asks "
                             f"{spec.partitions}; Kafka cannot remove partitions")  # fmt: skip
    sets = {k: v for k, v in spec.configs.items() if now.configs.get(k) != v}
    deletes = tuple(sorted(k for k in now.configs if k not in spec.configs)) if desired.deletion.configs else ()
    grow = spec.partitions > now.partitions
    if not sets and not deletes and not grow:
        return None
    # Not in the record: the file has just started to manage a topic that exists, an in-file change.
    matches_record = was is None or (was.partitions == now.partitions and dict(was.configs) == dict(now.configs))
    return TopicChange(
        spec.name, Action.UPDATE, _origin(plan.recorded, matches_record), now.partitions,
        spec.partitions if grow else None, None, sets, deletes, dict(now.configs),
    )  # fmt: skip


# --- ACLs --------------------------------------------------------------------------------------------------


def _acls(desired: DesiredState, live: Resources, rec: Resources, recorded: bool) -> list[AclChange]:
    o, want = desired.ownership, desired.resources.acls
    sources = desired.acl_sources
    out = [
        AclChange(a, Action.CREATE, _origin(recorded, a not in rec.acls), sources.get(a, "")) for a in want - live.acls
    ]
    if desired.deletion.acls:
        out += [
            AclChange(a, Action.DELETE, _origin(recorded, a in rec.acls)) for a in live.acls - want if owns_acl(o, a)
        ]
    out.sort(key=_acl_change_key)
    return out


def _acl_change_key(c: AclChange) -> tuple[str, int, str, int, int, int, str, str]:
    a = c.binding
    return (a.principal, int(a.resource_type), a.resource_name, int(a.pattern_type), int(a.operation),
            int(a.permission_type), a.host, c.action.value)  # fmt: skip


# --- quotas ------------------------------------------------------------------------------------------------


def _quotas(desired: DesiredState, live: Resources, rec: Resources, recorded: bool) -> list[QuotaChange]:
    o, want = desired.ownership, desired.resources.quotas
    out: list[QuotaChange] = []
    for entity in sorted(set(want) | set(live.quotas), key=_entity_sort):
        target, now = want.get(entity), live.quotas.get(entity)
        if target is None:
            if now and desired.deletion.quotas and owns_quota(o, entity):
                origin = _origin(recorded, entity in rec.quotas)
                out.append(QuotaChange(entity, Action.DELETE, origin, removed=tuple(sorted(now)), before=dict(now)))
            continue
        now = now or {}
        sets = {k: v for k, v in target.items() if now.get(k) != v}
        removed = tuple(sorted(k for k in now if k not in target)) if desired.deletion.quotas else ()
        if not sets and not removed:
            continue
        action = Action.UPDATE if now else Action.CREATE
        origin = _origin(recorded, dict(rec.quotas.get(entity) or {}) == dict(now))
        out.append(QuotaChange(entity, action, origin, sets, removed, dict(now)))
    return out


def _entity_sort(entity: QuotaEntity) -> tuple[tuple[str, str], ...]:
    return tuple((t, "" if n is None else f"={n}") for t, n in entity)


# --- SCRAM -------------------------------------------------------------------------------------------------


def _scram(desired: DesiredState, live: Resources, rec: Resources, recorded: bool) -> list[ScramChange]:
    o, want = desired.ownership, desired.resources.scram_users
    out: list[ScramChange] = []
    for user in sorted(set(want) | set(live.scram_users)):
        target, now = want.get(user), live.scram_users.get(user)
        was = rec.scram_users.get(user)
        have = dict(now.mechanisms) if now else {}
        had = dict(was.mechanisms) if was else {}
        if target is None:
            if have and desired.deletion.scram_users and owns_scram_user(o, user):
                out += [ScramChange(user, m, Action.DELETE, _origin(recorded, m in had), iterations_before=n)
                        for m, n in sorted(have.items())]  # fmt: skip
            continue
        out += _scram_user(target, have, had, recorded, desired.deletion.scram_users)
    return out


def _scram_user(
    target: ScramUser, have: Mapping[str, int], had: Mapping[str, int], recorded: bool, delete: bool
) -> list[ScramChange]:
    out = []
    for m, n in sorted(target.mechanisms.items()):
        if have.get(m) == n:
            continue
        action = Action.UPDATE if m in have else Action.CREATE
        origin = _origin(recorded, had.get(m) == have.get(m))
        out.append(ScramChange(target.name, m, action, origin, n, have.get(m), target.password_env))
    if delete:
        out += [ScramChange(target.name, m, Action.DELETE, _origin(recorded, m in had), iterations_before=n)
                for m, n in sorted(have.items()) if m not in target.mechanisms]  # fmt: skip
    return out


# --- blast radius ------------------------------------------------------------------------------------------


def blast_radius(plan: Plan) -> BlastRadius:
    """Distinct principals and resources the plan touches (module docstring of ``model``)."""
    principals: set[str] = set()
    resources: set[tuple[str, ...]] = set()
    for t in plan.topics:
        resources.add(("TOPIC", t.name))
    for c in plan.acls:
        principals.add(c.binding.principal)
        resources.add(_acl_resource(c.binding))
    for q in plan.quotas:
        resources.add(("QUOTA", *(f"{t}={n}" for t, n in q.entity)))
        principals.update(f"User:{n}" for t, n in q.entity if t == "user" and n)
    for s in plan.scram:
        resources.add(("SCRAM", s.user))
        principals.add(f"User:{s.user}")
    return BlastRadius(len(principals), len(resources), tuple(sorted(principals)))


def _acl_resource(a: AclBinding) -> tuple[str, ...]:
    return (a.resource_type.name, a.pattern_type.name, a.resource_name)


def count_actions(changes: Iterable[TopicChange | AclChange | QuotaChange | ScramChange]) -> dict[str, int]:
    counts = {a.value: 0 for a in Action}
    for c in changes:
        counts[c.action.value] += 1
    return counts
