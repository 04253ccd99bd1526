"""DescribeTopicPartitions (KIP-966) through kafka-python's ``describe_topic_partitions`` (the only client of the
four with a call for it) and the raw wire: paging with the cursor and the partition limit, Kafka's errors, the
authorization of listed and all-topics requests, the controller listener that does not serve it, and a broker-only
node of a cluster answering from its own image."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from acl_clients import acl_client
from clients import Auth, confluent_admin, kafka_python_admin
from harness import Cluster, KstewardServer, wait_for
from rawkafka import RawConnection, connect

from ksteward.protocol.apis import ApiKey

ADMIN = Auth("PLAIN", "admin", "admin-secret")
ALICE = Auth("PLAIN", "alice", "alice-secret")
UNKNOWN_TOPIC, INVALID_TOPIC, TOPIC_AUTHORIZATION_FAILED, INVALID_REQUEST = 3, 17, 29, 42
ZERO = uuid.UUID(int=0)
NO_ID = None  # the zero id, as kio decodes it
DESCRIBE_BIT = 1 << 8
TOPICS = {"dtp-a": 3, "dtp-b": 2, "dtp-c": 1, "alice-1": 2}


def _create(bootstrap: str, auth: Auth, topics: dict[str, int]) -> None:
    from confluent_kafka.admin import NewTopic

    admin = confluent_admin(bootstrap, auth)  # kept alive until every future is done
    futures = admin.create_topics([NewTopic(name, count, 1) for name, count in topics.items()], request_timeout=15)
    for future in futures.values():
        future.result()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KstewardServer]:
    # The broker's cap (4) is below the clients' default ResponsePartitionLimit (2000).
    s = KstewardServer(tmp_path_factory.mktemp("dtp"), "sasl", {"max.request.partition.size.limit": "4"}, name="dtp")
    try:
        s.start()
        _create(s.bootstrap, ADMIN, TOPICS)
        grant = ("TOPIC", "alice-", "PREFIXED", "User:alice", "*", "DESCRIBE", "ALLOW")
        acl_client("kafka-python", s.bootstrap).create(ADMIN, [grant])
        yield s
    finally:
        s.kill()


def describe(conn: RawConnection, names: list[str], limit: int = 2000, cursor: tuple[str, int] | None = None) -> Any:
    body = {
        "topics": [{"name": n} for n in names],
        "response_partition_limit": limit,
        "cursor": None if cursor is None else {"topic_name": cursor[0], "partition_index": cursor[1]},
    }
    return conn.request(ApiKey.DESCRIBE_TOPIC_PARTITIONS, 0, body).body


def login(server: KstewardServer, auth: Auth) -> RawConnection:
    conn = connect(server.address)
    assert int(conn.sasl_plain(auth.username, auth.password).body.error_code) == 0
    return conn


def pages(admin: Any, topics: list[str], limit: int) -> list[list[tuple[str, list[int]]]]:
    """Every page kafka-python's call returns, following ``next_cursor`` to the end."""
    result, cursor = [], None
    while True:
        page = admin.describe_topic_partitions(topics, response_partition_limit=limit, cursor=cursor)
        result.append([(t["name"], [p["partition_index"] for p in t["partitions"]]) for t in page["topics"]])
        cursor = page["next_cursor"]
        if cursor is None:
            return result
        assert len(result) < 20, "the cursor never ended"


def test_kafka_python_pages_through_every_topic_with_the_cursor(server: KstewardServer) -> None:
    admin = kafka_python_admin(server.bootstrap, ADMIN)
    try:
        assert pages(admin, [], 2) == [
            [("alice-1", [0, 1])],
            [("dtp-a", [0, 1])],
            [("dtp-a", [2]), ("dtp-b", [0])],
            [("dtp-b", [1]), ("dtp-c", [0])],
        ]
        # A limit above the broker's max.request.partition.size.limit (4) is capped to it.
        assert pages(admin, ["dtp-c", "dtp-a", "dtp-b"], 2000) == [
            [("dtp-a", [0, 1, 2]), ("dtp-b", [0])],
            [("dtp-b", [1]), ("dtp-c", [0])],
        ]
        first = admin.describe_topic_partitions(["dtp-a"])
        (topic,) = first["topics"]
        assert topic["error_code"] == 0 and topic["topic_id"] != ZERO and first["next_cursor"] is None
        assert [(p["leader_id"], p["replica_nodes"], p["isr_nodes"], p["offline_replicas"])
                for p in topic["partitions"]] == [(1, [1], [1], [])] * 3  # fmt: skip
        assert topic["topic_authorized_operations"] & DESCRIBE_BIT
    finally:
        admin.close()


