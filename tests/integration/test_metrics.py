"""The ``/metrics`` endpoint of a real node (docs/metrics.md): known traffic through a real client moves
Kafka-named counters by exactly that much, every role serves it, and a bad ``metrics.port`` stops the start
with one line."""

from __future__ import annotations

import math
import socket
import urllib.error
import urllib.request
from collections.abc import Iterator

import pytest
import rawkafka
from acl_clients import Acl, ClusterAuthorizationFailed, Filter, acl_client
from clients import Auth, confluent_admin
from harness import HOST, Cluster, KstewardServer, ServerFactory, free_port, wait_for
from kio.schema.errors import ErrorCode
from prometheus_client.parser import text_string_to_metric_families

from ksteward.protocol.apis import ApiKey

ADMIN = Auth("PLAIN", "admin", "admin-secret")
ALICE = Auth("PLAIN", "alice", "alice-secret")  # a known user with no ACL: every ACL API is denied to her
EVERYTHING: Filter = (None, None, None, None, None, None, None)
N_DESCRIBE, M_DENIED, K_CREATE = 7, 5, 3

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def scrape(port: int) -> Samples:
    """Every sample of ``/metrics``, parsed by prometheus-client's own text parser."""
    with urllib.request.urlopen(f"http://{HOST}:{port}/metrics", timeout=10) as response:
        assert response.status == 200
        text = response.read().decode()
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


def moved(before: Samples, after: Samples, name: str, **labels: str) -> float:
    return value(after, name, **labels) - value(before, name, **labels)


def names(samples: Samples) -> set[str]:
    return {name for name, _ in samples}


@pytest.fixture
def metrics_server(server_factory: ServerFactory) -> Iterator[KstewardServer]:
    port = free_port()
    server = server_factory("sasl", {"metrics.port": str(port)}, name="metrics").start()
    server.metrics_port = port  # type: ignore[attr-defined]
    yield server


def test_an_api_versions_request_above_the_served_versions_is_counted_with_its_error(
    metrics_server: KstewardServer,
) -> None:
    """KIP-511's answer is written by the connection itself, not a handler: it is still one request of
    ApiVersions v0 with UNSUPPORTED_VERSION, timed like the others."""
    port = metrics_server.metrics_port  # type: ignore[attr-defined]
    before = scrape(port)
    with rawkafka.connect(metrics_server.address) as conn:
        conn.send_frame(rawkafka.api_versions_v5_payload(correlation_id=7))
        response = rawkafka.decode_response(ApiKey.API_VERSIONS, 0, conn.read_frame())
        assert response.body.error_code == ErrorCode.unsupported_version
    after = scrape(port)
    requests = "kafka_network_requestmetrics_requests_total"
    assert moved(before, after, requests, request="ApiVersions", version="0") == 1
    errors = "kafka_network_requestmetrics_errors_total"
    assert moved(before, after, errors, request="ApiVersions", error="UNSUPPORTED_VERSION") == 1
    assert moved(before, after, "kafka_network_requestmetrics_totaltimems_count", request="ApiVersions") == 1


