"""Roles: a file's ``grants`` expanded into ACLs.

The built-in roles are Kafka's own shortcuts, expanded by the very functions ``ksteward acls`` uses
(``ksteward.cli.acls.options.filter_to_entries``, i.e. AclCommand's ``getResourceFilterToAcls``), so a
``producer`` grant gives exactly the ACLs ``kafka-acls.sh --add --producer`` gives:

- ``producer``: WRITE, DESCRIBE, CREATE on the topics; WRITE, DESCRIBE on the transactional ids; with
  ``idempotent: true`` IDEMPOTENT_WRITE on the cluster.
- ``idempotent-producer``: ``producer`` with ``idempotent: true``.
- ``transactional-producer``: ``producer``; ``transactional_ids`` required.
- ``consumer``: READ, DESCRIBE on the topics; READ on the groups (``groups`` required).

A user-defined role (the file's ``roles`` section) is a list of rules ``{resource_type, operations,
permission}``; a grant of it gives each rule's operations on every resource of that type the grant names
(``topics``, ``groups``, ``transactional_ids``, or the cluster when the rule's type is CLUSTER).
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ksteward.authorizer import (
    CLUSTER_NAME,
    SUPPORTED_OPERATIONS,
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)
from ksteward.cli.acls import options
from ksteward.cli.admin_common import UsageError

BUILT_IN = ("producer", "idempotent-producer", "transactional-producer", "consumer")
_GRANT_KEYS = {"role", "principal", "principals", "hosts", "pattern_type", "topics", "groups", "transactional_ids",
               "idempotent"}  # fmt: skip
_RESOURCE_KEYS = {ResourceType.TOPIC: "topics", ResourceType.GROUP: "groups",
                  ResourceType.TRANSACTIONAL_ID: "transactional_ids"}  # fmt: skip


class RoleError(ValueError):
    """A grant or role the file cannot mean."""


@dataclass(frozen=True, slots=True)
class RoleRule:
    resource_type: ResourceType
    operations: tuple[AclOperation, ...]
    permission: AclPermissionType = AclPermissionType.ALLOW


def parse_roles(section: Any) -> dict[str, tuple[RoleRule, ...]]:
    """The file's ``roles``: name -> rules (or ``{description, rules}``)."""
    if section is None:
        return {}
    if not isinstance(section, dict):
        raise RoleError("roles: expected a mapping of role name to rules")
    out: dict[str, tuple[RoleRule, ...]] = {}
    for name, body in section.items():
        if name in BUILT_IN:
            raise RoleError(f"roles.{name}: a built-in role cannot be redefined")
        rules = body.get("rules") if isinstance(body, dict) else body
        if not isinstance(rules, list) or not rules:
            raise RoleError(f"roles.{name}: expected a non-empty list of rules")
        out[str(name)] = tuple(_rule(f"roles.{name}[{i}]", r) for i, r in enumerate(rules))
    return out


def _rule(where: str, raw: Any) -> RoleRule:
    if not isinstance(raw, dict):
        raise RoleError(f"{where}: expected {{resource_type, operations, permission}}")
    rtype = ResourceType.__members__.get(str(raw.get("resource_type", "")).upper())
    if rtype not in (*_RESOURCE_KEYS, ResourceType.CLUSTER):
        raise RoleError(f"{where}: resource_type must be TOPIC, GROUP, TRANSACTIONAL_ID or CLUSTER")
    ops = raw.get("operations")
    if not isinstance(ops, list) or not ops:
        raise RoleError(f"{where}: operations must be a non-empty list")
    # DESCRIBE_CONFIGS (the enum name) or DescribeConfigs (Kafka's display name, as --operation takes it)
    parsed = tuple(AclOperation.__members__.get(str(o).upper()) or options.parse_operation(str(o)) for o in ops)
    valid = (AclOperation.ALL, *SUPPORTED_OPERATIONS.get(rtype, ()))
    bad = [o for o, p in zip(ops, parsed, strict=True) if p not in valid]
    if bad:
        raise RoleError(f"{where}: {rtype.name} does not support {', '.join(map(str, bad))}")
    perm = AclPermissionType.__members__.get(str(raw.get("permission", "ALLOW")).upper())
    if perm not in (AclPermissionType.ALLOW, AclPermissionType.DENY):
        raise RoleError(f"{where}: permission must be ALLOW or DENY")
    return RoleRule(rtype, parsed, perm)


