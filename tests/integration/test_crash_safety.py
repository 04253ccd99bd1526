"""Nothing acknowledged is lost on a crash, and no half-written batch is ever applied.

Each AlterUserScramCredentials request upserts two users, ``uN-a`` and ``uN-b``: the controller writes
them as one batch, so after any crash either both exist or neither does. Writers on several
connections keep the group committer busy while the server is killed with SIGKILL.
"""

from __future__ import annotations

import hashlib
import threading
import time
from pathlib import Path

import pytest
from harness import FAULT_CYCLES, KstewardServer, fault_rng
from rawkafka import ConnectionClosed, RawConnection, connect

from ksteward.controller.active import DELETIONS_ON_THE_LOOP
from ksteward.protocol.apis import ApiKey
from ksteward.protocol.codec import decode_response

SALT = b"crash-test-salt"
SALTED = hashlib.pbkdf2_hmac("sha256", b"pw", SALT, 4096)
WRITERS = 4


def _upsert(name: str) -> dict[str, object]:
    return {"name": name, "mechanism": 1, "iterations": 4096, "salt": SALT, "salted_password": SALTED}


def _alter_pair(conn: RawConnection, n: int) -> bool:
    """Upsert uN-a and uN-b in one request; True once the server acknowledged both."""
    body = {"deletions": [], "upsertions": [_upsert(f"u{n}-a"), _upsert(f"u{n}-b")]}
    response = conn.request(ApiKey.ALTER_USER_SCRAM_CREDENTIALS, 0, body)
    codes = {r.user: int(r.error_code) for r in response.body.results}
    assert codes == {f"u{n}-a": 0, f"u{n}-b": 0}, codes
    return True


def _users(server: KstewardServer) -> set[str]:
    with connect(server.address) as conn:
        response = conn.request(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, 0, {"users": None})
        assert int(response.body.error_code) == 0
        return {r.user for r in response.body.results}


def _pairs(users: set[str]) -> dict[int, set[str]]:
    pairs: dict[int, set[str]] = {}
    for user in users:
        number, _, side = user[1:].partition("-")
        pairs.setdefault(int(number), set()).add(side)
    return pairs


def _assert_whole_batches(users: set[str]) -> None:
    halves = {n: sides for n, sides in _pairs(users).items() if sides != {"a", "b"}}
    assert not halves, f"half-applied batches after recovery: {halves}"


def _write_until_killed(server: KstewardServer, acked_before_kill: int, first: int = 0) -> set[int]:
    """Run WRITERS connections of pair upserts numbered from ``first``; SIGKILL the server once enough were
    acknowledged."""
    acked: set[int] = set()
    lock = threading.Lock()
    enough = threading.Event()
    counter = iter(range(first, first + 1_000_000))

    def writer() -> None:
        try:
            with connect(server.address, timeout=10) as conn:
                while True:
                    with lock:
                        n = next(counter)
                    if _alter_pair(conn, n):
                        with lock:
                            acked.add(n)
                            if len(acked) >= acked_before_kill:
                                enough.set()
        except (ConnectionClosed, OSError):
            return  # the server died under us: exactly what this test does

    threads = [threading.Thread(target=writer, daemon=True) for _ in range(WRITERS)]
    for t in threads:
        t.start()
    assert enough.wait(timeout=120), f"only {len(acked)} mutations acknowledged"
    server.kill()  # SIGKILL with writes still in flight
    for t in threads:
        t.join(timeout=30)
    return acked


def test_kill_minus_9_loses_no_acknowledged_change(server_factory) -> None:  # type: ignore[no-untyped-def]
    """SIGKILL with writes in flight, after a random number of acknowledgements (a seeded RNG), FAULT_CYCLES
    times on the same data directory (``make test-slow`` runs 20)."""
    rng = fault_rng("kill -9 under writes")
    server = server_factory().start()
    acked: set[int] = set()
    for cycle in range(FAULT_CYCLES):  # each cycle numbers its writes apart from the others'
        acked |= _write_until_killed(server, acked_before_kill=rng.randrange(50, 500), first=cycle * 1_000_000)
        server.start()
        users = _users(server)
        present = _pairs(users)
        missing = sorted(n for n in acked if n not in present)
        assert not missing, f"acknowledged but lost after kill -9: {missing[:20]}"
        _assert_whole_batches(users)
    server.stop()


def _last_segment(server: KstewardServer) -> Path:
    segments = sorted((server.data_dir / "__cluster_metadata-0").glob("*.log"))
    assert segments, "no metadata log segment"
    return segments[-1]


