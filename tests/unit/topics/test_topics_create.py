"""CreateTopics on the controller (docs/topics-and-configs.md): checks in Kafka's order, codes and messages, records,
policies."""

from __future__ import annotations

import uuid

import pytest
from kio.schema.create_topics.v7.request import CreatableReplicaAssignment, CreatableTopic, CreatableTopicConfig
from kio.schema.errors import ErrorCode
from kio.schema.types import BrokerId, TopicName
from kio.static.primitive import i16, i32
from topic_support import (
    RecordingAlterPolicy,
    RecordingCreatePolicy,
    apply,
    broker,
    cluster,
    manager,
    with_topic,
)

from ksteward.controller.topics import (
    ApiError,
    CreatedTopicConfig,
    NewTopic,
    TopicSettings,
)
from ksteward.metadata.records import (
    ConfigRecord,
    PartitionRecordV0,
    PartitionRecordV1,
    PartitionRecordV2,
    TopicRecord,
    decode_record,
    encode_record,
)
from ksteward.policy import ConfigResource, ConfigResourceType, Policies


def one(result, name=None):  # type: ignore[no-untyped-def]
    matches = [r for r in result.response if name is None or r.name == name]
    assert len(matches) == 1, result.response
    return matches[0]


def error_of(result, name=None):  # type: ignore[no-untyped-def]
    r = one(result, name)
    return r.error.code, r.error.message


# ---------------------------------------------------------------- success and records


def test_created_topic_records_in_kafka_order() -> None:
    image = cluster()
    done = manager().create_topics(image, [NewTopic("orders", 3, 2, configs=(("cleanup.policy", "compact"),))])
    result = one(done)
    assert result.error == ApiError(ErrorCode.none)
    assert [type(r) for r in done.records] == [TopicRecord, ConfigRecord] + [PartitionRecordV2] * 3
    topic_record, config_record, *partitions = done.records
    assert topic_record.name == "orders" and topic_record.topic_id == result.topic_id
    assert (config_record.resource_type, config_record.resource_name) == (2, "orders")
    assert (config_record.name, config_record.value) == ("cleanup.policy", "compact")
    for index, p in enumerate(partitions):
        assert p.partition_id == index and p.topic_id == result.topic_id
        assert len(p.replicas) == 2 and len(set(p.replicas)) == 2 and set(p.replicas) <= {1, 2, 3}
        assert p.isr == p.replicas and p.leader == p.replicas[0]
        assert (p.leader_epoch, p.partition_epoch, p.leader_recovery_state) == (0, 0, 0)
        assert p.eligible_leader_replicas is None and p.last_known_elr is None
        assert p.directories == (None, None)  # brokers without log dirs: DirectoryId.MIGRATING
    assert (result.num_partitions, result.replication_factor) == (3, 2)
    assert result.topic_config_error_code == ErrorCode.none


def test_records_encode_and_replay() -> None:
    image = cluster()
    done = manager().create_topics(image, [NewTopic("orders", 2, 3, configs=(("retention.ms", "1000"),))])
    for record in done.records:
        assert decode_record(encode_record(record)) == record
    after = apply(image, done.records)
    topic = after.topics.by_name["orders"]
    assert topic.id == one(done).topic_id and sorted(topic.partitions) == [0, 1]
    assert after.configs[(2, "orders")] == {"retention.ms": "1000"}


def test_leaders_stripe_across_brokers() -> None:
    done = manager().create_topics(cluster(), [NewTopic("t", 3, 1)])
    assert sorted(p.leader for p in done.records[1:]) == [1, 2, 3]


@pytest.mark.parametrize(
    ("level", "record_class", "directories"),
    [(7, PartitionRecordV0, None), (17, PartitionRecordV1, (None,)), (22, PartitionRecordV1, (None,)),
     (23, PartitionRecordV2, (None,)), (25, PartitionRecordV2, (None,))],
)  # fmt: skip
def test_partition_record_version_follows_metadata_version(level, record_class, directories) -> None:  # type: ignore[no-untyped-def]
    done = manager().create_topics(cluster(broker(1), level=level), [NewTopic("t", 1, 1)])
    partition = done.records[-1]
    assert type(partition) is record_class
    assert getattr(partition, "directories", None) == directories


