"""Broker membership on the active controller: BrokerRegistration (62), BrokerHeartbeat (63) and session
timeouts, as Kafka's ``ClusterControlManager``, ``BrokerHeartbeatManager`` and ``BrokerHeartbeatTracker``
do it. The rules are written out in docs/cluster-membership.md.

Registered brokers and their fenced / in-controlled-shutdown flags are records, in the image. What is not
a record lives here, in memory, on the active controller only, as in Kafka: the last contact time of each
``(broker id, broker epoch)`` session, the metadata offset each broker last reported, the offset of each
broker's RegisterBrokerRecord, and the offset at which a controlled shutdown began. Time is passed in
(seconds of any monotonic clock), so the tests drive it by hand.

Each operation is a function of the image and that soft state to a :class:`ControllerResult`; the
controller commits its records as one batch, before its first ``await``.
"""

from __future__ import annotations

import dataclasses
import enum
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from kio.schema.errors import ErrorCode
from kio.schema.types import BrokerId
from kio.static.primitive import i8, i16, i64

from ksteward.controller.features import METADATA_VERSION
from ksteward.controller.leadership import (
    has_leaderships,
    leader_and_isr_updates,
    partitions_with_broker_in_isr,
    partitions_without_leader,
)
from ksteward.controller.result import ApiError, ControllerResult
from ksteward.metadata.delta import MetadataDelta
from ksteward.metadata.image import MetadataImage
from ksteward.metadata.records import (
    BrokerEndpoint,
    BrokerFeature,
    BrokerRegistrationChangeRecordV0,
    BrokerRegistrationChangeRecordV1,
    FenceBrokerRecord,
    MetadataRecord,
    RegisterBrokerRecordV0,
    RegisterBrokerRecordV1,
    RegisterBrokerRecordV2,
    RegisterBrokerRecordV3,
    UnfenceBrokerRecord,
)
from ksteward.metadata.records.kafka_json import kafka_uuid

__all__ = [
    "BrokerControlState",
    "ClusterControlManager",
    "HeartbeatReply",
    "HeartbeatRequest",
    "RegistrationReply",
    "RegistrationRequest",
    "next_broker_state",
]

KRAFT_VERSION = "kraft.version"
MINIMUM_KRAFT_METADATA_VERSION = 1  # 3.0-IV1: what a broker that offers no metadata.version range supports
_CHANGE_RECORD_LEVEL = 6  # 3.3-IV2: BrokerRegistrationChangeRecord replaces Fence/UnfenceBrokerRecord
_CONTROLLED_SHUTDOWN_LEVEL = 7  # 3.3-IV3: InControlledShutdown in the records
_MIGRATION_LEVEL = 8  # 3.4-IV0: RegisterBrokerRecord v2
_DIRECTORY_ASSIGNMENT_LEVEL = 17  # 3.7-IV2: RegisterBrokerRecord v3, log directories required
_RESERVED_DIRECTORY_IDS = 100  # DirectoryId.reserved: the first 100 ids (most significant bits 0)


@dataclass(frozen=True, slots=True)
class RegistrationRequest:
    """A BrokerRegistration request, as the controller needs it (any version)."""

    broker_id: int
    cluster_id: str
    incarnation_id: uuid.UUID
    listeners: Sequence[BrokerEndpoint]
    features: Sequence[BrokerFeature]
    rack: str | None = None
    is_migrating_zk_broker: bool = False
    log_dirs: Sequence[uuid.UUID | None] = ()


@dataclass(frozen=True, slots=True)
class RegistrationReply:
    error: ApiError
    broker_epoch: int = -1


@dataclass(frozen=True, slots=True)
class HeartbeatRequest:
    broker_id: int
    broker_epoch: int
    current_metadata_offset: int
    want_fence: bool
    want_shut_down: bool


@dataclass(frozen=True, slots=True)
class HeartbeatReply:
    error: ApiError
    is_caught_up: bool = False
    is_fenced: bool = True
    in_controlled_shutdown: bool = False
    should_shut_down: bool = False


class BrokerControlState(enum.Enum):
    """Kafka's ``BrokerControlState``: value = (fenced, in controlled shutdown, should shut down)."""

    FENCED = (True, False, False)
    UNFENCED = (False, False, False)
    CONTROLLED_SHUTDOWN = (False, True, False)
    SHUTDOWN_NOW = (True, False, True)

    @property
    def fenced(self) -> bool:
        return self.value[0]

    @property
    def in_controlled_shutdown(self) -> bool:
        return self.value[1]

    @property
    def should_shut_down(self) -> bool:
        return self.value[2]


