"""Authorize one action of a request, as Kafka's ``AuthHelper`` does, and audit the decision.

Without an authorizer (``authorizer.class.name`` empty) every action is allowed. With one, each
decision may be written to the audit log as a CloudEvents line, with the rule that decided it and
the metadata offset of the ACL image that was consulted.
"""

from __future__ import annotations

from collections.abc import Callable

from ksteward.authorizer import SUPPORTED_OPERATIONS, AclOperation, AuditEvent, AuthorizationResult, ResourceType
from ksteward.broker.context import Node, RequestContext
from ksteward.protocol.apis import api_name

#: ``Errors.CLUSTER_AUTHORIZATION_FAILED.message()``: the error message Kafka's error responses carry with it.
CLUSTER_DENIED_MESSAGE = "Cluster authorization failed."


def authorize(
    node: Node,
    ctx: RequestContext,
    operation: str | AclOperation,
    resource_type: str | ResourceType,
    resource_name: str,
    *,
    log_if_denied: bool = True,
    log_if_allowed: bool = True,
) -> bool:
    auth = node.authorizer
    if auth is None:
        return True
    audit = node.audit
    if audit is None or not (log_if_allowed or log_if_denied):
        # Nothing will be audited: the plain decision is ~3x cheaper than finding its reason.
        allowed = (
            auth.authorize(
                principal=ctx.principal,
                host=ctx.client_host,
                operation=operation,
                resource_type=resource_type,
                resource_name=resource_name,
            )
            is AuthorizationResult.ALLOWED
        )
        _count(ctx, allowed)
        return allowed
    decision = auth.authorize_with_reason(
        principal=ctx.principal,
        host=ctx.client_host,
        operation=operation,
        resource_type=resource_type,
        resource_name=resource_name,
    )
    allowed = decision.result is AuthorizationResult.ALLOWED
    _count(ctx, allowed)
    if (allowed and log_if_allowed) or (not allowed and log_if_denied):
        audit.write(
            AuditEvent(
                decision,
                principal=ctx.principal,
                host=ctx.client_host,
                operation=operation,
                resource_type=resource_type,
                resource_name=resource_name,
                method_name=f"kafka.{api_name(ctx.api_key)}",
            )
        )
    return allowed


def _count(ctx: RequestContext, allowed: bool) -> None:
    counts = ctx.authorizations
    if counts is not None:
        if allowed:
            counts.allowed += 1
        else:
            counts.denied += 1


def authorized_operations(node: Node, ctx: RequestContext, resource_type: ResourceType, resource_name: str) -> int:
    """Kafka's authorized-operations bitfield: bit ``1 << op`` for each supported op the caller may do.

    Without an authorizer every supported operation is allowed, as Kafka's ``AuthHelper`` reports it.
    """
    auth = node.authorizer
    if auth is None:
        bits = 0
        for op in SUPPORTED_OPERATIONS[resource_type]:
            bits |= 1 << int(op)
        return bits
    return auth.authorized_operations(ctx.principal, ctx.client_host, resource_type, resource_name)


def listing_filter(
    node: Node, ctx: RequestContext, operation: AclOperation, resource_type: ResourceType
) -> Callable[[str], bool]:
    """``authorize(node, ctx, operation, resource_type, name, log_if_denied=False)`` for each name of a listing
    (Metadata of every topic asks for thousands): the same decisions and counts, with the arguments bound once.
    An audited node goes through :func:`authorize` for each name, which writes the allowed ones."""
    auth = node.authorizer
    if auth is None:
        return lambda name: True
    if node.audit is not None:
        return lambda name: authorize(node, ctx, operation, resource_type, name, log_if_denied=False)
    decide, principal, host = auth.authorize, ctx.principal, ctx.client_host
    allowed_result = AuthorizationResult.ALLOWED

    def allowed(name: str) -> bool:
        result = decide(principal, host, operation, resource_type, name) is allowed_result
        _count(ctx, result)
        return result

    return allowed
