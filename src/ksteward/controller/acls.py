"""ACL mutations on the controller: CreateAcls and DeleteAcls, as Kafka's ``AclControlManager``.

Pure record generation over typed values: given the image and the bindings (or filters) the broker
parsed, return the records to commit and one result per element, as a ``ControllerResult``. The broker
has already refused what cannot be parsed (``broker/acls.py``); here each element is validated on its
own (``validate_new_acl``, Kafka's ``AclControlManager.validateNewAcl``; ``validateFilter``) and a
failure is reported for that element only. The request is not transactional, but its records are one
atomic batch. Identity is the 7-tuple: a duplicate creation succeeds and writes nothing. One request
may create or remove at most ``MAX_RECORDS_PER_USER_OP`` ACLs, all or nothing (KAFKA-14996).

``replace_acls`` is ksteward's CreateAcls v4 (``protocol.acl_transactions``): creations and deletions in one
batch, all or nothing, with a precondition on the ACLs' last change (docs/acl-transactions.md).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from kio.schema.errors import ErrorCode
from kio.static.primitive import i8

from ksteward.authorizer import AclBinding, AclBindingFilter, InvalidAclError, PatternType, validate_new_acl
from ksteward.controller.result import (
    EXCESSIVELY_LARGE_BATCH,
    MAX_RECORDS_PER_USER_OP,
    NO_ERROR,
    ApiError,
    ControllerResult,
)
from ksteward.metadata.ids import random_uuid
from ksteward.metadata.image import MetadataImage
from ksteward.metadata.records import AccessControlEntryRecord, RemoveAccessControlEntryRecord

_UNKNOWN_PATTERN_FILTER = ApiError(ErrorCode.invalid_request, "Unknown patternFilter.")
_UNKNOWN_ENTRY_FILTER = ApiError(ErrorCode.invalid_request, "Unknown entryFilter.")


@dataclass(frozen=True, slots=True)
class AclDeletionResult:
    """One DeleteAcls filter's outcome: its error, and the ACLs it matched (each removed by this request)."""

    error: ApiError
    matching: tuple[AclBinding, ...] = ()


def _record(acl_id: uuid.UUID, acl: AclBinding) -> AccessControlEntryRecord:
    return AccessControlEntryRecord(
        id=acl_id,
        resource_type=i8(acl.resource_type),
        resource_name=acl.resource_name,
        pattern_type=i8(acl.pattern_type),
        principal=acl.principal,
        host=acl.host,
        operation=i8(acl.operation),
        permission_type=i8(acl.permission_type),
    )


def _filter_error(acl_filter: AclBindingFilter) -> ApiError | None:
    """Kafka's ``AclControlManager.validateFilter``: no UNKNOWN in the pattern part, nor in the entry part."""
    if acl_filter.resource_type.is_unknown or acl_filter.pattern_type.is_unknown:
        return _UNKNOWN_PATTERN_FILTER
    if acl_filter.operation.is_unknown or acl_filter.permission_type.is_unknown:
        return _UNKNOWN_ENTRY_FILTER
    return None