@pytest.mark.parametrize(
    ("log_dirs", "expected"),
    [((), None), ((uuid.UUID(int=77),), uuid.UUID(int=77)), ((uuid.UUID(int=77), uuid.UUID(int=78)), uuid.UUID(int=1))],
)
def test_directories_are_each_brokers_default_dir(log_dirs, expected) -> None:  # type: ignore[no-untyped-def]
    done = manager().create_topics(cluster(broker(1, log_dirs=log_dirs)), [NewTopic("t", 1, 1)])
    assert done.records[-1].directories == (expected,)


def test_defaults_replace_minus_one() -> None:
    settings = TopicSettings(default_num_partitions=4, default_replication_factor=2)
    done = manager(settings=settings).create_topics(cluster(), [NewTopic("t")])
    assert (one(done).num_partitions, one(done).replication_factor) == (4, 2)
    assert len(done.records) == 5 and all(len(p.replicas) == 2 for p in done.records[1:])


def test_settings_from_config() -> None:
    assert TopicSettings.from_config({}) == TopicSettings(1, 1, True)
    parsed = TopicSettings.from_config(
        {"num.partitions": "6", "default.replication.factor": " 3 ", "delete.topic.enable": "FALSE"}
    )
    assert parsed == TopicSettings(6, 3, False)


@pytest.mark.parametrize(
    ("props", "key"),
    [({"num.partitions": "0"}, "num.partitions"), ({"num.partitions": "x"}, "num.partitions"),
     ({"default.replication.factor": "40000"}, "default.replication.factor"),
     ({"delete.topic.enable": "yes"}, "delete.topic.enable")],
)  # fmt: skip
def test_settings_refuse_bad_values(props, key) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValueError, match=key):
        TopicSettings.from_config(props)


def test_topic_ids_are_fresh_and_never_reserved() -> None:
    done = manager().create_topics(cluster(), [NewTopic(f"t{i}", 1, 1) for i in range(200)])
    ids = [r.topic_id for r in done.response]
    assert len(set(ids)) == 200
    assert all(i not in (None, uuid.UUID(int=0), uuid.UUID(int=1)) and (i.bytes[0] >> 2) != 62 for i in ids)


def test_from_kio_reads_the_request_entity() -> None:
    entity = CreatableTopic(
        name=TopicName("t"),
        num_partitions=i32(-1),
        replication_factor=i16(-1),
        assignments=(CreatableReplicaAssignment(partition_index=i32(0), broker_ids=(BrokerId(2), BrokerId(1))),),
        configs=(CreatableTopicConfig(name="retention.ms", value="5"), CreatableTopicConfig(name="x", value=None)),
    )
    assert NewTopic.from_kio(entity) == NewTopic("t", -1, -1, ((0, (2, 1)),), (("retention.ms", "5"), ("x", None)))


# ---------------------------------------------------------------- request-level checks


def test_duplicates_get_one_invalid_request_after_the_others() -> None:
    topics = [NewTopic("a", 1, 1), NewTopic("dup", 1, 1), NewTopic("b", 1, 1), NewTopic("dup", 2, 1)]
    done = manager().create_topics(cluster(), topics)
    assert [r.name for r in done.response] == ["a", "b", "dup"]
    assert error_of(done, "dup") == (ErrorCode.invalid_request, "Duplicate topic name.")
    assert not any(getattr(r, "name", None) == "dup" for r in done.records)


def test_cluster_metadata_topic_is_prohibited() -> None:
    done = manager().create_topics(cluster(), [NewTopic("__cluster_metadata", 1, 1)])
    message = "Creation of internal topic __cluster_metadata is prohibited."
    assert error_of(done) == (ErrorCode.invalid_request, message) and done.records == ()


def test_unauthorized_topics_never_reach_the_controller_checks() -> None:
    image = with_topic(cluster(), "exists")
    policy = RecordingCreatePolicy()
    done = manager(policies=Policies(create_topic=policy)).create_topics(
        image,
        [NewTopic("exists", 1, 1), NewTopic("mine", 1, 1), NewTopic("secret", 1, 1)],
        may_create=lambda names: {n for n in names if n == "mine"},
    )
    assert [r.name for r in done.response] == ["mine", "exists", "secret"]
    denied = (ErrorCode.topic_authorization_failed, "Authorization failed.")
    assert error_of(done, "exists") == denied and error_of(done, "secret") == denied
    assert [m.topic for m in policy.seen] == ["mine"]


