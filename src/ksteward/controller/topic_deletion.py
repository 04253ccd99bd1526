"""DeleteTopics v1-v6, and v7 with ``validate_only`` (KIP-934; a ksteward extension), on the controller.

Kafka's ``ControllerApis.deleteTopics`` and ``ReplicationControlManager.deleteTopics`` in three steps:

1. :func:`_sort_refs`: each entry is a name or an id, never both nor neither; a name or id given twice
   fails every time it appears (once in the results).
2. :func:`_targets`: ids are resolved first and an unknown id is reported without an authorization
   check (ids are not secret); then DESCRIBE and DELETE decide. A name the caller may not DESCRIBE is
   denied whether or not it exists, so the answer reveals nothing; a name that maps to an id already
   given is refused.
3. :func:`_removals`: the DeleteTopicPolicy, then the mutation quota, then one RemoveTopicRecord per
   topic, up to ``MAX_RECORDS_PER_USER_OP``.

The results are shuffled, as Kafka's are, so that their order reveals nothing about which topics exist.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import cast

from kio.schema.errors import ErrorCode

from ksteward.controller.result import MAX_RECORDS_PER_USER_OP, NO_ERROR, ApiError, ControllerResult
from ksteward.controller.topic_requests import DeleteTopicResult, NameFilter, QuotaCharge, TopicRef, allowed
from ksteward.metadata.image import MetadataImage
from ksteward.metadata.records import MetadataRecord, RemoveTopicRecord
from ksteward.policy import DeleteTopicPolicy, DeleteTopicRequestMetadata, policy_error

__all__ = ["delete_topics"]

_DENIED = "Topic authorization failed."


@dataclass
class _Deletion:
    """One request's state between the steps: the entries still in play, and the results so far."""

    names: dict[str, None] = field(default_factory=dict)
    ids: dict[uuid.UUID, None] = field(default_factory=dict)
    duplicate_ids: dict[uuid.UUID, None] = field(default_factory=dict)
    results: list[DeleteTopicResult] = field(default_factory=list)

    def fail(self, name: str | None, topic_id: uuid.UUID | None, code: ErrorCode, message: str | None) -> None:
        self.results.append(DeleteTopicResult(name, topic_id, ApiError(code, message)))


def delete_topics(
    image: MetadataImage,
    refs: Sequence[TopicRef],
    *,
    enabled: bool,
    policy: DeleteTopicPolicy | None,
    rng: random.Random,
    api_version: int,
    validate_only: bool = False,
    may_describe: NameFilter | None = None,
    may_delete: NameFilter | None = None,
    charge: QuotaCharge | None = None,
) -> ControllerResult[tuple[DeleteTopicResult, ...]]:
    """``may_describe``/``may_delete`` decide DESCRIBE and DELETE on the named topics (``None`` for
    both when the caller has DELETE on the cluster). ``enabled`` is ``delete.topic.enable``."""
    if not enabled:
        code = ErrorCode.topic_deletion_disabled if api_version >= 3 else ErrorCode.invalid_request
        return ControllerResult((), tuple(DeleteTopicResult(r.name, r.topic_id, ApiError(code)) for r in refs))
    deletion = _sort_refs(refs)
    targets = _targets(image, deletion, may_describe, may_delete)
    records = _removals(image, deletion, targets, policy, charge)
    rng.shuffle(deletion.results)
    return ControllerResult(() if validate_only else tuple(records), tuple(deletion.results))


