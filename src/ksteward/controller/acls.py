"""ACL mutations on the controller: CreateAcls and DeleteAcls, as Kafka's ``AclControlManager``.

Pure record generation: given the current ACLs and a request, return the records to commit and the
per-element results. Validation runs in Kafka's layers (authorizer spec §3.3, §3.5) and every
failure is reported for its element only; the request is not transactional, but each request's
records are one atomic batch. Identity is the 7-tuple; a duplicate creation succeeds silently and
writes nothing. One request may create or remove at most 10,000 ACLs (§4.7), all or nothing.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kio.schema.errors import ErrorCode
from kio.static.primitive import i8

from ksteward.authorizer import AclBinding, AclBindingFilter, AclOperation, AclPermissionType, PatternType, ResourceType
from ksteward.controller.result import MAX_RECORDS_PER_USER_OP
from ksteward.metadata.ids import random_uuid
from ksteward.metadata.records import AccessControlEntryRecord, RemoveAccessControlEntryRecord

CLUSTER_NAME = "kafka-cluster"

AclTuple = tuple[int, str, int, str, str, int, int]


class MalformedAclRequest(Exception):
    """A raw code of 0 (UNKNOWN) in an enum field: Kafka fails the parse and closes the connection."""


def acl_tuple(record: Any) -> AclTuple:
    return (
        int(record.resource_type),
        record.resource_name,
        int(record.pattern_type),
        record.principal,
        record.host,
        int(record.operation),
        int(record.permission_type),
    )


def binding_of(record: Any) -> AclBinding:
    return AclBinding(
        resource_type=ResourceType.from_code(int(record.resource_type)),
        resource_name=record.resource_name,
        pattern_type=PatternType.from_code(int(record.pattern_type)),
        principal=record.principal,
        host=record.host,
        operation=AclOperation.from_code(int(record.operation)),
        permission_type=AclPermissionType.from_code(int(record.permission_type)),
    )


def _check_raw_codes(*codes: int) -> None:
    if any(int(c) == 0 for c in codes):
        raise MalformedAclRequest("an ACL field carries code 0 (UNKNOWN)")


def _error(code: ErrorCode, message: str | None) -> dict[str, Any]:
    return {"error_code": code, "error_message": message}


_OK = _error(ErrorCode.none, None)


def validate_creation(c: Any, pattern_code: int) -> dict[str, Any] | None:
    """Layers 4 to 6 of §3.3; None when the creation is valid."""
    resource_type = ResourceType.from_code(int(c.resource_type))
    if resource_type is ResourceType.CLUSTER and c.resource_name != CLUSTER_NAME:
        return _error(ErrorCode.invalid_request, "The only valid name for the CLUSTER resource is kafka-cluster")
    if c.resource_name == "":
        return _error(ErrorCode.invalid_request, "Invalid empty resource name")
    if resource_type in (ResourceType.UNKNOWN, ResourceType.ANY):
        return _error(ErrorCode.invalid_request, f"Invalid resourceType {resource_type.name}")
    pattern = PatternType.from_code(pattern_code)
    if pattern not in (PatternType.LITERAL, PatternType.PREFIXED):
        return _error(ErrorCode.invalid_request, f"Invalid patternType {pattern.name}")
    operation = AclOperation.from_code(int(c.operation))
    if operation in (AclOperation.UNKNOWN, AclOperation.ANY):
        return _error(ErrorCode.invalid_request, f"Invalid operation {operation.name}")
    permission = AclPermissionType.from_code(int(c.permission_type))
    if permission not in (AclPermissionType.ALLOW, AclPermissionType.DENY):
        return _error(ErrorCode.invalid_request, f"Invalid permissionType {permission.name}")
    if not c.resource_name:
        return _error(ErrorCode.invalid_request, "Resource name should not be empty")
    principal_type, sep, _ = c.principal.partition(":")
    if not sep or not principal_type:
        # Kafka 4.0 (KAFKA-18051) refuses principals it cannot split into type and name.
        return _error(
            ErrorCode.invalid_request,
            f"Could not parse principal from `{c.principal}`: expected principalType:principalName",
        )
    return None


@dataclass
class AclControlManager:
    """Keeps a 7-tuple index of the ACLs in sync with the controller's image."""

    _acls_ref: Mapping[Any, Any] | None = None
    _by_tuple: dict[AclTuple, uuid.UUID] = field(default_factory=dict)

    def _index(self, acls: Mapping[Any, Any]) -> dict[AclTuple, uuid.UUID]:
        if acls is not self._acls_ref:
            self._by_tuple = {acl_tuple(r): acl_id for acl_id, r in acls.items()}
            self._acls_ref = acls
        return self._by_tuple

    def observe(self, before: Mapping[Any, Any], after: Mapping[Any, Any], records: Iterable[Any]) -> None:
        """Advance the index across one committed batch without rebuilding it."""
        if before is not self._acls_ref:
            return  # the index is stale anyway; the next call rebuilds it
        for record in records:
            if isinstance(record, AccessControlEntryRecord):
                self._by_tuple[acl_tuple(record)] = record.id  # type: ignore[assignment]
            elif isinstance(record, RemoveAccessControlEntryRecord):
                old = before.get(record.id)
                if old is not None:
                    self._by_tuple.pop(acl_tuple(old), None)
        self._acls_ref = after

    def create_acls(
        self, acls: Mapping[Any, Any], creations: Iterable[Any], api_version: int
    ) -> tuple[list[Any], list[dict[str, Any]]]:
        creations = list(creations)
        for c in creations:
            _check_raw_codes(c.resource_type, getattr(c, "resource_pattern_type", 3), c.operation, c.permission_type)
        # Layer 3: ANY or MATCH where a concrete value is required fails the whole request.
        for c in creations:
            pattern = int(getattr(c, "resource_pattern_type", 3))
            if int(c.resource_type) == 1 or pattern in (1, 2) or int(c.operation) == 1 or int(c.permission_type) == 1:
                return [], [_error(ErrorCode.unknown_server_error, None) for _ in creations]
        index = self._index(acls)
        results: list[dict[str, Any]] = []
        records: list[Any] = []
        pending: set[AclTuple] = set()
        taken: set[uuid.UUID] = set()
        for c in creations:
            pattern = int(getattr(c, "resource_pattern_type", 3))
            problem = validate_creation(c, pattern)
            if problem is not None:
                results.append(problem)
                continue
            key: AclTuple = (
                int(c.resource_type), c.resource_name, pattern, c.principal, c.host, int(c.operation),
                int(c.permission_type),
            )  # fmt: skip
            results.append(_OK)
            if key in index or key in pending:
                continue  # a duplicate is a silent success that writes nothing
            pending.add(key)
            acl_id = random_uuid(acls, taken)
            taken.add(acl_id)
            records.append(
                AccessControlEntryRecord(
                    id=acl_id,
                    resource_type=i8(key[0]),
                    resource_name=key[1],
                    pattern_type=i8(key[2]),
                    principal=key[3],
                    host=key[4],
                    operation=i8(key[5]),
                    permission_type=i8(key[6]),
                )
            )
        if len(records) > MAX_RECORDS_PER_USER_OP:
            message = "Unable to perform excessively large batch operation."
            return [], [_error(ErrorCode.policy_violation, message) for _ in creations]
        return records, results

    def delete_acls(self, acls: Mapping[Any, Any], filters: Iterable[Any]) -> tuple[list[Any], list[dict[str, Any]]]:
        filters = list(filters)
        for f in filters:
            _check_raw_codes(
                f.resource_type_filter, getattr(f, "pattern_type_filter", 3), f.operation, f.permission_type
            )
        removed: set[Any] = set()
        records: list[Any] = []
        results: list[dict[str, Any]] = []
        for f in filters:
            acl_filter = filter_of(f)
            if PatternType.UNKNOWN is acl_filter.pattern_type or ResourceType.UNKNOWN is acl_filter.resource_type:
                results.append({**_error(ErrorCode.invalid_request, "Unknown patternFilter."), "matching_acls": []})
                continue
            if AclOperation.UNKNOWN is acl_filter.operation or AclPermissionType.UNKNOWN is acl_filter.permission_type:
                results.append({**_error(ErrorCode.invalid_request, "Unknown entryFilter."), "matching_acls": []})
                continue
            # Matched against the ACLs as they were before this request (§3.5).
            matched = [(acl_id, r) for acl_id, r in acls.items() if acl_filter.matches(binding_of(r))]
            new_ids = [acl_id for acl_id, _ in matched if acl_id not in removed]
            if len(removed) + len(new_ids) > MAX_RECORDS_PER_USER_OP:
                results.append({**_error(ErrorCode.unknown_server_error, None), "matching_acls": []})
                continue
            for acl_id in new_ids:
                removed.add(acl_id)
                records.append(RemoveAccessControlEntryRecord(id=acl_id))
            results.append({**_OK, "matching_acls": [_matching_acl(r) for _, r in matched]})
        return records, results


def _matching_acl(record: Any) -> dict[str, Any]:
    return {
        "error_code": ErrorCode.none,
        "error_message": None,
        "resource_type": int(record.resource_type),
        "resource_name": record.resource_name,
        "pattern_type": int(record.pattern_type),
        "principal": record.principal,
        "host": record.host,
        "operation": int(record.operation),
        "permission_type": int(record.permission_type),
    }


def filter_of(request_filter: Any) -> AclBindingFilter:
    """An ``AclBindingFilter`` from a DescribeAcls request or a DeleteAcls filter entry."""
    return AclBindingFilter(
        resource_type=ResourceType.from_code(int(request_filter.resource_type_filter)),
        resource_name=request_filter.resource_name_filter,
        pattern_type=PatternType.from_code(int(getattr(request_filter, "pattern_type_filter", 3))),
        principal=request_filter.principal_filter,
        host=request_filter.host_filter,
        operation=AclOperation.from_code(int(request_filter.operation)),
        permission_type=AclPermissionType.from_code(int(request_filter.permission_type)),
    )
