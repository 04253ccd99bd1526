"""Snapshots taken while running: every metadata.log.max.record.bytes.between.snapshots bytes,
segments the snapshot covers deleted, and a restart after kill -9 that loads snapshot plus log."""

from __future__ import annotations

import hashlib

from harness import KstewardServer, wait_for
from rawkafka import connect

SALT = b"snap-salt"
SALTED = hashlib.pbkdf2_hmac("sha256", b"pw", SALT, 4096)


def _upsert(conn, name: str) -> None:  # type: ignore[no-untyped-def]
    body = {
        "deletions": [],
        "upsertions": [{"name": name, "mechanism": 1, "iterations": 4096, "salt": SALT, "salted_password": SALTED}],
    }
    assert [int(r.error_code) for r in conn.request(51, 0, body).body.results] == [0]


def _users(server: KstewardServer) -> set[str]:
    with connect(server.address) as conn:
        return {r.user for r in conn.request(50, 0, {"users": None}).body.results}


def test_snapshots_by_bytes_and_segment_cleanup(server_factory) -> None:  # type: ignore[no-untyped-def]
    server: KstewardServer = server_factory(
        "server",
        {"metadata.log.max.record.bytes.between.snapshots": "8192", "metadata.log.segment.bytes": "4096"},
    ).start()
    partition = server.data_dir / "__cluster_metadata-0"
    with connect(server.address) as conn:
        for i in range(200):  # ~150 bytes a batch: several snapshots' worth
            _upsert(conn, f"user-{i}")

    def snapshot_offsets() -> list[int]:
        return sorted(int(p.name.split("-")[0]) for p in partition.glob("*.checkpoint"))

    def segment_offsets() -> list[int]:
        return sorted(int(p.stem) for p in partition.glob("*.log"))

    def settled() -> bool:
        # Snapshots are written in the background after a commit crosses the threshold, and a new
        # snapshot's file exists for a moment before the oldest is pruned: wait for a state where
        # a snapshot past offset 100 exists, at most two are kept, and the first segment (never
        # segment 0, which every snapshot covers) holds the newest snapshot's offset or less.
        snapshots, segments = snapshot_offsets(), segment_offsets()
        state.update(snapshots=snapshots, segments=segments)
        return bool(
            snapshots and snapshots[-1] > 100 and len(snapshots) <= 2
            and segments and 0 < segments[0] <= snapshots[-1]
        )  # fmt: skip

    state: dict[str, list[int]] = {}
    try:
        wait_for(settled, 30, "a snapshot past offset 100, older ones pruned, covered segments deleted")
    except AssertionError as exc:
        raise AssertionError(f"{exc}: last seen {state}") from None
    server.restart(hard=True)  # kill -9: no shutdown snapshot; load the newest snapshot, then the log
    assert {f"user-{i}" for i in range(200)} <= _users(server)
