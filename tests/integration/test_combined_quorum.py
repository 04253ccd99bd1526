"""Three combined nodes (``process.roles=broker,controller``) in one quorum: Kafka's combined mode
(``server.combined_quorum``), as real processes on loopback, driven by real clients.

1. Reads and forwarded writes on every node, a SIGKILL of the leader, its restart, and SIGTERM's controlled
   shutdown and resignation.
2. Under the forwarded mutation stream of ``test_cluster_faults.MutationStream`` (through the two nodes that do
   not lead), the leader, voter and broker in one process, is SIGKILLed while a call is in flight, after a
   number of acknowledged calls the seed draws, and restarted: every acknowledged mutation is in the new leader's
   log exactly once, every other at most once, and every node converges to that log. Once in ``make test``;
   ``KSTEWARD_FAULT_CYCLES=N`` kills in turn (``make test-slow``: 20); ``KSTEWARD_FAULT_SEED`` replays them.
3. The CLI's confluent-kafka client goes on while a dead node is still unfenced (docs/cluster.md, "librdkafka and
   a dead combined node").
"""

from __future__ import annotations

import random
import time
from collections import Counter
from pathlib import Path

from clients import Auth, confluent_admin, kafka_python_admin
from cluster_helpers import acl_names, create_topic_acl, metadata_brokers
from harness import FAULT_CYCLES, Cluster, ClusterNode, fault_rng, ksteward_cli, wait_for
from test_cluster_faults import (
    STREAM_THREADS,
    Call,
    MutationStream,
    assert_converges,
    assert_each_mutation_applied_at_most_once,
    broker_state,
    cluster_state_from_log,
    owned_topic,
    segment_records,
)

from ksteward.cli.admin_common import METADATA_REFRESH_MS


def _others(cluster: Cluster, node: ClusterNode) -> list[ClusterNode]:
    return [n for n in cluster.controllers if n is not node]


def _bootstrap(nodes: list[ClusterNode]) -> str:
    return ",".join(n.bootstrap for n in nodes)


def test_combined_voters_serve_clients_forward_to_the_leader_and_outlive_it(tmp_path: Path) -> None:
    from confluent_kafka.admin import (
        AclBinding,
        AclOperation,
        AclPermissionType,
        NewTopic,
        ResourcePatternType,
        ResourceType,
    )

    cluster = Cluster(tmp_path, brokers=0, controllers=3, combined=True).start()
    try:
        everyone = {1, 2, 3}
        leader = cluster.wait_for_leader()
        # Each node's broker registered with the active controller and was unfenced: every node lists all three.
        for node in cluster.controllers:
            wait_for(lambda node=node: metadata_brokers(node) == everyone, 20.0, f"{node.name} lists 3 brokers")

        # Writes sent to a node that does not lead are forwarded to the one that does (confluent-kafka).
        standbys = _others(cluster, leader)
        admin = confluent_admin(standbys[0].bootstrap, Auth())
        admin.create_topics([NewTopic("orders", 3, 3)])["orders"].result(15)
        binding = AclBinding(ResourceType.TOPIC, "orders", ResourcePatternType.LITERAL, "User:alice", "*",
                             AclOperation.READ, AclPermissionType.ALLOW)  # fmt: skip
        admin.create_acls([binding])[binding].result(15)
        # Every node answers reads from its own committed image (kafka-python).
        for node in cluster.controllers:
            wait_for(lambda node=node: "orders" in acl_names(node), 20.0, f"{node.name} has the ACL")
            reader = kafka_python_admin(node.bootstrap, Auth())
            try:
                wait_for(lambda reader=reader: "orders" in reader.list_topics(), 20.0, f"{node.name} lists orders")
            finally:
                reader.close()

        # The active controller's process dies: the other two elect a leader, fence the dead broker and take writes.
        leader.kill()
        new_leader = cluster.wait_for_leader(other_than=leader)
        survivors = _others(cluster, leader)
        create_topic_acl(next(n for n in survivors if n is not new_leader), "after-failover")
        for node in survivors:
            wait_for(lambda node=node: metadata_brokers(node) == everyone - {leader.cluster_node_id}, 20.0,
                     f"{node.name} fenced broker {leader.cluster_node_id}")  # fmt: skip
            wait_for(lambda node=node: "after-failover" in acl_names(node), 20.0, f"{node.name} has the new ACL")

        # The killed node comes back as a voter and a broker, with everything committed while it was away.
        leader.restart()
        wait_for(lambda: metadata_brokers(leader) == everyone, 20.0, "the restarted node lists 3 brokers")
        wait_for(lambda: "after-failover" in acl_names(leader), 20.0, "the restarted node has the new ACL")
        topics = confluent_admin(_bootstrap(cluster.controllers), Auth()).list_topics(timeout=10).topics
        assert len(topics["orders"].partitions) == 3

        # SIGTERM on the active controller: its broker shuts down through the controller, then it resigns.
        stopping = cluster.wait_for_leader()
        mark = stopping.log_size()
        assert stopping.stop() == 0
        log = stopping.log_text()[mark:]
        assert "controlled shutdown complete" in log, log[-3000:]
        assert "resigns as leader" in log, log[-3000:]
        cluster.wait_for_leader(other_than=stopping)
        rest = _others(cluster, stopping)
        create_topic_acl(rest[0], "after-resignation")
        wait_for(lambda: "after-resignation" in acl_names(rest[1]), 20.0, "the last node has the ACL")
    finally:
        cluster.kill()


