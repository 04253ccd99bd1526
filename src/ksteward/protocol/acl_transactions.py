"""CreateAcls v4 and DescribeAcls v4: ksteward's atomic ACL change with a precondition, in kio's style.

Kafka's CreateAcls and DeleteAcls are two requests, so replacing an ACL is a deletion and a creation, and a
client authorizing in between is denied (Redpanda Console #1220, JulieOps PR #75). Its controller also caps
one request at ``MAX_RECORDS_PER_USER_OP`` (10,000) records (KAFKA-14996). These two versions, above Kafka's
highest (v3), close both gaps for ``ksteward apply`` (docs/acl-transactions.md):

- **DescribeAcls v4**: v3's request; v3's response plus ``metadata_offset``, the metadata offset of the image
  the answer was read from: the ACLs listed are exactly the ACLs at that offset.
- **CreateAcls v4**: creations and deletion filters together, and ``acls_unchanged_since``: apply only if no
  record has changed the ACLs after that offset (-1: no precondition). The controller writes every creation
  and deletion as ONE metadata batch, or nothing. ``validate_only`` checks everything and writes nothing. The
  response is compact, for 10^5-entry requests: counts, and an entry only for what failed.

ApiVersions advertises DescribeAcls and CreateAcls up to v4; real clients negotiate the highest version they
know (v3 or lower) and never see these, as with DeleteTopics v7 (``extensions``).

No ``from __future__ import annotations`` here: kio reads the field annotations as real types.
"""

from dataclasses import dataclass, field
from typing import Any, ClassVar

from kio.schema.describe_acls.v3.response import DescribeAclsResource
from kio.schema.errors import ErrorCode
from kio.schema.request_header.v2.header import RequestHeader
from kio.schema.response_header.v1.header import ResponseHeader
from kio.static.constants import EntityType
from kio.static.primitive import i8, i16, i32, i32Timedelta, i64

ACL_TRANSACTION_VERSION = 4
"""The CreateAcls and DescribeAcls version of these extensions."""


@dataclass(frozen=True, slots=True, kw_only=True)
class AclCreation:
    __type__: ClassVar = EntityType.nested
    __version__: ClassVar[i16] = i16(4)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(30)
    __header_schema__: ClassVar[type[RequestHeader]] = RequestHeader
    resource_type: i8 = field(metadata={"kafka_type": "int8"})
    resource_name: str = field(metadata={"kafka_type": "string"})
    resource_pattern_type: i8 = field(metadata={"kafka_type": "int8"}, default=i8(3))
    principal: str = field(metadata={"kafka_type": "string"})
    host: str = field(metadata={"kafka_type": "string"})
    operation: i8 = field(metadata={"kafka_type": "int8"})
    permission_type: i8 = field(metadata={"kafka_type": "int8"})


@dataclass(frozen=True, slots=True, kw_only=True)
class AclDeletionFilter:
    """DeleteAcls v3's filter: every ACL it matches (in the ACLs as they were before the request) is removed."""

    __type__: ClassVar = EntityType.nested
    __version__: ClassVar[i16] = i16(4)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(30)
    __header_schema__: ClassVar[type[RequestHeader]] = RequestHeader
    resource_type_filter: i8 = field(metadata={"kafka_type": "int8"})
    resource_name_filter: str | None = field(metadata={"kafka_type": "string"})
    pattern_type_filter: i8 = field(metadata={"kafka_type": "int8"}, default=i8(3))
    principal_filter: str | None = field(metadata={"kafka_type": "string"})
    host_filter: str | None = field(metadata={"kafka_type": "string"})
    operation: i8 = field(metadata={"kafka_type": "int8"})
    permission_type: i8 = field(metadata={"kafka_type": "int8"})


@dataclass(frozen=True, slots=True, kw_only=True)
class CreateAclsRequest:
    __type__: ClassVar = EntityType.request
    __version__: ClassVar[i16] = i16(4)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(30)
    __header_schema__: ClassVar[type[RequestHeader]] = RequestHeader
    creations: tuple[AclCreation, ...]
    deletions: tuple[AclDeletionFilter, ...] = ()
    acls_unchanged_since: i64 = field(metadata={"kafka_type": "int64"}, default=i64(-1))
    """Apply only if no record after this metadata offset changed the ACLs; -1 for no precondition."""
    validate_only: bool = field(metadata={"kafka_type": "bool"}, default=False)


