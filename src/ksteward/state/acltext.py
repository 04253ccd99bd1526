"""One ACL as one short line of a state file, and back.

A file holds ACLs grouped by principal, each a string ``PERMISSION OPERATION [host=HOST] TYPE:PATTERN:NAME``::

    "User:alice":
      - ALLOW READ TOPIC:LITERAL:orders
      - ALLOW WRITE host=10.0.0.7 TOPIC:PREFIXED:orders.
      - DENY ALL GROUP:LITERAL:legacy group

Strings, not mappings, because a YAML loader builds 100,000 short strings about fifty times faster than
100,000 seven-key mappings (docs/state-files.md §ACLs), and one ACL per line diffs cleanly. The name is
everything after the second colon, so a group or transactional id may hold spaces and colons; a host
cannot hold a space (it is an address or ``*``).
"""

from __future__ import annotations

from ksteward.authorizer import (
    WILDCARD_HOST,
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)

_PERMISSIONS = {"ALLOW": AclPermissionType.ALLOW, "DENY": AclPermissionType.DENY}
_OPERATIONS = {o.name: o for o in AclOperation if o not in (AclOperation.ANY, AclOperation.UNKNOWN)}
_TYPES = {t.name: t for t in ResourceType if t not in (ResourceType.ANY, ResourceType.UNKNOWN)}
_PATTERNS = {"LITERAL": PatternType.LITERAL, "PREFIXED": PatternType.PREFIXED}


class AclTextError(ValueError):
    """A line that is not ``PERMISSION OPERATION [host=HOST] TYPE:PATTERN:NAME``."""


def acl_text(acl: AclBinding) -> str:
    """The line for ``acl`` (its principal is the key it is listed under)."""
    host = "" if acl.host == WILDCARD_HOST else f"host={acl.host} "
    return (
        f"{acl.permission_type.name} {acl.operation.name} {host}"
        f"{acl.resource_type.name}:{acl.pattern_type.name}:{acl.resource_name}"
    )


def parse_acl_text(principal: str, line: str) -> AclBinding:
    """The ACL of ``principal`` a line describes; :class:`AclTextError` naming what is wrong."""
    if not isinstance(line, str):
        raise AclTextError(f"expected a string like 'ALLOW READ TOPIC:LITERAL:orders', got {type(line).__name__}")
    parts = line.split(" ", 2)
    if len(parts) != 3:
        raise AclTextError(f"{line!r}: expected 'PERMISSION OPERATION TYPE:PATTERN:NAME'")
    permission, operation, rest = parts
    host = WILDCARD_HOST
    if rest.startswith("host="):
        host, _, rest = rest[5:].partition(" ")
        if not host:
            raise AclTextError(f"{line!r}: empty host")
    rtype, _, tail = rest.partition(":")
    pattern, colon, name = tail.partition(":")
    perm = _PERMISSIONS.get(permission.upper())
    op = _OPERATIONS.get(operation.upper())
    res = _TYPES.get(rtype.upper())
    pat = _PATTERNS.get(pattern.upper())
    if perm is None:
        raise AclTextError(f"{line!r}: permission {permission!r} is not ALLOW or DENY")
    if op is None:
        raise AclTextError(f"{line!r}: unknown operation {operation!r} (one of {', '.join(_OPERATIONS)})")
    if res is None or not colon:
        raise AclTextError(f"{line!r}: expected TYPE:PATTERN:NAME with TYPE one of {', '.join(_TYPES)}")
    if pat is None:
        raise AclTextError(f"{line!r}: pattern type {pattern!r} is not LITERAL or PREFIXED")
    if not name:
        raise AclTextError(f"{line!r}: empty resource name")
    return AclBinding(res, name, pat, principal, host, op, perm)


def sort_key(acl: AclBinding) -> tuple[str, int, str, int, int, int, str]:
    """The order of ACLs in a file: by principal, resource, pattern, operation, permission, host."""
    return (
        acl.principal,
        int(acl.resource_type),
        acl.resource_name,
        int(acl.pattern_type),
        int(acl.operation),
        int(acl.permission_type),
        acl.host,
    )
