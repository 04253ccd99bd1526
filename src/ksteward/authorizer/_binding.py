"""``AclBinding`` (one stored ACL) and ``AclBindingFilter`` (what DescribeAcls and DeleteAcls match with).

Section signs (§) refer to ``docs/authorizer.md``.

Both are flat, frozen, slotted dataclasses: Kafka's ``ResourcePattern`` + ``AccessControlEntry`` pair in
one object, because a million of them may be held at once. Enum fields accept the names of §1 or the
members (or int wire codes, so a metadata record converts directly)::

    >>> AclBinding(resource_type="TOPIC", resource_name="orders", pattern_type="LITERAL",
    ...            principal="User:bob", host="*", operation="read", permission_type="ALLOW")
    AclBinding(resource_type=<ResourceType.TOPIC: 2>, resource_name='orders', ...)
    >>> AclBindingFilter(resource_type="TOPIC", resource_name="orders-1", pattern_type="MATCH").matches(b)

An ``AclBinding`` is Kafka's: its resource type may not be ANY, its pattern type not ANY or MATCH, its
operation and permission not ANY (``InvalidAclError``, where Kafka throws IllegalArgumentException). UNKNOWN
is accepted, as Kafka accepts it; whether an ACL is valid for creation is CreateAcls' job (§3.3).

The three strings of a binding are interned (``sys.intern``), so a million ACLs share one copy of each
principal, host and resource name and the index compares them by identity first.

``AclBindingFilter.matches`` is §3.1 exactly: ``resource_name``, ``principal`` and ``host`` may be None
(match anything); ANY matches any value; MATCH treats the filter name as a concrete resource name and
matches the stored patterns that would apply to it. ``find_indefinite_field`` gives Kafka's reason texts.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import ClassVar

from ._enums import AclOperation, AclPermissionType, PatternType, ResourceType, parse_enum
from ._errors import InvalidAclError

__all__ = [
    "CLUSTER_NAME",
    "WILDCARD_HOST",
    "WILDCARD_PRINCIPAL",
    "WILDCARD_RESOURCE",
    "AclBinding",
    "AclBindingFilter",
]

WILDCARD_RESOURCE = "*"
"""A LITERAL resource name that means every resource of its type (a PREFIXED ``*`` is not a wildcard)."""
WILDCARD_PRINCIPAL = "User:*"
"""The ACL principal that matches every principal, of any type."""
WILDCARD_HOST = "*"
CLUSTER_NAME = "kafka-cluster"
"""The only name a CLUSTER resource has."""

_ENUM_TYPES = (
    ("resource_type", ResourceType),
    ("pattern_type", PatternType),
    ("operation", AclOperation),
    ("permission_type", AclPermissionType),
)


def _str_field(name: str, value: object, *, optional: bool) -> str | None:
    if value is None:
        if optional:
            return None
        raise InvalidAclError(f"{name} must be a string, not None")
    if type(value) is not str:
        if not isinstance(value, str):
            raise TypeError(f"{name} must be a string, not {type(value).__name__}")
        value = str(value)
    return sys.intern(value)


@dataclass(frozen=True, slots=True, init=False)
class AclBinding:
    """One ACL: a resource pattern and an access-control entry. Identity is all seven fields (§3.3)."""

    resource_type: ResourceType
    resource_name: str
    pattern_type: PatternType
    principal: str
    host: str
    operation: AclOperation
    permission_type: AclPermissionType

    def __init__(
        self,
        resource_type: ResourceType | str | int,
        resource_name: str,
        pattern_type: PatternType | str | int,
        principal: str,
        host: str,
        operation: AclOperation | str | int,
        permission_type: AclPermissionType | str | int,
    ) -> None:
        rt = parse_enum(ResourceType, resource_type)
        pt = parse_enum(PatternType, pattern_type)
        op = parse_enum(AclOperation, operation)
        perm = parse_enum(AclPermissionType, permission_type)
        if rt is ResourceType.ANY:
            raise InvalidAclError("an ACL's resource type cannot be ANY")
        if pt is PatternType.ANY or pt is PatternType.MATCH:
            raise InvalidAclError(f"an ACL's pattern type cannot be {pt.name}")
        if op is AclOperation.ANY:
            raise InvalidAclError("an ACL's operation cannot be ANY")
        if perm is AclPermissionType.ANY:
            raise InvalidAclError("an ACL's permission type cannot be ANY")
        setter = object.__setattr__
        setter(self, "resource_type", rt)
        setter(self, "resource_name", _str_field("resource_name", resource_name, optional=False))
        setter(self, "pattern_type", pt)
        setter(self, "principal", _str_field("principal", principal, optional=False))
        setter(self, "host", _str_field("host", host, optional=False))
        setter(self, "operation", op)
        setter(self, "permission_type", perm)

    @classmethod
    def trusted(
        cls,
        resource_type: ResourceType,
        resource_name: str,
        pattern_type: PatternType,
        principal: str,
        host: str,
        operation: AclOperation,
        permission_type: AclPermissionType,
    ) -> AclBinding:
        """A binding from values already checked: members that ``__init__`` accepts, interned strings. Replaying
        10^5 ACL records builds one per record, and ``__init__``'s parsing was most of that cost."""
        self = object.__new__(cls)
        setter = object.__setattr__
        setter(self, "resource_type", resource_type)
        setter(self, "resource_name", resource_name)
        setter(self, "pattern_type", pattern_type)
        setter(self, "principal", principal)
        setter(self, "host", host)
        setter(self, "operation", operation)
        setter(self, "permission_type", permission_type)
        return self

    @property
    def is_unknown(self) -> bool:
        """Kafka's ``AclBinding.isUnknown``: any field is UNKNOWN."""
        return (
            self.resource_type is ResourceType.UNKNOWN
            or self.pattern_type is PatternType.UNKNOWN
            or self.operation is AclOperation.UNKNOWN
            or self.permission_type is AclPermissionType.UNKNOWN
        )

    def to_filter(self) -> AclBindingFilter:
        """The filter that matches exactly this binding."""
        return AclBindingFilter(
            self.resource_type,
            self.resource_name,
            self.pattern_type,
            self.principal,
            self.host,
            self.operation,
            self.permission_type,
        )

    def __getstate__(self) -> tuple[object, ...]:
        return tuple(getattr(self, f) for f in _FIELDS)

    def __setstate__(self, state: tuple[object, ...]) -> None:
        for f, v in zip(_FIELDS, state, strict=True):
            object.__setattr__(self, f, v)


