"""The broker's rewrite of AlterConfigs / IncrementalAlterConfigs around forwarding, as plain calls: only the
resources the preprocess left are forwarded, in a new body under the client's header, and the client's answer
has one entry per original resource, in its order (Kafka's ``ConfigAdminManager.copyWithoutPreprocessed`` and
``reassemble*Response``)."""

from __future__ import annotations

from typing import Any

import pytest
from kio.schema.errors import ErrorCode

from ksteward.broker.config_forwarding import CONFIG_ALTER_API_KEYS, forwarded_payload, reassemble, remaining_request
from ksteward.broker.forwarding import FORWARDABLE_API_KEYS, ClientRequest, ForwardingManager, Outcome
from ksteward.protocol.api_error import NO_ERROR, ApiError
from ksteward.protocol.apis import ApiKey
from ksteward.protocol.build import build
from ksteward.protocol.codec import Request, decode_request, request_class, response_class

TOPIC, BROKER, BROKER_LOGGER = 2, 4, 8
IAC, AC = ApiKey.INCREMENTAL_ALTER_CONFIGS, ApiKey.ALTER_CONFIGS
DUPLICATE = ApiError(ErrorCode.invalid_request, "Each resource must appear at most once.")


def resource(api_key: int, rtype: int, name: str, key: str = "retention.ms", value: str = "1") -> dict[str, Any]:
    config: dict[str, Any] = {"name": key, "value": value}
    if api_key == IAC:
        config["config_operation"] = 0
    return {"resource_type": rtype, "resource_name": name, "configs": [config]}


def request(api_key: int, version: int, *resources: dict[str, Any], validate_only: bool = False) -> Any:
    return build(request_class(api_key, version), {"resources": list(resources), "validate_only": validate_only})


def controller_response(api_key: int, version: int, *entries: tuple[int, str, ErrorCode, str | None]) -> Any:
    responses = [
        {"resource_type": rtype, "resource_name": name, "error_code": code, "error_message": message}
        for rtype, name, code, message in entries
    ]
    return build(response_class(api_key, version), {"responses": responses})


def answers(response: Any) -> list[tuple[int, str, int, str | None]]:
    return [(int(r.resource_type), r.resource_name, int(r.error_code), r.error_message) for r in response.responses]


MIXED = (resource(IAC, TOPIC, "a"), resource(IAC, TOPIC, "dup"), resource(IAC, TOPIC, "dup"),
         resource(IAC, BROKER_LOGGER, "2", "root", "DEBUG"), resource(IAC, TOPIC, "b"))  # fmt: skip
MIXED_PREPROCESSED: list[ApiError | None] = [None, DUPLICATE, DUPLICATE, NO_ERROR, None]


def test_the_two_config_alters_are_the_forwardable_apis_that_are_rewritten() -> None:
    assert {ApiKey.ALTER_CONFIGS, ApiKey.INCREMENTAL_ALTER_CONFIGS} == CONFIG_ALTER_API_KEYS
    assert CONFIG_ALTER_API_KEYS <= FORWARDABLE_API_KEYS


def test_only_the_resources_the_preprocess_left_are_forwarded_in_their_order() -> None:
    original = request(IAC, 1, *MIXED, validate_only=True)
    remaining = remaining_request(original, MIXED_PREPROCESSED)
    assert [r.resource_name for r in remaining.resources] == ["a", "b"]
    assert remaining.validate_only is True
    assert remaining.resources[0] == original.resources[0]  # the resource itself is unchanged


def test_nothing_is_forwarded_when_the_preprocess_answered_everything() -> None:
    original = request(AC, 2, resource(AC, TOPIC, "x"), resource(AC, TOPIC, "x"))
    assert remaining_request(original, [DUPLICATE, DUPLICATE]) is None


@pytest.mark.parametrize(("api_key", "version"), [(AC, 0), (AC, 1), (AC, 2), (IAC, 0), (IAC, 1)])
def test_the_forwarded_request_keeps_the_clients_header_and_version(api_key: int, version: int) -> None:
    body = request(api_key, version, resource(api_key, TOPIC, "orders"))
    payload = forwarded_payload(api_key, version, 4711, "the-client", body)
    decoded = decode_request(payload, {api_key: (version, version)})
    assert isinstance(decoded, Request)
    assert (decoded.api_key, decoded.api_version, decoded.correlation_id) == (api_key, version, 4711)
    assert decoded.client_id == "the-client"
    assert decoded.body == body


@pytest.mark.parametrize("api_key", [AC, IAC])
def test_the_answer_has_one_entry_per_original_resource_in_request_order(api_key: int) -> None:
    original = request(api_key, 1, *(resource(api_key, r["resource_type"], r["resource_name"]) for r in MIXED))
    # The controller answers in its own order (Kafka's ControllerApis: a map's order), matched by (name, type).
    forwarded = controller_response(
        api_key, 1, (TOPIC, "b", ErrorCode.topic_authorization_failed, None), (TOPIC, "a", ErrorCode.none, None)
    )
    response = reassemble(api_key, 1, original, MIXED_PREPROCESSED, forwarded)
    assert type(response) is response_class(api_key, 1)
    assert answers(response) == [
        (TOPIC, "a", 0, None),
        (TOPIC, "dup", ErrorCode.invalid_request, "Each resource must appear at most once."),
        (TOPIC, "dup", ErrorCode.invalid_request, "Each resource must appear at most once."),
        (BROKER_LOGGER, "2", 0, None),
        (TOPIC, "b", ErrorCode.topic_authorization_failed, None),
    ]


def test_a_resource_the_controller_left_out_is_unknown_server_error() -> None:
    original = request(IAC, 1, resource(IAC, TOPIC, "a"), resource(IAC, BROKER, "2"))
    forwarded = controller_response(IAC, 1, (TOPIC, "a", ErrorCode.none, None), (TOPIC, "2", ErrorCode.none, None))
    assert answers(reassemble(IAC, 1, original, [None, None], forwarded)) == [
        (TOPIC, "a", 0, None),
        (BROKER, "2", ErrorCode.unknown_server_error,
         "The server experienced an unexpected error when processing the request."),
    ]  # fmt: skip


def test_answered_at_once_when_nothing_was_forwarded() -> None:
    original = request(AC, 0, resource(AC, BROKER, "x"))
    refused = ApiError(ErrorCode.invalid_request, "Node id must be an integer, but it is: x")
    assert answers(reassemble(AC, 0, original, [refused], None)) == [
        (BROKER, "x", ErrorCode.invalid_request, "Node id must be an integer, but it is: x")
    ]


def test_a_forwarding_failure_reaches_only_the_forwarded_resources() -> None:
    """The broker's own error response for the forwarded body (here REQUEST_TIMED_OUT after the retry timeout)
    is reassembled like a controller's: the resources answered by the preprocess keep their answers."""
    original = request(IAC, 1, *MIXED)
    remaining = remaining_request(original, MIXED_PREPROCESSED)
    payload = forwarded_payload(IAC, 1, 9, "c", remaining)
    manager = ForwardingManager(retry_timeout_s=1.0)
    manager.submit(ClientRequest(payload, IAC, 1, 9, remaining, "User:alice", "127.0.0.1"), now=0.0)
    manager.expire(now=5.0)
    (completion,) = manager.completions()
    assert completion.outcome is Outcome.ERROR
    codes = [int(r.error_code) for r in reassemble(IAC, 1, original, MIXED_PREPROCESSED, completion.response).responses]
    timed_out = ErrorCode.request_timed_out
    assert codes == [timed_out, ErrorCode.invalid_request, ErrorCode.invalid_request, 0, timed_out]
