"""The KRaft leader's side of Fetch (api 1) and FetchSnapshot (api 59) for ``__cluster_metadata-0``.

Kafka's ``KafkaRaftClient.handleFetchRequest`` / ``tryCompleteFetchRequest`` / ``handleFetchSnapshotRequest``,
in the same order of checks (docs/raft.md lists them). Sans-IO: the caller decodes the request, hands it
here with its version and listener, and encodes what comes back. A Fetch that finds nothing to return
and may wait comes back as ``ParkedFetch``: the caller waits until the served end offset passes
``fetch_offset`` or ``max_wait_ms`` passes (Kafka's fetch purgatory), then calls ``complete_fetch``.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from kio.schema.errors import ErrorCode

from ksteward.metadata.epochs import OffsetAndEpoch
from ksteward.metadata.log import OffsetOutOfRangeError
from ksteward.protocol.apis import ApiKey
from ksteward.protocol.build import build
from ksteward.protocol.codec import response_class

from . import METADATA_PARTITION, METADATA_TOPIC_ID, METADATA_TOPIC_NAME
from .log_view import BOOTSTRAP_SNAPSHOT_ID, FetchValidity, LogView, ValidOffsetAndEpoch, validate_offset_and_epoch

__all__ = ["MAX_FETCH_BYTES", "ParkedFetch", "RaftLeader", "fetch_replica_id"]

log = logging.getLogger(__name__)

#: Kafka's ``KafkaRaftClient.MAX_FETCH_SIZE_BYTES``: the most a Fetch or FetchSnapshot reply carries.
MAX_FETCH_BYTES = 8 * 1024 * 1024

_NO_ID = OffsetAndEpoch(-1, -1)
_VALID = ValidOffsetAndEpoch(FetchValidity.VALID, _NO_ID)


@dataclass(frozen=True, slots=True)
class ParkedFetch:
    """Nothing to return yet: wait for the served end to pass ``fetch_offset``, at most ``max_wait_ms``."""

    fetch_offset: int
    max_wait_ms: int


def fetch_replica_id(request: Any) -> int:
    """The fetcher's replica id: ``ReplicaState.ReplicaId`` from v15, ``ReplicaId`` before."""
    state = getattr(request, "replica_state", None)
    return int(state.replica_id) if state is not None else int(getattr(request, "replica_id", -1))