class AclControlManager:
    """Kafka's ``AclControlManager``, stateless: the ACLs and their 7-tuple index live in ``image.acls``."""

    def create_acls(self, image: MetadataImage, creations: Sequence[AclBinding]) -> ControllerResult[list[ApiError]]:
        """One ``ApiError`` per creation (``NO_ERROR`` for a created or already present ACL)."""
        existing = image.acls.by_binding
        results: list[ApiError] = []
        records: list[AccessControlEntryRecord] = []
        pending: set[AclBinding] = set()
        taken: set[uuid.UUID] = set()
        for acl in creations:
            try:
                validate_new_acl(acl)
            except InvalidAclError as exc:
                results.append(ApiError(ErrorCode.invalid_request, str(exc)))
                continue
            results.append(NO_ERROR)
            if acl in existing or acl in pending:
                continue  # a duplicate is a silent success that writes nothing
            pending.add(acl)
            acl_id = random_uuid(image.acls, taken)
            taken.add(acl_id)
            records.append(_record(acl_id, acl))
        if len(records) > MAX_RECORDS_PER_USER_OP:
            too_large = ApiError(ErrorCode.policy_violation, EXCESSIVELY_LARGE_BATCH)
            return ControllerResult(records=(), response=[too_large for _ in creations])
        return ControllerResult(records=records, response=results)

    def delete_acls(
        self, image: MetadataImage, filters: Sequence[AclBindingFilter]
    ) -> ControllerResult[list[AclDeletionResult]]:
        """One ``AclDeletionResult`` per filter. Every filter matches the ACLs as they were before the request,
        so an ACL two filters match is listed by both and removed once."""
        removed: set[uuid.UUID | None] = set()
        records: list[RemoveAccessControlEntryRecord] = []
        results: list[AclDeletionResult] = []
        for acl_filter in filters:
            error = _filter_error(acl_filter)
            if error is not None:
                results.append(AclDeletionResult(error))
                continue
            matched = image.acls.matching(acl_filter)
            new_ids = [acl_id for _, acl_id in matched if acl_id not in removed]
            if len(removed) + len(new_ids) > MAX_RECORDS_PER_USER_OP:
                results.append(AclDeletionResult(ApiError(ErrorCode.unknown_server_error)))
                continue
            for acl_id in new_ids:
                removed.add(acl_id)
                records.append(RemoveAccessControlEntryRecord(id=acl_id))
            results.append(AclDeletionResult(NO_ERROR, tuple(acl for acl, _ in matched)))
        return ControllerResult(records=records, response=results)


# --- CreateAcls v4: one atomic change with a precondition (docs/acl-transactions.md) -------------------------

#: The records one CreateAcls v4 may write: far above the 10^5-ACL replace it is built for (2 x 10^5 records),
#: and a bound on what the controller builds in memory for one request.
MAX_ACL_TRANSACTION_RECORDS = 500_000
#: The estimated bytes of that one batch. A follower fetches a batch whole (Kafka's ``minOneMessage``), and a
#: fetch response must fit a frame (``socket.request.max.bytes``, 100 MiB by default): a third of it leaves room.
MAX_ACL_TRANSACTION_BYTES = 32 * 1024 * 1024
_RECORD_OVERHEAD_BYTES = 48  # a record's frame, id and fixed fields, rounded up
_PRECONDITION_FAILED = ErrorCode.invalid_update_version


@dataclass(frozen=True, slots=True)
class AclTransactionResult:
    """A CreateAcls v4's outcome. ``error`` is NO_ERROR when the whole change was applied (or, validate-only,
    would be); otherwise nothing was written. ``changed_at`` is the offset of the last ACL change: the
    controller fills it in once the batch is appended. Entry errors are (index in the request, error)."""

    error: ApiError
    created: int = 0
    deleted: int = 0
    changed_at: int = -1
    creation_errors: tuple[tuple[int, ApiError], ...] = ()
    deletion_errors: tuple[tuple[int, ApiError], ...] = ()


def _exact_binding(acl_filter: AclBindingFilter) -> AclBinding | None:
    """The one binding a filter that names every field matches (a dictionary lookup instead of a scan)."""
    if not acl_filter.matches_at_most_one or acl_filter.pattern_type not in (PatternType.LITERAL,
                                                                             PatternType.PREFIXED):  # fmt: skip
        return None
    try:
        return AclBinding(acl_filter.resource_type, acl_filter.resource_name or "", acl_filter.pattern_type,
                          acl_filter.principal or "", acl_filter.host or "", acl_filter.operation,
                          acl_filter.permission_type)  # fmt: skip
    except InvalidAclError:
        return None


def _removals(image: MetadataImage, filters: Sequence[AclBindingFilter]) -> dict[uuid.UUID | None, None]:
    """The ids of every ACL a filter matches, in the ACLs as they were before the request."""
    removed: dict[uuid.UUID | None, None] = {}
    by_binding = image.acls.by_binding
    for acl_filter in filters:
        exact = _exact_binding(acl_filter)
        if exact is not None:
            if exact in by_binding:
                removed[by_binding[exact]] = None
            continue
        for _, acl_id in image.acls.matching(acl_filter):
            removed[acl_id] = None
    return removed


