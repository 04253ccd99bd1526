"""``MetadataImage``: the immutable state that the metadata records describe, as Kafka's ``image/``.

An image is never changed: ``MetadataDelta`` (in ``delta.py``) replays records on top of one and
produces the next, sharing every section it did not touch. Sections are read-only mappings
(``types.MappingProxyType``); values are records or small immutable classes.

``MetadataImage.records()`` writes the image back as records, in the order of Kafka's snapshots.
"""

from __future__ import annotations

import sys
import uuid
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, NamedTuple, cast

import immutables
from kio.schema.types import BrokerId, TopicName
from kio.static.primitive import f64, i8, i16, i32, i64

from ksteward.authorizer import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    InvalidAclError,
    PatternType,
    ResourceType,
)

from .records import (
    AccessControlEntryRecord,
    AnyPartitionChangeRecord,
    AnyPartitionRecord,
    ClientQuotaRecord,
    ConfigRecord,
    DelegationTokenRecord,
    EntityData,
    FeatureLevelRecord,
    MetadataRecord,
    PartitionChangeRecordV0,
    PartitionChangeRecordV2,
    PartitionRecordV0,
    PartitionRecordV1,
    PartitionRecordV2,
    ProducerIdsRecord,
    RegisterBrokerRecord,
    RegisterControllerRecord,
    TopicRecord,
    UserScramCredentialRecord,
)

METADATA_VERSION = "metadata.version"

QuotaEntity = tuple[tuple[str, str | None], ...]
"""A client-quota entity: ``(entity_type, entity_name or None for the default)`` pairs sorted by type."""

ConfigResourceKey = tuple[int, str]
"""``(ConfigResource.Type id, resource name)``."""

_EMPTY: Mapping[Any, Any] = MappingProxyType({})


def _empty() -> Mapping[Any, Any]:
    return _EMPTY


_EMPTY_PERSISTENT: immutables.Map[Any, Any] = immutables.Map()


def _empty_persistent() -> Mapping[Any, Any]:
    """The empty start of a section that ``MetadataDelta`` keeps as a persistent map, so that equal images
    compare equal however they were built."""
    return _EMPTY_PERSISTENT


