"""A real cluster (issue 14): one ``process.roles=controller`` node and broker-only nodes that follow its
metadata log, register, heartbeat and forward mutations (docs/cluster.md)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from clients import Auth, cluster_views
from harness import Cluster, ClusterNode, wait_for
from rawkafka import connect, metadata_body

from ksteward.configs.server_config import ConfigError, QuorumVoter, parse_server_config
from ksteward.protocol.apis import ApiKey

BROKER_ONLY = {
    "process.roles": "broker",
    "node.id": "2",
    "listeners": "PLAINTEXT://localhost:9092",
    "controller.listener.names": "CONTROLLER",
    "metadata.log.dir": "/tmp/x",
}


# --- configuration (Kafka's KafkaConfig.validateValues for the quorum keys) ---------------------------------


def test_quorum_keys_in_kafkas_formats() -> None:
    cfg = parse_server_config({**BROKER_ONLY, "controller.quorum.voters": "1@ctl:9093,3@[::1]:9094"})
    assert cfg.quorum_voters == (QuorumVoter(1, "ctl", 9093), QuorumVoter(3, "::1", 9094))
    assert cfg.controller_quorum_addresses == (("ctl", 9093), ("::1", 9094))
    cfg = parse_server_config(
        {**BROKER_ONLY, "controller.quorum.voters": "1@ctl:9093", "controller.quorum.bootstrap.servers": "a:1,b:2"}
    )
    assert cfg.controller_quorum_addresses == (("a", 1), ("b", 2))  # bootstrap servers win for discovery
    assert cfg.is_broker_only


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ({}, "needs controller.quorum.bootstrap.servers or controller.quorum.voters"),
        ({"controller.quorum.voters": "2@ctl:9093"}, "node.id 2 is in controller.quorum.voters"),
        ({"controller.quorum.voters": "ctl:9093"}, "must look like id@host:port"),
        ({"controller.quorum.voters": "1@ctl:9093,1@ctl:9094"}, "names node 1 twice"),
        ({"controller.quorum.bootstrap.servers": "ctl"}, "must look like host:port"),
        (
            {"controller.quorum.bootstrap.servers": "ctl:1", "controller.listener.names": ""},
            "controller.listener.names",
        ),
        (
            {"controller.quorum.bootstrap.servers": "ctl:1", "listeners": "PLAINTEXT://:1,CONTROLLER://:2"},
            "names the controller listener CONTROLLER",
        ),
    ],
)
def test_a_broker_only_node_must_know_its_controllers(override: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_server_config({**BROKER_ONLY, **override})


def test_a_controller_listing_voters_must_be_one() -> None:
    controller = {**BROKER_ONLY, "process.roles": "controller", "listeners": "CONTROLLER://localhost:9093"}
    with pytest.raises(ConfigError, match=r"node\.id 2 must be in"):
        parse_server_config({**controller, "controller.quorum.voters": "1@localhost:9093"})
    assert parse_server_config({**controller, "controller.quorum.voters": "2@localhost:9093"}).quorum_voters


# --- a running cluster -----------------------------------------------------------------------------------


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    made = Cluster(tmp_path)
    try:
        yield made.start()
    finally:
        made.kill()


def metadata_brokers(node: ClusterNode) -> set[int]:
    with connect(node.address) as conn:
        body = conn.request(ApiKey.METADATA, 12, metadata_body(12, [])).body
    return {int(b.node_id) for b in body.brokers}


def acl_names(node: ClusterNode) -> set[str]:
    """The names of the TOPIC ACLs the node's DescribeAcls returns."""
    with connect(node.address) as conn:
        body = conn.request(ApiKey.DESCRIBE_ACLS, 3, ANY_TOPIC_ACL).body
    assert int(body.error_code) == 0, body
    return {r.resource_name for r in body.resources}


ANY_TOPIC_ACL = {
    "resource_type_filter": 2,  # TOPIC
    "resource_name_filter": None,
    "pattern_type_filter": 1,  # ANY
    "principal_filter": None,
    "host_filter": None,
    "operation": 1,  # ANY
    "permission_type": 1,  # ANY
}


def create_topic_acl(node: ClusterNode, topic: str) -> None:
    creation = {"resource_type": 2, "resource_name": topic, "resource_pattern_type": 3, "principal": "User:alice",
                "host": "*", "operation": 3, "permission_type": 3}  # fmt: skip
    with connect(node.address) as conn:
        body = conn.request(ApiKey.CREATE_ACLS, 3, {"creations": [creation]}).body
    assert [int(r.error_code) for r in body.results] == [0], body


def test_a_mutation_on_the_controller_reaches_both_brokers(cluster: Cluster) -> None:
    create_topic_acl(cluster.controller, "direct")  # KIP-919: straight to the controller listener
    for broker in cluster.brokers:
        wait_for(lambda b=broker: "direct" in acl_names(b), 10.0, f"{broker.name} to see the ACL")
    assert all(metadata_brokers(b) == {2, 3} for b in cluster.brokers)


def test_a_restarted_broker_resumes_from_its_own_log(cluster: Cluster) -> None:
    create_topic_acl(cluster.controller, "before")
    broker = cluster.brokers[0]
    wait_for(lambda: "before" in acl_names(broker), 10.0, "the broker to see the first ACL")
    broker.stop()
    create_topic_acl(cluster.controller, "while-down")
    broker.spawn()
    broker.wait_ready()
    assert "resuming the metadata log at offset" in broker.run_log()
    wait_for(lambda: {"before", "while-down"} <= acl_names(broker), 10.0, "the broker to catch up")


# --- lifecycle: registration, fencing, controlled shutdown ------------------------------------------------


def test_brokers_are_listed_once_unfenced_and_a_killed_one_is_fenced(cluster: Cluster) -> None:
    first, second = cluster.brokers
    view = cluster_views("confluent-kafka", first.bootstrap, Auth())["Metadata"]
    assert {node_id for node_id, _, _ in view.brokers} == {2, 3}
    assert view.cluster_id == cluster.cluster_id
    second.kill()  # no controlled shutdown: the controller fences it once its session expires
    wait_for(lambda: metadata_brokers(first) == {2}, 15.0, "the killed broker to be fenced and dropped")
    assert "fenced broker 3: its session timed out" in cluster.controller.run_log()


def test_sigterm_shuts_a_broker_down_through_the_controller(cluster: Cluster) -> None:
    first, second = cluster.brokers
    second.stop()  # exit code 0
    assert "controlled shutdown complete" in second.run_log()
    wait_for(lambda: metadata_brokers(first) == {2}, 15.0, "the stopped broker to leave Metadata")
    second.spawn()
    second.wait_ready()  # a new incarnation registers and is unfenced again
    wait_for(lambda: metadata_brokers(first) == {2, 3}, 15.0, "the restarted broker to be listed")
