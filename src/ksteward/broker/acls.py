"""DescribeAcls (29), CreateAcls (30) and DeleteAcls (31), KIP-140 on the StandardAuthorizer.

This is the edge where ACLs stop being wire entities: each handler turns the request into
``AclBinding`` / ``AclBindingFilter`` values, doing the parse-level checks of Kafka's
``CreateAclsRequest``, ``DeleteAclsRequest`` and ``DescribeAclsRequest``, and turns typed results back into
the response. Describe answers from this node's authorizer. Create and delete run on the controller,
which writes AccessControlEntryRecord / RemoveAccessControlEntryRecord and replies after the batch is
durable. Describe needs DESCRIBE on the cluster, create and delete need ALTER; with no authorizer the
answer is SECURITY_DISABLED (Kafka's ``AclApis``).

Parse-level checks, as Kafka's request classes do them:

- A raw code of 0 (UNKNOWN) in an enum field fails the parse of the whole request, which closes the
  connection (Kafka's ``validate`` in the request constructor throws, and ``SocketServer`` closes).
  For Create and Delete this check runs after the cluster authorization, where ksteward always ran it.
- A creation that no ``AclBinding`` can hold (ANY, or a MATCH pattern) fails the whole CreateAcls with
  UNKNOWN_SERVER_ERROR for every creation, as Kafka's ``CreateAclsRequest.aclBinding`` throwing inside
  the handler does.
- Requests before v1 have no pattern type: their ACLs and filters are LITERAL (KIP-290).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from kio.schema.errors import ErrorCode

from ksteward.authorizer import CLUSTER_NAME, AclBinding, AclBindingFilter, InvalidAclError, PatternType
from ksteward.broker.authz import CLUSTER_DENIED_MESSAGE, authorize
from ksteward.broker.context import Node, RequestContext
from ksteward.controller.acls import AclDeletionResult
from ksteward.controller.result import ApiError
from ksteward.protocol.apis import ApiKey
from ksteward.protocol.build import build
from ksteward.protocol.codec import PreEncoded, encode_response, response_class
from ksteward.protocol.errors import InvalidRequestError
from ksteward.protocol.fast_describe_acls import AclEntry, encode_describe_acls_response

# Kafka answers with its ClusterAuthorizationException text; clients such as librdkafka drop a
# top-level DescribeAcls error whose message is null.
_UNKNOWN_CODE = "an ACL field carries code 0 (UNKNOWN)"


# --- wire -> values -------------------------------------------------------------------------------


def _pattern_code(entity: Any, field_name: str) -> int:
    """The entity's pattern type code; LITERAL for a v0 entity, which has no such field (KIP-290)."""
    return int(getattr(entity, field_name, PatternType.LITERAL))


def _check_codes(api: str, *codes: int) -> None:
    if any(int(code) == 0 for code in codes):
        raise InvalidRequestError(f"{api}: {_UNKNOWN_CODE}")


def _filter(request_filter: Any) -> AclBindingFilter:
    """A DescribeAcls request or a DeleteAcls filter entry as a filter (unknown codes become UNKNOWN)."""
    return AclBindingFilter(
        resource_type=int(request_filter.resource_type_filter),
        resource_name=request_filter.resource_name_filter,
        pattern_type=_pattern_code(request_filter, "pattern_type_filter"),
        principal=request_filter.principal_filter,
        host=request_filter.host_filter,
        operation=int(request_filter.operation),
        permission_type=int(request_filter.permission_type),
    )


def _check_filter_codes(api: str, request_filter: Any) -> None:
    _check_codes(
        api,
        request_filter.resource_type_filter,
        _pattern_code(request_filter, "pattern_type_filter"),
        request_filter.operation,
        request_filter.permission_type,
    )


def _binding(creation: Any) -> AclBinding:
    return AclBinding(
        resource_type=int(creation.resource_type),
        resource_name=creation.resource_name,
        pattern_type=_pattern_code(creation, "resource_pattern_type"),
        principal=creation.principal,
        host=creation.host,
        operation=int(creation.operation),
        permission_type=int(creation.permission_type),
    )


def _bindings(creations: Sequence[Any]) -> list[AclBinding] | None:
    """The creations as bindings; None if one cannot be a binding (the whole request fails then)."""
    for c in creations:
        pattern = _pattern_code(c, "resource_pattern_type")
        _check_codes("CreateAcls", c.resource_type, pattern, c.operation, c.permission_type)
    try:
        return [_binding(c) for c in creations]
    except InvalidAclError:
        return None


# --- values -> wire -------------------------------------------------------------------------------


def _error(error: ApiError) -> dict[str, Any]:
    return {"error_code": error.code, "error_message": error.message}


def _matching_acl(acl: AclBinding) -> dict[str, Any]:
    return {
        "error_code": ErrorCode.none,
        "error_message": None,
        "resource_type": int(acl.resource_type),
        "resource_name": acl.resource_name,
        "pattern_type": int(acl.pattern_type),
        "principal": acl.principal,
        "host": acl.host,
        "operation": int(acl.operation),
        "permission_type": int(acl.permission_type),
    }


