"""No request payload reaches the server's log, at any level, whatever a client sends.

A server at DEBUG receives, before and after login: a PLAIN token sent at the wrong step (as a bare
frame before any handshake), an undecodable request whose body holds a secret, a failed login, and a
mechanism name that is really a password. Its log names the peer, api key, version and size, but
never the secret, in clear or as hex.
"""

from __future__ import annotations

import struct

import pytest
from harness import HOST, KstewardServer, ServerFactory
from rawkafka import RawConnection, encode_request

from ksteward.protocol.apis import ApiKey

SECRETS = ("alice-secret-D7", "wrong-password-D7", "hunter2-mechanism-D7", "body-secret-D7")


@pytest.fixture
def server(server_factory: ServerFactory) -> KstewardServer:
    return server_factory("sasl", debug_log=True).start()


def _assert_no_secret(server: KstewardServer) -> None:
    text = server.log_text()
    for secret in SECRETS:
        assert secret not in text
        assert secret.encode().hex() not in text


def test_request_bytes_never_reach_the_log(server: KstewardServer) -> None:
    # A PLAIN token sent as a bare frame before any SaslHandshake: closed, and only its size logged.
    with RawConnection(HOST, server.port) as conn:
        conn.send_frame(b"\x00alice\x00alice-secret-D7")
        assert conn.read_until_closed() is not None
    # A failed login, then a mechanism name that carries a password.
    with RawConnection(HOST, server.port) as conn:
        assert int(conn.request(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"}).body.error_code) == 0
        token = b"\x00alice\x00wrong-password-D7"
        assert int(conn.request(ApiKey.SASL_AUTHENTICATE, 2, {"auth_bytes": token}).body.error_code) != 0
    with RawConnection(HOST, server.port) as conn:
        assert int(conn.request(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "hunter2-mechanism-D7"}).body.error_code) != 0
    # On the PLAINTEXT controller listener (no login): a CreateAcls v3 header, then a body that fails
    # to decode and holds a secret.
    with RawConnection(HOST, server.controller_port) as conn:
        header = encode_request(ApiKey.CREATE_ACLS, 3, 9, {"creations": []})[:-2]  # the header, without the body
        body = b"\x02" + b"\x01" + struct.pack(">B", 16) + b"body-secret-D7\x00" + b"\xff" * 8
        conn.send_frame(header + body)
        assert conn.read_until_closed() is not None
    # Each log line is written before the server answers or closes, so the log is complete here.
    _assert_no_secret(server)
    server.wait_for_log(r"closing connection from .* on CONTROLLER: cannot parse CreateAcls v3 \(\d+ bytes\)")
    server.wait_for_log(r"authentication failed for ")
    server.wait_for_log(r"unsupported SASL mechanism")
