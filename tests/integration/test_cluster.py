"""A real cluster (issue 14): one ``process.roles=controller`` node and broker-only nodes that follow its
metadata log, register, heartbeat and forward mutations (docs/cluster.md)."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import threading
import uuid
from pathlib import Path
from typing import Any

import pytest
from acl_clients import Confluent, Filter
from clients import Auth, cluster_views, confluent_admin, kafka_python_admin
from cluster_helpers import acl_names, create_topic_acl, metadata_brokers, topic_config, topic_partitions
from harness import Cluster, ClusterNode, wait_for
from kio.static.primitive import i8, i64
from rawkafka import connect, metadata_body

from ksteward.authorizer import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
    StandardAuthorizer,
)
from ksteward.broker.forwarding import forwardable_api_versions
from ksteward.configs.server_config import ConfigError, QuorumVoter, parse_server_config
from ksteward.metadata.image import EMPTY_IMAGE
from ksteward.metadata.log import MetadataLog
from ksteward.metadata.records import AccessControlEntryRecord, RemoveAccessControlEntryRecord, encode_record
from ksteward.protocol.apis import ApiKey
from ksteward.raft.leader import RaftLeader
from ksteward.raft.log_view import MetadataLogView
from ksteward.server.acl_publisher import ACL_CHANGES_ON_THE_LOOP
from ksteward.server.api_table import broker_api_table
from ksteward.server.metadata_follower import MetadataFollower

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


def test_a_mutation_on_the_controller_reaches_both_brokers(cluster: Cluster) -> None:
    create_topic_acl(cluster.controller, "direct")  # KIP-919: straight to the controller listener
    for broker in cluster.brokers:
        wait_for(lambda b=broker: "direct" in acl_names(b), 20.0, f"{broker.name} to see the ACL")
    assert all(metadata_brokers(b) == {2, 3} for b in cluster.brokers)


def test_a_restarted_broker_resumes_from_its_own_log(cluster: Cluster) -> None:
    create_topic_acl(cluster.controller, "before")
    broker = cluster.brokers[0]
    wait_for(lambda: "before" in acl_names(broker), 20.0, "the broker to see the first ACL")
    broker.stop()
    create_topic_acl(cluster.controller, "while-down")
    broker.spawn()
    broker.wait_ready()
    assert "resuming the metadata log at offset" in broker.run_log()
    wait_for(lambda: {"before", "while-down"} <= acl_names(broker), 20.0, "the broker to catch up")


# --- lifecycle: registration, fencing, controlled shutdown ------------------------------------------------


def test_brokers_are_listed_once_unfenced_and_a_killed_one_is_fenced(cluster: Cluster) -> None:
    first, second = cluster.brokers
    view = cluster_views("confluent-kafka", first.bootstrap, Auth())["Metadata"]
    assert {node_id for node_id, _, _ in view.brokers} == {2, 3}
    assert view.cluster_id == cluster.cluster_id
    for source, seen in cluster_views("kafka-python", second.bootstrap, Auth()).items():  # Metadata, DescribeCluster
        assert {node_id for node_id, _, _ in seen.brokers} == {2, 3}, source
        assert seen.controller_id in (2, 3), source  # a random live broker, as KRaftMetadataCache answers
    second.kill()  # no controlled shutdown: the controller fences it once its session expires
    wait_for(lambda: metadata_brokers(first) == {2}, 20.0, "the killed broker to be fenced and dropped")
    assert "fenced broker 3: its session timed out" in cluster.controller.run_log()


def test_sigterm_shuts_a_broker_down_through_the_controller(cluster: Cluster) -> None:
    first, second = cluster.brokers
    second.stop()  # exit code 0
    assert "controlled shutdown complete" in second.run_log()
    wait_for(lambda: metadata_brokers(first) == {2}, 20.0, "the stopped broker to leave Metadata")
    second.spawn()
    second.wait_ready()  # a new incarnation registers and is unfenced again
    wait_for(lambda: metadata_brokers(first) == {2, 3}, 20.0, "the restarted broker to be listed")


# --- forwarding: every mutation kind sent to one broker is applied once and seen from the other -------------


def test_topic_mutations_through_either_broker(cluster: Cluster) -> None:
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource, NewPartitions, NewTopic
    from confluent_kafka.admin import ResourceType as Rt

    first, second = cluster.brokers
    admin = confluent_admin(first.bootstrap, Auth())
    admin.create_topics([NewTopic("orders", 2, 2)])["orders"].result(15)
    wait_for(lambda: topic_partitions(second).get("orders") == 2, 20.0, "the topic on the other broker")
    other = confluent_admin(second.bootstrap, Auth())
    with pytest.raises(KafkaException, match="TOPIC_ALREADY_EXISTS"):  # applied once: the second is refused
        other.create_topics([NewTopic("orders", 2, 2)])["orders"].result(15)

    other.create_partitions([NewPartitions("orders", 3)])["orders"].result(15)
    wait_for(lambda: topic_partitions(first).get("orders") == 3, 20.0, "the new partition on the first broker")

    entry = ConfigEntry("retention.ms", "1234", incremental_operation=AlterConfigOpType.SET)
    resource = ConfigResource(Rt.TOPIC, "orders", incremental_configs=[entry])
    admin.incremental_alter_configs([resource])[resource].result(15)
    wait_for(lambda: topic_config(second, "orders", "retention.ms") == "1234", 20.0, "the config change")

    legacy = kafka_python_admin(second.bootstrap, Auth())  # AlterConfigs (api 33), from another client
    try:
        from kafka.admin import ConfigResource as KpResource
        from kafka.admin import ConfigResourceType

        legacy.alter_configs([KpResource(ConfigResourceType.TOPIC, "orders", configs={"cleanup.policy": "compact"})])
    finally:
        legacy.close()
    wait_for(lambda: topic_config(first, "orders", "cleanup.policy") == "compact", 20.0, "the legacy alter")

    other.delete_topics(["orders"])["orders"].result(15)
    wait_for(lambda: "orders" not in topic_partitions(first), 20.0, "the deletion on the first broker")


def test_acl_mutations_through_either_broker(cluster: Cluster) -> None:
    first, second = cluster.brokers
    acl = ("TOPIC", "payments", "LITERAL", "User:bob", "*", "READ", "ALLOW")
    Confluent(second.bootstrap).create(Auth(), [acl])
    Confluent(second.bootstrap).create(Auth(), [acl])  # a duplicate: CreateAcls skips a binding it holds
    everything: Filter = ("TOPIC", None, None, None, None, None, None)
    wait_for(lambda: Confluent(first.bootstrap).describe(Auth(), everything) == {acl}, 20.0, "the ACL")
    assert acl_names(first) == {"payments"}
    deleted = Confluent(first.bootstrap).delete(Auth(), [everything])
    assert deleted == [{acl}]
    wait_for(lambda: not Confluent(second.bootstrap).describe(Auth(), everything), 20.0, "the ACL gone")


def test_quota_and_scram_mutations_through_either_broker(cluster: Cluster) -> None:
    from confluent_kafka.admin import ScramCredentialInfo, ScramMechanism, UserScramCredentialUpsertion

    first, second = cluster.brokers
    quota = {"entity": [{"entity_type": "user", "entity_name": "carol"}],
             "ops": [{"key": "producer_byte_rate", "value": 1024.0, "remove": False}]}  # fmt: skip
    with connect(first.address) as conn:
        body = conn.request(ApiKey.ALTER_CLIENT_QUOTAS, 1, {"entries": [quota], "validate_only": False}).body
    assert [int(e.error_code) for e in body.entries] == [0], body

    def quotas_on_second() -> list[tuple[str, float]]:
        match = {"components": [{"entity_type": "user", "match_type": 0, "match": "carol"}], "strict": False}
        with connect(second.address) as conn:
            entries = conn.request(ApiKey.DESCRIBE_CLIENT_QUOTAS, 1, match).body.entries
        return [(v.key, v.value) for e in entries for v in e.values]

    wait_for(lambda: quotas_on_second() == [("producer_byte_rate", 1024.0)], 20.0, "the quota")

    info = ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096)
    upsert = UserScramCredentialUpsertion("carol", info, b"carol-secret")
    admin = confluent_admin(second.bootstrap, Auth())
    admin.alter_user_scram_credentials([upsert])["carol"].result(15)

    def scram_users_on_first() -> set[str]:
        reader = confluent_admin(first.bootstrap, Auth())
        described = reader.describe_user_scram_credentials().result(10)
        return set(described)

    wait_for(lambda: scram_users_on_first() == {"carol"}, 20.0, "the SCRAM credential")


def test_api_versions_advertise_the_controllers_range_for_forwarded_apis(cluster: Cluster) -> None:
    with connect(cluster.controller.address) as conn:
        controller = {
            int(k.api_key): (int(k.min_version), int(k.max_version)) for k in conn.api_versions().body.api_keys
        }
    broker = cluster.brokers[0]
    create_topic_acl(broker, "warm-up")  # the broker has talked to the controller by now
    with connect(broker.address) as conn:
        advertised = {
            int(k.api_key): (int(k.min_version), int(k.max_version)) for k in conn.api_versions().body.api_keys
        }
    own = dict(broker_api_table().served)
    assert advertised == forwardable_api_versions(own, controller)
    assert ApiKey.METADATA in advertised and ApiKey.ENVELOPE not in advertised


def test_an_empty_broker_catches_up_from_the_controllers_snapshot(tmp_path: Path) -> None:
    made = Cluster(tmp_path, brokers=1, overrides={"metadata.log.max.record.bytes.between.snapshots": "2048"})
    try:
        made.controller.start()
        for i in range(40):  # enough records for the controller to write a snapshot
            create_topic_acl(made.controller, f"topic-{i}")
        wait_for(lambda: any(made.controller.data_dir.rglob("*.checkpoint")), 20.0, "a controller snapshot")
        broker = made.brokers[0].start()  # an empty log: Kafka's leader sends an empty follower the snapshot
        assert "installed metadata snapshot" in broker.run_log()
        wait_for(lambda: acl_names(broker) == {f"topic-{i}" for i in range(40)}, 20.0, "every ACL on the broker")
    finally:
        made.kill()


def test_a_fresh_broker_needs_the_clusters_id(tmp_path: Path) -> None:
    made = Cluster(tmp_path, brokers=1)
    broker = made.brokers[0]
    broker.extra_overrides["cluster.id"] = ""
    try:
        rc, text = broker.run_to_exit()
    finally:
        made.kill()
    assert rc == 1
    assert "is not formatted: set cluster.id" in text


def test_brokers_keep_forwarding_across_a_controller_restart(cluster: Cluster) -> None:
    first, second = cluster.brokers
    create_topic_acl(first, "before-restart")
    cluster.controller.restart(hard=True)  # a crash: the brokers reconnect, re-fetch and re-heartbeat
    create_topic_acl(first, "after-restart")  # forwarded; retried until the controller is back
    wait_for(lambda: acl_names(second) == {"before-restart", "after-restart"}, 20.0, "both ACLs on the other broker")
    assert metadata_brokers(second) == {2, 3}


def test_brokers_log_in_to_a_sasl_controller_listener(tmp_path: Path) -> None:
    """The controller listener is SASL_PLAINTEXT: brokers fetch, heartbeat and forward as User:broker, the
    login of that listener's JAAS entry, which needs CLUSTER_ACTION (here: a super user)."""
    jaas = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="broker" '
            'password="broker-secret" user_broker="broker-secret";')  # fmt: skip
    settings = {
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:SASL_PLAINTEXT",
        "sasl.enabled.mechanisms": "PLAIN",
        "sasl.mechanism.controller.protocol": "PLAIN",
        "listener.name.controller.plain.sasl.jaas.config": jaas,
        "super.users": "User:broker;User:ANONYMOUS",
    }
    made = Cluster(tmp_path, brokers=2, overrides=settings)
    try:
        made.controller.start()  # readiness is ApiVersions, which a SASL listener answers before the login
        for broker in made.brokers:
            broker.start()
        first, second = made.brokers
        create_topic_acl(first, "over-sasl")
        wait_for(lambda: acl_names(second) == {"over-sasl"}, 20.0, "the forwarded ACL on the other broker")
        assert metadata_brokers(second) == {2, 3}
    finally:
        made.kill()


