"""AlterConfigs (33) and IncrementalAlterConfigs (44) around forwarding, sans-IO: the request a broker-only node
sends on after its own preprocess, and the answer it gives its client (Kafka's ``KafkaApis``
``handleAlterConfigsRequest`` / ``handleIncrementalAlterConfigsRequest`` with ``ConfigAdminManager``'s
``copyWithoutPreprocessed`` and ``reassemble*Response``; docs/forwarding.md, "AlterConfigs and
IncrementalAlterConfigs on a broker").

The preprocess itself is ``ksteward.broker.configs.preprocess_alter``, the same function a combined node runs. Its
result is one entry per resource of the client's request: an ApiError is that resource's final answer, None sends
it on. Then::

    body = remaining_request(request, preprocessed)        # None: nothing to forward, answer at once
    payload = forwarded_payload(api_key, version, correlation_id, client_id, body)   # the client's header
    ...                                                    # the Envelope round trip (server/)
    response = reassemble(api_key, version, request, preprocessed, forwarded_response)
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any, Final

from kio.schema.errors import ErrorCode

from ksteward.protocol.api_error import ApiError
from ksteward.protocol.apis import ApiKey
from ksteward.protocol.build import build
from ksteward.protocol.codec import encode_request, response_class

__all__ = ["CONFIG_ALTER_API_KEYS", "forwarded_payload", "reassemble", "remaining_request"]

#: The two forwardable APIs a broker rewrites before forwarding instead of sending the client's bytes.
CONFIG_ALTER_API_KEYS: Final = frozenset({ApiKey.ALTER_CONFIGS, ApiKey.INCREMENTAL_ALTER_CONFIGS})

# Kafka's ``new ApiError(UNKNOWN_SERVER_ERROR)`` carries the error's default message.
_MISSING: Final = ApiError(
    ErrorCode.unknown_server_error, "The server experienced an unexpected error when processing the request."
)


def remaining_request(request: Any, preprocessed: Sequence[ApiError | None]) -> Any | None:
    """The request body to forward: the resources the preprocess left (None), in their order, with the same
    ``validate_only``; None when the preprocess answered every resource (``copyWithoutPreprocessed``)."""
    kept = tuple(r for r, outcome in zip(request.resources, preprocessed, strict=True) if outcome is None)
    if not kept:
        return None
    return dataclasses.replace(request, resources=kept)


def forwarded_payload(api_key: int, api_version: int, correlation_id: int, client_id: str | None, body: Any) -> bytes:
    """The new request's header and body for the Envelope: the same api version, under the client's own header
    (its correlation id and client id), as Kafka's ``serializeWithHeader(originalRequest.header)``."""
    return encode_request(api_key, api_version, correlation_id, client_id, body)


def reassemble(
    api_key: int, api_version: int, request: Any, preprocessed: Sequence[ApiError | None], forwarded: Any | None
) -> Any:
    """The client's response: one entry per resource of its ORIGINAL request, in its order. A resource the
    preprocess answered keeps that answer; any other takes the controller's entry for its (name, type) from
    ``forwarded`` (the controller's response, or the broker's own error response for the forwarded body);
    a resource the controller did not answer is UNKNOWN_SERVER_ERROR. ``forwarded`` is None when nothing was
    forwarded."""
    by_resource: dict[tuple[int, str], ApiError] = {}
    for entry in forwarded.responses if forwarded is not None else ():
        code = ErrorCode(entry.error_code)
        by_resource[(int(entry.resource_type), entry.resource_name)] = ApiError(code, entry.error_message)
    responses = []
    for resource, outcome in zip(request.resources, preprocessed, strict=True):
        key = (int(resource.resource_type), resource.resource_name)
        answer = outcome if outcome is not None else by_resource.get(key, _MISSING)
        responses.append(
            {
                "error_code": answer.code,
                "error_message": answer.message,
                "resource_type": int(resource.resource_type),
                "resource_name": resource.resource_name,
            }
        )
    return build(response_class(api_key, api_version), {"responses": responses})
