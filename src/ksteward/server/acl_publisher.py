"""Kafka's ``AclPublisher``: each durable batch's ACL changes, applied to the node's authorizer in log order.

A batch of a few ACL changes is applied at once, on the event loop. A large one, such as a DeleteAcls of
10,000 ACLs (about 10 µs each), would hold the loop for tens of milliseconds, so it is applied in a worker
thread while the loop serves other requests. The ``StandardAuthorizer`` is made for that: a read never acts
on a half-applied change, and a read during the batch sees the ACLs before or after each change, as Kafka's
request threads do while its ``AclPublisher`` applies a delta (only a snapshot load is one step, KIP-801).

Every later batch waits for the one before it, so the authorizer takes the changes in log order. The answer
to the request that wrote a batch waits until the batch is applied (``GroupCommitter``), so a client that
deletes an ACL is never allowed by it afterwards on this node.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Sequence

from ksteward.authorizer import AclBinding, StandardAuthorizer
from ksteward.metadata.image import acl_binding_or_none
from ksteward.metadata.records import AccessControlEntryRecord, RemoveAccessControlEntryRecord
from ksteward.safe_log import log_failure

log = logging.getLogger(__name__)

#: A batch with more ACL changes than this goes to the authorizer in a worker thread (about 10 ms of work).
ACL_CHANGES_ON_THE_LOOP = 1_000

AclChange = AccessControlEntryRecord | RemoveAccessControlEntryRecord


class AclPublisher:
    def __init__(self, authorizer: StandardAuthorizer) -> None:
        self._authorizer = authorizer
        self.errors = 0  # ACL records the authorizer could not apply (MetadataErrorCount)
        self._applying: asyncio.Future[None] | None = None  # the newest batch not applied yet

    def publish(self, offset: int, records: Sequence[object]) -> asyncio.Future[None] | None:
        """Apply the ACL changes among ``records`` (a batch ending at ``offset``); a future when they are applied
        later (a large batch, or one behind a large batch), None when they are applied already."""
        changes: list[AclChange] = [
            r for r in records if isinstance(r, AccessControlEntryRecord | RemoveAccessControlEntryRecord)
        ]
        if not changes:
            return None
        before = self._applying
        if (before is None or before.done()) and len(changes) <= ACL_CHANGES_ON_THE_LOOP:
            self.apply(changes, offset)
            return None
        applying = asyncio.ensure_future(self._apply_after(before, changes, offset))
        self._applying = applying
        return applying

    async def _apply_after(self, before: asyncio.Future[None] | None, changes: list[AclChange], offset: int) -> None:
        if before is not None and not before.done():
            await asyncio.wait([before])
        try:
            if len(changes) <= ACL_CHANGES_ON_THE_LOOP:
                self.apply(changes, offset)
            else:
                await asyncio.to_thread(self.apply, changes, offset)
        except Exception as exc:  # as an error on the loop would be: logged, and the next batches still applied
            self.errors += 1
            log_failure(log, f"applying the ACL changes of the batch ending at offset {offset} failed", exc,
                        stack_level=logging.ERROR)  # fmt: skip

    def apply(self, changes: list[AclChange], offset: int) -> None:
        auth = self._authorizer
        for record in changes:
            if isinstance(record, AccessControlEntryRecord):
                binding = binding_or_none(record)
                if binding is not None:
                    auth.add_acl(record.id, binding, offset=offset)
                else:
                    self.errors += 1
            else:
                with contextlib.suppress(KeyError):  # an ACL skipped as unevaluable
                    auth.remove_acl(record.id, offset=offset)


def binding_or_none(record: AccessControlEntryRecord) -> AclBinding | None:
    """The record as a binding; None (logged) for codes no binding can hold, such as ANY in a
    foreign log. CreateAcls never writes those, and such an ACL could never match a request."""
    binding = acl_binding_or_none(record)
    if binding is None:
        log.warning("ignoring ACL %s that cannot be evaluated", record.id)
    return binding
