"""A node the others refuse stops at once with exit status 1, as Kafka's does (docs/raft.md, "A node the others
refuse").

Kafka's Raft client throws when a peer answers CLUSTER_AUTHORIZATION_FAILED (``KafkaRaftClient.handleTopLevelError``),
and its raft manager's fault handler halts the process, on a controller and on a broker alike
(``SharedServer.raftManagerFaultHandler``). Retrying cannot help: the peer refused this node's principal. Before,
a ksteward voter logged a traceback for every refused answer and kept asking, and a broker shut down cleanly with
exit status 0, which a supervisor reads as "stopped on purpose".
"""

from __future__ import annotations

from pathlib import Path

from harness import Cluster, ClusterNode, wait_for
from rawkafka import connect

from ksteward.protocol.apis import ApiKey

CLUSTER_RESOURCE = {"resource_type": 4, "resource_name": "kafka-cluster", "resource_pattern_type": 3}
ALLOW, ALTER, CLUSTER_ACTION = 3, 7, 9


def cluster_acl(operation: int) -> dict[str, object]:
    """An ALLOW ``operation`` binding for User:ANONYMOUS (every node and this test connect as it) on the cluster."""
    return {**CLUSTER_RESOURCE, "principal": "User:ANONYMOUS", "host": "*", "operation": operation,
            "permission_type": ALLOW}  # fmt: skip


def exited(nodes: list[ClusterNode]) -> list[ClusterNode]:
    return [node for node in nodes if node.proc is not None and node.proc.poll() is not None]


def test_voters_refused_cluster_action_stop_instead_of_asking_again(tmp_path: Path) -> None:
    """No voter may take part (ANONYMOUS is not a super user and no ACL grants it CLUSTER_ACTION): the first pre-vote
    each one gets an answer to is refused. A voter whose peers have all stopped gets no answer at all, so at least
    two of the three stop."""
    cluster = Cluster(tmp_path, brokers=0, controllers=3, overrides={"super.users": "User:admin"})
    try:
        for node in cluster.controllers:
            node.spawn()
        wait_for(lambda: len(exited(cluster.controllers)) >= 2, 60.0, "two voters stopped")
        for node in exited(cluster.controllers):
            assert node.wait_exit() == 1, node.log_tail()
            log = node.log_text()
            assert "fatal: a peer refused this voter's VOTE request" in log, node.log_tail()
            assert "refused this node: CLUSTER_AUTHORIZATION_FAILED" in log, node.log_tail()
            assert "raft: handling the answer" not in log, node.log_tail()
    finally:
        cluster.kill()


def test_a_broker_whose_cluster_action_is_revoked_stops_with_status_1(tmp_path: Path) -> None:
    """With ``allow.everyone.if.no.acl.found``, ANONYMOUS may do anything until the cluster resource has ACLs. The
    test grants it ALTER and CLUSTER_ACTION there, then deletes the CLUSTER_ACTION binding: the broker's next
    metadata Fetch is refused, and it stops. The controller, a single voter with no peer to ask, stays up."""
    overrides = {"super.users": "User:admin", "allow.everyone.if.no.acl.found": "true"}
    cluster = Cluster(tmp_path, brokers=1, overrides=overrides).start()
    controller, broker = cluster.controller, cluster.brokers[0]
    try:
        with connect(controller.address) as conn:
            grants = [cluster_acl(ALTER), cluster_acl(CLUSTER_ACTION)]
            created = conn.request(ApiKey.CREATE_ACLS, 3, {"creations": grants})
            assert [int(r.error_code) for r in created.body.results] == [0, 0], created.body
            revoke = {"resource_type_filter": 4, "resource_name_filter": "kafka-cluster", "pattern_type_filter": 3,
                      "principal_filter": "User:ANONYMOUS", "host_filter": "*", "operation": CLUSTER_ACTION,
                      "permission_type": ALLOW}  # fmt: skip
            deleted = conn.request(ApiKey.DELETE_ACLS, 3, {"filters": [revoke]})
            assert int(deleted.body.filter_results[0].error_code) == 0, deleted.body
            assert len(deleted.body.filter_results[0].matching_acls) == 1, deleted.body
        assert broker.wait_exit(60.0) == 1, broker.log_tail()
        log = broker.log_text()
        assert "fatal: this broker cannot follow the metadata log" in log, broker.log_tail()
        assert "CLUSTER_AUTHORIZATION_FAILED" in log, broker.log_tail()
        assert controller.running
    finally:
        cluster.kill()
