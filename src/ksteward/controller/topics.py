"""Topic administration on the controller: CreateTopics, DeleteTopics and CreatePartitions (KRaft).

Pure record generation, as Kafka's ``ReplicationControlManager`` with the request-level steps of
``ControllerApis`` (spec §4.3-§4.6): given the current image and a request, return the records to
commit as one atomic batch and one result per topic. Nothing here touches the log; the caller appends
``records`` (empty for validate-only requests) and answers once they are durable::

    topics = TopicControlManager(TopicSettings.from_config(cfg.static), Policies.from_config(cfg.static),
                                 validate_configs=catalog.validate_new_topic, describe_configs=catalog.describe_new)
    done = topics.create_topics(image, [NewTopic.from_kio(t) for t in request.topics],
                                validate_only=request.validate_only, may_create=authorized_names)
    done.records   # TopicRecord, its ConfigRecords, its PartitionRecords, topic after topic
    done.response  # CreateTopicResult per topic, with Kafka's codes and messages

Authorization decisions are the broker layer's. It passes them as name filters (``may_create``,
``may_describe``, ...): each gets the candidate names and returns those allowed; None allows all.
They are called here because Kafka orders them between its other checks (duplicates are found
before authorization, unknown topic ids are reported without it).

Policies: the CreateTopicPolicy runs for every topic except internal ones (KIP-590), the
AlterConfigPolicy for every new topic that carries configs, the DeleteTopicPolicy (KIP-934) for every
topic about to be deleted. All of them, and every other check, run for validate-only requests too.
A policy that raises something other than PolicyViolation fails its topic with UNKNOWN_SERVER_ERROR.

Helpers: ``topic_requests`` (the inputs, results, settings and hook types, re-exported here),
``topic_names`` (the name and collision rules), ``replica_placement`` (the striped placer and the
checks on manual assignments).
"""

from __future__ import annotations

import logging
import random
import uuid
from collections.abc import Collection, Mapping, Sequence, Set
from typing import Any, cast

from kio.schema.errors import ErrorCode
from kio.schema.types import BrokerId, TopicName
from kio.static.primitive import i8, i32

from ksteward.controller.features import METADATA_VERSION, METADATA_VERSION_LEVEL
from ksteward.controller.replica_placement import (
    AssignmentError,
    PlacementError,
    default_dir,
    is_active,
    place_replicas,
    usable_brokers,
    validate_manual_assignment,
)
from ksteward.controller.result import EXCESSIVELY_LARGE_BATCH, MAX_RECORDS_PER_USER_OP, ControllerResult
from ksteward.controller.topic_names import (
    CLUSTER_METADATA_TOPIC_NAME,
    collision_index,
    has_collision_chars,
    is_internal,
    unify_collision_chars,
    validation_error,
)
from ksteward.controller.topic_requests import (
    NO_ERROR,
    ApiError,
    ConfigDescriber,
    ConfigValidator,
    CreatedTopicConfig,
    CreatePartitionsResult,
    CreateTopicResult,
    DeleteTopicResult,
    NameFilter,
    NewPartitions,
    NewTopic,
    QuotaCharge,
    TopicRef,
    TopicSettings,
)
from ksteward.metadata.ids import random_uuid
from ksteward.metadata.image import MetadataImage, TopicImage
from ksteward.metadata.records import (
    AnyPartitionRecord,
    ConfigRecord,
    MetadataRecord,
    PartitionRecordV0,
    PartitionRecordV1,
    PartitionRecordV2,
    RemoveTopicRecord,
    TopicRecord,
)
from ksteward.policy import (
    AlterConfigRequestMetadata,
    ConfigResource,
    ConfigResourceType,
    CreateTopicRequestMetadata,
    DeleteTopicRequestMetadata,
    Policies,
    policy_error,
)

__all__ = [
    "NO_ERROR",
    "ApiError",
    "ConfigDescriber",
    "ConfigValidator",
    "CreatePartitionsResult",
    "CreateTopicResult",
    "CreatedTopicConfig",
    "DeleteTopicResult",
    "NameFilter",
    "NewPartitions",
    "NewTopic",
    "QuotaCharge",
    "TopicControlManager",
    "TopicRef",
    "TopicSettings",
    "partition_record",
]

log = logging.getLogger(__name__)

_DIRECTORY_ASSIGNMENT_LEVEL = 17  # metadata.version 3.7-IV2: PartitionRecord v1 (directories)
_ELR_LEVEL = 23  # metadata.version 4.0-IV1: PartitionRecord v2 (ELR fields)