def next_broker_state(
    current: BrokerControlState,
    request: HeartbeatRequest,
    *,
    registration_offset: int,
    leads_partitions: bool,
    shutdown_offset: int,
    lowest_active_offset: int | float,
) -> BrokerControlState:
    """Kafka's ``BrokerHeartbeatManager.calculateNextBrokerState``: the truth table in
    docs/cluster-membership.md. ``shutdown_offset`` is -1 before a controlled shutdown began."""
    s = BrokerControlState
    if current is s.FENCED:
        if request.want_shut_down:
            return s.SHUTDOWN_NOW
        if not request.want_fence and request.current_metadata_offset >= registration_offset:
            return s.UNFENCED
        return s.FENCED
    if current is s.UNFENCED:
        if request.want_fence:
            return s.SHUTDOWN_NOW if request.want_shut_down else s.FENCED
        if request.want_shut_down:
            return s.CONTROLLED_SHUTDOWN if leads_partitions else s.SHUTDOWN_NOW
        return s.UNFENCED
    # CONTROLLED_SHUTDOWN (SHUTDOWN_NOW is never a current state: the broker is fenced by then)
    if leads_partitions:
        return s.CONTROLLED_SHUTDOWN
    if 0 <= shutdown_offset <= lowest_active_offset:
        return s.SHUTDOWN_NOW
    return s.CONTROLLED_SHUTDOWN


