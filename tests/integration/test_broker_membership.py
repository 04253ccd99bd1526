"""Broker membership against a real ``ksteward serve`` (the SASL template, authorizer on, a short
``broker.session.timeout.ms``): a raw client plays broker 2 on the controller listener.

- BrokerRegistration and BrokerHeartbeat need CLUSTER_ACTION on the cluster;
- broker 2 registers fenced and is unfenced by its heartbeats, and the Metadata a real client gets then
  lists it; a topic assigned to it is led by it;
- another incarnation of broker 2 is refused while the first one's session is live;
- once broker 2 stops heartbeating it is fenced: Metadata drops it and its partition's leader moves to
  broker 1; after that a new incarnation may register;
- a broker that asks to shut down loses its leadership first, then is told to shut down;
- a partition the combined node leads, moved onto broker 2, takes broker 2 into its ISR (AlterPartition from
  the combined node's own broker to its own controller).

Broker 2 advertises the server's own client listener, so a client sent to "node 2" reaches the server.
"""

from __future__ import annotations

import datetime
import threading
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from clients import Auth, confluent_admin
from harness import HOST, KstewardServer, ServerFactory, wait_for
from rawkafka import RawConnection, connect

from ksteward.protocol.apis import ApiKey

ADMIN = Auth("PLAIN", "admin", "admin-secret")
SESSION_MS = 3000
NONE, CLUSTER_AUTHORIZATION_FAILED, DUPLICATE_BROKER_REGISTRATION = 0, 31, 101
SASL_PLAINTEXT = 2  # SecurityProtocol id
CLUSTER, LITERAL, CLUSTER_ACTION, ALLOW = 4, 3, 9, 3


@pytest.fixture
def server(server_factory: ServerFactory) -> KstewardServer:
    return server_factory("sasl", {"broker.session.timeout.ms": str(SESSION_MS)}).start()


def registration(server: KstewardServer, incarnation: uuid.UUID) -> dict[str, Any]:
    return {
        "broker_id": 2,
        "cluster_id": server.cluster_id,
        "incarnation_id": incarnation,
        "listeners": [
            {"name": "SASL_PLAINTEXT", "host": HOST, "port": server.port, "security_protocol": SASL_PLAINTEXT}
        ],
        # Every finalized feature must be supported (a new log finalizes these three, as Kafka 4.0's format does).
        "features": [
            {"name": "metadata.version", "min_supported_version": 7, "max_supported_version": 25},
            {"name": "group.version", "min_supported_version": 0, "max_supported_version": 1},
            {"name": "transaction.version", "min_supported_version": 0, "max_supported_version": 2},
        ],
        "rack": None,
        "log_dirs": [uuid.uuid4()],
    }


def register(conn: RawConnection, server: KstewardServer, incarnation: uuid.UUID) -> Any:
    return conn.request(ApiKey.BROKER_REGISTRATION, 4, registration(server, incarnation)).body


def beat(conn: RawConnection, epoch: int, offset: int, *, shut_down: bool = False) -> Any:
    body = {"broker_id": 2, "broker_epoch": epoch, "current_metadata_offset": offset, "want_fence": False,
            "want_shut_down": shut_down}  # fmt: skip
    return conn.request(ApiKey.BROKER_HEARTBEAT, 1, body).body


class Heartbeats:
    """Broker 2's heartbeats, every tenth of a session, on their own connection, until stopped; with
    ``want_shut_down`` set they ask for a controlled shutdown."""

    def __init__(self, server: KstewardServer, epoch: int) -> None:
        self.conn = connect((HOST, server.controller_port))
        self.epoch = epoch
        self.last: Any = None
        self.want_shut_down = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            # A broker reports the offset it has applied; this one claims its registration's, which is
            # where a new incarnation's epoch sits, so it counts as caught up.
            self.last = beat(self.conn, self.epoch, self.epoch, shut_down=self.want_shut_down)
            self._stop.wait(SESSION_MS / 10_000)  # the heartbeat interval, not synchronisation

    def __enter__(self) -> Heartbeats:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.conn.close()