def _ms(value: Any) -> int:
    return int(value // timedelta(milliseconds=1)) if isinstance(value, timedelta) else int(value)


class RaftLeader:
    """The leader of epoch ``epoch`` answering from ``log``; ``endpoints`` maps a listener name to the
    ``(host, port)`` this leader is reached at on it (for ``NodeEndpoints``)."""

    def __init__(
        self,
        *,
        node_id: int,
        cluster_id: str,
        epoch: int,
        log: LogView,
        endpoints: Mapping[str, tuple[str, int]],
        max_fetch_bytes: int = MAX_FETCH_BYTES,
    ) -> None:
        self.node_id = node_id
        self.cluster_id = cluster_id
        self.epoch = epoch
        self.log = log
        self.endpoints = dict(endpoints)
        self.max_fetch_bytes = max_fetch_bytes
        self.shutting_down = False
        #: Last fetch offset of each replica id that fetched (observers included): DescribeQuorum's data.
        self.replica_offsets: dict[int, int] = {}

    # --- Fetch ------------------------------------------------------------------------------------
    def handle_fetch(self, request: Any, api_version: int, listener: str) -> Any:
        """The response, or ``ParkedFetch`` when it should wait for new data."""
        if not self._valid_cluster_id(request.cluster_id if api_version >= 12 else None):
            return self._fetch_top_level(ErrorCode.inconsistent_cluster_id, api_version)
        if not _single_metadata_partition(request):
            # Until multi-raft, a request for anything but the metadata partition is invalid (RaftUtil).
            return self._fetch_top_level(ErrorCode.invalid_request, api_version)
        partition = request.topics[0].partitions[0]
        max_wait_ms = _ms(request.max_wait)
        if (
            max_wait_ms < 0
            or partition.fetch_offset < 0
            or partition.last_fetched_epoch < 0
            or partition.last_fetched_epoch > partition.current_leader_epoch
        ):
            return self._fetch_response(ErrorCode.invalid_request, api_version, listener)
        response = self.complete_fetch(request, api_version, listener)
        data = response.responses[0].partitions[0]
        if (
            data.error_code != ErrorCode.none
            or data.records
            or max_wait_ms == 0
            or data.diverging_epoch.epoch >= 0
            or data.snapshot_id.epoch >= 0
        ):
            return response
        return ParkedFetch(int(partition.fetch_offset), max_wait_ms)

    def complete_fetch(self, request: Any, api_version: int, listener: str) -> Any:
        """Kafka's ``tryCompleteFetchRequest``: validate the epoch and the log position and read. As there,
        an unexpected failure is logged and answered ``UNKNOWN_SERVER_ERROR``."""
        try:
            try:
                return self._try_complete_fetch(request, api_version, listener)
            except OffsetOutOfRangeError:
                # A snapshot let the log start move between the check and the read: check again.
                return self._try_complete_fetch(request, api_version, listener)
        except Exception:
            log.exception("unexpected error completing a Fetch of __cluster_metadata")
            return self._fetch_response(ErrorCode.unknown_server_error, api_version, listener)

    def _try_complete_fetch(self, request: Any, api_version: int, listener: str) -> Any:
        partition = request.topics[0].partitions[0]
        error = self._leader_only_error(int(partition.current_leader_epoch))
        if error is not None:
            return self._fetch_response(error, api_version, listener)
        offset, epoch = int(partition.fetch_offset), int(partition.last_fetched_epoch)
        validity = validate_offset_and_epoch(self.log, offset, epoch)
        records = b""
        if validity.kind is FetchValidity.VALID:
            replica_id = fetch_replica_id(request)
            if replica_id == self.node_id:
                # LeaderState.updateReplicaState refuses a remote replica with the leader's own id;
                # tryCompleteFetchRequest turns that into UNKNOWN_SERVER_ERROR.
                log.error("Fetch from replica %d, which is this leader's own id", replica_id)
                return self._fetch_response(ErrorCode.unknown_server_error, api_version, listener)
            limit = self.max_fetch_bytes
            if request.max_bytes > 0:
                limit = min(limit, int(request.max_bytes))
            records = self.log.read(offset, limit)
            if replica_id >= 0:
                self.replica_offsets[replica_id] = offset
        return self._fetch_response(ErrorCode.none, api_version, listener, records, validity, with_hw=True)

    def _fetch_response(
        self,
        error: ErrorCode,
        api_version: int,
        listener: str,
        records: bytes = b"",
        validity: ValidOffsetAndEpoch = _VALID,
        *,
        with_hw: bool = False,
    ) -> Any:
        """``buildFetchResponse``: the partition always names the current leader and epoch."""
        hw = self.log.end_offset if with_hw else -1
        diverging = validity.offset_and_epoch if validity.kind is FetchValidity.DIVERGING else _NO_ID
        snapshot = validity.offset_and_epoch if validity.kind is FetchValidity.SNAPSHOT else _NO_ID
        partition = {
            "partition_index": METADATA_PARTITION,
            "error_code": error,
            "high_watermark": hw,
            "last_stable_offset": -1,
            "log_start_offset": self.log.start_offset,
            "diverging_epoch": {"epoch": diverging.epoch, "end_offset": diverging.offset},
            "current_leader": {"leader_id": self.node_id, "leader_epoch": self.epoch},
            "snapshot_id": {"end_offset": snapshot.offset, "epoch": snapshot.epoch},
            "aborted_transactions": None,
            "preferred_read_replica": -1,
            "records": records,
        }
        topic = {"topic_id": METADATA_TOPIC_ID, "topic": METADATA_TOPIC_NAME, "partitions": [partition]}
        values = {"error_code": ErrorCode.none, "session_id": 0, "responses": [topic]}
        if api_version >= 17:
            values["node_endpoints"] = self._node_endpoints(listener, with_rack=True)
        return build(response_class(ApiKey.FETCH, api_version), values)

    def _fetch_top_level(self, error: ErrorCode, api_version: int) -> Any:
        return build(response_class(ApiKey.FETCH, api_version), {"error_code": error, "session_id": 0, "responses": []})

    # --- FetchSnapshot ----------------------------------------------------------------------------
    def handle_fetch_snapshot(self, request: Any, api_version: int, listener: str) -> Any:
        """``handleFetchSnapshotRequest``: a chunk of the asked snapshot from ``Position``."""
        cls = response_class(ApiKey.FETCH_SNAPSHOT, api_version)
        if not self._valid_cluster_id(request.cluster_id):
            return build(cls, {"error_code": ErrorCode.inconsistent_cluster_id, "topics": []})
        if len(request.topics) != 1 or len(request.topics[0].partitions) != 1:
            return build(cls, {"error_code": ErrorCode.invalid_request, "topics": []})
        topic, partition = request.topics[0], request.topics[0].partitions[0]
        if topic.name != METADATA_TOPIC_NAME or partition.partition != METADATA_PARTITION:
            return self._snapshot_response(
                api_version, listener, ErrorCode.unknown_topic_or_partition, name=topic.name,
                index=int(partition.partition), leader=False,
            )  # fmt: skip
        error = self._leader_only_error(int(partition.current_leader_epoch))
        if error is not None:
            return self._snapshot_response(api_version, listener, error)
        wanted = OffsetAndEpoch(int(partition.snapshot_id.end_offset), int(partition.snapshot_id.epoch))
        position = int(partition.position)
        chunk = None
        if wanted != BOOTSTRAP_SNAPSHOT_ID:  # the bootstrap checkpoint is never served
            chunk = self.log.snapshot_chunk(wanted, position, min(max(int(request.max_bytes), 0), self.max_fetch_bytes))
        if chunk is None:
            return self._snapshot_response(api_version, listener, ErrorCode.snapshot_not_found)
        size, data = chunk
        if position < 0 or position >= size:
            return self._snapshot_response(api_version, listener, ErrorCode.position_out_of_range)
        return self._snapshot_response(
            api_version, listener, ErrorCode.none, snapshot=wanted, size=size, position=position, data=data
        )

    def _snapshot_response(
        self,
        api_version: int,
        listener: str,
        error: ErrorCode,
        *,
        name: str = METADATA_TOPIC_NAME,
        index: int = METADATA_PARTITION,
        leader: bool = True,
        snapshot: OffsetAndEpoch = _NO_ID,
        size: int = -1,
        position: int = -1,
        data: bytes = b"",
    ) -> Any:
        current = (
            {"leader_id": self.node_id, "leader_epoch": self.epoch} if leader else {"leader_id": -1, "leader_epoch": -1}
        )
        partition = {
            "index": index,
            "error_code": error,
            "snapshot_id": {"end_offset": snapshot.offset, "epoch": snapshot.epoch},
            "current_leader": current,
            "size": size,
            "position": position,
            "unaligned_records": data,
        }
        values: dict[str, Any] = {"error_code": ErrorCode.none, "topics": [{"name": name, "partitions": [partition]}]}
        if api_version >= 1 and leader:
            values["node_endpoints"] = self._node_endpoints(listener, with_rack=False)
        return build(response_class(ApiKey.FETCH_SNAPSHOT, api_version), values)

    # --- shared -----------------------------------------------------------------------------------
    def _valid_cluster_id(self, cluster_id: str | None) -> bool:
        """A request without a cluster id is accepted; any other value (even "") must match."""
        return cluster_id is None or cluster_id == self.cluster_id

    def _leader_only_error(self, request_epoch: int) -> ErrorCode | None:
        """``validateLeaderOnlyRequest``; this node is always the leader of its epoch here."""
        if request_epoch < self.epoch:
            return ErrorCode.fenced_leader_epoch
        if request_epoch > self.epoch:
            return ErrorCode.unknown_leader_epoch
        if self.shutting_down:
            return ErrorCode.broker_not_available
        return None

    def _node_endpoints(self, listener: str, *, with_rack: bool) -> list[dict[str, Any]]:
        """The leader's endpoint on the listener the request came in on (RaftUtil), when known."""
        address = self.endpoints.get(listener)
        if address is None:
            return []
        entry: dict[str, Any] = {"node_id": self.node_id, "host": address[0], "port": address[1]}
        if with_rack:
            entry["rack"] = None
        return [entry]


def _single_metadata_partition(request: Any) -> bool:
    """RaftUtil.hasValidTopicPartition: one topic, the metadata topic id, one partition, index 0. Before
    v13 a Fetch names topics, not ids, so it never matches."""
    topics = request.topics
    if len(topics) != 1 or getattr(topics[0], "topic_id", None) != METADATA_TOPIC_ID:
        return False
    partitions = topics[0].partitions
    return len(partitions) == 1 and partitions[0].partition == METADATA_PARTITION
