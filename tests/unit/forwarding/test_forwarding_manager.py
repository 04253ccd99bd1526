"""The broker's forwarding queue with plain calls and a fake clock: FIFO, one envelope in flight, retries at
the front, the 60 s retry timeout, Kafka's error mapping, and no request sent again once answered."""

from __future__ import annotations

from typing import Any

import pytest
from forwarding_support import client_request, response_data, result_codes
from kio.schema.envelope.v0 import EnvelopeResponse
from kio.schema.errors import ErrorCode

from ksteward.broker.forwarding import (
    RETRY_TIMEOUT_S,
    Completion,
    ForwardingManager,
    OutboundEnvelope,
    Outcome,
    client_address_bytes,
)
from ksteward.protocol.principal import KafkaPrincipal, deserialize_principal


def ok(correlation_id: int) -> EnvelopeResponse:
    return EnvelopeResponse(response_data=response_data(correlation_id), error_code=ErrorCode.none)


def envelope_error(code: ErrorCode) -> EnvelopeResponse:
    return EnvelopeResponse(response_data=None, error_code=code)


def send(manager: ForwardingManager, now: float = 0.0) -> OutboundEnvelope:
    outbound = manager.next_envelope(now)
    assert outbound is not None
    return outbound


def codes(completion: Completion) -> list[int]:
    return result_codes(completion.response)


# --- the envelope ------------------------------------------------------------------------------------


def test_the_envelope_carries_the_request_bytes_the_principal_and_the_address() -> None:
    manager = ForwardingManager()
    request = client_request(host="10.0.0.1")
    manager.submit(request, 0.0)
    envelope = send(manager).envelope
    assert envelope.request_data == request.payload
    assert deserialize_principal(envelope.request_principal or b"") == KafkaPrincipal("User", "alice")
    assert envelope.client_host_address == bytes([10, 0, 0, 1])


def test_client_addresses_are_4_or_16_bytes() -> None:
    assert client_address_bytes("127.0.0.1") == b"\x7f\x00\x00\x01"
    assert client_address_bytes("0:0:0:0:0:0:0:1") == b"\x00" * 15 + b"\x01"
    with pytest.raises(ValueError):
        client_address_bytes("unknown")


# --- order and flight --------------------------------------------------------------------------------


def test_one_in_flight_in_fifo_order() -> None:
    manager = ForwardingManager()
    ids = [manager.submit(client_request(correlation_id=c), float(c)) for c in (1, 2, 3)]
    first = send(manager, 3.0)
    assert first.request_id == ids[0]
    assert manager.next_envelope(3.0) is None  # nothing more while one is in flight
    assert manager.queued == 3
    for expected, correlation_id in zip(ids, (1, 2, 3), strict=True):
        outbound = first if expected == ids[0] else send(manager, 4.0)
        assert outbound.request_id == expected
        assert manager.on_response(outbound.attempt, ok(correlation_id)) is False
        (done,) = manager.completions()
        assert done.request_id == expected and done.outcome is Outcome.RESPONSE
    assert manager.queued == 0 and manager.next_envelope(5.0) is None


def test_a_success_passes_the_controllers_bytes_through() -> None:
    manager = ForwardingManager()
    manager.submit(client_request(correlation_id=7), 0.0)
    outbound = send(manager)
    manager.on_response(outbound.attempt, ok(7))
    (done,) = manager.completions()
    assert done.response_data == response_data(7)
    assert done.frame() == len(response_data(7)).to_bytes(4, "big") + response_data(7)
    assert codes(done) == [0]


# --- retries -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("how", ["not controller", "disconnect"])
def test_retries_go_to_the_front_of_the_queue(how: str) -> None:
    manager = ForwardingManager()
    first = manager.submit(client_request(correlation_id=1), 0.0)
    second = manager.submit(client_request(correlation_id=2), 0.0)
    outbound = send(manager)
    if how == "not controller":
        assert manager.on_response(outbound.attempt, envelope_error(ErrorCode.not_controller)) is True
    else:
        manager.on_disconnect(outbound.attempt)
    assert manager.completions() == []  # the client sees nothing of it
    again = send(manager, 1.0)
    assert again.request_id == first and again.attempt != outbound.attempt
    assert again.envelope == outbound.envelope
    manager.on_response(again.attempt, ok(1))
    assert send(manager, 1.0).request_id == second


def test_a_retried_request_times_out_after_60_s_from_its_submission() -> None:
    manager = ForwardingManager()
    manager.submit(client_request(), 0.0)
    for now in (1.0, 30.0, RETRY_TIMEOUT_S - 0.001):
        manager.on_disconnect(send(manager, now).attempt)
    assert manager.completions() == []
    assert manager.next_deadline() == RETRY_TIMEOUT_S
    assert manager.next_envelope(RETRY_TIMEOUT_S) is None
    (done,) = manager.completions()
    assert done.outcome is Outcome.ERROR and codes(done) == [int(ErrorCode.request_timed_out)]
    assert manager.queued == 0 and manager.next_deadline() is None