def _sort_refs(refs: Sequence[TopicRef]) -> _Deletion:
    """The well-formed entries, named once, by name and by id; every other entry fails."""
    deletion = _Deletion()
    names, ids, duplicate_ids = deletion.names, deletion.ids, deletion.duplicate_ids
    duplicate_names: dict[str, None] = {}
    for ref in refs:
        if ref.name is None:
            if ref.topic_id is None:
                deletion.fail(None, None, ErrorCode.invalid_request, "Neither topic name nor id were specified.")
            elif ref.topic_id in duplicate_ids or ref.topic_id in ids:
                duplicate_ids[ref.topic_id] = None
                ids.pop(ref.topic_id, None)
            else:
                ids[ref.topic_id] = None
        elif ref.topic_id is not None:
            message = "You may not specify both topic name and topic id."
            deletion.fail(ref.name, ref.topic_id, ErrorCode.invalid_request, message)
        elif ref.name in duplicate_names or ref.name in names:
            duplicate_names[ref.name] = None
            names.pop(ref.name, None)
        else:
            names[ref.name] = None
    for name in duplicate_names:
        deletion.fail(name, None, ErrorCode.invalid_request, "Duplicate topic name.")
    for topic_id in duplicate_ids:
        deletion.fail(None, topic_id, ErrorCode.invalid_request, "Duplicate topic id.")
    return deletion


def _targets(
    image: MetadataImage, deletion: _Deletion, may_describe: NameFilter | None, may_delete: NameFilter | None
) -> dict[uuid.UUID, str]:
    """The topics the caller may delete, id to name, in the order Kafka deletes them."""
    to_authorize: dict[str, None] = dict(deletion.names)
    id_to_name: dict[uuid.UUID, str] = {}
    for topic_id in deletion.ids:
        found = image.topics.by_id.get(topic_id)
        if found is None:  # ids are not secret: no authorization check first
            deletion.fail(None, topic_id, ErrorCode.unknown_topic_id, "This server does not host this topic ID.")
        else:
            to_authorize[found.name] = None
            id_to_name[topic_id] = found.name
    describable = allowed(to_authorize, may_describe)
    deletable = allowed(to_authorize, may_delete)
    for topic_id, name in list(id_to_name.items()):
        if name not in deletable:
            shown = name if name in describable else None
            deletion.fail(shown, topic_id, ErrorCode.topic_authorization_failed, _DENIED)
            del id_to_name[topic_id]
    duplicate_ids = deletion.duplicate_ids
    for name in deletion.names:
        found = image.topics.by_name.get(name)
        if name not in describable:
            deletion.fail(name, None, ErrorCode.topic_authorization_failed, _DENIED)
        elif found is None:
            message = "This server does not host this topic-partition."
            deletion.fail(name, None, ErrorCode.unknown_topic_or_partition, message)
        elif name not in deletable:
            deletion.fail(name, None, ErrorCode.topic_authorization_failed, _DENIED)
        elif (found_id := cast(uuid.UUID, found.id)) in duplicate_ids or found_id in id_to_name:
            duplicate_ids[found_id] = None
            id_to_name.pop(found_id, None)
            message = "The provided topic name maps to an ID that was already supplied."
            deletion.fail(name, found_id, ErrorCode.invalid_request, message)
        else:
            id_to_name[found_id] = name
    return id_to_name


def _removals(
    image: MetadataImage,
    deletion: _Deletion,
    targets: dict[uuid.UUID, str],
    policy: DeleteTopicPolicy | None,
    charge: QuotaCharge | None,
) -> list[MetadataRecord]:
    """One RemoveTopicRecord per target the policy and the quota let through, and its result."""
    records: list[MetadataRecord] = []
    for topic_id, name in targets.items():
        error: ApiError | None = None
        if policy is not None:
            error = policy_error(policy, DeleteTopicRequestMetadata(name, topic_id))
        if error is None and charge is not None:
            error = charge(len(image.topics.by_id[topic_id].partitions))
        if error is None and len(records) >= MAX_RECORDS_PER_USER_OP:
            error = ApiError(ErrorCode.unknown_server_error)  # Kafka's bounded record list overflows
        if error is None:
            records.append(RemoveTopicRecord(topic_id=topic_id))
            error = NO_ERROR
        deletion.results.append(DeleteTopicResult(name, topic_id, error))
    return records
