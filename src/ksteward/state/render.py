"""A :class:`~ksteward.state.model.Plan` as Terraform-style text and as JSON (docs/state-files.md §plan).

Text: one line per change, ``+`` create, ``~`` change, ``-`` delete, with ``[drift: ...]`` on a change made
outside the tool; then drift, policy verdicts, the lockout guard, the blast radius, the what-if flips and
the summary line ``Plan: N to create, N to change, N to delete.`` (``No changes.`` when there are none).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ksteward.cli.acls.answers import binding_json

from .acltext import acl_text
from .diff import count_actions
from .model import AclChange, Action, Origin, Plan, QuotaChange, ScramChange, TopicChange

SIGNS = {Action.CREATE: "+", Action.UPDATE: "~", Action.DELETE: "-"}


def drift_label(change: TopicChange | AclChange | QuotaChange | ScramChange) -> str | None:
    """What happened outside the tool, for a change of origin DRIFT."""
    if change.origin is not Origin.DRIFT:
        return None
    if change.action is Action.CREATE:
        return "deleted outside the tool since the last apply"
    if change.action is Action.DELETE:
        return "created outside the tool since the last apply"
    return "changed outside the tool since the last apply"


def entity_text(entity: tuple[tuple[str, str | None], ...]) -> str:
    return ",".join(f"{t}={'<default>' if n is None else n}" for t, n in entity)


def _suffix(change: TopicChange | AclChange | QuotaChange | ScramChange) -> str:
    label = drift_label(change)
    return f"    [drift: {label}]" if label else ""


def change_lines(plan: Plan) -> Iterator[str]:
    for t in plan.topics:
        yield from _topic_lines(t)
    for a in plan.acls:
        source = f"    ({a.source})" if a.source and a.origin is not Origin.DRIFT else ""
        yield f"  {SIGNS[a.action]} acl {a.binding.principal} {acl_text(a.binding)}{source}{_suffix(a)}"
    for q in plan.quotas:
        yield f"  {SIGNS[q.action]} quota {entity_text(q.entity)}{_suffix(q)}"
        for k, v in sorted(q.set.items()):
            before = q.before.get(k)
            yield f"      {k}: {'(none)' if before is None else _num(before)} -> {_num(v)}"
        for k in q.removed:
            yield f"      - {k} (was {_num(q.before[k])})"
    for s in plan.scram:
        what = {Action.CREATE: f"iterations {s.iterations}", Action.DELETE: f"(was iterations {s.iterations_before})",
                Action.UPDATE: f"iterations {s.iterations_before} -> {s.iterations}"}[s.action]  # fmt: skip
        yield f"  {SIGNS[s.action]} scram {s.user} {s.mechanism} {what}{_suffix(s)}"


def _num(value: float) -> str:
    return str(int(value)) if value.is_integer() else repr(value)


def _topic_lines(t: TopicChange) -> Iterator[str]:
    if t.action is Action.CREATE:
        rf = "the broker's default" if t.replication_factor is None else str(t.replication_factor)
        yield f"  + topic {t.name} (partitions {t.partitions_after}, replication factor {rf}){_suffix(t)}"
        for k, v in sorted(t.configs_set.items()):
            yield f"      + {k}: {v}"
        return
    if t.action is Action.DELETE:
        yield f"  - topic {t.name} (partitions {t.partitions_before}){_suffix(t)}"
        return
    yield f"  ~ topic {t.name}{_suffix(t)}"
    if t.partitions_after is not None:
        yield f"      partitions: {t.partitions_before} -> {t.partitions_after}"
    for k, v in sorted(t.configs_set.items()):
        before = t.configs_before.get(k)
        yield f"      {'~' if before is not None else '+'} {k}: {'' if before is None else before + ' -> '}{v}"
    for k in t.configs_deleted:
        yield f"      - {k} (was {t.configs_before.get(k)})"


def summary(plan: Plan) -> dict[str, int]:
    counts = count_actions([*plan.topics, *plan.acls, *plan.quotas, *plan.scram])
    return {"create": counts["create"], "change": counts["update"], "delete": counts["delete"],
            "drift": len(plan.drift())}  # fmt: skip


def text_lines(plan: Plan, *, file: str, cluster_id: str | None, notes: list[str]) -> Iterator[str]:
    if plan.recorded:
        record = "the last apply's record was found: changes made outside the tool are labelled drift"
    else:
        record = "no record of a last apply to this cluster: drift cannot be told from changes in the file"
    yield f"ksteward plan: {file} against cluster {cluster_id or '(unknown id)'} ({record})"
    for note in notes:
        yield f"note: {note}"
    yield ""
    if plan.has_changes:
        yield "Changes (+ create, ~ change, - delete):"
        yield from change_lines(plan)
        yield ""
    drift = plan.drift()
    if drift:
        yield f"Drift: {len(drift)} change(s) made outside ksteward since the last apply; this plan reverts them."
    yield from _verdict_lines(plan)
    r = plan.blast_radius
    yield f"Blast radius: {r.principals} principal(s), {r.resources} resource(s)"
    if plan.whatif is not None:
        from ksteward.cli.acls.audit_whatif import flips_text

        yield from flips_text(plan.whatif)
    s = summary(plan)
    if plan.has_changes:
        yield f"Plan: {s['create']} to create, {s['change']} to change, {s['delete']} to delete."
    else:
        yield "No changes. The owned resources match the file."


def _verdict_lines(plan: Plan) -> Iterator[str]:
    checked = [v for v in plan.policy if v.checked]
    refused = [v for v in checked if v.error]
    if plan.policy:
        yield f"Policy (validate_only): {len(checked)} checked, {len(refused)} refused"
        for v in refused:
            yield f"  ! {v.api} {v.resource}: {v.error}: {v.message or 'no message'}"
        for v in plan.policy:
            if not v.checked:
                yield f"  ? {v.api} {v.resource}: not checked ({v.message})"
    for lock in plan.lockouts:
        yield (f"Lockout guard: this plan removes {lock['principal']}'s right to alter ACLs (from "
               f"{', '.join(lock['hosts'])}); after it: {lock['after']}")  # fmt: skip
    for refusal in plan.refusals:
        yield f"Refused: {refusal}"
    for warning in plan.warnings:
        yield f"Warning: {warning}"


def plan_json(plan: Plan, *, file: str, cluster_id: str | None, notes: list[str]) -> dict[str, Any]:
    return {
        "file": file,
        "cluster_id": cluster_id,
        "recorded": plan.recorded,
        "summary": summary(plan),
        "refused": plan.refused or any(v.error for v in plan.policy),
        "topics": [_topic_json(t) for t in plan.topics],
        "acls": [
            {
                "action": a.action.value,
                "origin": a.origin.value,
                "drift": drift_label(a),
                "source": a.source,
                "acl": binding_json(a.binding),
            }
            for a in plan.acls
        ],
        "quotas": [
            {
                "action": q.action.value,
                "origin": q.origin.value,
                "drift": drift_label(q),
                "entity": [{"entity_type": t, "entity_name": n} for t, n in q.entity],
                "set": dict(q.set),
                "removed": list(q.removed),
                "before": dict(q.before),
            }
            for q in plan.quotas
        ],
        "scram": [
            {
                "action": s.action.value,
                "origin": s.origin.value,
                "drift": drift_label(s),
                "user": s.user,
                "mechanism": s.mechanism,
                "iterations": s.iterations,
                "iterations_before": s.iterations_before,
            }
            for s in plan.scram
        ],
        "policy": [
            {"api": v.api, "resource": v.resource, "checked": v.checked, "error": v.error, "message": v.message}
            for v in plan.policy
        ],
        "lockouts": plan.lockouts,
        "refusals": plan.refusals,
        "warnings": plan.warnings,
        "notes": notes,
        "blast_radius": {
            "principals": plan.blast_radius.principals,
            "resources": plan.blast_radius.resources,
            "principal_names": list(plan.blast_radius.principal_names),
        },
        "whatif": plan.whatif,
        "precondition": {
            "cluster_id": plan.precondition.cluster_id,
            "metadata_offset": plan.precondition.metadata_offset,
            "acl_digest": plan.precondition.acl_digest,
        },
    }


def _topic_json(t: TopicChange) -> dict[str, Any]:
    return {
        "action": t.action.value,
        "origin": t.origin.value,
        "drift": drift_label(t),
        "name": t.name,
        "partitions_before": t.partitions_before,
        "partitions_after": t.partitions_after,
        "replication_factor": t.replication_factor,
        "configs_set": dict(t.configs_set),
        "configs_deleted": list(t.configs_deleted),
        "configs_before": dict(t.configs_before),
    }
