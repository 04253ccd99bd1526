"""The index behind ``authorize_by_resource_type`` (``docs/authorizer.md`` §2.7): no scan of every ACL, as Kafka does.

Kafka's default method keeps, from all ACLs of the resource type, those whose host is the client's or
``*``, whose principal is the caller's or ``User:*`` and whose operation is the requested one or ALL
(no implication), then asks: is there a wildcard DENY (DENIED), a wildcard ALLOW (ALLOWED), or an allowed
literal or prefix that no denied literal or denied prefix dominates?

Those filters pick at most eight *groups* of ACLs, keyed by (principal, host, operation), which this
index keeps per resource type::

    (principal, host, op) -> _Group: allowed/denied literal names, allowed/denied prefixes, wildcard flags

A query unions the groups of (caller or ``User:*``) x (client host or ``*``) x (op or ALL) and looks for a
witness: an allowed name that is not dominated. To find one without walking every allowed name:

- each group keeps, sorted, the allowed literals that its own denied literals do not cover and the
  allowed prefixes that its own denied prefixes do not cover (``free_lit``, ``free_pre``). When every
  ALLOW has a DENY twin, as in the 99%-deny benchmark, these lists are short or empty;
- the remaining candidates are walked in sorted order, and a denied prefix ``p`` that dominates one skips
  every candidate that starts with ``p`` with one bisection (all of them lie in ``[p, successor(p))``).

A query therefore costs O(groups + dominating prefixes met + names denied across groups) bisections,
not O(ACLs of the type). Updates are O(log n): a set insert plus a bisect-insert into a block of at most
``_SortedStrs.LOAD * 2`` names.

The structures are mutated in place; :class:`~ksteward.authorizer._index.AclIndex`'s sequence counter is
what keeps readers from acting on a half-applied change.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right, insort
from collections.abc import Iterable, Iterator

from ._binding import WILDCARD_HOST, WILDCARD_PRINCIPAL, WILDCARD_RESOURCE, AclBinding
from ._enums import AclOperation, AclPermissionType, PatternType

__all__ = ["ByTypeIndex"]

_ALL = int(AclOperation.ALL)
_ALLOW = AclPermissionType.ALLOW
_DENY = AclPermissionType.DENY
_LITERAL = PatternType.LITERAL
_PREFIXED = PatternType.PREFIXED
_MAX_CHAR = chr(0x10FFFF)


def prefix_successor(prefix: str) -> str | None:
    """The least string greater than every string that starts with ``prefix`` (None: no such string)."""
    stripped = prefix.rstrip(_MAX_CHAR)
    if not stripped:
        return None
    return stripped[:-1] + chr(ord(stripped[-1]) + 1)


class _SortedStrs:
    """A sorted multiset-free list of strings in blocks (the layout of ``sortedcontainers.SortedList``).

    ``add`` and ``remove`` bisect the block maxima, then insert into one block of at most ``2 * LOAD``
    strings; ``ceiling`` and ``higher`` answer "first element >= / > x" with two bisections.
    """

    __slots__ = ("_blocks", "_maxes")
    LOAD = 256

    def __init__(self, items: Iterable[str] = ()) -> None:
        ordered = sorted(items)
        load = self.LOAD
        self._blocks: list[list[str]] = [ordered[i : i + load] for i in range(0, len(ordered), load)]
        self._maxes: list[str] = [block[-1] for block in self._blocks]

    def __len__(self) -> int:
        return sum(len(b) for b in self._blocks)

    def __bool__(self) -> bool:
        return bool(self._maxes)

    def __iter__(self) -> Iterator[str]:
        for block in self._blocks:
            yield from block

    def add(self, item: str) -> None:
        maxes = self._maxes
        if not maxes:
            self._blocks.append([item])
            maxes.append(item)
            return
        i = bisect_left(maxes, item)
        if i == len(maxes):
            i -= 1
            block = self._blocks[i]
            block.append(item)
            maxes[i] = item
        else:
            block = self._blocks[i]
            insort(block, item)
        if len(block) > 2 * self.LOAD:
            half = len(block) // 2
            self._blocks[i : i + 1] = [block[:half], block[half:]]
            maxes[i : i + 1] = [block[half - 1], block[-1]]

    def remove(self, item: str) -> None:
        maxes = self._maxes
        i = bisect_left(maxes, item)
        block = self._blocks[i]
        j = bisect_left(block, item)
        if block[j] != item:
            raise KeyError(item)
        del block[j]
        if not block:
            del self._blocks[i]
            del maxes[i]
        elif j == len(block):
            maxes[i] = block[-1]

    def ceiling(self, item: str) -> str | None:
        """The least element >= ``item``."""
        i = bisect_left(self._maxes, item)
        if i == len(self._maxes):
            return None
        block = self._blocks[i]
        return block[bisect_left(block, item)]

    def higher(self, item: str) -> str | None:
        """The least element > ``item``."""
        i = bisect_right(self._maxes, item)
        if i == len(self._maxes):
            return None
        block = self._blocks[i]
        return block[bisect_right(block, item)]

    def first(self) -> str | None:
        return self._blocks[0][0] if self._blocks else None


class _Group:
    """The ACLs of one (principal, host, operation) under one resource type, split as §2.7 step 4 does."""

    __slots__ = (
        "allow_lit",
        "allow_pre",
        "allow_wild",
        "deny_lit",
        "deny_pre",
        "deny_pre_lengths",
        "deny_wild",
        "free_lit",
        "free_pre",
    )

    def __init__(self) -> None:
        self.allow_lit: set[str] = set()
        self.deny_lit: set[str] = set()
        self.allow_pre: set[str] = set()
        self.deny_pre: set[str] = set()
        self.deny_pre_lengths: dict[int, int] = {}
        self.allow_wild = False
        self.deny_wild = False
        # None while a bulk build is filling the sets; see ByTypeIndex.finish_build.
        self.free_lit: _SortedStrs | None = _SortedStrs()
        self.free_pre: _SortedStrs | None = _SortedStrs()

    def is_empty(self) -> bool:
        return not (
            self.allow_lit or self.deny_lit or self.allow_pre or self.deny_pre or self.allow_wild or self.deny_wild
        )

    def finish_build(self) -> None:
        self.free_lit = _SortedStrs(self.allow_lit - self.deny_lit)
        self.free_pre = _SortedStrs(p for p in self.allow_pre if not _self_dominated(p, self.deny_pre))


def _self_dominated(prefix: str, deny_pre: set[str]) -> bool:
    # An allowed prefix P is dominated by a denied prefix equal to P, unless P is empty (§2.7 checks the
    # leading substrings of lengths 1..|P|, so an empty allowed prefix is never dominated).
    return bool(prefix) and prefix in deny_pre


_GroupKey = tuple[str, str, int]


class ByTypeIndex:
    """Per resource type: (principal, host, op) -> :class:`_Group`. Holds only ALLOW/DENY LITERAL/PREFIXED ACLs
    whose principal has a colon (any other ACL is never kept by §2.7's scan)."""

    __slots__ = ("_building", "_types")

    def __init__(self) -> None:
        self._types: dict[int, dict[_GroupKey, _Group]] = {}
        self._building = False

    # --- updates ---------------------------------------------------------------------------------

    @staticmethod
    def _relevant(acl: AclBinding) -> bool:
        return (
            (acl.permission_type is _ALLOW or acl.permission_type is _DENY)
            and (acl.pattern_type is _LITERAL or acl.pattern_type is _PREFIXED)
            and ":" in acl.principal
        )

    def start_build(self) -> None:
        """Bulk mode: ``add`` fills the sets only; ``finish_build`` sorts the free lists once."""
        self._building = True

    def finish_build(self) -> None:
        for groups in self._types.values():
            for group in groups.values():
                group.finish_build()
        self._building = False

    def add(self, acl: AclBinding) -> None:
        if not self._relevant(acl):
            return
        groups = self._types.get(acl.resource_type)
        if groups is None:
            groups = self._types[acl.resource_type] = {}
        key = (acl.principal, acl.host, int(acl.operation))
        group = groups.get(key)
        if group is None:
            group = groups[key] = _Group()
            if self._building:
                group.free_lit = group.free_pre = None
        name = acl.resource_name
        building = self._building
        if acl.pattern_type is _LITERAL:
            if name == WILDCARD_RESOURCE:
                if acl.permission_type is _ALLOW:
                    group.allow_wild = True
                else:
                    group.deny_wild = True
            elif acl.permission_type is _ALLOW:
                group.allow_lit.add(name)
                if not building and name not in group.deny_lit:
                    group.free_lit.add(name)  # type: ignore[union-attr]
            else:
                group.deny_lit.add(name)
                if not building and name in group.allow_lit:
                    group.free_lit.remove(name)  # type: ignore[union-attr]
        elif acl.permission_type is _ALLOW:
            group.allow_pre.add(name)
            if not building and not _self_dominated(name, group.deny_pre):
                group.free_pre.add(name)  # type: ignore[union-attr]
        else:
            group.deny_pre.add(name)
            lengths = group.deny_pre_lengths
            lengths[len(name)] = lengths.get(len(name), 0) + 1
            if not building and name in group.allow_pre and name:
                group.free_pre.remove(name)  # type: ignore[union-attr]

    def remove(self, acl: AclBinding) -> None:
        if not self._relevant(acl):
            return
        groups = self._types[acl.resource_type]
        key = (acl.principal, acl.host, int(acl.operation))
        group = groups[key]
        name = acl.resource_name
        free_lit, free_pre = group.free_lit, group.free_pre
        assert free_lit is not None and free_pre is not None, "remove during a bulk build"
        if acl.pattern_type is _LITERAL:
            if name == WILDCARD_RESOURCE:
                if acl.permission_type is _ALLOW:
                    group.allow_wild = False
                else:
                    group.deny_wild = False
            elif acl.permission_type is _ALLOW:
                group.allow_lit.remove(name)
                if name not in group.deny_lit:
                    free_lit.remove(name)
            else:
                group.deny_lit.remove(name)
                if name in group.allow_lit:
                    free_lit.add(name)
        elif acl.permission_type is _ALLOW:
            group.allow_pre.remove(name)
            if not _self_dominated(name, group.deny_pre):
                free_pre.remove(name)
        else:
            group.deny_pre.remove(name)
            lengths = group.deny_pre_lengths
            count = lengths[len(name)] - 1
            if count:
                lengths[len(name)] = count
            else:
                del lengths[len(name)]
            if name in group.allow_pre and name:
                free_pre.add(name)
        if group.is_empty():
            del groups[key]
            if not groups:
                del self._types[acl.resource_type]

    # --- the query -------------------------------------------------------------------------------

    def any_undominated_allow(self, resource_type: int, principal: str, host: str, op: int) -> bool:
        """Steps 3-8 of §2.7 after the probe: True for ALLOWED, False for DENIED."""
        groups_of_type = self._types.get(resource_type)
        if not groups_of_type:
            return False
        principals = (principal,) if principal == WILDCARD_PRINCIPAL else (principal, WILDCARD_PRINCIPAL)
        hosts = (host,) if host == WILDCARD_HOST else (host, WILDCARD_HOST)
        ops = (op,) if op == _ALL else (op, _ALL)
        groups: list[_Group] = []
        for p in principals:
            for h in hosts:
                for o in ops:
                    group = groups_of_type.get((p, h, o))
                    if group is not None:
                        groups.append(group)
        if not groups:
            return False
        for group in groups:
            if group.deny_wild:
                return False
        for group in groups:
            if group.allow_wild:
                return True
        deny_lits = [g.deny_lit for g in groups if g.deny_lit]
        deny_pres = [g.deny_pre for g in groups if g.deny_pre]
        lengths = sorted({n for g in groups for n in g.deny_pre_lengths if n > 0})

        def dominating_prefix(name: str) -> str | None:
            """The shortest denied prefix among the leading substrings of ``name`` (lengths 1..|name|)."""
            size = len(name)
            for n in lengths:
                if n > size:
                    return None
                head = name[:n]
                for denied in deny_pres:
                    if head in denied:
                        return head
            return None

        for group in groups:
            free = group.free_lit
            assert free is not None
            candidate = free.first()
            while candidate is not None:
                head = dominating_prefix(candidate) if lengths else None
                if head is not None:
                    after = prefix_successor(head)
                    candidate = None if after is None else free.ceiling(after)
                    continue
                if any(candidate in denied for denied in deny_lits):
                    candidate = free.higher(candidate)
                    continue
                return True
            free_pre = group.free_pre
            assert free_pre is not None
            candidate = free_pre.first()
            while candidate is not None:
                head = dominating_prefix(candidate) if lengths else None
                if head is None:
                    return True
                after = prefix_successor(head)
                candidate = None if after is None else free_pre.ceiling(after)
        return False