@pytest.mark.parametrize("damage", ["truncate", "bitflip"])
def test_damaged_tail_is_cut_and_earlier_batches_survive(server_factory, damage: str) -> None:  # type: ignore[no-untyped-def]
    server = server_factory().start()
    with connect(server.address) as conn:
        for n in range(20):
            _alter_pair(conn, n)
    server.kill()
    segment = _last_segment(server)
    data = bytearray(segment.read_bytes())
    if damage == "truncate":
        data = data[:-7]  # cut into the last batch: a torn write
    else:
        data[-5] ^= 0x40  # one flipped bit inside the last batch: its CRC no longer matches
    segment.write_bytes(bytes(data))

    server.start()
    users = _users(server)
    _assert_whole_batches(users)
    pairs = _pairs(users)
    assert set(range(19)) <= set(pairs), "a batch before the damaged one was lost"
    assert 19 not in pairs, "the damaged last batch was applied"
    log = server.run_log()
    assert "metadata" in log.lower() and ("truncat" in log.lower() or "cut" in log.lower()), log[-2000:]
    # The server wrote past the cut: new writes land and survive another restart.
    with connect(server.address) as conn:
        _alter_pair(conn, 100)
    server.restart()
    assert {"u100-a", "u100-b"} <= _users(server)
    server.stop()


LARGE_DELETION = 2 * DELETIONS_ON_THE_LOOP + 1  # replayed and encoded in a worker thread, written as one batch


def _principal_filter(principal: str) -> dict[str, object]:
    return {"resource_type_filter": 1, "resource_name_filter": None, "pattern_type_filter": 1,
            "principal_filter": principal, "host_filter": None, "operation": 1, "permission_type": 1}  # fmt: skip


def _sasl_admin(server: KstewardServer) -> RawConnection:
    conn = connect(server.address, timeout=60)
    assert int(conn.sasl_plain("admin", "admin-secret").body.error_code) == 0
    return conn


def _create_acls_of(conn: RawConnection, principal: str) -> None:
    creations = [{"resource_type": 2, "resource_name": f"t-{i}", "resource_pattern_type": 3, "principal": principal,
                  "host": "*", "operation": 3, "permission_type": 3} for i in range(LARGE_DELETION)]  # fmt: skip
    for start in range(0, len(creations), 1000):
        results = conn.request(ApiKey.CREATE_ACLS, 3, {"creations": creations[start : start + 1000]}).body.results
        assert {int(r.error_code) for r in results} == {0}


def _acls_of(conn: RawConnection, principal: str) -> int:
    described = conn.request(ApiKey.DESCRIBE_ACLS, 3, _principal_filter(principal)).body
    assert int(described.error_code) == 0
    return sum(len(r.acls) for r in described.resources)


def test_kill_minus_9_during_a_large_acl_deletion_leaves_all_of_it_or_none(server_factory) -> None:  # type: ignore[no-untyped-def]
    """A DeleteAcls of more than ``DELETIONS_ON_THE_LOOP`` ACLs is matched, replayed and encoded in a worker thread
    and written as one batch. SIGKILL at a random point of it (a seeded delay after the request is sent, up to
    1.5 x the time an equal deletion just took): after the restart the ACLs are all there or all gone, and all
    gone when the deletion was answered. FAULT_CYCLES times on the same data directory."""
    rng = fault_rng("kill -9 during a large DeleteAcls")
    server = server_factory("sasl").start()
    outcomes = []
    for cycle in range(FAULT_CYCLES):
        victim, timed = f"User:victim-{cycle}", f"User:timed-{cycle}"
        with _sasl_admin(server) as conn:
            _create_acls_of(conn, victim)
            _create_acls_of(conn, timed)
            started = time.monotonic()
            [result] = conn.request(ApiKey.DELETE_ACLS, 3, {"filters": [_principal_filter(timed)]}).body.filter_results
            took = time.monotonic() - started
            assert int(result.error_code) == 0 and len(result.matching_acls) == LARGE_DELETION
            cid = conn.send_request(ApiKey.DELETE_ACLS, 3, {"filters": [_principal_filter(victim)]})
            time.sleep(rng.uniform(0, 1.5 * took))  # the kill point, not a wait for anything
            server.kill()
            try:
                response = decode_response(ApiKey.DELETE_ACLS, 3, conn.read_frame())
            except (ConnectionClosed, OSError):
                answered = False
            else:
                assert response.correlation_id == cid
                [result] = response.body.filter_results
                assert int(result.error_code) == 0 and len(result.matching_acls) == LARGE_DELETION
                answered = True
        server.start()
        with _sasl_admin(server) as conn:
            left = _acls_of(conn, victim)
        assert left in (0, LARGE_DELETION), f"a part of one deletion batch survived the crash: {left} ACLs"
        assert not (answered and left), "an answered deletion was lost by the crash"
        outcomes.append("answered" if answered else "deleted, unanswered" if not left else "not deleted")
    print("outcomes:", outcomes)
    server.stop()
