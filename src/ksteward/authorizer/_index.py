"""The ACL index behind ``authorize`` (``docs/authorizer.md`` §2.3-2.4, §6.1) and its publication rule.

Layout, per resource type (a :class:`_Section`)::

    literal   : {name: bucket}        LITERAL ACLs except the wildcard
    wildcard  : bucket | None         LITERAL ``*``
    prefixed  : _PrefixTable          PREFIXED ACLs: {name: bucket} plus the sorted tuple of name lengths
    unknown   : _PrefixTable          UNKNOWN pattern type (Kafka's scan treats any non-LITERAL as a prefix)

A lookup for name R reads ``literal[R]``, then ``prefixed[R[:L]]`` for each stored prefix length
``L <= len(R)``, then the wildcard: O(#prefix lengths) dict probes, independent of the ACL count.

A *bucket* holds every ACL on one (type, pattern, name), pre-grouped by who and where it applies::

    bucket = {principal: cell,               # ACLs with host "*"
              (principal, host): cell,       # host-specific ACLs
              None: number of (principal, host) keys}   # present only if there are host-specific ACLs

and a *cell* is one int: bit ``op`` for ALLOW, bit ``16 + op`` for DENY and bit ``32 + op`` for an UNKNOWN
permission (which Kafka's ``findResult`` treats as a deny). Deciding an action against a bucket is two to
four dict probes (the caller and ``User:*``, host ``*`` and the client host) and two mask tests:
``cell & GRANT[op]`` (the ALLOW implication table of §1.3, precomputed) and ``cell & DENY_TEST[op]``
(the operation itself or ALL, no implication). An ACL whose principal has no colon is filed under a key no
lookup builds, so it never applies but still makes its resource "have ACLs" (§2.6, not copying Kafka's throw).

Publication (§4.4). Kafka publishes a new persistent snapshot per change; a Python dict cannot be copied in
O(1), so this index is changed in place and guarded by a sequence counter (a seqlock): a writer makes
``version`` odd, changes, makes it even again. A reader records ``version`` before reading and retries if it
was odd or has changed when it is done, so every answer it returns was computed from one complete state,
and states are seen in the order they were applied. A read that keeps colliding with changes falls back to
the writers' lock after a few tries, so a long read cannot starve during a burst of changes.
``load_snapshot`` builds a whole new index aside and swaps one reference; writers are serialised by the
authorizer's lock.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from typing import Any

from ._binding import WILDCARD_HOST, WILDCARD_PRINCIPAL, WILDCARD_RESOURCE, AclBinding, AclBindingFilter
from ._by_type import ByTypeIndex
from ._enums import ALLOW_IMPLICATIONS, AclOperation, AclPermissionType, PatternType, ResourceType
from ._errors import InvalidAclError

__all__ = ["ALLOWED_BY_ACL", "DENIED_BY_ACL", "DENY_TEST", "GRANT", "NO_ACLS", "NO_MATCH", "AclIndex"]

Bucket = dict[Any, int]

# Outcomes of one evaluation.
DENIED_BY_ACL = 0
ALLOWED_BY_ACL = 1
NO_MATCH = 2  # the resource has ACLs, none applies: DENIED whatever allow.everyone says
NO_ACLS = 3  # no ACL pattern matches the resource: the allow-everyone default decides

_SHIFT = {AclPermissionType.ALLOW: 0, AclPermissionType.DENY: 16, AclPermissionType.UNKNOWN: 32}
_PERMISSION_AT = (AclPermissionType.ALLOW, AclPermissionType.DENY, AclPermissionType.UNKNOWN)  # by shift // 16
_OPS = tuple(AclOperation)
_ALL_BIT = 1 << AclOperation.ALL


def _grant(op: AclOperation) -> int:
    mask = _ALL_BIT | (1 << op)
    for implying in ALLOW_IMPLICATIONS.get(op, ()):
        mask |= 1 << implying
    return mask


GRANT: tuple[int, ...] = tuple(_grant(op) for op in _OPS)
"""Per requested operation code: the ALLOW bits (cell bits 0-15) that grant it (§1.3)."""
DENY_TEST: tuple[int, ...] = tuple((((1 << op) | _ALL_BIT) << 16) | (((1 << op) | _ALL_BIT) << 32) for op in _OPS)
"""Per requested operation code: the DENY and UNKNOWN-permission bits that deny it (its own bit or ALL)."""


def _key(principal: str, host: str) -> Hashable:
    if ":" not in principal:
        return ("", principal, host)  # never built by a lookup: such an ACL never applies
    return principal if host == WILDCARD_HOST else (principal, host)


def _lookup_key(
    resource_type: int, name: str, pattern: int, principal: str, host: str, op: int, permission: int
) -> AclBinding:
    """A stand-in for the stored binding with these fields, to look its id up in ``by_binding``.

    Built without parsing: IntEnum members hash and compare as their ints, so plain codes find the member."""
    key = object.__new__(AclBinding)
    setter = object.__setattr__
    setter(key, "resource_type", resource_type)
    setter(key, "resource_name", name)
    setter(key, "pattern_type", pattern)
    setter(key, "principal", principal)
    setter(key, "host", host)
    setter(key, "operation", op)
    setter(key, "permission_type", permission)
    return key


def cell_mask(bucket: Bucket, principal: str, host: str) -> int:
    """The union of the cells of ``bucket`` that apply to ``principal`` from ``host``."""
    get = bucket.get
    mask = get(principal, 0) | get(WILDCARD_PRINCIPAL, 0)
    if None in bucket:
        mask |= get((principal, host), 0) | get((WILDCARD_PRINCIPAL, host), 0)
    return mask


class _PrefixTable:
    __slots__ = ("buckets", "counts", "lengths")

    def __init__(self) -> None:
        self.buckets: dict[str, Bucket] = {}
        self.counts: dict[int, int] = {}
        self.lengths: tuple[int, ...] = ()  # replaced whole, never mutated: readers may iterate it

    def bucket_for_insert(self, name: str) -> Bucket:
        bucket = self.buckets.get(name)
        if bucket is None:
            bucket = self.buckets[name] = {}
            n = len(name)
            count = self.counts.get(n, 0)
            self.counts[n] = count + 1
            if not count:
                self.lengths = tuple(sorted(self.counts))
        return bucket

    def drop(self, name: str) -> None:
        del self.buckets[name]
        n = len(name)
        count = self.counts[n] - 1
        if count:
            self.counts[n] = count
        else:
            del self.counts[n]
            self.lengths = tuple(sorted(self.counts))


class _Section:
    __slots__ = ("literal", "prefixed", "unknown", "wildcard")

    def __init__(self) -> None:
        self.literal: dict[str, Bucket] = {}
        self.wildcard: Bucket | None = None
        self.prefixed = _PrefixTable()
        self.unknown = _PrefixTable()


class AclIndex:
    """One ACL state: ids, the 7-tuple set, the lookup sections and the by-resource-type index."""

    __slots__ = ("by_binding", "by_id", "by_name", "by_type", "offset", "sections", "version")

    def __init__(self) -> None:
        self.version = 0  # odd while a change is being applied (see the module docstring)
        self.offset = -1  # metadata offset of the last change applied, -1 if unknown
        self.by_id: dict[Hashable, AclBinding] = {}
        self.by_binding: dict[AclBinding, Hashable] = {}
        # Every ACL by (resource type, resource name), whatever its pattern type: a filter naming a resource
        # reads a few of these instead of scanning every ACL (``AclBindingFilter.resource_keys``).
        self.by_name: dict[tuple[Any, str], dict[Hashable, AclBinding]] = {}
        self.sections: dict[int, _Section] = {}
        self.by_type = ByTypeIndex()

    @classmethod
    def build(cls, acls: Iterable[tuple[Hashable, AclBinding]], offset: int = -1) -> AclIndex:
        """A fresh index holding exactly ``acls``; InvalidAclError on a repeated id or 7-tuple."""
        index = cls()
        index.offset = offset
        index.by_type.start_build()
        by_id, by_binding = index.by_id, index.by_binding
        for acl_id, acl in acls:
            if not isinstance(acl, AclBinding):
                raise TypeError(f"expected an AclBinding, got {type(acl).__name__}")
            # setdefault: one hash per map instead of a lookup and then an insert (the index is private
            # until built, so a failure just discards it)
            if by_id.setdefault(acl_id, acl) is not acl:
                raise InvalidAclError(f"an ACL with id {acl_id!r} already exists")
            other = by_binding.setdefault(acl, acl_id)
            if other != acl_id:
                raise InvalidAclError(f"the ACL {acl} is already stored under id {other!r}")
            index.insert(acl_id, acl, maps_done=True)
        index.by_type.finish_build()
        return index

    # --- changes (the caller holds the writer lock and brackets them with version bumps) --------

    def check_new(self, acl_id: Hashable, acl: AclBinding) -> None:
        if not isinstance(acl, AclBinding):
            raise TypeError(f"expected an AclBinding, got {type(acl).__name__}")
        if acl_id in self.by_id:
            raise InvalidAclError(f"an ACL with id {acl_id!r} already exists")
        other = self.by_binding.get(acl)
        if other is not None:
            raise InvalidAclError(f"the ACL {acl} is already stored under id {other!r}")

    def insert(self, acl_id: Hashable, acl: AclBinding, *, maps_done: bool = False) -> None:
        if not maps_done:
            self.by_id[acl_id] = acl
            self.by_binding[acl] = acl_id
        section = self.sections.get(acl.resource_type)
        if section is None:
            section = self.sections[acl.resource_type] = _Section()
        pattern, name = acl.pattern_type, acl.resource_name
        bucket: Bucket
        if pattern is PatternType.LITERAL:
            if name == WILDCARD_RESOURCE:
                if section.wildcard is None:
                    section.wildcard = {}
                bucket = section.wildcard
            else:
                found = section.literal.get(name)
                if found is None:
                    found = section.literal[name] = {}
                bucket = found
        elif pattern is PatternType.PREFIXED:
            bucket = section.prefixed.bucket_for_insert(name)
        else:
            bucket = section.unknown.bucket_for_insert(name)
        named = self.by_name.get((acl.resource_type, name))
        if named is None:
            named = self.by_name[(acl.resource_type, name)] = {}
        named[acl_id] = acl
        key = _key(acl.principal, acl.host)
        old = bucket.get(key, 0)
        bucket[key] = old | (1 << (acl.operation + _SHIFT[acl.permission_type]))
        if not old and type(key) is tuple and len(key) == 2:
            bucket[None] = bucket.get(None, 0) + 1
        self.by_type.add(acl)

    def delete(self, acl_id: Hashable) -> AclBinding:
        acl = self.by_id.pop(acl_id)
        del self.by_binding[acl]
        section = self.sections[acl.resource_type]
        pattern, name = acl.pattern_type, acl.resource_name
        named = self.by_name[(acl.resource_type, name)]
        del named[acl_id]
        if not named:
            del self.by_name[(acl.resource_type, name)]
        table: _PrefixTable | None = None
        if pattern is PatternType.LITERAL:
            bucket = section.wildcard if name == WILDCARD_RESOURCE else section.literal[name]
            assert bucket is not None
        else:
            table = section.prefixed if pattern is PatternType.PREFIXED else section.unknown
            bucket = table.buckets[name]
        key = _key(acl.principal, acl.host)
        cell = bucket[key] & ~(1 << (acl.operation + _SHIFT[acl.permission_type]))
        if cell:
            bucket[key] = cell
        else:
            del bucket[key]
            if type(key) is tuple and len(key) == 2:
                remaining = bucket[None] - 1
                if remaining:
                    bucket[None] = remaining
                else:
                    del bucket[None]
        if not bucket:
            if table is not None:
                table.drop(name)
            elif name == WILDCARD_RESOURCE and pattern is PatternType.LITERAL:
                section.wildcard = None
            else:
                del section.literal[name]
        self.by_type.remove(acl)
        return acl

    # --- reads -----------------------------------------------------------------------------------

    def evaluate(self, resource_type: int, name: str, principal: str, host: str, op: int) -> int:
        """§2.3 steps 5-7 for one action: one of DENIED_BY_ACL, ALLOWED_BY_ACL, NO_MATCH, NO_ACLS."""
        section = self.sections.get(resource_type)
        if section is None:
            return NO_ACLS
        deny = DENY_TEST[op]
        allow = GRANT[op]
        found = allowed = False
        bucket = section.literal.get(name)
        if bucket is not None:
            found = True
            mask = cell_mask(bucket, principal, host)
            if mask & deny:
                return DENIED_BY_ACL
            allowed = (mask & allow) != 0
        for table in (section.prefixed, section.unknown):
            lengths = table.lengths
            if lengths:
                get = table.buckets.get
                size = len(name)
                for n in lengths:
                    if n > size:
                        break
                    bucket = get(name[:n])
                    if bucket is not None:
                        found = True
                        mask = cell_mask(bucket, principal, host)
                        if mask & deny:
                            return DENIED_BY_ACL
                        if mask & allow:
                            allowed = True
        bucket = section.wildcard
        if bucket is not None:
            found = True
            mask = cell_mask(bucket, principal, host)
            if mask & deny:
                return DENIED_BY_ACL
            if mask & allow:
                allowed = True
        if allowed:
            return ALLOWED_BY_ACL
        return NO_MATCH if found else NO_ACLS

    def union_masks(self, resource_type: int, name: str, principal: str, host: str) -> tuple[bool, int]:
        """(resource has ACLs, OR of every applicable cell): decides all operations in one pass."""
        section = self.sections.get(resource_type)
        if section is None:
            return False, 0
        buckets = self._buckets_in_scan_order(section, name)
        mask = 0
        for _, _, bucket in buckets:
            mask |= cell_mask(bucket, principal, host)
        return bool(buckets), mask

    def explain(
        self, resource_type: int, name: str, principal: str, host: str, op: int
    ) -> tuple[int, Hashable | None, AclBinding | None]:
        """Like :meth:`evaluate`, plus the deciding ACL's id and binding, chosen as Kafka's scan does (§2.4):
        the first applicable DENY in scan order, else the last applicable ALLOW."""
        section = self.sections.get(resource_type)
        if section is None:
            return NO_ACLS, None, None
        wanted = DENY_TEST[op] | GRANT[op]
        buckets = self._buckets_in_scan_order(section, name)
        other = principal != WILDCARD_PRINCIPAL
        specific_host = host != WILDCARD_HOST
        allow_at: tuple[PatternType, str, tuple[int, str, str, AclPermissionType]] | None = None
        for pattern, bucket_name, bucket in buckets:
            get = bucket.get
            mine = get(principal, 0) & wanted
            anyone = get(WILDCARD_PRINCIPAL, 0) & wanted if other else 0
            mine_here = anyone_here = 0
            if specific_host and None in bucket:
                mine_here = get((principal, host), 0) & wanted
                anyone_here = get((WILDCARD_PRINCIPAL, host), 0) & wanted if other else 0
            if not (mine or anyone or mine_here or anyone_here):
                continue
            hits: list[tuple[int, str, str, AclPermissionType]] = []
            for p, h, cell in (
                (principal, WILDCARD_HOST, mine),
                (WILDCARD_PRINCIPAL, WILDCARD_HOST, anyone),
                (principal, host, mine_here),
                (WILDCARD_PRINCIPAL, host, anyone_here),
            ):
                while cell:  # one hit per set bit: bit = shift + operation code
                    low = cell & -cell
                    position = low.bit_length() - 1
                    hits.append((position & 15, p, h, _PERMISSION_AT[position >> 4]))
                    cell ^= low
            hits.sort()  # Kafka's order within one name: operation, principal, host, permission
            for hit in hits:
                if hit[3] is not AclPermissionType.ALLOW:
                    acl_id = self._id_of(resource_type, bucket_name, pattern, hit)
                    return DENIED_BY_ACL, acl_id, self.by_id[acl_id]
                allow_at = (pattern, bucket_name, hit)
        if allow_at is not None:
            acl_id = self._id_of(resource_type, allow_at[1], allow_at[0], allow_at[2])
            return ALLOWED_BY_ACL, acl_id, self.by_id[acl_id]
        return (NO_MATCH if buckets else NO_ACLS), None, None

    def _id_of(
        self, resource_type: int, name: str, pattern: int, hit: tuple[int, str, str, AclPermissionType]
    ) -> Hashable:
        op, principal, host, permission = hit
        return self.by_binding[_lookup_key(resource_type, name, pattern, principal, host, op, permission)]

    @staticmethod
    def _buckets_in_scan_order(section: _Section, name: str) -> list[tuple[PatternType, str, Bucket]]:
        # Kafka's order (§6.1): names descending, so R first and then its prefixes, longest first; within
        # one name, pattern types in code order (UNKNOWN, LITERAL, PREFIXED); then the wildcard section.
        size = len(name)
        unknown, prefixed = section.unknown, section.prefixed
        # R == "*" meets the wildcard bucket at its own name too, as Kafka's first pass does (then again below)
        exact = section.wildcard if name == WILDCARD_RESOURCE else section.literal.get(name)
        found: list[tuple[PatternType, str, Bucket]] = []
        if not unknown.lengths:  # the usual case: LITERAL R, then PREFIXED prefixes of R, longest first
            if exact is not None:
                found.append((PatternType.LITERAL, name, exact))
            get = prefixed.buckets.get
            for n in reversed(prefixed.lengths):
                if n <= size:
                    head = name[:n]
                    bucket = get(head)
                    if bucket is not None:
                        found.append((PatternType.PREFIXED, head, bucket))
        else:
            lengths = sorted({n for n in (*unknown.lengths, *prefixed.lengths) if n <= size} | {size}, reverse=True)
            for n in lengths:
                head = name[:n]
                for pattern, bucket in (
                    (PatternType.UNKNOWN, unknown.buckets.get(head)),
                    (PatternType.LITERAL, exact if n == size else None),
                    (PatternType.PREFIXED, prefixed.buckets.get(head)),
                ):
                    if bucket is not None:
                        found.append((pattern, head, bucket))
        if section.wildcard is not None:
            found.append((PatternType.LITERAL, WILDCARD_RESOURCE, section.wildcard))
        return found

    def bindings(self) -> list[AclBinding]:
        return list(self.by_id.values())

    def items(self) -> list[tuple[Hashable, AclBinding]]:
        return list(self.by_id.items())

    def matching_items(self, acl_filter: AclBindingFilter) -> list[tuple[Hashable, AclBinding]]:
        """The (id, ACL) pairs ``acl_filter`` matches: from ``by_name`` when the filter names a resource (for a
        MATCH filter, only the prefix lengths stored for the type are probed), else a scan."""
        keys = acl_filter.resource_keys(
            (ResourceType(t) for t in self.sections), lambda t: self._prefix_lengths(int(t))
        )
        matches = acl_filter.matches
        if keys is None:
            return [(acl_id, acl) for acl_id, acl in self.by_id.items() if matches(acl)]
        found = []
        get = self.by_name.get
        for key in keys:
            named = get(key)
            if named:
                found += [(acl_id, acl) for acl_id, acl in named.items() if matches(acl)]
        return found

    def _prefix_lengths(self, resource_type: int) -> tuple[int, ...]:
        section = self.sections.get(resource_type)
        if section is None:
            return ()
        if not section.unknown.lengths:
            return section.prefixed.lengths
        return (*section.prefixed.lengths, *section.unknown.lengths)
