"""Security and quota records (metadata apiKeys 10, 11, 14, 18, 19, 22, 26).

Same conventions as ``_topics``. The ACL enums (resource type, pattern type, operation, permission)
are the int8 codes of Kafka's ``ResourceType``, ``PatternType``, ``AclOperation`` and
``AclPermissionType`` (``ksteward.authorizer`` has them as enums); SCRAM mechanisms are
1 SCRAM-SHA-256 and 2 SCRAM-SHA-512.
"""

import uuid
from dataclasses import dataclass, field
from typing import ClassVar

from kio.static.constants import EntityType
from kio.static.primitive import f64, i8, i16, i32, i64


@dataclass(frozen=True, slots=True, kw_only=True)
class DelegationTokenRecord:
    __type__: ClassVar = EntityType.data
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(10)
    owner: str = field(metadata={"kafka_type": "string"})
    requester: str = field(metadata={"kafka_type": "string"})
    renewers: tuple[str, ...] = field(metadata={"kafka_type": "string"}, default=())
    issue_timestamp: i64 = field(metadata={"kafka_type": "int64"})
    max_timestamp: i64 = field(metadata={"kafka_type": "int64"})
    expiration_timestamp: i64 = field(metadata={"kafka_type": "int64"})
    token_id: str = field(metadata={"kafka_type": "string"})


@dataclass(frozen=True, slots=True, kw_only=True)
class UserScramCredentialRecord:
    __type__: ClassVar = EntityType.data
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(11)
    name: str = field(metadata={"kafka_type": "string"})
    """The user name."""
    mechanism: i8 = field(metadata={"kafka_type": "int8"})
    salt: bytes = field(metadata={"kafka_type": "bytes"})
    stored_key: bytes = field(metadata={"kafka_type": "bytes"})
    server_key: bytes = field(metadata={"kafka_type": "bytes"})
    iterations: i32 = field(metadata={"kafka_type": "int32"})


@dataclass(frozen=True, slots=True, kw_only=True)
class EntityData:
    __type__: ClassVar = EntityType.nested
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True
    entity_type: str = field(metadata={"kafka_type": "string"})
    """"user", "client-id" or "ip"."""
    entity_name: str | None = field(metadata={"kafka_type": "string"})
    """The entity name, or None for the default entity."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ClientQuotaRecord:
    __type__: ClassVar = EntityType.data
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(14)
    entity: tuple[EntityData, ...]
    key: str = field(metadata={"kafka_type": "string"})
    value: f64 = field(metadata={"kafka_type": "float64"})
    """Ignored when ``remove`` is set."""
    remove: bool = field(metadata={"kafka_type": "bool"}, default=False)


@dataclass(frozen=True, slots=True, kw_only=True)
class AccessControlEntryRecord:
    __type__: ClassVar = EntityType.data
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(18)
    id: uuid.UUID | None = field(metadata={"kafka_type": "uuid"})
    resource_type: i8 = field(metadata={"kafka_type": "int8"})
    resource_name: str = field(metadata={"kafka_type": "string"})
    pattern_type: i8 = field(metadata={"kafka_type": "int8"})
    principal: str = field(metadata={"kafka_type": "string"})
    host: str = field(metadata={"kafka_type": "string"})
    operation: i8 = field(metadata={"kafka_type": "int8"})
    permission_type: i8 = field(metadata={"kafka_type": "int8"})


@dataclass(frozen=True, slots=True, kw_only=True)
class RemoveAccessControlEntryRecord:
    __type__: ClassVar = EntityType.data
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(19)
    id: uuid.UUID | None = field(metadata={"kafka_type": "uuid"})


@dataclass(frozen=True, slots=True, kw_only=True)
class RemoveUserScramCredentialRecord:
    __type__: ClassVar = EntityType.data
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(22)
    name: str = field(metadata={"kafka_type": "string"})
    mechanism: i8 = field(metadata={"kafka_type": "int8"})


@dataclass(frozen=True, slots=True, kw_only=True)
class RemoveDelegationTokenRecord:
    __type__: ClassVar = EntityType.data
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(26)
    token_id: str = field(metadata={"kafka_type": "string"})


SECURITY_RECORD_TYPES: tuple[type, ...] = (
    DelegationTokenRecord,
    UserScramCredentialRecord,
    ClientQuotaRecord,
    AccessControlEntryRecord,
    RemoveAccessControlEntryRecord,
    RemoveUserScramCredentialRecord,
    RemoveDelegationTokenRecord,
)
