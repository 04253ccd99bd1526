"""A KRaft observer (a broker following ``__cluster_metadata``) as a sans-IO state machine.

Kafka's ``KafkaRaftClient`` for a replica outside the voter set: it has only the Unattached and Follower
states, never votes and never times out into an election (``QuorumState``). This class builds the next
request (``next_request``) and turns each response into actions (``on_fetch_response``,
``on_fetch_snapshot_response``) that its driver carries out on the local log, in order:

    observer = RaftObserver(cluster_id=..., replica_id=node_id)
    while True:
        api_key, version, body = observer.next_request(view)       # Fetch, or FetchSnapshot mid-download
        response = send(leader_or_bootstrap, api_key, version, body)
        for action in observer.on_response(api_key, response, view):
            apply(action)                                           # AppendBatches, TruncateTo, ...

The driver owns the socket, the back-off timer and the files. Errors Kafka treats as fatal
(``CLUSTER_AUTHORIZATION_FAILED``, a truncation below the high watermark, an inconsistent snapshot
chunk) raise ``RaftFatalError``. docs/raft.md describes each rule and where Kafka has it.
"""

from __future__ import annotations

import sys
import uuid
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from kio.schema.errors import ErrorCode

from ksteward.metadata.batch import ScanResult, scan_batches
from ksteward.metadata.epochs import OffsetAndEpoch
from ksteward.protocol.apis import ApiKey
from ksteward.protocol.build import build
from ksteward.protocol.codec import request_class

from . import METADATA_PARTITION, METADATA_TOPIC_ID, METADATA_TOPIC_NAME
from .election import QuorumConfig
from .leader import MAX_FETCH_BYTES
from .log_view import LogView, truncation_offset

__all__ = [
    "AbortSnapshotDownload",
    "Action",
    "AppendBatches",
    "Backoff",
    "HighWatermarkUpdated",
    "InstallSnapshot",
    "LeaderChanged",
    "RaftFatalError",
    "RaftObserver",
    "RaftRefusedError",
    "StartSnapshotDownload",
    "TruncateTo",
    "WriteSnapshotChunk",
]

#: Kafka's ``KafkaRaftClient`` sends Fetch with MaxWaitMs 500 (``controller.quorum.fetch.max.wait.ms``).
DEFAULT_MAX_WAIT_MS = QuorumConfig().fetch_max_wait_ms


class RaftFatalError(Exception):
    """A response that Kafka's Raft client treats as fatal: the follower must stop."""


class RaftRefusedError(RaftFatalError):
    """A peer refused this node's request: CLUSTER_AUTHORIZATION_FAILED (this node's principal lacks
    CLUSTER_ACTION on the cluster), or INVALID_REQUEST (this node built a request Kafka's checks refuse, a local
    bug). Unlike the other fatal answers, no request a third party sends can bring one about."""


@dataclass(frozen=True, slots=True)
class AppendBatches:
    """Append ``records`` (whole batches, offsets ``first_offset`` .. ``next_offset - 1``) as received."""

    records: bytes
    first_offset: int
    next_offset: int


@dataclass(frozen=True, slots=True)
class TruncateTo:
    """The leader's log diverged from ours: cut ours to end at ``offset``."""

    offset: int


@dataclass(frozen=True, slots=True)
class StartSnapshotDownload:
    """Our log is behind the leader's log start: download ``snapshot`` (FetchSnapshot requests follow)."""

    snapshot: OffsetAndEpoch


@dataclass(frozen=True, slots=True)
class WriteSnapshotChunk:
    snapshot: OffsetAndEpoch
    position: int
    data: bytes


@dataclass(frozen=True, slots=True)
class InstallSnapshot:
    """Every byte of ``snapshot`` is written: make it durable, then start the log at its end offset
    (``truncateToLatestSnapshot``) and load it."""

    snapshot: OffsetAndEpoch


@dataclass(frozen=True, slots=True)
class AbortSnapshotDownload:
    """Drop the partial snapshot (the leader no longer has it, or the leader changed)."""

    snapshot: OffsetAndEpoch