class _BatchTooLarge(Exception):
    """The request's records would exceed MAX_RECORDS_PER_USER_OP: Kafka fails the whole CreateTopics."""


def _allowed(names: Collection[str], decide: NameFilter | None) -> Set[str]:
    return set(names) if decide is None else set(decide(names)) & set(names)


def _check(policy: Any, metadata: Any) -> ApiError | None:
    error = policy_error(policy, metadata)
    return None if error is None else ApiError(*error)


class TopicControlManager:
    """Topic mutations on the controller. Holds the settings, the policies and the config hooks; every
    method is pure in the image it is given. ``rng`` drives replica placement and the DeleteTopics
    response shuffle (pass a seeded one for reproducible tests)."""

    def __init__(
        self,
        settings: TopicSettings | None = None,
        policies: Policies | None = None,
        *,
        validate_configs: ConfigValidator | None = None,
        describe_configs: ConfigDescriber | None = None,
        rng: random.Random | None = None,
    ) -> None:
        self.settings = settings or TopicSettings()
        self.policies = policies or Policies()
        self.validate_configs = validate_configs
        self.describe_configs = describe_configs
        self.rng = rng or random.Random()
        self._collisions_of: Mapping[str, TopicImage] | None = None
        self._collisions: dict[str, list[str]] = {}

    # ---------------------------------------------------------------- CreateTopics

    def create_topics(
        self,
        image: MetadataImage,
        topics: Sequence[NewTopic],
        *,
        validate_only: bool = False,
        may_create: NameFilter | None = None,
        may_describe_configs: NameFilter | None = None,
        charge: QuotaCharge | None = None,
        describe_created: bool = True,
    ) -> ControllerResult[tuple[CreateTopicResult, ...]]:
        """CreateTopics v2-v7 (spec §4.5). Results: the topics that reached the controller logic in
        request order, then one "Duplicate topic name." per duplicated name, then the refused
        ``__cluster_metadata`` and unauthorized topics, as Kafka orders them."""
        unique: dict[str, None] = {}
        duplicates: dict[str, None] = {}
        for topic in topics:
            if topic.name in duplicates:
                continue
            if topic.name in unique:
                del unique[topic.name]
                duplicates[topic.name] = None
            else:
                unique[topic.name] = None
        candidates = [name for name in unique if name != CLUSTER_METADATA_TOPIC_NAME]
        authorized = _allowed(candidates, may_create)
        describable = _allowed(candidates, may_describe_configs)
        effective = [t for t in topics if t.name in unique and t.name in authorized]
        try:
            records, results = self._create(image, effective, describable, charge, describe_created)
        except _BatchTooLarge:
            refused = ApiError(ErrorCode.policy_violation, EXCESSIVELY_LARGE_BATCH)
            return ControllerResult((), tuple(CreateTopicResult(t.name, refused) for t in topics))
        for name in duplicates:
            results.append(CreateTopicResult(name, ApiError(ErrorCode.invalid_request, "Duplicate topic name.")))
        for name in unique:
            if name == CLUSTER_METADATA_TOPIC_NAME:
                message = f"Creation of internal topic {CLUSTER_METADATA_TOPIC_NAME} is prohibited."
                results.append(CreateTopicResult(name, ApiError(ErrorCode.invalid_request, message)))
            elif name not in authorized:
                error = ApiError(ErrorCode.topic_authorization_failed, "Authorization failed.")
                results.append(CreateTopicResult(name, error))
        return ControllerResult(() if validate_only else tuple(records), tuple(results))

    def _collision_index(self, image: MetadataImage) -> dict[str, list[str]]:
        by_name = image.topics.by_name
        if by_name is not self._collisions_of:
            self._collisions = collision_index(by_name)
            self._collisions_of = by_name
        return self._collisions

    def _create(
        self,
        image: MetadataImage,
        topics: Sequence[NewTopic],
        describable: Set[str],
        charge: QuotaCharge | None,
        describe_created: bool = True,
    ) -> tuple[list[MetadataRecord], list[CreateTopicResult]]:
        errors: dict[str, ApiError] = {}
        for topic in topics:
            message = validation_error(topic.name)
            if message is not None:
                errors[topic.name] = ApiError(ErrorCode.invalid_topic_exception, message)
            if has_collision_chars(topic.name):
                colliding = self._collision_index(image).get(unify_collision_chars(topic.name))
                if colliding:
                    message = f"Topic '{topic.name}' collides with existing topic: {colliding[0]}"
                    errors[topic.name] = ApiError(ErrorCode.invalid_topic_exception, message)
        for topic in topics:
            if topic.name in image.topics.by_name:
                errors[topic.name] = ApiError(ErrorCode.topic_already_exists, f"Topic '{topic.name}' already exists.")
        for topic in topics:
            nulls = [key for key, value in topic.configs if value is None]
            if topic.name not in errors and nulls:
                message = f"Null value not supported for topic configs: {','.join(nulls)}"
                errors[topic.name] = ApiError(ErrorCode.invalid_config, message)

        records: list[MetadataRecord] = []
        successes: dict[str, CreateTopicResult] = {}
        new_ids: set[uuid.UUID] = set()
        for topic in topics:
            if topic.name in errors:
                continue
            configs = {key: value for key, value in topic.configs if value is not None}
            refused = self._check_configs(topic.name, configs) if configs else None
            outcome = refused or self._create_one(
                image, topic, configs, topic.name in describable, charge, new_ids, records, describe_created
            )
            if isinstance(outcome, ApiError):
                errors[topic.name] = outcome
            else:
                successes[topic.name] = outcome
        results = [CreateTopicResult(t.name, errors[t.name]) if t.name in errors else successes[t.name] for t in topics]
        return records, results

    def _check_configs(self, topic: str, configs: Mapping[str, str]) -> ApiError | None:
        """The configs of a new topic, as an incremental SET on a new resource: the catalog's validator,
        then the AlterConfigPolicy (spec §4.5 step 4, §2.7)."""
        if self.validate_configs is not None:
            problem = self.validate_configs(topic, configs)
            if problem is not None:
                return problem
        policy = self.policies.alter_config
        if policy is None:
            return None
        metadata = AlterConfigRequestMetadata(ConfigResource(ConfigResourceType.TOPIC, topic), configs, configs)
        return _check(policy, metadata)

    def _create_one(
        self,
        image: MetadataImage,
        topic: NewTopic,
        configs: dict[str, str],
        describable: bool,
        charge: QuotaCharge | None,
        new_ids: set[uuid.UUID],
        records: list[MetadataRecord],
        describe_created: bool = True,
    ) -> CreateTopicResult | ApiError:
        cluster = image.cluster
        parts: dict[int, tuple[tuple[int, ...], tuple[int, ...]]] = {}
        if topic.assignments:
            if topic.replication_factor != -1:
                message = "A manual partition assignment was specified, but replication factor was not set to -1."
                return ApiError(ErrorCode.invalid_request, message)
            if topic.num_partitions != -1:
                message = "A manual partition assignment was specified, but numPartitions was not set to -1."
                return ApiError(ErrorCode.invalid_request, message)
            replication_factor: int | None = None
            for index, replicas in topic.assignments:
                if index in parts:
                    message = f"Found multiple manual partition assignments for partition {index}"
                    return ApiError(ErrorCode.invalid_replica_assignment, message)
                try:
                    validate_manual_assignment(cluster, replicas, replication_factor)
                except AssignmentError as exc:
                    return ApiError(ErrorCode.invalid_replica_assignment, str(exc))
                replication_factor = len(replicas)
                isr = tuple(b for b in replicas if is_active(cluster, b))
                if not isr:
                    message = (
                        f"All brokers specified in the manual partition assignment for partition {index} "
                        "are fenced or in controlled shutdown."
                    )
                    return ApiError(ErrorCode.invalid_replica_assignment, message)
                parts[index] = (tuple(replicas), isr)
            if any(i not in parts for i in range(len(parts))):
                message = "partitions should be a consecutive 0-based integer sequence"
                return ApiError(ErrorCode.invalid_replica_assignment, message)
            assignments = {index: replicas for index, (replicas, _) in parts.items()}
            metadata = CreateTopicRequestMetadata(topic.name, None, None, assignments, configs)
        elif topic.replication_factor < -1 or topic.replication_factor == 0:
            message = "Replication factor must be larger than 0, or -1 to use the default value."
            return ApiError(ErrorCode.invalid_replication_factor, message)
        elif topic.num_partitions < -1 or topic.num_partitions == 0:
            message = "Number of partitions was set to an invalid non-positive value."
            return ApiError(ErrorCode.invalid_partitions, message)
        else:
            num_partitions = topic.num_partitions
            if num_partitions == -1:
                num_partitions = self.settings.default_num_partitions
            rf = topic.replication_factor
            if rf == -1:
                rf = self.settings.default_replication_factor
            try:  # placement errors do not depend on the count: never place more than a batch can hold
                wanted = min(num_partitions, MAX_RECORDS_PER_USER_OP + 1)
                placed = place_replicas(usable_brokers(cluster), wanted, rf, self.rng)
            except PlacementError as exc:
                message = f"Unable to replicate the partition {rf} time(s): {exc}"
                return ApiError(ErrorCode.invalid_replication_factor, message)
            for index, replicas in enumerate(placed):
                isr = tuple(b for b in replicas if is_active(cluster, b))
                if not isr:
                    message = (
                        f"Unable to replicate the partition {rf} time(s): "
                        "All brokers are currently fenced or in controlled shutdown."
                    )
                    return ApiError(ErrorCode.invalid_replication_factor, message)
                parts[index] = (replicas, isr)
            metadata = CreateTopicRequestMetadata(topic.name, num_partitions, rf, None, configs)

        policy = self.policies.create_topic
        if policy is not None and not is_internal(topic.name):  # KIP-590: internal topics bypass it
            error = _check(policy, metadata)
            if error is not None:
                return error
        num_partitions = metadata.num_partitions or len(parts)
        if charge is not None:
            error = charge(num_partitions)
            if error is not None:
                return error
        if len(records) + 1 + len(configs) + num_partitions > MAX_RECORDS_PER_USER_OP:
            raise _BatchTooLarge

        topic_id = random_uuid(image.topics.by_id, new_ids)
        new_ids.add(topic_id)
        records.append(TopicRecord(name=cast(TopicName, topic.name), topic_id=topic_id))
        records.extend(
            ConfigRecord(
                resource_type=i8(int(ConfigResourceType.TOPIC)), resource_name=topic.name, name=key, value=value
            )
            for key, value in configs.items()
        )
        for index in sorted(parts):
            replicas, isr = parts[index]
            records.append(partition_record(image, topic_id, index, replicas, isr))
        if not describable:
            return CreateTopicResult(
                topic.name, topic_id=topic_id, topic_config_error_code=ErrorCode.topic_authorization_failed
            )
        # CreateTopics before v5 has no configs in its reply: describing 33 configs per topic for it
        # was most of a 1,000-topic request's time (bench/topics.py).
        describe = describe_created and self.describe_configs is not None
        described = tuple(self.describe_configs(topic.name, configs)) if describe else ()  # type: ignore[misc]
        return CreateTopicResult(
            topic.name,
            topic_id=topic_id,
            num_partitions=num_partitions,
            replication_factor=len(parts[0][0]),
            configs=described,
        )

    # ---------------------------------------------------------------- DeleteTopics

    def delete_topics(
        self,
        image: MetadataImage,
        refs: Sequence[TopicRef],
        *,
        api_version: int,
        validate_only: bool = False,
        may_describe: NameFilter | None = None,
        may_delete: NameFilter | None = None,
        charge: QuotaCharge | None = None,
    ) -> ControllerResult[tuple[DeleteTopicResult, ...]]:
        """DeleteTopics v1-v6, and v7 with ``validate_only`` (KIP-934; a ksteward extension), spec §4.6.

        ``may_describe``/``may_delete`` decide DESCRIBE and DELETE on the named topics (pass ``None``
        for both when the caller has DELETE on the cluster). The results are shuffled, as Kafka's are,
        so that their order reveals nothing about which topics exist."""
        if not self.settings.delete_topic_enable:
            code = ErrorCode.topic_deletion_disabled if api_version >= 3 else ErrorCode.invalid_request
            return ControllerResult((), tuple(DeleteTopicResult(r.name, r.topic_id, ApiError(code)) for r in refs))
        results: list[DeleteTopicResult] = []

        def fail(name: str | None, topic_id: uuid.UUID | None, code: ErrorCode, message: str | None) -> None:
            results.append(DeleteTopicResult(name, topic_id, ApiError(code, message)))

        names: dict[str, None] = {}
        duplicate_names: dict[str, None] = {}
        ids: dict[uuid.UUID, None] = {}
        duplicate_ids: dict[uuid.UUID, None] = {}
        for ref in refs:
            if ref.name is None:
                if ref.topic_id is None:
                    fail(None, None, ErrorCode.invalid_request, "Neither topic name nor id were specified.")
                elif ref.topic_id in duplicate_ids or ref.topic_id in ids:
                    duplicate_ids[ref.topic_id] = None
                    ids.pop(ref.topic_id, None)
                else:
                    ids[ref.topic_id] = None
            elif ref.topic_id is not None:
                fail(
                    ref.name,
                    ref.topic_id,
                    ErrorCode.invalid_request,
                    "You may not specify both topic name and topic id.",
                )
            elif ref.name in duplicate_names or ref.name in names:
                duplicate_names[ref.name] = None
                names.pop(ref.name, None)
            else:
                names[ref.name] = None
        for name in duplicate_names:
            fail(name, None, ErrorCode.invalid_request, "Duplicate topic name.")
        for topic_id in duplicate_ids:
            fail(None, topic_id, ErrorCode.invalid_request, "Duplicate topic id.")

        to_authorize: dict[str, None] = dict(names)
        id_to_name: dict[uuid.UUID, str] = {}
        for topic_id in ids:
            found = image.topics.by_id.get(topic_id)
            if found is None:  # ids are not secret: no authorization check first
                fail(None, topic_id, ErrorCode.unknown_topic_id, "This server does not host this topic ID.")
            else:
                to_authorize[found.name] = None
                id_to_name[topic_id] = found.name
        describable = _allowed(to_authorize, may_describe)
        deletable = _allowed(to_authorize, may_delete)
        for topic_id, name in list(id_to_name.items()):
            if name not in deletable:
                fail(name if name in describable else None, topic_id, ErrorCode.topic_authorization_failed,
                     "Topic authorization failed.")  # fmt: skip
                del id_to_name[topic_id]
        for name in names:
            found = image.topics.by_name.get(name)
            if name not in describable:
                fail(name, None, ErrorCode.topic_authorization_failed, "Topic authorization failed.")
            elif found is None:
                fail(
                    name, None, ErrorCode.unknown_topic_or_partition, "This server does not host this topic-partition."
                )
            elif name not in deletable:
                fail(name, None, ErrorCode.topic_authorization_failed, "Topic authorization failed.")
            elif (found_id := cast(uuid.UUID, found.id)) in duplicate_ids or found_id in id_to_name:
                duplicate_ids[found_id] = None
                id_to_name.pop(found_id, None)
                message = "The provided topic name maps to an ID that was already supplied."
                fail(name, found_id, ErrorCode.invalid_request, message)
            else:
                id_to_name[found_id] = name

        records: list[MetadataRecord] = []
        policy = self.policies.delete_topic
        for topic_id, name in id_to_name.items():
            error: ApiError | None = None
            if policy is not None:
                error = _check(policy, DeleteTopicRequestMetadata(name, topic_id))
            if error is None and charge is not None:
                error = charge(len(image.topics.by_id[topic_id].partitions))
            if error is None and len(records) >= MAX_RECORDS_PER_USER_OP:
                error = ApiError(ErrorCode.unknown_server_error)  # Kafka's bounded record list overflows
            if error is None:
                records.append(RemoveTopicRecord(topic_id=topic_id))
                error = NO_ERROR
            results.append(DeleteTopicResult(name, topic_id, error))
        self.rng.shuffle(results)
        return ControllerResult(() if validate_only else tuple(records), tuple(results))

    # ---------------------------------------------------------------- CreatePartitions

    def create_partitions(
        self,
        image: MetadataImage,
        topics: Sequence[NewPartitions],
        *,
        validate_only: bool = False,
        may_alter: NameFilter | None = None,
        charge: QuotaCharge | None = None,
    ) -> ControllerResult[tuple[CreatePartitionsResult, ...]]:
        """CreatePartitions v0-v3: raise partition counts (ALTER on the topic is the caller's decision).
        Results: duplicated names, then unauthorized topics, then the others in request order."""
        first: dict[str, NewPartitions] = {}
        duplicates: dict[str, None] = {}
        for topic in topics:
            if topic.name in first:
                duplicates[topic.name] = None
            else:
                first[topic.name] = topic
        results = [
            CreatePartitionsResult(name, ApiError(ErrorCode.invalid_request, "Duplicate topic name."))
            for name in duplicates
        ]
        candidates = [name for name in first if name not in duplicates]
        authorized = _allowed(candidates, may_alter)
        results.extend(
            CreatePartitionsResult(name, ApiError(ErrorCode.topic_authorization_failed))
            for name in candidates
            if name not in authorized
        )
        records: list[MetadataRecord] = []
        for name in candidates:
            if name in authorized:
                outcome = self._add_partitions(image, first[name], charge)
                if isinstance(outcome, list) and len(records) + len(outcome) > MAX_RECORDS_PER_USER_OP:
                    outcome = ApiError(ErrorCode.unknown_server_error)
                if isinstance(outcome, ApiError):
                    results.append(CreatePartitionsResult(name, outcome))
                else:
                    records.extend(outcome)
                    results.append(CreatePartitionsResult(name))
        return ControllerResult(() if validate_only else tuple(records), tuple(results))

    def _add_partitions(
        self, image: MetadataImage, request: NewPartitions, charge: QuotaCharge | None
    ) -> list[MetadataRecord] | ApiError:
        topic = image.topics.by_name.get(request.name)
        if topic is None:
            return ApiError(ErrorCode.unknown_topic_or_partition)
        current = len(topic.partitions)
        if request.count == current:
            return ApiError(ErrorCode.invalid_partitions, f"Topic already has {current} partition(s).")
        if request.count < current:
            message = (
                f"The topic {request.name} currently has {current} partition(s); "
                f"{request.count} would not be an increase."
            )
            return ApiError(ErrorCode.invalid_partitions, message)
        additional = request.count - current
        if request.assignments is not None and len(request.assignments) != additional:
            message = (
                f"Attempted to add {additional} additional partition(s), but only "
                f"{len(request.assignments)} assignment(s) were specified."
            )
            return ApiError(ErrorCode.invalid_replica_assignment, message)
        if charge is not None:
            error = charge(additional)
            if error is not None:
                return error
        if not topic.partitions:
            return ApiError(ErrorCode.unknown_server_error)
        rf = len(topic.partitions[min(topic.partitions)].replicas)
        cluster = image.cluster
        if request.assignments is not None:
            placed: list[tuple[int, ...]] = []
            for offset, replicas in enumerate(request.assignments):
                try:
                    validate_manual_assignment(cluster, replicas, rf)
                except AssignmentError as exc:
                    return ApiError(ErrorCode.invalid_replica_assignment, str(exc))
                if not any(is_active(cluster, b) for b in replicas):
                    message = (
                        f"All brokers specified in the manual partition assignment for partition "
                        f"{current + offset} are fenced or in controlled shutdown."
                    )
                    return ApiError(ErrorCode.invalid_replica_assignment, message)
                placed.append(tuple(replicas))
        else:
            try:
                # More than a batch holds fails the topic anyway (the caller checks): place no more.
                wanted = min(additional, MAX_RECORDS_PER_USER_OP + 1)
                placed = place_replicas(usable_brokers(cluster), wanted, rf, self.rng)
            except PlacementError as exc:
                return ApiError(ErrorCode.invalid_replication_factor, str(exc))
        records: list[MetadataRecord] = []
        for offset, replicas in enumerate(placed):
            isr = tuple(b for b in replicas if is_active(cluster, b))
            if not isr:
                message = (
                    f"Unable to replicate the partition {rf} time(s): "
                    "All brokers are currently fenced or in controlled shutdown."
                )
                return ApiError(ErrorCode.invalid_replication_factor, message)
            records.append(partition_record(image, topic.id, current + offset, replicas, isr))
        return records


