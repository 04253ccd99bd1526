"""The answers ``kafka-acls.sh`` never gave: explain, who-can, the lockout guard and the warnings.

Every decision here is ``ksteward.authorizer.StandardAuthorizer``'s (Kafka's ``StandardAuthorizer``,
docs/authorizer.md §2): the ACLs read from the cluster are loaded into one, configured with the broker's
``super.users`` and ``allow.everyone.if.no.acl.found``, and asked (``authorize_with_reason`` names the
deciding ACL). Nothing here decides on its own; it only chooses whom to ask about (docs/cli-acls.md).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ksteward.authorizer import (
    CLUSTER_NAME,
    WILDCARD_HOST,
    WILDCARD_PRINCIPAL,
    WILDCARD_RESOURCE,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AuthorizerSettings,
    Decision,
    PatternType,
    ResourceType,
    Rule,
    StandardAuthorizer,
    allow_grants,
    deny_denies,
)

from .options import Pattern, split

ALLOW, DENY = AclPermissionType.ALLOW, AclPermissionType.DENY


@dataclass(frozen=True)
class KnownSettings:
    """The broker settings the answers use; ``notes`` says each one that was assumed rather than read."""

    settings: AuthorizerSettings
    notes: list[str] = field(default_factory=list)
    allow_everyone_known: bool = True


def authorizer(acls: Iterable[AclBinding], settings: AuthorizerSettings) -> StandardAuthorizer:
    """A ``StandardAuthorizer`` holding ``acls`` (ids are positions), ready to decide."""
    auth = StandardAuthorizer(settings)
    auth.load_snapshot(list(enumerate(dict.fromkeys(acls))))
    return auth


def binding_text(acl: AclBinding) -> str:
    """Kafka's ``AclBinding.toString``."""
    pattern, entry = split(acl)
    return f"(pattern={pattern.as_pattern()}, entry={entry})"


def binding_json(acl: AclBinding) -> dict[str, str]:
    return {"resource_type": acl.resource_type.name, "resource_name": acl.resource_name,
            "pattern_type": acl.pattern_type.name, "principal": acl.principal, "host": acl.host,
            "operation": acl.operation.name, "permission_type": acl.permission_type.name}  # fmt: skip


def _has_acls(auth: StandardAuthorizer, pattern: Pattern) -> bool:
    return any(True for _ in auth.acls(AclBindingFilter(pattern.resource_type, pattern.name, PatternType.MATCH)))


def reason(decision: Decision, principal: str, host: str, pattern: Pattern, auth: StandardAuthorizer) -> str:
    """One line saying why, in the operator's terms."""
    where = f"{pattern.resource_type.name} `{pattern.name}`"
    if decision.rule is Rule.SUPER_USER:
        return f"{principal} is in super.users"
    if decision.rule is Rule.ACL and decision.acl is not None:
        kind = "ALLOW" if decision.allowed else "DENY"
        return f"{kind} ACL {binding_text(decision.acl)}"
    if decision.rule is Rule.ALLOW_EVERYONE_DEFAULT:
        return f"no ACL matches {where} and allow.everyone.if.no.acl.found=true"
    if _has_acls(auth, pattern):
        return f"{where} has ACLs but none allows this to {principal} from host {host} (denied by default)"
    return f"no ACL matches {where} and allow.everyone.if.no.acl.found=false"


# --- explain -------------------------------------------------------------------------------------------


def explain(
    auth: StandardAuthorizer, principal: str, host: str, operation: AclOperation, pattern: Pattern
) -> dict[str, Any]:
    """The authorizer's decision for one request, with the deciding rule and ACL."""
    decision = auth.authorize_with_reason(principal, host, operation, pattern.resource_type, pattern.name)
    return {
        "principal": principal,
        "host": host,
        "operation": operation.name,
        "resource": {"resource_type": pattern.resource_type.name, "resource_name": pattern.name},
        "decision": decision.result.value,
        "rule": decision.rule.value,
        "acl": binding_json(decision.acl) if decision.acl is not None else None,
        "reason": reason(decision, principal, host, pattern, auth),
    }


