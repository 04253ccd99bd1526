"""The data model of a state file and of a plan (docs/state-files.md).

Three kinds of object:

- :class:`Resources`: topics, ACLs, client quotas and SCRAM users. What a cluster holds (read by ``state
  export`` and ``plan``), what a file asks for (after its roles are expanded) and what the last apply wrote
  (the :class:`AppliedRecord`) are all ``Resources``, so one diff compares any two.
- :class:`DesiredState`: a parsed file, i.e. ``Resources`` plus the file's :class:`Ownership` selectors and
  :class:`Deletion` switches.
- :class:`Plan`: what ``ksteward plan`` computed and ``ksteward apply`` carries out.

How ``apply`` consumes a :class:`Plan`:

1. Refuse when ``plan.refusals`` is not empty (lockout, a replication-factor change, fewer partitions, a
   declared resource outside the ownership selectors ...): nothing may be applied.
2. Check ``plan.precondition`` (the cluster id and the metadata offset the plan was read at): on ksteward
   the ACL batch carries the offset and the controller refuses it if the metadata moved; on real Kafka apply
   re-reads what it needs.
3. Topics: ``plan.topics`` in order; each :class:`TopicChange` says create (name, partitions, replication
   factor, configs), update (``partitions_after`` for CreatePartitions, ``configs_set`` /
   ``configs_deleted`` for IncrementalAlterConfigs SET / DELETE) or delete (DeleteTopics).
4. ACLs: :meth:`Plan.acl_bindings_to_create` and :meth:`Plan.acl_filters_to_delete` (exact filters, one per
   binding). On ksteward both go in one atomic batch; on Kafka creations first, then deletions.
5. Quotas: each :class:`QuotaChange` is one AlterClientQuotas entry (``set`` values, ``removed`` keys).
6. SCRAM: each :class:`ScramChange` is one AlterUserScramCredentials upsertion (the password from the
   environment variable ``password_env``, a fresh salt) or deletion.
7. Write the :class:`AppliedRecord` of ``plan.desired_owned`` beside the file (:func:`record_path`), so that
   the next plan can tell a change made in the file from drift made outside the tool.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ksteward.authorizer import AclBinding, AclBindingFilter, PatternType, ResourceType

# --- resources -----------------------------------------------------------------------------------------

QuotaEntity = tuple[tuple[str, str | None], ...]
"""A client-quota entity (KIP-546): sorted ``(entity_type, name)`` pairs, entity types ``user``,
``client-id`` and ``ip``; a ``None`` name is the default entity of that type."""

SCRAM_MECHANISMS = ("SCRAM-SHA-256", "SCRAM-SHA-512")


@dataclass(frozen=True, slots=True)
class TopicSpec:
    """A topic: its partition count, replication factor and dynamic topic configs (key -> value).

    ``replication_factor`` is the length of partition 0's replica list as read from the cluster; ``None`` in
    a file means "the broker's default" (it is then never compared)."""

    name: str
    partitions: int
    replication_factor: int | None
    configs: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ScramUser:
    """A SCRAM user: mechanism -> iterations. Never a salt, key or password (``password_env`` names the
    environment variable ``apply`` reads the password from when it must create a credential)."""

    name: str
    mechanisms: Mapping[str, int]
    password_env: str | None = None


@dataclass(frozen=True, slots=True)
class Resources:
    """Topics, ACLs, client quotas and SCRAM users: a cluster's, a file's or the last apply's.

    ``acls`` is a set (an ACL's identity is its seven fields), which makes the ACL diff two hash-set
    differences."""

    topics: Mapping[str, TopicSpec] = field(default_factory=dict)
    acls: frozenset[AclBinding] = frozenset()
    quotas: Mapping[QuotaEntity, Mapping[str, float]] = field(default_factory=dict)
    scram_users: Mapping[str, ScramUser] = field(default_factory=dict)


# --- ownership and deletion ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ResourceSelector:
    """An ACL resource pattern this file owns: ``LITERAL`` selects ACLs on exactly that name (any pattern
    type); ``PREFIXED`` ACLs on every name that starts with it (LITERAL and PREFIXED ACLs alike). With
    ``principal`` only that principal's ACLs on those resources are owned."""

    resource_type: ResourceType
    name: str
    pattern_type: PatternType = PatternType.LITERAL
    principal: str | None = None


@dataclass(frozen=True, slots=True)
class Ownership:
    """Which resources the file manages; everything else is never created, changed or deleted.

    - ``all``: every resource (what ``state export`` writes, with every deletion off).
    - ``topic_prefixes``: topics (and their configs) whose names start with one, and the TOPIC ACLs on them.
    - ``principals``: every ACL of the principal, its SCRAM user (``User:name``) and its ``user`` quotas.
    - ``resources``: ACLs by resource pattern (:class:`ResourceSelector`).
    - ``quota_entities``: client-quota entities owned beyond those of ``principals``.

    The predicates live in ``ksteward.state.ownership``."""

    all: bool = False
    topic_prefixes: tuple[str, ...] = ()
    principals: frozenset[str] = frozenset()
    resources: tuple[ResourceSelector, ...] = ()
    quota_entities: frozenset[QuotaEntity] = frozenset()


@dataclass(frozen=True, slots=True)
class Deletion:
    """Per section: may the plan delete an owned resource the file does not list? All off by default, so a
    fresh file (or an export) never deletes anything. ``configs``: reset an owned topic's dynamic config the
    file does not list."""

    topics: bool = False
    configs: bool = False
    acls: bool = False
    quotas: bool = False
    scram_users: bool = False


@dataclass(frozen=True, slots=True)
class Role:
    """A named bundle of ACL templates (a user-defined role in the file, or a built-in one)."""

    name: str
    description: str = ""


@dataclass(frozen=True, slots=True)
class DesiredState:
    """A parsed state file: ``resources`` with every role expanded; ``acl_sources`` says, for an ACL that a
    role produced, which (``"role producer for User:app"``), so a plan can explain where an ACL comes from."""

    resources: Resources
    ownership: Ownership
    deletion: Deletion = Deletion()
    roles: Mapping[str, Role] = field(default_factory=dict)
    acl_sources: Mapping[AclBinding, str] = field(default_factory=dict)


# --- the plan --------------------------------------------------------------------------------------------


class Action(enum.Enum):
    CREATE = "create"
    UPDATE = "update"
    DELETE = "delete"


class Origin(enum.Enum):
    """Why a difference exists, judged against the :class:`AppliedRecord` of the last apply.

    - ``FILE``: the cluster is as last applied and the file changed (an in-file change).
    - ``DRIFT``: the cluster differs from what was last applied: a change made outside the tool; the plan
      reverts it (or, where the file changed too, replaces it).
    - ``UNRECORDED``: there is no record of a last apply for this cluster, so the two cannot be told apart.
    """

    FILE = "file"
    DRIFT = "drift"
    UNRECORDED = "unrecorded"


@dataclass(frozen=True, slots=True)
class TopicChange:
    name: str
    action: Action
    origin: Origin
    partitions_before: int | None = None
    partitions_after: int | None = None
    replication_factor: int | None = None
    configs_set: Mapping[str, str] = field(default_factory=dict)
    configs_deleted: tuple[str, ...] = ()
    configs_before: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class AclChange:
    binding: AclBinding
    action: Action  # CREATE or DELETE: an ACL has no attributes to update
    origin: Origin
    source: str = ""  # for a creation: the role or line of the file that asks for it


@dataclass(frozen=True, slots=True)
class QuotaChange:
    entity: QuotaEntity
    action: Action
    origin: Origin
    set: Mapping[str, float] = field(default_factory=dict)
    removed: tuple[str, ...] = ()
    before: Mapping[str, float] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ScramChange:
    """One mechanism of one user: CREATE/UPDATE is an upsertion (iterations, password from
    ``password_env``), DELETE a deletion."""

    user: str
    mechanism: str
    action: Action
    origin: Origin
    iterations: int | None = None
    iterations_before: int | None = None
    password_env: str | None = None


@dataclass(frozen=True, slots=True)
class PolicyVerdict:
    """A server-side policy's answer to one change, through validate_only (``api``: CreateTopics,
    CreatePartitions, IncrementalAlterConfigs, DeleteTopics v7, AlterClientQuotas); ``error`` is Kafka's
    error name, None when the server would accept it; ``checked`` False when the API has no validate_only
    on this server (the verdict is then unknown)."""

    resource: str
    api: str
    error: str | None = None
    message: str | None = None
    checked: bool = True


@dataclass(frozen=True, slots=True)
class Precondition:
    """What the plan was computed against; ``apply`` refuses when the cluster moved on.

    ``metadata_offset``: the metadata offset the plan's reads saw (ksteward reports it on every response;
    None on real Kafka). ``cluster_id``: DescribeCluster's id. ``acl_digest``: a hash of the live ACLs the plan
    read, for a cheap re-check where no offset exists."""

    cluster_id: str | None = None
    metadata_offset: int | None = None
    acl_digest: str | None = None


@dataclass(frozen=True, slots=True)
class BlastRadius:
    """How much the plan touches: distinct principals whose ACLs, quotas or credentials change, and
    distinct resources (topics, ACL resource patterns, quota entities, SCRAM users)."""

    principals: int = 0
    resources: int = 0
    principal_names: tuple[str, ...] = ()


@dataclass(slots=True)
class Plan:
    """Everything ``ksteward plan`` shows and ``ksteward apply`` carries out (module docstring)."""

    topics: list[TopicChange] = field(default_factory=list)
    acls: list[AclChange] = field(default_factory=list)
    quotas: list[QuotaChange] = field(default_factory=list)
    scram: list[ScramChange] = field(default_factory=list)
    policy: list[PolicyVerdict] = field(default_factory=list)
    lockouts: list[dict[str, Any]] = field(default_factory=list)
    refusals: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    blast_radius: BlastRadius = BlastRadius()
    whatif: dict[str, Any] | None = None
    precondition: Precondition = Precondition()
    #: What the file asks for within its ownership: the record ``apply`` writes once it succeeded.
    desired_owned: Resources = Resources()
    #: True when an :class:`AppliedRecord` for this cluster was found (origins are then FILE or DRIFT).
    recorded: bool = False

    @property
    def has_changes(self) -> bool:
        return bool(self.topics or self.acls or self.quotas or self.scram)

    @property
    def refused(self) -> bool:
        return bool(self.refusals or self.lockouts)

    def acl_bindings_to_create(self) -> list[AclBinding]:
        return [c.binding for c in self.acls if c.action is Action.CREATE]

    def acl_bindings_to_delete(self) -> list[AclBinding]:
        return [c.binding for c in self.acls if c.action is Action.DELETE]

    def acl_filters_to_delete(self) -> list[AclBindingFilter]:
        """One exact filter per binding to delete: a DeleteAcls with them removes those ACLs and no other."""
        return [b.to_filter() for b in self.acl_bindings_to_delete()]

    def drift(self) -> list[TopicChange | AclChange | QuotaChange | ScramChange]:
        every: Iterable[TopicChange | AclChange | QuotaChange | ScramChange] = (
            *self.topics,
            *self.acls,
            *self.quotas,
            *self.scram,
        )
        return [c for c in every if c.origin is Origin.DRIFT]


# --- the record of the last apply --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class AppliedRecord:
    """What the last successful apply of a file wrote to a cluster: the owned part of the file then.

    Kept beside the file (:func:`record_path`), one per cluster id, as JSON; ``ksteward.state.record`` reads
    and writes it. A plan compares the live cluster with it: a live difference from the record is drift."""

    cluster_id: str
    resources: Resources
    metadata_offset: int | None = None


def record_path(state_file: str) -> str:
    """``orders.yaml`` -> ``orders.yaml.applied.json``: the last-apply record beside the file."""
    return f"{state_file}.applied.json"
