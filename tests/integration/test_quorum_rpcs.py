"""Vote (52), BeginQuorumEpoch (53) and EndQuorumEpoch (54) on the controller listener (issue 18): served there
only, and authorized with CLUSTER_ACTION on the cluster, as Kafka's ``ControllerApis`` does. AddRaftVoter (80) and
RemoveRaftVoter (81), on both listeners, need ALTER on the cluster.

The SASL template's controller listener is PLAINTEXT, where the caller is User:ANONYMOUS with no ACL: every
Raft RPC is refused with top-level CLUSTER_AUTHORIZATION_FAILED until ANONYMOUS is granted CLUSTER_ACTION. A
single controller has no quorum to elect: then it answers BROKER_NOT_AVAILABLE, which a Raft sender backs off on.
"""

from __future__ import annotations

import dataclasses
import datetime
import uuid
from pathlib import Path
from typing import Any

from harness import HOST, KstewardServer, ksteward_cli, read_meta_properties
from kio.schema.errors import ErrorCode
from rawkafka import connect

from ksteward.protocol.apis import ApiKey
from ksteward.raft.messages import begin_quorum_epoch_request, end_quorum_epoch_request, vote_request

RAFT_APIS = (ApiKey.VOTE, ApiKey.BEGIN_QUORUM_EPOCH, ApiKey.END_QUORUM_EPOCH)


def grant_anonymous(server: KstewardServer, operation: int) -> None:
    """Allow User:ANONYMOUS (the PLAINTEXT controller listener's caller) ``operation`` on the cluster."""
    with connect(server.address) as conn:
        conn.sasl_plain("admin", "admin-secret")
        grant = {"creations": [{"resource_type": 4, "resource_name": "kafka-cluster", "resource_pattern_type": 3,
                                "principal": "User:ANONYMOUS", "host": "*", "operation": operation,
                                "permission_type": 3}]}  # fmt: skip
        assert [int(r.error_code) for r in conn.request(ApiKey.CREATE_ACLS, 3, grant).body.results] == [0]


def _requests(cluster_id: str) -> list[tuple[int, int, Any]]:
    endpoints = {"CONTROLLER": (HOST, 1)}
    vote = vote_request(2, cluster_id=cluster_id, voter_id=1, epoch=5, replica_id=7, last_epoch=0, last_offset=0,
                        pre_vote=True)  # fmt: skip
    begin = begin_quorum_epoch_request(1, cluster_id=cluster_id, voter_id=1, leader_id=7, epoch=5, endpoints=endpoints)
    end = end_quorum_epoch_request(1, cluster_id=cluster_id, leader_id=7, epoch=5, preferred=[1], endpoints=endpoints)
    return [(ApiKey.VOTE, 2, vote), (ApiKey.BEGIN_QUORUM_EPOCH, 1, begin), (ApiKey.END_QUORUM_EPOCH, 1, end)]


