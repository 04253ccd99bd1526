"""Who may send a delegation-token request at all (Kafka's ``allowTokenRequests``), and the token flag of a
forwarded request's principal, which is how the controller knows a broker's client logged in with a token."""

from __future__ import annotations

import dataclasses

import pytest

from ksteward.broker.context import ApiTable, RequestContext
from ksteward.broker.delegation_tokens import allow_token_requests
from ksteward.broker.forwarding import ClientRequest, ForwardingManager
from ksteward.protocol.apis import ApiKey
from ksteward.protocol.principal import deserialize_principal

BASE = RequestContext(principal="User:alice", client_host="127.0.0.1", listener="L", security_protocol="SASL_SSL",
                      client_id=None, api_key=38, api_version=3, api_table=ApiTable([]))  # fmt: skip


@pytest.mark.parametrize(
    ("changes", "allowed"),
    [
        ({}, True),
        ({"security_protocol": "SASL_PLAINTEXT"}, True),
        ({"security_protocol": "SSL"}, True),  # a client certificate: 2-way SSL
        ({"security_protocol": "SSL", "principal": "User:ANONYMOUS"}, False),  # 1-way SSL
        ({"security_protocol": "PLAINTEXT", "principal": "User:ANONYMOUS"}, False),
        ({"security_protocol": "PLAINTEXT", "forwarded": True}, True),  # the broker checked its own listener
        ({"token_authenticated": True}, False),
        ({"token_authenticated": True, "forwarded": True}, False),
    ],
)
def test_allow_token_requests(changes: dict[str, object], allowed: bool) -> None:
    assert allow_token_requests(dataclasses.replace(BASE, **changes)) is allowed  # type: ignore[arg-type]


@pytest.mark.parametrize("token", [True, False])
def test_the_envelope_principal_carries_the_token_flag(token: bool) -> None:
    forwarding = ForwardingManager()
    request = ClientRequest(
        payload=b"", api_key=ApiKey.CREATE_DELEGATION_TOKEN, api_version=3, correlation_id=1, body=None,
        principal="User:alice", client_host="127.0.0.1", token_authenticated=token,
    )  # fmt: skip
    forwarding.submit(request, now=0.0)
    outbound = forwarding.next_envelope(now=0.0)
    assert outbound is not None
    principal = deserialize_principal(outbound.envelope.request_principal)
    assert (str(principal), principal.token_authenticated) == ("User:alice", token)