class ClusterControlManager:
    """The membership manager and its soft state (see the module docstring).

    ``local_broker_id`` is the broker of a combined node: it is its own controller, so its session never
    expires and it is never fenced for silence (it does not send itself heartbeats).
    """

    def __init__(self, cluster_id: str, *, session_timeout_s: float, local_broker_id: int | None = None) -> None:
        self.cluster_id = cluster_id
        self.session_timeout_s = session_timeout_s
        self.local_broker_id = local_broker_id
        self.contacts: dict[tuple[int, int], float] = {}
        """Last contact time of each (broker id, broker epoch) session (Kafka's BrokerHeartbeatTracker)."""
        self.metadata_offsets: dict[int, int] = {}
        self.registration_offsets: dict[int, int] = {}
        self.shutdown_offsets: dict[int, int] = {}

    # --- sessions ----------------------------------------------------------------------------------

    def activate(self, image: MetadataImage, now: float) -> None:
        """Become the active controller: every registered broker gets a fresh session from ``now``
        (``ClusterControlManager.activate``). The offsets of registrations replayed before activation
        are not known here; the image's offset stands in for them, as a snapshot's offset does in Kafka."""
        self.contacts.clear()
        self.metadata_offsets.clear()
        self.shutdown_offsets.clear()
        self.registration_offsets = {broker_id: image.offset for broker_id in image.cluster}
        for broker_id, registration in image.cluster.items():
            if broker_id != self.local_broker_id:
                self.contacts[(broker_id, int(registration.broker_epoch))] = now

    def _expired(self, last_contact: float, now: float) -> bool:
        return now > last_contact + self.session_timeout_s  # time going backwards expires nothing

    def has_valid_session(self, broker_id: int, broker_epoch: int, now: float) -> bool:
        if broker_id == self.local_broker_id:
            return True
        last = self.contacts.get((broker_id, broker_epoch))
        return last is not None and not self._expired(last, now)

    # --- BrokerRegistration ------------------------------------------------------------------------

    def register_broker(
        self, image: MetadataImage, request: RegistrationRequest, now: float
    ) -> ControllerResult[RegistrationReply]:
        """Kafka's ``ClusterControlManager.registerBroker``: checks in Kafka's order, then one
        RegisterBrokerRecord (a new incarnation starts fenced; a re-sent one keeps its epoch and flags)."""
        error = self._registration_error(image, request, now)
        if error is not None:
            return ControllerResult([], RegistrationReply(error))
        broker_id = request.broker_id
        existing = image.cluster.get(broker_id)
        offset = image.offset + 1  # the record's offset: the next write offset, as Kafka's epoch is
        if existing is not None and existing.incarnation_id == request.incarnation_id:
            epoch, fenced, in_controlled_shutdown = (
                int(existing.broker_epoch),
                existing.fenced,
                existing.in_controlled_shutdown,
            )
        else:
            epoch, fenced, in_controlled_shutdown = offset, True, False
            if existing is not None:  # the old incarnation's session is dropped
                self.contacts.pop((broker_id, int(existing.broker_epoch)), None)
        record = _register_record(
            image, request, epoch=epoch, fenced=fenced, in_controlled_shutdown=in_controlled_shutdown
        )
        self.registration_offsets[broker_id] = offset
        self.metadata_offsets.pop(broker_id, None)
        self.shutdown_offsets.pop(broker_id, None)
        return ControllerResult([record], RegistrationReply(ApiError(ErrorCode.none), epoch))

    def _registration_error(self, image: MetadataImage, request: RegistrationRequest, now: float) -> ApiError | None:
        if request.cluster_id != self.cluster_id:
            message = f"Expected cluster ID {self.cluster_id}, but got cluster ID {request.cluster_id}"
            return ApiError(ErrorCode.inconsistent_cluster_id, message)
        existing = image.cluster.get(request.broker_id)
        if (
            existing is not None
            and existing.incarnation_id != request.incarnation_id
            and (not existing.fenced or request.broker_id == self.local_broker_id)
            and self.has_valid_session(request.broker_id, int(existing.broker_epoch), now)
        ):  # a fenced broker has no session (BrokerHeartbeatManager.hasValidSession): e.g. after its controlled
            # shutdown, so its next incarnation registers at once, without waiting out broker.session.timeout.ms
            message = (
                "Another broker is registered with that broker id. If the broker was recently restarted this "
                "should self-resolve once the heartbeat manager expires the broker's session."
            )
            return ApiError(ErrorCode.duplicate_broker_registration, message)
        if request.is_migrating_zk_broker:
            return ApiError(ErrorCode.broker_id_not_registered, "Controller does not support registering ZK brokers.")
        level = image.features.get(METADATA_VERSION, 0)
        if level >= _DIRECTORY_ASSIGNMENT_LEVEL:
            error = _log_dirs_error(image, request)
            if error is not None:
                return error
        return _features_error(image, request)

    # --- BrokerHeartbeat ---------------------------------------------------------------------------

    def process_heartbeat(
        self, image: MetadataImage, request: HeartbeatRequest, now: float
    ) -> ControllerResult[HeartbeatReply]:
        """Kafka's ``QuorumController.processBrokerHeartbeat`` and ``ReplicationControlManager
        .processBrokerHeartbeat``: touch the session, check the epoch, move along the state machine."""
        broker_id, epoch = request.broker_id, request.broker_epoch
        if broker_id == self.local_broker_id:
            # A combined node's broker is driven in process and never heartbeats, so a heartbeat naming it comes
            # from someone else. In Kafka the node's own broker heartbeats too, and its next heartbeat would undo
            # a forged want_fence within an interval; here nothing would, and the node would drop out of Metadata
            # until restarted. Refused, as a heartbeat for an epoch the broker does not hold is.
            message = f"Broker {broker_id} is this combined node's own broker, which does not send heartbeats"
            return ControllerResult([], HeartbeatReply(ApiError(ErrorCode.stale_broker_epoch, message)))
        self.contacts[(broker_id, epoch)] = now  # before any check, as Kafka's tracker does
        registration = image.cluster.get(broker_id)
        if registration is None:
            message = f"Receive a heartbeat from broker {broker_id} before registration"
            return ControllerResult([], HeartbeatReply(ApiError(ErrorCode.stale_broker_epoch, message)))
        if int(registration.broker_epoch) != epoch:
            message = f"Expected broker epoch {registration.broker_epoch}, but got broker epoch {epoch}"
            return ControllerResult([], HeartbeatReply(ApiError(ErrorCode.stale_broker_epoch, message)))
        if registration.fenced:
            current = BrokerControlState.FENCED
        elif registration.in_controlled_shutdown or broker_id in self.shutdown_offsets:
            current = BrokerControlState.CONTROLLED_SHUTDOWN
        else:
            current = BrokerControlState.UNFENCED
        registration_offset = self.registration_offsets.get(broker_id, int(registration.broker_epoch))
        next_state = next_broker_state(
            current,
            request,
            registration_offset=registration_offset,
            leads_partitions=has_leaderships(image, broker_id),
            shutdown_offset=self.shutdown_offsets.get(broker_id, -1),
            lowest_active_offset=self._lowest_active_offset(image),
        )
        records: list[MetadataRecord] = []
        if next_state is not current:
            if next_state is BrokerControlState.UNFENCED:
                records = broker_unfenced(image, broker_id)
            elif next_state is BrokerControlState.CONTROLLED_SHUTDOWN:
                records = broker_in_controlled_shutdown(image, broker_id)
            else:
                records = broker_fenced(image, broker_id)
        self.metadata_offsets[broker_id] = request.current_metadata_offset
        if next_state.fenced:
            self.shutdown_offsets.pop(broker_id, None)  # a fenced broker leaves controlled shutdown
        elif next_state is BrokerControlState.CONTROLLED_SHUTDOWN:
            # Set once: the last offset of the batch that began it (QuorumController.processBatchEndOffset).
            self.shutdown_offsets.setdefault(broker_id, image.offset + len(records))
        reply = HeartbeatReply(
            ApiError(ErrorCode.none),
            is_caught_up=request.current_metadata_offset >= registration_offset,
            is_fenced=next_state.fenced,
            in_controlled_shutdown=next_state.in_controlled_shutdown,
            should_shut_down=next_state.should_shut_down,
        )
        return ControllerResult(records, reply)

    def _lowest_active_offset(self, image: MetadataImage) -> int | float:
        """The lowest metadata offset reported by an active broker (unfenced, not shutting down); the
        combined node's own broker applies every batch before it is answered, so it does not count."""
        offsets = [
            self.metadata_offsets.get(broker_id, -1)
            for broker_id, reg in image.cluster.items()
            if broker_id != self.local_broker_id
            and not reg.fenced
            and not reg.in_controlled_shutdown
            and broker_id not in self.shutdown_offsets
        ]
        return min(offsets, default=float("inf"))

    # --- session timeout ---------------------------------------------------------------------------

    def fence_stale_brokers(self, image: MetadataImage, now: float) -> ControllerResult[list[int]]:
        """Kafka's ``maybeFenceStaleBroker``, for every expired session at once, oldest contact first:
        an expired session is dropped; if it is the current registration of an unfenced broker, that
        broker is fenced, its leaderships moved and it leaves every ISR. Each broker's records are
        computed on the image that already holds the previous broker's, and all go in one batch."""
        expired = sorted(
            ((last, key) for key, last in self.contacts.items() if self._expired(last, now)), key=lambda e: e[0]
        )
        records: list[MetadataRecord] = []
        fenced: list[int] = []
        working = image
        for _, (broker_id, epoch) in expired:
            del self.contacts[(broker_id, epoch)]
            registration = working.cluster.get(broker_id)
            if registration is None or int(registration.broker_epoch) != epoch or registration.fenced:
                continue
            batch = broker_fenced(working, broker_id)
            delta = MetadataDelta(working)
            for record in batch:
                delta.replay(record)
            working = delta.apply(offset=working.offset + len(batch))
            records.extend(batch)
            fenced.append(broker_id)
            self.shutdown_offsets.pop(broker_id, None)
        return ControllerResult(records, fenced)