def test_configs_hidden_without_describe_configs() -> None:
    described = [CreatedTopicConfig("cleanup.policy", "delete", False, 5, False)]
    m = manager(describe_configs=lambda name, configs: described)
    done = m.create_topics(
        cluster(), [NewTopic("a", 2, 1), NewTopic("b", 2, 1)], may_describe_configs=lambda names: {"a"}
    )
    a, b = one(done, "a"), one(done, "b")
    assert a.configs == tuple(described) and (a.num_partitions, a.replication_factor) == (2, 1)
    assert b.topic_config_error_code == ErrorCode.topic_authorization_failed
    assert (b.num_partitions, b.replication_factor, b.configs) == (-1, -1, ())
    assert b.error.code == ErrorCode.none and b.topic_id is not None


def test_describe_configs_receives_the_creation_configs() -> None:
    calls = []
    m = manager(describe_configs=lambda name, configs: calls.append((name, dict(configs))) or [])
    m.create_topics(cluster(), [NewTopic("a", 1, 1, configs=(("retention.ms", "1"), ("retention.ms", "2")))])
    assert calls == [("a", {"retention.ms": "2"})]


def test_too_many_records_fail_the_whole_request() -> None:
    topics = [NewTopic("a", 5000, 1), NewTopic("b", 5000, 1), NewTopic("d", 1, 1), NewTopic("d", 1, 1)]
    done = manager().create_topics(cluster(), topics)  # 2 x (1 TopicRecord + 5000 PartitionRecords) > 10,000
    message = "Unable to perform excessively large batch operation."
    assert [(r.name, r.error) for r in done.response] == [
        (n, ApiError(ErrorCode.policy_violation, message)) for n in ("a", "b", "d", "d")
    ]
    assert done.records == ()
    within = manager().create_topics(cluster(), [NewTopic("a", 5000, 1), NewTopic("b", 4998, 1)])
    assert len(within.records) == 10_000 and all(r.error.code == ErrorCode.none for r in within.response)


def test_huge_partition_count_fails_the_request_without_placing_it() -> None:
    policy = RecordingCreatePolicy()
    charged: list[int] = []
    m = manager(policies=Policies(create_topic=policy))
    done = m.create_topics(cluster(), [NewTopic("huge", 2**31 - 1, 1), NewTopic("ok", 1, 1)], charge=charged.append)
    message = "Unable to perform excessively large batch operation."
    assert {r.error for r in done.response} == {ApiError(ErrorCode.policy_violation, message)}
    assert policy.seen[0].num_partitions == 2**31 - 1 and charged == [2**31 - 1]


def test_huge_partition_count_refused_by_the_policy_fails_only_that_topic() -> None:
    policy = RecordingCreatePolicy(refuse={"huge": "too many partitions"})
    done = manager(policies=Policies(create_topic=policy)).create_topics(
        cluster(), [NewTopic("huge", 2**31 - 1, 1), NewTopic("ok", 1, 1)]
    )
    assert error_of(done, "huge") == (ErrorCode.policy_violation, "too many partitions")
    assert one(done, "ok").error.code == ErrorCode.none


# ---------------------------------------------------------------- names and existence


@pytest.mark.parametrize(
    ("name", "message"),
    [("", "Topic name is invalid: the empty string is not allowed"),
     (".", "Topic name is invalid: '.' is not allowed"),
     ("..", "Topic name is invalid: '..' is not allowed"),
     ("a" * 250, f"Topic name is invalid: the length of '{'a' * 250}' is longer than the max allowed length 249"),
     ("bad name", "Topic name is invalid: 'bad name' contains one or more characters other than ASCII "
                  "alphanumerics, '.', '_' and '-'")],
)  # fmt: skip
def test_invalid_names(name: str, message: str) -> None:
    done = manager().create_topics(cluster(), [NewTopic(name, 1, 1)])
    assert error_of(done) == (ErrorCode.invalid_topic_exception, message) and done.records == ()


def test_longest_legal_name() -> None:
    assert one(manager().create_topics(cluster(), [NewTopic("a" * 249, 1, 1)])).error.code == ErrorCode.none


def test_collision_with_an_existing_topic() -> None:
    image = with_topic(cluster(), "a_b")
    done = manager().create_topics(image, [NewTopic("a.b", 1, 1), NewTopic("ab", 1, 1)])
    assert error_of(done, "a.b") == (ErrorCode.invalid_topic_exception, "Topic 'a.b' collides with existing topic: a_b")
    assert one(done, "ab").error.code == ErrorCode.none


def test_collisions_within_one_request_are_not_detected() -> None:
    done = manager().create_topics(cluster(), [NewTopic("x.y", 1, 1), NewTopic("x_y", 1, 1)])
    assert all(r.error.code == ErrorCode.none for r in done.response)