def grant_cluster_action_to_anonymous(server: KstewardServer) -> None:
    """The controller listener is PLAINTEXT: its principal is User:ANONYMOUS."""
    with connect(server.address) as conn:
        assert int(conn.sasl_plain("admin", "admin-secret").body.error_code) == 0
        creation = {
            "resource_type": CLUSTER, "resource_name": "kafka-cluster", "resource_pattern_type": LITERAL,
            "principal": "User:ANONYMOUS", "host": "*", "operation": CLUSTER_ACTION, "permission_type": ALLOW,
        }  # fmt: skip
        body = conn.request(ApiKey.CREATE_ACLS, 3, {"creations": [creation]}).body
        assert [int(r.error_code) for r in body.results] == [NONE]


@pytest.fixture
def controller(server: KstewardServer) -> Iterator[RawConnection]:
    with connect((HOST, server.controller_port)) as conn:
        yield conn


def test_registration_and_heartbeat_need_cluster_action(server: KstewardServer, controller: RawConnection) -> None:
    body = register(controller, server, uuid.uuid4())
    assert (int(body.error_code), int(body.broker_epoch)) == (CLUSTER_AUTHORIZATION_FAILED, -1)
    assert int(beat(controller, 5, 5).error_code) == CLUSTER_AUTHORIZATION_FAILED


def test_registration_is_served_on_the_controller_listener_only(server: KstewardServer) -> None:
    with connect(server.address) as conn:
        assert int(conn.sasl_plain("admin", "admin-secret").body.error_code) == 0
        versions = {int(a.api_key) for a in conn.api_versions().body.api_keys}
    assert ApiKey.BROKER_REGISTRATION not in versions and ApiKey.BROKER_HEARTBEAT not in versions
    with connect((HOST, server.controller_port)) as conn:
        versions = {int(a.api_key) for a in conn.api_versions().body.api_keys}
    assert {ApiKey.BROKER_REGISTRATION, ApiKey.BROKER_HEARTBEAT} <= versions


def create_topic_on_two(server: KstewardServer, name: str = "on-two") -> None:
    """CreateTopics with a manual assignment: one partition on brokers 2 and 1, so broker 2 leads it."""
    topic = {"name": name, "num_partitions": -1, "replication_factor": -1, "configs": [],
             "assignments": [{"partition_index": 0, "broker_ids": [2, 1]}]}  # fmt: skip
    with connect(server.address) as conn:
        assert int(conn.sasl_plain("admin", "admin-secret").body.error_code) == 0
        body = conn.request(
            ApiKey.CREATE_TOPICS, 7, {"topics": [topic], "timeout": datetime.timedelta(seconds=15)}
        ).body
    assert [(t.name, int(t.error_code)) for t in body.topics] == [(name, NONE)]


def brokers(admin: Any) -> set[int]:
    return set(admin.list_topics(timeout=10).brokers)


def leader(admin: Any, topic: str) -> int | None:
    metadata = admin.list_topics(topic=topic, timeout=10).topics.get(topic)
    if metadata is None or metadata.error is not None or 0 not in metadata.partitions:
        return None
    return int(metadata.partitions[0].leader)


