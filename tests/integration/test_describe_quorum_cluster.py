"""DescribeQuorum (api 55) on a real cluster (issue 18): the controller answers on its listener, a broker
forwards it, DESCRIBE on the cluster is required, and ``ksteward metadata quorum describe`` prints it as
kafka-metadata-quorum.sh does (docs/cluster.md, "Describing the quorum")."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from harness import Cluster, ClusterNode, KstewardServer, ksteward_cli, wait_for
from kio.schema.errors import ErrorCode
from rawkafka import connect, describe_quorum

from ksteward.protocol.apis import ApiKey


def advertised(node: ClusterNode) -> tuple[int, int] | None:
    with connect(node.address) as conn:
        keys = {int(k.api_key): (int(k.min_version), int(k.max_version)) for k in conn.api_versions().body.api_keys}
    return keys.get(ApiKey.DESCRIBE_QUORUM)


def observers_fetched(body: Any) -> dict[int, tuple[int, int]]:
    """Each observer's (log end offset, last fetch time) in a leader's v1+ answer."""
    partition = body.topics[0].partitions[0]
    return {int(o.replica_id): (int(o.log_end_offset), int(o.last_fetch_timestamp)) for o in partition.observers}


def test_the_controller_describes_the_quorum_and_a_broker_forwards_it(cluster: Cluster) -> None:
    controller = cluster.controller
    assert advertised(controller) == (0, 2)
    assert all(advertised(b) == (0, 2) for b in cluster.brokers)
    with connect(controller.address) as conn:
        # Both brokers fetch the metadata log as observers: they appear once they fetched up to the end.
        wait_for(lambda: set(observers_fetched(describe_quorum(conn))) == {2, 3}, 20.0, "both brokers as observers")
        body = describe_quorum(conn)
        assert body.error_code == ErrorCode.none
        (partition,) = body.topics[0].partitions
        assert (partition.error_code, partition.leader_id) == (ErrorCode.none, 1)
        assert partition.leader_epoch >= 1 and partition.high_watermark > 0
        (voter,) = partition.current_voters
        assert voter.replica_id == 1 and voter.log_end_offset >= partition.high_watermark
        assert voter.last_fetch_timestamp == voter.last_caught_up_timestamp > 0  # "now", for the leader itself
        for end_offset, fetched_at in observers_fetched(body).values():
            assert 0 < end_offset <= voter.log_end_offset and fetched_at > 0
        nodes = [(n.node_id, [(lst.name, lst.host, int(lst.port)) for lst in n.listeners]) for n in body.nodes]
        assert nodes == [(1, [("CONTROLLER", "127.0.0.1", controller.port)])]
        v0 = describe_quorum(conn, 0).topics[0].partitions[0]
        assert (v0.leader_id, len(v0.current_voters)) == (1, 1)
        wrong = describe_quorum(conn, 2, [{"topic_name": "__cluster_metadata", "partitions": [{"partition_index": 1}]}])
        assert [p.error_code for p in wrong.topics[0].partitions] == [ErrorCode.unknown_topic_or_partition]
    with connect(cluster.brokers[0].address) as conn:  # forwarded to the controller in an Envelope
        forwarded = describe_quorum(conn)
        assert forwarded.error_code == ErrorCode.none
        assert forwarded.topics[0].partitions[0].leader_id == 1
        assert set(observers_fetched(forwarded)) == {2, 3}
        assert [n.node_id for n in forwarded.nodes] == [1]


def test_metadata_quorum_describe_prints_status_and_replication(cluster: Cluster) -> None:
    controller, broker = cluster.controller, cluster.brokers[0]
    with connect(controller.address) as conn:
        wait_for(lambda: set(observers_fetched(describe_quorum(conn))) == {2, 3}, 20.0, "both brokers as observers")
    status = ksteward_cli("metadata", "quorum", "--bootstrap-server", broker.bootstrap, "describe", "--status")
    assert status.returncode == 0, status.stderr
    lines = status.stdout.splitlines()
    assert lines[0] == f"ClusterId:              {cluster.cluster_id}"
    assert lines[1] == "LeaderId:               1"
    assert re.fullmatch(r"LeaderEpoch:            [1-9]\d*", lines[2])
    assert re.fullmatch(r"HighWatermark:          [1-9]\d*", lines[3])
    assert lines[4:6] == ["MaxFollowerLag:         0", "MaxFollowerLagTimeMs:   0"]
    endpoint = f"CONTROLLER://127.0.0.1:{controller.port}"
    assert lines[6] == f'CurrentVoters:          [{{"id": 1, "endpoints": ["{endpoint}"]}}]'
    assert lines[7] == 'CurrentObservers:       [{"id": 2}, {"id": 3}]'
    assert len(lines) == 8

    replication = ksteward_cli("metadata", "quorum", "--bootstrap-controller", controller.bootstrap,
                               "describe", "--replication")  # fmt: skip
    assert replication.returncode == 0, replication.stderr
    rows = [line.rstrip("\t").split("\t") for line in replication.stdout.splitlines()]
    assert [c.strip() for c in rows[0]] == ["NodeId", "DirectoryId", "LogEndOffset", "Lag", "LastFetchTimestamp",
                                            "LastCaughtUpTimestamp", "Status"]  # fmt: skip
    table = [[c.strip() for c in row] for row in rows[1:]]
    assert [(r[0], r[1], r[6]) for r in table] == [
        ("1", "AAAAAAAAAAAAAAAAAAAAAA", "Leader"),
        ("2", "AAAAAAAAAAAAAAAAAAAAAA", "Observer"),
        ("3", "AAAAAAAAAAAAAAAAAAAAAA", "Observer"),
    ]
    assert table[0][3] == "0" and int(table[0][2]) > 0
    assert all(int(r[4]) > 0 for r in table)  # every replica fetched; the leader reports "now"

    as_json = ksteward_cli("metadata", "quorum", "--bootstrap-server", broker.bootstrap, "describe", "--status",
                           "--output", "json")  # fmt: skip
    assert as_json.returncode == 0, as_json.stderr
    document = json.loads(as_json.stdout)
    assert (document["clusterId"], document["leaderId"]) == (cluster.cluster_id, 1)
    assert [o["id"] for o in document["currentObservers"]] == [2, 3]


def test_metadata_quorum_describe_fails_in_one_line_when_nothing_listens(tmp_path: Path) -> None:
    from harness import free_port

    result = ksteward_cli(
        "metadata", "quorum", "--bootstrap-server", f"127.0.0.1:{free_port()}", "describe", "--status"
    )
    assert result.returncode == 1
    assert result.stdout == ""
    assert len(result.stderr.strip().splitlines()) == 1 and "cannot connect" in result.stderr


JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="broker" '
        'password="broker-secret" user_broker="broker-secret" user_alice="alice-secret";')  # fmt: skip
SASL_CONTROLLER = {
    "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:SASL_PLAINTEXT",
    "sasl.enabled.mechanisms": "PLAIN",
    "sasl.mechanism.controller.protocol": "PLAIN",
    "listener.name.controller.plain.sasl.jaas.config": JAAS,
    "super.users": "User:broker",  # the brokers' login; clients (ANONYMOUS on the brokers, alice) are not
}


def grant_describe_cluster(controller: ClusterNode, principal: str) -> None:
    with connect(controller.address) as conn:
        assert int(conn.sasl_plain("broker", "broker-secret").body.error_code) == 0
        creation = {"resource_type": 4, "resource_name": "kafka-cluster", "resource_pattern_type": 3,
                    "principal": principal, "host": "*", "operation": 8, "permission_type": 3}  # fmt: skip
        body = conn.request(ApiKey.CREATE_ACLS, 3, {"creations": [creation]}).body
        assert [int(r.error_code) for r in body.results] == [0]


def test_describe_quorum_needs_describe_on_the_cluster(tmp_path: Path) -> None:
    made = Cluster(tmp_path, brokers=1, overrides=SASL_CONTROLLER)
    try:
        made.controller.start()
        made.brokers[0].start()
        controller, broker = made.controller, made.brokers[0]
        with connect(controller.address) as conn:
            assert int(conn.sasl_plain("alice", "alice-secret").body.error_code) == 0
            denied = describe_quorum(conn)
            assert (denied.error_code, denied.topics, denied.nodes) == (ErrorCode.cluster_authorization_failed, (), ())
        with connect(broker.address) as conn:  # forwarded, and run on the controller as the client, ANONYMOUS
            assert describe_quorum(conn).error_code == ErrorCode.cluster_authorization_failed
        refused = ksteward_cli("metadata", "quorum", "--bootstrap-server", broker.bootstrap, "describe", "--status")
        assert refused.returncode == 1
        assert (
            refused.stderr.strip()
            == "ksteward metadata quorum: CLUSTER_AUTHORIZATION_FAILED: Cluster authorization failed."
        )

        grant_describe_cluster(controller, "User:alice")
        grant_describe_cluster(controller, "User:ANONYMOUS")
        with connect(controller.address) as conn:
            assert int(conn.sasl_plain("alice", "alice-secret").body.error_code) == 0
            allowed = describe_quorum(conn)
            assert (allowed.error_code, allowed.topics[0].partitions[0].leader_id) == (ErrorCode.none, 1)
        with connect(broker.address) as conn:
            assert describe_quorum(conn).topics[0].partitions[0].error_code == ErrorCode.none
    finally:
        made.kill()


def test_a_combined_node_answers_on_its_client_listener(plaintext_server: KstewardServer) -> None:
    """``process.roles=broker,controller``: the client listener runs the controller's handler in-process."""
    with connect(plaintext_server.address) as conn:
        body = describe_quorum(conn)
    (partition,) = body.topics[0].partitions
    node_id = plaintext_server.node_id
    assert (body.error_code, partition.error_code, partition.leader_id) == (ErrorCode.none, ErrorCode.none, node_id)
    assert [int(v.replica_id) for v in partition.current_voters] == [node_id]
    assert partition.observers == ()
    assert [n.node_id for n in body.nodes] == [node_id]