def _entry_errors(
    creations: Sequence[AclBinding | ApiError], filters: Sequence[AclBindingFilter | ApiError]
) -> tuple[list[tuple[int, ApiError]], list[tuple[int, ApiError]]]:
    creation_errors: list[tuple[int, ApiError]] = []
    for index, acl in enumerate(creations):
        if isinstance(acl, ApiError):
            creation_errors.append((index, acl))
            continue
        try:
            validate_new_acl(acl)
        except InvalidAclError as exc:
            creation_errors.append((index, ApiError(ErrorCode.invalid_request, str(exc))))
    deletion_errors: list[tuple[int, ApiError]] = []
    for index, acl_filter in enumerate(filters):
        error = acl_filter if isinstance(acl_filter, ApiError) else _filter_error(acl_filter)
        if error is not None:
            deletion_errors.append((index, error))
    return creation_errors, deletion_errors


def replace_acls(
    image: MetadataImage,
    creations: Sequence[AclBinding | ApiError],
    filters: Sequence[AclBindingFilter | ApiError],
    *,
    unchanged_since: int,
) -> ControllerResult[AclTransactionResult]:
    """CreateAcls v4 on the controller's latest image: every removal and creation as one batch, or nothing.

    ``creations`` and ``filters`` hold an ``ApiError`` where the broker could not parse the entry. An ACL that
    a filter matches and a creation names again is kept (neither removed nor re-created), so a replace never
    has a window without it, even inside the batch."""
    changed_at = image.acls.changed_at
    if 0 <= unchanged_since < changed_at:
        message = (f"The ACLs changed at metadata offset {changed_at}, after offset {unchanged_since} that the "
                   "change was planned at; nothing was applied. Plan again.")  # fmt: skip
        stale = AclTransactionResult(ApiError(_PRECONDITION_FAILED, message), changed_at=changed_at)
        return ControllerResult((), stale)
    creation_errors, deletion_errors = _entry_errors(creations, filters)
    if creation_errors or deletion_errors:
        message = (f"{len(creation_errors)} creation(s) and {len(deletion_errors)} deletion filter(s) are invalid; "
                   "nothing was applied.")  # fmt: skip
        failed = AclTransactionResult(ApiError(ErrorCode.invalid_request, message), changed_at=changed_at,
                                      creation_errors=tuple(creation_errors),
                                      deletion_errors=tuple(deletion_errors))  # fmt: skip
        return ControllerResult((), failed)
    removed = _removals(image, [f for f in filters if isinstance(f, AclBindingFilter)])
    by_binding = image.acls.by_binding
    new: dict[AclBinding, None] = {}
    for acl in creations:
        assert isinstance(acl, AclBinding)  # the entry errors above were empty
        acl_id = by_binding.get(acl, _ABSENT)
        if acl_id is _ABSENT:
            new[acl] = None
        else:
            removed.pop(acl_id, None)  # kept: already there, and wanted
    return _transaction(image, removed, new)


_ABSENT: Any = object()


def _transaction(
    image: MetadataImage, removed: dict[uuid.UUID | None, None], new: dict[AclBinding, None]
) -> ControllerResult[AclTransactionResult]:
    count = len(removed) + len(new)
    size = count * _RECORD_OVERHEAD_BYTES + sum(
        len(a.resource_name) + len(a.principal) + len(a.host) for a in new
    )  # str lengths: a close enough bound of the UTF-8 bytes for names that are mostly ASCII
    if count > MAX_ACL_TRANSACTION_RECORDS or size > MAX_ACL_TRANSACTION_BYTES:
        message = (
            f"{EXCESSIVELY_LARGE_BATCH} This change writes {count} records (about {size} bytes); one "
            f"change may write {MAX_ACL_TRANSACTION_RECORDS} records and {MAX_ACL_TRANSACTION_BYTES} bytes."
        )
        too_large = ApiError(ErrorCode.policy_violation, message)
        return ControllerResult((), AclTransactionResult(too_large, changed_at=image.acls.changed_at))
    records: list[AccessControlEntryRecord | RemoveAccessControlEntryRecord] = [
        RemoveAccessControlEntryRecord(id=acl_id) for acl_id in removed
    ]
    taken: set[uuid.UUID] = set()
    stored = image.acls.records  # the persistent map itself: a membership test in C, not Mapping's Python path
    for acl in new:
        acl_id = random_uuid(stored, taken)
        taken.add(acl_id)
        records.append(_record(acl_id, acl))
    result = AclTransactionResult(NO_ERROR, created=len(new), deleted=len(removed), changed_at=image.acls.changed_at)
    return ControllerResult(records, result)
