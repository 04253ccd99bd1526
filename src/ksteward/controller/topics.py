"""Topic administration on the controller: CreateTopics, DeleteTopics and CreatePartitions (KRaft).

Pure record generation, as Kafka's ``ReplicationControlManager`` with the request-level steps of
``ControllerApis`` (docs/topics-and-configs.md, "CreateTopics on the controller"): given the current
image and a request, return the records to commit as one atomic batch and one result per topic.
Nothing here touches the log; the caller appends ``records`` (empty for validate-only requests) and
answers once they are durable::

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

CreateTopics is here; the manager hands DeleteTopics to ``topic_deletion`` and CreatePartitions to
``partitions`` (which also writes every new PartitionRecord). Helpers: ``topic_requests`` (the inputs,
results, settings and hook types, re-exported here), ``topic_names`` (the name and collision rules),
``replica_placement`` (the striped placer and the checks on manual assignments).
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Mapping, Sequence, Set
from typing import cast

from kio.schema.errors import ErrorCode
from kio.schema.types import TopicName
from kio.static.primitive import i8

from ksteward.controller import partitions, topic_deletion
from ksteward.controller.partitions import partition_record
from ksteward.controller.replica_placement import (
    AssignmentError,
    PlacementError,
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
    allowed,
)
from ksteward.metadata.ids import random_uuid
from ksteward.metadata.image import MetadataImage, TopicImage
from ksteward.metadata.records import ConfigRecord, MetadataRecord, TopicRecord
from ksteward.policy import (
    AlterConfigRequestMetadata,
    ConfigResource,
    ConfigResourceType,
    CreateTopicRequestMetadata,
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

_Parts = dict[int, tuple[tuple[int, ...], tuple[int, ...]]]
"""A new topic's partitions: index -> (replicas, in-sync replicas)."""
_Layout = tuple[_Parts, CreateTopicRequestMetadata]
"""The partitions of a new topic, and what its CreateTopicPolicy sees."""


