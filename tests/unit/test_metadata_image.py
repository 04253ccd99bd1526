"""MetadataImage and MetadataDelta: replay rules, structural sharing, snapshot order; the loader."""

from __future__ import annotations

import dataclasses
import logging
import uuid
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kio.schema.leader_change_message.v0 import LeaderChangeMessage

from ksteward.authorizer import AclBindingFilter, PatternType, ResourceType
from ksteward.metadata import delta as delta_module
from ksteward.metadata.delta import MetadataDelta, MetadataReplayError, image_from_records
from ksteward.metadata.image import EMPTY_IMAGE, MetadataImage, PartitionRegistration, acl_binding_or_none
from ksteward.metadata.loader import MetadataLoadError, load
from ksteward.metadata.log import PARTITION_DIR_NAME, MetadataLog
from ksteward.metadata.records import (
    AbortTransactionRecord,
    AccessControlEntryRecord,
    BeginTransactionRecord,
    BrokerEndpoint,
    BrokerRegistrationChangeRecordV1,
    ClearElrRecord,
    ClientQuotaRecord,
    ConfigRecord,
    DelegationTokenRecord,
    EndTransactionRecord,
    EntityData,
    FeatureLevelRecord,
    FenceBrokerRecord,
    MetadataRecordType,
    NoOpRecord,
    PartitionChangeRecordV0,
    PartitionChangeRecordV2,
    PartitionRecordV0,
    PartitionRecordV1,
    PartitionRecordV2,
    ProducerIdsRecord,
    RegisterBrokerRecordV0,
    RegisterControllerRecord,
    RemoveAccessControlEntryRecord,
    RemoveDelegationTokenRecord,
    RemoveTopicRecord,
    RemoveUserScramCredentialRecord,
    TopicRecord,
    UnfenceBrokerRecord,
    UnregisterBrokerRecord,
    UserScramCredentialRecord,
    decode_record,
    encode_record,
)
from ksteward.metadata.records.control import encode_control_record
from ksteward.metadata.records.kafka_json import kafka_uuid

LOGGER = logging.getLogger("test.metadata.image")
T1, T2 = uuid.UUID(int=101), uuid.UUID(int=102)


def apply(image: MetadataImage, *records: Any, offset: int | None = None) -> MetadataImage:
    delta = MetadataDelta(image)
    for record in records:
        delta.replay(record)
    return delta.apply(offset=image.offset + len(records) if offset is None else offset)


def topic(name: str, topic_id: uuid.UUID, partitions: int = 1) -> list[Any]:
    return [TopicRecord(name=name, topic_id=topic_id)] + [
        PartitionRecordV0(partition_id=p, topic_id=topic_id, replicas=(1, 2), isr=(1, 2), leader=1,
                          leader_epoch=0, partition_epoch=0)
        for p in range(partitions)
    ]  # fmt: skip


def acl(n: int) -> AccessControlEntryRecord:
    return AccessControlEntryRecord(
        id=uuid.UUID(int=1000 + n), resource_type=2, resource_name=f"t{n}", pattern_type=3,
        principal="User:alice", host="*", operation=3, permission_type=3,
    )  # fmt: skip


def config(name: str, key: str, value: str | None, resource_type: int = 2) -> ConfigRecord:
    return ConfigRecord(resource_type=resource_type, resource_name=name, name=key, value=value)


def broker(broker_id: int) -> RegisterBrokerRecordV0:
    endpoint = BrokerEndpoint(name="PLAINTEXT", host="h", port=9092, security_protocol=0)
    return RegisterBrokerRecordV0(broker_id=broker_id, incarnation_id=uuid.uuid4(), broker_epoch=10,
                                  end_points=(endpoint,), features=(), rack="r1", fenced=True)  # fmt: skip


# --- replay rules ---------------------------------------------------------------------------------


def test_config_null_value_deletes_and_empty_resource_is_dropped() -> None:
    image = apply(EMPTY_IMAGE, config("t", "a", "1"), config("t", "b", "2"))
    assert dict(image.configs[(2, "t")]) == {"a": "1", "b": "2"}
    image = apply(image, config("t", "a", None), config("t", "zzz", None))
    assert dict(image.configs[(2, "t")]) == {"b": "2"}
    image = apply(image, config("t", "b", None))
    assert (2, "t") not in image.configs


