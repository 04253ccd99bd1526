"""DescribeAcls (29), CreateAcls (30) and DeleteAcls (31), KIP-140 on the StandardAuthorizer.

Describe answers from this node's authorizer. Create and delete run on the controller, which writes
AccessControlEntryRecord / RemoveAccessControlEntryRecord and replies after the batch is durable.
Describe needs DESCRIBE on the cluster, create and delete need ALTER; with no authorizer the answer
is SECURITY_DISABLED (authorizer spec §3.2, §3.5, §3.6).
"""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from ksteward.authorizer import CLUSTER_NAME
from ksteward.broker.authz import authorize
from ksteward.broker.context import Node, RequestContext
from ksteward.controller.acls import MalformedAclRequest, filter_of
from ksteward.protocol.build import build
from ksteward.protocol.codec import PreEncoded, response_class
from ksteward.protocol.errors import InvalidRequestError
from ksteward.protocol.fast_describe_acls import AclEntry, encode_describe_acls_response

DESCRIBE_ACLS, CREATE_ACLS, DELETE_ACLS = 29, 30, 31
# Kafka answers with its ClusterAuthorizationException text; clients such as librdkafka drop a
# top-level DescribeAcls error whose message is null.
_NOT_AUTHORIZED = "Cluster authorization failed."


async def handle_describe_acls(node: Node, ctx: RequestContext, request: Any) -> Any:
    cls = response_class(DESCRIBE_ACLS, ctx.api_version)
    if any(
        int(code) == 0
        for code in (
            request.resource_type_filter,
            request.pattern_type_filter,
            request.operation,
            request.permission_type,
        )
    ):
        raise InvalidRequestError("DescribeAcls filter carries code 0 (UNKNOWN)")  # Kafka fails the parse
    auth = node.authorizer
    if auth is None:
        values = {
            "error_code": ErrorCode.security_disabled,
            "error_message": "No Authorizer is configured on the broker",
            "resources": [],
        }
        return build(cls, values)
    if not authorize(node, ctx, "DESCRIBE", "CLUSTER", CLUSTER_NAME):
        denied = {"error_code": ErrorCode.cluster_authorization_failed, "error_message": _NOT_AUTHORIZED}
        return build(cls, {**denied, "resources": []})
    groups: dict[tuple[int, str, int], list[AclEntry]] = {}
    for b in auth.acls(filter_of(request)):
        key = (int(b.resource_type), b.resource_name, int(b.pattern_type))
        entry = (b.principal, b.host, int(b.operation), int(b.permission_type))
        group = groups.get(key)
        if group is None:
            groups[key] = [entry]
        else:
            group.append(entry)
    resources = [(rt, name, pt, entries) for (rt, name, pt), entries in groups.items()]
    # Large describes are encoded directly: kio's writer costs ~20 µs an ACL (see fast_describe_acls).
    frame = encode_describe_acls_response(ctx.api_version, ctx.correlation_id, 0, None, resources)
    return PreEncoded(frame)


async def handle_create_acls(node: Node, ctx: RequestContext, request: Any) -> Any:
    cls = response_class(CREATE_ACLS, ctx.api_version)
    creations = request.creations
    if node.authorizer is None:
        error = {"error_code": ErrorCode.security_disabled, "error_message": "No Authorizer is configured."}
        return build(cls, {"results": [error for _ in creations]})
    if not authorize(node, ctx, "ALTER", "CLUSTER", CLUSTER_NAME):
        error = {"error_code": ErrorCode.cluster_authorization_failed, "error_message": None}
        return build(cls, {"results": [error for _ in creations]})
    try:
        results = await node.controller.create_acls(creations, ctx.api_version)
    except MalformedAclRequest as exc:
        raise InvalidRequestError(f"CreateAcls: {exc}") from None
    return build(cls, {"results": results})


async def handle_delete_acls(node: Node, ctx: RequestContext, request: Any) -> Any:
    cls = response_class(DELETE_ACLS, ctx.api_version)
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
    try:
        results = await node.controller.delete_acls(filters)
    except MalformedAclRequest as exc:
        raise InvalidRequestError(f"DeleteAcls: {exc}") from None
    return build(cls, {"filter_results": results})