def test_a_full_page_ends_before_the_next_topic(server: KstewardServer) -> None:
    with login(server, ADMIN) as conn:
        body = describe(conn, ["dtp-b", "dtp-c"], limit=2)
        assert [(t.name, len(t.partitions)) for t in body.topics] == [("dtp-b", 2)]
        assert (body.next_cursor.topic_name, body.next_cursor.partition_index) == ("dtp-c", 0)
        # A limit of 0 or less serves one partition, as Kafka's max(min(...), 1).
        body = describe(conn, ["dtp-a"], limit=0)
        assert [len(t.partitions) for t in body.topics] == [1]
        assert (body.next_cursor.topic_name, body.next_cursor.partition_index) == ("dtp-a", 1)


def test_unknown_and_invalid_names(server: KstewardServer) -> None:
    with login(server, ADMIN) as conn:
        body = describe(conn, ["ghost", "bad/name", "dtp-c", "ghost"])
    assert [(t.name, int(t.error_code), t.topic_id, len(t.partitions)) for t in body.topics] == [
        ("bad/name", INVALID_TOPIC, NO_ID, 0),
        ("dtp-c", 0, body.topics[1].topic_id, 1),
        ("ghost", UNKNOWN_TOPIC, NO_ID, 0),
    ]


def test_a_bad_cursor_fails_every_listed_topic(server: KstewardServer) -> None:
    with login(server, ADMIN) as conn:
        outside = describe(conn, ["dtp-a", "dtp-b"], cursor=("dtp-c", 0))
        negative = describe(conn, ["dtp-a"], cursor=("dtp-a", -1))
        everything_negative = describe(conn, [], cursor=("dtp-a", -1))
    assert [(t.name, int(t.error_code), t.partitions) for t in outside.topics] == [
        ("dtp-a", INVALID_REQUEST, ()),
        ("dtp-b", INVALID_REQUEST, ()),
    ]
    assert [(t.name, int(t.error_code)) for t in negative.topics] == [("dtp-a", INVALID_REQUEST)]
    assert list(everything_negative.topics) == [] and everything_negative.next_cursor is None


def test_authorization_of_listed_and_all_topics_requests(server: KstewardServer) -> None:
    with login(server, ALICE) as alice:
        listed = describe(alice, ["dtp-a", "alice-1", "nowhere"])
        everything = describe(alice, [])
    # Listed: what alice may not describe is denied after the page, existing or not, with no id.
    assert [(t.name, int(t.error_code), t.topic_id) for t in listed.topics] == [
        ("alice-1", 0, listed.topics[0].topic_id),
        ("dtp-a", TOPIC_AUTHORIZATION_FAILED, NO_ID),
        ("nowhere", TOPIC_AUTHORIZATION_FAILED, NO_ID),
    ]
    assert listed.topics[0].topic_id not in (NO_ID, ZERO)
    assert int(listed.topics[0].topic_authorized_operations) == DESCRIBE_BIT
    # All topics: the others are left out without a word.
    assert [t.name for t in everything.topics] == ["alice-1"]


def test_not_served_on_the_controller_listener(server: KstewardServer) -> None:
    with connect((server.address[0], server.controller_port)) as conn:
        keys = {int(k.api_key) for k in conn.api_versions().body.api_keys}
        assert ApiKey.DESCRIBE_TOPIC_PARTITIONS not in keys
        conn.send_request(ApiKey.DESCRIBE_TOPIC_PARTITIONS, 0, {"topics": [], "response_partition_limit": 10,
                                                                 "cursor": None})  # fmt: skip
        assert conn.read_until_closed() == b""
    with login(server, ADMIN) as conn:
        versions = {int(k.api_key): (int(k.min_version), int(k.max_version)) for k in conn.api_versions().body.api_keys}
    assert versions[ApiKey.DESCRIBE_TOPIC_PARTITIONS] == (0, 0)


def test_a_broker_only_node_answers_from_its_image(cluster: Cluster) -> None:
    first, second = cluster.brokers
    _create(first.bootstrap, Auth(), {"dtp-cluster": 3})

    def on_second() -> Any:
        with connect(second.address) as conn:
            body = describe(conn, ["dtp-cluster"])
        return body if int(body.topics[0].error_code) == 0 else None

    body = wait_for(on_second, 15, "the topic on the second broker")
    (topic,) = body.topics
    assert [p.partition_index for p in topic.partitions] == [0, 1, 2]
    leaders = {p.leader_id for p in topic.partitions}
    assert leaders <= {first.cluster_node_id, second.cluster_node_id}
    with connect(cluster.controller.address) as conn:
        assert ApiKey.DESCRIBE_TOPIC_PARTITIONS not in {int(k.api_key) for k in conn.api_versions().body.api_keys}