def test_known_traffic_moves_the_request_and_authorizer_counters_by_exactly_that(
    metrics_server: KstewardServer,
) -> None:
    port = metrics_server.metrics_port  # type: ignore[attr-defined]
    client = acl_client("confluent-kafka", metrics_server.bootstrap)
    before = scrape(port)
    for _ in range(N_DESCRIBE):
        client.describe(ADMIN, EVERYTHING)
    # kafka-python, as librdkafka reports DescribeAcls' top-level error as an empty listing
    denied_client = acl_client("kafka-python", metrics_server.bootstrap)
    for _ in range(M_DENIED):
        with pytest.raises(ClusterAuthorizationFailed):
            denied_client.describe(ALICE, EVERYTHING)
    for i in range(K_CREATE):
        acl: Acl = ("TOPIC", f"orders-{i}", "LITERAL", "User:bob", "*", "READ", "ALLOW")
        client.create(ADMIN, [acl])
    after = scrape(port)

    requests = "kafka_network_requestmetrics_requests_total"
    described = sum(
        after[key] - before.get(key, 0.0)
        for key in after
        if key[0] == requests and ("request", "DescribeAcls") in key[1]
    )
    assert described == N_DESCRIBE + M_DENIED
    versions = {dict(labels)["version"] for name, labels in after if name == requests
                and dict(labels).get("request") == "DescribeAcls"}  # fmt: skip
    assert versions and all(v.isdigit() for v in versions)
    errors = "kafka_network_requestmetrics_errors_total"
    assert moved(before, after, errors, request="DescribeAcls", error="NONE") == N_DESCRIBE
    assert moved(before, after, errors, request="DescribeAcls", error="CLUSTER_AUTHORIZATION_FAILED") == M_DENIED
    assert moved(before, after, errors, request="CreateAcls", error="NONE") == K_CREATE
    total = "kafka_network_requestmetrics_totaltimems_count"
    assert moved(before, after, total, request="DescribeAcls") == N_DESCRIBE + M_DENIED
    assert moved(before, after, total, request="CreateAcls") == K_CREATE
    assert moved(before, after, "kafka_network_requestmetrics_requestbytes_count", request="CreateAcls") == K_CREATE
    assert value(after, "kafka_network_requestmetrics_totaltimems", request="CreateAcls", quantile="0.99") > 0

    authorizer = "kafka_server_kafka_security_authorizer_metrics_"
    assert moved(before, after, authorizer + "authorization_denied_total") == M_DENIED
    assert moved(before, after, authorizer + "authorization_allowed_total") == N_DESCRIBE + K_CREATE
    assert value(after, authorizer + "acls_total_count") == K_CREATE
    assert value(after, authorizer + "authorization_denied_rate_per_minute") > 0

    assert value(after, "kafka_controller_kafkacontroller_activecontrollercount") == 1
    assert value(after, "kafka_controller_kafkacontroller_activebrokercount") == 1
    offset = value(after, "kafka_controller_kafkacontroller_lastappliedrecordoffset")
    assert offset >= K_CREATE
    assert value(after, "kafka_server_raftmetrics_log_end_offset") == offset + 1
    assert moved(before, after, "ksteward_metadata_log_fsync_time_ms_count") >= 1
    # Kafka's raft-metrics commit latency: ms from append to commit per record, over the last minute
    commit_avg, commit_max = (value(after, "kafka_server_raftmetrics_commit_latency_" + s) for s in ("avg", "max"))
    assert 0 < commit_avg <= commit_max
    events = "kafka_controller_controllereventmanager_"
    assert moved(before, after, events + "eventqueueprocessingtimems_count") >= K_CREATE  # and the heartbeats
    assert value(after, events + "eventqueuetimems_count") == value(after, events + "eventqueueprocessingtimems_count")
    assert value(after, events + "eventqueuetimems", quantile="0.99") == 0


def test_policy_rejections_and_topic_counts(server_factory: ServerFactory) -> None:
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import NewTopic

    port = free_port()
    policed = server_factory("server", {
        "metrics.port": str(port),
        "create.topic.policy.class.name": "ksteward.policy.builtin.TopicNamingPolicy",
        "topic.naming.policy.regex": "team-[a-z]+",
    }).start()  # fmt: skip
    admin = confluent_admin(policed.bootstrap, Auth())
    admin.create_topics([NewTopic("team-ok", 3, 1)], request_timeout=10)["team-ok"].result()
    for name in ("Loose_Name", "Other_Name"):
        with pytest.raises(KafkaException):
            admin.create_topics([NewTopic(name, 1, 1)], request_timeout=10)[name].result()
    samples = scrape(port)
    policy = "ksteward.policy.builtin.TopicNamingPolicy"
    assert value(samples, "ksteward_policy_rejections_total", policy=policy) == 2
    assert (
        value(samples, "kafka_network_requestmetrics_errors_total", request="CreateTopics", error="POLICY_VIOLATION")
        == 2
    )
    assert value(samples, "kafka_controller_kafkacontroller_globaltopiccount") == 1
    assert value(samples, "kafka_controller_kafkacontroller_globalpartitioncount") == 3


def test_a_snapshot_shows_in_the_snapshot_series(server_factory: ServerFactory) -> None:
    port = free_port()
    small = {"metrics.port": str(port), "metadata.log.max.record.bytes.between.snapshots": "2048"}
    server = server_factory("sasl", small).start()
    client = acl_client("confluent-kafka", server.bootstrap)
    for i in range(40):  # ~100 bytes a batch: past 2 KiB, the committer writes a snapshot
        client.create(ADMIN, [("TOPIC", f"t-{i}", "LITERAL", "User:bob", "*", "READ", "ALLOW")])

    def snapshot_written() -> bool:
        return value(scrape(port), "kafka_server_snapshotemitter_latestsnapshotgeneratedbytes") > 0

    wait_for(snapshot_written, 10, "a snapshot in the metrics")
    samples = scrape(port)
    assert value(samples, "ksteward_metadata_snapshot_count") >= 1
    assert value(samples, "kafka_server_snapshotemitter_latestsnapshotgeneratedagems") >= 0
    assert value(samples, "ksteward_metadata_snapshot_generation_time_ms") >= 0


