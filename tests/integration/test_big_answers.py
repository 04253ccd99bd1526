"""Answers too big to build in one go on the event loop (issue 17): a listing of every topic is built in slices,
DescribeAcls and DeleteAcls of thousands of ACLs are encoded in a worker thread, DescribeConfigs of many topics
yields between resources, and an answer of over a MiB is written a slice at a time (from its parts, for a
Metadata listing). Whatever the path, the answer must be complete and exact, and a client that asked for
the read-your-writes offset still gets it on the thread-encoded DeleteAcls answer. A DeleteAcls of thousands
of ACLs is replayed and applied to the authorizer in worker threads, and its answer still means that the
deleted ACLs allow nothing any more."""

from __future__ import annotations

import datetime
from collections.abc import Iterator

import pytest
from acl_clients import Acl, Confluent
from clients import Auth, confluent_admin
from harness import KstewardServer
from rawkafka import RawConnection, connect

from ksteward.broker.acls import ACLS_ENCODED_ON_THE_LOOP
from ksteward.broker.cluster import JOIN_BELOW_BYTES
from ksteward.broker.configs import RESOURCES_PER_SLICE
from ksteward.controller.active import DELETIONS_ON_THE_LOOP
from ksteward.protocol.apis import ApiKey
from ksteward.server.acl_publisher import ACL_CHANGES_ON_THE_LOOP

ACLS = ACLS_ENCODED_ON_THE_LOOP + 500
TOPICS = 1_007  # listed over several of the Metadata handler's time slices
ADMIN = Auth("PLAIN", "admin", "admin-secret")
ALICE = Auth("PLAIN", "alice", "alice-secret")
ANY = {"resource_type_filter": 1, "resource_name_filter": None, "pattern_type_filter": 1, "principal_filter": None,
       "host_filter": None, "operation": 1, "permission_type": 1}  # fmt: skip


@pytest.fixture(scope="module")
def big_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KstewardServer]:
    server = KstewardServer(tmp_path_factory.mktemp("big"), "sasl", name="big")
    try:
        yield server.start()
    finally:
        server.kill()


def admin(server: KstewardServer) -> RawConnection:
    conn = connect(server.address)
    assert int(conn.sasl_plain("admin", "admin-secret").body.error_code) == 0
    return conn


def test_every_topic_listed_across_slices(big_server: KstewardServer) -> None:
    names = [f"big-{i:05d}" for i in range(TOPICS)]
    with admin(big_server) as conn:
        topics = [{"name": n, "num_partitions": 2, "replication_factor": 1, "assignments": [], "configs": []}
                  for n in names]  # fmt: skip
        created = conn.request(ApiKey.CREATE_TOPICS, 7, {"topics": topics, "timeout": datetime.timedelta(seconds=30),
                                                         "validate_only": False}).body  # fmt: skip
        assert {int(t.error_code) for t in created.topics} == {0}
        listed = conn.request(ApiKey.METADATA, 12, {"topics": None, "allow_auto_topic_creation": False,
                                                    "include_topic_authorized_operations": False}).body  # fmt: skip
        assert sorted(t.name for t in listed.topics if t.name.startswith("big-")) == names
        assert {len(t.partitions) for t in listed.topics if t.name.startswith("big-")} == {2}
        count = RESOURCES_PER_SLICE * 2 + 3
        resources = [{"resource_type": 2, "resource_name": n, "configuration_keys": ["retention.ms"]}
                     for n in names[:count]]  # fmt: skip
        described = conn.request(ApiKey.DESCRIBE_CONFIGS, 4, {"resources": resources, "include_synonyms": False,
                                                              "include_documentation": False}).body  # fmt: skip
        assert [r.resource_name for r in described.results] == names[:count]
        assert {(r.configs[0].name, int(r.error_code)) for r in described.results} == {("retention.ms", 0)}