# --- the follower's publishing rule, in process: only committed records reach the image and the authorizer ---


class _LeaderConnection:
    """A controller connection answered by a RaftLeader over a real log, with the high watermark held at
    ``hw`` (None: the leader's own) to play a leader whose followers fetched past its commit point."""

    def __init__(self, leader: RaftLeader, hw: int | None) -> None:
        self.leader = leader
        self.hw = hw

    async def call(self, api_key: int, version: int, body: Any) -> Any:
        if api_key == ApiKey.FETCH_SNAPSHOT:
            return self.leader.handle_fetch_snapshot(body, version, "CONTROLLER")
        assert api_key == ApiKey.FETCH
        response = self.leader.handle_fetch(body, version, "CONTROLLER")
        if self.hw is None:
            return response
        topic = response.responses[0]
        partition = dataclasses.replace(topic.partitions[0], high_watermark=i64(self.hw))
        return dataclasses.replace(response, responses=(dataclasses.replace(topic, partitions=(partition,)),))

    async def close(self) -> None:
        pass


def _acl_record(name: str, principal: str = "User:alice") -> bytes:
    return encode_record(AccessControlEntryRecord(id=uuid.uuid4(), resource_type=i8(2), resource_name=name,
                         pattern_type=i8(3), principal=principal, host="*", operation=i8(3),
                         permission_type=i8(3)))  # fmt: skip


