"""The forwarding channel against a scripted controller on loopback: NOT_CONTROLLER and a silent controller
are retried on a new connection, a controller without Envelope gives UNKNOWN_SERVER_ERROR, and requests go
one at a time in order. (The real server never answers NOT_CONTROLLER; tests/integration/test_envelope.py
covers the channel against it.)"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable
from typing import Any

from forwarding_support import client_request, response_data, result_codes
from kio.schema.envelope.v0 import EnvelopeResponse
from kio.schema.errors import ErrorCode

from ksteward.broker.forwarding import ClientRequest, Completion, Outcome
from ksteward.protocol.apis import ApiKey
from ksteward.protocol.build import build
from ksteward.protocol.codec import Request, decode_request, encode_response, response_class
from ksteward.protocol.framing import FrameDecoder
from ksteward.server.controller_channel import ControllerChannel

SERVED = {ApiKey.API_VERSIONS: (0, 4), ApiKey.ENVELOPE: (0, 0)}

# What the scripted controller answers to the n-th envelope (counted over all connections); "silent" never answers.
Script = Callable[[int, Request], EnvelopeResponse | str]


def answer(inner: bytes) -> EnvelopeResponse:
    """The controller's success: a CreateAcls response for the inner request's correlation id."""
    data = response_data(int.from_bytes(inner[4:8], "big"))
    return EnvelopeResponse(response_data=data, error_code=ErrorCode.none)


class FakeController:
    def __init__(self, script: Script, *, serves_envelope: bool = True, stopped: bool = False) -> None:
        self.script = script
        self.serves_envelope = serves_envelope
        self.stopped = stopped  # a SIGSTOPped controller: the kernel accepts the connection, nothing answers
        self.connections = 0
        self.envelopes: list[bytes] = []  # the inner request bytes, in the order they arrived

    async def __aenter__(self) -> tuple[str, int]:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        host, port = self.server.sockets[0].getsockname()[:2]
        return host, port

    async def __aexit__(self, *exc: object) -> None:
        self.server.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        frames = FrameDecoder()
        try:
            while True:
                payload = frames.next_frame(1 << 20)
                if payload is None:
                    data = await reader.read(65536)
                    if not data:
                        return
                    frames.receive(data)
                    continue
                if self.stopped:
                    continue
                request = decode_request(payload, SERVED)
                assert isinstance(request, Request)
                response = self._respond(request)
                if response is None:
                    continue  # silent: never answer on this connection
                writer.write(encode_response(request.api_key, request.api_version, request.correlation_id, response))
                await writer.drain()
        finally:
            writer.close()

    def _respond(self, request: Request) -> Any:
        if request.api_key == ApiKey.API_VERSIONS:
            keys = [{"api_key": ApiKey.API_VERSIONS, "min_version": 0, "max_version": 4}]
            if self.serves_envelope:
                keys.append({"api_key": ApiKey.ENVELOPE, "min_version": 0, "max_version": 0})
            values = {
                "error_code": ErrorCode.none,
                "api_keys": keys,
                "supported_features": [],
                "finalized_features_epoch": -1,
                "finalized_features": [],
            }
            return build(response_class(ApiKey.API_VERSIONS, request.api_version), values)
        self.envelopes.append(request.body.request_data)
        reply = self.script(len(self.envelopes), request)
        return None if reply == "silent" else reply


def run(controller: FakeController, *requests: ClientRequest, timeout_s: float = 5.0) -> list[Completion]:
    async def main() -> list[Completion]:
        async with controller as address:
            channel = ControllerChannel(address, request_timeout_s=timeout_s, backoff_s=0.01)
            channel.start()
            try:
                return list(await asyncio.gather(*(channel.forward(r) for r in requests)))
            finally:
                await channel.close()

    return asyncio.run(main())


def test_requests_go_one_at_a_time_in_order_over_one_connection() -> None:
    controller = FakeController(lambda n, r: answer(r.body.request_data))
    completions = run(controller, *(client_request(c) for c in (1, 2, 3)))
    assert [c.outcome for c in completions] == [Outcome.RESPONSE] * 3
    assert [int.from_bytes(e[4:8], "big") for e in controller.envelopes] == [1, 2, 3]
    assert controller.connections == 1


def test_not_controller_reconnects_and_resends_the_same_request_first() -> None:
    def script(n: int, request: Request) -> EnvelopeResponse:
        if n == 1:
            return EnvelopeResponse(response_data=None, error_code=ErrorCode.not_controller)
        return answer(request.body.request_data)

    controller = FakeController(script)
    completions = run(controller, client_request(1), client_request(2))
    assert [c.outcome for c in completions] == [Outcome.RESPONSE] * 2
    assert [int.from_bytes(e[4:8], "big") for e in controller.envelopes] == [1, 1, 2]
    assert controller.connections == 2


def test_a_silent_controller_times_the_attempt_out_and_the_request_is_resent() -> None:
    controller = FakeController(lambda n, r: "silent" if n == 1 else answer(r.body.request_data))
    (completion,) = run(controller, client_request(1), timeout_s=0.2)
    assert completion.outcome is Outcome.RESPONSE
    assert len(controller.envelopes) == 2 and controller.connections == 2


def test_a_controller_without_envelope_is_a_version_mismatch() -> None:
    controller = FakeController(lambda n, r: answer(r.body.request_data), serves_envelope=False)
    (completion,) = run(controller, client_request(1))
    assert completion.outcome is Outcome.ERROR
    assert result_codes(completion.response) == [ErrorCode.unknown_server_error]
    assert controller.envelopes == []


def test_unsupported_version_closes_the_clients_connection() -> None:
    controller = FakeController(
        lambda n, r: EnvelopeResponse(response_data=None, error_code=ErrorCode.unsupported_version)
    )
    (completion,) = run(controller, client_request(1))
    assert completion.outcome is Outcome.CLOSE_CONNECTION and completion.frame() is None


def forward_as_the_leader_moves(old: FakeController, new: FakeController, moved: Callable[[], bool],
                                **channel: float) -> Completion:  # fmt: skip
    """Forward one request; ``controller()`` names ``old`` until ``moved()`` (asked at each look) first holds,
    then ``new``. The test gives up after a minute."""

    async def main() -> Completion:
        async with old as old_address, new as new_address:
            leader = [old_address]

            def controller() -> tuple[str, int]:
                if leader[0] == old_address and moved():
                    leader[0] = new_address
                return leader[0]

            forwarding = ControllerChannel(controller, **channel)
            forwarding.start()
            try:
                return await asyncio.wait_for(forwarding.forward(client_request(1)), 60.0)
            finally:
                await forwarding.close()

    return asyncio.run(main())


def test_a_connection_to_a_stopped_controller_is_given_up_once_the_leader_moved() -> None:
    """The channel connects to the controller it is told of; that one stopped (SIGSTOP: it accepts the connection
    and never answers ApiVersions) and the Raft leader moves on: the request goes to the new one, without
    waiting out the attempt's timeout (ten minutes here)."""
    stopped = FakeController(lambda n, r: answer(r.body.request_data), stopped=True)
    active = FakeController(lambda n, r: answer(r.body.request_data))
    # The leader moves once the channel is stuck on the stopped one.
    completion = forward_as_the_leader_moves(stopped, active, lambda: stopped.connections > 0,
                                             request_timeout_s=600.0, backoff_s=0.01)  # fmt: skip
    assert completion.outcome is Outcome.RESPONSE
    assert stopped.connections == 1 and stopped.envelopes == [] and len(active.envelopes) == 1


def test_not_controller_waits_before_asking_the_same_controller_again_unless_the_leader_moves() -> None:
    """A voter that resigned names itself leader until the next election, and refuses meanwhile: the channel does
    not ask it again at once (the back-off is ten minutes here), and goes to the next leader as soon as it is
    known (the leader moves after three more looks at ``controller()``)."""
    refusing = FakeController(lambda n, r: EnvelopeResponse(response_data=None, error_code=ErrorCode.not_controller))
    active = FakeController(lambda n, r: answer(r.body.request_data))
    looks_after_refusal = itertools.count(1)
    completion = forward_as_the_leader_moves(
        refusing, active, lambda: bool(refusing.envelopes) and next(looks_after_refusal) > 3,
        request_timeout_s=60.0, refused_backoff_s=600.0,
    )  # fmt: skip
    assert completion.outcome is Outcome.RESPONSE
    assert len(refusing.envelopes) == 1 and refusing.connections == 1
    assert len(active.envelopes) == 1