class PartitionRegistration(NamedTuple):
    """One partition's state (a NamedTuple: a million of them are built when a snapshot loads)."""

    replicas: tuple[BrokerId, ...]
    isr: tuple[i32, ...]
    removing_replicas: tuple[BrokerId, ...]
    adding_replicas: tuple[BrokerId, ...]
    leader: BrokerId
    leader_recovery_state: i8
    leader_epoch: i32
    partition_epoch: i32
    directories: tuple[uuid.UUID | None, ...] = ()
    elr: tuple[BrokerId, ...] = ()
    last_known_elr: tuple[BrokerId, ...] = ()

    @classmethod
    def from_record(cls, record: AnyPartitionRecord) -> PartitionRegistration:
        directories: tuple[uuid.UUID | None, ...] = ()
        elr: tuple[BrokerId, ...] = ()
        last_known_elr: tuple[BrokerId, ...] = ()
        if not isinstance(record, PartitionRecordV0):
            directories = record.directories
            if isinstance(record, PartitionRecordV2):
                elr = record.eligible_leader_replicas or ()
                last_known_elr = record.last_known_elr or ()
        return cls(
            record.replicas, record.isr, record.removing_replicas, record.adding_replicas, record.leader,
            record.leader_recovery_state, record.leader_epoch, record.partition_epoch, directories, elr,
            last_known_elr,
        )  # fmt: skip

    def merge(self, change: AnyPartitionChangeRecord) -> PartitionRegistration:
        """Apply a PartitionChangeRecord as Kafka's ``PartitionRegistration.merge`` does: absent
        (None, -2 leader, -1 recovery state) fields are unchanged, a new leader bumps the leader
        epoch, and every change bumps the partition epoch."""
        leader, leader_epoch = self.leader, self.leader_epoch
        if change.leader != -2:
            leader, leader_epoch = change.leader, i32(self.leader_epoch + 1)
        directories = self.directories
        elr, last_known_elr = self.elr, self.last_known_elr
        if not isinstance(change, PartitionChangeRecordV0):
            if change.directories is not None:
                directories = change.directories
            if isinstance(change, PartitionChangeRecordV2):
                elr = self.elr if change.eligible_leader_replicas is None else change.eligible_leader_replicas
                last_known_elr = self.last_known_elr if change.last_known_elr is None else change.last_known_elr
        return PartitionRegistration(
            self.replicas if change.replicas is None else change.replicas,
            self.isr if change.isr is None else change.isr,
            self.removing_replicas if change.removing_replicas is None else change.removing_replicas,
            self.adding_replicas if change.adding_replicas is None else change.adding_replicas,
            leader,
            self.leader_recovery_state if change.leader_recovery_state == -1 else change.leader_recovery_state,
            leader_epoch,
            i32(self.partition_epoch + 1),
            directories,
            elr,
            last_known_elr,
        )

    def to_record(self, topic_id: uuid.UUID | None, partition_id: int) -> AnyPartitionRecord:
        """The lowest PartitionRecord version that holds this state (v2 only when ELRs are set)."""
        if self.elr or self.last_known_elr:
            return PartitionRecordV2(
                partition_id=cast(i32, partition_id), topic_id=topic_id, replicas=self.replicas, isr=self.isr,
                removing_replicas=self.removing_replicas, adding_replicas=self.adding_replicas,
                leader=self.leader, leader_recovery_state=self.leader_recovery_state,
                leader_epoch=self.leader_epoch, partition_epoch=self.partition_epoch,
                directories=self.directories, eligible_leader_replicas=self.elr, last_known_elr=self.last_known_elr,
            )  # fmt: skip
        if self.directories:
            return PartitionRecordV1(
                partition_id=cast(i32, partition_id), topic_id=topic_id, replicas=self.replicas, isr=self.isr,
                removing_replicas=self.removing_replicas, adding_replicas=self.adding_replicas,
                leader=self.leader, leader_recovery_state=self.leader_recovery_state,
                leader_epoch=self.leader_epoch, partition_epoch=self.partition_epoch, directories=self.directories,
            )  # fmt: skip
        return PartitionRecordV0(
            partition_id=cast(i32, partition_id), topic_id=topic_id, replicas=self.replicas, isr=self.isr,
            removing_replicas=self.removing_replicas, adding_replicas=self.adding_replicas, leader=self.leader,
            leader_recovery_state=self.leader_recovery_state, leader_epoch=self.leader_epoch,
            partition_epoch=self.partition_epoch,
        )  # fmt: skip


@dataclass(frozen=True, slots=True)
class TopicImage:
    name: str
    id: uuid.UUID | None
    partitions: Mapping[int, PartitionRegistration] = field(default_factory=_empty)


@dataclass(frozen=True, slots=True)
class TopicsImage:
    by_id: Mapping[uuid.UUID | None, TopicImage] = field(default_factory=_empty)
    by_name: Mapping[str, TopicImage] = field(default_factory=_empty)

    def __len__(self) -> int:
        return len(self.by_id)


def _codes(members: Iterable[Any], refused: tuple[Any, ...]) -> dict[int, Any]:
    return {int(m): m for m in members if m not in refused}


# Wire code -> member, for the codes a binding takes as they are (not ANY, MATCH or UNKNOWN): acl_binding's fast path.
_RESOURCE_TYPES = _codes(ResourceType, (ResourceType.ANY, ResourceType.UNKNOWN))
_PATTERN_TYPES = _codes(PatternType, (PatternType.ANY, PatternType.MATCH, PatternType.UNKNOWN))
_OPERATIONS = _codes(AclOperation, (AclOperation.ANY, AclOperation.UNKNOWN))
_PERMISSIONS = _codes(AclPermissionType, (AclPermissionType.ANY, AclPermissionType.UNKNOWN))


