"""The ACL part of ``ksteward apply``: one change (ACLs to create, ACLs to delete), applied so that no client is
ever denied in between.

- **On ksteward** (the server serves CreateAcls v4, docs/acl-transactions.md): one request, written by the
  controller as one metadata batch, only if no ACL changed since the offset the plan read (``planned_at``).
  Readers and the authorizer see the whole change or none of it.
- **Anywhere else** (real Kafka, or ``--no-atomic``): every creation first, then every deletion, each in requests
  of at most :data:`CHUNK` ACLs (a KRaft controller refuses more than 10,000 records in one request, KAFKA-14996).
  A client keeps every right it had until the rights replacing it exist, so it is never denied in between; for a
  moment it holds both (the union), which denies nothing. Each step is reported as it is done. Nothing can check
  the plan's precondition there: a change made between plan and apply is not seen.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ksteward.authorizer import AclBinding
from ksteward.cli.acls.backend import AclBackend
from ksteward.cli.admin_common import CommandError

#: ACLs per CreateAcls / DeleteAcls request in the safe order: half of Kafka's per-request cap (10,000).
CHUNK = 5_000
_INVALID_UPDATE_VERSION = 95  # CreateAcls v4's precondition failure

Report = Callable[[str], None]


class PreconditionFailed(CommandError):
    """The ACLs changed between plan and apply; nothing was applied."""


@dataclass(frozen=True, slots=True)
class AclDelta:
    """ACLs to create and ACLs to delete (whole bindings), and the metadata offset the ACLs were read at for the
    plan (DescribeAcls v4's ``MetadataOffset``; -1 when the plan was read from a server without it)."""

    create: tuple[AclBinding, ...] = ()
    delete: tuple[AclBinding, ...] = ()
    planned_at: int = -1

    @property
    def empty(self) -> bool:
        return not self.create and not self.delete


@dataclass(slots=True)
class AclApplyResult:
    """What was done: ``mode`` is ``atomic`` or ``safe-order``; ``steps`` one line per request, in order."""

    mode: str
    created: int = 0
    deleted: int = 0
    steps: list[str] = field(default_factory=list)
    #: The offset of the ACL change's batch (atomic mode), for read-your-writes.
    offset: int | None = None


def creation_values(acl: AclBinding) -> dict[str, Any]:
    """CreateAcls' creation entry for ``acl``."""
    return {"resource_type": int(acl.resource_type), "resource_name": acl.resource_name,
            "resource_pattern_type": int(acl.pattern_type), "principal": acl.principal, "host": acl.host,
            "operation": int(acl.operation), "permission_type": int(acl.permission_type)}  # fmt: skip


def exact_filter_values(acl: AclBinding) -> dict[str, Any]:
    """The DeleteAcls filter entry that matches ``acl`` and nothing else."""
    return {"resource_type_filter": int(acl.resource_type), "resource_name_filter": acl.resource_name,
            "pattern_type_filter": int(acl.pattern_type), "principal_filter": acl.principal, "host_filter": acl.host,
            "operation": int(acl.operation), "permission_type": int(acl.permission_type)}  # fmt: skip


def apply_atomically(client: Any, change: AclDelta, report: Report) -> AclApplyResult:
    """One CreateAcls v4 through ``client`` (an ``admin_client.AdminClient``); raises :class:`PreconditionFailed`
    when the ACLs changed after ``change.planned_at``, :class:`CommandError` for any other refusal."""
    from ksteward.cli.admin_client import AdminError

    result = AclApplyResult("atomic")
    if change.empty:
        return result
    try:
        created, deleted, offset = client.replace_acls(change.create, change.delete, unchanged_since=change.planned_at)
    except AdminError as exc:
        if exc.code == _INVALID_UPDATE_VERSION:
            raise PreconditionFailed(f"the ACLs changed since the plan: {exc}") from None
        raise CommandError(f"the ACL change was refused, nothing was applied: {exc}") from None
    result.created, result.deleted, result.offset = created, deleted, offset
    result.steps.append(
        f"ACLs: {created} created and {deleted} deleted in one atomic change (metadata offset {offset})"
    )
    report(result.steps[-1])
    return result


def check_precondition(client: Any, change: AclDelta) -> None:
    """An empty CreateAcls v4 with ``validate_only``: raises :class:`PreconditionFailed` if an ACL changed after
    ``change.planned_at``, writing nothing. ``ksteward apply`` runs it before its first step, so a stale plan
    changes nothing at all (not even its topics). The entries are not sent: for 10^5 of them that would cost
    seconds, and the change itself checks them all before writing any."""
    from ksteward.cli.admin_client import AdminError

    if change.planned_at < 0:
        return
    try:
        client.replace_acls((), (), unchanged_since=change.planned_at, validate_only=True)
    except AdminError as exc:
        if exc.code == _INVALID_UPDATE_VERSION:
            raise PreconditionFailed(f"the ACLs changed since the plan: {exc}") from None
        raise CommandError(f"the ACL change would be refused, nothing was applied: {exc}") from None


def _chunks(items: Sequence[AclBinding], size: int) -> list[Sequence[AclBinding]]:
    return [items[i : i + size] for i in range(0, len(items), size)]


def apply_in_safe_order(backend: AclBackend, change: AclDelta, report: Report, *, chunk: int = CHUNK) -> AclApplyResult:
    """Every creation, then every deletion, through ``backend`` (confluent-kafka for real Kafka); each request is
    reported once done. A failure stops at once: what was done is reported, and the rights created so far
    only add to what clients had."""
    result = AclApplyResult("safe-order")
    batches = _chunks(change.create, chunk)
    for n, batch in enumerate(batches, 1):
        backend.create(batch)
        result.created += len(batch)
        result.steps.append(f"ACLs: created {len(batch)} (step {n} of {len(batches)} creations)")
        report(result.steps[-1])
    batches = _chunks(change.delete, chunk)
    for n, batch in enumerate(batches, 1):
        deleted = backend.delete([a.to_filter() for a in batch])
        result.deleted += len(deleted)
        result.steps.append(f"ACLs: deleted {len(deleted)} (step {n} of {len(batches)} deletions)")
        report(result.steps[-1])
    return result