def _leader_connection(leader_log: MetadataLog, hw: int | None) -> _LeaderConnection:
    """A connection to a leader of epoch 1 over ``leader_log`` that reports high watermark ``hw`` (None: its end)."""
    view = MetadataLogView(leader_log, served_end=lambda: leader_log.durable_offset)
    leader = RaftLeader(node_id=1, cluster_id="c1", epoch=1, log=view, endpoints={"CONTROLLER": ("127.0.0.1", 1)})
    return _LeaderConnection(leader, hw=hw)


def _empty_authorizer() -> StandardAuthorizer:
    authorizer = StandardAuthorizer.from_config({"super.users": "", "allow.everyone.if.no.acl.found": "false"})
    authorizer.load_snapshot([], offset=-1)
    return authorizer


def _follower(tmp_path: Path, authorizer: StandardAuthorizer, connection: _LeaderConnection) -> MetadataFollower:
    """Broker 2's follower of ``connection``'s leader, in the running event loop, fetching without waiting."""

    async def connect(address: Any) -> Any:
        return connection

    follower = MetadataFollower(
        metadata_log=MetadataLog.open(tmp_path / "broker", logger=logging.getLogger("test")),
        image=EMPTY_IMAGE, authorizer=authorizer, cluster_id="c1", node_id=2, directory_id=None,
        bootstrap=(("127.0.0.1", 1),), connect=connect,
    )  # fmt: skip
    follower.observer.max_wait_ms = 0
    return follower


