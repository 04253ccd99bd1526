"""CreateDelegationToken (38), RenewDelegationToken (39), ExpireDelegationToken (40) and
DescribeDelegationToken (41): Kafka's ``KafkaApis`` (broker listeners) and ``ControllerApis`` (the controller).

A broker checks a create, renew or expire before it forwards it (Kafka's ``KafkaApis.handleCreateTokenRequest``
and siblings, :data:`BROKER_PRECHECKS`); the controller checks it again and runs it
(``ControllerApis.handleCreateDelegationTokenRequest``). Describe is answered by a broker from its image, as in
Kafka; Kafka's controller listener advertises it but has no handler for it, so ksteward's does not advertise it.

No token request is allowed (DELEGATION_TOKEN_REQUEST_NOT_ALLOWED) from a delegation-token login, nor, unless
forwarded by a broker, on a PLAINTEXT listener or from an SSL client without a certificate (``allowTokenRequests``).
The rules and error codes are in docs/delegation-tokens.md.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from kio.schema.errors import ErrorCode

from ksteward.authorizer import AclOperation, ResourceType
from ksteward.broker.authz import authorize
from ksteward.broker.context import Node, RequestContext
from ksteward.controller.delegation_tokens import (
    USER_TYPE,
    CreatedToken,
    DelegationTokenSettings,
    TokenExpiry,
    describable,
)
from ksteward.protocol.apis import ApiKey
from ksteward.protocol.build import build
from ksteward.protocol.codec import response_class

_ANONYMOUS = "User:ANONYMOUS"


def allow_token_requests(ctx: RequestContext) -> bool:
    """Kafka's ``allowTokenRequests``: never from a token login; a request a broker forwarded may have come
    over PLAINTEXT (the broker checked it), a direct one may not, nor from an SSL client without a certificate."""
    if ctx.token_authenticated:
        return False
    if ctx.forwarded:
        return True
    protocol = ctx.security_protocol
    return not (protocol == "PLAINTEXT" or (protocol == "SSL" and ctx.principal == _ANONYMOUS))


def _millis(value: Any) -> int:
    return value if isinstance(value, int) else round(value.total_seconds() * 1000)


def _split(principal: str) -> tuple[str, str]:
    principal_type, _, name = principal.partition(":")
    return principal_type, name


def _principal_fields(principal: str) -> dict[str, str]:
    principal_type, name = _split(principal)
    return {"principal_type": principal_type, "principal_name": name}


def _owner(ctx: RequestContext, request: Any) -> str | None:
    """The token's owner: the request's (v3), or the caller; None for a name without a type."""
    name = getattr(request, "owner_principal_name", None)
    if not name:
        return ctx.principal
    principal_type = getattr(request, "owner_principal_type", None)
    return f"{principal_type}:{name}" if principal_type else None


# --- CreateDelegationToken ---------------------------------------------------------------------------------


def _created(ctx: RequestContext, created: CreatedToken) -> Any:
    owner_type, owner_name = _split(created.owner)
    requester_type, requester_name = _split(created.requester)
    values = {
        "error_code": created.error, "principal_type": owner_type, "principal_name": owner_name,
        "token_requester_principal_type": requester_type, "token_requester_principal_name": requester_name,
        "issue_timestamp": created.issue_timestamp_ms, "expiry_timestamp": created.expiry_timestamp_ms,
        "max_timestamp": created.max_timestamp_ms, "token_id": created.token_id, "hmac": created.hmac,
    }  # fmt: skip
    return build(response_class(ApiKey.CREATE_DELEGATION_TOKEN, ctx.api_version), values)


def _create_refusal(node: Node, ctx: RequestContext, request: Any, *, on_broker: bool) -> Any | None:
    """The answer when the API's own checks refuse the create; None when it may go to the controller."""
    owner = _owner(ctx, request)
    if owner is None:
        return _created(ctx, CreatedToken(ErrorCode.invalid_principal_type, "", ctx.principal))
    if not allow_token_requests(ctx):
        return _created(ctx, CreatedToken(ErrorCode.delegation_token_request_not_allowed, owner, ctx.principal))
    # Anyone may create a token for themselves; for another owner, CREATE_TOKENS on that USER (KIP-373).
    if owner != ctx.principal and not authorize(node, ctx, AclOperation.CREATE_TOKENS, ResourceType.USER, owner):
        return _created(ctx, CreatedToken(ErrorCode.delegation_token_authorization_failed, owner, ctx.principal))
    if on_broker and any(r.principal_type != USER_TYPE for r in request.renewers):
        return _created(ctx, CreatedToken(ErrorCode.invalid_principal_type, owner, ctx.principal))
    return None


def create_precheck(node: Node, ctx: RequestContext, request: Any) -> Any | None:
    """A broker's checks before it forwards a create (``KafkaApis.handleCreateTokenRequest``)."""
    return _create_refusal(node, ctx, request, on_broker=True)