def acl_binding(record: AccessControlEntryRecord) -> AclBinding:
    """The ACL a record holds, as the authorizer's binding. InvalidAclError for codes no binding can hold
    (ANY or MATCH): CreateAcls never writes those, but a log written elsewhere might.

    Codes and strings as CreateAcls writes them take a fast path (``AclBinding.trusted``, a third of the
    constructor's cost: a 10^5-ACL change replays 2 x 10^5 records); anything else goes through the constructor
    and its checks."""
    rt, pt = _RESOURCE_TYPES.get(record.resource_type), _PATTERN_TYPES.get(record.pattern_type)
    op, perm = _OPERATIONS.get(record.operation), _PERMISSIONS.get(record.permission_type)
    name, principal, host = record.resource_name, record.principal, record.host
    if (rt is None or pt is None or op is None or perm is None or type(name) is not str
            or type(principal) is not str or type(host) is not str):  # fmt: skip
        return AclBinding(record.resource_type, name, record.pattern_type, principal, host, record.operation,
                          record.permission_type)  # fmt: skip
    intern = sys.intern
    return AclBinding.trusted(rt, intern(name), pt, intern(principal), intern(host), op, perm)


def acl_binding_or_none(record: AccessControlEntryRecord) -> AclBinding | None:
    try:
        return acl_binding(record)
    except InvalidAclError:
        return None


#: Every resource type an ACL can be stored with (a filter's ANY reads each).
_STORED_RESOURCE_TYPES = tuple(t for t in ResourceType if t is not ResourceType.ANY)


@dataclass(frozen=True, slots=True)
class AclsImage(Mapping[uuid.UUID | None, AccessControlEntryRecord]):
    """The ACLs, as Kafka's ``AclsImage``: a read-only mapping of ACL id to its record (what a snapshot
    writes back, byte for byte), with ``by_binding``, the id of each ACL keyed by its binding.

    ``by_binding`` is the 7-tuple index: CreateAcls finds a duplicate in it, DeleteAcls scans it with its
    filters, so the controller keeps no copy of its own. It leaves out the records no binding can hold (see
    :func:`acl_binding`); if a foreign log stores one 7-tuple under two ids, the first id is the one indexed,
    as Kafka's authorizer refuses the second. Neither map has an order (nor has Kafka's ``AclsImage``).
    """

    # Persistent maps (HAMTs): the next image shares all but the changed paths with this one, so an ACL
    # change costs O(log n), not a copy of every ACL (``MetadataDelta``).
    records: Mapping[uuid.UUID | None, AccessControlEntryRecord] = field(default_factory=immutables.Map)
    by_binding: Mapping[AclBinding, uuid.UUID | None] = field(default_factory=immutables.Map)
    #: ``by_binding`` grouped by (resource type, resource name): a DeleteAcls filter that names a resource
    #: reads a few groups instead of every ACL (``AclBindingFilter.resource_keys``).
    by_name: Mapping[tuple[ResourceType, str], Mapping[AclBinding, uuid.UUID | None]] = field(
        default_factory=immutables.Map
    )
    #: The offset of the last batch that changed the ACLs, or at least that offset: a replay of several batches
    #: as one delta (a broker's catch-up, a restart) stamps the last of them. -1 when no ACL ever changed. The
    #: CreateAcls v4 precondition compares it (docs/acl-transactions.md).
    changed_at: int = field(default=-1, compare=False)

    def matching(self, acl_filter: AclBindingFilter) -> list[tuple[AclBinding, uuid.UUID | None]]:
        """The (ACL, id) pairs of ``by_binding`` that ``acl_filter`` matches."""
        matches = acl_filter.matches
        keys = acl_filter.resource_keys(_STORED_RESOURCE_TYPES)
        if keys is None:
            return [(acl, acl_id) for acl, acl_id in self.by_binding.items() if matches(acl)]
        found: list[tuple[AclBinding, uuid.UUID | None]] = []
        for key in keys:
            group = self.by_name.get(key)
            if group:
                found += [(acl, acl_id) for acl, acl_id in group.items() if matches(acl)]
        return found

    def __getitem__(self, acl_id: uuid.UUID | None) -> AccessControlEntryRecord:
        return self.records[acl_id]

    def __iter__(self) -> Iterator[uuid.UUID | None]:
        return iter(self.records)

    def __len__(self) -> int:
        return len(self.records)


