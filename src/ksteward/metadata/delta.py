"""``MetadataDelta``: replays records on top of a ``MetadataImage`` and produces the next image.

    delta = MetadataDelta(image)
    for record in batch_records:
        delta.replay(record)          # MetadataReplayError on a record that cannot apply
    image = delta.apply(offset=batch.last_offset, epoch=batch.leader_epoch)

Copy-on-write: a section is copied the first time a record of the delta touches it, and only then;
within ``topics`` only the touched topics' partition maps are copied, within ``configs`` and
``client_quotas`` only the touched entries. The sections that grow with the cluster's users and resources
(ACLs, configs, client quotas, SCRAM credentials, delegation tokens) are persistent maps (``immutables.Map``)
whose working copy is a mutation, O(log n) a change: a dict copy made every batch cost O(n) (at 13,000 SCRAM
users, a quarter of the controller's CPU for each AlterUserScramCredentials). Everything else is shared with
the base image. A delta is applied once; a delta whose replay raised must be discarded (the base image is
untouched).

Replay rules (Kafka's ``ConfigurationsDelta``, ``TopicsDelta`` and ``AclsDelta``): ConfigRecord with a null
value deletes the key and an emptied resource is dropped; RemoveTopicRecord drops the topic, its
partitions and its TOPIC configs; a TopicRecord for an existing name or id, a PartitionRecord or
PartitionChangeRecord for an unknown topic or partition, removing an unknown topic or ACL id, and
adding a second ACL with an existing id are replay errors; so is a broker fence, unfence or registration
change for an unregistered broker or another broker epoch. Each ACL record also updates the 7-tuple
index ``AclsImage.by_binding``. Transaction markers, NoOpRecord and ZkMigrationStateRecord change nothing
here (``loader`` implements metadata transactions).
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Callable, Iterable, Mapping
from types import MappingProxyType
from typing import Any, TypeVar

import immutables
from kio.static.primitive import i32

from ksteward.authorizer import AclBinding, ResourceType

from . import records as r
from .image import (
    EMPTY_IMAGE,
    AclsImage,
    ConfigResourceKey,
    MetadataImage,
    PartitionRegistration,
    QuotaEntity,
    TopicImage,
    TopicsImage,
    acl_binding_or_none,
)
from .records.kafka_json import kafka_uuid

TOPIC_RESOURCE_TYPE = 2  # ConfigResource.Type.TOPIC

K = TypeVar("K")
V = TypeVar("V")


class MetadataReplayError(ValueError):
    """A record that cannot be applied to the image (the log or snapshot is inconsistent)."""


def _persistent(mapping: Mapping[K, V]) -> immutables.Map[K, V]:
    """``mapping`` as a persistent map (an image built before any change may hold a plain mapping)."""
    return mapping if isinstance(mapping, immutables.Map) else immutables.Map(mapping)


def _copy(mapping: Any) -> dict[Any, Any]:
    # Sections are MappingProxyType views: .copy() copies the dict underneath in C, ~20x faster
    # than dict(view), which goes through the mapping protocol key by key.
    copied = mapping.copy()
    return copied if type(copied) is dict else dict(mapping)


class MetadataDelta:
    """Changes to one image; see the module docstring."""

    def __init__(self, image: MetadataImage) -> None:
        self.image = image
        self._applied = False
        # Working copies, created on first touch. None: the section is untouched and shared.
        self._features: dict[str, int] | None = None
        self._cluster: dict[int, r.RegisterBrokerRecord] | None = None
        self._controllers: dict[int, r.RegisterControllerRecord] | None = None
        self._by_id: dict[uuid.UUID | None, TopicImage] | None = None
        self._by_name: dict[str, TopicImage] | None = None
        self._partitions: dict[uuid.UUID | None, dict[int, PartitionRegistration]] = {}
        # The partition map of the last topic touched, keyed by ``UUID.int``: a snapshot lists a
        # topic's partitions together, and hashing a UUID is a Python-level call per record.
        self._hot_key = -1
        self._hot: dict[int, PartitionRegistration] | None = None
        # Sections that grow with the cluster are persistent maps (``immutables``, a HAMT, like Kafka's image's
        # PCollectionsImmutableMap): a change costs O(log n), where a dict copy cost O(n) per batch.
        self._configs: immutables.MapMutation[ConfigResourceKey, Any] | None = None
        self._config_entries: dict[ConfigResourceKey, dict[str, str]] = {}
        self._quotas: immutables.MapMutation[QuotaEntity, Any] | None = None
        self._quota_entries: dict[QuotaEntity, dict[str, float]] = {}
        self._producer_ids: int | None = None
        self._acls: immutables.MapMutation[uuid.UUID | None, r.AccessControlEntryRecord] | None = None
        self._acl_ids: immutables.MapMutation[AclBinding, uuid.UUID | None] | None = None  # acls.by_binding's
        self._acl_names: immutables.MapMutation[tuple[ResourceType, str], Mapping[AclBinding, uuid.UUID | None]] | None
        self._acl_names = None  # acls.by_name's, with the groups changed so far in ``_acl_groups``
        self._acl_groups: dict[tuple[ResourceType, str], immutables.MapMutation[AclBinding, uuid.UUID | None]] = {}
        self._scram: immutables.MapMutation[tuple[int, str], r.UserScramCredentialRecord] | None = None
        self._tokens: immutables.MapMutation[str, r.DelegationTokenRecord] | None = None

    # --- public API -------------------------------------------------------------------------

    def replay(self, record: r.MetadataRecord) -> None:
        """Apply one record to the delta. Raises MetadataReplayError (or TypeError for a non-record)."""
        if self._applied:
            raise RuntimeError("this MetadataDelta was already applied")
        handler = _HANDLERS.get(type(record))
        if handler is None:
            raise TypeError(f"not a metadata record: {type(record).__name__}")
        handler(self, record)

    def apply(self, *, offset: int, epoch: int | None = None, timestamp_ms: int | None = None) -> MetadataImage:
        """The next image, at ``offset`` (the last offset the delta covers)."""
        if self._applied:
            raise RuntimeError("this MetadataDelta was already applied")
        self._applied = True
        base = self.image
        topics = base.topics
        if self._by_id is not None and self._by_name is not None:
            for topic_id, partitions in self._partitions.items():
                topic = self._by_id[topic_id]
                updated = TopicImage(topic.name, topic.id, MappingProxyType(partitions))
                self._by_id[topic_id] = updated
                self._by_name[topic.name] = updated
            topics = TopicsImage(MappingProxyType(self._by_id), MappingProxyType(self._by_name))
        return MetadataImage(
            offset=offset,
            epoch=base.epoch if epoch is None else epoch,
            timestamp_ms=base.timestamp_ms if timestamp_ms is None else timestamp_ms,
            features=base.features if self._features is None else MappingProxyType(self._features),
            cluster=base.cluster if self._cluster is None else MappingProxyType(self._cluster),
            controllers=base.controllers if self._controllers is None else MappingProxyType(self._controllers),
            topics=topics,
            configs=base.configs if self._configs is None else _seal(self._configs, self._config_entries),
            client_quotas=base.client_quotas if self._quotas is None else _seal(self._quotas, self._quota_entries),
            producer_ids=base.producer_ids if self._producer_ids is None else self._producer_ids,
            acls=base.acls if self._acls is None else self._sealed_acls(self._acls, offset),
            scram=base.scram if self._scram is None else self._scram.finish(),
            delegation_tokens=base.delegation_tokens if self._tokens is None else self._tokens.finish(),
        )

    # --- working copies ---------------------------------------------------------------------

    def _topics(self) -> tuple[dict[uuid.UUID | None, TopicImage], dict[str, TopicImage]]:
        if self._by_id is None or self._by_name is None:
            self._by_id = _copy(self.image.topics.by_id)
            self._by_name = _copy(self.image.topics.by_name)
        return self._by_id, self._by_name

    def _topic_partitions(self, topic_id: uuid.UUID | None, what: str) -> dict[int, PartitionRegistration]:
        partitions = self._partitions.get(topic_id)
        if partitions is None:
            by_id, _ = self._topics()
            topic = by_id.get(topic_id)
            if topic is None:
                raise MetadataReplayError(f"{what} for unknown topic id {kafka_uuid(topic_id)}")
            partitions = self._partitions[topic_id] = _copy(topic.partitions)
        return partitions

    def _hot_partitions(self, topic_id: uuid.UUID | None, what: str) -> dict[int, PartitionRegistration]:
        key = 0 if topic_id is None else topic_id.int
        if key != self._hot_key or self._hot is None:
            self._hot = self._topic_partitions(topic_id, what)
            self._hot_key = key
        return self._hot

    def _config_resource(self, key: ConfigResourceKey) -> dict[str, str]:
        entries = self._config_entries.get(key)
        if entries is None:
            if self._configs is None:
                self._configs = _persistent(self.image.configs).mutate()
            entries = self._config_entries[key] = _copy(self._configs.get(key, {}))
        return entries

    def _quota_entity(self, key: QuotaEntity) -> dict[str, float]:
        entries = self._quota_entries.get(key)
        if entries is None:
            if self._quotas is None:
                self._quotas = _persistent(self.image.client_quotas).mutate()
            entries = self._quota_entries[key] = _copy(self._quotas.get(key, {}))
        return entries

    def _brokers(self) -> dict[int, r.RegisterBrokerRecord]:
        if self._cluster is None:
            self._cluster = _copy(self.image.cluster)
        return self._cluster

    def _broker(self, broker_id: int, what: str) -> r.RegisterBrokerRecord:
        broker = self._brokers().get(broker_id)
        if broker is None:
            raise MetadataReplayError(f"{what} for unregistered broker {broker_id}")
        return broker

    # --- handlers ---------------------------------------------------------------------------

    def _feature_level(self, record: r.FeatureLevelRecord) -> None:
        if self._features is None:
            self._features = _copy(self.image.features)
        if record.feature_level == 0:
            self._features.pop(record.name, None)  # level 0: the feature is not enabled
        else:
            self._features[record.name] = int(record.feature_level)

    def _register_broker(self, record: r.AnyRegisterBrokerRecord) -> None:
        self._brokers()[int(record.broker_id)] = _newest_registration(record)

    def _unregister_broker(self, record: r.UnregisterBrokerRecord) -> None:
        self._brokers().pop(int(record.broker_id), None)

    def _registered(self, broker_id: int, epoch: int, what: str) -> r.RegisterBrokerRecord:
        """The registration a change record names; one for another epoch is a replay error, as in Kafka's
        ``ClusterControlManager.replayRegistrationChange`` ("no broker registration with that epoch")."""
        broker = self._broker(broker_id, what)
        if int(broker.broker_epoch) != epoch:
            raise MetadataReplayError(
                f"{what} for broker {broker_id} epoch {epoch}: no broker registration with that epoch found"
            )
        return broker

    def _fence(self, record: r.FenceBrokerRecord | r.UnfenceBrokerRecord) -> None:
        broker = self._registered(int(record.id), int(record.epoch), type(record).__name__)
        fenced = isinstance(record, r.FenceBrokerRecord)
        self._brokers()[int(record.id)] = dataclasses.replace(broker, fenced=fenced)

    def _registration_change(self, record: r.AnyBrokerRegistrationChangeRecord) -> None:
        broker = self._registered(int(record.broker_id), int(record.broker_epoch), "BrokerRegistrationChangeRecord")
        changes: dict[str, Any] = {}
        if record.fenced not in (-1, 0, 1):
            raise MetadataReplayError(f"BrokerRegistrationChangeRecord with invalid fenced value {record.fenced}")
        if record.fenced != 0:
            changes["fenced"] = record.fenced == 1
        if not isinstance(record, r.BrokerRegistrationChangeRecordV0):
            if record.in_controlled_shutdown not in (0, 1):
                raise MetadataReplayError(
                    f"BrokerRegistrationChangeRecord with invalid inControlledShutdown {record.in_controlled_shutdown}"
                )
            if record.in_controlled_shutdown == 1:
                changes["in_controlled_shutdown"] = True
            if isinstance(record, r.BrokerRegistrationChangeRecordV2) and record.log_dirs:
                changes["log_dirs"] = record.log_dirs
        self._brokers()[int(record.broker_id)] = dataclasses.replace(broker, **changes)

    def _register_controller(self, record: r.RegisterControllerRecord) -> None:
        if self._controllers is None:
            self._controllers = _copy(self.image.controllers)
        self._controllers[int(record.controller_id)] = record

    def _unregister_controller(self, record: r.UnregisterControllerRecord) -> None:
        if self._controllers is None:
            self._controllers = _copy(self.image.controllers)
        self._controllers.pop(int(record.controller_id), None)

    def _topic(self, record: r.TopicRecord) -> None:
        by_id, by_name = self._topics()
        if record.name in by_name:
            raise MetadataReplayError(f"TopicRecord for existing topic name {record.name!r}")
        if record.topic_id in by_id:
            raise MetadataReplayError(f"TopicRecord for existing topic id {kafka_uuid(record.topic_id)}")
        topic = TopicImage(record.name, record.topic_id)
        by_id[record.topic_id] = topic
        by_name[record.name] = topic
        self._partitions[record.topic_id] = {}

    def _partition(self, record: r.AnyPartitionRecord) -> None:
        partitions = self._hot_partitions(record.topic_id, "PartitionRecord")
        partitions[record.partition_id] = PartitionRegistration.from_record(record)

    def _partition_change(self, record: r.AnyPartitionChangeRecord) -> None:
        partitions = self._hot_partitions(record.topic_id, "PartitionChangeRecord")
        current = partitions.get(int(record.partition_id))
        if current is None:
            raise MetadataReplayError(
                f"PartitionChangeRecord for unknown partition {kafka_uuid(record.topic_id)}:{record.partition_id}"
            )
        partitions[int(record.partition_id)] = current.merge(record)

    def _remove_topic(self, record: r.RemoveTopicRecord) -> None:
        by_id, by_name = self._topics()
        topic = by_id.pop(record.topic_id, None)
        if topic is None:
            raise MetadataReplayError(f"RemoveTopicRecord for unknown topic id {kafka_uuid(record.topic_id)}")
        del by_name[topic.name]
        self._partitions.pop(record.topic_id, None)
        self._hot = None
        key = (TOPIC_RESOURCE_TYPE, topic.name)
        configs = self.image.configs if self._configs is None else self._configs
        if key in self._config_entries or key in configs:
            self._config_resource(key).clear()  # dropped from the image when sealed

    def _clear_elr(self, record: r.ClearElrRecord) -> None:
        by_id, by_name = self._topics()
        if record.topic_name:
            topic = by_name.get(record.topic_name)
            if topic is None:
                raise MetadataReplayError(f"ClearElrRecord for unknown topic {record.topic_name!r}")
            targets = [topic.id]
        else:
            targets = list(by_id)
        for topic_id in targets:
            current = self._partitions.get(topic_id)
            source = by_id[topic_id].partitions if current is None else current
            dirty = [pid for pid, p in source.items() if p.elr or p.last_known_elr]
            if dirty:
                partitions = self._topic_partitions(topic_id, "ClearElrRecord")
                for pid in dirty:
                    old = partitions[pid]
                    partitions[pid] = old._replace(
                        elr=(), last_known_elr=(), partition_epoch=i32(old.partition_epoch + 1)
                    )

    def _config(self, record: r.ConfigRecord) -> None:
        entries = self._config_resource((int(record.resource_type), record.resource_name))
        if record.value is None:
            entries.pop(record.name, None)
        else:
            entries[record.name] = record.value

    def _client_quota(self, record: r.ClientQuotaRecord) -> None:
        entity = tuple(sorted(((e.entity_type, e.entity_name) for e in record.entity), key=lambda pair: pair[0]))
        entries = self._quota_entity(entity)
        if record.remove:
            entries.pop(record.key, None)
        else:
            entries[record.key] = float(record.value)

    def _producer_ids_record(self, record: r.ProducerIdsRecord) -> None:
        self._producer_ids = int(record.next_producer_id)

    def _sealed_acls(
        self, acls: immutables.MapMutation[uuid.UUID | None, r.AccessControlEntryRecord], offset: int
    ) -> AclsImage:
        assert self._acl_ids is not None and self._acl_names is not None
        names = self._acl_names
        for key, group in self._acl_groups.items():
            sealed = group.finish()
            if sealed:
                names[key] = sealed
            else:
                names.pop(key, None)
        return AclsImage(acls.finish(), self._acl_ids.finish(), names.finish(), changed_at=offset)

    def _acls_copy(self) -> immutables.MapMutation[uuid.UUID | None, r.AccessControlEntryRecord]:
        """The ACL section's working copy: a mutation of the base image's persistent maps, O(log n) per change
        whatever the number of ACLs (a dict copy here made every ACL record cost O(n))."""
        if self._acls is None:
            self._acls = _persistent(self.image.acls.records).mutate()
            self._acl_ids = _persistent(self.image.acls.by_binding).mutate()
            self._acl_names = _persistent(self.image.acls.by_name).mutate()
        return self._acls

    def _acl_group(self, binding: AclBinding) -> immutables.MapMutation[AclBinding, uuid.UUID | None]:
        """The working copy of ``acls.by_name``'s group of ``binding``'s resource."""
        key = (binding.resource_type, binding.resource_name)
        group = self._acl_groups.get(key)
        if group is None:
            assert self._acl_names is not None
            base = self._acl_names.get(key)
            group = self._acl_groups[key] = (immutables.Map() if base is None else _persistent(base)).mutate()
        return group

    def _acl(self, record: r.AccessControlEntryRecord) -> None:
        acls = self._acls_copy()
        if record.id in acls:
            raise MetadataReplayError(f"AccessControlEntryRecord with existing ACL id {kafka_uuid(record.id)}")
        acls[record.id] = record
        binding = acl_binding_or_none(record)
        assert self._acl_ids is not None
        if binding is not None and binding not in self._acl_ids:
            self._acl_ids[binding] = record.id
            self._acl_group(binding)[binding] = record.id

    def _remove_acl(self, record: r.RemoveAccessControlEntryRecord) -> None:
        removed = self._acls_copy().pop(record.id, None)
        if removed is None:
            raise MetadataReplayError(f"RemoveAccessControlEntryRecord for unknown ACL id {kafka_uuid(record.id)}")
        binding = acl_binding_or_none(removed)
        assert self._acl_ids is not None
        if binding is not None and self._acl_ids.get(binding) == record.id:
            del self._acl_ids[binding]
            del self._acl_group(binding)[binding]

    def _scram_credential(self, record: r.UserScramCredentialRecord | r.RemoveUserScramCredentialRecord) -> None:
        if self._scram is None:
            self._scram = _persistent(self.image.scram).mutate()
        key = (int(record.mechanism), record.name)
        if isinstance(record, r.UserScramCredentialRecord):
            self._scram[key] = record
        else:
            self._scram.pop(key, None)

    def _delegation_token(self, record: r.DelegationTokenRecord | r.RemoveDelegationTokenRecord) -> None:
        if self._tokens is None:
            self._tokens = _persistent(self.image.delegation_tokens).mutate()
        if isinstance(record, r.DelegationTokenRecord):
            self._tokens[record.token_id] = record
        else:
            self._tokens.pop(record.token_id, None)

    def _nothing(self, record: object) -> None:
        pass


def _seal(outer: immutables.MapMutation[K, Any], touched: dict[K, dict[str, V]]) -> immutables.Map[K, Any]:
    for key, entries in touched.items():
        if entries:
            outer[key] = MappingProxyType(entries)
        else:
            outer.pop(key, None)
    return outer.finish()


def _newest_registration(record: r.AnyRegisterBrokerRecord) -> r.RegisterBrokerRecord:
    if isinstance(record, r.RegisterBrokerRecordV3):
        return record
    values = {f.name: getattr(record, f.name) for f in dataclasses.fields(record)}
    return r.RegisterBrokerRecordV3(**values)


_HANDLERS: dict[type, Callable[[MetadataDelta, Any], None]] = {
    r.FeatureLevelRecord: MetadataDelta._feature_level,
    r.UnregisterBrokerRecord: MetadataDelta._unregister_broker,
    r.FenceBrokerRecord: MetadataDelta._fence,
    r.UnfenceBrokerRecord: MetadataDelta._fence,
    r.RegisterControllerRecord: MetadataDelta._register_controller,
    r.UnregisterControllerRecord: MetadataDelta._unregister_controller,
    r.TopicRecord: MetadataDelta._topic,
    r.RemoveTopicRecord: MetadataDelta._remove_topic,
    r.ClearElrRecord: MetadataDelta._clear_elr,
    r.ConfigRecord: MetadataDelta._config,
    r.ClientQuotaRecord: MetadataDelta._client_quota,
    r.ProducerIdsRecord: MetadataDelta._producer_ids_record,
    r.AccessControlEntryRecord: MetadataDelta._acl,
    r.RemoveAccessControlEntryRecord: MetadataDelta._remove_acl,
    r.UserScramCredentialRecord: MetadataDelta._scram_credential,
    r.RemoveUserScramCredentialRecord: MetadataDelta._scram_credential,
    r.DelegationTokenRecord: MetadataDelta._delegation_token,
    r.RemoveDelegationTokenRecord: MetadataDelta._delegation_token,
    r.NoOpRecord: MetadataDelta._nothing,
    r.ZkMigrationStateRecord: MetadataDelta._nothing,
    r.BeginTransactionRecord: MetadataDelta._nothing,
    r.EndTransactionRecord: MetadataDelta._nothing,
    r.AbortTransactionRecord: MetadataDelta._nothing,
    **{cls: MetadataDelta._register_broker for cls in (r.RegisterBrokerRecordV0, r.RegisterBrokerRecordV1,
                                                      r.RegisterBrokerRecordV2, r.RegisterBrokerRecordV3)},
    **{cls: MetadataDelta._registration_change for cls in (r.BrokerRegistrationChangeRecordV0,
                                                          r.BrokerRegistrationChangeRecordV1,
                                                          r.BrokerRegistrationChangeRecordV2)},
    **{cls: MetadataDelta._partition for cls in (r.PartitionRecordV0, r.PartitionRecordV1, r.PartitionRecordV2)},
    **{cls: MetadataDelta._partition_change for cls in (r.PartitionChangeRecordV0, r.PartitionChangeRecordV1,
                                                       r.PartitionChangeRecordV2)},
}  # fmt: skip


def image_from_records(
    records: Iterable[r.MetadataRecord], *, offset: int, epoch: int = -1, timestamp_ms: int = -1
) -> MetadataImage:
    """A fresh image from a full set of records (a snapshot): the "snapshot delta".

    Built aside from any current image, so the caller swaps it in whole; every section starts
    empty and is filled in place, so loading a large snapshot copies nothing.
    """
    delta = MetadataDelta(EMPTY_IMAGE)
    for record in records:
        delta.replay(record)
    return delta.apply(offset=offset, epoch=epoch, timestamp_ms=timestamp_ms)