@dataclass(frozen=True, slots=True)
class HighWatermarkUpdated:
    """Offsets below ``offset`` are committed: they may be applied to the image."""

    offset: int


@dataclass(frozen=True, slots=True)
class LeaderChanged:
    leader_id: int | None
    epoch: int
    endpoint: tuple[str, int] | None


@dataclass(frozen=True, slots=True)
class Backoff:
    """Retry after the back-off (``controller.quorum.retry.backoff.ms``)."""

    reason: str


Action = (
    AppendBatches
    | TruncateTo
    | StartSnapshotDownload
    | WriteSnapshotChunk
    | InstallSnapshot
    | AbortSnapshotDownload
    | HighWatermarkUpdated
    | LeaderChanged
    | Backoff
)


@dataclass(slots=True)
class _Download:
    snapshot: OffsetAndEpoch
    written: int = 0


class RaftObserver:
    """See the module docstring. ``replica_id`` is the node id, or -1 for a tool with none."""

    def __init__(
        self,
        *,
        cluster_id: str | None,
        replica_id: int = -1,
        directory_id: uuid.UUID | None = None,
        epoch: int = 0,
        leader_id: int | None = None,
        max_wait_ms: int = DEFAULT_MAX_WAIT_MS,
        max_bytes: int = MAX_FETCH_BYTES,
        fetch_version: int = 17,
        fetch_snapshot_version: int = 1,
    ) -> None:
        self.cluster_id = cluster_id
        self.replica_id = replica_id
        self.directory_id = directory_id
        self.epoch = epoch
        self.leader_id = leader_id
        self._endpoints: dict[int, tuple[str, int]] = {}  # from NodeEndpoints (Fetch v17+, FetchSnapshot v1+)
        self.high_watermark: int | None = None
        self.max_wait_ms = max_wait_ms
        self.max_bytes = max_bytes
        self.fetch_version = fetch_version
        self.fetch_snapshot_version = fetch_snapshot_version
        self._download: _Download | None = None

    @property
    def leader_endpoint(self) -> tuple[str, int] | None:
        """Where the leader is reached, when a response named it; else the bootstrap servers are used."""
        return self._endpoints.get(self.leader_id) if self.leader_id is not None else None

    @property
    def downloading(self) -> OffsetAndEpoch | None:
        return self._download.snapshot if self._download is not None else None

    def caught_up(self, log: LogView) -> bool:
        """Every committed offset the leader reported is in the local log (the loader may apply up to it)."""
        return self.high_watermark is not None and self._download is None and log.log_end_offset >= self.high_watermark

    def follow(self, leader_id: int | None, epoch: int) -> list[AbortSnapshotDownload]:
        """Set the leader and epoch from outside (a voter decides its own transitions); a snapshot download
        from another leader or epoch is dropped."""
        actions: list[AbortSnapshotDownload] = []
        if self._download is not None and (leader_id, epoch) != (self.leader_id, self.epoch):
            actions.append(AbortSnapshotDownload(self._download.snapshot))
            self._download = None
        self.epoch, self.leader_id = epoch, leader_id
        return actions

    # --- requests ---------------------------------------------------------------------------------
    def next_request(self, log: LogView) -> tuple[int, int, Any]:
        """``(api key, version, request body)``: FetchSnapshot while a download runs, else Fetch."""
        if self._download is not None:
            return ApiKey.FETCH_SNAPSHOT, self.fetch_snapshot_version, self._fetch_snapshot_request()
        return ApiKey.FETCH, self.fetch_version, self._fetch_request(log)

    def _fetch_request(self, log: LogView) -> Any:
        """``buildFetchRequest``: fetch at our log end with the epoch of our last batch. From v13 (topic ids,
        every version the Raft code sends) built straight from the version's classes, not through
        ``protocol.build``: a voter sends two of these per commit."""
        cls = request_class(ApiKey.FETCH, self.fetch_version)
        partition, common = self._partition_values(log), self._request_values()
        if self.fetch_version < 13:
            partition["replica_directory_id"] = self.directory_id
            topic = {"topic_id": METADATA_TOPIC_ID, "topic": METADATA_TOPIC_NAME, "partitions": [partition]}
            state = {"replica_id": self.replica_id, "replica_epoch": -1}
            return build(cls, {**common, "replica_id": self.replica_id, "replica_state": state, "topics": [topic]})
        module = sys.modules[cls.__module__]
        if self.fetch_version >= 17:
            partition["replica_directory_id"] = self.directory_id
        topics = (module.FetchTopic(topic_id=METADATA_TOPIC_ID, partitions=(module.FetchPartition(**partition),)),)
        if self.fetch_version >= 15:
            state = module.ReplicaState(replica_id=self.replica_id, replica_epoch=-1)
            return cls(replica_state=state, topics=topics, **common)
        return cls(replica_id=self.replica_id, topics=topics, **common)

    def _partition_values(self, log: LogView) -> dict[str, Any]:
        return {
            "partition": METADATA_PARTITION,
            "current_leader_epoch": self.epoch,
            "fetch_offset": log.log_end_offset,
            "last_fetched_epoch": log.last_fetched_epoch,
            "log_start_offset": -1,
            "partition_max_bytes": 0,
        }

    def _request_values(self) -> dict[str, Any]:
        return {
            "cluster_id": self.cluster_id,
            "max_wait": timedelta(milliseconds=self.max_wait_ms),
            "min_bytes": 0,
            "max_bytes": self.max_bytes,
            "isolation_level": 0,
            "session_id": 0,
            "session_epoch": -1,
            "forgotten_topics_data": (),
            "rack_id": "",
        }

    def _fetch_snapshot_request(self) -> Any:
        assert self._download is not None
        snapshot = self._download.snapshot
        partition = {
            "partition": METADATA_PARTITION,
            "current_leader_epoch": self.epoch,
            "snapshot_id": {"end_offset": snapshot.offset, "epoch": snapshot.epoch},
            "position": self._download.written,
            "replica_directory_id": self.directory_id,
        }
        values = {
            "cluster_id": self.cluster_id,
            "replica_id": self.replica_id,
            "max_bytes": self.max_bytes,
            "topics": [{"name": METADATA_TOPIC_NAME, "partitions": [partition]}],
        }
        return build(request_class(ApiKey.FETCH_SNAPSHOT, self.fetch_snapshot_version), values)

    # --- responses --------------------------------------------------------------------------------
    def on_response(self, api_key: int, response: Any, log: LogView) -> list[Action]:
        if api_key == ApiKey.FETCH:
            return self.on_fetch_response(response, log)
        if api_key == ApiKey.FETCH_SNAPSHOT:
            return self.on_fetch_snapshot_response(response, log)
        raise ValueError(f"not a KRaft fetch response: api key {api_key}")

    def on_fetch_response(self, response: Any, log: LogView) -> list[Action]:
        """``handleFetchResponse``."""
        actions: list[Action] = []
        top = self._top_level(response)
        if top is not None:
            return [top]
        responses = response.responses
        if (
            len(responses) != 1
            or responses[0].topic_id != METADATA_TOPIC_ID
            or len(responses[0].partitions) != 1
            or responses[0].partitions[0].partition_index != METADATA_PARTITION
        ):
            return [Backoff("a Fetch response for another topic or partition")]
        data = responses[0].partitions[0]
        self._learn_endpoint(getattr(response, "node_endpoints", ()))
        error = ErrorCode(data.error_code)
        handled = self._common(
            error, int(data.current_leader.leader_id), int(data.current_leader.leader_epoch), actions
        )
        if handled is not None:
            return actions + ([] if handled else [Backoff(f"Fetch error {error.name}")])
        if error != ErrorCode.none:
            return [*actions, Backoff(f"Fetch error {error.name}")]
        if data.diverging_epoch.epoch >= 0:
            diverging = OffsetAndEpoch(int(data.diverging_epoch.end_offset), int(data.diverging_epoch.epoch))
            if self.high_watermark is not None and diverging.offset < self.high_watermark:
                raise RaftFatalError(
                    f"the leader asked to truncate to offset {diverging.offset}, below the high watermark "
                    f"{self.high_watermark}: committed records are never truncated"
                )
            actions.append(TruncateTo(truncation_offset(log, diverging)))
        elif data.snapshot_id.epoch >= 0 or data.snapshot_id.end_offset >= 0:
            if data.snapshot_id.epoch < 0 or data.snapshot_id.end_offset < 0:
                return [*actions, Backoff(f"the leader sent an invalid snapshot id {data.snapshot_id}")]
            snapshot = OffsetAndEpoch(int(data.snapshot_id.end_offset), int(data.snapshot_id.epoch))
            self._download = _Download(snapshot)
            actions.append(StartSnapshotDownload(snapshot))
        else:
            end = log.log_end_offset
            records = bytes(data.records or b"")
            if records:
                scan = scan_batches(records, expected_offset=end)
                if scan.error is not None or scan.torn or scan.next_offset is None:
                    reason = scan.error or "not whole batches"
                    return [*actions, Backoff(f"records from the leader do not follow offset {end}: {reason}")]
                records, next_offset = _batches_up_to_epoch(records, scan, self.epoch)
                if not records:
                    reason = f"records of epoch {scan.leader_epochs[0]}, above this replica's epoch {self.epoch}"
                    return [*actions, Backoff(f"the leader sent {reason}")]
                actions.append(AppendBatches(records, end, next_offset))
                end = next_offset
            if data.high_watermark >= 0:
                self._update_high_watermark(min(end, int(data.high_watermark)), actions)
        return actions

    def on_fetch_snapshot_response(self, response: Any, log: LogView) -> list[Action]:
        """``handleFetchSnapshotResponse``."""
        actions: list[Action] = []
        top = self._top_level(response)
        if top is not None:
            return [top]
        topics = response.topics
        if len(topics) != 1 or len(topics[0].partitions) != 1:
            return [Backoff("a FetchSnapshot response without exactly one partition")]
        data = topics[0].partitions[0]
        if topics[0].name != METADATA_TOPIC_NAME or data.index != METADATA_PARTITION:
            return [Backoff("a FetchSnapshot response for another topic or partition")]
        self._learn_endpoint(getattr(response, "node_endpoints", ()))
        error = ErrorCode(data.error_code)
        handled = self._common(
            error, int(data.current_leader.leader_id), int(data.current_leader.leader_epoch), actions
        )
        if handled is not None:
            return actions + ([] if handled else [Backoff(f"FetchSnapshot error {error.name}")])
        download = self._download
        if download is None:
            raise RaftFatalError("a FetchSnapshot response while no snapshot is being downloaded")
        if error != ErrorCode.none or data.snapshot_id.end_offset < 0 or data.snapshot_id.epoch < 0:
            # The leader deleted the snapshot meanwhile (SNAPSHOT_NOT_FOUND): start over with a Fetch.
            self._download = None
            return [*actions, AbortSnapshotDownload(download.snapshot)]
        snapshot = OffsetAndEpoch(int(data.snapshot_id.end_offset), int(data.snapshot_id.epoch))
        if snapshot != download.snapshot:
            raise RaftFatalError(f"FetchSnapshot response for {snapshot}, downloading {download.snapshot}")
        if data.position != download.written:
            raise RaftFatalError(f"FetchSnapshot response at position {data.position}, expected {download.written}")
        chunk = bytes(data.unaligned_records)
        actions.append(WriteSnapshotChunk(snapshot, download.written, chunk))
        download.written += len(chunk)
        if download.written > data.size:
            raise RaftFatalError(f"snapshot {snapshot} is {data.size} bytes but {download.written} arrived")
        if download.written == data.size:
            self._download = None
            actions.append(InstallSnapshot(snapshot))
            if self.high_watermark is None or self.high_watermark < snapshot.offset:
                self.high_watermark = snapshot.offset
                actions.append(HighWatermarkUpdated(snapshot.offset))
        return actions

    # --- shared -----------------------------------------------------------------------------------
    def _top_level(self, response: Any) -> Backoff | None:
        error = ErrorCode(getattr(response, "error_code", ErrorCode.none))
        if error == ErrorCode.none:
            return None
        if error == ErrorCode.cluster_authorization_failed:
            raise RaftRefusedError("the controller refused this node: CLUSTER_AUTHORIZATION_FAILED")
        return Backoff(f"top-level error {error.name}")

    def _common(self, error: ErrorCode, leader_id: int, epoch: int, actions: list[Action]) -> bool | None:
        """``maybeHandleCommonResponse``: None when the caller goes on with the response; True when it was
        handled; False when it was handled and the request should be retried after a back-off."""
        leader = leader_id if leader_id >= 0 else None
        if epoch < self.epoch or error == ErrorCode.unknown_leader_epoch:
            return True  # we know a newer epoch: the response is stale
        if epoch > self.epoch or error in (ErrorCode.fenced_leader_epoch, ErrorCode.not_leader_or_follower):
            self._maybe_transition(leader, epoch, actions)
            return True
        if leader is not None and self.leader_id is None:
            # Learning the leader of our epoch: a NONE response is processed at once.
            self._become_follower(leader, epoch, actions)
            return None if error == ErrorCode.none else True
        if error == ErrorCode.broker_not_available:
            return False
        if error == ErrorCode.invalid_request:
            raise RaftRefusedError("the leader answered INVALID_REQUEST")
        return None

    def _maybe_transition(self, leader: int | None, epoch: int, actions: list[Action]) -> None:
        if leader is not None and leader == self.replica_id:
            raise RaftFatalError(f"the response names this observer ({leader}) as the leader of epoch {epoch}")
        if epoch == self.epoch and leader is not None and self.leader_id is not None and leader != self.leader_id:
            raise RaftFatalError(f"leader {leader} for epoch {epoch}, which is led by {self.leader_id}")
        if epoch > self.epoch or (leader is not None and self.leader_id is None):
            self._become_follower(leader, epoch, actions)

    def _become_follower(self, leader: int | None, epoch: int, actions: list[Action]) -> None:
        """Follower of ``leader`` (Unattached when None) in ``epoch``; a download in progress is dropped."""
        if self._download is not None:
            actions.append(AbortSnapshotDownload(self._download.snapshot))
            self._download = None
        self.epoch, self.leader_id = epoch, leader
        actions.append(LeaderChanged(leader, epoch, self.leader_endpoint if leader is not None else None))

    def _learn_endpoint(self, endpoints: Any) -> None:
        for endpoint in endpoints or ():
            self._endpoints[int(endpoint.node_id)] = (str(endpoint.host), int(endpoint.port))

    def _update_high_watermark(self, offset: int, actions: list[Action]) -> None:
        """``FollowerState.updateHighWatermark``: it never goes down."""
        if self.high_watermark is not None and offset < self.high_watermark:
            raise RaftFatalError(f"high watermark would go down from {self.high_watermark} to {offset}")
        if self.high_watermark != offset:
            self.high_watermark = offset
            actions.append(HighWatermarkUpdated(offset))


def _batches_up_to_epoch(records: bytes, scan: ScanResult, epoch: int) -> tuple[bytes, int]:
    """The whole batches of ``records`` before the first one whose partition leader epoch is above ``epoch``, and
    the offset after them. A replica appends only batches of its own epoch or an earlier one (KAFKA-18723,
    Kafka 4.x ``KafkaRaftClient``): a batch of a later epoch cannot come from the leader it fetched from."""
    for i, batch_epoch in enumerate(scan.leader_epochs):
        if batch_epoch > epoch:
            return records[: scan.positions[i]], scan.base_offsets[i]
    assert scan.next_offset is not None
    return records, scan.next_offset
