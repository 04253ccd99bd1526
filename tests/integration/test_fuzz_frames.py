"""Fuzz the live server with bad frames: each may close its own connection, never the server.

Two fuzzers:
- **Structure-aware** (``wirefuzz``): for every (api, version) each listener serves, a request with
  every length field present, then each length field at each depth rewritten with a count no frame
  can hold, and each tagged section given a huge count or a tag that runs past the end. Sent to the
  client listener and the CONTROLLER listener, authenticated (PLAINTEXT) and before login (SASL),
  while a well-behaved client keeps working beside them. This is the class of the 20-byte frame that
  made kio's native reader abort the process.
- **Random**: hypothesis throws truncated frames, oversized length prefixes, random bytes and
  well-formed headers followed by garbage bodies.

Each example ends its writing side so the server sees EOF instead of waiting for bytes that never
come. Afterwards the process must be alive and a real client must still work.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator

import pytest
from harness import HOST, KstewardServer
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rawkafka import ConnectionClosed, RawConnection, connect, decode_response, frame, metadata_body
from wirefuzz import FUZZ_EXAMPLES, DrawnValues, Mutation, full_request, mutations, throw

from ksteward.broker.context import ApiTable
from ksteward.protocol.apis import ApiKey
from ksteward.protocol.codec import decode_request, request_class
from ksteward.protocol.errors import InvalidRequestError
from ksteward.protocol.schema_walk import check_message
from ksteward.server.api_table import broker_api_table, controller_api_table

SERVED_KEYS = [3, 17, 18, 36, 38, 39, 40, 41, 43, 45, 46, 50, 51, 56, 57, 60, 74, 75]
TOKEN_KEYS = {38, 39, 40, 41}  # the delegation-token APIs, enabled on the fuzzed servers
SMALL_MAX = 4096


@pytest.fixture(scope="module", params=["server", "sasl"])
def fuzz_server(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Iterator[KstewardServer]:
    template = request.param
    server = KstewardServer(
        tmp_path_factory.mktemp(f"fuzz-{template}"),
        template,
        {"socket.request.max.bytes": str(SMALL_MAX), "delegation.token.secret.key": "fuzz-key"},
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


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.lists(frames, min_size=1, max_size=3))
def test_bad_frames_never_stop_the_server(fuzz_server: KstewardServer, data: list[bytes]) -> None:
    throw(fuzz_server.address, b"".join(data))
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


# --- drawn values: well-formed requests of every served (api, version) ------------------------------


@settings(max_examples=FUZZ_EXAMPLES, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])  # fmt: skip
@given(data=st.data())
def test_drawn_values_never_stop_the_server(fuzz_server: KstewardServer, data: st.DataObject) -> None:
    """A well-formed request of a served (api, version), every field drawn (``wirefuzz.DrawnValues``), on the client
    listener (after a PLAIN login on the SASL server) or the CONTROLLER listener, where the single controller answers
    the Raft RPCs itself (``server.raft_service``)."""
    client = data.draw(st.booleans(), label="client listener")
    served = sorted((broker_api_table() if client else controller_api_table()).served.items())
    api_key, (low, high) = data.draw(st.sampled_from(served), label="api")
    version = data.draw(st.integers(low, high), label="version")
    values = DrawnValues(data, fuzz_server.cluster_id)
    payload, _ = full_request(api_key, version, request_class(api_key, version), values)
    with RawConnection(HOST, fuzz_server.port if client else fuzz_server.controller_port, timeout=2.0) as conn:
        if client and fuzz_server.template == "sasl":
            assert int(conn.sasl_plain("admin", "admin-secret").body.error_code) == 0
        try:
            conn.send_frame(payload)
            conn.read_frame()
        except (OSError, TimeoutError, ConnectionClosed):
            pass  # closed on us, or a parked Fetch
    assert fuzz_server.running, "the server process died"


def test_no_internal_error_after_the_drawn_values(fuzz_server: KstewardServer) -> None:
    assert "internal error" not in fuzz_server.log_text(), fuzz_server.log_tail(60)


# --- structure-aware: every length field of every served (api, version) ---------------------------


def _served_mutations(table: ApiTable) -> Iterator[tuple[int, int, Mutation]]:
    for api_key, (low, high) in sorted(table.served.items()):
        for version in range(low, high + 1):
            payload, sites = full_request(api_key, version, request_class(api_key, version))
            for mutation in mutations(payload, sites):
                yield api_key, version, mutation


@pytest.mark.parametrize("table", [broker_api_table(), controller_api_table()], ids=["client", "controller"])
def test_every_oversized_length_is_refused_before_kio_reads_it(table: ApiTable) -> None:
    """In process, without a server: the bounds check refuses every planted count, and the unmutated
    requests it was planted in decode (so the sites are real length fields, not noise)."""
    tried = 0
    for api_key, (low, high) in sorted(table.served.items()):
        for version in range(low, high + 1):
            payload, sites = full_request(api_key, version, request_class(api_key, version))
            decode_request(payload, table.served)
            cls = request_class(api_key, version)
            assert sites, (api_key, version)
            for mutation in mutations(payload, sites):
                if not mutation.oversized:
                    continue
                tried += 1
                with pytest.raises(InvalidRequestError):
                    check_message(mutation.payload, 0, (cls.__header_schema__, cls))
    assert tried > 1000
    assert TOKEN_KEYS & set(table.served) == (TOKEN_KEYS if ApiKey.METADATA in table.served else TOKEN_KEYS - {41})


class _WellBehavedClient:
    """A client that logs in (on a SASL server) and checks ApiVersions and Metadata answer without error."""

    def __init__(self, server: KstewardServer) -> None:
        self.conn = RawConnection(HOST, server.port)
        if server.template == "sasl":
            assert int(self.conn.sasl_plain("admin", "admin-secret").body.error_code) == 0
        self.errors = 0

    def check(self) -> None:
        try:
            ok = int(self.conn.api_versions().body.error_code) == 0
            metadata = self.conn.request(ApiKey.METADATA, 13, metadata_body(13, []))
            ok = ok and int(metadata.body.error_code) == 0 and len(metadata.body.brokers) == 1
        except Exception:
            ok = False
        self.errors += not ok


def test_structured_length_bombs_never_stop_the_server(fuzz_server: KstewardServer) -> None:
    """Every planted count on the client and controller listeners; one connection each, so that no
    frame rides on another's close. The server must stay up and the well-behaved client see no error."""
    client = _WellBehavedClient(fuzz_server)
    tried = 0
    try:
        for port, table in ((fuzz_server.port, broker_api_table()), (fuzz_server.controller_port,
                                                                     controller_api_table())):  # fmt: skip
            for api_key, version, mutation in _served_mutations(table):
                throw((HOST, port), frame(mutation.payload))
                tried += 1
                if tried % 250 == 0:
                    assert fuzz_server.running, f"the server died after {api_key} v{version} {mutation.what}"
                    client.check()
        client.check()
    finally:
        client.conn.close()
    assert fuzz_server.running, "the server process died"
    print(f"\nstructure-aware fuzz ({fuzz_server.template}): {tried} inputs, 0 crashes, "
          f"well-behaved client errors: {client.errors}")  # fmt: skip
    assert client.errors == 0