# --- who-can ---------------------------------------------------------------------------------------------


def _covers(row: str, acl_value: str, wildcard: str) -> bool:
    return row == wildcard or acl_value in (wildcard, row)


def who_can(auth: StandardAuthorizer, operation: AclOperation, pattern: Pattern) -> list[dict[str, Any]]:
    """The (principal, host) pairs allowed ``operation`` on the resource, each with the deciding rule and ACL.

    Candidates: the super users (host ``*``), the principal and host of every ALLOW ACL that grants the
    operation on the resource, and ``User:*`` from ``*``; the rows are those the authorizer allows. As in
    ``ksteward pipeline who-can`` (docs/pipeline.md), ``User:*`` means every principal that no ACL names
    specifically and ``*`` every host that no ACL names: that is how the authorizer itself treats them. A row's
    ``narrowed_by`` lists the DENY ACLs that take part of what it covers away."""
    rt, name = pattern.resource_type, pattern.name
    on_resource = list(auth.acls(AclBindingFilter(rt, name, PatternType.MATCH)))
    candidates = [(user, WILDCARD_HOST) for user in sorted(auth.super_users)]
    candidates += sorted({(a.principal, a.host) for a in on_resource
                          if a.permission_type is ALLOW and allow_grants(a.operation, operation)})  # fmt: skip
    candidates.append((WILDCARD_PRINCIPAL, WILDCARD_HOST))
    rows = []
    for principal, host in dict.fromkeys(candidates):
        decision = auth.authorize_with_reason(principal, host, operation, rt, name)
        if not decision.allowed:
            continue
        allowing = [a for a in on_resource if a.permission_type is ALLOW and allow_grants(a.operation, operation)
                    and a.principal in (principal, WILDCARD_PRINCIPAL) and a.host in (host, WILDCARD_HOST)]  # fmt: skip
        narrowed = [
            a
            for a in on_resource
            if a.permission_type is not ALLOW
            and deny_denies(a.operation, operation)
            and _covers(principal, a.principal, WILDCARD_PRINCIPAL)
            and _covers(host, a.host, WILDCARD_HOST)
            and decision.rule is not Rule.SUPER_USER
        ]  # fmt: skip  (no DENY applies to a super user)
        rows.append({
            "principal": principal,
            "host": host,
            "rule": decision.rule.value,
            "acl": binding_json(decision.acl) if decision.acl is not None else None,
            "reason": reason(decision, principal, host, pattern, auth),
            "allowing_acls": [binding_json(a) for a in allowing],
            "narrowed_by": [binding_json(a) for a in narrowed],
        })  # fmt: skip
    return rows


# --- the lockout guard ---------------------------------------------------------------------------------


def can_alter_acls(auth: StandardAuthorizer, principal: str, host: str) -> Decision:
    """ALTER on the cluster: what CreateAcls and DeleteAcls need (docs/authorizer.md §3.6)."""
    return auth.authorize_with_reason(principal, host, AclOperation.ALTER, ResourceType.CLUSTER, CLUSTER_NAME)


def lockouts(
    cluster_acls: list[AclBinding],
    removed: Iterable[AclBinding],
    settings: AuthorizerSettings,
    protected: Mapping[str, Iterable[str]],
) -> list[dict[str, Any]]:
    """Who of ``protected`` (principal -> hosts to check) may alter ACLs now and could not after ``removed``
    is gone: evaluated with the authorizer before and after. ``cluster_acls``: the CLUSTER ACLs (the only ones
    an ALTER on the cluster depends on). Every host any CLUSTER ACL names for the principal (or ``User:*``) is
    checked as well, and ``*`` stands for any other host."""
    gone = set(removed)
    before = authorizer(cluster_acls, settings)
    after = authorizer([a for a in cluster_acls if a not in gone], settings)
    losses = []
    for principal, hosts in protected.items():
        named = {a.host for a in cluster_acls if a.principal in (principal, WILDCARD_PRINCIPAL)}
        lost: list[str] = []
        allowed_by: list[Any] = []
        after_reason = ""
        for host in dict.fromkeys([*hosts, *sorted(named), WILDCARD_HOST]):
            was = can_alter_acls(before, principal, host)
            now = can_alter_acls(after, principal, host)
            if was.allowed and not now.allowed:
                lost.append(host)
                allowed_by.append(binding_json(was.acl) if was.acl else was.rule.value)
                after_reason = after_reason or reason(now, principal, host, _CLUSTER, after)
        if lost:
            losses.append({"principal": principal, "hosts": lost, "allowed_by": allowed_by, "after": after_reason})
    return losses