def expand_grant(where: str, grant: Any, roles: Mapping[str, tuple[RoleRule, ...]]) -> list[tuple[AclBinding, str]]:
    """One grant's ACLs, each with a description of where it comes from."""
    if not isinstance(grant, dict):
        raise RoleError(f"{where}: expected a mapping with role and principal")
    unknown = set(grant) - _GRANT_KEYS
    if unknown:
        raise RoleError(f"{where}: unknown key(s) {', '.join(sorted(map(str, unknown)))}")
    role = str(grant.get("role", ""))
    principals = _strings(where, grant, "principals") + _strings(where, grant, "principal")
    if not principals:
        raise RoleError(f"{where}: a grant needs a principal")
    try:
        principals = [options.parse_principal(p) for p in principals]
    except UsageError as exc:
        raise RoleError(f"{where}: {exc}") from None
    pattern = PatternType.__members__.get(str(grant.get("pattern_type", "LITERAL")).upper())
    if pattern not in (PatternType.LITERAL, PatternType.PREFIXED):
        raise RoleError(f"{where}: pattern_type must be LITERAL or PREFIXED")
    source = f"{where} (role {role})"
    if role in BUILT_IN:
        acls = _built_in(where, role, grant, principals, pattern)
    elif role in roles:
        acls = _user_defined(grant, where, roles[role], principals, pattern)
    else:
        raise RoleError(f"{where}: unknown role {role!r} (built in: {', '.join(BUILT_IN)}; or define it in roles)")
    return [(a, source) for a in acls]


def _strings(where: str, grant: Mapping[str, Any], key: str) -> list[str]:
    value = grant.get(key)
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return list(value)
    raise RoleError(f"{where}.{key}: expected a string or a list of strings")


def _built_in(
    where: str, role: str, grant: Mapping[str, Any], principals: list[str], pattern: PatternType
) -> list[AclBinding]:
    topics = _strings(where, grant, "topics")
    groups = _strings(where, grant, "groups")
    tx_ids = _strings(where, grant, "transactional_ids")
    idempotent = bool(grant.get("idempotent", False)) or role == "idempotent-producer"
    consumer = role == "consumer"
    if not topics:
        raise RoleError(f"{where}: role {role} needs topics")
    if consumer and not groups:
        raise RoleError(f"{where}: role consumer needs groups")
    if role == "transactional-producer" and not tx_ids:
        raise RoleError(f"{where}: role transactional-producer needs transactional_ids")
    if consumer and (tx_ids or idempotent):
        raise RoleError(f"{where}: role consumer takes topics and groups only")
    if not consumer and groups:
        raise RoleError(f"{where}: role {role} takes no groups")
    args = argparse.Namespace(
        producer=not consumer, consumer=consumer, idempotent=idempotent and not consumer,
        topic=topics, group=groups, transactional_id=tx_ids, cluster=False, delegation_token=None,
        user_principal=None, resource_pattern_type=pattern, allow_principal=principals, deny_principal=None,
        allow_host=_strings(where, grant, "hosts") or None, deny_host=None, operation=None,
    )  # fmt: skip
    try:
        expansion = options.filter_to_entries(args)
    except UsageError as exc:
        raise RoleError(f"{where}: {exc}") from None
    return [options.binding(p, e) for p, entries in expansion.items() for e in entries]


def _user_defined(
    grant: Mapping[str, Any], where: str, rules: tuple[RoleRule, ...], principals: list[str], pattern: PatternType
) -> list[AclBinding]:
    hosts = _strings(where, grant, "hosts") or ["*"]
    out: list[AclBinding] = []
    for rule in rules:
        if rule.resource_type is ResourceType.CLUSTER:
            names, rule_pattern = [CLUSTER_NAME], PatternType.LITERAL
        else:
            names, rule_pattern = _strings(where, grant, _RESOURCE_KEYS[rule.resource_type]), pattern
        for name in names:
            for principal in principals:
                for op in rule.operations:
                    out += [AclBinding(rule.resource_type, name, rule_pattern, principal, h, op, rule.permission)
                            for h in hosts]  # fmt: skip
    if not out:
        raise RoleError(f"{where}: the grant names no resource any rule of its role applies to")
    return out