def partition_record(
    image: MetadataImage,
    topic_id: uuid.UUID | None,
    partition_id: int,
    replicas: tuple[int, ...],
    isr: tuple[int, ...],
) -> AnyPartitionRecord:
    """A new partition's record at the image's metadata.version, as Kafka writes it: leader = first ISR
    member, epochs 0, RECOVERED; each replica's default log directory from v1; no ELR fields (empty)."""
    level = image.features.get(METADATA_VERSION, METADATA_VERSION_LEVEL)
    brokers = cast(tuple[BrokerId, ...], replicas)
    in_sync = cast(tuple[i32, ...], isr)
    leader = cast(BrokerId, isr[0])
    if level < _DIRECTORY_ASSIGNMENT_LEVEL:
        return PartitionRecordV0(
            partition_id=cast(i32, partition_id), topic_id=topic_id, replicas=brokers, isr=in_sync, leader=leader,
            leader_epoch=i32(0), partition_epoch=i32(0),
        )  # fmt: skip
    directories = tuple(default_dir(image.cluster, b) for b in replicas)
    cls = PartitionRecordV2 if level >= _ELR_LEVEL else PartitionRecordV1
    return cls(
        partition_id=cast(i32, partition_id), topic_id=topic_id, replicas=brokers, isr=in_sync, leader=leader,
        leader_epoch=i32(0), partition_epoch=i32(0), directories=directories,
    )  # fmt: skip