def test_remove_topic_drops_partitions_and_topic_configs() -> None:
    image = apply(EMPTY_IMAGE, *topic("a", T1, 3), *topic("b", T2), config("a", "retention.ms", "1"),
                  config("b", "retention.ms", "2"), config("a", "x", "y", resource_type=4))  # fmt: skip
    image = apply(image, RemoveTopicRecord(topic_id=T1))
    assert set(image.topics.by_name) == {"b"} and set(image.topics.by_id) == {T2}
    assert (2, "a") not in image.configs and (2, "b") in image.configs and (4, "a") in image.configs
    # The name is free again, with a new id.
    image = apply(image, *topic("a", uuid.UUID(int=7)))
    assert image.topics.by_name["a"].id == uuid.UUID(int=7)


def test_topic_replay_errors() -> None:
    image = apply(EMPTY_IMAGE, *topic("a", T1))
    with pytest.raises(MetadataReplayError, match="existing topic name"):
        apply(image, TopicRecord(name="a", topic_id=T2))
    with pytest.raises(MetadataReplayError, match="existing topic id"):
        apply(image, TopicRecord(name="b", topic_id=T1))
    with pytest.raises(MetadataReplayError, match="unknown topic id"):
        apply(image, PartitionRecordV0(partition_id=0, topic_id=T2, leader_epoch=0, partition_epoch=0))
    with pytest.raises(MetadataReplayError, match="unknown topic id"):
        apply(image, RemoveTopicRecord(topic_id=T2))
    with pytest.raises(MetadataReplayError, match="unknown partition"):
        apply(image, PartitionChangeRecordV0(partition_id=5, topic_id=T1, leader=2))
    # Within one delta, a topic created by an earlier record is known.
    image = apply(image, *topic("c", T2, 2), PartitionChangeRecordV0(partition_id=1, topic_id=T2, leader=2))
    assert image.topics.by_id[T2].partitions[1].leader == 2


def test_partition_change_merge() -> None:
    image = apply(EMPTY_IMAGE, *topic("a", T1))
    before = image.topics.by_id[T1].partitions[0]
    image = apply(image, PartitionChangeRecordV0(partition_id=0, topic_id=T1, isr=(1,)))
    p = image.topics.by_id[T1].partitions[0]
    assert (p.isr, p.leader, p.leader_epoch, p.partition_epoch) == ((1,), 1, 0, 1)
    image = apply(image, PartitionChangeRecordV2(partition_id=0, topic_id=T1, leader=-1, leader_recovery_state=1,
                                                 eligible_leader_replicas=(2,), directories=(T2, None)))  # fmt: skip
    p = image.topics.by_id[T1].partitions[0]
    assert (p.leader, p.leader_epoch, p.partition_epoch, p.leader_recovery_state) == (-1, 1, 2, 1)
    assert (p.isr, p.replicas, p.elr, p.directories) == ((1,), before.replicas, (2,), (T2, None))
    image = apply(image, ClearElrRecord(topic_name=""))
    p = image.topics.by_id[T1].partitions[0]
    assert (p.elr, p.last_known_elr, p.partition_epoch) == ((), (), 3)
    with pytest.raises(MetadataReplayError):
        apply(image, ClearElrRecord(topic_name="nope"))


def test_acl_rules() -> None:
    image = apply(EMPTY_IMAGE, acl(1), acl(2))
    assert image.acls[acl(1).id] == acl(1)
    image = apply(image, RemoveAccessControlEntryRecord(id=acl(1).id))
    assert set(image.acls) == {acl(2).id}
    with pytest.raises(MetadataReplayError, match="unknown ACL id"):
        apply(image, RemoveAccessControlEntryRecord(id=acl(1).id))
    with pytest.raises(MetadataReplayError, match="existing ACL id"):
        apply(image, acl(2))
    # An add and a remove within one delta cancel out.
    image = apply(image, acl(3), RemoveAccessControlEntryRecord(id=acl(3).id))
    assert set(image.acls) == {acl(2).id}


