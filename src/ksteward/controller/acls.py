"""ACL mutations on the controller: CreateAcls and DeleteAcls, as Kafka's ``AclControlManager``.

Pure record generation over typed values: given the image and the bindings (or filters) the broker
parsed, return the records to commit and one result per element, as a ``ControllerResult``. The broker
has already refused what cannot be parsed (``broker/acls.py``); here each element is validated on its
own (``validate_new_acl``, Kafka's ``AclControlManager.validateNewAcl``; ``validateFilter``) and a
failure is reported for that element only. The request is not transactional, but its records are one
atomic batch. Identity is the 7-tuple: a duplicate creation succeeds and writes nothing. One request
may create or remove at most ``MAX_RECORDS_PER_USER_OP`` ACLs, all or nothing (KAFKA-14996).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass

from kio.schema.errors import ErrorCode
from kio.static.primitive import i8

from ksteward.authorizer import AclBinding, AclBindingFilter, InvalidAclError, validate_new_acl
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
