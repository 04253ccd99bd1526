"""The controller's leader epoch across restarts, on real processes (docs/raft.md, "The leader's epoch").

Each start of the single controller voter leads in max(quorum-state epoch, the log's last epoch) + 1, and
begins the epoch with a LeaderChangeMessage control batch. Brokers that were following an older epoch are
fenced (FENCED_LEADER_EPOCH), take the new epoch from the response's CurrentLeader and carry on; a fetch
whose last fetched epoch diverges is told where to truncate (DivergingEpoch).
"""

from __future__ import annotations

import json
import logging
import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from harness import HOST, Cluster, ClusterNode, wait_for
from kio.schema.errors import ErrorCode
from kio.static.primitive import i8
from rawkafka import connect
from test_cluster import acl_names, create_topic_acl

from ksteward.metadata.batch import iter_batches
from ksteward.metadata.log import MetadataLog
from ksteward.metadata.records import AccessControlEntryRecord, encode_record
from ksteward.protocol.apis import ApiKey
from ksteward.raft import METADATA_TOPIC_ID

LOGGER = logging.getLogger("test.cluster_epochs")


def raw_fetch(controller: ClusterNode, *, leader_epoch: int, offset: int = 0, last_epoch: int = 0) -> Any:
    """One Fetch v17 of ``__cluster_metadata-0`` as a tool with no node id (replica -1), answered at once."""
    partition = {"partition": 0, "current_leader_epoch": leader_epoch, "fetch_offset": offset,
                 "last_fetched_epoch": last_epoch, "log_start_offset": -1, "partition_max_bytes": 0}  # fmt: skip
    body = {
        "cluster_id": controller.cluster_id_value,
        "replica_state": {"replica_id": -1, "replica_epoch": -1},
        "max_wait": timedelta(0),
        "min_bytes": 0,
        "max_bytes": 8 << 20,
        "isolation_level": 0,
        "session_id": 0,
        "session_epoch": -1,
        "topics": [{"topic_id": METADATA_TOPIC_ID, "partitions": [partition]}],
        "forgotten_topics_data": [],
        "rack_id": "",
    }
    with connect((HOST, controller.controller_port)) as conn:
        response = conn.request(ApiKey.FETCH, 17, body).body
    assert int(response.error_code) == 0, response
    return response.responses[0].partitions[0]


def leader_epoch(controller: ClusterNode) -> int:
    """The epoch the controller leads in, from the CurrentLeader of a Fetch that claims epoch 0."""
    data = raw_fetch(controller, leader_epoch=0)
    assert data.error_code == ErrorCode.fenced_leader_epoch and data.high_watermark == -1
    assert data.current_leader.leader_id == 1
    return int(data.current_leader.leader_epoch)


def quorum_state(node: ClusterNode) -> dict[str, Any]:
    path = node.data_dir / "__cluster_metadata-0" / "quorum-state"
    return dict(json.loads(path.read_text()))


def epoch_starts(node: ClusterNode) -> list[tuple[int, int]]:
    """(epoch, first offset) of each epoch in the node's log (read-only: the node may be running)."""
    with MetadataLog.open(node.data_dir, logger=LOGGER, read_only=True) as log:
        return log.epoch_history.entries()


def test_each_controller_restart_leads_a_new_epoch_and_brokers_keep_forwarding(cluster: Cluster) -> None:
    first, second = cluster.brokers
    controller = cluster.controller
    assert leader_epoch(controller) == 1
    assert quorum_state(controller) | {"currentVoters": None} == {
        "clusterId": "", "leaderId": 1, "leaderEpoch": 1, "votedId": 1, "appliedOffset": 0, "currentVoters": None,
        "data_version": 0,
    }  # fmt: skip
    create_topic_acl(first, "epoch-1")
    controller.restart()  # a clean stop (SIGTERM, final snapshot)
    assert leader_epoch(controller) == 2 and quorum_state(controller)["leaderEpoch"] == 2
    create_topic_acl(first, "epoch-2")  # forwarded by a broker that was following epoch 1
    wait_for(lambda: acl_names(second) == {"epoch-1", "epoch-2"}, 20.0, "epoch 2's ACL on the other broker")
    controller.restart(hard=True)  # a crash
    assert leader_epoch(controller) == 3
    create_topic_acl(second, "epoch-3")
    wait_for(lambda: acl_names(first) == {"epoch-1", "epoch-2", "epoch-3"}, 20.0, "every ACL on the first broker")
    assert "leading the metadata log in epoch 3" in controller.run_log()
    for broker in cluster.brokers:
        wait_for(lambda b=broker: "metadata leader is node 1, epoch 3" in b.log_text(), 20.0, f"{broker.name} in 3")
    # Every epoch starts with its LeaderChange control batch, on the controller and, replicated, on the brokers.
    starts = epoch_starts(controller)
    assert [epoch for epoch, _ in starts] == [1, 2, 3]
    with MetadataLog.open(controller.data_dir, logger=LOGGER, read_only=True) as log:
        for epoch, offset in starts:
            batch = next(iter_batches(log.read_raw(offset, 1)))
            assert (batch.base_offset, batch.leader_epoch, batch.is_control) == (offset, epoch, True)
    wait_for(lambda: epoch_starts(first)[: len(starts)] == starts, 20.0, "the broker's copy of the epochs")


