"""A broker-to-be follows the metadata log of a real ``ksteward serve`` over its controller listener.

A raw client drives ksteward's own observer core (``raft.observer.RaftObserver`` plus
``raft.follower_log.FollowerLog``) with Fetch and FetchSnapshot over a socket, as a KRaft observer does.
The local copy must end byte-identical to the server's log and load to the same image; an observer behind
the log start downloads the snapshot in several chunks; a long-poll Fetch returns when a mutation commits;
and a principal without CLUSTER_ACTION is refused.
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from clients import Auth, kafka_python_admin
from harness import HOST, KstewardServer, wait_for
from kio.schema.errors import ErrorCode
from rawkafka import RawConnection, connect

from ksteward.metadata.loader import load
from ksteward.metadata.log import MetadataLog
from ksteward.protocol.apis import ApiKey
from ksteward.raft.follower_log import FollowerLog
from ksteward.raft.observer import (
    AppendBatches,
    Backoff,
    InstallSnapshot,
    RaftObserver,
    StartSnapshotDownload,
    TruncateTo,
    WriteSnapshotChunk,
)

LOGGER = logging.getLogger("test.metadata_fetch")
SALT = b"fetch-salt"
SALTED = hashlib.pbkdf2_hmac("sha256", b"pw", SALT, 4096)
OBSERVER_ID = 100
_DATA = (AppendBatches, TruncateTo, StartSnapshotDownload, WriteSnapshotChunk, InstallSnapshot)


class Follower:
    """ksteward's observer core, its own metadata log under ``directory``, and a socket to the controller."""

    def __init__(self, server: KstewardServer, directory: Path, *, max_bytes: int = 1 << 20) -> None:
        self.log = FollowerLog(MetadataLog.open(directory, logger=LOGGER))
        self.directory = directory
        self.observer = RaftObserver(cluster_id=server.cluster_id, replica_id=OBSERVER_ID, max_bytes=max_bytes)
        self.conn = RawConnection(HOST, server.controller_port, timeout=120.0)
        self.chunks = 0

    def send(self, max_wait_ms: int) -> tuple[int, int, int]:
        self.observer.max_wait_ms = max_wait_ms
        api_key, version, body = self.observer.next_request(self.log.view)
        return api_key, version, self.conn.send_request(api_key, version, dataclasses.asdict(body))

    def receive(self, sent: tuple[int, int, int]) -> list[Any]:
        from rawkafka import decode_response

        api_key, version, correlation_id = sent
        response = decode_response(api_key, version, self.conn.read_frame())
        assert response.correlation_id == correlation_id
        actions = self.observer.on_response(api_key, response.body, self.log.view)
        assert not [a for a in actions if isinstance(a, Backoff)], actions
        self.chunks += sum(isinstance(a, WriteSnapshotChunk) for a in actions)
        self.log.apply(actions)
        return actions

    def step(self, max_wait_ms: int = 0) -> list[Any]:
        return self.receive(self.send(max_wait_ms))

    def catch_up(self) -> None:
        """Fetch (without waiting) until a round brings nothing and every committed offset is here."""
        for _ in range(100_000):
            actions = self.step()
            if not any(isinstance(a, _DATA) for a in actions) and self.observer.caught_up(self.log.view):
                return
        raise AssertionError("the observer never caught up")

    def close(self) -> None:
        self.conn.close()
        self.log.close()


@contextmanager
def following(server: KstewardServer, directory: Path, **kwargs: Any) -> Iterator[Follower]:
    follower = Follower(server, directory, **kwargs)
    try:
        yield follower
    finally:
        follower.close()


def upsert_scram(server: KstewardServer, names: list[str]) -> None:
    with connect(server.address) as conn:
        for name in names:
            user = {"name": name, "mechanism": 1, "iterations": 4096, "salt": SALT, "salted_password": SALTED}
            response = conn.request(ApiKey.ALTER_USER_SCRAM_CREDENTIALS, 0, {"deletions": [], "upsertions": [user]})
            assert [int(r.error_code) for r in response.body.results] == [0]


def images_equal(a_dir: Path, b_dir: Path) -> None:
    a, a_log = load(a_dir, LOGGER, read_only=True)
    b, b_log = load(b_dir, LOGGER, read_only=True)
    a_log.close()
    b_log.close()
    assert a.offset == b.offset
    assert list(a.records()) == list(b.records())


def log_bytes(directory: Path, start: int) -> bytes:
    with MetadataLog.open(directory, logger=LOGGER, read_only=True) as log:
        return log.read_raw(start, 1 << 30)


