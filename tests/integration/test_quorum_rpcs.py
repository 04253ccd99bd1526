"""Vote (52), BeginQuorumEpoch (53) and EndQuorumEpoch (54) on the controller listener (issue 18): served there
only, and authorized with CLUSTER_ACTION on the cluster, as Kafka's ``ControllerApis`` does.

The SASL template's controller listener is PLAINTEXT, where the caller is User:ANONYMOUS with no ACL: every
Raft RPC is refused with top-level CLUSTER_AUTHORIZATION_FAILED until ANONYMOUS is granted CLUSTER_ACTION. A
single controller has no quorum to elect: then it answers BROKER_NOT_AVAILABLE, which a Raft sender backs off on.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from harness import HOST, KstewardServer
from kio.schema.errors import ErrorCode
from rawkafka import connect

from ksteward.protocol.apis import ApiKey
from ksteward.raft.messages import begin_quorum_epoch_request, end_quorum_epoch_request, vote_request

RAFT_APIS = (ApiKey.VOTE, ApiKey.BEGIN_QUORUM_EPOCH, ApiKey.END_QUORUM_EPOCH)


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
    with connect(server.address) as conn:
        conn.sasl_plain("admin", "admin-secret")
        grant = {"creations": [{"resource_type": 4, "resource_name": "kafka-cluster", "resource_pattern_type": 3,
                                "principal": "User:ANONYMOUS", "host": "*", "operation": 9,
                                "permission_type": 3}]}  # fmt: skip
        assert [int(r.error_code) for r in conn.request(ApiKey.CREATE_ACLS, 3, grant).body.results] == [0]
    assert answers() == [ErrorCode.broker_not_available] * 3  # authorized; a single controller elects itself