def test_existing_topic_wins_over_the_collision_error() -> None:
    image = with_topic(cluster(), "a.b")
    done = manager().create_topics(image, [NewTopic("a.b", 1, 1)])
    assert error_of(done) == (ErrorCode.topic_already_exists, "Topic 'a.b' already exists.")


def test_collision_index_follows_the_image() -> None:
    m = manager()
    image = cluster()
    assert one(m.create_topics(image, [NewTopic("p.q", 1, 1)])).error.code == ErrorCode.none
    image = with_topic(image, "p_q")
    assert error_of(m.create_topics(image, [NewTopic("p.q", 1, 1)]))[0] == ErrorCode.invalid_topic_exception


# ---------------------------------------------------------------- configs


def test_null_config_values_are_refused() -> None:
    done = manager().create_topics(cluster(), [NewTopic("t", 1, 1, configs=(("a", None), ("b", "1"), ("c", None)))])
    assert error_of(done) == (ErrorCode.invalid_config, "Null value not supported for topic configs: a,c")


def test_config_validator_error_is_returned_as_given() -> None:
    calls = []

    def validate(topic, configs):  # type: ignore[no-untyped-def]
        calls.append((topic, dict(configs)))
        return (
            ApiError(ErrorCode.invalid_config, "Invalid value -2 for configuration retention.ms")
            if topic == "bad"
            else None
        )

    m = manager(validate_configs=validate)
    done = m.create_topics(
        cluster(),
        [NewTopic("bad", 1, 1, configs=(("retention.ms", "-2"),)), NewTopic("plain", 1, 1)],
    )
    assert error_of(done, "bad") == (ErrorCode.invalid_config, "Invalid value -2 for configuration retention.ms")
    assert one(done, "plain").error.code == ErrorCode.none
    assert calls == [("bad", {"retention.ms": "-2"})]  # topics without configs skip the validator


def test_config_errors_come_before_partition_errors() -> None:
    m = manager(validate_configs=lambda topic, configs: ApiError(ErrorCode.invalid_config, "bad config"))
    done = m.create_topics(cluster(), [NewTopic("t", 0, 1, configs=(("x", "y"),))])
    assert error_of(done) == (ErrorCode.invalid_config, "bad config")


def test_alter_config_policy_runs_for_topics_with_configs() -> None:
    policy = RecordingAlterPolicy(refuse={"refused": "no compaction here"})
    m = manager(policies=Policies(alter_config=policy))
    done = m.create_topics(
        cluster(),
        [NewTopic("refused", 1, 1, configs=(("cleanup.policy", "compact"),)),
         NewTopic("plain", 1, 1), NewTopic("ok", 1, 1, configs=(("retention.ms", "9"),))],
    )  # fmt: skip
    assert error_of(done, "refused") == (ErrorCode.policy_violation, "no compaction here")
    assert one(done, "ok").error.code == ErrorCode.none
    assert [m.resource for m in policy.seen] == [
        ConfigResource(ConfigResourceType.TOPIC, "refused"),
        ConfigResource(ConfigResourceType.TOPIC, "ok"),
    ]
    assert dict(policy.seen[1].configs) == {"retention.ms": "9"} == dict(policy.seen[1].resulting_configs)
    assert not any(getattr(r, "name", None) == "refused" for r in done.records)


# ---------------------------------------------------------------- automatic layout


@pytest.mark.parametrize("rf", [0, -2, -100])
def test_invalid_replication_factor(rf: int) -> None:
    done = manager().create_topics(cluster(), [NewTopic("t", 1, rf)])
    message = "Replication factor must be larger than 0, or -1 to use the default value."
    assert error_of(done) == (ErrorCode.invalid_replication_factor, message)


@pytest.mark.parametrize("partitions", [0, -2])
def test_invalid_partition_count(partitions: int) -> None:
    done = manager().create_topics(cluster(), [NewTopic("t", partitions, 1)])
    message = "Number of partitions was set to an invalid non-positive value."
    assert error_of(done) == (ErrorCode.invalid_partitions, message)


def test_replication_factor_above_registered_brokers() -> None:
    done = manager().create_topics(cluster(), [NewTopic("t", 1, 4)])
    message = (
        "Unable to replicate the partition 4 time(s): The target replication factor of 4 cannot be reached "
        "because only 3 broker(s) are registered."
    )
    assert error_of(done) == (ErrorCode.invalid_replication_factor, message)


