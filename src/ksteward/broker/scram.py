"""DescribeUserScramCredentials (50) and AlterUserScramCredentials (51).

Describe answers from the committed image with mechanism and iterations only; salts and keys never
leave the server. Alter runs on the controller, which commits the records before the reply.
Both need CLUSTER DESCRIBE / CLUSTER ALTER once an authorizer is configured.
"""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from ksteward.authorizer import CLUSTER_NAME
from ksteward.broker.authz import authorize
from ksteward.broker.context import Node, RequestContext
from ksteward.protocol.apis import ApiKey
from ksteward.protocol.build import build
from ksteward.protocol.codec import response_class

_NOT_FOUND = "Attempt to describe a user credential that does not exist"


async def handle_describe_user_scram_credentials(node: Node, ctx: RequestContext, request: Any) -> Any:
    cls = response_class(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, ctx.api_version)
    if not authorize(node, ctx, "DESCRIBE", "CLUSTER", CLUSTER_NAME):
        return build(cls, {"error_code": ErrorCode.cluster_authorization_failed, "error_message": None, "results": []})
    image = node.image
    by_user: dict[str, list[dict[str, int]]] = {}
    for (mechanism, user), record in sorted(image.scram.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        by_user.setdefault(user, []).append({"mechanism": mechanism, "iterations": record.iterations})
    results: list[dict[str, Any]] = []
    if not request.users:  # null or empty: every user that has a credential
        results = [
            {"user": user, "error_code": ErrorCode.none, "error_message": None, "credential_infos": infos}
            for user, infos in by_user.items()
        ]
    else:
        names = [u.name for u in request.users]
        duplicates = {n for n in names if names.count(n) > 1}
        for name in dict.fromkeys(names):
            if name in duplicates:
                code, message = (
                    ErrorCode.duplicate_resource,
                    "Cannot describe SCRAM credentials for the same user twice in a single request",
                )
            elif name not in by_user:
                code, message = (
                    ErrorCode.resource_not_found,
                    "Attempt to describe a user credential that does not exist",
                )
            else:
                code, message = ErrorCode.none, None
            results.append(
                {"user": name, "error_code": code, "error_message": message, "credential_infos": by_user.get(name, [])}
            )
    values = {"error_code": ErrorCode.none, "error_message": None, "results": results}
    return build(response_class(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, ctx.api_version), values)


async def handle_alter_user_scram_credentials(node: Node, ctx: RequestContext, request: Any) -> Any:
    cls = response_class(ApiKey.ALTER_USER_SCRAM_CREDENTIALS, ctx.api_version)
    if not authorize(node, ctx, "ALTER", "CLUSTER", CLUSTER_NAME):
        users = [*(d.name for d in request.deletions), *(u.name for u in request.upsertions)]
        results = [
            {"user": u, "error_code": ErrorCode.cluster_authorization_failed, "error_message": None}
            for u in dict.fromkeys(users)
        ]
        return build(cls, {"results": results})
    outcomes = await node.controller.alter_user_scram_credentials(request)
    results = [{"user": r.user, "error_code": r.error.code, "error_message": r.error.message} for r in outcomes]
    return build(cls, {"results": results})
