"""ApiVersions: answered before authentication, on every listener.

A request above the served versions gets KIP-511's answer: an ApiVersionsResponse in v0 format
with UNSUPPORTED_VERSION and the supported list, so the client can retry at a version we serve.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from kio.schema.errors import ErrorCode

from ksteward.broker.context import ApiTable, Node, RequestContext
from ksteward.controller.features import SUPPORTED_FEATURES
from ksteward.protocol.apis import ApiKey
from ksteward.protocol.build import build
from ksteward.protocol.codec import PreEncoded, answer_frame, encode_response_body, response_class

_CACHED_ANSWERS = 32  # per listener table: a few versions and errors of the current image

# Kafka's ApiVersionsRequest.isValid: client software name and version from v3 on.
_SOFTWARE = re.compile(r"^[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?$")


def api_versions_values(
    table: ApiTable, node: Node, error: ErrorCode = ErrorCode.none, api_version: int = 4
) -> dict[str, Any]:
    """The response values. Finalized features (KIP-584) are those at a level above 0, with the image's offset as
    their epoch (Kafka's ``FinalizedFeatures`` epoch is the image's highest offset). Below v4 a supported feature
    whose minimum is 0 is left out (KAFKA-17492: older clients cannot read it)."""
    image = node.image
    return {
        "error_code": error,
        "api_keys": [{"api_key": s.api_key, "min_version": s.min_version, "max_version": s.max_version} for s in table],
        "supported_features": [
            {"name": name, "min_version": lo, "max_version": hi}
            for name, (lo, hi) in SUPPORTED_FEATURES.items()
            if api_version >= 4 or lo != 0
        ],
        "finalized_features_epoch": max(image.offset, -1),
        "finalized_features": [
            {"name": name, "min_version_level": level, "max_version_level": level}
            for name, level in sorted(image.features.items())
            if level > 0
        ],
    }


def unsupported_version_response(table: ApiTable, node: Node) -> Any:
    """KIP-511: v0 format, UNSUPPORTED_VERSION, plus what we do serve."""
    return build(
        response_class(ApiKey.API_VERSIONS, 0), api_versions_values(table, node, ErrorCode.unsupported_version)
    )


async def handle_api_versions(node: Node, ctx: RequestContext, request: Any) -> PreEncoded:
    return api_versions_answer(node, ctx, request_error(ctx, request))


def request_error(ctx: RequestContext, request: Any) -> ErrorCode:
    """INVALID_REQUEST for a v3+ request whose client software name or version Kafka would refuse."""
    if ctx.api_version >= 3 and not (
        _SOFTWARE.match(request.client_software_name or "") and _SOFTWARE.match(request.client_software_version or "")
    ):
        return ErrorCode.invalid_request
    return ErrorCode.none


def api_versions_answer(
    node: Node, ctx: RequestContext, error: ErrorCode, api_ranges: Mapping[int, tuple[int, int]] | None = None
) -> PreEncoded:
    """The encoded answer: the listener's table's ranges, or ``api_ranges`` (a broker advertising the controller's
    ranges for the APIs it forwards).

    Every client asks at every connection, and encoding the answer costs more than serving a small Metadata
    request, so the body is kept on the listener's table: it depends only on the ranges, the version, the error
    and the image (its finalized features, and their epoch: the image's offset)."""
    ranges = None if api_ranges is None else tuple(sorted(api_ranges.items()))
    key = (ctx.api_version, error, node.image.offset, ranges)
    answers = ctx.api_table.answers
    body = answers.get(key)
    if body is None:
        if len(answers) >= _CACHED_ANSWERS:  # older images' answers: never asked for again
            answers.clear()
        values = api_versions_values(ctx.api_table, node, error, ctx.api_version)
        if ranges is not None:
            values["api_keys"] = [{"api_key": k, "min_version": lo, "max_version": hi} for k, (lo, hi) in ranges]
        cls = response_class(ApiKey.API_VERSIONS, ctx.api_version)
        body = answers[key] = encode_response_body(build(cls, values))
    return PreEncoded(answer_frame(ctx.correlation_id, body, flexible_header=False), (int(error),))