def test_quota_scram_token_feature_producer_id_rules() -> None:
    entity = (
        EntityData(entity_type="user", entity_name="alice"),
        EntityData(entity_type="client-id", entity_name=None),
    )
    scram = UserScramCredentialRecord(name="alice", mechanism=1, salt=b"s", stored_key=b"k", server_key=b"v",
                                      iterations=4096)  # fmt: skip
    token = DelegationTokenRecord(owner="User:a", requester="User:a", renewers=(), issue_timestamp=1,
                                  max_timestamp=2, expiration_timestamp=3, token_id="tok")  # fmt: skip
    image = apply(
        EMPTY_IMAGE,
        ClientQuotaRecord(entity=entity, key="producer_byte_rate", value=100.0),
        ClientQuotaRecord(entity=tuple(reversed(entity)), key="consumer_byte_rate", value=5.0),
        scram, token, FeatureLevelRecord(name="metadata.version", feature_level=27),
        FeatureLevelRecord(name="kraft.version", feature_level=1),
        ProducerIdsRecord(broker_id=1, next_producer_id=2000),
    )  # fmt: skip
    key = (("client-id", None), ("user", "alice"))
    assert dict(image.client_quotas[key]) == {"producer_byte_rate": 100.0, "consumer_byte_rate": 5.0}
    assert image.scram[(1, "alice")] == scram and image.delegation_tokens["tok"] == token
    assert dict(image.features) == {"metadata.version": 27, "kraft.version": 1} and image.producer_ids == 2000
    image = apply(
        image,
        ClientQuotaRecord(entity=entity, key="producer_byte_rate", value=0.0, remove=True),
        ClientQuotaRecord(entity=entity, key="consumer_byte_rate", value=0.0, remove=True),
        RemoveUserScramCredentialRecord(name="alice", mechanism=1), RemoveDelegationTokenRecord(token_id="tok"),
        FeatureLevelRecord(name="kraft.version", feature_level=0),
    )  # fmt: skip
    assert key not in image.client_quotas and not image.scram and not image.delegation_tokens
    assert dict(image.features) == {"metadata.version": 27}


def test_cluster_rules() -> None:
    image = apply(EMPTY_IMAGE, broker(1), broker(2), RegisterControllerRecord(controller_id=9, incarnation_id=None))
    assert image.cluster[1].fenced and image.cluster[1].rack == "r1" and image.cluster[1].__version__ == 3
    image = apply(image, UnfenceBrokerRecord(id=1, epoch=10), BrokerRegistrationChangeRecordV1(
        broker_id=2, broker_epoch=10, fenced=-1, in_controlled_shutdown=1))  # fmt: skip
    assert not image.cluster[1].fenced and not image.cluster[2].fenced and image.cluster[2].in_controlled_shutdown
    image = apply(image, FenceBrokerRecord(id=1, epoch=10), UnregisterBrokerRecord(broker_id=2, broker_epoch=10))
    assert image.cluster[1].fenced and set(image.cluster) == {1} and set(image.controllers) == {9}
    with pytest.raises(MetadataReplayError):
        apply(image, FenceBrokerRecord(id=5, epoch=1))
    with pytest.raises(MetadataReplayError):
        apply(image, BrokerRegistrationChangeRecordV1(broker_id=1, broker_epoch=10, fenced=3))


def test_markers_change_nothing_but_the_offset() -> None:
    image = apply(EMPTY_IMAGE, NoOpRecord(), BeginTransactionRecord(name="x"), EndTransactionRecord(),
                  AbortTransactionRecord(), offset=3)  # fmt: skip
    assert image == dataclasses.replace(EMPTY_IMAGE, offset=3)


def test_delta_is_single_use_and_rejects_non_records() -> None:
    delta = MetadataDelta(EMPTY_IMAGE)
    with pytest.raises(TypeError):
        delta.replay("not a record")  # type: ignore[arg-type]
    delta.apply(offset=0)
    with pytest.raises(RuntimeError):
        delta.replay(NoOpRecord())


# --- structural sharing ---------------------------------------------------------------------------


def test_untouched_sections_are_shared_and_base_is_unchanged() -> None:
    base = apply(EMPTY_IMAGE, *topic("a", T1, 2), *topic("b", T2, 2), acl(1), config("a", "k", "v"),
                 FeatureLevelRecord(name="metadata.version", feature_level=27))  # fmt: skip
    snapshot_of_base = image_from_records(base.records(), offset=base.offset)
    nxt = apply(base, PartitionChangeRecordV0(partition_id=0, topic_id=T1, isr=(2,)))
    assert nxt.acls is base.acls and nxt.configs is base.configs and nxt.features is base.features
    assert nxt.topics.by_id[T2] is base.topics.by_id[T2]  # the untouched topic is the same object
    assert nxt.topics.by_id[T1].partitions[1] is base.topics.by_id[T1].partitions[1]
    assert nxt.topics.by_id[T1].partitions[0].isr == (2,)
    assert base == snapshot_of_base  # the base image did not change
    assert base.topics.by_id[T1].partitions[0].isr == (1, 2)