@dataclass(frozen=True, slots=True, kw_only=True)
class AclEntryError:
    """One creation or deletion filter that failed, by its index in the request."""

    __type__: ClassVar = EntityType.nested
    __version__: ClassVar[i16] = i16(4)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(30)
    __header_schema__: ClassVar[type[ResponseHeader]] = ResponseHeader
    index: i32 = field(metadata={"kafka_type": "int32"})
    error_code: ErrorCode = field(metadata={"kafka_type": "error_code"})
    error_message: str | None = field(metadata={"kafka_type": "string"}, default=None)


@dataclass(frozen=True, slots=True, kw_only=True)
class CreateAclsResponse:
    __type__: ClassVar = EntityType.response
    __version__: ClassVar[i16] = i16(4)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(30)
    __header_schema__: ClassVar[type[ResponseHeader]] = ResponseHeader
    throttle_time: i32Timedelta = field(metadata={"kafka_type": "timedelta_i32"})
    error_code: ErrorCode = field(metadata={"kafka_type": "error_code"})
    """0 when the whole change was applied (or, with validate_only, would be); otherwise nothing was written."""
    error_message: str | None = field(metadata={"kafka_type": "string"}, default=None)
    created: i32 = field(metadata={"kafka_type": "int32"})
    """ACLs added (a creation already present adds nothing)."""
    deleted: i32 = field(metadata={"kafka_type": "int32"})
    """ACLs removed (an ACL both matched by a filter and re-created is kept, and counts in neither)."""
    acls_changed_at: i64 = field(metadata={"kafka_type": "int64"})
    """The offset of the last ACL change the controller holds after this request: this change's batch when
    one was written, the offending change when the precondition failed."""
    creation_errors: tuple[AclEntryError, ...] = ()
    deletion_errors: tuple[AclEntryError, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class DescribeAclsRequest:
    """DescribeAcls v3's request, unchanged."""

    __type__: ClassVar = EntityType.request
    __version__: ClassVar[i16] = i16(4)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(29)
    __header_schema__: ClassVar[type[RequestHeader]] = RequestHeader
    resource_type_filter: i8 = field(metadata={"kafka_type": "int8"})
    resource_name_filter: str | None = field(metadata={"kafka_type": "string"})
    pattern_type_filter: i8 = field(metadata={"kafka_type": "int8"}, default=i8(3))
    principal_filter: str | None = field(metadata={"kafka_type": "string"})
    host_filter: str | None = field(metadata={"kafka_type": "string"})
    operation: i8 = field(metadata={"kafka_type": "int8"})
    permission_type: i8 = field(metadata={"kafka_type": "int8"})


@dataclass(frozen=True, slots=True, kw_only=True)
class DescribeAclsResponse:
    """DescribeAcls v3's response plus the offset it was read at. The resources are v3's entities, which encode
    the same at v4 (a nested entity's bytes do not depend on its version)."""

    __type__: ClassVar = EntityType.response
    __version__: ClassVar[i16] = i16(4)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(29)
    __header_schema__: ClassVar[type[ResponseHeader]] = ResponseHeader
    throttle_time: i32Timedelta = field(metadata={"kafka_type": "timedelta_i32"})
    error_code: ErrorCode = field(metadata={"kafka_type": "error_code"})
    error_message: str | None = field(metadata={"kafka_type": "string"})
    resources: tuple[DescribeAclsResource, ...]
    metadata_offset: i64 = field(metadata={"kafka_type": "int64"}, default=i64(-1))
    """The ACLs listed are those of this node's metadata image at this offset."""


REQUESTS: dict[tuple[int, int], Any] = {(30, 4): CreateAclsRequest, (29, 4): DescribeAclsRequest}
RESPONSES: dict[tuple[int, int], Any] = {(30, 4): CreateAclsResponse, (29, 4): DescribeAclsResponse}
