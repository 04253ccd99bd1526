"""The KRaft leader's side of Fetch (api 1) and FetchSnapshot (api 59) for ``__cluster_metadata-0``.

Kafka's ``KafkaRaftClient.handleFetchRequest`` / ``tryCompleteFetchRequest`` / ``handleFetchSnapshotRequest``,
in the same order of checks (docs/raft.md lists them). Sans-IO: the caller decodes the request, hands it
here with its version and listener, and encodes what comes back. A Fetch that finds nothing to return
and may wait comes back as ``ParkedFetch``: the caller waits until the served end offset passes
``fetch_offset`` or ``max_wait_ms`` passes (Kafka's fetch purgatory), then calls ``complete_fetch``.

It also keeps Kafka's ``LeaderState`` bookkeeping: each replica's progress (``ReplicaProgress``: the offset
of its last Fetch, when it fetched, when it was last caught up), the high watermark of a quorum of
``voters`` (``LeaderState.maybeUpdateHighWatermark``: the offset a majority reached, counted only past the
epoch start offset, never going down) and check-quorum (``LeaderState.timeUntilCheckQuorumExpires``).
With one voter the high watermark is the served (durable) end, as before. ``describe(now_ms)`` is what
DescribeQuorum reports. A ``RaftLeader`` built with ``active=False`` answers as a replica that does not
lead (``NOT_LEADER_OR_FOLLOWER`` naming ``current_leader_id``): ``RaftVoter`` uses it while not leading.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from datetime import timedelta
from functools import cache
from typing import Any

from kio.schema.errors import ErrorCode

from ksteward.metadata.epochs import OffsetAndEpoch
from ksteward.metadata.log import OffsetOutOfRangeError
from ksteward.protocol.apis import ApiKey
from ksteward.protocol.build import build
from ksteward.protocol.codec import response_class

from . import METADATA_PARTITION, METADATA_TOPIC_ID, METADATA_TOPIC_NAME
from .election import majority
from .log_view import BOOTSTRAP_SNAPSHOT_ID, FetchValidity, LogView, ValidOffsetAndEpoch, validate_offset_and_epoch
from .progress import QuorumDescription, ReplicaProgress

__all__ = ["MAX_FETCH_BYTES", "ParkedFetch", "RaftLeader", "fetch_replica_id"]

log = logging.getLogger(__name__)

#: Kafka's ``KafkaRaftClient.MAX_FETCH_SIZE_BYTES``: the most a Fetch or FetchSnapshot reply carries.
MAX_FETCH_BYTES = 8 * 1024 * 1024
#: ``LeaderState.OBSERVER_SESSION_TIMEOUT_MS``: DescribeQuorum lists an observer for 5 minutes after its Fetch.
OBSERVER_SESSION_TIMEOUT_MS = 5 * 60 * 1000

_NO_ID = OffsetAndEpoch(-1, -1)
_NO_THROTTLE = timedelta(0)
_VALID = ValidOffsetAndEpoch(FetchValidity.VALID, _NO_ID)


@dataclass(frozen=True, slots=True)
class ParkedFetch:
    """Nothing to return yet: wait for the served end to pass ``fetch_offset``, at most ``max_wait_ms``."""

    fetch_offset: int
    max_wait_ms: int
    from_voter: bool = False  # a voter's Fetch: answered before the observers' (it moves the high watermark)


@dataclass(slots=True)
class _ReplicaState:
    """``LeaderState.ReplicaState``: -1 is unknown, as on the wire."""

    end_offset: int = -1
    last_fetch_ms: int = -1
    last_caught_up_ms: int = -1
    last_fetch_leader_end: int = -1

    def update(self, fetch_offset: int, leader_end: int, now_ms: int) -> None:
        """``ReplicaState.updateFollowerState``: caught up when the fetch reached the leader's end now, or the
        leader's end as of the previous fetch (then it was caught up at that fetch)."""
        if now_ms >= 0:
            if fetch_offset >= leader_end:
                if now_ms > self.last_caught_up_ms:
                    self.last_caught_up_ms = now_ms
            elif 0 < self.last_fetch_leader_end <= fetch_offset and self.last_fetch_ms > self.last_caught_up_ms:
                self.last_caught_up_ms = self.last_fetch_ms
            self.last_fetch_ms = now_ms
        self.last_fetch_leader_end = leader_end
        self.end_offset = fetch_offset


