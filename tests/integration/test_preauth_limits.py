"""Before login, a client controls neither the server's memory nor its CPU nor its sockets for long.

Against a real SASL server with ``connections.max.idle.ms=2000``:
- a frame larger than ``sasl.server.max.receive.size`` is refused from its size alone, before login;
  after login the limit is ``socket.request.max.bytes`` again;
- a request other than ApiVersions or SaslHandshake (then SaslAuthenticate) is refused from its
  header, so its body is never decoded for an anonymous peer;
- idle sockets, half-sent frames trickled a byte at a time, and clients that keep talking but never
  log in are all closed once ``connections.max.idle.ms`` has passed;
- through all of it, a logged-in client keeps working and sees no error.

Waits are on conditions (a socket reaching EOF), with generous deadlines; no timing is asserted.
"""

from __future__ import annotations

import contextlib
import socket
import struct
import threading
import time
from collections.abc import Iterator

import pytest
from harness import HOST, KstewardServer, ServerFactory
from rawkafka import RawConnection, encode_request, metadata_body

from ksteward.protocol.apis import ApiKey

IDLE_MS = 2000
SASL_MAX_RECEIVE = 524_288  # Kafka's default sasl.server.max.receive.size
CLOSE_DEADLINE_S = 30.0  # far longer than IDLE_MS: only a connection that is never closed fails


@pytest.fixture
def server(server_factory: ServerFactory) -> KstewardServer:
    return server_factory("sasl", {"connections.max.idle.ms": str(IDLE_MS)}).start()


def _raw_socket(server: KstewardServer) -> socket.socket:
    sock = socket.create_connection((HOST, server.port), timeout=CLOSE_DEADLINE_S)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def _closed_by_server(sock: socket.socket) -> bool:
    """Read until the server closes the connection; False if it is still open at the deadline."""
    try:
        while sock.recv(65536):
            pass
    except (ConnectionResetError, BrokenPipeError):
        pass
    except TimeoutError:
        return False
    return True


def _rss_kib(pid: int) -> dict[str, int]:
    values = {}
    with open(f"/proc/{pid}/status", encoding="ascii") as status:
        for line in status:
            key, _, rest = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                values[key] = int(rest.split()[0])
    return values


class _WellBehavedClient(threading.Thread):
    """Logs in as admin, then asks ApiVersions and Metadata until stopped; counts every error."""

    def __init__(self, server: KstewardServer) -> None:
        super().__init__(daemon=True)
        self.conn = RawConnection(HOST, server.port)
        assert int(self.conn.sasl_plain("admin", "admin-secret").body.error_code) == 0
        self.stopped = threading.Event()
        self.errors = 0
        self.rounds = 0

    def run(self) -> None:
        while not self.stopped.is_set():
            try:
                ok = int(self.conn.api_versions().body.error_code) == 0
                ok = ok and int(self.conn.request(ApiKey.METADATA, 13, metadata_body(13, [])).body.error_code) == 0
            except Exception:
                ok = False
            self.errors += not ok
            self.rounds += 1
            self.stopped.wait(0.05)  # pacing, so the client does not eat a core; not a synchronisation

    def finish(self) -> tuple[int, int]:
        self.stopped.set()
        self.join(CLOSE_DEADLINE_S)
        self.conn.close()
        return self.errors, self.rounds


@pytest.fixture
def client(server: KstewardServer) -> Iterator[_WellBehavedClient]:
    worker = _WellBehavedClient(server)
    worker.start()
    yield worker
    worker.stopped.set()


def test_a_frame_over_the_pre_login_limit_is_refused_from_its_size(
    server: KstewardServer, client: _WellBehavedClient
) -> None:
    for size in (SASL_MAX_RECEIVE + 1, 24 * 1024 * 1024, 100 * 1024 * 1024):
        sock = _raw_socket(server)
        sock.sendall(struct.pack(">i", size))
        assert _closed_by_server(sock), f"a {size}-byte frame before login was not refused"
        sock.close()
    assert server.wait_for_log(r"larger than sasl\.server\.max\.receive\.size \(524288\)")
    # Once logged in, socket.request.max.bytes applies: a 600 KiB Metadata request is answered.
    names = [f"t{i:07d}-{'x' * 22}" for i in range(20_000)]
    with RawConnection(HOST, server.port) as conn:
        assert int(conn.sasl_plain("admin", "admin-secret").body.error_code) == 0
        payload = encode_request(ApiKey.METADATA, 9, 99, metadata_body(9, names))
        assert len(payload) > SASL_MAX_RECEIVE
        conn.send_frame(payload)
        assert len(conn.read_frame()) > 0
    assert client.finish()[0] == 0


