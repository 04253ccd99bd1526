"""DescribeClientQuotas (48) and AlterClientQuotas (49).

Describe answers from this node's committed image with Kafka's filter semantics
(``ClientQuotasImage.describe``): each component matches one entity type EXACT (0, that name),
DEFAULT (1, the default entity) or SPECIFIED (2, any name, the default included, as Kafka's
``containsKey`` does); ``strict`` also excludes entities with other types. A malformed filter fails
the whole request: INVALID_REQUEST, or UNSUPPORTED_VERSION for an unknown entity type.

Alter runs on the controller (``controller/quotas.py``), which writes ClientQuotaRecords and replies
once they are durable. Describe needs DESCRIBE_CONFIGS on the cluster, alter ALTER_CONFIGS; a denial
fails the whole request with CLUSTER_AUTHORIZATION_FAILED, as Kafka's ``KafkaApis`` / ``ControllerApis`` do.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kio.schema.errors import ErrorCode

from ksteward.authorizer import CLUSTER_NAME, AclOperation, ResourceType
from ksteward.broker.authz import CLUSTER_DENIED_MESSAGE, authorize
from ksteward.broker.context import Node, RequestContext
from ksteward.controller.quotas import CLIENT_ID, IP, USER, QuotaAlteration
from ksteward.metadata.image import QuotaEntity
from ksteward.protocol.apis import ApiKey
from ksteward.protocol.build import build
from ksteward.protocol.codec import response_class

MATCH_EXACT, MATCH_DEFAULT, MATCH_SPECIFIED = 0, 1, 2


class QuotaFilterError(Exception):
    """A filter Kafka refuses: the whole DescribeClientQuotas request fails with ``code``."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True, slots=True)
class FilterComponent:
    entity_type: str
    match_type: int
    match: str | None = None


def _invalid(message: str) -> QuotaFilterError:
    return QuotaFilterError(ErrorCode.invalid_request, message)


def _parse(components: Sequence[FilterComponent]) -> tuple[dict[str, str | None], set[str]]:
    exact: dict[str, str | None] = {}  # type -> name, None for the default entity
    specified: set[str] = set()
    for c in components:
        if not c.entity_type:
            raise _invalid("Invalid empty entity type.")
        if c.entity_type in exact or c.entity_type in specified:
            raise _invalid(f"Entity type {c.entity_type} cannot appear more than once in the filter.")
        if c.entity_type not in (IP, USER, CLIENT_ID):
            raise QuotaFilterError(ErrorCode.unsupported_version, f"Unsupported entity type {c.entity_type}")
        if c.match_type == MATCH_EXACT:
            if c.match is None:
                raise _invalid("Request specified MATCH_TYPE_EXACT, but set match string to null.")
            exact[c.entity_type] = c.match
        elif c.match_type == MATCH_DEFAULT:
            if c.match is not None:
                raise _invalid("Request specified MATCH_TYPE_DEFAULT, but also specified a match string.")
            exact[c.entity_type] = None
        elif c.match_type == MATCH_SPECIFIED:
            if c.match is not None:
                raise _invalid("Request specified MATCH_TYPE_SPECIFIED, but also specified a match string.")
            specified.add(c.entity_type)
        else:
            raise _invalid(f"Unknown match type {c.match_type}")
    types = exact.keys() | specified
    if IP in types and (USER in types or CLIENT_ID in types):
        raise _invalid(
            "Invalid entity filter component combination. IP filter component should not be used with "
            "user or clientId filter component."
        )
    return exact, specified


def matching_quotas(
    quotas: Mapping[QuotaEntity, Mapping[str, float]], components: Sequence[FilterComponent], strict: bool
) -> list[tuple[QuotaEntity, Mapping[str, float]]]:
    """The entities a DescribeClientQuotas filter selects, sorted; raises :class:`QuotaFilterError`."""
    exact, specified = _parse(components)
    size = len(exact) + len(specified)
    found = []
    for entity, values in quotas.items():
        names = dict(entity)
        if strict and len(names) != size:
            continue
        if any(t not in names or names[t] != name for t, name in exact.items()):
            continue
        if any(t not in names for t in specified):
            continue
        found.append((entity, values))
    found.sort(key=lambda item: tuple((t, n is not None, n or "") for t, n in item[0]))
    return found


async def handle_describe_client_quotas(node: Node, ctx: RequestContext, request: Any) -> Any:
    cls = response_class(ApiKey.DESCRIBE_CLIENT_QUOTAS, ctx.api_version)
    if not authorize(node, ctx, AclOperation.DESCRIBE_CONFIGS, ResourceType.CLUSTER, CLUSTER_NAME):
        denied = {"error_code": ErrorCode.cluster_authorization_failed, "error_message": CLUSTER_DENIED_MESSAGE}
        return build(cls, {**denied, "entries": None})
    components = [FilterComponent(c.entity_type, int(c.match_type), c.match) for c in request.components]
    try:
        found = matching_quotas(node.image.client_quotas, components, bool(request.strict))
    except QuotaFilterError as exc:
        return build(cls, {"error_code": exc.code, "error_message": str(exc), "entries": None})
    entries = [
        {
            "entity": [{"entity_type": t, "entity_name": n} for t, n in entity],
            "values": [{"key": key, "value": values[key]} for key in sorted(values)],
        }
        for entity, values in found
    ]
    return build(cls, {"error_code": ErrorCode.none, "error_message": None, "entries": entries})


async def handle_alter_client_quotas(node: Node, ctx: RequestContext, request: Any) -> Any:
    cls = response_class(ApiKey.ALTER_CLIENT_QUOTAS, ctx.api_version)
    alterations = [QuotaAlteration.from_kio(entry) for entry in request.entries]
    if not authorize(node, ctx, AclOperation.ALTER_CONFIGS, ResourceType.CLUSTER, CLUSTER_NAME):
        # Kafka's getErrorResponse: every entry as sent, with the code's default message.
        denied = {"error_code": ErrorCode.cluster_authorization_failed, "error_message": CLUSTER_DENIED_MESSAGE}
        return build(cls, {"entries": [{**denied, "entity": _entity(a.entity)} for a in alterations]})
    results = await node.controller.alter_client_quotas(alterations, validate_only=bool(request.validate_only))
    entries = [
        {"error_code": r.error.code, "error_message": r.error.message, "entity": _entity(r.entity)} for r in results
    ]
    return build(cls, {"entries": entries})


def _entity(pairs: Sequence[tuple[str, str | None]]) -> list[dict[str, str | None]]:
    return [{"entity_type": t, "entity_name": n} for t, n in pairs]