def test_observer_log_is_byte_identical_and_loads_to_the_same_image(server_factory, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from kafka.admin import ConfigResource, ConfigResourceType, NewPartitions, NewTopic

    server: KstewardServer = server_factory("server").start()
    admin = kafka_python_admin(server.bootstrap, Auth())
    try:
        admin.create_topics(
            [NewTopic("orders", 3, 1), NewTopic("payments", 1, 1, topic_configs={"retention.ms": "1000"})]
        )
        admin.create_partitions({"payments": NewPartitions(4)})
        admin.alter_configs([ConfigResource(ConfigResourceType.TOPIC, "orders", configs={"cleanup.policy": "compact"})])
        admin.delete_topics(["payments"])
    finally:
        admin.close()
    upsert_scram(server, ["alice", "bob"])
    with following(server, tmp_path / "observer") as follower:
        follower.catch_up()
        assert follower.log.log.next_offset == follower.observer.high_watermark
        assert log_bytes(tmp_path / "observer", 0) == log_bytes(server.data_dir, 0)
        assert follower.chunks == 0 and not follower.log.installed
    images_equal(tmp_path / "observer", server.data_dir)


def test_observer_behind_the_log_start_downloads_the_snapshot(server_factory, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    server: KstewardServer = server_factory(
        "server",
        {"metadata.log.max.record.bytes.between.snapshots": "8192", "metadata.log.segment.bytes": "4096"},
    ).start()
    partition = server.data_dir / "__cluster_metadata-0"
    upsert_scram(server, [f"user-{i}" for i in range(200)])
    # Snapshots are written in the background once the bytes since the last one cross the threshold.
    wait_for(lambda: min((int(p.stem) for p in partition.glob("*.log")), default=0) > 0, 30, "a deleted segment")
    with following(server, tmp_path / "observer", max_bytes=2048) as follower:
        follower.catch_up()
        assert follower.log.installed, "the first Fetch at offset 0 should have been answered with a snapshot"
        snapshot = follower.log.installed[0].snapshot
        assert follower.chunks >= 2  # MaxBytes 2048 against a snapshot of 200 SCRAM users
        local = follower.log.log.snapshots()[0]
        assert (local.end_offset, local.epoch) == (snapshot.offset, snapshot.epoch)
        server_copy = partition / local.path.name
        if server_copy.exists():  # the server may have pruned it since: then only the image is compared
            assert local.path.read_bytes() == server_copy.read_bytes()
        assert follower.log.log.log_start_offset == snapshot.offset
    images_equal(tmp_path / "observer", server.data_dir)


def test_long_poll_fetch_returns_when_a_mutation_commits(server_factory, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    server: KstewardServer = server_factory("server").start()
    with following(server, tmp_path / "observer") as follower:
        follower.catch_up()
        end = follower.log.log.next_offset
        parked = follower.send(max_wait_ms=100_000)  # far longer than the test: only a commit answers it
        upsert_scram(server, ["carol"])
        actions = follower.receive(parked)
        appended = [a for a in actions if isinstance(a, AppendBatches)]
        assert appended and appended[0].first_offset == end
        assert follower.observer.high_watermark == follower.log.log.next_offset > end


def test_fetch_needs_cluster_action_on_the_controller_listener(server_factory, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    server: KstewardServer = server_factory("sasl").start()
    with connect((HOST, server.controller_port)) as conn:
        served = {int(k.api_key): (int(k.min_version), int(k.max_version)) for k in conn.api_versions().body.api_keys}
        assert served[ApiKey.FETCH] == (4, 18) and served[ApiKey.FETCH_SNAPSHOT] == (0, 1)
    with connect(server.address) as conn:
        conn.sasl_plain("admin", "admin-secret")
        client = {int(k.api_key) for k in conn.api_versions().body.api_keys}
        assert ApiKey.FETCH not in client and ApiKey.FETCH_SNAPSHOT not in client
    with following(server, tmp_path / "observer") as follower:
        # The controller listener is PLAINTEXT: the fetcher is User:ANONYMOUS, which has no ACL.
        api_key, version, body = follower.observer.next_request(follower.log.view)
        refused = follower.conn.request(api_key, version, dataclasses.asdict(body)).body
        assert refused.error_code == ErrorCode.cluster_authorization_failed and refused.responses == ()
        snapshot_body = {"replica_id": OBSERVER_ID, "max_bytes": 1024, "topics": [{"name": "__cluster_metadata",
                         "partitions": [{"partition": 0, "current_leader_epoch": 1, "position": 0,
                                         "snapshot_id": {"end_offset": 1, "epoch": 1}}]}]}  # fmt: skip
        snap = follower.conn.request(ApiKey.FETCH_SNAPSHOT, 1, snapshot_body).body
        assert snap.error_code == ErrorCode.cluster_authorization_failed
        with connect(server.address) as conn:
            conn.sasl_plain("admin", "admin-secret")
            grant = {"creations": [{"resource_type": 4, "resource_name": "kafka-cluster", "resource_pattern_type": 3,
                                    "principal": "User:ANONYMOUS", "host": "*", "operation": 9,
                                    "permission_type": 3}]}  # fmt: skip
            assert [int(r.error_code) for r in conn.request(ApiKey.CREATE_ACLS, 3, grant).body.results] == [0]
        follower.catch_up()
        assert follower.log.log.next_offset > 0
