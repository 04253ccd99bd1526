"""Kafka's ACL enumerations with their wire codes (``docs/authorizer.md`` §1).

Each enum is an :class:`enum.IntEnum` whose values are the int8 codes of the wire protocol and of the
metadata records, so a member can be written into a record as is and a record's code read back with
``from_code``::

    >>> ResourceType.from_code(2), ResourceType.from_code(99)
    (<ResourceType.TOPIC: 2>, <ResourceType.UNKNOWN: 0>)
    >>> AclOperation.from_string("describe_configs")
    <AclOperation.DESCRIBE_CONFIGS: 10>
    >>> PatternType.from_string("prefixed")        # case-sensitive, as in Kafka
    <PatternType.UNKNOWN: 0>
    >>> AclOperation.DESCRIBE_CONFIGS.display_name, AclOperation.from_display_name("IdempotentWrite")
    ('DescribeConfigs', <AclOperation.IDEMPOTENT_WRITE: 12>)

Parsing rules (§1.5):

- ``from_code``: any code not in the table gives UNKNOWN (all four enums).
- ``from_string``: ResourceType, AclOperation and AclPermissionType upper-case their input; PatternType is
  case-sensitive. A name that is not recognised gives UNKNOWN.
- ``from_display_name``: Kafka's Pascal-case display names (``Topic``, ``TransactionalId``,
  ``DescribeConfigs``, ``Allow``) or their upper-case form (``TRANSACTIONALID``), the lookup Kafka uses for
  audit logs and the legacy ZooKeeper JSON. The underscored ``TRANSACTIONAL_ID`` is *not* accepted there.

:func:`parse_enum` is the stricter conversion used by :class:`~ksteward.authorizer.AclBinding`, the filters
and ``authorize``: it accepts a member, an int code, a ``from_string`` name or a display name, and raises
``InvalidAclError`` (a ``ValueError``) for a string it does not recognise instead of silently answering UNKNOWN.

``SUPPORTED_OPERATIONS`` is §1.6: the operations that count in the authorized-operations bitfields of
Metadata and DescribeCluster. It does not validate ACLs: CreateAcls accepts any operation on any type.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from types import MappingProxyType
from typing import TypeVar

from ._errors import InvalidAclError

__all__ = [
    "ALLOW_IMPLICATIONS",
    "SUPPORTED_OPERATIONS",
    "AclOperation",
    "AclPermissionType",
    "PatternType",
    "ResourceType",
    "allow_grants",
    "deny_denies",
    "parse_enum",
]


def _pascal(name: str) -> str:
    """Kafka's ``SecurityUtils.toPascalCase``: ``DESCRIBE_CONFIGS`` -> ``DescribeConfigs``."""
    return "".join(part[:1].upper() + part[1:].lower() for part in name.split("_"))


_DISPLAY_NAMES: dict[tuple[type, int], str] = {}


class _KafkaEnum(enum.IntEnum):
    """Shared behaviour of the four ACL enums."""

    @classmethod
    def from_code(cls: type[_E], code: int) -> _E:
        """The member with wire code ``code``; UNKNOWN for any code not in the table."""
        try:
            return cls(code)
        except ValueError:
            return cls["UNKNOWN"]

    @classmethod
    def from_string(cls: type[_E], name: str) -> _E:
        """Kafka's ``fromString``: the upper-cased name (exact name for PatternType); UNKNOWN if not recognised."""
        member = cls.__members__.get(name if cls is PatternType else name.upper())
        return member if member is not None else cls["UNKNOWN"]

    @classmethod
    def from_display_name(cls: type[_E], name: str) -> _E:
        """Kafka's display-name lookup: ``TransactionalId`` or ``TRANSACTIONALID``; UNKNOWN otherwise."""
        for member in cls:
            pascal = _pascal(member.name)
            if name == pascal or name == pascal.upper():
                return member
        return cls["UNKNOWN"]

    @property
    def display_name(self) -> str:
        """The Pascal-case name Kafka prints in audit logs: ``Topic``, ``DescribeConfigs``, ``Allow``."""
        key = (type(self), self._value_)  # not the member: members of different enums compare equal as ints
        name = _DISPLAY_NAMES.get(key)
        if name is None:
            name = _DISPLAY_NAMES[key] = _pascal(self.name)
        return name

    @property
    def is_unknown(self) -> bool:
        return self.name == "UNKNOWN"


_E = TypeVar("_E", bound=_KafkaEnum)


class ResourceType(_KafkaEnum):
    """§1.1. ANY is filter-only; CLUSTER's only legal name is ``kafka-cluster``."""

    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7


class PatternType(_KafkaEnum):
    """§1.2. ANY and MATCH are filter-only; LITERAL and PREFIXED are the "specific" pattern types."""

    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4

    @property
    def is_specific(self) -> bool:
        return self is PatternType.LITERAL or self is PatternType.PREFIXED