def test_raft_rpcs_need_cluster_action_on_the_controller_listener(server_factory, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    server: KstewardServer = server_factory("sasl").start()
    with connect((HOST, server.controller_port)) as conn:
        served = {int(k.api_key): (int(k.min_version), int(k.max_version)) for k in conn.api_versions().body.api_keys}
        assert [served.get(k) for k in RAFT_APIS] == [(0, 2), (0, 1), (0, 1)]
    with connect(server.address) as conn:
        conn.sasl_plain("admin", "admin-secret")
        client = {int(k.api_key) for k in conn.api_versions().body.api_keys}
        assert not client & set(RAFT_APIS)  # a client listener never serves them

    def answers() -> list[int]:
        with connect((HOST, server.controller_port)) as conn:
            return [
                int(conn.request(key, version, dataclasses.asdict(body)).body.error_code)
                for key, version, body in _requests(server.cluster_id)
            ]

    assert answers() == [ErrorCode.cluster_authorization_failed] * 3
    grant_anonymous(server, 9)  # CLUSTER_ACTION
    assert answers() == [ErrorCode.broker_not_available] * 3  # authorized; a single controller elects itself


def _voter_change_answers(conn: Any, cluster_id: str | None, port: int) -> list[tuple[int, str | None]]:
    directory = uuid.UUID(int=4)
    listeners = [{"name": "CONTROLLER", "host": HOST, "port": port}]
    add = {"cluster_id": cluster_id, "timeout": datetime.timedelta(seconds=30), "voter_id": 2,
           "voter_directory_id": directory, "listeners": listeners}  # fmt: skip
    remove = {"cluster_id": cluster_id, "voter_id": 1, "voter_directory_id": directory}
    bodies = [
        conn.request(ApiKey.ADD_RAFT_VOTER, 1, {**add, "ack_when_committed": True}).body,
        conn.request(ApiKey.ADD_RAFT_VOTER, 0, add).body,
        conn.request(ApiKey.REMOVE_RAFT_VOTER, 0, remove).body,
    ]
    return [(int(b.error_code), b.error_message) for b in bodies]


def test_voter_changes_need_alter_and_a_static_quorum_refuses_them(server_factory) -> None:  # type: ignore[no-untyped-def]
    """AddRaftVoter (80) and RemoveRaftVoter (81), KIP-853: served on both listeners, authorized with ALTER on the
    cluster (``ControllerApis.handleAddRaftVoter``), and refused with UNSUPPORTED_VERSION by a quorum at
    kraft.version 0, with Kafka's message; ``metadata quorum add-controller`` / ``remove-controller`` print it."""
    server: KstewardServer = server_factory("sasl").start()
    adding = "Cluster doesn't support adding voter because the kraft.version feature is 0"
    removing = "Cluster doesn't support removing voter because the kraft.version feature is 0"
    with connect((HOST, server.controller_port)) as conn:
        served = {int(k.api_key): (int(k.min_version), int(k.max_version)) for k in conn.api_versions().body.api_keys}
        assert (served.get(80), served.get(81), served.get(82)) == ((0, 1), (0, 0), None)
        denied = (int(ErrorCode.cluster_authorization_failed), "Cluster authorization failed.")
        assert _voter_change_answers(conn, server.cluster_id, server.controller_port) == [denied] * 3
    with connect(server.address) as conn:
        conn.sasl_plain("admin", "admin-secret")
        served = {int(k.api_key): (int(k.min_version), int(k.max_version)) for k in conn.api_versions().body.api_keys}
        assert (served.get(80), served.get(81), served.get(82)) == ((0, 1), (0, 0), None)
        refused = int(ErrorCode.unsupported_version)
        expected = [(refused, adding), (refused, adding), (refused, removing)]
        assert _voter_change_answers(conn, server.cluster_id, server.controller_port) == expected
        assert _voter_change_answers(conn, None, server.controller_port) == expected  # no cluster id: accepted
        mismatch = f'The given id "other" doesn\'t match the cluster id "{server.cluster_id}"'
        assert _voter_change_answers(conn, "other", server.controller_port) == [
            (int(ErrorCode.inconsistent_cluster_id), mismatch)] * 3  # fmt: skip

    jaas = 'org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret";'
    admin = server.workdir / "admin.properties"
    admin.write_text(f"security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\nsasl.jaas.config={jaas}\n")
    directory = read_meta_properties(server.data_dir)["directory.id"]
    removed = ksteward_cli("metadata", "quorum", "--bootstrap-server", server.bootstrap, "--command-config",
                           str(admin), "remove-controller", "--controller-id", "1", "--controller-directory-id",
                           directory)  # fmt: skip
    assert removed.returncode == 1 and removed.stdout == ""
    assert removed.stderr.strip() == f"ksteward metadata quorum remove-controller: UNSUPPORTED_VERSION: {removing}"

    # add-controller reads the controller's own server properties: node.id, meta.properties' directory.id and the
    # controller listener. Sent to the controller listener, where ANONYMOUS needs ALTER on the cluster first.
    controller = server.workdir / "controller.properties"
    controller.write_text(
        "process.roles=broker,controller\nnode.id=1\ncontroller.listener.names=CONTROLLER\n"
        f"listeners=PLAINTEXT://{HOST}:{server.port},CONTROLLER://{HOST}:{server.controller_port}\n"
        f"listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT\nmetadata.log.dir={server.data_dir}\n"
    )
    controller_flags = ("metadata", "quorum", "--bootstrap-controller", f"{HOST}:{server.controller_port}",
                        "--command-config", str(controller), "add-controller")  # fmt: skip
    dry = ksteward_cli(*controller_flags, "--dry-run")
    endpoint = f"CONTROLLER://{HOST}:{server.controller_port}"
    assert dry.returncode == 0, dry.stderr
    assert dry.stdout == f"DRY RUN of adding controller 1 with directory id {directory} and endpoints: {endpoint}\n"
    before_grant = ksteward_cli(*controller_flags)
    assert before_grant.returncode == 1
    assert before_grant.stderr.strip().endswith("CLUSTER_AUTHORIZATION_FAILED: Cluster authorization failed.")
    grant_anonymous(server, 7)  # ALTER
    added = ksteward_cli(*controller_flags)
    assert added.returncode == 1 and added.stdout == ""
    assert added.stderr.strip() == f"ksteward metadata quorum add-controller: UNSUPPORTED_VERSION: {adding}"
