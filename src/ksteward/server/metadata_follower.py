"""A broker-only node follows ``__cluster_metadata`` from the controller (KIP-595 observer, KIP-630 snapshots).

The asyncio driver around the sans-IO core (docs/raft.md): it connects to the controller listener, and loops
``RaftObserver.next_request`` -> send -> ``RaftObserver.on_response`` -> ``FollowerLog.apply``, with a back-off
after an error. The log is the broker's own ``metadata.log.dir`` (opened and locked by the caller), so a
restarted broker resumes from its log end.

Only committed records reach the image: after each response, the batches below the high watermark that the
image does not hold yet are replayed (``metadata.loader.replay_batches``) into a new ``MetadataImage``, and the
ACL changes between the two images go to the broker's ``StandardAuthorizer``, at the new image's offset. A
snapshot install builds a fresh image from the snapshot and swaps image and authorizer whole
(``StandardAuthorizer.load_snapshot`` replaces the ACL set in one step, so an ``authorize`` sees the old set or
the new one). That is Kafka's ``MetadataLoader``: a log delta, or a snapshot delta, published once applied.

At start-up the image is the one ``metadata.loader.load`` rebuilt from the local log. Every record in it was
committed when it was fetched: the leader serves records only up to its high watermark (docs/raft.md, "Fetch
serves records only up to the high watermark").
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from itertools import takewhile

from ksteward.authorizer import StandardAuthorizer
from ksteward.metadata.batch import Batch
from ksteward.metadata.delta import image_from_records
from ksteward.metadata.epochs import OffsetAndEpoch
from ksteward.metadata.image import MetadataImage
from ksteward.metadata.loader import replay_batches
from ksteward.metadata.log import MetadataLog, MetadataLogError
from ksteward.metadata.records import (
    AccessControlEntryRecord,
    MetadataRecord,
    RemoveAccessControlEntryRecord,
    decode_record,
)
from ksteward.metadata.snapshot_file import read_snapshot
from ksteward.raft.follower_log import FollowerLog
from ksteward.raft.observer import Action, Backoff, InstallSnapshot, LeaderChanged, RaftFatalError, RaftObserver
from ksteward.server import fatal
from ksteward.server.acl_publisher import ACL_CHANGES_ON_THE_LOOP, binding_or_none
from ksteward.server.collector import collector_paused
from ksteward.server.controller_channel import CALL_ERRORS, Address, Connect, ControllerConnection
from ksteward.server.tasks import cancel_and_wait

log = logging.getLogger(__name__)

#: Kafka's ``controller.quorum.retry.backoff.ms`` default.
DEFAULT_BACKOFF_S = 0.02
#: More records than this to replay at once go to a worker thread (``MetadataFollower._apply_committed``).
REPLAYED_ON_THE_LOOP = 5_000
#: Kafka's ``controller.quorum.request.timeout.ms`` default; above the Fetch long poll (500 ms).
DEFAULT_REQUEST_TIMEOUT_S = 2.0


class MetadataFollower:
    """Replicates the metadata log and publishes committed images (see the module docstring)."""

    def __init__(
        self,
        *,
        metadata_log: MetadataLog,
        image: MetadataImage,
        authorizer: StandardAuthorizer | None,
        cluster_id: str,
        node_id: int,
        directory_id: uuid.UUID | None,
        bootstrap: tuple[Address, ...],
        connect: Connect,
        backoff_s: float = DEFAULT_BACKOFF_S,
        request_timeout_s: float = DEFAULT_REQUEST_TIMEOUT_S,
        voter_endpoints: Mapping[int, Address] | None = None,
    ) -> None:
        self.follower_log = FollowerLog(metadata_log)
        self.observer = RaftObserver(cluster_id=cluster_id, replica_id=node_id, directory_id=directory_id)
        self.image = image
        self._authorizer = authorizer
        self._bootstrap = bootstrap
        # ``controller.quorum.voters``: where each voter is, for a leader named without its endpoint (Kafka
        # looks the leader up in its static voter set, ``KafkaRaftClient.maybeHandleCommonResponse``).
        self._voter_endpoints = dict(voter_endpoints or {})
        self._next_bootstrap = 0
        self._connect = connect
        self._backoff_s = backoff_s
        self._request_timeout_s = request_timeout_s
        self._connection: ControllerConnection | None = None
        self._address: Address | None = None
        # The last call to the leader's endpoint failed: ask a bootstrap server next (Kafka's
        # ``maybeSendFetchToBestNode``), whose answer names the current leader, perhaps a new one.
        self._leader_unreachable = False
        self._published = asyncio.Condition()
        self._task: asyncio.Task[None] | None = None
        self.failure: BaseException | None = None  # set when following stopped for good
        self.stopped = asyncio.Event()

    # --- what the node reads --------------------------------------------------------------------------
    @property
    def applied_offset(self) -> int:
        """The offset of the last record applied to the image (-1: none), for BrokerHeartbeat."""
        return self.image.offset

    @property
    def caught_up(self) -> bool:
        """Every committed record the leader reported is in the image (Kafka's first "caught up")."""
        hw = self.follower_log.high_watermark
        return hw is not None and self.observer.caught_up(self.follower_log.view) and self.image.offset + 1 >= hw

    @property
    def controller_address(self) -> Address | None:
        """The Raft leader's endpoint on the controller listener, once a response named it."""
        endpoint = self.observer.leader_endpoint
        if endpoint is None and self.observer.leader_id is not None:
            endpoint = self._voter_endpoints.get(self.observer.leader_id)
        return endpoint

    async def wait_for(self, condition: Callable[[], bool]) -> None:
        """Wait until ``condition()`` holds after a publish (or already holds); ends early if following stops."""
        async with self._published:
            await self._published.wait_for(lambda: condition() or self.stopped.is_set())

    # --- the loop -------------------------------------------------------------------------------------
    def start(self) -> None:
        end = self.follower_log.view.log_end_offset
        log.info("resuming the metadata log at offset %d (image at offset %d)", end, self.image.offset)
        self._task = asyncio.get_running_loop().create_task(self._run(), name="metadata-follower")

    async def close(self) -> None:
        await cancel_and_wait(self._task)
        self._task = None
        await self._drop_connection()
        self.follower_log.close()

    async def _run(self) -> None:
        try:
            while True:
                if not await self._round():
                    await asyncio.sleep(self._backoff_s)
        except RaftFatalError as exc:  # Kafka's raft manager fault handler halts a broker too
            fatal.halt("this broker cannot follow the metadata log", exc)
        except Exception as exc:  # a record that cannot be replayed: stop, the node shuts down (exit status 1)
            log.exception("stopped following the metadata log")
            self.failure = exc
        finally:
            self.stopped.set()
            async with self._published:
                self._published.notify_all()

    async def _round(self) -> bool:
        """One request and its actions; False to back off before the next."""
        view = self.follower_log.view
        try:
            connection = await self._connection_to_leader()
            api_key, version, body = self.observer.next_request(view)
            async with asyncio.timeout(self._request_timeout_s):  # no task per Fetch, as wait_for makes in 3.11
                response = await connection.call(api_key, version, body)
        except CALL_ERRORS as exc:
            log.debug("metadata fetch failed (%s); retrying", type(exc).__name__)
            await self._drop_connection()
            self._leader_unreachable = self.controller_address is not None
            return False
        self._leader_unreachable = False
        ok = True
        installed = False
        for action in self.observer.on_response(api_key, response, view):
            if isinstance(action, Backoff):
                log.debug("metadata fetch backs off: %s", action.reason)
                ok = False
            elif isinstance(action, LeaderChanged):
                log.info("metadata leader is node %s, epoch %d", action.leader_id, action.epoch)
            elif self._store(action):
                installed = installed or isinstance(action, InstallSnapshot)
            else:
                ok = False
                break
        await self._publish(installed)
        return ok

    def _store(self, action: Action) -> bool:
        """Carry out a write to this broker's copy of the log. An I/O error stops the process at once, as on a
        voter (``server.quorum``). A batch a working log refuses is dropped with the rest of the answer (False),
        and the Fetch goes out again after the back-off."""
        try:
            self.follower_log.apply_one(action)
        except (OSError, MetadataLogError) as exc:
            reason = f"this broker could not write its metadata log ({type(action).__name__})"
            fatal.halt_if_the_disk_failed(reason, exc, self.follower_log.log)
            log.error("the metadata log refused %s: %s", type(action).__name__, exc)
            return False
        return True

    async def _connection_to_leader(self) -> ControllerConnection:
        address = self.controller_address
        if self._leader_unreachable and len(self._bootstrap) > 1:
            address = None  # the leader did not answer: a voter tells who leads now
        if address is None:  # not known, or not answering: ask a voter who leads
            if self._connection is not None:
                # The voter that answered last (a failed call drops its connection): asked again until it names
                # the leader. Dropping it for the next bootstrap server could land on a stopped voter, which
                # holds the connect for its timeout while the brokers' sessions run out.
                return self._connection
            address = self._bootstrap[self._next_bootstrap % len(self._bootstrap)]
            self._next_bootstrap += 1  # each failure moves on: a stopped voter is not tried twice in a row
        if self._connection is not None and self._address != address:
            await self._drop_connection()
        if self._connection is None:
            self._connection = await self._connect(address)
            self._address = address
        return self._connection

    async def _drop_connection(self) -> None:
        connection, self._connection = self._connection, None
        if connection is not None:
            await connection.close()

    # --- publishing committed records -----------------------------------------------------------------
    async def _publish(self, installed: bool) -> None:
        if installed:
            # Decoding a large snapshot and building its image and ACL index takes seconds (about 13 s at
            # 1,000,000 ACLs): off the event loop, so heartbeats and requests go on meanwhile. The authorizer
            # swaps its whole ACL set at once, and the image follows on the loop.
            self.image = await asyncio.to_thread(self._load_snapshot, self.follower_log.installed[-1].snapshot)
        hw = self.follower_log.high_watermark
        if hw is not None and hw > self.image.offset + 1:
            await self._apply_committed(hw)
        async with self._published:
            self._published.notify_all()

    def _committed_batches(self, hw: int) -> Iterator[Batch]:
        return takewhile(lambda b: b.last_offset < hw, self.follower_log.log.read(self.image.offset + 1))

    async def _apply_committed(self, hw: int) -> None:
        before = self.image
        # An ACL id is in one image and not the other only if a record of the replayed batches names it, so
        # only those ids are compared: diffing the whole key sets would hash every ACL id (a Python-level
        # UUID.__hash__) on every commit, a cost that grows with the ACLs the cluster holds.
        touched: dict[uuid.UUID | None, None] = {}

        def note(record: MetadataRecord) -> None:
            if isinstance(record, AccessControlEntryRecord | RemoveAccessControlEntryRecord):
                touched[record.id] = None

        batches = self._committed_batches(hw)
        if hw - before.offset > REPLAYED_ON_THE_LOOP:
            # A large batch (an atomic ACL change of 10^5 ACLs, docs/acl-transactions.md) takes seconds to replay:
            # in a worker thread the loop keeps its turn every switch interval, so this broker's heartbeats and
            # requests go on. Only this task replays, and it waits here, so the image cannot change meanwhile.
            after = await asyncio.to_thread(replay_batches, before, batches, None, note)
        else:
            after = replay_batches(before, batches, on_record=note)
        if self._authorizer is not None and after.acls is not before.acls:
            if len(touched) > ACL_CHANGES_ON_THE_LOOP:
                # Thousands of ACL changes (a large DeleteAcls) in a worker thread, as on a combined node
                # (server/acl_publisher.py): the authorizer is made for that, and this task waits, so the next
                # batches' changes come after these.
                await asyncio.to_thread(self._update_authorizer, touched, before, after)
            else:
                self._update_authorizer(touched, before, after)
        # Only now: a read that waits for this offset (read-your-writes) finds the authorizer holding its ACLs.
        self.image = after

    def _update_authorizer(
        self, touched: Iterable[uuid.UUID | None], before: MetadataImage, after: MetadataImage
    ) -> None:
        """The authorizer's ACLs from ``before``'s to ``after``'s, for the ids the replayed records named."""
        assert self._authorizer is not None
        old, new = before.acls.records, after.acls.records
        for acl_id in [i for i in touched if i in old and i not in new]:
            with contextlib.suppress(KeyError):  # an ACL skipped as unevaluable
                self._authorizer.remove_acl(acl_id, offset=after.offset)
        for acl_id in [i for i in touched if i in new and i not in old]:
            binding = binding_or_none(new[acl_id])
            if binding is not None:
                self._authorizer.add_acl(acl_id, binding, offset=after.offset)

    def _load_snapshot(self, snapshot: OffsetAndEpoch) -> MetadataImage:
        """The snapshot delta: a new image from the snapshot alone (returned), and the authorizer's ACL set
        swapped whole. Runs in a worker thread; the follower's task waits for it, so nothing else replays."""
        path = next(
            s.path
            for s in self.follower_log.log.snapshots()
            if s.end_offset == snapshot.offset and s.epoch == snapshot.epoch
        )
        with collector_paused():  # a bulk load of long-lived objects (server.collector)
            end_offset, epoch, values = read_snapshot(path)
            image = image_from_records((decode_record(v) for v in values), offset=end_offset - 1, epoch=epoch)
            if self._authorizer is not None:
                bindings = [(acl_id, binding) for binding, acl_id in image.acls.by_binding.items()]
                self._authorizer.load_snapshot(bindings, offset=image.offset)
        log.info("loaded metadata snapshot %s: image at offset %d", path.name, image.offset)
        return image