class _BatchTooLarge(Exception):
    """The request's records would exceed MAX_RECORDS_PER_USER_OP: Kafka fails the whole CreateTopics."""


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
        """CreateTopics v2-v7 (``ReplicationControlManager.createTopics``). Results: the topics that reached the
        controller logic in request order, then one "Duplicate topic name." per duplicated name, then the refused
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
        authorized = allowed(candidates, may_create)
        describable = allowed(candidates, may_describe_configs)
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
        then the AlterConfigPolicy (docs/topics-and-configs.md, "What the AlterConfigPolicy sees")."""
        if self.validate_configs is not None:
            problem = self.validate_configs(topic, configs)
            if problem is not None:
                return problem
        policy = self.policies.alter_config
        if policy is None:
            return None
        metadata = AlterConfigRequestMetadata(ConfigResource(ConfigResourceType.TOPIC, topic), configs, configs)
        return policy_error(policy, metadata)

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
        """One valid-looking topic: its partitions laid out, the CreateTopicPolicy and the quota passed,
        then its records appended to ``records``. Raises _BatchTooLarge past MAX_RECORDS_PER_USER_OP."""
        if topic.assignments:
            layout = _manual_layout(image, topic, configs)
        else:
            layout = self._placed_layout(image, topic, configs)
        if isinstance(layout, ApiError):
            return layout
        parts, metadata = layout
        policy = self.policies.create_topic
        if policy is not None and not is_internal(topic.name):  # KIP-590: internal topics bypass it
            error = policy_error(policy, metadata)
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
        records.extend(_topic_records(image, topic.name, topic_id, configs, parts))
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

    def _placed_layout(self, image: MetadataImage, topic: NewTopic, configs: dict[str, str]) -> _Layout | ApiError:
        """Automatic placement: the counts checked, the server defaults for -1, replicas striped."""
        if topic.replication_factor < -1 or topic.replication_factor == 0:
            message = "Replication factor must be larger than 0, or -1 to use the default value."
            return ApiError(ErrorCode.invalid_replication_factor, message)
        if topic.num_partitions < -1 or topic.num_partitions == 0:
            message = "Number of partitions was set to an invalid non-positive value."
            return ApiError(ErrorCode.invalid_partitions, message)
        num_partitions = topic.num_partitions
        if num_partitions == -1:
            num_partitions = self.settings.default_num_partitions
        rf = topic.replication_factor
        if rf == -1:
            rf = self.settings.default_replication_factor
        cluster = image.cluster
        try:  # placement errors do not depend on the count: never place more than a batch can hold
            wanted = min(num_partitions, MAX_RECORDS_PER_USER_OP + 1)
            placed = place_replicas(usable_brokers(cluster), wanted, rf, self.rng)
        except PlacementError as exc:
            return ApiError(
                ErrorCode.invalid_replication_factor, f"Unable to replicate the partition {rf} time(s): {exc}"
            )
        parts: _Parts = {}
        for index, replicas in enumerate(placed):
            isr = tuple(b for b in replicas if is_active(cluster, b))
            if not isr:
                message = (
                    f"Unable to replicate the partition {rf} time(s): "
                    "All brokers are currently fenced or in controlled shutdown."
                )
                return ApiError(ErrorCode.invalid_replication_factor, message)
            parts[index] = (replicas, isr)
        return parts, CreateTopicRequestMetadata(topic.name, num_partitions, rf, None, configs)

    # ---------------------------------------------------------------- DeleteTopics, CreatePartitions

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
        """DeleteTopics v1-v7 (:mod:`.topic_deletion`) under this manager's settings, policy and rng."""
        return topic_deletion.delete_topics(
            image, refs, enabled=self.settings.delete_topic_enable, policy=self.policies.delete_topic, rng=self.rng,
            api_version=api_version, validate_only=validate_only, may_describe=may_describe, may_delete=may_delete,
            charge=charge,
        )  # fmt: skip

    def create_partitions(
        self,
        image: MetadataImage,
        topics: Sequence[NewPartitions],
        *,
        validate_only: bool = False,
        may_alter: NameFilter | None = None,
        charge: QuotaCharge | None = None,
    ) -> ControllerResult[tuple[CreatePartitionsResult, ...]]:
        """CreatePartitions v0-v3 (:mod:`.partitions`) with this manager's rng."""
        return partitions.create_partitions(
            image, topics, rng=self.rng, validate_only=validate_only, may_alter=may_alter, charge=charge
        )


def _manual_layout(image: MetadataImage, topic: NewTopic, configs: dict[str, str]) -> _Layout | ApiError:
    """A manual assignment: counts left at -1, one consistent replication factor, partitions 0..n-1,
    each with at least one active replica."""
    if topic.replication_factor != -1:
        message = "A manual partition assignment was specified, but replication factor was not set to -1."
        return ApiError(ErrorCode.invalid_request, message)
    if topic.num_partitions != -1:
        message = "A manual partition assignment was specified, but numPartitions was not set to -1."
        return ApiError(ErrorCode.invalid_request, message)
    cluster = image.cluster
    parts: _Parts = {}
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
    return parts, CreateTopicRequestMetadata(topic.name, None, None, assignments, configs)


def _topic_records(
    image: MetadataImage, name: str, topic_id: uuid.UUID, configs: Mapping[str, str], parts: _Parts
) -> list[MetadataRecord]:
    """A new topic's records, as Kafka orders them: its TopicRecord, its ConfigRecords, its partitions."""
    records: list[MetadataRecord] = [TopicRecord(name=cast(TopicName, name), topic_id=topic_id)]
    topic_type = i8(int(ConfigResourceType.TOPIC))
    records.extend(
        ConfigRecord(resource_type=topic_type, resource_name=name, name=key, value=value)
        for key, value in configs.items()
    )
    for index in sorted(parts):
        replicas, isr = parts[index]
        records.append(partition_record(image, topic_id, index, replicas, isr))
    return records
