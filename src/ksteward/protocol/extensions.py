"""Wire versions ksteward serves beyond Kafka's schemas, written in kio's style.

**DeleteTopics v7** (KIP-934, proposed, not in Apache Kafka): v6 plus ``validate_only``. The server
runs every check and the delete-topic policy and deletes nothing. ApiVersions advertises DeleteTopics
up to v7; real clients negotiate down to the highest version they know (v6 or lower) and never see it.
Its response is v6's, unchanged.

**CreateAcls v4 and DescribeAcls v4**: an atomic ACL change with a precondition, in ``acl_transactions``.

No ``from __future__ import annotations`` here: kio reads the field annotations as real types.
"""

import uuid
from dataclasses import dataclass, field
from typing import Any, ClassVar

from kio.schema.errors import ErrorCode
from kio.schema.request_header.v2.header import RequestHeader
from kio.schema.response_header.v1.header import ResponseHeader
from kio.static.constants import EntityType
from kio.static.primitive import i16, i32Timedelta

from ksteward.protocol import acl_transactions
from ksteward.protocol.token_responses import RESPONSES as TOKEN_RESPONSES


@dataclass(frozen=True, slots=True, kw_only=True)
class DeleteTopicState:
    __type__: ClassVar = EntityType.nested
    __version__: ClassVar[i16] = i16(7)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(20)
    __header_schema__: ClassVar[type[RequestHeader]] = RequestHeader
    name: str | None = field(metadata={"kafka_type": "string"}, default=None)
    topic_id: uuid.UUID | None = field(metadata={"kafka_type": "uuid"})


@dataclass(frozen=True, slots=True, kw_only=True)
class DeleteTopicsRequest:
    __type__: ClassVar = EntityType.request
    __version__: ClassVar[i16] = i16(7)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(20)
    __header_schema__: ClassVar[type[RequestHeader]] = RequestHeader
    topics: tuple[DeleteTopicState, ...]
    timeout: i32Timedelta = field(metadata={"kafka_type": "timedelta_i32"})
    validate_only: bool = field(metadata={"kafka_type": "bool"}, default=False)
    """If true, check that the topics can be deleted, running the delete-topic policy, but delete nothing."""


@dataclass(frozen=True, slots=True, kw_only=True)
class DeletableTopicResult:
    __type__: ClassVar = EntityType.nested
    __version__: ClassVar[i16] = i16(7)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(20)
    __header_schema__: ClassVar[type[ResponseHeader]] = ResponseHeader
    name: str | None = field(metadata={"kafka_type": "string"})
    topic_id: uuid.UUID | None = field(metadata={"kafka_type": "uuid"})
    error_code: ErrorCode = field(metadata={"kafka_type": "error_code"})
    error_message: str | None = field(metadata={"kafka_type": "string"}, default=None)


@dataclass(frozen=True, slots=True, kw_only=True)
class DeleteTopicsResponse:
    __type__: ClassVar = EntityType.response
    __version__: ClassVar[i16] = i16(7)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(20)
    __header_schema__: ClassVar[type[ResponseHeader]] = ResponseHeader
    throttle_time: i32Timedelta = field(metadata={"kafka_type": "timedelta_i32"})
    responses: tuple[DeletableTopicResult, ...]


REQUESTS: dict[tuple[int, int], Any] = {(20, 7): DeleteTopicsRequest, **acl_transactions.REQUESTS}
RESPONSES: dict[tuple[int, int], Any] = {
    (20, 7): DeleteTopicsResponse,
    **TOKEN_RESPONSES,
    **acl_transactions.RESPONSES,
}