def test_all_brokers_fenced() -> None:
    done = manager().create_topics(cluster(broker(1, fenced=True), broker(2, fenced=True)), [NewTopic("t", 1, 1)])
    message = "Unable to replicate the partition 1 time(s): All brokers are currently fenced."
    assert error_of(done) == (ErrorCode.invalid_replication_factor, message)


def test_fenced_brokers_hold_replicas_but_not_leadership_or_isr() -> None:
    image = cluster(broker(1), broker(2, fenced=True))
    done = manager().create_topics(image, [NewTopic("t", 4, 2)])
    for p in done.records[1:]:
        assert set(p.replicas) == {1, 2} and p.leader == 1 and p.isr == (1,)


def test_brokers_in_controlled_shutdown_are_not_used() -> None:
    image = cluster(broker(1), broker(2, shutting_down=True))
    assert all(p.replicas == (1,) for p in manager().create_topics(image, [NewTopic("t", 5, 1)]).records[1:])
    done = manager().create_topics(image, [NewTopic("t", 1, 2)])
    assert "only 1 broker(s) are registered" in (error_of(done)[1] or "")


def test_quota_charge_sees_the_partition_count() -> None:
    charged = []

    def charge(n: int) -> ApiError | None:
        charged.append(n)
        return ApiError(ErrorCode.throttling_quota_exceeded, "quota") if n > 5 else None

    done = manager().create_topics(cluster(), [NewTopic("small", 2, 1), NewTopic("big", 6, 1)], charge=charge)
    assert charged == [2, 6]
    assert error_of(done, "big") == (ErrorCode.throttling_quota_exceeded, "quota")
    assert one(done, "small").error.code == ErrorCode.none


# ---------------------------------------------------------------- manual assignments


def manual(*assignments: tuple[int, tuple[int, ...]], rf: int = -1, partitions: int = -1) -> NewTopic:
    return NewTopic("m", partitions, rf, tuple(assignments))


def test_manual_assignment_is_used_as_given() -> None:
    image = cluster(broker(1), broker(2), broker(3, fenced=True))
    done = manager().create_topics(image, [manual((1, (3, 1)), (0, (2, 3)))])
    records = done.records[1:]
    assert [(p.partition_id, p.replicas, p.isr, p.leader) for p in records] == [
        (0, (2, 3), (2,), 2),
        (1, (3, 1), (1,), 1),
    ]
    assert (one(done).num_partitions, one(done).replication_factor) == (2, 2)


@pytest.mark.parametrize(
    ("topic", "code", "message"),
    [
        (manual((0, (1,)), rf=1), ErrorCode.invalid_request,
         "A manual partition assignment was specified, but replication factor was not set to -1."),
        (manual((0, (1,)), partitions=1), ErrorCode.invalid_request,
         "A manual partition assignment was specified, but numPartitions was not set to -1."),
        (manual((0, (1,)), (0, (2,))), ErrorCode.invalid_replica_assignment,
         "Found multiple manual partition assignments for partition 0"),
        (manual((0, ())), ErrorCode.invalid_replica_assignment,
         "The manual partition assignment includes an empty replica list."),
        (manual((0, (1, 9))), ErrorCode.invalid_replica_assignment,
         "The manual partition assignment includes broker 9, but no such broker is registered."),
        (manual((0, (2, 1, 2))), ErrorCode.invalid_replica_assignment,
         "The manual partition assignment includes the broker 2 more than once."),
        (manual((0, (1, 2)), (1, (1,))), ErrorCode.invalid_replica_assignment,
         "The manual partition assignment includes a partition with 1 replica(s), but this is not consistent "
         "with previous partitions, which have 2 replica(s)."),
        (manual((0, (4,))), ErrorCode.invalid_replica_assignment,
         "All brokers specified in the manual partition assignment for partition 0 are fenced or in "
         "controlled shutdown."),
        (manual((0, (1,)), (2, (2,))), ErrorCode.invalid_replica_assignment,
         "partitions should be a consecutive 0-based integer sequence"),
        (manual((1, (1,))), ErrorCode.invalid_replica_assignment,
         "partitions should be a consecutive 0-based integer sequence"),
    ],
)  # fmt: skip
def test_manual_assignment_errors(topic: NewTopic, code: ErrorCode, message: str) -> None:
    image = cluster(broker(1), broker(2), broker(3), broker(4, fenced=True))
    done = manager().create_topics(image, [topic])
    assert error_of(done) == (code, message) and done.records == ()