# --- records -----------------------------------------------------------------------------------------


def broker_fenced(image: MetadataImage, broker_id: int) -> list[MetadataRecord]:
    """``ReplicationControlManager.handleBrokerFenced``: out of every ISR and leadership, then fenced."""
    registration = image.cluster[broker_id]
    records: list[MetadataRecord] = list(
        leader_and_isr_updates(image, partitions_with_broker_in_isr(image, broker_id), remove=broker_id)
    )
    epoch = i64(int(registration.broker_epoch))
    if image.features.get(METADATA_VERSION, 0) >= _CHANGE_RECORD_LEVEL:
        records.append(
            BrokerRegistrationChangeRecordV0(broker_id=BrokerId(broker_id), broker_epoch=epoch, fenced=i8(1))
        )
    else:
        records.append(FenceBrokerRecord(id=BrokerId(broker_id), epoch=epoch))
    return records


def broker_unfenced(image: MetadataImage, broker_id: int) -> list[MetadataRecord]:
    """``handleBrokerUnfenced``: unfenced, then it may lead the partitions that have no leader."""
    epoch = i64(int(image.cluster[broker_id].broker_epoch))
    records: list[MetadataRecord] = []
    if image.features.get(METADATA_VERSION, 0) >= _CHANGE_RECORD_LEVEL:
        records.append(
            BrokerRegistrationChangeRecordV0(broker_id=BrokerId(broker_id), broker_epoch=epoch, fenced=i8(-1))
        )
    else:
        records.append(UnfenceBrokerRecord(id=BrokerId(broker_id), epoch=epoch))
    records.extend(leader_and_isr_updates(image, partitions_without_leader(image), add=broker_id))
    return records