def test_sections_are_copied_once_per_delta(monkeypatch: pytest.MonkeyPatch) -> None:
    base = apply(EMPTY_IMAGE, *(acl(n) for n in range(50)), *topic("a", T1, 5))
    copies: list[int] = []
    real_copy = delta_module._copy

    def counting_copy(mapping: Any) -> dict[Any, Any]:
        copies.append(len(mapping))
        return real_copy(mapping)

    monkeypatch.setattr(delta_module, "_copy", counting_copy)
    delta = MetadataDelta(base)
    for n in range(50, 150):
        delta.replay(acl(n))
    for p in range(5):
        delta.replay(PartitionChangeRecordV0(partition_id=p, topic_id=T1, isr=(1,)))
    image = delta.apply(offset=500)
    assert len(image.acls) == 150 and len(base.acls) == 50  # the base image is untouched
    # The ACL section is a persistent map, never copied; topics by id and by name once each, topic a's partitions
    # once.
    assert sorted(copies) == sorted([1, 1, 5])


def test_image_sections_are_read_only() -> None:
    image = apply(EMPTY_IMAGE, acl(1), *topic("a", T1))
    with pytest.raises(TypeError):
        image.acls[acl(2).id] = acl(2)  # type: ignore[index]
    with pytest.raises(TypeError):
        image.topics.by_id[T1].partitions[9] = image.topics.by_id[T1].partitions[0]  # type: ignore[index]


# --- records(): order and round trip --------------------------------------------------------------


def test_records_follow_kafka_snapshot_order() -> None:
    image = apply(
        EMPTY_IMAGE, acl(1), config("a", "k", "v"), *topic("b", T2, 2), *topic("a", T1, 1),
        FeatureLevelRecord(name="kraft.version", feature_level=1), ProducerIdsRecord(broker_id=1, next_producer_id=5),
        FeatureLevelRecord(name="metadata.version", feature_level=27), broker(1),
        RegisterControllerRecord(controller_id=9, incarnation_id=None),
        UserScramCredentialRecord(name="u", mechanism=2, salt=b"", stored_key=b"", server_key=b"", iterations=1),
        ClientQuotaRecord(entity=(EntityData(entity_type="user", entity_name=None),), key="q", value=1.0),
    )  # fmt: skip
    names = [MetadataRecordType(int(r.__api_key__)).name for r in image.records()]
    assert names == [
        "FEATURE_LEVEL_RECORD", "FEATURE_LEVEL_RECORD", "REGISTER_BROKER_RECORD", "REGISTER_CONTROLLER_RECORD",
        "TOPIC_RECORD", "PARTITION_RECORD", "TOPIC_RECORD", "PARTITION_RECORD", "PARTITION_RECORD",
        "CONFIG_RECORD", "CLIENT_QUOTA_RECORD", "PRODUCER_IDS_RECORD", "ACCESS_CONTROL_ENTRY_RECORD",
        "USER_SCRAM_CREDENTIAL_RECORD",
    ]  # fmt: skip
    first = next(iter(image.records()))
    assert isinstance(first, FeatureLevelRecord) and first.name == "metadata.version"


def test_partition_record_version_fits_the_state() -> None:
    plain = PartitionRegistration((1,), (1,), (), (), 1, 0, 0, 0)
    assert isinstance(plain.to_record(T1, 0), PartitionRecordV0)
    assert isinstance(plain._replace(directories=(T2,)).to_record(T1, 0), PartitionRecordV1)
    assert isinstance(plain._replace(elr=(1,)).to_record(T1, 0), PartitionRecordV2)


OPERATIONS = st.lists(
    st.tuples(st.sampled_from(["topic", "change", "remove", "config", "acl", "unacl", "quota", "scram", "feature"]),
              st.integers(0, 5), st.integers(0, 3)),
    max_size=60,
)  # fmt: skip


