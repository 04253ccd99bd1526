"""Which resources a file owns (its :class:`~ksteward.state.model.Ownership` selectors).

A plan never creates, changes or deletes a resource these predicates reject: a resource the file lists but
does not own is a refusal, and a live resource outside them is not even looked at. Internal topics (names
starting with ``__``: ``__consumer_offsets``, ``__transaction_state``, ``__cluster_metadata``) are never
owned, not even with ``all``. Each predicate is O(number of selectors), so owning 100,000 ACLs costs a few
hundred milliseconds at most.
"""

from __future__ import annotations

from ksteward.authorizer import AclBinding, PatternType, ResourceType

from .model import Ownership, QuotaEntity, ResourceSelector


def is_internal_topic(name: str) -> bool:
    return name.startswith("__")


def owns_topic(o: Ownership, name: str) -> bool:
    if is_internal_topic(name):
        return False
    if o.all or any(name.startswith(p) for p in o.topic_prefixes):
        return True
    return any(
        s.resource_type is ResourceType.TOPIC and s.principal is None and _name_selected(s, name) for s in o.resources
    )


def _name_selected(s: ResourceSelector, name: str) -> bool:
    if s.pattern_type is PatternType.PREFIXED:
        return name.startswith(s.name)
    return name == s.name


def owns_acl(o: Ownership, acl: AclBinding) -> bool:
    """``all``; the ACL's principal is owned; it is a TOPIC ACL whose name (LITERAL or PREFIXED) starts with
    an owned topic prefix; or a resource selector selects it (a LITERAL selector the ACLs on exactly its name,
    a PREFIXED one the ACLs on every name that starts with it)."""
    if o.all or acl.principal in o.principals:
        return True
    rtype, name = acl.resource_type, acl.resource_name
    if rtype is ResourceType.TOPIC and any(name.startswith(p) for p in o.topic_prefixes):
        return True
    for s in o.resources:
        if s.resource_type is rtype and (s.principal is None or s.principal == acl.principal):
            if s.pattern_type is PatternType.LITERAL and name == s.name:
                return True
            if s.pattern_type is PatternType.PREFIXED and name.startswith(s.name):
                # A PREFIXED selector owns the ACLs on every name under it, PREFIXED ones included.
                return True
    return False


def owns_quota(o: Ownership, entity: QuotaEntity) -> bool:
    """``all``; listed in ``quota_entities``; or its ``user`` is an owned principal's name."""
    if o.all or entity in o.quota_entities:
        return True
    user = dict(entity).get("user", "")
    return user is not None and user != "" and f"User:{user}" in o.principals


def owns_scram_user(o: Ownership, user: str) -> bool:
    return o.all or f"User:{user}" in o.principals
