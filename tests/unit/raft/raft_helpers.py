"""Shared pieces of the KRaft unit tests: real metadata logs on tmp_path, requests built as a fetcher would."""

from __future__ import annotations

import logging
import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any

from ksteward.metadata.log import MetadataLog
from ksteward.protocol.apis import ApiKey
from ksteward.protocol.build import build
from ksteward.protocol.codec import request_class
from ksteward.raft import METADATA_TOPIC_ID, METADATA_TOPIC_NAME
from ksteward.raft.leader import RaftLeader
from ksteward.raft.log_view import MetadataLogView

LOGGER = logging.getLogger("test.raft")
CLUSTER_ID = "ksteward-cluster-id-0"
LEADER_ID = 1
CONTROLLER = "CONTROLLER"


def open_log(path: Path, segment_bytes: int = 1 << 20) -> MetadataLog:
    return MetadataLog.open(path, segment_bytes=segment_bytes, logger=LOGGER)


def write_epochs(log: MetadataLog, layout: list[tuple[int, int]]) -> None:
    """``layout``: (epoch, records) per batch, one record per offset."""
    for epoch, count in layout:
        values = [b"v%d" % (log.next_offset + i) for i in range(count)]
        log.append(values, timestamp_ms=1000 + log.next_offset, leader_epoch=epoch)
    log.flush()


def leader_for(log: MetadataLog, epoch: int, **kwargs: Any) -> RaftLeader:
    view = MetadataLogView(log, served_end=lambda: log.durable_offset)
    return RaftLeader(node_id=LEADER_ID, cluster_id=CLUSTER_ID, epoch=epoch, log=view,
                      endpoints={CONTROLLER: ("127.0.0.1", 9093)}, **kwargs)  # fmt: skip


def fetch_request(
    offset: int,
    last_epoch: int,
    *,
    leader_epoch: int,
    version: int = 17,
    max_wait_ms: int = 500,
    replica_id: int = 7,
    cluster_id: str | None = CLUSTER_ID,
    topic_id: uuid.UUID = METADATA_TOPIC_ID,
    partition: int = 0,
    max_bytes: int = 8 << 20,
) -> Any:
    values = {
        "cluster_id": cluster_id,
        "replica_id": replica_id,
        "replica_state": {"replica_id": replica_id, "replica_epoch": -1},
        "max_wait": timedelta(milliseconds=max_wait_ms),
        "min_bytes": 0,
        "max_bytes": max_bytes,
        "topics": [
            {
                "topic_id": topic_id,
                "topic": METADATA_TOPIC_NAME,
                "partitions": [
                    {
                        "partition": partition,
                        "current_leader_epoch": leader_epoch,
                        "fetch_offset": offset,
                        "last_fetched_epoch": last_epoch,
                        "partition_max_bytes": 0,
                    }
                ],
            }
        ],
        "forgotten_topics_data": [],
    }
    return build(request_class(ApiKey.FETCH, version), values)


def snapshot_request(
    end_offset: int,
    epoch: int,
    position: int,
    *,
    leader_epoch: int,
    max_bytes: int = 8 << 20,
    name: str = METADATA_TOPIC_NAME,
    partition: int = 0,
    cluster_id: str | None = CLUSTER_ID,
) -> Any:
    values = {
        "cluster_id": cluster_id,
        "replica_id": 7,
        "max_bytes": max_bytes,
        "topics": [
            {
                "name": name,
                "partitions": [
                    {
                        "partition": partition,
                        "current_leader_epoch": leader_epoch,
                        "snapshot_id": {"end_offset": end_offset, "epoch": epoch},
                        "position": position,
                    }
                ],
            }
        ],
    }
    return build(request_class(ApiKey.FETCH_SNAPSHOT, 1), values)


def partition_of(response: Any) -> Any:
    return response.responses[0].partitions[0]
