"""One process per data directory: a second ``ksteward serve`` on a live node's directory stops,
changes nothing there, and the live node keeps serving (Kafka's ``LogManager.lockLogDirs``).

Before the lock, a second server on the same ``metadata.log.dir`` started and acknowledged writes
that the two then overwrote; even a second start that failed later (port in use) first removed the
live node's snapshot in progress and ran recovery on its segments.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from acl_clients import Acl, Filter, acl_client
from clients import Auth
from harness import KstewardServer, ServerFactory

ADMIN = Auth("PLAIN", "admin", "admin-secret")
EVERYTHING: Filter = (None, None, None, None, None, None, None)
BEFORE: Acl = ("TOPIC", "orders", "LITERAL", "User:alice", "*", "READ", "ALLOW")
AFTER: Acl = ("TOPIC", "payments", "LITERAL", "User:bob", "*", "WRITE", "ALLOW")
# A snapshot in progress, as a live node has it while it writes one (``_LEFTOVER_SUFFIXES``).
LEFTOVER = "00000000000000000000-0000000000.checkpoint.part"
# The live node writes nothing by itself while its files are compared (KIP-835's NoOpRecord every 500 ms would):
# what changes them can only be the refused server.
QUIET = {"metadata.max.idle.interval.ms": "0"}


def listing(directory: Path) -> dict[str, tuple[int, int]]:
    """Every file under ``directory``: relative path -> (size, mtime in ns)."""
    return {
        str(p.relative_to(directory)): (p.stat().st_size, p.stat().st_mtime_ns)
        for p in sorted(directory.rglob("*"))
        if p.is_file()
    }


def assert_refused_naming(rc: int, text: str, directory: Path) -> None:
    """Non-zero exit and one ``ksteward:`` line, the lock refusal naming ``directory``; no traceback,
    and no log line but the shutdown's own ``stopped`` (as ``test_lifecycle`` has it for every refusal)."""
    assert rc != 0, f"expected a non-zero exit:\n{text}"
    assert "Traceback" not in text, text
    lines = [line for line in text.splitlines() if line.strip() and not line.startswith("===== start")]
    ours = [line for line in lines if line.startswith("ksteward:")]
    assert len(ours) == 1, f"expected one 'ksteward:' line, got {len(ours)}:\n{text}"
    assert ours[0].startswith("ksteward: cannot start: Failed to acquire lock on file .lock in "), ours[0]
    assert str(directory) in ours[0], f"the line should name {directory}: {ours[0]!r}"
    others = [line for line in lines if line not in ours and not line.endswith("INFO ksteward.server.app: stopped")]
    assert not others, f"unexpected output:\n{text}"


def acls(server: KstewardServer) -> set[Acl]:
    return acl_client("confluent-kafka", server.bootstrap).describe(ADMIN, EVERYTHING)


@pytest.mark.parametrize("ports", ["other-ports", "same-ports"])
def test_a_second_server_on_the_same_metadata_log_dir_is_refused(server_factory: ServerFactory, ports: str) -> None:
    a = server_factory("sasl", QUIET, name="a").start()
    acl_client("confluent-kafka", a.bootstrap).create(ADMIN, [BEFORE])
    partition = a.data_dir / "__cluster_metadata-0"
    (partition / LEFTOVER).write_bytes(b"half a snapshot")
    before = listing(a.data_dir)

    b = server_factory("sasl", {"metadata.log.dir": str(a.data_dir)}, name="b")
    if ports == "same-ports":  # it would fail on "port already in use" later; the lock stops it first
        b.port, b.controller_port = a.port, a.controller_port
    rc, text = b.run_to_exit()
    assert_refused_naming(rc, text, a.data_dir)
    assert listing(a.data_dir) == before, "the refused server changed the live node's files"
    assert (partition / LEFTOVER).read_bytes() == b"half a snapshot"

    assert a.running
    acl_client("confluent-kafka", a.bootstrap).create(ADMIN, [AFTER])
    assert acls(a) == {BEFORE, AFTER}

    # SIGKILL runs no cleanup: the kernel releases the lock, and B now starts on A's directory
    # with everything A acknowledged.
    a.kill()
    b.start()
    assert acls(b) == {BEFORE, AFTER}


def test_a_shared_log_dirs_entry_is_locked_too(server_factory: ServerFactory, tmp_path: Path) -> None:
    shared = tmp_path / "shared-log-dir"
    a = server_factory("sasl", {**QUIET, "log.dirs": str(shared)}, name="a").start()
    acl_client("confluent-kafka", a.bootstrap).create(ADMIN, [BEFORE])
    assert (shared / "meta.properties").is_file()
    before = listing(shared)

    # B's metadata.log.dir is its own; only the log.dirs entry is A's.
    b = server_factory("sasl", {"log.dirs": str(shared)}, name="b")
    rc, text = b.run_to_exit()
    assert_refused_naming(rc, text, shared)
    assert listing(shared) == before
    assert not (b.data_dir / "meta.properties").exists(), "B must stop before it writes meta.properties"

    assert acls(a) == {BEFORE}
