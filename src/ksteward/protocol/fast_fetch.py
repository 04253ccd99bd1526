"""Direct writers for Fetch (api 1) v13-17, the request the metadata log is replicated with (KIP-595).

Every record committed in a controller quorum costs each follower two Fetch round trips (one brings the
record, the next reports it durable and brings the new high watermark back), and every broker one more.
Written through kio's generic writer, a Fetch request costs a follower about 23 µs and an answer about
21 µs on the leader, which answers four per commit: a fifth of the leader's CPU for a commit. These
functions write the same bytes with ``struct``. ``tests/unit/test_fast_fetch.py`` checks them byte for byte
against kio, which stays the reference; anything outside the shape the Raft code sends (aborted
transactions, a version below 13) returns None and goes through kio.

The bodies, as Kafka's ``FetchRequest.json`` and ``FetchResponse.json`` define them (flexible from v12;
topic ids instead of names from v13). Tagged fields are written only when they differ from their default,
in tag order, each as (tag, size, value), and a struct written as a tagged field carries its own (empty)
tag section:

- request: ``ReplicaId`` int32 (v13-14; from v15 it is the tagged ``ReplicaState``), ``MaxWaitMs``,
  ``MinBytes``, ``MaxBytes`` int32, ``IsolationLevel`` int8, ``SessionId``, ``SessionEpoch`` int32, then
  topics (uuid; partitions: ``Partition``, ``CurrentLeaderEpoch`` int32, ``FetchOffset`` int64,
  ``LastFetchedEpoch`` int32, ``LogStartOffset`` int64, ``PartitionMaxBytes`` int32, tag 0
  ``ReplicaDirectoryId`` uuid from v17), forgotten topics (uuid; int32 partitions), ``RackId`` compact
  string; tags 0 ``ClusterId`` (compact string), 1 ``ReplicaState`` (int32 id, int64 epoch; v15+).
- response: ``ThrottleTimeMs`` int32, ``ErrorCode`` int16, ``SessionId`` int32, then topics (uuid;
  partitions: ``PartitionIndex`` int32, ``ErrorCode`` int16, ``HighWatermark``, ``LastStableOffset``,
  ``LogStartOffset`` int64, ``AbortedTransactions`` (null here), ``PreferredReadReplica`` int32,
  ``Records`` compact nullable bytes; tags 0 ``DivergingEpoch`` (int32, int64), 1 ``CurrentLeader`` (int32,
  int32), 2 ``SnapshotId`` (int64, int32)); tag 0 ``NodeEndpoints`` (v16+: int32 id, compact host, int32
  port, compact nullable rack).
"""

from __future__ import annotations

import struct
from typing import Any
from uuid import UUID

from ksteward.protocol.varint import write_uvarint

FIRST_VERSION = 13  # topic ids, no names: the only Fetch versions the Raft code sends or answers
LAST_VERSION = 17

_NO_TAGS = b"\x00"
_NULL = b"\x00"  # a null compact field: length 0
_ZERO_UUID = bytes(16)

_I32 = struct.Struct(">i")
_REQUEST_HEAD = struct.Struct(">iiibii")  # max wait, min bytes, max bytes, isolation level, session id, epoch
_REQUEST_PARTITION = struct.Struct(">iiqiqi")
_REPLICA_STATE = struct.Struct(">iqB")  # id, epoch, empty tags
_RESPONSE_HEAD = struct.Struct(">ihi")  # throttle time, error code, session id
_RESPONSE_PARTITION = struct.Struct(">ihqqq")  # index, error, high watermark, last stable offset, log start
_EPOCH_END_OFFSET = struct.Struct(">BBiqB")  # tag 0, size 13: epoch, end offset, empty tags
_CURRENT_LEADER = struct.Struct(">BBiiB")  # tag 1, size 9: leader id, leader epoch, empty tags
_SNAPSHOT_ID = struct.Struct(">BBqiB")  # tag 2, size 13: end offset, epoch, empty tags


def _compact(value: bytes) -> bytes:
    return write_uvarint(len(value) + 1) + value


def _count(items: Any) -> bytes:
    return write_uvarint(len(items) + 1)


def _uuid(value: UUID | None) -> bytes:
    return _ZERO_UUID if value is None else value.bytes


def _ms(value: Any) -> int:
    """A kio ``i32Timedelta`` in milliseconds, rounded as kio's writer rounds it."""
    return round(value.total_seconds() * 1000)