def test_killing_the_combined_leader_under_forwarded_writes_loses_no_acknowledged_write(tmp_path: Path) -> None:
    from confluent_kafka.admin import NewTopic

    rng = fault_rng("combined quorum failover")
    # Kafka's default session (9 s): the standbys' brokers keep theirs across the failover.
    sessions = {"broker.session.timeout.ms": "9000", "broker.heartbeat.interval.ms": "500"}
    cluster = Cluster(tmp_path, brokers=0, controllers=3, combined=True, overrides=sessions).start()
    try:
        owned = [owned_topic(t) for t in range(STREAM_THREADS)]
        admin = confluent_admin(_bootstrap(cluster.controllers), Auth())
        for _name, future in admin.create_topics([NewTopic(t, 1, 3) for t in owned]).items():
            future.result(30)
        calls = [call for cycle in range(FAULT_CYCLES) for call in _kill_the_leader(cluster, rng, cycle)]
        for node in cluster.controllers:  # FIFO forwarding: every request a node still held is settled after this
            create_topic_acl(node, f"barrier-{node.name}")
        records = segment_records(cluster.wait_for_leader())
        tally = assert_each_mutation_applied_at_most_once(calls, records)
        print(f"{len(calls)} calls over {FAULT_CYCLES} kill(s): {dict(tally)}")
        errors = Counter((c.kind, c.error) for c in calls if c.outcome == "error")
        print(f"errors: {dict(errors)}")
        # A retried CreateTopics whose first attempt committed is the one error forwarding's retries may produce.
        # The killed process is a broker too: a call a client had sent to it (kafka-python sends CreateAcls to its
        # least loaded broker) fails in the client with a lost connection, an unknown outcome like a timeout.
        lost = {
            ("acl", "KafkaConnectionError"),
            ("acl", "_TRANSPORT"),
            ("topic", "_TRANSPORT"),
            ("config", "_TRANSPORT"),
        }
        assert set(errors) <= {("topic", "TOPIC_ALREADY_EXISTS"), *lost}, errors
        expected = cluster_state_from_log(records, owned)
        for node in cluster.controllers:
            assert_converges(node, lambda node=node: broker_state(node, list(expected[2])), expected)
    finally:
        cluster.kill()


def test_the_cli_goes_on_while_a_dead_combined_node_is_still_unfenced(tmp_path: Path) -> None:
    """Metadata names a random unfenced broker as controller (Kafka's getRandomAliveBrokerId), and a combined node
    that died stays unfenced for its session (60 s here). librdkafka sends each admin request to that broker, so
    one ``ksteward topics --create`` in three would wait for the dead node until its timeout, unless the CLI's
    client refreshes its metadata and moves on to a live one."""
    cluster = Cluster(tmp_path, brokers=0, controllers=3, combined=True,
                      overrides={"broker.session.timeout.ms": "60000"}).start()  # fmt: skip
    try:
        leader = cluster.wait_for_leader()
        dead = _others(cluster, leader)[0]
        dead.kill()
        survivors = _others(cluster, dead)
        live = _bootstrap(survivors)
        for n in range(6):
            started = time.monotonic()
            created = ksteward_cli("topics", "--bootstrap-server", live, "--create", "--topic", f"after-kill-{n}",
                                   "--partitions", "1", "--replication-factor", "1", timeout=120.0)  # fmt: skip
            print(f"topics --create {n}: exit {created.returncode} after {time.monotonic() - started:.1f}s")
            assert created.returncode == 0, created.stderr
        assert dead.node_id in metadata_brokers(survivors[0])  # still unfenced: the case at hand
    finally:
        cluster.kill()


def _kill_the_leader(cluster: Cluster, rng: random.Random, cycle: int) -> list[Call]:
    """One SIGKILL of the combined leader under the stream (through the other two), mid-call; a new leader
    elected, the stream going on through it, and the killed node restarted."""
    leader = cluster.wait_for_leader()
    # librdkafka sends every admin request to the broker its last Metadata answer named controller: a random
    # unfenced broker in KRaft (Kafka's getRandomAliveBrokerId), here perhaps the node about to be killed. It
    # keeps that choice until its metadata is refreshed (topic.metadata.refresh.interval.ms, 5 minutes by
    # default), so a client that picked the killed node would wait for it to come back. The stream's clients
    # refresh as often as the CLI's: each answer draws again, and none names the dead node once it is fenced (its
    # session, 9 s, runs out).
    refresh = {"topic.metadata.refresh.interval.ms": METADATA_REFRESH_MS}
    stream = MutationStream(_others(cluster, leader), cycle, **refresh).start()
    try:
        after = rng.randint(3, 20)
        print(f"cycle {cycle}: kill -9 the combined leader {leader.name} after {after} acknowledged calls")
        wait_for(lambda: stream.count(lambda c: c.outcome == "ack") >= after and stream.in_flight(), 60.0,
                 f"{after} acknowledged calls")  # fmt: skip
        leader.kill()
        down = time.monotonic()
        cluster.wait_for_leader(30.0, other_than=leader)

        def acked_since_down(t: int) -> int:
            return stream.count(lambda c: c.thread == t and c.started > down and c.outcome == "ack")

        wait_for(lambda: all(acked_since_down(t) >= 2 for t in range(STREAM_THREADS)), 60.0, "the stream goes on")
        leader.spawn()
        leader.wait_ready()
    finally:
        stream.finish()
    return stream.calls
