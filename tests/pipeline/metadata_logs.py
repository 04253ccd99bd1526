"""Metadata logs for the pipeline tests, written with ksteward's own ``MetadataLog`` and record classes."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

from ksteward.metadata.log import MetadataLog
from ksteward.metadata.records import (
    AbortTransactionRecord,
    AccessControlEntryRecord,
    BeginTransactionRecord,
    ClientQuotaRecord,
    ConfigRecord,
    EndTransactionRecord,
    EntityData,
    PartitionChangeRecord,
    PartitionRecord,
    RemoveAccessControlEntryRecord,
    RemoveTopicRecord,
    TopicRecord,
    UserScramCredentialRecord,
    encode_record,
)

ORDERS, PAYMENTS, AUDIT = uuid.UUID(int=0x0A), uuid.UUID(int=0x0B), uuid.UUID(int=0x0C)
ACL_READ, ACL_WRITE, ACL_DENY = uuid.UUID(int=0xA1), uuid.UUID(int=0xA2), uuid.UUID(int=0xA3)
SECRET = "hunter2-secret"
SALT = b"pepper-salt-123"


def acl(acl_id: uuid.UUID, name: str, principal: str, operation: int, permission: int = 3, pattern: int = 3) -> Any:
    return AccessControlEntryRecord(
        id=acl_id, resource_type=2, resource_name=name, pattern_type=pattern, principal=principal, host="*",
        operation=operation, permission_type=permission,
    )  # fmt: skip


def partition(topic: uuid.UUID, pid: int, replicas: tuple[int, ...]) -> Any:
    return PartitionRecord(partition_id=pid, topic_id=topic, replicas=replicas, isr=replicas, leader=replicas[0],
                           leader_epoch=0, partition_epoch=0)  # fmt: skip


def quota(user: str | None, key: str, value: float, remove: bool = False) -> Any:
    return ClientQuotaRecord(entity=(EntityData(entity_type="user", entity_name=user),), key=key, value=value,
                             remove=remove)  # fmt: skip


# fmt: off
# Each batch: (timestamp_ms, records). Offsets are assigned in order from 0.
HISTORY: list[tuple[int, list[Any]]] = [
    (1_000, [TopicRecord(name="orders", topic_id=ORDERS), partition(ORDERS, 0, (1,)), partition(ORDERS, 1, (1,))]),
    (2_000, [acl(ACL_READ, "orders", "User:alice", 3), acl(ACL_WRITE, "orders", "User:bob", 4)]),  # 3, 4
    (3_000, [ConfigRecord(resource_type=2, resource_name="orders", name="retention.ms", value="1000"),  # 5
             ConfigRecord(resource_type=4, resource_name="", name="ssl.keystore.password", value=SECRET)]),  # 6
    (4_000, [quota("alice", "producer_byte_rate", 1024.0), quota(None, "producer_byte_rate", 512.0)]),  # 7, 8
    (5_000, [UserScramCredentialRecord(name="alice", mechanism=2, salt=SALT, stored_key=b"sk", server_key=b"vk",
                                       iterations=4096)]),  # 9
    # offset 10-13: a second topic with a config, then an ACL removed
    (6_000, [TopicRecord(name="payments", topic_id=PAYMENTS), partition(PAYMENTS, 0, (1, 2, 3)),  # 10, 11
             ConfigRecord(resource_type=2, resource_name="payments", name="cleanup.policy", value="compact")]),  # 12
    (7_000, [RemoveAccessControlEntryRecord(id=ACL_WRITE)]),  # 13
    (8_000, [RemoveTopicRecord(topic_id=PAYMENTS), quota("alice", "producer_byte_rate", 0.0, remove=True)]),  # 14,15
    (9_000, [ConfigRecord(resource_type=2, resource_name="orders", name="retention.ms", value="2000"),  # 16
             PartitionChangeRecord(partition_id=0, topic_id=ORDERS, replicas=(1, 2))]),  # 17
    # an aborted transaction (18-20) and a committed one (21-23)
    (10_000, [BeginTransactionRecord(name="t1"), acl(uuid.UUID(int=0xB1), "x", "User:aborted", 3),
              AbortTransactionRecord(reason="no")]),
    (11_000, [BeginTransactionRecord(name="t2"), acl(ACL_DENY, "orders", "User:eve", 3, permission=2),
              EndTransactionRecord()]),
]
# fmt: on


def write_history(data_dir: Path, batches: list[tuple[int, list[Any]]] = HISTORY) -> None:
    with MetadataLog.open(data_dir) as log:
        for timestamp, records in batches:
            log.append([encode_record(r) for r in records], timestamp_ms=timestamp)