# Issue 20's APIs: reassignments and elections on both listeners, AlterPartition on the controller listener.
REASSIGNMENT_KEYS = (ApiKey.ELECT_LEADERS, ApiKey.ALTER_PARTITION_REASSIGNMENTS, ApiKey.LIST_PARTITION_REASSIGNMENTS)


def test_reassignment_apis_are_fuzzed_and_answer_their_full_requests(fuzz_server: KstewardServer) -> None:
    """The structure-aware fuzz covers them (they are in the tables it walks), and the unmutated request with
    every array and string present, all numbers zero, is answered in its own shape, not by a closed socket."""
    listeners = (
        (fuzz_server.port, broker_api_table(), REASSIGNMENT_KEYS),
        (fuzz_server.controller_port, controller_api_table(), (*REASSIGNMENT_KEYS, ApiKey.ALTER_PARTITION)),
    )
    answered = 0
    for port, table, keys in listeners:
        assert set(keys) <= set(table.served)
        for api_key in keys:
            low, high = table.served[api_key]
            for version in range(low, high + 1):
                payload, _ = full_request(api_key, version, request_class(api_key, version))
                with RawConnection(HOST, port) as conn:
                    if fuzz_server.template == "sasl" and port == fuzz_server.port:
                        assert int(conn.sasl_plain("admin", "admin-secret").body.error_code) == 0
                    conn.send_frame(payload)
                    response = decode_response(api_key, version, conn.read_frame())
                assert response.correlation_id == 7
                answered += 1
    assert answered == 2 * (3 + 2 + 1) + 2
    assert fuzz_server.running