_CLUSTER = Pattern(ResourceType.CLUSTER, CLUSTER_NAME, PatternType.LITERAL)


# --- warnings --------------------------------------------------------------------------------------------


def add_warnings(
    new: list[AclBinding],
    existing: Mapping[Pattern, list[AclBinding]],
    known: KnownSettings,
    topics: set[str] | None,
) -> list[dict[str, str]]:
    """The traps Kafka's tool lets through silently, one warning each: a PREFIXED ``*``, an ALLOW for
    ``User:*``, a first ACL on a resource while ``allow.everyone.if.no.acl.found`` is (or may be) true, and an
    ACL for a topic that does not exist. ``existing``: per new pattern, the ACLs that apply to its name today
    (a DescribeAcls with pattern type MATCH)."""
    out: list[dict[str, str]] = []
    for acl in new:
        if acl.pattern_type is PatternType.PREFIXED and acl.resource_name == WILDCARD_RESOURCE:
            out.append(
                _warning(
                    "prefixed-star",
                    f"{binding_text(acl)}: a PREFIXED '*' is not a wildcard, it matches "
                    "only names that start with '*' (use the LITERAL name '*' for every resource)",
                )
            )
        if acl.permission_type is ALLOW and acl.principal == WILDCARD_PRINCIPAL:
            out.append(_warning("allow-every-principal", f"{binding_text(acl)}: ALLOW for User:* grants "
                                f"{acl.operation.name} to every principal, authenticated or not"))  # fmt: skip
    out += _first_acl_warnings(new, existing, known)
    if topics is not None:
        out += _missing_topic_warnings(new, topics)
    return out


def _first_acl_warnings(new: list[AclBinding], existing: Mapping[Pattern, list[AclBinding]],
                        known: KnownSettings) -> list[dict[str, str]]:  # fmt: skip
    if known.allow_everyone_known and not known.settings.allow_everyone_if_no_acl_found:
        return []
    out = []
    for pattern in dict.fromkeys(split(a)[0] for a in new):
        if existing.get(pattern):
            continue
        kind = "PREFIXED names" if pattern.pattern_type is PatternType.PREFIXED else "resource"
        state = "is true" if known.allow_everyone_known else "may be true (it could not be read)"
        out.append(_warning("first-acl-closes-resource", f"{pattern.resource_type.name} {kind} `{pattern.name}` has "
                            f"no ACLs and allow.everyone.if.no.acl.found {state}: everyone may use it today; after "
                            "this add only principals an ACL allows may (everyone else is denied)"))  # fmt: skip
    return out


def _missing_topic_warnings(new: list[AclBinding], topics: set[str]) -> list[dict[str, str]]:
    out = []
    for pattern in dict.fromkeys(split(a)[0] for a in new):
        if pattern.resource_type is not ResourceType.TOPIC:
            continue
        if pattern.pattern_type is PatternType.LITERAL and pattern.name != WILDCARD_RESOURCE:
            if pattern.name not in topics:
                out.append(_warning("unknown-topic", f"topic `{pattern.name}` does not exist"))
        elif pattern.pattern_type is PatternType.PREFIXED and not any(t.startswith(pattern.name) for t in topics):
            out.append(_warning("unknown-topic", f"no existing topic starts with the prefix `{pattern.name}`"))
    return out


def _warning(code: str, message: str) -> dict[str, str]:
    return {"code": code, "message": message}
