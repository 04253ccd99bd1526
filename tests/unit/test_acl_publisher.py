"""AclPublisher and the committer: a large ACL batch goes to the authorizer in a worker thread, later batches
are applied after it in log order, and the writer's answer waits until its batch is applied
(``ksteward.server.acl_publisher``)."""

from __future__ import annotations

import asyncio
import logging
import uuid
from pathlib import Path
from typing import Any

from kio.static.primitive import i8

from ksteward.authorizer import AclBindingFilter, StandardAuthorizer
from ksteward.controller.active import DELETIONS_ON_THE_LOOP, Controller
from ksteward.metadata.image import acl_binding
from ksteward.metadata.loader import load
from ksteward.metadata.records import AccessControlEntryRecord, RemoveAccessControlEntryRecord
from ksteward.server.acl_publisher import ACL_CHANGES_ON_THE_LOOP, AclPublisher
from ksteward.server.committer import GroupCommitter

LOGGER = logging.getLogger("test")


def acl(name: str, operation: int = 3) -> AccessControlEntryRecord:
    return AccessControlEntryRecord(
        id=uuid.uuid4(), resource_type=i8(2), resource_name=name, pattern_type=i8(3), principal="User:alice",
        host="*", operation=i8(operation), permission_type=i8(3),
    )  # fmt: skip


def authorizer(*records: AccessControlEntryRecord) -> StandardAuthorizer:
    auth = StandardAuthorizer()
    auth.load_snapshot([(r.id, acl_binding(r)) for r in records])
    return auth


def reads(auth: StandardAuthorizer, topic: str) -> bool:
    return auth.authorize("User:alice", "10.0.0.1", "READ", "TOPIC", topic).name == "ALLOWED"


def test_a_small_batch_is_applied_at_once() -> None:
    gone = acl("gone")
    auth = authorizer(gone)
    publisher = AclPublisher(auth)
    assert publisher.publish(7, [RemoveAccessControlEntryRecord(id=gone.id), acl("new")]) is None
    assert not reads(auth, "gone") and reads(auth, "new")
    assert publisher.publish(8, ["not an ACL record"]) is None


def test_a_large_batch_is_applied_later_and_the_next_batches_after_it_in_log_order() -> None:
    async def run() -> tuple[bool, bool, bool, int]:
        many = [acl(f"t{i}") for i in range(ACL_CHANGES_ON_THE_LOOP + 1)]
        auth = authorizer(*many)
        publisher = AclPublisher(auth)
        removal = [RemoveAccessControlEntryRecord(id=r.id) for r in many]
        large = publisher.publish(10, removal)
        assert large is not None and not large.done()
        kept_until_applied = reads(auth, "t0") or reads(auth, f"t{len(many) - 1}")  # nothing removed yet, or some
        again = acl("t0")
        # Small, but behind the large one: applied after it, or the removal of t0 would undo it.
        small = publisher.publish(11, [again])
        assert small is not None
        await small
        return kept_until_applied, large.done(), reads(auth, "t0"), sum(reads(auth, r.resource_name) for r in many)

    kept_until_applied, large_done, t0_readable, readable = asyncio.run(run())
    assert kept_until_applied
    assert large_done and t0_readable  # the later batch's ACL survives the earlier batch's removal of t0
    assert readable == 1  # only t0, through the later batch's ACL


def test_an_unevaluable_acl_is_counted_not_applied() -> None:
    async def run() -> int:
        publisher = AclPublisher(authorizer())
        bad = AccessControlEntryRecord(
            id=uuid.uuid4(), resource_type=i8(1), resource_name="x", pattern_type=i8(3), principal="User:alice",
            host="*", operation=i8(3), permission_type=i8(3),
        )  # fmt: skip
        applying = publisher.publish(1, [bad, *[acl(f"t{i}") for i in range(ACL_CHANGES_ON_THE_LOOP)]])
        assert applying is not None
        await applying
        return publisher.errors

    assert asyncio.run(run()) == 1  # resource type ANY (1): no binding can hold it


def test_the_writers_answer_waits_until_the_publisher_has_applied_its_batch(tmp_path: Path) -> None:
    async def run() -> tuple[bool, bool, int]:
        image, log = load(tmp_path, LOGGER)
        applied: asyncio.Future[None] = asyncio.get_running_loop().create_future()

        def on_publish(_: Any, records: list[Any]) -> asyncio.Future[None] | None:
            return applied if records else None

        committer = GroupCommitter(log, image, epoch=1, snapshot_bytes=1 << 30, on_publish=on_publish)
        committer.start()
        future = committer.append([acl("a")])
        while committer.published.offset < 0:  # durable and visible: the publisher has the batch
            await asyncio.sleep(0.001)
        answered_before = future.done()
        applied.set_result(None)
        offset = await future
        await committer.close(snapshot=False)
        log.close()
        return answered_before, future.done(), offset

    answered_before, answered_after, offset = asyncio.run(run())
    assert not answered_before and answered_after and offset == 0


def test_a_large_deletion_matches_again_when_the_acls_change_while_it_is_replayed(tmp_path: Path) -> None:
    """DeleteAcls of more than ``DELETIONS_ON_THE_LOOP`` ACLs is replayed in a worker thread. A CreateAcls that
    commits meanwhile changes the ACLs, so the filters are matched again and its ACL is deleted too, as it would
    be had the deletion run after it on the loop."""

    async def run() -> tuple[int, int]:
        image, log = load(tmp_path, LOGGER)
        committer = GroupCommitter(log, image, epoch=1, snapshot_bytes=1 << 30)
        committer.start()
        controller = Controller(committer)
        many = [acl_binding(acl(f"t{i}")) for i in range(DELETIONS_ON_THE_LOOP + 1)]
        assert not any(e.code for e in await controller.create_acls(many))
        alices = AclBindingFilter(principal="User:alice")
        # Both start in this turn: the deletion reaches its worker thread, then the creation commits.
        deleted, created = await asyncio.gather(
            controller.delete_acls([alices]), controller.create_acls([acl_binding(acl("late"))])
        )
        assert not any(e.code for e in created)
        left = len(committer.latest.acls)
        await committer.close(snapshot=False)
        log.close()
        return len(deleted[0].matching), left

    matched, left = asyncio.run(run())
    assert matched == DELETIONS_ON_THE_LOOP + 2 and left == 0