def test_thousands_of_acls_described_and_deleted(big_server: KstewardServer) -> None:
    creations = [{"resource_type": 2, "resource_name": f"acl-topic-{i}", "resource_pattern_type": 3,
                  "principal": f"User:u{i % 7}", "host": "*", "operation": 3, "permission_type": 3}
                 for i in range(ACLS)]  # fmt: skip
    with admin(big_server) as conn:
        for start in range(0, ACLS, 1000):
            results = conn.request(ApiKey.CREATE_ACLS, 3, {"creations": creations[start : start + 1000]}).body.results
            assert {int(r.error_code) for r in results} == {0}
        described = conn.request(ApiKey.DESCRIBE_ACLS, 3, ANY).body
        assert sum(len(r.acls) for r in described.resources) == ACLS
        assert {r.resource_name for r in described.resources} == {c["resource_name"] for c in creations}
        deleted = conn.request(ApiKey.DELETE_ACLS, 3, {"filters": [ANY]}, min_offset=-1)
        [result] = deleted.body.filter_results
        assert int(result.error_code) == 0 and len(result.matching_acls) == ACLS
        assert {m.resource_name for m in result.matching_acls} == {c["resource_name"] for c in creations}
        assert deleted.metadata_offset is not None  # asked for, and added to the thread-encoded frame
        assert conn.request(ApiKey.DESCRIBE_ACLS, 3, ANY).body.resources == ()


def test_answers_over_a_mib_are_written_whole_in_slices(big_server: KstewardServer) -> None:
    """A Metadata listing whose topics take more than ``JOIN_BELOW_BYTES`` stays in parts, and the connection
    writes it a MiB at a time; a DescribeConfigs answer with the documentation is one bytes object of over a
    MiB, written the same way. Both must arrive complete and in order."""
    names = [f"mib-{i:05d}-{'x' * 180}" for i in range(6_000)]  # about 230 bytes of entry each: 1.3 MiB
    with admin(big_server) as conn:
        for start in range(0, len(names), 2_000):
            topics = [{"name": n, "num_partitions": 1, "replication_factor": 1, "assignments": [], "configs": []}
                      for n in names[start : start + 2_000]]  # fmt: skip
            values = {"topics": topics, "validate_only": False, "timeout": datetime.timedelta(seconds=60)}
            created = conn.request(ApiKey.CREATE_TOPICS, 7, values).body
            assert {int(t.error_code) for t in created.topics} == {0}
        listed = conn.request(ApiKey.METADATA, 12, {"topics": None, "allow_auto_topic_creation": False,
                                                    "include_topic_authorized_operations": False})  # fmt: skip
        assert len(listed.raw) > max(JOIN_BELOW_BYTES, 1 << 20)
        assert sorted(t.name for t in listed.body.topics if t.name.startswith("mib-")) == names
        resources = [{"resource_type": 2, "resource_name": n, "configuration_keys": None} for n in names[:300]]
        described = conn.request(ApiKey.DESCRIBE_CONFIGS, 4, {"resources": resources, "include_synonyms": True,
                                                              "include_documentation": True})  # fmt: skip
        assert len(described.raw) > 1 << 20
        assert [r.resource_name for r in described.body.results] == names[:300]
        assert all(int(r.error_code) == 0 and r.configs for r in described.body.results)
        assert conn.request(ApiKey.API_VERSIONS, 3, {"client_software_name": "t", "client_software_version": "1"})


def test_a_large_deletion_allows_nothing_once_it_is_answered(big_server: KstewardServer) -> None:
    """alice may describe ``guarded`` through one of thousands of her ACLs. A DeleteAcls of them all, through
    confluent-kafka, is replayed and applied to the authorizer in worker threads; alice's next Metadata, sent the
    moment the answer comes, no longer lists the topic. (That the answer waits for the authorizer is tested in
    tests/unit/test_acl_publisher.py: here the answer's own encoding in a thread takes longer than the change.)"""
    from confluent_kafka.admin import NewTopic

    fillers = max(DELETIONS_ON_THE_LOOP, ACL_CHANGES_ON_THE_LOOP) * 3
    alices: list[Acl] = [("TOPIC", f"filler-{i}", "LITERAL", "User:alice", "*", "DESCRIBE", "ALLOW")
                         for i in range(fillers)]  # fmt: skip
    alices.insert(fillers // 10, ("TOPIC", "guarded", "LITERAL", "User:alice", "*", "DESCRIBE", "ALLOW"))
    admin = confluent_admin(big_server.bootstrap, ADMIN)
    admin.create_topics([NewTopic("guarded", 1, 1)])["guarded"].result(30)
    acls = Confluent(big_server.bootstrap)
    acls.create(ADMIN, alices)
    alice = confluent_admin(big_server.bootstrap, ALICE)
    assert alice.list_topics(topic="guarded", timeout=10).topics["guarded"].error is None
    [deleted] = acls.delete(ADMIN, [("TOPIC", None, None, "User:alice", None, None, None)])
    assert deleted == set(alices)
    guarded = alice.list_topics(topic="guarded", timeout=10).topics["guarded"]
    assert guarded.error is not None and guarded.error.code() == 29  # TOPIC_AUTHORIZATION_FAILED