@settings(max_examples=60, deadline=None)
@given(OPERATIONS)
def test_snapshot_round_trip(operations: list[tuple[str, int, int]]) -> None:
    """Random valid histories: records() -> bytes -> image_from_records gives back the image."""
    image = EMPTY_IMAGE
    for kind, a, b in operations:
        name, tid = f"t{a}", uuid.UUID(int=500 + a)
        exists = name in image.topics.by_name
        records: list[Any] = []
        if kind == "topic" and not exists and tid not in image.topics.by_id:
            records = topic(name, tid, b + 1)
        elif kind == "change" and exists and b in image.topics.by_name[name].partitions:
            records = [PartitionChangeRecordV2(partition_id=b, topic_id=image.topics.by_name[name].id, leader=a,
                                               last_known_elr=(a,) if b % 2 else None)]  # fmt: skip
        elif kind == "remove" and exists:
            records = [RemoveTopicRecord(topic_id=image.topics.by_name[name].id)]
        elif kind == "config":
            records = [config(name, f"k{b}", None if b == 3 else f"v{a}")]
        elif kind == "acl" and acl(a).id not in image.acls:
            records = [acl(a)]
        elif kind == "unacl" and acl(a).id in image.acls:
            records = [RemoveAccessControlEntryRecord(id=acl(a).id)]
        elif kind == "quota":
            entity = (EntityData(entity_type="user", entity_name=None if a == 0 else name),)
            records = [ClientQuotaRecord(entity=entity, key=f"q{b}", value=float(a), remove=b == 3)]
        elif kind == "scram":
            records = [UserScramCredentialRecord(name=name, mechanism=1 + b % 2, salt=b"s", stored_key=b"k",
                                                 server_key=b"v", iterations=4096 + a)]  # fmt: skip
        elif kind == "feature":
            records = [FeatureLevelRecord(name=["metadata.version", "kraft.version"][b % 2], feature_level=a)]
        if records:
            image = apply(image, *records)
    rebuilt = image_from_records(
        (decode_record(encode_record(r)) for r in image.records()), offset=image.offset, epoch=image.epoch,
        timestamp_ms=image.timestamp_ms,
    )  # fmt: skip
    assert rebuilt == image


# --- loader -------------------------------------------------------------------------------------


def write_history(root: Path, batches: list[list[Any]], *, epoch: int = 1) -> MetadataImage:
    """Append each list of records as one batch; return the image of the whole history."""
    image = EMPTY_IMAGE
    with MetadataLog.open(root, segment_bytes=500) as log:
        for records in batches:
            _, last = log.append([encode_record(r) for r in records], timestamp_ms=last_ts(log), leader_epoch=epoch)
            image = apply(image, *records, offset=last)
    return dataclasses.replace(image, epoch=epoch)


def last_ts(log: MetadataLog) -> int:
    return 1000 + log.next_offset


def snapshot(root: Path, image: MetadataImage) -> Path:
    with MetadataLog.open(root, segment_bytes=500) as log:
        return log.write_snapshot(image.offset + 1, image.epoch, (encode_record(r) for r in image.records()),
                                  last_contained_timestamp_ms=0)  # fmt: skip


HISTORY = [
    [FeatureLevelRecord(name="metadata.version", feature_level=27)],
    topic("a", T1, 3),
    [acl(1), acl(2)],
    [config("a", "retention.ms", "100")],
    [RemoveAccessControlEntryRecord(id=acl(1).id), acl(3)],
    topic("b", T2, 2),
    [PartitionChangeRecordV0(partition_id=1, topic_id=T2, leader=2)],
]


def comparable(image: MetadataImage) -> MetadataImage:
    return dataclasses.replace(image, timestamp_ms=-1)


def test_load_snapshot_then_log(tmp_path: Path) -> None:
    middle = write_history(tmp_path, HISTORY[:4])
    snapshot(tmp_path, middle)
    full = write_history_more(tmp_path, middle, HISTORY[4:])
    image, log = load(tmp_path, LOGGER)
    log.close()
    assert comparable(image) == comparable(full)
    assert image.offset == full.offset


def write_history_more(root: Path, image: MetadataImage, batches: list[list[Any]]) -> MetadataImage:
    with MetadataLog.open(root, segment_bytes=500) as log:
        for records in batches:
            _, last = log.append([encode_record(r) for r in records], timestamp_ms=last_ts(log), leader_epoch=1)
            image = apply(image, *records, offset=last)
    return image