def fetch_replica_id(request: Any) -> int:
    """The fetcher's replica id: ``ReplicaState.ReplicaId`` from v15, ``ReplicaId`` before."""
    state = getattr(request, "replica_state", None)
    return int(state.replica_id) if state is not None else int(getattr(request, "replica_id", -1))


def _ms(value: Any) -> int:
    return int(value // timedelta(milliseconds=1)) if isinstance(value, timedelta) else int(value)


class RaftLeader:
    """The leader of epoch ``epoch`` answering from ``log``; ``endpoints`` maps a listener name to the
    ``(host, port)`` this leader is reached at on it (for ``NodeEndpoints``). ``voters`` is the static voter
    set (this node alone when empty); ``epoch_start_offset`` is where the epoch's LeaderChange record is
    (-1: not tracked, as for the single controller that waits for it itself); ``now_ms`` when it became
    leader starts the check-quorum timer of ``check_quorum_timeout_ms``."""

    def __init__(
        self,
        *,
        node_id: int,
        cluster_id: str,
        epoch: int,
        log: LogView,
        endpoints: Mapping[str, tuple[str, int]],
        max_fetch_bytes: int = MAX_FETCH_BYTES,
        voters: Collection[int] = (),
        epoch_start_offset: int = -1,
        now_ms: int = -1,
        check_quorum_timeout_ms: int = 3000,
        active: bool = True,
        current_leader_id: int | None = None,
    ) -> None:
        self.node_id = node_id
        self.cluster_id = cluster_id
        self.epoch = epoch
        self.log = log
        self.endpoints = dict(endpoints)
        self.max_fetch_bytes = max_fetch_bytes
        self.shutting_down = False
        #: False: this node does not lead ``epoch``; Fetch and FetchSnapshot get NOT_LEADER_OR_FOLLOWER.
        self.active = active
        self.current_leader_id = node_id if current_leader_id is None else current_leader_id
        self.voters = frozenset(voters) | {node_id} if voters else frozenset({node_id})
        self._other_voters = tuple(sorted(self.voters - {node_id}))
        self.epoch_start_offset = epoch_start_offset
        #: Each replica that fetched (observers too), by id: DescribeQuorum's data.
        self._replicas: dict[int, _ReplicaState] = {}
        self._high_watermark = -1
        self.check_quorum_timeout_ms = check_quorum_timeout_ms
        self._check_quorum_deadline_ms = now_ms + check_quorum_timeout_ms if now_ms >= 0 else -1
        self._fetched_voters: set[int] = set()
        #: Voters that acknowledged this epoch: a BeginQuorumEpoch answer or a Fetch (``LeaderState``).
        self.acknowledged: set[int] = set()
        # Parts of every Fetch answer that never change for this leader: its CurrentLeader by Fetch version, and
        # its NodeEndpoints (v17) by listener.
        self._leader_entities: dict[int, Any] = {}
        self._endpoint_entities: dict[str, tuple[Any, ...]] = {}

    # --- progress, high watermark, check-quorum ---------------------------------------------------
    @property
    def replica_offsets(self) -> dict[int, int]:
        """The last fetch offset of each replica that fetched."""
        return {replica: state.end_offset for replica, state in self._replicas.items()}

    @property
    def high_watermark(self) -> int:
        """The offset a majority of voters reached, past the epoch start; -1 until there is one. With one voter
        it is the served (durable) end."""
        if not self._other_voters:
            end = self.log.end_offset
            return end if end > self.epoch_start_offset else -1
        return self._high_watermark

    def update_high_watermark(self) -> bool:
        """``LeaderState.maybeUpdateHighWatermark`` after the leader's end or a voter's fetch moved; True when
        the high watermark went up. The leader counts its served (durable) end."""
        if not self._other_voters:
            return False
        offsets = [self.log.end_offset]
        for voter in self._other_voters:
            state = self._replicas.get(voter)
            offsets.append(state.end_offset if state is not None else -1)
        offsets.sort(reverse=True)
        candidate = offsets[len(offsets) // 2]
        # Only past a record of this epoch (Raft's "commit only in the current term"), and never down:
        # a voter that lost its disk and fetches from a lower offset does not lower it.
        if candidate > self.epoch_start_offset and candidate > self._high_watermark:
            self._high_watermark = candidate
            return True
        return False

    def _record_fetch(self, replica_id: int, fetch_offset: int, now_ms: int) -> None:
        """``LeaderState.updateReplicaState``, then the HW and check-quorum for a voter."""
        state = self._replicas.get(replica_id)
        if state is None:
            state = self._replicas[replica_id] = _ReplicaState()
        state.update(fetch_offset, self.log.end_offset, now_ms)
        if self._other_voters and replica_id in self.voters:
            self.acknowledged.add(replica_id)
            self._count_for_check_quorum(replica_id, now_ms)
            self.update_high_watermark()

    def _count_for_check_quorum(self, voter: int, now_ms: int) -> None:
        """``updateCheckQuorumForFollowingVoter``: once a majority (this leader included) fetched in the
        current window, a new window starts."""
        if now_ms < 0:
            return
        self._fetched_voters.add(voter)
        if len(self._fetched_voters) + 1 >= majority(len(self.voters)):
            self._fetched_voters.clear()
            self._check_quorum_deadline_ms = now_ms + self.check_quorum_timeout_ms

    def check_quorum_expired(self, now_ms: int) -> bool:
        """No majority of voters fetched within the window: the leader must resign. Never for one voter."""
        return bool(self._other_voters) and 0 <= self._check_quorum_deadline_ms <= now_ms

    def check_quorum_deadline_ms(self) -> int:
        """When ``check_quorum_expired`` becomes true (-1: never)."""
        return self._check_quorum_deadline_ms if self._other_voters else -1

    def voters_by_fetch_offset(self) -> list[int]:
        """The other voters, the furthest fetched first (``nonLeaderVotersByDescendingFetchOffset``)."""

        def offset(voter: int) -> int:
            state = self._replicas.get(voter)
            return state.end_offset if state is not None else -1

        return sorted(self._other_voters, key=lambda v: (-offset(v), v))

    def describe(self, now_ms: int) -> QuorumDescription:
        """DescribeQuorum's view (``LeaderState.describeQuorum``): this leader reports its log end and "now";
        observers are listed until 5 minutes after their last Fetch."""
        leader = ReplicaProgress(self.node_id, self.log.log_end_offset, now_ms, now_ms)
        voters = [leader]
        for voter in self._other_voters:
            state = self._replicas.get(voter)
            voters.append(_progress(voter, state) if state is not None else ReplicaProgress(voter))
        observers = []
        for replica, state in sorted(self._replicas.items()):
            if replica in self.voters:
                continue
            if state.last_fetch_ms >= 0 and now_ms - state.last_fetch_ms >= OBSERVER_SESSION_TIMEOUT_MS:
                continue
            observers.append(_progress(replica, state))
        return QuorumDescription(
            leader_id=self.node_id,
            leader_epoch=self.epoch,
            high_watermark=self.high_watermark,
            voters=tuple(voters),
            observers=tuple(observers),
        )

    # --- Fetch ------------------------------------------------------------------------------------
    def handle_fetch(self, request: Any, api_version: int, listener: str, now_ms: int = -1) -> Any:
        """The response, or ``ParkedFetch`` when it should wait for new data. ``now_ms`` (-1: unknown) times
        the fetcher's progress and check-quorum."""
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
        # Kafka builds the answer, then parks the request if it is empty (no error, no records, no diverging
        # epoch, no snapshot id) and may wait; here the empty answer is not built until the wait is over.
        response = self._complete_fetch(request, api_version, listener, now_ms, may_park=max_wait_ms > 0)
        if response is None:
            return ParkedFetch(int(partition.fetch_offset), max_wait_ms, fetch_replica_id(request) in self.voters)
        return response

    def complete_fetch(self, request: Any, api_version: int, listener: str, now_ms: int = -1) -> Any:
        """Kafka's ``tryCompleteFetchRequest``: validate the epoch and the log position and read. As there,
        an unexpected failure is logged and answered ``UNKNOWN_SERVER_ERROR``."""
        return self._complete_fetch(request, api_version, listener, now_ms, may_park=False)

    def _complete_fetch(self, request: Any, api_version: int, listener: str, now_ms: int, *, may_park: bool) -> Any:
        """``complete_fetch``; with ``may_park``, None instead of an empty answer that would be parked."""
        try:
            try:
                return self._try_complete_fetch(request, api_version, listener, now_ms, may_park)
            except OffsetOutOfRangeError:
                # A snapshot let the log start move between the check and the read: check again.
                return self._try_complete_fetch(request, api_version, listener, now_ms, may_park)
        except Exception:
            log.exception("unexpected error completing a Fetch of __cluster_metadata")
            return self._fetch_response(ErrorCode.unknown_server_error, api_version, listener)

    def _try_complete_fetch(self, request: Any, api_version: int, listener: str, now_ms: int, may_park: bool) -> Any:
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
                self._record_fetch(replica_id, offset, now_ms)
            if may_park and not records:
                return None
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
        """``buildFetchResponse``: the partition always names the current leader and epoch. Built straight from
        the version's classes (``_FetchClasses``): every commit answers four of these on the leader."""
        c = _fetch_classes(api_version)
        hw = self.high_watermark if with_hw else -1
        kind = validity.kind
        diverging = c.no_epoch_end_offset
        if kind is FetchValidity.DIVERGING:
            diverging = c.epoch_end_offset(epoch=validity.offset_and_epoch.epoch,
                                           end_offset=validity.offset_and_epoch.offset)  # fmt: skip
        snapshot = c.no_snapshot_id
        if kind is FetchValidity.SNAPSHOT:
            snapshot = c.snapshot_id(end_offset=validity.offset_and_epoch.offset, epoch=validity.offset_and_epoch.epoch)
        leader = self._leader_entities.get(api_version)
        if leader is None:  # the same for every answer of this leader (current_leader_id and epoch are fixed)
            leader = self._leader_entities[api_version] = c.leader(leader_id=self.current_leader_id,
                                                                   leader_epoch=self.epoch)  # fmt: skip
        partition = c.partition(
            partition_index=METADATA_PARTITION,
            error_code=error,
            high_watermark=hw,
            last_stable_offset=-1,
            log_start_offset=self.log.start_offset,
            diverging_epoch=diverging,
            current_leader=leader,
            snapshot_id=snapshot,
            aborted_transactions=None,
            preferred_read_replica=-1,
            records=records,
        )
        topic = c.topic(topic_id=METADATA_TOPIC_ID, partitions=(partition,))
        if api_version < 17:
            return c.response(throttle_time=_NO_THROTTLE, error_code=ErrorCode.none, session_id=0, responses=(topic,))
        endpoints = self._endpoint_entities.get(listener)
        if endpoints is None:
            endpoints = tuple(c.node_endpoint(**e) for e in self._node_endpoints(listener, with_rack=True))
            self._endpoint_entities[listener] = endpoints
        return c.response(
            throttle_time=_NO_THROTTLE,
            error_code=ErrorCode.none,
            session_id=0,
            responses=(topic,),
            node_endpoints=endpoints,
        )

    def _fetch_top_level(self, error: ErrorCode, api_version: int) -> Any:
        return build(response_class(ApiKey.FETCH, api_version), {"error_code": error, "session_id": 0, "responses": []})

    # --- FetchSnapshot ----------------------------------------------------------------------------
    def handle_fetch_snapshot(self, request: Any, api_version: int, listener: str, now_ms: int = -1) -> Any:
        """``handleFetchSnapshotRequest``: a chunk of the asked snapshot from ``Position``. A voter's request
        counts for check-quorum like a Fetch."""
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
        replica_id = int(request.replica_id)
        if replica_id in self.voters and replica_id != self.node_id:
            self.acknowledged.add(replica_id)
            self._count_for_check_quorum(replica_id, now_ms)
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
            {"leader_id": self.current_leader_id, "leader_epoch": self.epoch}
            if leader
            else {"leader_id": -1, "leader_epoch": -1}
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
        """``validateLeaderOnlyRequest``."""
        if request_epoch < self.epoch:
            return ErrorCode.fenced_leader_epoch
        if request_epoch > self.epoch:
            return ErrorCode.unknown_leader_epoch
        if not self.active:
            return ErrorCode.not_leader_or_follower
        if self.shutting_down:
            return ErrorCode.broker_not_available
        return None

    def _node_endpoints(self, listener: str, *, with_rack: bool) -> list[dict[str, Any]]:
        """The leader's endpoint on the listener the request came in on (RaftUtil), when known."""
        address = self.endpoints.get(listener) if self.active else None
        if address is None:
            return []
        entry: dict[str, Any] = {"node_id": self.node_id, "host": address[0], "port": address[1]}
        if with_rack:
            entry["rack"] = None
        return [entry]


@dataclass(frozen=True)
class _FetchClasses:
    """A FetchResponse version's kio classes (v13 and later: topic ids)."""

    response: Any
    topic: Any
    partition: Any
    epoch_end_offset: Any
    leader: Any
    snapshot_id: Any
    node_endpoint: Any
    no_epoch_end_offset: Any  # DivergingEpoch's default (-1, -1): no divergence
    no_snapshot_id: Any  # SnapshotId's default (-1, -1): no snapshot to fetch


@cache
def _fetch_classes(api_version: int) -> _FetchClasses:
    response = response_class(ApiKey.FETCH, api_version)
    module = sys.modules[response.__module__]
    return _FetchClasses(
        response=response,
        topic=module.FetchableTopicResponse,
        partition=module.PartitionData,
        epoch_end_offset=module.EpochEndOffset,
        leader=module.LeaderIdAndEpoch,
        snapshot_id=module.SnapshotId,
        node_endpoint=getattr(module, "NodeEndpoint", None),
        no_epoch_end_offset=module.EpochEndOffset(epoch=-1, end_offset=-1),
        no_snapshot_id=module.SnapshotId(end_offset=-1, epoch=-1),
    )


def _progress(replica_id: int, state: _ReplicaState) -> ReplicaProgress:
    return ReplicaProgress(replica_id, state.end_offset, state.last_fetch_ms, state.last_caught_up_ms)


def _single_metadata_partition(request: Any) -> bool:
    """RaftUtil.hasValidTopicPartition: one topic, the metadata topic id, one partition, index 0. Before
    v13 a Fetch names topics, not ids, so it never matches."""
    topics = request.topics
    if len(topics) != 1 or getattr(topics[0], "topic_id", None) != METADATA_TOPIC_ID:
        return False
    partitions = topics[0].partitions
    return len(partitions) == 1 and partitions[0].partition == METADATA_PARTITION
