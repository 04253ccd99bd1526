"""CreateAcls v4, ksteward's atomic ACL change with a precondition (``protocol.acl_transactions``).

Authorized as Kafka authorizes CreateAcls and DeleteAcls (``AclApis``): ALTER on the cluster, else every entry
fails; with no authorizer, SECURITY_DISABLED. A raw code 0 (UNKNOWN) in an enum field fails the parse, which
closes the connection, as for v3. An entry no binding or filter can hold (an ANY in a creation) is an entry
error, and with any entry error nothing is applied. A broker-only node forwards the request to the controller in
an Envelope, as every CreateAcls (docs/forwarding.md); this handler runs where the controller is.
"""

from __future__ import annotations

import asyncio
from typing import Any

from kio.schema.errors import ErrorCode

from ksteward.authorizer import CLUSTER_NAME, AclBinding, AclBindingFilter, InvalidAclError
from ksteward.broker.acls import (
    _binding,
    _check_codes,
    _check_filter_codes,
    _filter,
    _pattern_code,
    handle_create_acls,
)
from ksteward.broker.authz import CLUSTER_DENIED_MESSAGE, authorize
from ksteward.broker.context import Node, RequestContext
from ksteward.controller.acls import AclTransactionResult
from ksteward.controller.active import ACL_CHANGE_ON_THE_LOOP
from ksteward.controller.result import ApiError
from ksteward.protocol.acl_transactions import CreateAclsResponse
from ksteward.protocol.build import build


def _creation(creation: Any) -> AclBinding | ApiError:
    pattern = _pattern_code(creation, "resource_pattern_type")
    _check_codes("CreateAcls", creation.resource_type, pattern, creation.operation, creation.permission_type)
    try:
        return _binding(creation)
    except InvalidAclError as exc:
        return ApiError(ErrorCode.invalid_request, str(exc))


def _deletion(request_filter: Any) -> AclBindingFilter | ApiError:
    _check_filter_codes("CreateAcls", request_filter)
    try:
        return _filter(request_filter)
    except (InvalidAclError, ValueError) as exc:
        return ApiError(ErrorCode.invalid_request, str(exc))


def _entries(request: Any) -> tuple[list[AclBinding | ApiError], list[AclBindingFilter | ApiError]]:
    return [_creation(c) for c in request.creations], [_deletion(f) for f in request.deletions]


def _response(result: AclTransactionResult) -> CreateAclsResponse:
    def entries(errors: tuple[tuple[int, ApiError], ...]) -> list[dict[str, Any]]:
        return [{"index": i, "error_code": e.code, "error_message": e.message} for i, e in errors]

    values = {
        "throttle_time": 0,
        "error_code": result.error.code,
        "error_message": result.error.message,
        "created": result.created,
        "deleted": result.deleted,
        "acls_changed_at": result.changed_at,
        "creation_errors": entries(result.creation_errors),
        "deletion_errors": entries(result.deletion_errors),
    }
    response: CreateAclsResponse = build(CreateAclsResponse, values)
    return response


async def handle_acl_transaction(node: Node, ctx: RequestContext, request: Any) -> CreateAclsResponse:
    if node.authorizer is None:
        disabled = ApiError(ErrorCode.security_disabled, "No Authorizer is configured.")
        return _response(AclTransactionResult(disabled))
    if not authorize(node, ctx, "ALTER", "CLUSTER", CLUSTER_NAME):
        return _response(AclTransactionResult(ApiError(ErrorCode.cluster_authorization_failed, CLUSTER_DENIED_MESSAGE)))
    if len(request.creations) + len(request.deletions) > ACL_CHANGE_ON_THE_LOOP:
        creations, deletions = await asyncio.to_thread(_entries, request)  # seconds for 10^5: the loop goes on
    else:
        creations, deletions = _entries(request)
    result = await node.controller.replace_acls(
        creations,
        deletions,
        unchanged_since=int(request.acls_unchanged_since),
        validate_only=bool(request.validate_only),
    )
    return _response(result)


async def handle_create_acls_or_transaction(node: Node, ctx: RequestContext, request: Any) -> Any:
    """CreateAcls v1-v3 as Kafka serves them; v4, ksteward's atomic change."""
    if ctx.api_version >= 4:
        return await handle_acl_transaction(node, ctx, request)
    return await handle_create_acls(node, ctx, request)
