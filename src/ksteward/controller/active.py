"""The active controller: validates mutations, appends their records as one batch, replies once durable.

Every mutation asks its manager for a :class:`ControllerResult` (records and response) synchronously,
then hands it to :meth:`Controller._commit`, which appends before its first ``await``; so mutations
are applied one at a time in arrival order (Kafka's QuorumController has a single event queue for the
same reason). Brokers reach these methods directly in a combined node, and through an Envelope once
forwarding exists.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Concatenate, ParamSpec, Protocol, TypeVar

from kio.schema.errors import ErrorCode

from ksteward.authorizer import AclBinding, AclBindingFilter
from ksteward.configs.catalog import ConfigResourceType
from ksteward.controller.acls import AclControlManager, AclDeletionResult, AclTransactionResult, replace_acls
from ksteward.controller.cluster import BrokerRegistration, bootstrap
from ksteward.controller.configs import ConfigAlteration, ConfigControlManager
from ksteward.controller.delegation_tokens import CreatedToken, DelegationTokenControlManager, TokenExpiry
from ksteward.controller.features import FeatureUpdate, update_features
from ksteward.controller.membership import (
    ClusterControlManager,
    HeartbeatReply,
    HeartbeatRequest,
    RegistrationReply,
    RegistrationRequest,
)
from ksteward.controller.mutation_quota import MutationQuotas
from ksteward.controller.quotas import QuotaAlteration, QuotaAlterationResult, alter_client_quotas
from ksteward.controller.reassignment import (
    AlterPartitionReply,
    AlterPartitionRequest,
    ElectionOutcome,
    OngoingReassignment,
    PartitionReassignment,
    alter_partition,
    alter_partition_reassignments,
    elect_leaders,
    list_partition_reassignments,
)
from ksteward.controller.result import NO_ERROR, ApiError, ConcurrentAclChange, ControllerResult, NotControllerError
from ksteward.controller.scram import ScramAlterationResult, alter_user_scram_credentials
from ksteward.controller.topic_requests import (
    CreatePartitionsResult,
    CreateTopicResult,
    DeleteTopicResult,
    NameFilter,
    NewPartitions,
    NewTopic,
    QuotaCharge,
    TopicRef,
)
from ksteward.controller.topics import TopicControlManager
from ksteward.metadata.image import MetadataImage
from ksteward.metadata.records import NoOpRecord

T = TypeVar("T")
P = ParamSpec("P")
#: A CreateAcls v4 with more entries than this is computed and replayed in worker threads (``replace_acls``).
ACL_CHANGE_ON_THE_LOOP = 5_000
#: A DeleteAcls that removes more ACLs than this is replayed in a worker thread (about 9 µs an ACL on the loop).
DELETIONS_ON_THE_LOOP = 1_000


def _event(
    method: Callable[Concatenate[Controller, P], Awaitable[T]],
) -> Callable[Concatenate[Controller, P], Awaitable[T]]:
    """A controller event (Kafka's QuorumController runs each on its event queue): note when it starts, so that
    ``_commit`` can report its processing time, from here to its records appended (the manager's checks, the
    replay and the write; not the wait for the fsync)."""

    @functools.wraps(method)
    async def run(self: Controller, *args: P.args, **kwargs: P.kwargs) -> T:
        if not self.is_active():  # a standby of a quorum (Kafka's ControllerWriteEvent on a non-active one)
            raise NotControllerError("this controller is not the active controller")
        self._event_started = self.timer()
        return await method(self, *args, **kwargs)

    return run


class MetadataWriter(Protocol):
    """The controller's single writer: appends one batch and resolves once it is durable."""

    @property
    def latest(self) -> MetadataImage: ...

    def append(self, records: list[Any]) -> Awaitable[int]: ...


class Controller:
    def __init__(
        self,
        writer: MetadataWriter,
        topics: TopicControlManager | None = None,
        configs: ConfigControlManager | None = None,
        membership: ClusterControlManager | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.writer = writer
        self.clock = clock  # the session clock of broker heartbeats (seconds, monotonic)
        self.membership = membership or ClusterControlManager("", session_timeout_s=9.0)
        self.acls = AclControlManager()
        self.mutation_quotas = MutationQuotas()  # KIP-599 buckets
        self.topics = topics or TopicControlManager()
        self.configs = configs or ConfigControlManager(node_id=1, static={})
        self.delegation_tokens = DelegationTokenControlManager()  # disabled until the node sets its settings
        #: Called with each event's processing time in ms (the metrics' EventQueueProcessingTimeMs), if set.
        self.on_event_processed: Callable[[float], None] | None = None
        self.timer: Callable[[], float] = time.perf_counter
        self._event_started = 0.0
        self._acl_transactions = asyncio.Lock()
        #: Whether this node is the active controller: always with one voter; with several, while it leads.
        self.is_active: Callable[[], bool] = lambda: True
        #: With several voters: the newest write not committed yet, or None (see ``_commit``).
        self.pending_write: Callable[[], Awaitable[int] | None] | None = None

    async def _commit(self, result: ControllerResult[T], *, validate_only: bool = False) -> T:
        """The one way a mutation reaches the log: its records appended as one batch (none when
        ``validate_only`` or when there are none), then its response once they are durable."""
        durable = self.writer.append(list(result.records)) if result.records and not validate_only else None
        report = self.on_event_processed
        if report is not None:
            report((self.timer() - self._event_started) * 1000)
        if durable is None and self.pending_write is not None:
            # Kafka's ControllerWriteEvent: an answer that wrote nothing still waits for the newest pending
            # write to commit, since it was computed from state that includes it (with several voters, that
            # write may never commit: then this fails with NOT_CONTROLLER as well).
            durable = self.pending_write()
        if durable is not None:
            await durable
        return result.response

    @_event
    async def bootstrap(self, broker: BrokerRegistration | None) -> None:
        """Before the listeners open: finalize metadata.version on a new log, register this broker."""
        await self._commit(bootstrap(self.writer.latest, broker))
        self.membership.activate(self.writer.latest, self.clock())

    @_event
    async def register_broker(self, request: RegistrationRequest) -> RegistrationReply:
        """BrokerRegistration (62): the broker epoch once its RegisterBrokerRecord is durable."""
        return await self._commit(self.membership.register_broker(self.writer.latest, request, self.clock()))

    @_event
    async def broker_heartbeat(self, request: HeartbeatRequest) -> HeartbeatReply:
        """BrokerHeartbeat (63): the reply once its fence / unfence / shutdown records are durable."""
        return await self._commit(self.membership.process_heartbeat(self.writer.latest, request, self.clock()))

    @_event
    async def fence_stale_brokers(self, now: float | None = None) -> list[int]:
        """The periodic session check: fence every broker whose session expired; the ids fenced."""
        now = self.clock() if now is None else now
        return await self._commit(self.membership.fence_stale_brokers(self.writer.latest, now))

    @_event
    async def create_topics(
        self, topics: Sequence[NewTopic], *, validate_only: bool, may_create: NameFilter,
        may_describe_configs: NameFilter, describe_created: bool = True, charge: QuotaCharge | None = None,
    ) -> tuple[CreateTopicResult, ...]:  # fmt: skip
        result = self.topics.create_topics(
            self.writer.latest, topics, validate_only=validate_only, may_create=may_create,
            may_describe_configs=may_describe_configs, describe_created=describe_created, charge=charge,
        )  # fmt: skip
        return await self._commit(result, validate_only=validate_only)

    @_event
    async def delete_topics(
        self, refs: Sequence[TopicRef], *, api_version: int, validate_only: bool, may_describe: NameFilter,
        may_delete: NameFilter, charge: QuotaCharge | None = None,
    ) -> tuple[DeleteTopicResult, ...]:  # fmt: skip
        result = self.topics.delete_topics(
            self.writer.latest, refs, api_version=api_version, validate_only=validate_only,
            may_describe=may_describe, may_delete=may_delete, charge=charge,
        )  # fmt: skip
        return await self._commit(result, validate_only=validate_only)

    @_event
    async def create_partitions(
        self, topics: Sequence[NewPartitions], *, validate_only: bool, may_alter: NameFilter,
        charge: QuotaCharge | None = None,
    ) -> tuple[CreatePartitionsResult, ...]:  # fmt: skip
        result = self.topics.create_partitions(
            self.writer.latest, topics, validate_only=validate_only, may_alter=may_alter, charge=charge
        )
        return await self._commit(result, validate_only=validate_only)

    @_event
    async def alter_configs(
        self, alterations: Sequence[ConfigAlteration], *, validate_only: bool
    ) -> list[ApiError | None]:
        """AlterConfigs / IncrementalAlterConfigs (Kafka's ``QuorumController.incrementalAlterConfigs``):
        one outcome per alteration, None on success; the records of every successful resource in one
        batch, none with ``validate_only``."""
        return await self._commit(self.configs.alter(self.writer.latest, alterations), validate_only=validate_only)

    @_event
    async def create_acls(self, creations: Sequence[AclBinding]) -> list[ApiError]:
        return await self._commit(self.acls.create_acls(self.writer.latest, creations))

    @_event
    async def delete_acls(self, filters: Sequence[AclBindingFilter]) -> list[AclDeletionResult]:
        """DeleteAcls: every match of every filter, removed in one batch. A large batch (up to Kafka's 10,000
        records) is replayed and encoded in a worker thread, so that the loop serves other requests meanwhile;
        if another batch changed the ACLs in between, the filters are matched again."""
        result = self.acls.delete_acls(self.writer.latest, filters)
        in_thread = getattr(self.writer, "append_in_thread", None)
        for _ in range(3):
            if len(result.records) <= DELETIONS_ON_THE_LOOP or in_thread is None:
                break
            try:
                await in_thread(list(result.records))
            except ConcurrentAclChange:
                result = self.acls.delete_acls(self.writer.latest, filters)
                continue
            return result.response
        return await self._commit(result)

    @_event
    async def replace_acls(
        self,
        creations: Sequence[AclBinding | ApiError],
        filters: Sequence[AclBindingFilter | ApiError],
        *,
        unchanged_since: int,
        validate_only: bool,
    ) -> AclTransactionResult:
        """CreateAcls v4: every creation and deletion in one batch (one fsync, one publish), or nothing; the
        answer carries the offset of that batch (docs/acl-transactions.md)."""
        large = len(creations) + len(filters) > ACL_CHANGE_ON_THE_LOOP
        async with self._acl_transactions:  # one at a time: each is computed against the ACLs the last one left
            result = await self._replace_acls_result(creations, filters, unchanged_since, large)
            response = result.response
            applies = bool(result.records) and not validate_only and response.error.code == NO_ERROR.code
            report = self.on_event_processed
            if not applies:
                if report is not None:
                    report((self.timer() - self._event_started) * 1000)
                return response
            in_thread = getattr(self.writer, "append_in_thread", None)
            if large and in_thread is not None:
                try:
                    offset = await in_thread(list(result.records))
                except ConcurrentAclChange as exc:
                    raced = ApiError(ErrorCode.invalid_update_version, f"{exc}; nothing was applied. Plan again.")
                    return dataclasses.replace(response, error=raced, created=0, deleted=0)
                return dataclasses.replace(response, changed_at=offset)
            durable = self.writer.append(list(result.records))
            if report is not None:
                report((self.timer() - self._event_started) * 1000)
            return dataclasses.replace(response, changed_at=await durable)

    async def _replace_acls_result(
        self,
        creations: Sequence[AclBinding | ApiError],
        filters: Sequence[AclBindingFilter | ApiError],
        unchanged_since: int,
        large: bool,
    ) -> ControllerResult[AclTransactionResult]:
        """``replace_acls`` on the latest image; a large change in a worker thread (seconds for 10^5 ACLs: the loop
        keeps its turn, so heartbeats and other requests go on), computed again if the ACLs changed meanwhile."""
        for _ in range(3):
            image = self.writer.latest
            if not large:
                break
            result = await asyncio.to_thread(replace_acls, image, creations, filters, unchanged_since=unchanged_since)
            if self.writer.latest.acls is image.acls:
                return result
        return replace_acls(self.writer.latest, creations, filters, unchanged_since=unchanged_since)

    @_event
    async def alter_client_quotas(
        self, alterations: Sequence[QuotaAlteration], *, validate_only: bool
    ) -> list[QuotaAlterationResult]:
        """AlterClientQuotas: one result per distinct entity; the records of every valid entity in one
        batch, none with ``validate_only``."""
        result = alter_client_quotas(self.writer.latest.client_quotas, alterations)
        return await self._commit(result, validate_only=validate_only)

    @_event
    async def update_features(self, updates: Sequence[FeatureUpdate], *, validate_only: bool) -> ApiError:
        """UpdateFeatures (Kafka's ``QuorumController.updateFeatures``): one outcome for the whole request; the
        FeatureLevelRecords as one batch, none with ``validate_only`` or on any failure."""
        result = update_features(self.writer.latest, self.configs.node_id, updates)
        return await self._commit(result, validate_only=validate_only)

    @_event
    async def alter_user_scram_credentials(self, request: Any) -> list[ScramAlterationResult]:
        return await self._commit(alter_user_scram_credentials(self.writer.latest, request))

    @_event
    async def create_delegation_token(self, principal: str, request: Any) -> CreatedToken:
        """CreateDelegationToken (38) for ``principal``, after the API's checks (``broker.delegation_tokens``)."""
        return await self._commit(self.delegation_tokens.create(principal, request))

    @_event
    async def renew_delegation_token(self, principal: str, token_hmac: bytes, period_ms: int) -> TokenExpiry:
        return await self._commit(self.delegation_tokens.renew(self.writer.latest, principal, token_hmac, period_ms))

    @_event
    async def expire_delegation_token(self, principal: str, token_hmac: bytes, period_ms: int) -> TokenExpiry:
        return await self._commit(self.delegation_tokens.expire(self.writer.latest, principal, token_hmac, period_ms))

    @_event
    async def sweep_expired_delegation_tokens(self) -> list[str]:
        """The periodic expiry sweep: the ids of the tokens it removed."""
        return await self._commit(self.delegation_tokens.sweep(self.writer.latest))

    @_event
    async def write_noop_record(self) -> None:
        """KIP-835: one ``NoOpRecord``, so that the high watermark moves on an idle cluster (Kafka's
        ``QuorumController`` event ``writeNoOpRecord``, every ``metadata.max.idle.interval.ms``)."""
        await self._commit(ControllerResult(records=(NoOpRecord(),), response=None))

    # --- reassignment and elections (controller/reassignment.py, docs/reassignment.md) ---------------------

    def _unclean_allowed(self, image: MetadataImage) -> Callable[[str], bool]:
        """A topic's effective ``unclean.leader.election.enable`` (Kafka's
        ``ConfigurationControlManager.uncleanLeaderElectionEnabledForTopic``)."""
        resolver = self.configs.resolver(image)
        topic_type = int(ConfigResourceType.TOPIC)

        def allowed(topic: str) -> bool:
            overrides = image.configs.get((topic_type, topic), {})
            value = resolver.topic_entry("unclean.leader.election.enable", overrides).value
            return (value or "").strip().lower() == "true"

        return allowed

    @_event
    async def alter_partition_reassignments(
        self, reassignments: Sequence[PartitionReassignment], *, allow_replication_factor_change: bool = True
    ) -> list[ApiError]:
        image = self.writer.latest
        result = alter_partition_reassignments(
            image, reassignments, unclean=self._unclean_allowed(image),
            allow_replication_factor_change=allow_replication_factor_change,
        )  # fmt: skip
        return await self._commit(result)

    async def list_partition_reassignments(
        self, topics: Sequence[tuple[str, Sequence[int]]] | None
    ) -> list[OngoingReassignment]:
        """A read of the controller's latest image: nothing to commit."""
        return list_partition_reassignments(self.writer.latest, topics)

    @_event
    async def elect_leaders(
        self, election_type: int, topics: Sequence[tuple[str, Sequence[int]]] | None
    ) -> list[tuple[str, list[ElectionOutcome]]] | ApiError:
        return await self._commit(elect_leaders(self.writer.latest, election_type, topics))

    @_event
    async def alter_partition(self, request: AlterPartitionRequest) -> AlterPartitionReply:
        image = self.writer.latest
        return await self._commit(alter_partition(image, request, unclean=self._unclean_allowed(image)))