def test_manual_assignment_may_not_use_only_brokers_in_shutdown() -> None:
    image = cluster(broker(1), broker(2, shutting_down=True))
    assert error_of(manager().create_topics(image, [manual((0, (2,)))]))[0] == ErrorCode.invalid_replica_assignment
    assert one(manager().create_topics(image, [manual((0, (2, 1)))])).error.code == ErrorCode.none


# ---------------------------------------------------------------- create policy and validate_only


def test_create_policy_sees_kafkas_request_metadata() -> None:
    policy = RecordingCreatePolicy()
    m = manager(policies=Policies(create_topic=policy), settings=TopicSettings(default_num_partitions=3))
    m.create_topics(
        cluster(),
        [NewTopic("auto", -1, 2, configs=(("retention.ms", "5"),)), manual((0, (2, 1)), (1, (1, 3)))],
    )
    auto, by_hand = policy.seen
    assert (auto.topic, auto.num_partitions, auto.replication_factor, auto.replicas_assignments) == ("auto", 3, 2, None)
    assert dict(auto.configs) == {"retention.ms": "5"}
    assert (by_hand.num_partitions, by_hand.replication_factor) == (None, None)
    assert dict(by_hand.replicas_assignments) == {0: (2, 1), 1: (1, 3)}


def test_create_policy_violation_fails_that_topic_only() -> None:
    policy = RecordingCreatePolicy(refuse={"no": "Topic 'no' is not allowed here"})
    done = manager(policies=Policies(create_topic=policy)).create_topics(
        cluster(), [NewTopic("no", 1, 1), NewTopic("yes", 1, 1)]
    )
    assert error_of(done, "no") == (ErrorCode.policy_violation, "Topic 'no' is not allowed here")
    assert one(done, "yes").error.code == ErrorCode.none
    assert [r.name for r in done.records if isinstance(r, TopicRecord)] == ["yes"]


def test_create_policy_runs_after_layout_checks() -> None:
    policy = RecordingCreatePolicy()
    manager(policies=Policies(create_topic=policy)).create_topics(cluster(), [NewTopic("t", 1, 9)])
    assert policy.seen == []


def test_policy_crash_is_an_unknown_server_error_for_that_topic() -> None:
    done = manager(policies=Policies(create_topic=RecordingCreatePolicy(crash=True))).create_topics(
        cluster(), [NewTopic("t", 1, 1)]
    )
    assert error_of(done) == (ErrorCode.unknown_server_error, None)


@pytest.mark.parametrize("name", ["__consumer_offsets", "__transaction_state", "__share_group_state"])
def test_internal_topics_bypass_the_create_policy_but_not_the_alter_config_policy(name: str) -> None:
    create = RecordingCreatePolicy(refuse={name: "no"})
    alter = RecordingAlterPolicy()
    m = manager(policies=Policies(create_topic=create, alter_config=alter))
    done = m.create_topics(cluster(), [NewTopic(name, 50, 3, configs=(("cleanup.policy", "compact"),))])
    assert one(done).error.code == ErrorCode.none
    assert create.seen == [] and len(alter.seen) == 1


def test_validate_only_runs_every_check_and_policy_and_writes_nothing() -> None:
    create = RecordingCreatePolicy(refuse={"refused": "nope"})
    alter = RecordingAlterPolicy()
    charged = []
    m = manager(policies=Policies(create_topic=create, alter_config=alter))
    image = with_topic(cluster(), "exists")
    topics = [
        NewTopic("ok", 2, 2, configs=(("retention.ms", "1"),)),
        NewTopic("refused", 1, 1),
        NewTopic("exists", 1, 1),
        NewTopic("bad name", 1, 1),
    ]
    checked = m.create_topics(image, topics, validate_only=True, charge=lambda n: charged.append(n))
    assert checked.records == ()
    assert [m.topic for m in create.seen] == ["ok", "refused"] and len(alter.seen) == 1
    assert charged == [2]
    codes = {r.name: r.error.code for r in checked.response}
    assert codes == {
        "ok": ErrorCode.none,
        "refused": ErrorCode.policy_violation,
        "exists": ErrorCode.topic_already_exists,
        "bad name": ErrorCode.invalid_topic_exception,
    }
    ok = one(checked, "ok")
    assert ok.topic_id is not None and (ok.num_partitions, ok.replication_factor) == (2, 2)
    real = m.create_topics(image, topics)
    assert [(r.name, r.error) for r in real.response] == [(r.name, r.error) for r in checked.response]
    assert len(real.records) == 4
