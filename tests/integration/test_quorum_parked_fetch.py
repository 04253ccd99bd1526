"""A Fetch the leader of a controller quorum parks (KafkaRaftClient's fetch purgatory; KafkaRaftClientTest
#testPurgatoryFetchTimeout and #testPurgatoryFetchSatisfiedByWrite): with nothing new to read it is answered, empty,
once its MaxWaitMs is over; a record appended while it waits answers it at once, with the record.

Raw Fetch v17 requests from an observer id on the leader's controller listener. The NoOpRecord writer is off
(``metadata.max.idle.interval.ms=0``) and there is no broker, so nothing but the test appends to the log.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from cluster_helpers import caught_up
from harness import Cluster, ClusterNode, wait_for
from kio.schema.errors import ErrorCode
from rawkafka import connect, quorum_partition

from ksteward.protocol.apis import ApiKey
from ksteward.raft import METADATA_TOPIC_ID

OBSERVER_ID = 1000  # no node of the cluster: the leader takes it for an observer


@pytest.fixture
def quorum(tmp_path: Path) -> Iterator[Cluster]:
    made = Cluster(tmp_path, brokers=0, controllers=3, overrides={"metadata.max.idle.interval.ms": "0"})
    try:
        yield made.start()
    finally:
        made.kill()


def fetch(node: ClusterNode, cluster_id: str, epoch: int, offset: int, max_wait_ms: int) -> Any:
    partition = {"partition": 0, "current_leader_epoch": epoch, "fetch_offset": offset, "last_fetched_epoch": epoch,
                 "log_start_offset": -1, "partition_max_bytes": 0}  # fmt: skip
    body = {"cluster_id": cluster_id, "replica_state": {"replica_id": OBSERVER_ID, "replica_epoch": -1},
            "max_wait": datetime.timedelta(milliseconds=max_wait_ms), "min_bytes": 0, "max_bytes": 1 << 20,
            "isolation_level": 0, "session_id": 0, "session_epoch": -1, "forgotten_topics_data": [], "rack_id": "",
            "topics": [{"topic_id": METADATA_TOPIC_ID, "partitions": [partition]}]}  # fmt: skip
    with connect(node.address, timeout=120.0) as conn:
        response = conn.request(ApiKey.FETCH, 17, body).body
    assert response.error_code == ErrorCode.none
    (answer,) = response.responses[0].partitions
    assert answer.error_code == ErrorCode.none and answer.diverging_epoch.epoch == -1
    return answer


def test_a_parked_fetch_ends_empty_after_its_wait_or_at_once_with_a_new_record(quorum: Cluster) -> None:
    leader = quorum.wait_for_leader()
    found = wait_for(lambda: caught_up(leader), 30.0, "the leader's start-up records committed")
    assert isinstance(found, tuple)
    epoch, end = found
    # Nothing new: parked, then answered empty when its wait is over (a hang would fail on the client's timeout).
    assert fetch(leader, quorum.cluster_id, epoch, end, max_wait_ms=300).records in (None, b"")
    assert caught_up(leader) == (epoch, end)  # still nothing appended: the answer was the wait's end
    with ThreadPoolExecutor(1) as pool:
        parked = pool.submit(fetch, leader, quorum.cluster_id, epoch, end, 100_000)  # far longer than the test

        def observed_fetching() -> bool:
            observers = quorum_partition(leader.address).observers
            return any(int(o.replica_id) == OBSERVER_ID and int(o.log_end_offset) == end for o in observers)

        wait_for(observed_fetching, 30.0, "the leader holding the observer's Fetch")
        creation = {"resource_type": 2, "resource_name": "parked", "resource_pattern_type": 3,
                    "principal": "User:alice", "host": "*", "operation": 3, "permission_type": 3}  # fmt: skip
        with connect(leader.address) as conn:  # straight to the active controller (KIP-919)
            body = conn.request(ApiKey.CREATE_ACLS, 3, {"creations": [creation]}).body
        assert [int(r.error_code) for r in body.results] == [ErrorCode.none]
        answer = parked.result(timeout=60.0)
    assert answer.records and int(answer.high_watermark) >= end