def test_logins_are_counted_by_listener(metrics_server: KstewardServer) -> None:
    port = metrics_server.metrics_port  # type: ignore[attr-defined]
    before = scrape(port)
    client = acl_client("confluent-kafka", metrics_server.bootstrap)
    client.describe(ADMIN, EVERYTHING)
    with pytest.raises(Exception):  # noqa: B017 - the client's own error for a failed login
        client.describe(Auth("PLAIN", "admin", "wrong"), EVERYTHING)
    after = scrape(port)
    labels = {"listener": "SASL_PLAINTEXT", "networkProcessor": "0"}
    prefix = "kafka_server_socket_server_metrics_"
    assert moved(before, after, prefix + "successful_authentication_total", **labels) >= 1
    assert moved(before, after, prefix + "failed_authentication_total", **labels) >= 1
    assert moved(before, after, prefix + "connection_creation_total", **labels) >= 2
    assert (prefix + "connection_count", frozenset(labels.items())) in after


def test_only_get_metrics_is_served(metrics_server: KstewardServer) -> None:
    port = metrics_server.metrics_port  # type: ignore[attr-defined]
    with pytest.raises(urllib.error.HTTPError) as info:
        urllib.request.urlopen(f"http://{HOST}:{port}/other", timeout=10)
    assert info.value.code == 404
    with socket.create_connection((HOST, port), timeout=10) as sock:  # not HTTP at all: closed, node unharmed
        sock.sendall(b"\x00\x01garbage\r\n\r\n")
        assert sock.recv(100).startswith(b"HTTP/1.1 400")
    with socket.create_connection((HOST, port), timeout=10) as sock:  # a line past 8 KiB: closed unanswered
        sock.sendall(b"GET /" + b"a" * 20_000 + b" HTTP/1.1\r\n\r\n")
        try:
            answer = sock.recv(100)
        except ConnectionResetError:  # closed with the rest of the line unread: a reset, not a FIN
            answer = b""
        assert answer == b""
    assert "kafka_network_requestmetrics_requests_total" in names(scrape(port))


def test_a_broker_only_and_a_controller_only_node_serve_metrics(tmp_path: object) -> None:
    from pathlib import Path

    ports = {node: free_port() for node in ("controller", "broker")}
    cluster = Cluster(Path(str(tmp_path)), brokers=1)
    cluster.controller.extra_overrides["metrics.port"] = str(ports["controller"])
    cluster.brokers[0].extra_overrides["metrics.port"] = str(ports["broker"])
    try:
        cluster.start()
        acl: Acl = ("TOPIC", "orders", "LITERAL", "User:bob", "*", "READ", "ALLOW")
        acl_client("confluent-kafka", cluster.brokers[0].bootstrap).create(Auth(), [acl])
        broker = scrape(ports["broker"])
        assert value(broker, "kafka_server_raftmetrics_current_state", current_state="observer") == 1
        assert value(broker, "kafka_server_forwardingmanager_queuelength") == 0
        assert value(broker, "kafka_network_requestmetrics_errors_total", request="CreateAcls", error="NONE") == 1
        assert value(broker, "kafka_network_requestmetrics_remotetimems_count", request="CreateAcls") == 1
        assert value(broker, "kafka_server_forwardingmanager_remotetimems_count") == 1
        assert value(broker, "kafka_server_forwardingmanager_queuetimems_count") == 1

        def broker_applied() -> bool:
            applied = value(scrape(ports["broker"]), "kafka_server_brokermetadatametrics_last_applied_record_offset")
            leader = scrape(ports["controller"])
            return applied == value(leader, "kafka_controller_kafkacontroller_lastappliedrecordoffset")

        wait_for(broker_applied, 10, "the broker's metrics to show the controller's offset")
        controller = scrape(ports["controller"])
        assert value(controller, "kafka_server_raftmetrics_current_state", current_state="leader") == 1
        assert value(controller, "kafka_controller_kafkacontroller_activebrokercount") == 1
        assert value(controller, "kafka_server_kafka_security_authorizer_metrics_acls_total_count") == 1
        assert value(controller, "kafka_network_requestmetrics_requests_total", request="Envelope", version="0") >= 1
    finally:
        cluster.kill()