def test_the_follower_applies_only_records_below_the_high_watermark(tmp_path: Path) -> None:
    leader_log = MetadataLog.open(tmp_path / "leader", logger=logging.getLogger("test"))
    leader_log.append([_acl_record("a"), _acl_record("b")], timestamp_ms=1, leader_epoch=1)
    leader_log.append([_acl_record("c")], timestamp_ms=2, leader_epoch=1)
    leader_log.flush()
    connection = _leader_connection(leader_log, hw=2)  # offsets 0 and 1 are committed, 2 is not yet
    authorizer = _empty_authorizer()

    async def follow() -> None:
        follower = _follower(tmp_path, authorizer, connection)
        try:
            assert await follower._round()  # learns the leader and its epoch
            assert await follower._round()  # all three records arrive, two are committed
            assert follower.follower_log.view.log_end_offset == 3
            assert follower.image.offset == 1 and len(follower.image.acls) == 2
            assert sorted(b.resource_name for b in authorizer.acls()) == ["a", "b"]
            assert follower.caught_up  # caught up means: every committed record is applied
            connection.hw = None  # the leader's high watermark moves past the last record
            assert await follower._round()
            assert follower.image.offset == 2 and follower.caught_up
            assert sorted(b.resource_name for b in authorizer.acls()) == ["a", "b", "c"]
        finally:
            await follower.close()
            leader_log.close()

    asyncio.run(follow())