_FIELDS = (
    "resource_type",
    "resource_name",
    "pattern_type",
    "principal",
    "host",
    "operation",
    "permission_type",
)


@dataclass(frozen=True, slots=True, init=False)
class AclBindingFilter:
    """A pattern filter plus an entry filter (§3.1). The defaults match every ACL: ``AclBindingFilter.ANY``."""

    resource_type: ResourceType
    resource_name: str | None
    pattern_type: PatternType
    principal: str | None
    host: str | None
    operation: AclOperation
    permission_type: AclPermissionType

    ANY: ClassVar[AclBindingFilter]

    def __init__(
        self,
        resource_type: ResourceType | str | int = ResourceType.ANY,
        resource_name: str | None = None,
        pattern_type: PatternType | str | int = PatternType.ANY,
        principal: str | None = None,
        host: str | None = None,
        operation: AclOperation | str | int = AclOperation.ANY,
        permission_type: AclPermissionType | str | int = AclPermissionType.ANY,
    ) -> None:
        setter = object.__setattr__
        setter(self, "resource_type", parse_enum(ResourceType, resource_type))
        setter(self, "resource_name", _str_field("resource_name", resource_name, optional=True))
        setter(self, "pattern_type", parse_enum(PatternType, pattern_type))
        setter(self, "principal", _str_field("principal", principal, optional=True))
        setter(self, "host", _str_field("host", host, optional=True))
        setter(self, "operation", parse_enum(AclOperation, operation))
        setter(self, "permission_type", parse_enum(AclPermissionType, permission_type))

    def matches(self, acl: AclBinding) -> bool:
        """§3.1: both the pattern filter and the entry filter match ``acl``."""
        return self.matches_pattern(acl) and self.matches_entry(acl)

    def matches_pattern(self, acl: AclBinding) -> bool:
        """Kafka's ``ResourcePatternFilter.matches`` (rules 1-5 of §3.1)."""
        rt = self.resource_type
        if rt is not ResourceType.ANY and rt is not acl.resource_type:
            return False
        pt = self.pattern_type
        if pt is not PatternType.ANY and pt is not PatternType.MATCH and pt is not acl.pattern_type:
            return False
        name = self.resource_name
        if name is None:
            return True
        if pt is PatternType.ANY or pt is acl.pattern_type:
            return name == acl.resource_name
        # MATCH: which stored patterns would apply to the concrete resource ``name``?
        if acl.pattern_type is PatternType.LITERAL:
            return name == acl.resource_name or acl.resource_name == WILDCARD_RESOURCE
        if acl.pattern_type is PatternType.PREFIXED:
            return name.startswith(acl.resource_name)
        return False  # Kafka throws for a stored UNKNOWN pattern here; no stored pattern of that kind applies

    def matches_entry(self, acl: AclBinding) -> bool:
        """Kafka's ``AccessControlEntryFilter.matches``: exact strings, ANY for any operation or permission."""
        if self.principal is not None and self.principal != acl.principal:
            return False
        if self.host is not None and self.host != acl.host:
            return False
        if self.operation is not AclOperation.ANY and self.operation is not acl.operation:
            return False
        return self.permission_type is AclPermissionType.ANY or self.permission_type is acl.permission_type

    @property
    def is_unknown(self) -> bool:
        """Any of resource type, pattern type, operation or permission is UNKNOWN."""
        return (
            self.resource_type is ResourceType.UNKNOWN
            or self.pattern_type is PatternType.UNKNOWN
            or self.operation is AclOperation.UNKNOWN
            or self.permission_type is AclPermissionType.UNKNOWN
        )

    def find_indefinite_field(self) -> str | None:
        """The first reason this filter could match more than one ACL (Kafka's texts), or None."""
        if self.resource_type is ResourceType.ANY:
            return "Resource type is ANY."
        if self.resource_type is ResourceType.UNKNOWN:
            return "Resource type is UNKNOWN."
        if self.resource_name is None:
            return "Resource name is NULL."
        if self.pattern_type is PatternType.MATCH:
            return "Resource pattern type is MATCH."
        if self.pattern_type is PatternType.UNKNOWN:
            return "Resource pattern type is UNKNOWN."
        if self.principal is None:
            return "Principal is NULL"
        if self.host is None:
            return "Host is NULL"
        if self.operation is AclOperation.ANY:
            return "Operation is ANY"
        if self.operation is AclOperation.UNKNOWN:
            return "Operation is UNKNOWN"
        if self.permission_type is AclPermissionType.ANY:
            return "Permission type is ANY"
        if self.permission_type is AclPermissionType.UNKNOWN:
            return "Permission type is UNKNOWN"
        return None

    @property
    def matches_at_most_one(self) -> bool:
        return self.find_indefinite_field() is None

    def resource_keys(
        self, present: Iterable[ResourceType], prefix_lengths: Callable[[ResourceType], Iterable[int]] | None = None
    ) -> list[tuple[ResourceType, str]] | None:
        """The (resource type, resource name) pairs under which every ACL this filter can match is stored, so
        that a store keyed by them answers the filter with a few lookups instead of a scan; None when the filter
        names no resource (then only a scan will do). ``present`` is the stored resource types (for ANY), and
        ``prefix_lengths`` the lengths of a type's stored PREFIXED names, if the store knows them.

        A MATCH filter on name R can match LITERAL R, LITERAL ``*`` and any PREFIXED name R starts with (R and
        the empty name included); every other pattern type matches only ACLs named R. The keys are candidates:
        the caller still applies :meth:`matches`."""
        name = self.resource_name
        if name is None:
            return None
        types = tuple(present) if self.resource_type is ResourceType.ANY else (self.resource_type,)
        if self.pattern_type is not PatternType.MATCH:
            return [(t, name) for t in types]
        keys: list[tuple[ResourceType, str]] = []
        for t in types:
            lengths = range(len(name) + 1) if prefix_lengths is None else prefix_lengths(t)
            names = {name, WILDCARD_RESOURCE, *(name[:n] for n in lengths if n <= len(name))}
            keys += [(t, n) for n in names]
        return keys

    @property
    def is_any(self) -> bool:
        """True when this filter matches every ACL (``AclBindingFilter.ANY`` or an equal filter)."""
        return (
            self.resource_type is ResourceType.ANY
            and self.pattern_type is PatternType.ANY
            and self.resource_name is None
            and self.principal is None
            and self.host is None
            and self.operation is AclOperation.ANY
            and self.permission_type is AclPermissionType.ANY
        )

    def __getstate__(self) -> tuple[object, ...]:
        return tuple(getattr(self, f) for f in _FIELDS)

    def __setstate__(self, state: tuple[object, ...]) -> None:
        for f, v in zip(_FIELDS, state, strict=True):
            object.__setattr__(self, f, v)


AclBindingFilter.ANY = AclBindingFilter()