def _refusal(server: KstewardServer) -> str:
    rc, text = server.run_to_exit()
    assert rc != 0, text
    assert "Traceback" not in text, text
    ours = [line for line in text.splitlines() if line.startswith("ksteward:")]
    assert len(ours) == 1, text
    return ours[0]


@pytest.mark.parametrize("port", ["0", "70000", "ninety"])
def test_a_metrics_port_out_of_range_stops_the_start(server_factory: ServerFactory, port: str) -> None:
    line = _refusal(server_factory("server", {"metrics.port": port}))
    assert line.startswith("ksteward: cannot start: metrics.port must be"), line


def test_a_metrics_port_in_use_stops_the_start(server_factory: ServerFactory) -> None:
    with socket.socket() as taken:
        taken.bind((HOST, 0))
        taken.listen()
        port = taken.getsockname()[1]
        line = _refusal(server_factory("server", {"metrics.port": str(port)}))
    assert line == f"ksteward: cannot start: metrics.port {port} on 127.0.0.1 is already in use", line


def test_the_voters_of_a_quorum_report_their_own_raft_state_and_one_active_controller(tmp_path: object) -> None:
    """Three controller voters: only the Raft leader says ``leader`` and ``ActiveControllerCount`` 1; the others
    say ``follower``, name the leader and its epoch, and count 0. Strimzi's KRaft dashboard sums
    ``activecontrollercount`` over the controllers and alerts when it is not 1: before, every voter reported
    itself the leader and active. After a SIGKILL of the leader, the two left agree on the new one."""
    from pathlib import Path

    cluster = Cluster(Path(str(tmp_path)), brokers=0, controllers=3)
    ports = {node.cluster_node_id: free_port() for node in cluster.controllers}
    for node in cluster.controllers:
        node.extra_overrides["metrics.port"] = str(ports[node.cluster_node_id])
    raft = "kafka_server_raftmetrics_"
    active = "kafka_controller_kafkacontroller_activecontrollercount"

    def agreed(nodes: list[int]) -> dict[int, Samples] | None:
        """Each node's samples once one of them is the active leader and the others follow it in its epoch and
        know a high watermark."""
        samples = {n: scrape(ports[n]) for n in nodes}
        leaders = [n for n, s in samples.items() if value(s, raft + "current_state", current_state="leader") == 1]
        if len(leaders) != 1 or value(samples[leaders[0]], active) != 1:
            return None
        epoch = value(samples[leaders[0]], raft + "current_epoch")
        for n, s in samples.items():
            if n != leaders[0] and not (
                value(s, raft + "current_state", current_state="follower") == 1
                and value(s, raft + "current_leader") == leaders[0]
                and value(s, raft + "current_epoch") == epoch
                and value(s, raft + "high_watermark") > 0  # learnt from a Fetch answer of this leader
            ):
                return None
        return samples

    try:
        cluster.start()
        leader = cluster.wait_for_leader()
        samples = wait_for(lambda: agreed(list(ports)), 30, "one leader and two followers in the metrics")
        assert isinstance(samples, dict)
        assert sum(value(s, active) for s in samples.values()) == 1
        lead = samples[leader.cluster_node_id]
        assert value(lead, raft + "current_leader") == leader.cluster_node_id
        assert value(lead, raft + "current_vote") == leader.cluster_node_id
        assert value(lead, raft + "high_watermark") > 0
        assert value(lead, raft + "log_end_epoch") == value(lead, raft + "current_epoch")  # its LeaderChange batch
        assert value(lead, raft + "election_latency_max") >= value(lead, raft + "election_latency_avg") > 0  # it ran
        # The leader's first commit (the new cluster's features) took a follower's fsync: Kafka's commit latency
        # is the leader's; every voter times its fsyncs, a follower those of the Fetch answers it appended.
        assert 0 < value(lead, raft + "commit_latency_avg") <= value(lead, raft + "commit_latency_max")
        for n, s in samples.items():
            assert sum(v for (name, _), v in s.items() if name == raft + "current_state") == 1  # one state each
            assert value(s, "ksteward_metadata_log_fsync_time_ms_count") >= 1
            if n != leader.cluster_node_id:
                assert 0 < value(s, raft + "high_watermark") <= value(lead, raft + "log_end_offset")
                assert math.isnan(value(s, raft + "commit_latency_avg"))  # only a leader commits
        leader.kill()
        survivors = [n for n in ports if n != leader.cluster_node_id]
        samples = wait_for(lambda: agreed(survivors), 60, "a new leader in the survivors' metrics")
        assert isinstance(samples, dict)
        assert sum(value(s, active) for s in samples.values()) == 1
    finally:
        cluster.kill()
