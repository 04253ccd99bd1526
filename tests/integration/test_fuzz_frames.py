"""Fuzz the live server with bad frames: each may close its own connection, never the server.

Hypothesis throws truncated frames, oversized length prefixes, random bytes and well-formed headers
followed by garbage bodies at a real ``ksteward serve``. Each example ends its writing side so the
server sees EOF instead of waiting for bytes that never come. Afterwards the process must be alive
and a real client must still work.
"""

from __future__ import annotations

import socket
import struct
from collections.abc import Iterator

import pytest
from harness import KstewardServer
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rawkafka import connect

SERVED_KEYS = [3, 17, 18, 36, 50, 51, 60]
SMALL_MAX = 4096


@pytest.fixture(scope="module", params=["server", "sasl"])
def fuzz_server(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Iterator[KstewardServer]:
    template = request.param
    server = KstewardServer(
        tmp_path_factory.mktemp(f"fuzz-{template}"),
        template,
        {"socket.request.max.bytes": str(SMALL_MAX)},
        name=f"fuzz-{template}",
    )
    try:
        yield server.start()
    finally:
        server.kill()


def _header(api_key: int, version: int, correlation_id: int, client_id: bytes) -> bytes:
    return struct.pack(">hhih", api_key, version, correlation_id, len(client_id)) + client_id


frames = st.one_of(
    # random bytes, framed or not
    st.binary(max_size=300),
    st.binary(max_size=300).map(lambda b: struct.pack(">i", len(b)) + b),
    # a length prefix that promises more than arrives
    st.tuples(st.integers(1, 10_000), st.binary(max_size=64)).map(lambda t: struct.pack(">i", t[0]) + t[1]),
    # oversized, zero and negative sizes
    st.integers(SMALL_MAX + 1, 2**31 - 1).map(lambda n: struct.pack(">i", n)),
    st.integers(-(2**31), 0).map(lambda n: struct.pack(">i", n)),
    # a valid header for a served (or unserved) API, then a garbage body
    st.tuples(
        st.sampled_from([*SERVED_KEYS, 19, 99, -1]),
        st.integers(-1, 20),
        st.integers(-(2**31), 2**31 - 1),
        st.binary(max_size=12),
        st.binary(max_size=200),
    ).map(lambda t: (lambda p: struct.pack(">i", len(p)) + p)(_header(t[0], t[1], t[2], t[3]) + b"\x00" + t[4])),
)


def _throw(server: KstewardServer, data: bytes) -> None:
    sock = socket.create_connection(server.address, timeout=10)
    try:
        try:
            sock.sendall(data)
            sock.shutdown(socket.SHUT_WR)
        except OSError:
            return  # the server already closed on us
        try:
            while sock.recv(65536):
                pass
        except (ConnectionResetError, TimeoutError):
            pass
    finally:
        sock.close()


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.lists(frames, min_size=1, max_size=3))
def test_bad_frames_never_stop_the_server(fuzz_server: KstewardServer, data: list[bytes]) -> None:
    _throw(fuzz_server, b"".join(data))
    assert fuzz_server.running, "the server process died"


def test_server_still_serves_real_clients_after_fuzzing(fuzz_server: KstewardServer) -> None:
    from kafka import KafkaAdminClient

    with connect(fuzz_server.address) as conn:
        assert int(conn.api_versions().body.error_code) == 0
    sasl = (
        {
            "security_protocol": "SASL_PLAINTEXT",
            "sasl_mechanism": "PLAIN",
            "sasl_plain_username": "admin",
            "sasl_plain_password": "admin-secret",
        }
        if fuzz_server.template == "sasl"
        else {}
    )
    admin = KafkaAdminClient(bootstrap_servers=fuzz_server.bootstrap, request_timeout_ms=10_000, **sasl)
    try:
        assert admin.describe_cluster()["cluster_id"] == fuzz_server.cluster_id
    finally:
        admin.close()
    assert fuzz_server.running
    # Garbage may close connections, but must never reach a handler as a crash.
    assert "internal error" not in fuzz_server.log_text(), fuzz_server.log_tail(60)