def test_requests_before_login_are_refused_from_the_header(server: KstewardServer, client: _WellBehavedClient) -> None:
    # A Metadata request with a 400 KiB body of garbage: decoding it would fail with a decode error;
    # the header alone refuses it.
    header = struct.pack(">hhih", ApiKey.METADATA, 12, 1, 4) + b"evil" + b"\x00"
    sock = _raw_socket(server)
    body = header + b"\xff" * 400_000
    sock.sendall(struct.pack(">i", len(body)) + body)
    assert _closed_by_server(sock)
    assert server.wait_for_log(r"Unexpected Kafka request of type Metadata during SASL handshake\.")
    # After SaslHandshake only SaslAuthenticate may follow.
    with RawConnection(HOST, server.port) as conn:
        assert int(conn.request(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"}).body.error_code) == 0
        conn.send_frame(
            encode_request(ApiKey.API_VERSIONS, 3, 5, {"client_software_name": "x", "client_software_version": "1"})
        )
        assert conn.read_until_closed() is not None
    assert server.wait_for_log(r"Unexpected Kafka request of type ApiVersions during SASL authentication\.")
    assert "cannot parse" not in server.log_text()  # refused from the header: never decoded
    assert client.finish()[0] == 0


def test_idle_slow_and_never_authenticating_connections_are_closed(
    server: KstewardServer, client: _WellBehavedClient
) -> None:
    """The pre-authentication phase: idle sockets, half-sent frames trickled one byte at a time,
    frames at the size limit that never complete, oversized frames, and a client that keeps sending
    ApiVersions but never logs in. All are closed; the logged-in client sees no error."""
    assert server.proc is not None
    before = _rss_kib(server.proc.pid)
    idle = [_raw_socket(server) for _ in range(16)]
    oversized = [_raw_socket(server) for _ in range(16)]
    for sock in oversized:
        sock.sendall(struct.pack(">i", 100 * 1024 * 1024) + b"\x00" * 1024)
    stalled = [_raw_socket(server) for _ in range(32)]
    for sock in stalled:  # as much as the pre-login limit lets a frame hold, all but its last bytes
        sock.sendall(struct.pack(">i", SASL_MAX_RECEIVE) + b"\x00" * (SASL_MAX_RECEIVE - 16))
    trickled = [_raw_socket(server) for _ in range(4)]
    stop = threading.Event()

    def trickle() -> None:
        for sock in trickled:
            sock.sendall(struct.pack(">i", 1000))
        while not stop.is_set():
            for sock in trickled:
                with contextlib.suppress(OSError):
                    sock.send(b"\x00")
            stop.wait(0.2)  # pacing of the slow-loris

    trickler = threading.Thread(target=trickle, daemon=True)
    trickler.start()
    chatty = RawConnection(HOST, server.port)
    answered, chatty_closed = 0, False
    deadline = time.monotonic() + CLOSE_DEADLINE_S
    while not chatty_closed and time.monotonic() < deadline:
        try:
            chatty.api_versions()
            answered += 1
        except Exception:
            chatty_closed = True  # closed by the server: it never logged in
    assert chatty_closed, "a client that never logs in was never closed"
    try:
        for group, socks in (("oversized", oversized), ("idle", idle), ("stalled", stalled), ("trickled", trickled)):
            for sock in socks:
                assert _closed_by_server(sock), f"a {group} connection was never closed"
    finally:
        stop.set()
        trickler.join()
    for sock in idle + oversized + stalled + trickled:
        sock.close()
    chatty.close()
    after = _rss_kib(server.proc.pid)
    errors, rounds = client.finish()
    print(
        f"\npre-auth phase: RSS {before['VmRSS']} KiB before, peak {after['VmHWM']} KiB, {after['VmRSS']} KiB after; "
        f"never-authenticating client answered {answered} times before its close; "
        f"well-behaved client: {rounds} rounds, {errors} errors"
    )
    assert answered > 0
    assert server.wait_for_log(r"not authenticated for connections\.max\.idle\.ms \(2000 ms\)")
    assert errors == 0
    assert server.running