def fetch_request_body(api_version: int, body: Any) -> bytes | None:
    """A FetchRequest body (no header), as kio writes it; None for a version outside 13-17."""
    if not FIRST_VERSION <= api_version <= LAST_VERSION:
        return None
    head = b"" if api_version >= 15 else _I32.pack(body.replica_id)
    parts = [
        head,
        _REQUEST_HEAD.pack(
            _ms(body.max_wait),
            body.min_bytes,
            body.max_bytes,
            body.isolation_level,
            body.session_id,
            body.session_epoch,
        ),
        _count(body.topics),
    ]
    for topic in body.topics:
        parts += (_uuid(topic.topic_id), _count(topic.partitions))
        for p in topic.partitions:
            position = (
                p.partition,
                p.current_leader_epoch,
                p.fetch_offset,
                p.last_fetched_epoch,
                p.log_start_offset,
                p.partition_max_bytes,
            )
            parts.append(_REQUEST_PARTITION.pack(*position))
            directory = p.replica_directory_id if api_version >= 17 else None
            parts.append(_NO_TAGS if directory is None else b"\x01\x00\x10" + directory.bytes)
        parts.append(_NO_TAGS)
    parts.append(_count(body.forgotten_topics_data))
    for forgotten in body.forgotten_topics_data:
        parts += (_uuid(forgotten.topic_id), _count(forgotten.partitions))
        parts += [_I32.pack(p) for p in forgotten.partitions]
        parts.append(_NO_TAGS)
    parts.append(_compact(body.rack_id.encode()))
    tags = []
    if body.cluster_id is not None:
        cluster_id = _compact(body.cluster_id.encode())
        tags.append(b"\x00" + write_uvarint(len(cluster_id)) + cluster_id)
    if api_version >= 15:
        state = body.replica_state
        if state.replica_id != -1 or state.replica_epoch != -1:
            tags.append(b"\x01\x0d" + _REPLICA_STATE.pack(state.replica_id, state.replica_epoch, 0))
    parts.append(write_uvarint(len(tags)))
    parts += tags
    return b"".join(parts)


def fetch_response_body(api_version: int, response: Any) -> bytes | None:
    """A FetchResponse body (no header), as kio writes it; None for a version outside 13-17 or aborted
    transactions (the metadata log has none)."""
    if not FIRST_VERSION <= api_version <= LAST_VERSION:
        return None
    parts = [
        _RESPONSE_HEAD.pack(_ms(response.throttle_time), response.error_code.value, response.session_id),
        _count(response.responses),
    ]
    for topic in response.responses:
        parts += (_uuid(topic.topic_id), _count(topic.partitions))
        for p in topic.partitions:
            if p.aborted_transactions is not None:
                return None
            records = p.records
            parts += (
                _RESPONSE_PARTITION.pack(
                    p.partition_index, p.error_code.value, p.high_watermark, p.last_stable_offset, p.log_start_offset
                ),
                _NULL,  # no aborted transactions
                _I32.pack(p.preferred_read_replica),
                _NULL if records is None else _compact(records),
            )
            parts += _partition_tags(p)
        parts.append(_NO_TAGS)
    endpoints = response.node_endpoints if api_version >= 16 else ()
    if not endpoints:
        parts.append(_NO_TAGS)
        return b"".join(parts)
    nodes = [_count(endpoints)]
    for node in endpoints:
        rack = _NULL if node.rack is None else _compact(node.rack.encode())
        nodes += (_I32.pack(node.node_id), _compact(node.host.encode()), _I32.pack(node.port), rack, _NO_TAGS)
    value = b"".join(nodes)
    parts += (b"\x01\x00", write_uvarint(len(value)), value)
    return b"".join(parts)


def _partition_tags(p: Any) -> list[bytes]:
    """A partition's tag section: the count, then each field that differs from its default, in tag order."""
    tags = []
    diverging, leader, snapshot = p.diverging_epoch, p.current_leader, p.snapshot_id
    if diverging.epoch != -1 or diverging.end_offset != -1:
        tags.append(_EPOCH_END_OFFSET.pack(0, 13, diverging.epoch, diverging.end_offset, 0))
    if leader.leader_id != -1 or leader.leader_epoch != -1:
        tags.append(_CURRENT_LEADER.pack(1, 9, leader.leader_id, leader.leader_epoch, 0))
    if snapshot.end_offset != -1 or snapshot.epoch != -1:
        tags.append(_SNAPSHOT_ID.pack(2, 13, snapshot.end_offset, snapshot.epoch, 0))
    return [write_uvarint(len(tags)), *tags]