@dataclass(frozen=True, slots=True)
class MetadataImage:
    """The state after the record at ``offset`` (-1: nothing applied)."""

    offset: int = -1
    epoch: int = -1
    """Leader epoch of the batch holding ``offset``."""
    timestamp_ms: int = -1
    """Append time of that batch (a snapshot's LastContainedLogTimestamp)."""
    features: Mapping[str, int] = field(default_factory=_empty)
    cluster: Mapping[int, RegisterBrokerRecord] = field(default_factory=_empty)
    """Registered brokers by id, every registration held as the newest record version."""
    controllers: Mapping[int, RegisterControllerRecord] = field(default_factory=_empty)
    topics: TopicsImage = field(default_factory=TopicsImage)
    configs: Mapping[ConfigResourceKey, Mapping[str, str]] = field(default_factory=_empty_persistent)
    client_quotas: Mapping[QuotaEntity, Mapping[str, float]] = field(default_factory=_empty_persistent)
    producer_ids: int = -1
    """The next producer id block start (ProducerIdsRecord.NextProducerId), -1 if none was assigned."""
    acls: AclsImage = field(default_factory=AclsImage)
    scram: Mapping[tuple[int, str], UserScramCredentialRecord] = field(default_factory=_empty_persistent)
    """SCRAM credentials by (mechanism, user name)."""
    delegation_tokens: Mapping[str, DelegationTokenRecord] = field(default_factory=_empty_persistent)

    @property
    def is_empty(self) -> bool:
        return self.offset == -1 and not self.features and not self.topics

    def records(self) -> Iterator[MetadataRecord]:
        """The image as records, in Kafka's snapshot order: features (metadata.version first),
        cluster, topics (each TopicRecord then its PartitionRecords), configs, client quotas,
        producer ids, ACLs, SCRAM credentials, delegation tokens."""
        features = self.features
        if METADATA_VERSION in features:
            yield FeatureLevelRecord(name=METADATA_VERSION, feature_level=i16(features[METADATA_VERSION]))
        for name in sorted(features):
            if name != METADATA_VERSION:
                yield FeatureLevelRecord(name=name, feature_level=i16(features[name]))
        for broker_id in sorted(self.cluster):
            yield self.cluster[broker_id]
        for controller_id in sorted(self.controllers):
            yield self.controllers[controller_id]
        for name in sorted(self.topics.by_name):
            topic = self.topics.by_name[name]
            yield TopicRecord(name=TopicName(name), topic_id=topic.id)
            partitions = topic.partitions
            for partition_id in sorted(partitions):
                yield partitions[partition_id].to_record(topic.id, partition_id)
        for resource_type, resource_name in sorted(self.configs):
            values = self.configs[(resource_type, resource_name)]
            for key in sorted(values):
                yield ConfigRecord(
                    resource_type=i8(resource_type), resource_name=resource_name, name=key, value=values[key]
                )
        for entity in sorted(self.client_quotas, key=_entity_sort_key):
            entity_data = tuple(EntityData(entity_type=t, entity_name=n) for t, n in entity)
            quotas = self.client_quotas[entity]
            for key in sorted(quotas):
                yield ClientQuotaRecord(entity=entity_data, key=key, value=f64(quotas[key]), remove=False)
        if self.producer_ids >= 0:
            yield ProducerIdsRecord(
                broker_id=BrokerId(-1), broker_epoch=i64(-1), next_producer_id=i64(self.producer_ids)
            )
        for acl_id in sorted(self.acls, key=_uuid_sort_key):
            yield self.acls[acl_id]
        for scram_key in sorted(self.scram):
            yield self.scram[scram_key]
        for token_id in sorted(self.delegation_tokens):
            yield self.delegation_tokens[token_id]


def _uuid_sort_key(value: uuid.UUID | None) -> int:
    return 0 if value is None else value.int


def _entity_sort_key(entity: QuotaEntity) -> tuple[tuple[str, bool, str], ...]:
    return tuple((t, n is not None, n or "") for t, n in entity)


EMPTY_IMAGE = MetadataImage()