def _filter_result(result: AclDeletionResult) -> dict[str, Any]:
    return {**_error(result.error), "matching_acls": [_matching_acl(acl) for acl in result.matching]}


# --- handlers -------------------------------------------------------------------------------------


async def handle_describe_acls(node: Node, ctx: RequestContext, request: Any) -> Any:
    cls = response_class(ApiKey.DESCRIBE_ACLS, ctx.api_version)
    _check_filter_codes("DescribeAcls", request)
    auth = node.authorizer
    if auth is None:
        values = {
            "error_code": ErrorCode.security_disabled,
            "error_message": "No Authorizer is configured on the broker",
            "resources": [],
        }
        return build(cls, values)
    if not authorize(node, ctx, "DESCRIBE", "CLUSTER", CLUSTER_NAME):
        denied = {"error_code": ErrorCode.cluster_authorization_failed, "error_message": CLUSTER_DENIED_MESSAGE}
        return build(cls, {**denied, "resources": []})
    acls = list(auth.acls(_filter(request)))
    # v4 (ksteward's, protocol.acl_transactions) names the image the ACLs were read from: the authorizer follows
    # the image in the same step of the event loop, so the two agree.
    offset = node.image.offset
    if len(acls) < ACLS_ENCODED_ON_THE_LOOP:
        frame = _describe_acls_frame(ctx.api_version, ctx.correlation_id, acls, offset)
    else:
        # A worker thread: the loop keeps its turn every switch interval (5 ms) instead of waiting for the
        # whole answer. The bindings are immutable values, so nothing can change under the encoder.
        frame = await asyncio.to_thread(_describe_acls_frame, ctx.api_version, ctx.correlation_id, acls, offset)
    return PreEncoded(frame, error_codes=(0,))


#: Above this many ACLs a DescribeAcls answer is grouped and encoded in a worker thread (about 5 ms of work).
ACLS_ENCODED_ON_THE_LOOP = 2_000


def _describe_acls_frame(version: int, correlation_id: int, acls: list[AclBinding], offset: int) -> bytes:
    groups: dict[tuple[int, str, int], list[AclEntry]] = {}
    for b in acls:
        key = (int(b.resource_type), b.resource_name, int(b.pattern_type))
        entry = (b.principal, b.host, int(b.operation), int(b.permission_type))
        group = groups.get(key)
        if group is None:
            groups[key] = [entry]
        else:
            group.append(entry)
    resources = [(rt, name, pt, entries) for (rt, name, pt), entries in groups.items()]
    # Encoded directly: kio's writer costs ~20 µs an ACL (see fast_describe_acls).
    return encode_describe_acls_response(version, correlation_id, 0, None, resources, offset)


async def handle_create_acls(node: Node, ctx: RequestContext, request: Any) -> Any:
    cls = response_class(ApiKey.CREATE_ACLS, ctx.api_version)
    creations = request.creations
    if node.authorizer is None:
        error = {"error_code": ErrorCode.security_disabled, "error_message": "No Authorizer is configured."}
        return build(cls, {"results": [error for _ in creations]})
    if not authorize(node, ctx, "ALTER", "CLUSTER", CLUSTER_NAME):
        error = {"error_code": ErrorCode.cluster_authorization_failed, "error_message": None}
        return build(cls, {"results": [error for _ in creations]})
    bindings = _bindings(creations)
    if bindings is None:
        error = _error(ApiError(ErrorCode.unknown_server_error))
        return build(cls, {"results": [error for _ in creations]})
    results = await node.controller.create_acls(bindings)
    return build(cls, {"results": [_error(result) for result in results]})


async def handle_delete_acls(node: Node, ctx: RequestContext, request: Any) -> Any:
    cls = response_class(ApiKey.DELETE_ACLS, ctx.api_version)
    filters = request.filters
    if node.authorizer is None:
        error = {
            "error_code": ErrorCode.security_disabled,
            "error_message": "No Authorizer is configured.",
            "matching_acls": [],
        }
        return build(cls, {"filter_results": [error for _ in filters]})
    if not authorize(node, ctx, "ALTER", "CLUSTER", CLUSTER_NAME):
        error = {"error_code": ErrorCode.cluster_authorization_failed, "error_message": None, "matching_acls": []}
        return build(cls, {"filter_results": [error for _ in filters]})
    for f in filters:
        _check_filter_codes("DeleteAcls", f)
    results = await node.controller.delete_acls([_filter(f) for f in filters])
    matched = sum(len(result.matching) for result in results)
    if matched < ACLS_ENCODED_ON_THE_LOOP:
        return build(cls, {"filter_results": [_filter_result(result) for result in results]})
    # A large deletion's answer (kio costs ~30 µs an ACL) is built and encoded in a worker thread, so the loop
    # keeps its turn meanwhile; the results are immutable values.
    codes = tuple(int(result.error.code) for result in results)
    return PreEncoded(await asyncio.to_thread(_delete_acls_frame, cls, ctx, results), codes)


def _delete_acls_frame(cls: Any, ctx: RequestContext, results: list[AclDeletionResult]) -> bytes:
    response = build(cls, {"filter_results": [_filter_result(result) for result in results]})
    return encode_response(ApiKey.DELETE_ACLS, ctx.api_version, ctx.correlation_id, response)
