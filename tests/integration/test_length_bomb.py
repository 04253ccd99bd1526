"""The outside probe's 20-byte frame, exactly as reported (hardening issue, D1), and its relatives.

kio 0.6.5's native reader reserved memory for an array count the client declares before checking
that the bytes are there; a failed reservation aborted the process (SIGABRT), which Python cannot
catch. Against 8a015f8 each of these frames killed the server. Now the count is checked against the
bytes the frame holds first (``protocol.schema_walk``), the request is treated as Kafka treats an
unparsable one (its connection is closed), and every other connection carries on.

The broad, structure-aware version of this test is ``test_fuzz_frames``; this one pins the report.
"""

from __future__ import annotations

import struct

import pytest
from harness import HOST, KstewardServer, ServerFactory
from rawkafka import RawConnection

CREATE_TOPICS_V5_HEADER = struct.pack(">hhih", 19, 5, 1, 4) + b"bomb" + b"\x00"  # header v2: no tags
COMPACT_ARRAY_OF_4294967294 = b"\xff\xff\xff\xff\x0f"
# CreateAcls v3: a compact array of creations, then a nested string length, both declared huge.
CREATE_ACLS_V3_HEADER = struct.pack(">hhih", 30, 3, 2, 4) + b"bomb" + b"\x00"
NESTED = b"\x02" + b"\x02" + b"\xff\xff\xff\xff\x0f"  # one creation, resource_type, a 4 GiB name


def _frame(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


def _bombed_and_closed(conn: RawConnection, payload: bytes) -> None:
    conn.send_raw(_frame(payload))
    assert conn.read_until_closed() is not None, "the connection was not closed"


@pytest.fixture
def server(server_factory: ServerFactory) -> KstewardServer:
    return server_factory("sasl").start()


def _still_serves(server: KstewardServer) -> None:
    assert server.running, "the server process died:\n" + server.log_tail(20)
    with RawConnection(HOST, server.port) as conn:
        assert int(conn.sasl_plain("admin", "admin-secret").body.error_code) == 0
        assert int(conn.api_versions().body.error_code) == 0


def test_the_reported_frame_before_login(server: KstewardServer) -> None:
    bystander = RawConnection(HOST, server.port)
    assert int(bystander.sasl_plain("admin", "admin-secret").body.error_code) == 0
    payload = CREATE_TOPICS_V5_HEADER + COMPACT_ARRAY_OF_4294967294
    assert len(payload) == 20, "the report's frame: 20 bytes after the size prefix"
    with RawConnection(HOST, server.port) as conn:  # no SaslHandshake: an anonymous peer
        _bombed_and_closed(conn, payload)
    _still_serves(server)
    assert int(bystander.api_versions().body.error_code) == 0, "another connection was disturbed"
    bystander.close()


@pytest.mark.parametrize("payload", [CREATE_TOPICS_V5_HEADER + COMPACT_ARRAY_OF_4294967294,
                                     CREATE_ACLS_V3_HEADER + NESTED], ids=["top-level", "nested"])  # fmt: skip
def test_the_same_frames_after_login(server: KstewardServer, payload: bytes) -> None:
    with RawConnection(HOST, server.port) as conn:
        assert int(conn.sasl_plain("admin", "admin-secret").body.error_code) == 0
        _bombed_and_closed(conn, payload)
    _still_serves(server)
    api = "CreateTopics v5" if payload.startswith(CREATE_TOPICS_V5_HEADER) else "CreateAcls v3"
    line = server.wait_for_log(rf"cannot parse {api} \({len(payload)} bytes\)")
    assert "bomb" not in line.split("from", 1)[0], "the request's bytes must not be logged"


def test_the_same_frame_on_the_controller_listener(server: KstewardServer) -> None:
    with RawConnection(HOST, server.controller_port) as conn:  # PLAINTEXT: no login needed
        _bombed_and_closed(conn, CREATE_TOPICS_V5_HEADER + COMPACT_ARRAY_OF_4294967294)
    _still_serves(server)