async def handle_create_delegation_token(node: Node, ctx: RequestContext, request: Any) -> Any:
    """A broker listener of a node that is also the controller: the broker's checks, then the controller's."""
    refusal = create_precheck(node, ctx, request)
    if refusal is not None:
        return refusal
    return await handle_controller_create_delegation_token(node, ctx, request)


async def handle_controller_create_delegation_token(node: Node, ctx: RequestContext, request: Any) -> Any:
    refusal = _create_refusal(node, ctx, request, on_broker=False)
    if refusal is not None:
        return refusal
    return _created(ctx, await node.controller.create_delegation_token(ctx.principal, request))


# --- RenewDelegationToken and ExpireDelegationToken --------------------------------------------------------


def _expiry(ctx: RequestContext, answer: TokenExpiry) -> Any:
    # Timestamps as int64 milliseconds (protocol.token_responses): -1 on a refusal, as Kafka writes it.
    values = {"error_code": answer.error, "expiry_timestamp": answer.expiry_timestamp_ms}
    return build(response_class(ctx.api_key, ctx.api_version), values)


def expiry_precheck(node: Node, ctx: RequestContext, request: Any) -> Any | None:
    """A broker's check before it forwards a renew or an expire (``KafkaApis.handleRenewTokenRequest``)."""
    if not allow_token_requests(ctx):
        return _expiry(ctx, TokenExpiry(ErrorCode.delegation_token_request_not_allowed))
    return None


async def handle_controller_renew_delegation_token(node: Node, ctx: RequestContext, request: Any) -> Any:
    refusal = expiry_precheck(node, ctx, request)
    if refusal is not None:
        return refusal
    period = _millis(request.renew_period)
    return _expiry(ctx, await node.controller.renew_delegation_token(ctx.principal, bytes(request.hmac), period))


async def handle_controller_expire_delegation_token(node: Node, ctx: RequestContext, request: Any) -> Any:
    refusal = expiry_precheck(node, ctx, request)
    if refusal is not None:
        return refusal
    period = _millis(request.expiry_time_period)
    return _expiry(ctx, await node.controller.expire_delegation_token(ctx.principal, bytes(request.hmac), period))


# --- DescribeDelegationToken -------------------------------------------------------------------------------


def _described(ctx: RequestContext, error: ErrorCode, tokens: list[dict[str, Any]]) -> Any:
    return build(
        response_class(ApiKey.DESCRIBE_DELEGATION_TOKEN, ctx.api_version), {"error_code": error, "tokens": tokens}
    )


async def handle_describe_delegation_token(node: Node, ctx: RequestContext, request: Any) -> Any:
    """Kafka's ``KafkaApis.handleDescribeTokensRequest``, from this broker's image. The HMAC is returned, as
    Kafka returns it, to whoever may describe the token."""
    if not allow_token_requests(ctx):
        return _described(ctx, ErrorCode.delegation_token_request_not_allowed, [])
    settings = DelegationTokenSettings.from_config(node.config.static)
    if not settings.enabled or settings.secret_key is None:
        return _described(ctx, ErrorCode.delegation_token_auth_disabled, [])
    if request.owners is not None and not request.owners:
        return _described(ctx, ErrorCode.none, [])
    owners = None if request.owners is None else [f"{o.principal_type}:{o.principal_name}" for o in request.owners]
    image = node.image
    tokens = describable(
        [image.delegation_tokens[tid] for tid in sorted(image.delegation_tokens)],
        ctx.principal,
        owners,
        lambda token_id: authorize(node, ctx, AclOperation.DESCRIBE, ResourceType.DELEGATION_TOKEN, token_id),
        lambda owner: authorize(node, ctx, AclOperation.DESCRIBE_TOKENS, ResourceType.USER, owner),
    )
    described = []
    for token in tokens:
        owner_type, owner_name = _split(token.owner)
        requester_type, requester_name = _split(token.requester)
        described.append({
            "principal_type": owner_type, "principal_name": owner_name,
            "token_requester_principal_type": requester_type, "token_requester_principal_name": requester_name,
            "issue_timestamp": token.issue_timestamp, "expiry_timestamp": token.expiration_timestamp,
            "max_timestamp": token.max_timestamp, "token_id": token.token_id,
            "hmac": b"",  # a secret is returned once, at creation (Kafka returns it here: a ksteward difference)
            "renewers": [_principal_fields(r) for r in token.renewers],
        })  # fmt: skip
    return _described(ctx, ErrorCode.none, described)


Precheck = Callable[[Node, RequestContext, Any], Any | None]

BROKER_PRECHECKS: Mapping[int, Precheck] = {
    ApiKey.CREATE_DELEGATION_TOKEN: create_precheck,
    ApiKey.RENEW_DELEGATION_TOKEN: expiry_precheck,
    ApiKey.EXPIRE_DELEGATION_TOKEN: expiry_precheck,
}
"""What a broker checks itself before it forwards a request (Kafka's ``KafkaApis`` handlers that refuse before
``forwardToController``); each returns the refusal, or None to forward."""
