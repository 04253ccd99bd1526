"""What ``ksteward apply`` does to a cluster, step by step, in the safe order (docs/state.md, "Apply").

The changes come as plain values (:class:`Changes`), built from the plan. They are applied additive first and
destructive last, so that nothing a client uses disappears before what replaces it exists:

1. topics to create (with their configs), then partitions to add;
2. config changes (set and delete, IncrementalAlterConfigs);
3. client quotas to set or change;
4. SCRAM credentials to create or change;
5. the ACL change: atomically on ksteward (CreateAcls v4, one metadata batch, with the plan's precondition),
   else every creation before any deletion (``cli.acl_apply``);
6. client quotas and SCRAM credentials to remove;
7. topics to delete, last: every ACL that named them has already changed.

Each step is one request per kind (one per entity where the API takes one entity) and is reported when done.
On ksteward the ACL change's precondition (no ACL changed since the plan) is checked first, with CreateAcls v4
``validate_only``, so a stale plan changes nothing at all; the ACL step itself carries it again. The first failure
stops the apply: what was done stays done and is reported, nothing after it is tried, and a second ``ksteward
apply`` of the same file finishes the job (every step is idempotent against the plan it makes).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ksteward.cli.acl_apply import (
    AclApplyResult,
    AclDelta,
    apply_atomically,
    apply_in_safe_order,
    check_precondition,
)
from ksteward.cli.admin_common import CommandError, Connection, UsageError, confluent_admin, describe_kafka_error
from ksteward.cli.configs_entities import ScramUpsert
from ksteward.state.model import Action, Plan

TIMEOUT = 60.0
ACL_CHANGE_TIMEOUT = 300.0
Report = Callable[[str], None]


@dataclass(frozen=True, slots=True)
class TopicCreate:
    name: str
    partitions: int
    replication_factor: int
    configs: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class PartitionIncrease:
    topic: str
    total: int


@dataclass(frozen=True, slots=True)
class ConfigChange:
    """``entity_type`` as ``ksteward configs`` names it (``topics``, ``brokers``, ``groups`` ...)."""

    entity_type: str
    name: str
    sets: dict[str, str] = field(default_factory=dict)
    deletes: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class QuotaChange:
    """One client-quota entity: (type, name) pairs (``user``, ``client-id``, ``ip``; name "" for the default)."""

    entity: tuple[tuple[str, str], ...]
    sets: dict[str, float] = field(default_factory=dict)
    deletes: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ScramChange:
    user: str
    upserts: tuple[ScramUpsert, ...] = ()
    deletes: tuple[str, ...] = ()  # mechanisms


@dataclass(frozen=True, slots=True)
class Changes:
    """Everything one apply changes. ``quotas``/``scram`` entries with only deletions run in the destructive
    phase, the others in the additive one."""

    create_topics: tuple[TopicCreate, ...] = ()
    add_partitions: tuple[PartitionIncrease, ...] = ()
    configs: tuple[ConfigChange, ...] = ()
    quotas: tuple[QuotaChange, ...] = ()
    scram: tuple[ScramChange, ...] = ()
    acls: AclDelta = field(default_factory=AclDelta)
    delete_topics: tuple[str, ...] = ()

    @property
    def empty(self) -> bool:
        return not (self.create_topics or self.add_partitions or self.configs or self.quotas or self.scram
                    or self.delete_topics) and self.acls.empty  # fmt: skip


@dataclass(slots=True)
class Outcome:
    """What an apply did, step by step; ``acls`` is None when the ACLs did not change."""

    steps: list[str] = field(default_factory=list)
    acls: AclApplyResult | None = None


def _confluent_result(future: Any, what: str) -> None:
    from confluent_kafka import KafkaException

    try:
        future.result(timeout=TIMEOUT + 5)
    except KafkaException as exc:
        raise CommandError(f"{what}: {describe_kafka_error(exc)}") from None


def _create_topics(conn: Connection, topics: Sequence[TopicCreate], note: Report) -> None:
    from confluent_kafka.admin import NewTopic

    if topics:
        admin = confluent_admin(conn)
        new = [NewTopic(t.name, t.partitions, t.replication_factor, config=dict(t.configs)) for t in topics]
        futures = admin.create_topics(new, operation_timeout=TIMEOUT, request_timeout=TIMEOUT)
        for t in topics:
            _confluent_result(futures[t.name], f"creating topic {t.name}")
            note(f"topic {t.name}: created ({t.partitions} partitions, replication factor {t.replication_factor})")


def _add_partitions(conn: Connection, increases: Sequence[PartitionIncrease], note: Report) -> None:
    from confluent_kafka.admin import NewPartitions

    if increases:
        admin = confluent_admin(conn)
        futures = admin.create_partitions([NewPartitions(p.topic, p.total) for p in increases],
                                          operation_timeout=TIMEOUT, request_timeout=TIMEOUT)  # fmt: skip
        for p in increases:
            _confluent_result(futures[p.topic], f"adding partitions to {p.topic}")
            note(f"topic {p.topic}: now {p.total} partitions")


def _configs(conn: Connection, changes: Sequence[ConfigChange], note: Report) -> None:
    from ksteward.cli.configs_backend import incremental_alter

    for c in changes:
        incremental_alter(conn, c.entity_type, c.name, dict(c.sets), list(c.deletes))
        note(f"configs of {c.entity_type} {c.name}: {len(c.sets)} set, {len(c.deletes)} deleted")


def _quotas(conn: Connection, changes: Sequence[QuotaChange], note: Report) -> None:
    from ksteward.cli.configs_backend import QUOTA_ENTITY_TYPES, alter_quotas

    entity_types = {wire: flag for flag, wire in QUOTA_ENTITY_TYPES.items()}  # "user" -> "users", as the flags
    for q in changes:
        alter_quotas(conn, [entity_types[t] for t, _ in q.entity], [n for _, n in q.entity], dict(q.sets),
                     list(q.deletes))  # fmt: skip
        who = ", ".join(f"{t}={n or '<default>'}" for t, n in q.entity)
        note(f"quota {who}: {len(q.sets)} set, {len(q.deletes)} removed")


def _scram(conn: Connection, changes: Sequence[ScramChange], note: Report) -> None:
    from ksteward.cli.configs_backend import alter_scram

    for s in changes:
        alter_scram(conn, s.user, list(s.upserts), list(s.deletes))
        made = ", ".join(u.mechanism for u in s.upserts) or "none"
        note(f"SCRAM user {s.user}: credentials set ({made}), {len(s.deletes)} removed")


def _delete_topics(conn: Connection, names: Sequence[str], note: Report) -> None:
    if names:
        admin = confluent_admin(conn)
        futures = admin.delete_topics(list(names), operation_timeout=TIMEOUT, request_timeout=TIMEOUT)
        for name in names:
            _confluent_result(futures[name], f"deleting topic {name}")
            note(f"topic {name}: deleted")


def apply_acls(conn: Connection, change: AclDelta, *, atomic: bool, note: Report) -> AclApplyResult:
    """The ACL step: CreateAcls v4 when ``atomic`` (the caller checked the server serves it), else the safe
    order through confluent-kafka (or ksteward's client where confluent-kafka cannot express an ACL)."""
    from ksteward.cli.acls.backend import needs_wire, open_backend
    from ksteward.cli.admin_common import ksteward_admin

    if atomic:
        # A 10^5-ACL change is seconds of work for the controller: more than a request's usual 30 s under load.
        with ksteward_admin(conn, timeout=ACL_CHANGE_TIMEOUT) as client:
            return apply_atomically(client, change, note)
    backend = open_backend(conn, wire=needs_wire([*change.create, *change.delete]))
    try:
        return apply_in_safe_order(backend, change, note)
    finally:
        backend.close()


def execute(conn: Connection, changes: Changes, *, atomic_acls: bool, report: Report) -> Outcome:
    """Apply ``changes`` in the safe order (the module docstring); ``report`` sees each step as it is done."""
    outcome = Outcome()

    def note(line: str) -> None:
        outcome.steps.append(line)
        report(line)

    if atomic_acls and not changes.acls.empty:
        from ksteward.cli.admin_common import ksteward_admin

        with ksteward_admin(conn) as client:  # a stale plan stops here, before its first step
            check_precondition(client, changes.acls)
    _create_topics(conn, changes.create_topics, note)
    _add_partitions(conn, changes.add_partitions, note)
    _configs(conn, changes.configs, note)
    _quotas(conn, [q for q in changes.quotas if q.sets], note)
    _scram(conn, [s for s in changes.scram if s.upserts], note)
    if not changes.acls.empty:
        outcome.acls = apply_acls(conn, changes.acls, atomic=atomic_acls, note=note)
    _quotas(conn, [q for q in changes.quotas if not q.sets], note)
    _scram(conn, [s for s in changes.scram if not s.upserts], note)
    _delete_topics(conn, changes.delete_topics, note)
    return outcome


# --- from a plan (ksteward.state.model.Plan) ---------------------------------------------------------------


def _password(env: str | None, user: str, mechanism: str) -> str:
    import os

    if not env:
        raise UsageError(f"SCRAM user {user} ({mechanism}): the file names no password_env to read its password from")
    value = os.environ.get(env)
    if value is None:
        raise UsageError(f"SCRAM user {user} ({mechanism}): environment variable {env} is not set")
    return value


def changes_from_plan(plan: Plan) -> Changes:
    """The executor's steps for ``plan``. A SCRAM password is read from its environment variable here, before
    anything is applied, so a missing one stops the apply with nothing done."""
    creates, increases, configs, deletes = [], [], [], []
    for t in plan.topics:
        if t.action is Action.CREATE:
            creates.append(TopicCreate(t.name, t.partitions_after or 1, t.replication_factor or -1,
                                       dict(t.configs_set)))  # fmt: skip
        elif t.action is Action.DELETE:
            deletes.append(t.name)
        else:
            if t.partitions_after is not None and t.partitions_after != t.partitions_before:
                increases.append(PartitionIncrease(t.name, t.partitions_after))
            if t.configs_set or t.configs_deleted:
                configs.append(ConfigChange("topics", t.name, dict(t.configs_set), tuple(t.configs_deleted)))
    quotas = [
        QuotaChange(tuple((kind, name or "") for kind, name in q.entity), dict(q.set), tuple(q.removed))
        for q in plan.quotas
    ]
    scram: dict[str, tuple[list[ScramUpsert], list[str]]] = {}
    for s in plan.scram:
        ups, dels = scram.setdefault(s.user, ([], []))
        if s.action is Action.DELETE:
            dels.append(s.mechanism)
        else:
            ups.append(ScramUpsert(s.mechanism, s.iterations or 4096, _password(s.password_env, s.user, s.mechanism)))
    offset = plan.precondition.metadata_offset
    acls = AclDelta(tuple(plan.acl_bindings_to_create()), tuple(plan.acl_bindings_to_delete()),
                    -1 if offset is None else offset)  # fmt: skip
    return Changes(tuple(creates), tuple(increases), tuple(configs), tuple(quotas),
                   tuple(ScramChange(u, tuple(ups), tuple(dels)) for u, (ups, dels) in scram.items()), acls,
                   tuple(deletes))  # fmt: skip
