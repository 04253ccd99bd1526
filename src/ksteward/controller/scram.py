"""SCRAM credentials: validation and record generation for AlterUserScramCredentials.

Pure: given the current image and a request, return the records and the per-user results. The
rules are Kafka's ``ScramControlManager``: a user named twice in one request is DUPLICATE_RESOURCE,
iterations must lie in [mechanism minimum, 16384], deleting a credential that does not exist is
RESOURCE_NOT_FOUND. The server stores salt, iterations and the derived StoredKey and ServerKey,
never the salted password.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kio.schema.errors import ErrorCode
from kio.static.primitive import i32

from ksteward.controller.result import NO_ERROR, ApiError, ControllerResult
from ksteward.metadata.image import MetadataImage
from ksteward.metadata.records import RemoveUserScramCredentialRecord, UserScramCredentialRecord
from ksteward.protocol.sasl import ScramMechanism, credential_from_salted_password

_TWICE = "A user credential cannot be altered twice in the same request"


@dataclass(frozen=True, slots=True)
class ScramAlterationResult:
    """One user's outcome (``AlterUserScramCredentialsResult``)."""

    user: str
    error: ApiError = NO_ERROR


def _mechanism(code: int) -> ScramMechanism | None:
    try:
        return ScramMechanism(code)
    except ValueError:
        return None


def _check_user_and_mechanism(name: str, code: int) -> ApiError | None:
    if not name:
        return ApiError(ErrorCode.unacceptable_credential, "Username must not be empty")
    if _mechanism(code) is None:
        return ApiError(ErrorCode.unsupported_sasl_mechanism, "Unknown SCRAM mechanism")
    return None


def _unacceptable(message: str) -> ApiError:
    return ApiError(ErrorCode.unacceptable_credential, message)


def alter_user_scram_credentials(image: MetadataImage, request: Any) -> ControllerResult[list[ScramAlterationResult]]:
    """The records of every valid deletion and upsertion, and one result per user: deletions, then
    upsertions, then the refused users."""
    deletions: dict[str, Any] = {}
    upsertions: dict[str, Any] = {}
    errors: dict[str, ApiError] = {}

    for d in request.deletions:
        if d.name in errors:
            continue
        if deletions.pop(d.name, None) is not None:
            errors[d.name] = ApiError(ErrorCode.duplicate_resource, _TWICE)
            continue
        problem = _check_user_and_mechanism(d.name, d.mechanism)
        if problem is None and (int(d.mechanism), d.name) not in image.scram:
            problem = ApiError(ErrorCode.resource_not_found, "Attempt to delete a user credential that does not exist")
        if problem is not None:
            errors[d.name] = problem
        else:
            deletions[d.name] = d

    for u in request.upsertions:
        if u.name in errors:
            continue
        if deletions.pop(u.name, None) is not None or upsertions.pop(u.name, None) is not None:
            errors[u.name] = ApiError(ErrorCode.duplicate_resource, _TWICE)
            continue
        problem = _check_user_and_mechanism(u.name, u.mechanism)
        if problem is None:
            mechanism = ScramMechanism(u.mechanism)
            if u.iterations < mechanism.min_iterations:
                problem = _unacceptable("Too few iterations")
            elif u.iterations > mechanism.max_iterations:
                problem = _unacceptable("Too many iterations")
            elif not u.salted_password or not u.salt:
                # Kafka fails deep in HMAC with an unhelpful server error; say what is wrong instead.
                problem = _unacceptable("Salt and salted password must not be empty")
        if problem is not None:
            errors[u.name] = problem
        else:
            upsertions[u.name] = u

    records: list[Any] = []
    results: list[ScramAlterationResult] = []
    for d in deletions.values():
        records.append(RemoveUserScramCredentialRecord(name=d.name, mechanism=d.mechanism))
        results.append(ScramAlterationResult(d.name))
    for u in upsertions.values():
        cred = credential_from_salted_password(ScramMechanism(u.mechanism), u.salt, u.salted_password, u.iterations)
        records.append(
            UserScramCredentialRecord(
                name=u.name,
                mechanism=u.mechanism,
                salt=cred.salt,
                stored_key=cred.stored_key,
                server_key=cred.server_key,
                iterations=i32(cred.iterations),
            )
        )
        results.append(ScramAlterationResult(u.name))
    results.extend(ScramAlterationResult(name, error) for name, error in errors.items())
    return ControllerResult(records, results)