def broker_in_controlled_shutdown(image: MetadataImage, broker_id: int) -> list[MetadataRecord]:
    """``handleBrokerInControlledShutdown``: marked (once), then out of every ISR and leadership."""
    registration = image.cluster[broker_id]
    records: list[MetadataRecord] = []
    if (
        image.features.get(METADATA_VERSION, 0) >= _CONTROLLED_SHUTDOWN_LEVEL
        and not registration.in_controlled_shutdown
    ):
        records.append(
            BrokerRegistrationChangeRecordV1(
                broker_id=BrokerId(broker_id), broker_epoch=i64(int(registration.broker_epoch)),
                in_controlled_shutdown=i8(1),
            )
        )  # fmt: skip
    records.extend(leader_and_isr_updates(image, partitions_with_broker_in_isr(image, broker_id), remove=broker_id))
    return records


def _register_record(
    image: MetadataImage, request: RegistrationRequest, *, epoch: int, fenced: bool, in_controlled_shutdown: bool
) -> MetadataRecord:
    """The RegisterBrokerRecord, at the version the image's metadata.version writes."""
    features = list(request.features)
    if not any(f.name == METADATA_VERSION for f in features):
        lowest = i16(MINIMUM_KRAFT_METADATA_VERSION)
        features.append(
            BrokerFeature(name=METADATA_VERSION, min_supported_version=lowest, max_supported_version=lowest)
        )
    values = {
        "broker_id": BrokerId(request.broker_id), "is_migrating_zk_broker": False,
        "incarnation_id": request.incarnation_id, "broker_epoch": i64(epoch), "end_points": tuple(request.listeners),
        "features": tuple(features), "rack": request.rack, "fenced": fenced,
        "in_controlled_shutdown": in_controlled_shutdown, "log_dirs": tuple(request.log_dirs),
    }  # fmt: skip
    level = image.features.get(METADATA_VERSION, 0)
    cls: type = RegisterBrokerRecordV0
    if level >= _DIRECTORY_ASSIGNMENT_LEVEL:
        cls = RegisterBrokerRecordV3
    elif level >= _MIGRATION_LEVEL:
        cls = RegisterBrokerRecordV2
    elif level >= _CONTROLLED_SHUTDOWN_LEVEL:
        cls = RegisterBrokerRecordV1
    names = {f.name for f in dataclasses.fields(cls)}
    record: MetadataRecord = cls(**{k: v for k, v in values.items() if k in names})
    return record


def _log_dirs_error(image: MetadataImage, request: RegistrationRequest) -> ApiError | None:
    """The directory checks of KIP-858 (metadata.version 3.7-IV2 and later)."""
    dirs = list(request.log_dirs)
    if not dirs:
        return ApiError(ErrorCode.invalid_registration, "No directories specified in request")
    if any(d is None or (d.int >> 64 == 0 and d.int & (2**64 - 1) < _RESERVED_DIRECTORY_IDS) for d in dirs):
        return ApiError(ErrorCode.invalid_registration, "Reserved directory ID in request")
    if len(set(dirs)) != len(dirs):
        return ApiError(ErrorCode.invalid_registration, "Duplicate directory ID in request")
    for broker_id, registration in sorted(image.cluster.items()):
        if broker_id == request.broker_id:
            continue
        for d in dirs:
            if d in registration.log_dirs:
                message = f"Broker {broker_id} is already registered with directory {kafka_uuid(d)}"
                return ApiError(ErrorCode.invalid_registration, message)
    return None


def _finalized_features(image: MetadataImage) -> Mapping[str, int]:
    """The finalized levels, with kraft.version from the Raft layer: 0 for a static single-voter quorum."""
    return {KRAFT_VERSION: 0, **image.features}


def _features_error(image: MetadataImage, request: RegistrationRequest) -> ApiError | None:
    """Every finalized feature must be within the broker's range. A broker that offers no metadata.version
    offers level 1 only; one that omits another finalized feature offers [0, 0]."""
    offered = {f.name: (int(f.min_supported_version), int(f.max_supported_version)) for f in request.features}
    for name, level in _finalized_features(image).items():
        default = (MINIMUM_KRAFT_METADATA_VERSION,) * 2 if name == METADATA_VERSION else (0, 0)
        low, high = offered.get(name, default)
        if not low <= level <= high:
            message = (
                f"Unable to register because the broker does not support finalized version {level} of {name}. "
                f"The broker wants a version between {low} and {high}, inclusive."
            )
            return ApiError(ErrorCode.unsupported_version, message)
    return None