def test_the_followers_authorizer_gets_the_acls_added_and_removed_by_the_committed_records(tmp_path: Path) -> None:
    """Only the ACL ids the new records name are compared (not the whole sets): removals, an ACL added and
    removed within one publish, and ACLs the records do not touch all end as in the image."""
    ids = {name: uuid.uuid4() for name in "abcd"}

    def add(name: str) -> bytes:
        return encode_record(AccessControlEntryRecord(id=ids[name], resource_type=i8(2), resource_name=name,
                             pattern_type=i8(3), principal="User:alice", host="*", operation=i8(3),
                             permission_type=i8(3)))  # fmt: skip

    def remove(name: str) -> bytes:
        return encode_record(RemoveAccessControlEntryRecord(id=ids[name]))

    leader_log = MetadataLog.open(tmp_path / "leader", logger=logging.getLogger("test"))
    leader_log.append([add("a"), add("b")], timestamp_ms=1, leader_epoch=1)  # offsets 0, 1
    leader_log.append([remove("a"), add("c")], timestamp_ms=2, leader_epoch=1)  # 2, 3
    leader_log.append([add("d"), remove("d")], timestamp_ms=3, leader_epoch=1)  # 4, 5
    leader_log.flush()
    connection = _leader_connection(leader_log, hw=2)
    authorizer = _empty_authorizer()

    async def follow() -> None:
        follower = _follower(tmp_path, authorizer, connection)
        try:
            while follower.image.offset < 1:
                assert await follower._round()
            assert sorted(b.resource_name for b in authorizer.acls()) == ["a", "b"]
            connection.hw = None  # offsets 2-5 are committed and published together
            while follower.image.offset < 5:
                assert await follower._round()
            assert sorted(b.resource_name for b in authorizer.acls()) == ["b", "c"]
            assert set(follower.image.acls.records) == {ids["b"], ids["c"]}
            assert authorizer.acl_count() == 2
        finally:
            await follower.close()
            leader_log.close()

    asyncio.run(follow())


def test_thousands_of_acl_changes_reach_the_followers_authorizer_from_a_worker_thread(tmp_path: Path) -> None:
    """More than ``ACL_CHANGES_ON_THE_LOOP`` ACL changes in one publish (a large DeleteAcls) are applied to the
    authorizer in a worker thread, with the result they have on the loop: an ACL removed and one added again."""
    count = ACL_CHANGES_ON_THE_LOOP + 10
    ids = [uuid.uuid4() for _ in range(count)]
    added = [encode_record(AccessControlEntryRecord(id=i, resource_type=i8(2), resource_name=f"t{n}",
                           pattern_type=i8(3), principal="User:alice", host="*", operation=i8(3),
                           permission_type=i8(3))) for n, i in enumerate(ids)]  # fmt: skip
    leader_log = MetadataLog.open(tmp_path / "leader", logger=logging.getLogger("test"))
    leader_log.append(added, timestamp_ms=1, leader_epoch=1)  # offsets 0 .. count - 1
    leader_log.append([encode_record(RemoveAccessControlEntryRecord(id=i)) for i in ids], timestamp_ms=2,
                      leader_epoch=1)  # fmt: skip
    leader_log.append([_acl_record("t0")], timestamp_ms=3, leader_epoch=1)  # t0 again, under a new id
    leader_log.flush()
    connection = _leader_connection(leader_log, hw=count)  # only the additions are committed
    authorizer = _empty_authorizer()

    async def follow() -> None:
        follower = _follower(tmp_path, authorizer, connection)
        try:
            while follower.image.offset < count - 1:
                assert await follower._round()
            assert authorizer.acl_count() == count
            connection.hw = None  # the removals and the new t0 are committed and published together
            while follower.image.offset < 2 * count:
                assert await follower._round()
            assert [b.resource_name for b in authorizer.acls()] == ["t0"]
            assert authorizer.acl_count() == len(follower.image.acls) == 1
        finally:
            await follower.close()
            leader_log.close()

    asyncio.run(follow())