def test_corrupt_newest_snapshot_falls_back(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    first = write_history(tmp_path, HISTORY[:2])
    snapshot(tmp_path, first)
    second = write_history_more(tmp_path, first, HISTORY[2:5])
    newest = snapshot(tmp_path, second)
    full = write_history_more(tmp_path, second, HISTORY[5:])
    data = bytearray(newest.read_bytes())
    data[len(data) // 2] ^= 0x10
    newest.write_bytes(bytes(data))
    with caplog.at_level(logging.WARNING):
        image, log = load(tmp_path, LOGGER)
    log.close()
    assert comparable(image) == comparable(full)
    assert newest.name in caplog.text and "skipping metadata snapshot" in caplog.text
    # Both snapshots bad: the log from offset 0 still has everything.
    for snap in (tmp_path / PARTITION_DIR_NAME).glob("*.checkpoint"):
        snap.write_bytes(b"garbage")
    image, log = load(tmp_path, LOGGER)
    log.close()
    assert comparable(image) == comparable(full)


def test_no_usable_snapshot_and_no_log_start_fails(tmp_path: Path) -> None:
    image = write_history(tmp_path, HISTORY)
    snapshot(tmp_path, image)
    write_history_more(tmp_path, image, [[acl(9)], [NoOpRecord()] * 20])  # rolls past the snapshot
    with MetadataLog.open(tmp_path, segment_bytes=500) as log:
        assert log.delete_segments_before(10**9) > 0
    for snap in (tmp_path / PARTITION_DIR_NAME).glob("*.checkpoint"):
        snap.write_bytes(b"garbage")
    with pytest.raises(MetadataLoadError, match="no usable snapshot"):
        load(tmp_path, LOGGER)


def test_transactions_control_batches_and_unknown_records(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    with MetadataLog.open(tmp_path) as log:

        def add(*records: Any) -> None:
            log.append([encode_record(r) for r in records], timestamp_ms=0, leader_epoch=1)

        key, value = encode_control_record(LeaderChangeMessage(version=0, leader_id=1, voters=(), granting_voters=()))
        log.append([value], keys=[key], timestamp_ms=0, leader_epoch=1, control=True)  # offset 0
        add(acl(1), BeginTransactionRecord(name="big"), acl(2))  # offsets 1-3
        add(acl(3), EndTransactionRecord())
        add(BeginTransactionRecord(), acl(4))
        add(AbortTransactionRecord(reason="no"))
        log.append([b"\x01\x1e\x00\x00"], timestamp_ms=0, leader_epoch=1)  # apiKey 30: unknown
        add(acl(5), BeginTransactionRecord(), acl(6))  # 10-12, the transaction never ends
    with pytest.raises(MetadataLoadError, match="apiKey 30"):
        load(tmp_path, LOGGER)
    with caplog.at_level(logging.WARNING):
        image, log = load(tmp_path, LOGGER, skip_undecodable=True)
    log.close()
    assert set(image.acls) == {acl(n).id for n in (1, 2, 3, 5)}
    assert image.offset == 10  # acl(5); the transaction still open from offset 11 is left out
    assert "apiKey 30" in caplog.text


def test_read_only_load_leaves_the_directory_alone(tmp_path: Path) -> None:
    image = write_history(tmp_path, HISTORY)
    pdir = tmp_path / PARTITION_DIR_NAME
    last = sorted(pdir.glob("*.log"))[-1]
    with open(last, "ab") as f:
        f.write(b"\x00\x00\x00")
    (pdir / "00000000000000000001-0000000001.checkpoint.part").write_bytes(b"x")
    before = {p.name: p.read_bytes() for p in pdir.iterdir()}
    loaded, log = load(tmp_path, LOGGER, read_only=True)
    log.close()
    assert comparable(loaded) == comparable(image)
    assert {p.name: p.read_bytes() for p in pdir.iterdir()} == before
    assert kafka_uuid(T1) in {kafka_uuid(t.id) for t in loaded.topics.by_id.values()}


def test_undecodable_record_fails_strict_load_only(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    with MetadataLog.open(tmp_path) as log:
        log.append([encode_record(acl(1)), b"\x01\x12\x00\x05"], timestamp_ms=0)  # a cut-off ACL record
        log.append([encode_record(acl(2))], timestamp_ms=0)
    with pytest.raises(MetadataLoadError, match="offset 1"):
        load(tmp_path, LOGGER)
    with caplog.at_level(logging.WARNING):
        image, log = load(tmp_path, LOGGER, skip_undecodable=True)
    log.close()
    assert set(image.acls) == {acl(1).id, acl(2).id} and image.offset == 2
    assert "skipping undecodable record at offset 1" in caplog.text


def test_log_replay_copies_each_section_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """300 one-record batches must not copy the ACL map 300 times (quadratic in the log length)."""
    with MetadataLog.open(tmp_path) as log:
        for n in range(300):
            log.append([encode_record(acl(n))], timestamp_ms=n)
    copies: list[int] = []
    real_copy = delta_module._copy
    monkeypatch.setattr(delta_module, "_copy", lambda mapping: copies.append(len(mapping)) or real_copy(mapping))
    image, log = load(tmp_path, LOGGER)
    log.close()
    assert len(image.acls) == 300 and image.offset == 299 and image.timestamp_ms == 299
    assert copies == []  # the ACL records and their 7-tuple index are persistent maps: never copied


def test_topic_removed_and_recreated_within_one_delta() -> None:
    part = PartitionRecordV0(partition_id=7, topic_id=T1, replicas=(3,), isr=(3,), leader=3, leader_epoch=0,
                             partition_epoch=0)  # fmt: skip
    image = apply(EMPTY_IMAGE, *topic("a", T1, 2), RemoveTopicRecord(topic_id=T1), TopicRecord(name="b", topic_id=T1),
                  part)  # fmt: skip
    assert set(image.topics.by_name) == {"b"}
    assert dict(image.topics.by_id[T1].partitions) == {7: PartitionRegistration.from_record(part)}
    with pytest.raises(MetadataReplayError, match="unknown topic id"):
        apply(image, RemoveTopicRecord(topic_id=T1), part)


# --- the ACL section's by-name groups -------------------------------------------------------------------

ACL_NAMES = ["t", "t1", "t12", "*", "u", ""]


def named_acl(n: int, resource_type: int, name: str, pattern: int) -> AccessControlEntryRecord:
    return AccessControlEntryRecord(
        id=uuid.UUID(int=5000 + n), resource_type=resource_type, resource_name=name, pattern_type=pattern,
        principal=f"User:p{n % 3}", host="*", operation=3 + n % 2, permission_type=3,
    )  # fmt: skip


ACL_STEPS = st.lists(
    st.tuples(st.integers(0, 30), st.sampled_from([2, 3]), st.sampled_from(ACL_NAMES), st.sampled_from([3, 4])),
    max_size=50,
)
ACL_FILTERS = st.builds(
    AclBindingFilter,
    resource_type=st.sampled_from([ResourceType.ANY, ResourceType.TOPIC, ResourceType.GROUP]),
    resource_name=st.none() | st.sampled_from([*ACL_NAMES, "t123", "x"]),
    pattern_type=st.sampled_from([PatternType.ANY, PatternType.MATCH, PatternType.LITERAL, PatternType.PREFIXED]),
    principal=st.none() | st.sampled_from(["User:p0", "User:p1"]),
)


@settings(max_examples=150, deadline=None)
@given(steps=ACL_STEPS, filters=st.lists(ACL_FILTERS, min_size=1, max_size=4))
def test_acl_filters_read_the_by_name_groups_as_a_scan_would(
    steps: list[tuple[int, int, str, int]], filters: list[AclBindingFilter]
) -> None:
    """Each step adds an ACL or, if its id is stored, removes it; after each, every filter's answer from the
    by-name groups is the scan's, and the groups hold exactly the ACLs of ``by_binding``."""
    image = EMPTY_IMAGE
    for n, resource_type, name, pattern in steps:
        record = named_acl(n, resource_type, name, pattern)
        if record.id in image.acls:
            image = apply(image, RemoveAccessControlEntryRecord(id=record.id))
        elif acl_binding_or_none(record) not in image.acls.by_binding:
            image = apply(image, record)
        acls = image.acls
        for acl_filter in filters:
            scanned = sorted((repr(b), i) for b, i in acls.by_binding.items() if acl_filter.matches(b))
            assert sorted((repr(b), i) for b, i in acls.matching(acl_filter)) == scanned
        grouped = {b: i for group in acls.by_name.values() for b, i in group.items()}
        assert grouped == dict(acls.by_binding)
        assert all(len(group) for group in acls.by_name.values())