def test_waiting_requests_time_out_while_one_is_in_flight_but_the_flying_one_does_not() -> None:
    manager = ForwardingManager()
    manager.submit(client_request(correlation_id=1), 0.0)
    manager.submit(client_request(correlation_id=2), 0.0)
    outbound = send(manager, 0.0)
    manager.expire(RETRY_TIMEOUT_S + 1)
    (timed_out,) = manager.completions()
    assert timed_out.request.correlation_id == 2
    assert codes(timed_out) == [int(ErrorCode.request_timed_out)]
    manager.on_response(outbound.attempt, ok(1))  # the one in flight may still be answered
    (answered,) = manager.completions()
    assert answered.outcome is Outcome.RESPONSE and answered.request.correlation_id == 1


def test_with_no_controller_requests_wait_then_time_out_in_order() -> None:
    manager = ForwardingManager(retry_timeout_s=10.0)
    manager.submit(client_request(correlation_id=1), 0.0)
    manager.submit(client_request(correlation_id=2), 5.0)
    manager.expire(9.0)
    assert manager.completions() == []
    manager.expire(10.0)
    assert [c.request.correlation_id for c in manager.completions()] == [1]
    assert manager.next_deadline() == 15.0
    manager.expire(15.0)
    assert [c.request.correlation_id for c in manager.completions()] == [2]


# --- never twice ----------------------------------------------------------------------------------


def test_an_answered_request_is_never_sent_again_and_late_answers_are_ignored() -> None:
    manager = ForwardingManager()
    manager.submit(client_request(correlation_id=1), 0.0)
    manager.submit(client_request(correlation_id=2), 0.0)
    first = send(manager)
    manager.on_response(first.attempt, ok(1))
    assert len(manager.completions()) == 1
    # A duplicate answer, a disconnect or a failure reported for the finished attempt change nothing.
    assert manager.on_response(first.attempt, ok(1)) is False
    manager.on_disconnect(first.attempt)
    manager.on_failure(first.attempt)
    assert manager.completions() == []
    second = send(manager)
    assert second.request_id != first.request_id
    assert manager.next_envelope(0.0) is None


def test_an_answer_to_a_retried_attempt_does_not_complete_the_new_one() -> None:
    manager = ForwardingManager()
    manager.submit(client_request(correlation_id=1), 0.0)
    old = send(manager)
    manager.on_disconnect(old.attempt)
    new = send(manager)
    manager.on_response(old.attempt, ok(1))  # from a connection that is gone: ignored
    assert manager.completions() == []
    manager.on_response(new.attempt, ok(1))
    assert len(manager.completions()) == 1
    assert manager.next_envelope(0.0) is None


def test_a_disconnect_with_nothing_in_flight_retries_nothing() -> None:
    manager = ForwardingManager()
    manager.on_disconnect(None)
    manager.on_disconnect(42)
    assert manager.queued == 0 and manager.next_envelope(0.0) is None


# --- the error table ----------------------------------------------------------------------------------


def test_unsupported_version_closes_the_clients_connection() -> None:
    manager = ForwardingManager()
    manager.submit(client_request(), 0.0)
    outbound = send(manager)
    assert manager.on_response(outbound.attempt, envelope_error(ErrorCode.unsupported_version)) is False
    (done,) = manager.completions()
    assert done.outcome is Outcome.CLOSE_CONNECTION and done.frame() is None


@pytest.mark.parametrize(
    "code",
    [
        ErrorCode.cluster_authorization_failed,
        ErrorCode.principal_deserialization_failure,
        ErrorCode.invalid_request,
        ErrorCode.unknown_server_error,
    ],
)
def test_other_envelope_errors_reach_the_client_as_unknown_server_error(code: ErrorCode) -> None:
    manager = ForwardingManager()
    manager.submit(client_request(), 0.0)
    manager.on_response(send(manager).attempt, envelope_error(code))
    (done,) = manager.completions()
    assert done.outcome is Outcome.ERROR and codes(done) == [int(ErrorCode.unknown_server_error)]
    frame = done.frame()
    assert frame is not None and frame[4:8] == (7).to_bytes(4, "big")  # the client's correlation id


def test_authentication_failures_and_version_mismatches_are_unknown_server_error() -> None:
    manager = ForwardingManager()
    manager.submit(client_request(), 0.0)
    manager.on_failure(send(manager).attempt)
    (done,) = manager.completions()
    assert codes(done) == [int(ErrorCode.unknown_server_error)]


@pytest.mark.parametrize(
    "response",
    [
        EnvelopeResponse(response_data=None, error_code=ErrorCode.none),
        EnvelopeResponse(response_data=b"\x00\x00", error_code=ErrorCode.none),
        EnvelopeResponse(response_data=response_data(8), error_code=ErrorCode.none),  # another correlation id
        EnvelopeResponse(response_data=response_data(7)[:-3], error_code=ErrorCode.none),
    ],
)
def test_an_unreadable_inner_response_is_unknown_server_error(response: Any) -> None:
    manager = ForwardingManager()
    manager.submit(client_request(correlation_id=7), 0.0)
    manager.on_response(send(manager).attempt, response)
    (done,) = manager.completions()
    assert codes(done) == [int(ErrorCode.unknown_server_error)]


def test_a_principal_that_cannot_be_serialised_is_refused_at_submit() -> None:
    manager = ForwardingManager()
    with pytest.raises(ValueError):
        manager.submit(client_request(principal="nobody"), 0.0)
    assert manager.queued == 0