def test_a_broker_killed_before_a_controller_restart_follows_the_new_epoch(cluster: Cluster) -> None:
    first, second = cluster.brokers
    create_topic_acl(cluster.controller, "before")
    wait_for(lambda: "before" in acl_names(second), 20.0, "the second broker to see the first ACL")
    second.kill()
    create_topic_acl(first, "while-down")
    cluster.controller.restart(hard=True)
    cluster.controller.restart()
    assert leader_epoch(cluster.controller) == 3
    create_topic_acl(first, "after-restarts")
    second.spawn()  # its log ends in epoch 1; its first Fetch (epoch 0) is fenced and names epoch 3
    second.wait_ready()
    assert "resuming the metadata log at offset" in second.run_log()
    wait_for(lambda: acl_names(second) == {"before", "while-down", "after-restarts"}, 20.0, "the broker to catch up")
    assert "metadata leader is node 1, epoch 3" in second.run_log()
    create_topic_acl(second, "through-the-restarted-broker")
    wait_for(lambda: "through-the-restarted-broker" in acl_names(first), 20.0, "the forwarded ACL on the other broker")


def test_an_old_epoch_is_fenced_and_a_diverging_log_is_told_where_to_truncate(cluster: Cluster) -> None:
    controller = cluster.controller
    create_topic_acl(controller, "epoch-1")
    controller.restart()
    [(_, _), (epoch, start)] = epoch_starts(controller)
    assert epoch == 2
    fenced = raw_fetch(controller, leader_epoch=1, offset=start, last_epoch=1)
    assert fenced.error_code == ErrorCode.fenced_leader_epoch
    assert (fenced.current_leader.leader_id, fenced.current_leader.leader_epoch) == (1, 2)
    # A log that holds epoch-1 records past where epoch 1 ended on the leader: truncate to that end.
    diverging = raw_fetch(controller, leader_epoch=2, offset=start + 5, last_epoch=1)
    assert diverging.error_code == ErrorCode.none and not diverging.records
    assert (diverging.diverging_epoch.epoch, diverging.diverging_epoch.end_offset) == (1, start)
    # At the end of epoch 1 the fetch is valid: the next batch is epoch 2's LeaderChange control batch.
    valid = raw_fetch(controller, leader_epoch=2, offset=start, last_epoch=1)
    assert valid.error_code == ErrorCode.none and valid.diverging_epoch.epoch == -1
    batch = next(iter_batches(bytes(valid.records)))
    assert (batch.base_offset, batch.leader_epoch, batch.is_control) == (start, 2, True)
    assert valid.high_watermark > start  # the high watermark covers a record of the current epoch


def _imported_acl(name: str) -> bytes:
    return encode_record(AccessControlEntryRecord(id=uuid.uuid4(), resource_type=i8(2), resource_name=name,
                         pattern_type=i8(3), principal="User:alice", host="*", operation=i8(3),
                         permission_type=i8(3)))  # fmt: skip


def test_a_controller_on_a_log_of_epoch_5_leads_in_6_and_serves_fetchers(tmp_path: Path) -> None:
    made = Cluster(tmp_path, brokers=1)
    try:
        controller, broker = made.controller.start(), made.brokers[0]
        create_topic_acl(controller, "written-in-1")
        controller.stop()
        # A restored or imported log whose last batches were written in epoch 5 (quorum-state still says 1).
        with MetadataLog.open(controller.data_dir, logger=LOGGER) as log:
            log.append([_imported_acl("imported-in-5")], timestamp_ms=1, leader_epoch=5)
            log.flush()
        controller.start()
        assert leader_epoch(controller) == 6 and quorum_state(controller)["leaderEpoch"] == 6
        broker.start()  # an empty broker: it fetches epochs 1, 5 and 6
        wait_for(lambda: acl_names(broker) == {"written-in-1", "imported-in-5"}, 20.0, "the broker to catch up")
        create_topic_acl(broker, "forwarded-in-6")
        wait_for(lambda: "forwarded-in-6" in acl_names(broker), 20.0, "the forwarded ACL")
        assert [e for e, _ in epoch_starts(controller)] == [1, 5, 6]
    finally:
        made.kill()


@pytest.mark.parametrize("content", [b"", b'{"leaderId":1,"leaderEp', b"\x00\xff" * 64])
def test_a_corrupt_quorum_state_file_stops_the_controller_with_one_clear_line(tmp_path: Path, content: bytes) -> None:
    made = Cluster(tmp_path, brokers=0)
    controller = made.controller
    try:
        controller.start()
        controller.stop()
        path = controller.data_dir / "__cluster_metadata-0" / "quorum-state"
        path.write_bytes(content)
        rc, text = controller.run_to_exit()
    finally:
        made.kill()
    assert rc == 1
    assert f"ksteward: cannot start: {path} is not a line of JSON" in text
    assert "Traceback" not in text
    assert path.read_bytes() == content  # left for the operator to look at