def test_a_snapshot_install_swaps_the_acl_set_whole_under_concurrent_reads(tmp_path: Path) -> None:
    """While the follower installs a snapshot of 5,000 ACLs over 1,000 others, a reader thread never sees
    a mix: every read is the old set or the new one (StandardAuthorizer.load_snapshot)."""
    leader_log = MetadataLog.open(tmp_path / "leader", logger=logging.getLogger("test"))
    new_acls = [_acl_record(f"new-{i}", "User:new") for i in range(5000)]
    for start in range(0, len(new_acls), 500):
        leader_log.append(new_acls[start : start + 500], timestamp_ms=1, leader_epoch=1)
    leader_log.flush()
    leader_log.write_snapshot(5000, 1, new_acls, last_contained_timestamp_ms=1)
    connection = _leader_connection(leader_log, hw=None)
    authorizer = StandardAuthorizer.from_config({"super.users": "", "allow.everyone.if.no.acl.found": "false"})
    old = [(uuid.uuid4(), AclBinding(ResourceType.TOPIC, f"old-{i}", PatternType.LITERAL, "User:old", "*",
                                     AclOperation.READ, AclPermissionType.ALLOW)) for i in range(1000)]  # fmt: skip
    authorizer.load_snapshot(old, offset=-1)
    seen: list[tuple[int, str]] = []
    done = threading.Event()

    def reader() -> None:
        while not done.is_set():
            names = [b.resource_name for b in authorizer.acls()]
            seen.append((len(names), "mixed" if len({n.split("-")[0] for n in names}) > 1 else names[0][:3]))

    async def follow() -> MetadataFollower:
        follower = _follower(tmp_path, authorizer, connection)
        follower.observer.max_bytes = 64 * 1024  # several FetchSnapshot chunks
        try:
            while not follower.caught_up:
                assert await follower._round()
        finally:
            await follower.close()
        return follower

    thread = threading.Thread(target=reader)
    thread.start()
    try:
        follower = asyncio.run(follow())
    finally:
        done.set()
        thread.join()
        leader_log.close()
    assert follower.follower_log.installed, "the follower should have installed the snapshot"
    assert follower.image.offset == 4999 and authorizer.acl_count() == 5000
    assert set(seen) <= {(1000, "old"), (5000, "new")}, sorted(set(seen))[:5]


def test_a_broker_waiting_for_its_controller_stops_on_sigterm(tmp_path: Path) -> None:
    made = Cluster(tmp_path, brokers=1)  # the controller is never started
    broker = made.brokers[0]
    try:
        broker.spawn()
        broker.wait_for_log("resuming the metadata log", timeout=30.0)
        rc = broker.stop(expect=None)
    finally:
        made.kill()
    assert rc == 1
    assert "stopped before the controller unfenced this broker" in broker.run_log()
    assert "is serving on" not in broker.run_log()  # no client listener was ever opened


def test_a_stopped_brokers_leadership_moves_to_the_other(cluster: Cluster) -> None:
    from confluent_kafka.admin import NewTopic

    first, second = cluster.brokers
    admin = confluent_admin(first.bootstrap, Auth())
    admin.create_topics([NewTopic("moves", 4, 2)])["moves"].result(15)

    def leaders(node: ClusterNode) -> set[int]:
        with connect(node.address) as conn:
            body = conn.request(ApiKey.METADATA, 9, metadata_body(9, ["moves"])).body
        return {int(p.leader_id) for t in body.topics for p in t.partitions}

    wait_for(lambda: leaders(first) == {2, 3}, 20.0, "leaders spread over both brokers")
    second.stop()  # controlled shutdown: the controller moves broker 3's leaderships before it fences it
    wait_for(lambda: leaders(first) == {2}, 20.0, "every partition led by the remaining broker")