class AclOperation(_KafkaEnum):
    """§1.3. ANY is filter-only. At most 30 operations fit the 32-bit authorized-operations field."""

    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14


class AclPermissionType(_KafkaEnum):
    """§1.4. ANY is filter-only."""

    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


_Op = AclOperation
SUPPORTED_OPERATIONS: Mapping[ResourceType, tuple[AclOperation, ...]] = MappingProxyType(
    {
        ResourceType.TOPIC: (
            _Op.READ,
            _Op.WRITE,
            _Op.CREATE,
            _Op.DESCRIBE,
            _Op.DELETE,
            _Op.ALTER,
            _Op.DESCRIBE_CONFIGS,
            _Op.ALTER_CONFIGS,
        ),
        ResourceType.GROUP: (_Op.READ, _Op.DESCRIBE, _Op.DELETE, _Op.DESCRIBE_CONFIGS, _Op.ALTER_CONFIGS),
        ResourceType.CLUSTER: (
            _Op.CREATE,
            _Op.CLUSTER_ACTION,
            _Op.DESCRIBE_CONFIGS,
            _Op.ALTER_CONFIGS,
            _Op.IDEMPOTENT_WRITE,
            _Op.ALTER,
            _Op.DESCRIBE,
        ),
        ResourceType.TRANSACTIONAL_ID: (_Op.DESCRIBE, _Op.WRITE),
        ResourceType.DELEGATION_TOKEN: (_Op.DESCRIBE,),
        ResourceType.USER: (_Op.CREATE_TOKENS, _Op.DESCRIBE_TOKENS),
    }
)
"""§1.6: the operations meaningful per resource type (authorized-operations bitfields only)."""


ALLOW_IMPLICATIONS: Mapping[AclOperation, frozenset[AclOperation]] = MappingProxyType(
    {
        _Op.DESCRIBE: frozenset({_Op.READ, _Op.WRITE, _Op.DELETE, _Op.ALTER}),
        _Op.DESCRIBE_CONFIGS: frozenset({_Op.ALTER_CONFIGS}),
    }
)
"""Requested operation -> the other operations whose ALLOW also grants it (Kafka's ``StandardAuthorizerData``
``IMPLIES_DESCRIBE`` and ``IMPLIES_DESCRIBE_CONFIGS``). Only ALLOW implies: a DENY denies its own operation
(and ALL denies every one). This is the one copy; the index's masks and the pipeline are built from it."""


def allow_grants(acl_operation: AclOperation, requested: AclOperation) -> bool:
    """An ALLOW ACL of ``acl_operation`` grants ``requested``: the same operation, ALL, or an implication."""
    return (
        acl_operation == AclOperation.ALL
        or acl_operation == requested
        or acl_operation in ALLOW_IMPLICATIONS.get(requested, ())
    )


def deny_denies(acl_operation: AclOperation, requested: AclOperation) -> bool:
    """A DENY ACL of ``acl_operation`` denies ``requested``: the same operation or ALL, never an implication."""
    return acl_operation == AclOperation.ALL or acl_operation == requested


def _lookup_table(cls: type[_KafkaEnum]) -> dict[object, _KafkaEnum]:
    table: dict[object, _KafkaEnum] = {}
    for member in cls:
        table[member.name] = member
        table[int(member)] = member  # also finds the member itself: IntEnum hashes and compares as its int
        if cls is not PatternType:  # PatternType names are exact (Kafka has no display-name lookup for them)
            pascal = _pascal(member.name)
            table.setdefault(pascal, member)
            table.setdefault(pascal.upper(), member)
    return table


_TABLES: dict[type[_KafkaEnum], dict[object, _KafkaEnum]] = {
    cls: _lookup_table(cls) for cls in (ResourceType, PatternType, AclOperation, AclPermissionType)
}


def parse_enum(cls: type[_E], value: object) -> _E:
    """``value`` (a member, an int code, a name or a display name) as a member of ``cls``.

    Names follow ``from_string`` (case-insensitive except for PatternType) or ``from_display_name``.
    Unknown int codes give UNKNOWN, as ``from_code`` does; an unrecognised string raises ``InvalidAclError``.
    """
    if type(value) is cls:
        return value
    table = _TABLES[cls]
    if isinstance(value, bool):
        raise InvalidAclError(f"{value!r} is not a {cls.__name__}")
    try:
        member = table.get(value)
    except TypeError:  # unhashable
        member = None
    if member is None and isinstance(value, str) and cls is not PatternType:
        member = table.get(value.upper())
    if member is not None:
        return member  # type: ignore[return-value]
    if isinstance(value, int):
        return cls.from_code(value)
    names = ", ".join(m.name for m in cls)
    raise InvalidAclError(f"{value!r} is not a {cls.__name__} (one of {names})")
