"""KRaft metadata records: Kafka 4.x's schemas as kio-style data classes, and their framing.

Every metadata record type of Kafka 4.0-4.2 (apiKeys 0-5, 7-12, 14, 15, 17-28), at every version
those releases read, plus UnregisterControllerRecord (29, KIP-1312). Classes of records with
several versions are named ``<Name>V<n>``; the unsuffixed name is the newest version::

    from ksteward.metadata.records import TopicRecord, decode_record, encode_record

    value = encode_record(TopicRecord(name="orders", topic_id=uuid.uuid4()))
    assert decode_record(value).name == "orders"

Not covered: RegisterBrokerRecord v4 and BrokerRegistrationChangeRecord v3 (cordoned log dirs,
Kafka 4.3); they decode as ``UnknownRecordTypeError``.
"""

from typing import TypeAlias

from ._cluster import (
    BrokerEndpoint,
    BrokerFeature,
    BrokerRegistrationChangeRecordV0,
    BrokerRegistrationChangeRecordV1,
    BrokerRegistrationChangeRecordV2,
    ControllerEndpoint,
    ControllerFeature,
    FeatureLevelRecord,
    FenceBrokerRecord,
    ProducerIdsRecord,
    RegisterBrokerRecordV0,
    RegisterBrokerRecordV1,
    RegisterBrokerRecordV2,
    RegisterBrokerRecordV3,
    RegisterControllerRecord,
    UnfenceBrokerRecord,
    UnregisterBrokerRecord,
    UnregisterControllerRecord,
)
from ._codec import (
    ALL_RECORD_CLASSES,
    FRAME_VERSION,
    LATEST_VERSIONS,
    RECORD_TYPES,
    CorruptRecordError,
    MetadataRecordType,
    UnknownRecordTypeError,
    decode_record,
    encode_record,
    read_entity_skipping_unknown_tags,
    read_frame,
)
from ._markers import (
    AbortTransactionRecord,
    BeginTransactionRecord,
    EndTransactionRecord,
    NoOpRecord,
    ZkMigrationStateRecord,
)
from ._security import (
    AccessControlEntryRecord,
    ClientQuotaRecord,
    DelegationTokenRecord,
    EntityData,
    RemoveAccessControlEntryRecord,
    RemoveDelegationTokenRecord,
    RemoveUserScramCredentialRecord,
    UserScramCredentialRecord,
)
from ._topics import (
    ClearElrRecord,
    ConfigRecord,
    PartitionChangeRecordV0,
    PartitionChangeRecordV1,
    PartitionChangeRecordV2,
    PartitionRecordV0,
    PartitionRecordV1,
    PartitionRecordV2,
    RemoveTopicRecord,
    TopicRecord,
)

RegisterBrokerRecord = RegisterBrokerRecordV3
PartitionRecord = PartitionRecordV2
PartitionChangeRecord = PartitionChangeRecordV2
BrokerRegistrationChangeRecord = BrokerRegistrationChangeRecordV2

AnyRegisterBrokerRecord: TypeAlias = (
    RegisterBrokerRecordV0 | RegisterBrokerRecordV1 | RegisterBrokerRecordV2 | RegisterBrokerRecordV3
)
AnyPartitionRecord: TypeAlias = PartitionRecordV0 | PartitionRecordV1 | PartitionRecordV2
AnyPartitionChangeRecord: TypeAlias = PartitionChangeRecordV0 | PartitionChangeRecordV1 | PartitionChangeRecordV2
AnyBrokerRegistrationChangeRecord: TypeAlias = (
    BrokerRegistrationChangeRecordV0 | BrokerRegistrationChangeRecordV1 | BrokerRegistrationChangeRecordV2
)

MetadataRecord: TypeAlias = (
    AnyRegisterBrokerRecord
    | UnregisterBrokerRecord
    | TopicRecord
    | AnyPartitionRecord
    | ConfigRecord
    | AnyPartitionChangeRecord
    | FenceBrokerRecord
    | UnfenceBrokerRecord
    | RemoveTopicRecord
    | DelegationTokenRecord
    | UserScramCredentialRecord
    | FeatureLevelRecord
    | ClientQuotaRecord
    | ProducerIdsRecord
    | AnyBrokerRegistrationChangeRecord
    | AccessControlEntryRecord
    | RemoveAccessControlEntryRecord
    | NoOpRecord
    | ZkMigrationStateRecord
    | RemoveUserScramCredentialRecord
    | BeginTransactionRecord
    | EndTransactionRecord
    | AbortTransactionRecord
    | RemoveDelegationTokenRecord
    | RegisterControllerRecord
    | ClearElrRecord
    | UnregisterControllerRecord
)
"""Any metadata record class in ``RECORD_TYPES``."""

__all__ = [
    "ALL_RECORD_CLASSES",
    "FRAME_VERSION",
    "LATEST_VERSIONS",
    "RECORD_TYPES",
    "AbortTransactionRecord",
    "AccessControlEntryRecord",
    "AnyBrokerRegistrationChangeRecord",
    "AnyPartitionChangeRecord",
    "AnyPartitionRecord",
    "AnyRegisterBrokerRecord",
    "BeginTransactionRecord",
    "BrokerEndpoint",
    "BrokerFeature",
    "BrokerRegistrationChangeRecord",
    "BrokerRegistrationChangeRecordV0",
    "BrokerRegistrationChangeRecordV1",
    "BrokerRegistrationChangeRecordV2",
    "ClearElrRecord",
    "ClientQuotaRecord",
    "ConfigRecord",
    "ControllerEndpoint",
    "ControllerFeature",
    "CorruptRecordError",
    "DelegationTokenRecord",
    "EndTransactionRecord",
    "EntityData",
    "FeatureLevelRecord",
    "FenceBrokerRecord",
    "MetadataRecord",
    "MetadataRecordType",
    "NoOpRecord",
    "PartitionChangeRecord",
    "PartitionChangeRecordV0",
    "PartitionChangeRecordV1",
    "PartitionChangeRecordV2",
    "PartitionRecord",
    "PartitionRecordV0",
    "PartitionRecordV1",
    "PartitionRecordV2",
    "ProducerIdsRecord",
    "RegisterBrokerRecord",
    "RegisterBrokerRecordV0",
    "RegisterBrokerRecordV1",
    "RegisterBrokerRecordV2",
    "RegisterBrokerRecordV3",
    "RegisterControllerRecord",
    "RemoveAccessControlEntryRecord",
    "RemoveDelegationTokenRecord",
    "RemoveTopicRecord",
    "RemoveUserScramCredentialRecord",
    "TopicRecord",
    "UnfenceBrokerRecord",
    "UnknownRecordTypeError",
    "UnregisterBrokerRecord",
    "UnregisterControllerRecord",
    "UserScramCredentialRecord",
    "ZkMigrationStateRecord",
    "decode_record",
    "encode_record",
    "read_entity_skipping_unknown_tags",
    "read_frame",
]