def test_a_broker_joins_is_fenced_when_silent_and_its_leadership_moves(
    server: KstewardServer, controller: RawConnection
) -> None:
    grant_cluster_action_to_anonymous(server)
    first = uuid.uuid4()
    body = register(controller, server, first)
    assert int(body.error_code) == NONE
    epoch = int(body.broker_epoch)
    admin = confluent_admin(server.bootstrap, ADMIN)
    assert brokers(admin) == {1}  # registered but fenced: not listed
    with Heartbeats(server, epoch) as heartbeats:
        wait_for(lambda: heartbeats.last is not None and not heartbeats.last.is_fenced, 10, "broker 2 unfenced")
        assert int(heartbeats.last.error_code) == NONE and heartbeats.last.is_caught_up
        wait_for(lambda: brokers(admin) == {1, 2}, 10, "Metadata to list broker 2")
        body = register(controller, server, uuid.uuid4())  # another process claiming id 2
        assert int(body.error_code) == DUPLICATE_BROKER_REGISTRATION
        create_topic_on_two(server)
        wait_for(lambda: leader(admin, "on-two") == 2, 10, "broker 2 to lead on-two")
    # No more heartbeats: the session times out, the controller fences broker 2 and moves its leadership.
    wait_for(lambda: brokers(admin) == {1}, 30, "Metadata to drop broker 2")
    wait_for(lambda: leader(admin, "on-two") == 1, 10, "on-two's leader to move to broker 1")
    partition = admin.list_topics(topic="on-two", timeout=10).topics["on-two"].partitions[0]
    assert list(partition.isrs) == [1]
    body = register(controller, server, uuid.uuid4())  # the old session is gone: a new incarnation is welcome
    assert int(body.error_code) == NONE and int(body.broker_epoch) > epoch


def test_controlled_shutdown_moves_leadership_before_the_broker_is_told_to_go(
    server: KstewardServer, controller: RawConnection
) -> None:
    grant_cluster_action_to_anonymous(server)
    body = register(controller, server, uuid.uuid4())
    assert int(body.error_code) == NONE
    admin = confluent_admin(server.bootstrap, ADMIN)
    with Heartbeats(server, int(body.broker_epoch)) as heartbeats:
        wait_for(lambda: heartbeats.last is not None and not heartbeats.last.is_fenced, 10, "broker 2 unfenced")
        create_topic_on_two(server, "leaving")
        wait_for(lambda: leader(admin, "leaving") == 2, 10, "broker 2 to lead leaving")
        heartbeats.want_shut_down = True  # SIGTERM on a real broker
        wait_for(lambda: heartbeats.last.should_shut_down, 10, "ShouldShutDown")
        assert heartbeats.last.is_fenced
        assert leader(admin, "leaving") == 1 and brokers(admin) == {1}


def replicas_and_isr(admin: Any, topic: str) -> tuple[list[int], list[int], int] | None:
    metadata = admin.list_topics(topic=topic, timeout=10).topics.get(topic)
    if metadata is None or metadata.error is not None or 0 not in metadata.partitions:
        return None
    p = metadata.partitions[0]
    return list(p.replicas), list(p.isrs), int(p.leader)


def test_the_combined_node_leader_takes_a_new_replica_into_the_isr(
    server: KstewardServer, controller: RawConnection
) -> None:
    """The combined node's own broker leads a partition moved onto broker 2: it asks its controller for the
    bigger ISR itself (docs/reassignment.md, "Catching up"), and the move completes."""
    grant_cluster_action_to_anonymous(server)
    body = register(controller, server, uuid.uuid4())
    admin = confluent_admin(server.bootstrap, ADMIN)
    with Heartbeats(server, int(body.broker_epoch)):
        wait_for(lambda: brokers(admin) == {1, 2}, 10, "broker 2 unfenced")
        with connect(server.address) as conn:
            assert int(conn.sasl_plain("admin", "admin-secret").body.error_code) == 0
            topic = {"name": "moves", "num_partitions": -1, "replication_factor": -1, "configs": [],
                     "assignments": [{"partition_index": 0, "broker_ids": [1]}]}  # fmt: skip
            conn.request(ApiKey.CREATE_TOPICS, 7, {"topics": [topic], "timeout": datetime.timedelta(seconds=15)})
            move = {"name": "moves", "partitions": [{"partition_index": 0, "replicas": [2, 1]}]}
            reply = conn.request(
                ApiKey.ALTER_PARTITION_REASSIGNMENTS, 0, {"timeout": datetime.timedelta(seconds=15), "topics": [move]}
            ).body
        assert [int(p.error_code) for t in reply.responses for p in t.partitions] == [NONE]
        wait_for(lambda: replicas_and_isr(admin, "moves") == ([2, 1], [1, 2], 1), 10, "broker 2 in the ISR")
