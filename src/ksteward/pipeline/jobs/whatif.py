"""``ksteward pipeline whatif``: which real requests would an ACL plan flip, before it is applied.

::

    plan = load_plan("plan.json")
    flips = whatif(events, acls, AuthorizerSettings.from_config(props), plan)

Every request of the window (``events``: ``AUTHZ_EVENT_SCHEMA``, or any frame with ``REQUEST_COLUMNS`` and
``event_time``) is re-decided twice with :func:`ksteward.pipeline.decide.decide_distinct`: under the current
state (``acls``, ``settings``) and under the planned one. The logged decision is not used: the comparison
is between two re-decisions, so a plan is judged on the very rules the broker applies. The events are
aggregated once into distinct requests (cached: every later step reads that small frame, not the events).
``whatif`` is eager: it computes the flips into a checkpoint and releases that cache before it returns (free
the checkpoint with ``_shared.release_checkpoint`` when done with it; the command checkpoints into files on a
cluster, as the audit does). Output, one row per request
whose ``granted`` differs, most events first:

- ``principal``, ``host``, ``operation``, ``resource_type``, ``resource_name``: the request. The host is kept
  because a decision depends on it (host-specific ACLs), so one row has one before and one after;
- ``events`` (long), ``first_seen``, ``last_seen`` (timestamps): how often and when it was seen;
- ``granted_before``, ``rule_before``, ``acl_id_before``, ``granted_after``, ``rule_after``, ``acl_id_after``:
  the two decisions (``DECISION_SCHEMA``; created ACLs have ids ``plan:create:N``);
- ``change``: ``ALLOWED->DENIED`` (a client would break) or ``DENIED->ALLOWED``.

The trap it exists for: with ``allow.everyone.if.no.acl.found=true`` a topic without ACLs is open to all,
and the first ALLOW on it (say for a new consumer) closes it to everyone else; every other principal that
used the topic shows up as ``ALLOWED->DENIED`` with ``rule_after = no_matching_acl``.

Plan file (JSON)::

    {
      "create": [
        {"resource_type": "TOPIC", "resource_name": "orders", "pattern_type": "LITERAL",
         "principal": "User:billing", "host": "*", "operation": "READ", "permission_type": "ALLOW"}
      ],
      "delete": [
        {"resource_type": "TOPIC", "resource_name": "legacy-", "pattern_type": "PREFIXED",
         "principal": "User:old-app", "operation": "ALL", "permission_type": "ALLOW"}
      ],
      "delete_matching": [
        {"principal": "User:contractor"},
        {"resource_type": "TOPIC", "resource_name": "payments-eu", "pattern_type": "MATCH"}
      ],
      "super.users": "User:admin;User:ops",
      "allow.everyone.if.no.acl.found": false
    }

- ``create``: ACL bindings; ``pattern_type`` defaults to ``LITERAL`` and ``host`` to ``*`` (as
  ``kafka-acls.sh``), every other field is required. Each is validated as CreateAcls is
  (``AclApis.handleCreateAcls``, ``AclControlManager.validateNewAcl``; docs/pipeline.md); one equal to an
  ACL that remains is a no-op, as in Kafka.
- ``delete``: exact bindings, the same fields and defaults as ``create``: removes that one ACL.
- ``delete_matching``: DeleteAcls filters (Kafka's ``AclBindingFilter.matches``): a missing
  ``resource_name``, ``principal`` or ``host`` matches anything, a missing enum field is ``ANY``;
  ``pattern_type`` ``MATCH`` removes every ACL that applies to the named resource (literal, ``*`` and
  prefixes). Filters with an ``UNKNOWN`` field are refused, as Kafka refuses them.
- ``super.users`` (Kafka's ``;``-separated string, or a JSON list) and ``allow.everyone.if.no.acl.found``
  (a JSON boolean or Kafka's string): the planned broker settings; absent means unchanged.

Deletions are matched against the current ACLs (as one DeleteAcls request), then the creations are added.
Every key is checked: an unknown key is an error (a misspelt ``"principle"`` must not silently widen a
filter). Errors name the file and the entry (``plan.json: delete_matching[1]: ...``).

How deletions are applied, without collecting the 100,000 ACLs to the driver: exact ``delete`` bindings
by a left-anti join on the seven fields (a plan may hold thousands), ``delete_matching`` filters as Spark
column expressions (:func:`filter_condition`): each filter is a constant predicate on one ACL row, so
removing them is a narrow ``where``, with the semantics of ``AclBindingFilter.matches`` (a test compares
the two on every pair of a grid of ACLs and filters).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, TypeVar

from pyspark.sql import Column
from pyspark.sql import functions as F

from ksteward.authorizer import (
    WILDCARD_HOST,
    WILDCARD_RESOURCE,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    InvalidAclError,
    PatternType,
    ResourceType,
    validate_new_acl,
)
from ksteward.pipeline.decide import (
    ACL_OPERATION_CODES,
    PERMISSION_CODES,
    RESOURCE_TYPE_CODES,
    acl_frame,
    decide_distinct,
    enum_code,
)
from ksteward.pipeline.readers import InputError, read_audit, read_metadata
from ksteward.pipeline.schemas import ACL_SCHEMA, REQUEST_COLUMNS, AuthorizerSettings
from ksteward.pipeline.state import state_at

from ._shared import (
    Progress,
    add_checkpoint_argument,
    add_settings_arguments,
    at_kwargs,
    checkpoint,
    checkpoint_directory,
    child_path,
    in_window,
    parse_at,
    parse_time,
    print_table,
    release_checkpoint,
    settings_from_args,
    write_rejects,
    write_table,
)

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["Plan", "add_arguments", "filter_condition", "flipped_requests", "load_plan", "parse_plan", "planned_acls",
           "requests_seen", "run", "unmatched_deletions", "whatif"]  # fmt: skip

_BINDING_FIELDS = ("resource_type", "resource_name", "pattern_type", "principal", "host", "operation",
                   "permission_type")  # fmt: skip
_SETTINGS_KEYS = ("super.users", "allow.everyone.if.no.acl.found")
_SECTIONS = ("create", "delete", "delete_matching")
ALLOWED_TO_DENIED = "ALLOWED->DENIED"
DENIED_TO_ALLOWED = "DENIED->ALLOWED"
CREATED_ID_PREFIX = "plan:create:"
_T = TypeVar("_T", AclBinding, AclBindingFilter)


@dataclass(frozen=True, slots=True)
class Plan:
    """An ACL change and, optionally, new broker settings (see the module docstring for the JSON form).

    ``delete`` holds exact bindings; ``delete_matching`` DeleteAcls filters. ``None`` settings: unchanged."""

    create: tuple[AclBinding, ...] = ()
    delete: tuple[AclBinding, ...] = ()
    delete_matching: tuple[AclBindingFilter, ...] = ()
    super_users: frozenset[str] | None = None
    allow_everyone_if_no_acl_found: bool | None = None

    def settings_after(self, current: AuthorizerSettings) -> AuthorizerSettings:
        """The broker settings once the plan is applied."""
        if self.super_users is not None:
            current = replace(current, super_users=self.super_users)
        if self.allow_everyone_if_no_acl_found is not None:
            current = replace(current, allow_everyone_if_no_acl_found=self.allow_everyone_if_no_acl_found)
        return current


# --- the plan file ----------------------------------------------------------------------------------


class _PlanError(Exception):
    pass


def _entry_fields(entry: object, *, exact: bool) -> dict[str, Any]:
    if not isinstance(entry, dict):
        raise _PlanError(f"expected an object, got {type(entry).__name__}")
    unknown = sorted(set(entry) - set(_BINDING_FIELDS))
    if unknown:
        raise _PlanError(f"unknown key(s) {', '.join(map(repr, unknown))}; the keys are {', '.join(_BINDING_FIELDS)}")
    for key, value in entry.items():
        if not isinstance(value, str):
            raise _PlanError(f"{key!r} must be a string, not {json.dumps(value)}")
    fields = dict(entry)
    if exact:
        fields.setdefault("pattern_type", "LITERAL")
        fields.setdefault("host", WILDCARD_HOST)
        missing = [f for f in _BINDING_FIELDS if f not in fields]
        if missing:
            raise _PlanError(f"missing {', '.join(map(repr, missing))}")
    return fields


def _construct(cls: type[_T], entry: object, *, exact: bool) -> _T:
    try:
        return cls(**_entry_fields(entry, exact=exact))
    except ValueError as exc:
        raise _PlanError(str(exc)) from None


def _binding(entry: object) -> AclBinding:
    acl = _construct(AclBinding, entry, exact=True)
    try:
        validate_new_acl(acl)
    except InvalidAclError as exc:
        raise _PlanError(f"not a valid ACL: {exc}") from None
    return acl


def _filter(entry: object) -> AclBindingFilter:
    acl_filter = _construct(AclBindingFilter, entry, exact=False)
    if acl_filter.is_unknown:
        raise _PlanError("a filter with an UNKNOWN field matches nothing (Kafka refuses it)")
    return acl_filter


def parse_plan(document: object, source: str = "plan") -> Plan:
    """A :class:`Plan` from the decoded JSON ``document``; InputError naming ``source`` and the bad entry."""
    if not isinstance(document, dict):
        raise InputError(f"{source}: the plan must be a JSON object")
    unknown = sorted(set(document) - set(_SECTIONS) - set(_SETTINGS_KEYS))
    if unknown:
        keys = ", ".join(map(repr, (*_SECTIONS, *_SETTINGS_KEYS)))
        raise InputError(f"{source}: unknown key(s) {', '.join(map(repr, unknown))}; the keys are {keys}")
    parsed: dict[str, list[Any]] = {}
    for section, parse in (("create", _binding), ("delete", _binding), ("delete_matching", _filter)):
        entries = document.get(section, [])
        if not isinstance(entries, list):
            raise InputError(f"{source}: {section!r} must be a list")
        parsed[section] = []
        for i, entry in enumerate(entries):
            try:
                parsed[section].append(parse(entry))
            except _PlanError as exc:
                raise InputError(f"{source}: {section}[{i}]: {exc}") from None
    return Plan(
        tuple(parsed["create"]),
        tuple(parsed["delete"]),
        tuple(parsed["delete_matching"]),
        _super_users(document, source),
        _allow_everyone(document, source),
    )


def _super_users(document: Mapping[str, Any], source: str) -> frozenset[str] | None:
    value = document.get("super.users")
    if value is None:
        return None
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        value = ";".join(value)
    if not isinstance(value, str):
        raise InputError(f"{source}: 'super.users' must be a string or a list of strings")
    try:
        return AuthorizerSettings.from_config({"super.users": value}).super_users
    except ValueError as exc:
        raise InputError(f"{source}: 'super.users': {exc}") from None


def _allow_everyone(document: Mapping[str, Any], source: str) -> bool | None:
    value = document.get("allow.everyone.if.no.acl.found")
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, str):
        return AuthorizerSettings.from_config({"allow.everyone.if.no.acl.found": value}).allow_everyone_if_no_acl_found
    raise InputError(f"{source}: 'allow.everyone.if.no.acl.found' must be a boolean")


def load_plan(path: str | Path) -> Plan:
    """Read and check the plan file at ``path`` (InputError naming the file, and the entry when it is one)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"{path}: {exc.strerror or exc}") from None
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}:{exc.lineno}: not JSON: {exc.msg}") from None
    return parse_plan(document, str(path))


# --- the job ------------------------------------------------------------------------------------------


def filter_condition(acl_filter: AclBindingFilter) -> Column:
    """True on the ``ACL_SCHEMA`` rows that ``acl_filter.matches`` (Kafka's ``AclBindingFilter.matches``), as
    one column expression."""
    cond = F.lit(True)
    if acl_filter.resource_type is not ResourceType.ANY:
        cond &= enum_code("resource_type", RESOURCE_TYPE_CODES) == int(acl_filter.resource_type)
    pattern, name = acl_filter.pattern_type, acl_filter.resource_name
    acl_pattern, acl_name = F.col("pattern_type"), F.col("resource_name")
    if pattern is not PatternType.ANY and pattern is not PatternType.MATCH:
        cond &= acl_pattern == pattern.name
    if name is not None:
        if pattern is PatternType.MATCH:
            literal = (acl_pattern == PatternType.LITERAL.name) & ((acl_name == name) | (acl_name == WILDCARD_RESOURCE))
            prefixed = (acl_pattern == PatternType.PREFIXED.name) & F.startswith(F.lit(name), acl_name)
            cond &= literal | prefixed
        else:
            cond &= acl_name == name
    if acl_filter.principal is not None:
        cond &= F.col("principal") == acl_filter.principal
    if acl_filter.host is not None:
        cond &= F.col("host") == acl_filter.host
    if acl_filter.operation is not AclOperation.ANY:
        cond &= enum_code("operation", ACL_OPERATION_CODES) == int(acl_filter.operation)
    if acl_filter.permission_type is not AclPermissionType.ANY:
        cond &= enum_code("permission_type", PERMISSION_CODES) == int(acl_filter.permission_type)
    return cond


def planned_acls(acls: DataFrame, plan: Plan) -> DataFrame:
    """``acls`` (``ACL_SCHEMA``) after the plan: the deletions removed, then the creations added (ids
    ``plan:create:N``; a creation equal to a remaining ACL adds nothing).

    Exact deletions are a left-anti join on the seven fields (a plan may delete thousands); the
    ``delete_matching`` filters, usually few, one ``where`` of their ``filter_condition``s."""
    spark = acls.sparkSession
    fields = list(_BINDING_FIELDS)
    kept = acls.select(*ACL_SCHEMA.fieldNames())
    if plan.delete:
        deleted = acl_frame(spark, [("", b) for b in dict.fromkeys(plan.delete)]).select(*fields)
        kept = kept.join(F.broadcast(deleted), on=fields, how="left_anti").select(*ACL_SCHEMA.fieldNames())
    if plan.delete_matching:
        removed = F.lit(False)
        for acl_filter in plan.delete_matching:
            removed |= filter_condition(acl_filter)
        kept = kept.where(~F.coalesce(removed, F.lit(False)))
    if not plan.create:
        return kept
    created = acl_frame(spark, [(f"{CREATED_ID_PREFIX}{i}", acl) for i, acl in enumerate(dict.fromkeys(plan.create))])
    new = created.join(kept.select(*fields), on=fields, how="left_anti").select(*ACL_SCHEMA.fieldNames())
    return kept.unionByName(new)


def unmatched_deletions(acls: DataFrame, plan: Plan) -> list[str]:
    """The plan's deletions that match no ACL of ``acls``, as ``delete[i]`` / ``delete_matching[i]``, in plan
    order. Two small jobs: the exact bindings by a join (a plan may hold thousands), the filters by one
    aggregate of their :func:`filter_condition`s."""
    found: set[str] = set()
    fields = list(_BINDING_FIELDS)
    if plan.delete:
        wanted = acl_frame(acls.sparkSession, [(f"delete[{i}]", b) for i, b in enumerate(plan.delete)])
        hits = wanted.join(acls.select(*fields).distinct(), on=fields, how="left_semi")
        found |= {row.acl_id for row in hits.select("acl_id").collect()}
    if plan.delete_matching:
        any_match = [
            F.max(filter_condition(f)).alias(f"delete_matching[{i}]") for i, f in enumerate(plan.delete_matching)
        ]
        row = acls.agg(*any_match).first()
        found |= {name for name, matched in (row.asDict() if row else {}).items() if matched}
    labels = [f"delete[{i}]" for i in range(len(plan.delete))]
    labels += [f"delete_matching[{i}]" for i in range(len(plan.delete_matching))]
    return [label for label in labels if label not in found]


def requests_seen(events: DataFrame) -> DataFrame:
    """One row per distinct request: ``REQUEST_COLUMNS``, ``events``, ``first_seen``, ``last_seen``."""
    return events.groupBy(*REQUEST_COLUMNS).agg(
        F.count(F.lit(1)).alias("events"),
        F.min("event_time").alias("first_seen"),
        F.max("event_time").alias("last_seen"),
    )


def whatif(
    events: DataFrame, acls: DataFrame, settings: AuthorizerSettings, plan: Plan | Mapping[str, Any]
) -> DataFrame:
    """The requests of ``events`` whose decision ``plan`` flips (columns in the module docstring), computed
    now into a checkpoint (``_shared.checkpoint``: files inside ``checkpoint_directory``, else the executors'
    memory), most events first.

    ``plan``: a :class:`Plan`, or the decoded JSON document of one (checked by :func:`parse_plan`)."""
    if not isinstance(plan, Plan):
        plan = parse_plan(plan)
    # Cached for the one job below: the events are aggregated once, not once per use (each decision reads
    # the distinct requests twice, and the result joins them back). The flips are checkpointed before the
    # cache is dropped, so nothing built on them goes back to the events.
    seen = requests_seen(events).persist()
    try:
        return checkpoint(flipped_requests(seen, acls, settings, plan))
    finally:
        seen.unpersist()


def flipped_requests(seen: DataFrame, acls: DataFrame, settings: AuthorizerSettings, plan: Plan) -> DataFrame:
    """Of the distinct requests ``seen`` (:func:`requests_seen`), those whose decision under ``acls`` and
    ``settings`` differs from the one under ``plan``, with both decisions, most events first (lazy; reads
    ``seen`` three times: pass a cached frame)."""
    keys = list(REQUEST_COLUMNS)

    def decided(acl_set: DataFrame, s: AuthorizerSettings, suffix: str) -> DataFrame:
        table = decide_distinct(seen, acl_set, s)
        return table.select(*keys, *[F.col(c).alias(f"{c}_{suffix}") for c in ("granted", "rule", "acl_id")])

    before = decided(acls, settings, "before")
    after = decided(planned_acls(acls, plan), plan.settings_after(settings), "after")
    both = seen.join(before, on=keys).join(after, on=keys)
    flipped = both.where(F.col("granted_before") != F.col("granted_after"))
    change = F.when(F.col("granted_before"), F.lit(ALLOWED_TO_DENIED)).otherwise(F.lit(DENIED_TO_ALLOWED))
    return flipped.select(
        *keys,
        "events",
        "first_seen",
        "last_seen",
        "granted_before",
        "rule_before",
        "acl_id_before",
        "granted_after",
        "rule_after",
        "acl_id_after",
        change.alias("change"),
    ).orderBy(F.desc("events"), *keys)


# --- the command ----------------------------------------------------------------------------------


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--metadata-dir", required=True, help="the current ACLs: a data dir or __cluster_metadata-0")
    parser.add_argument("--audit", required=True, nargs="+", metavar="PATH", help="audit log files, dirs or globs")
    parser.add_argument("--from", dest="start", type=parse_time, metavar="TIME", help="window start (inclusive)")
    parser.add_argument("--to", dest="end", type=parse_time, metavar="TIME", help="window end (exclusive)")
    parser.add_argument("--at", type=parse_at, default=None, metavar="OFFSET|TIMESTAMP",
                        help="judge the plan against the ACL state then (default: the latest)")  # fmt: skip
    parser.add_argument("--plan", required=True, metavar="PLAN.json", help="the ACL change (format: module docs)")
    parser.add_argument("--out", required=True, metavar="DIR", help="writes DIR/flips (and DIR/rejects)")
    parser.add_argument("--show", type=int, default=20, metavar="N", help="rows of the summary table (default 20)")
    parser.add_argument("--fail-on-break", action="store_true",
                        help="exit 1 when a request that is allowed today would be denied")  # fmt: skip
    add_checkpoint_argument(parser)
    add_settings_arguments(parser)


def run(spark: SparkSession, args: argparse.Namespace, out: IO[str] | None = None) -> int:
    """Read the state and the window's events, apply ``--plan``, write the flips and print a summary.

    A deletion that matches no current ACL is said on stderr (a misspelt binding would otherwise make the plan
    look harmless); under ``--fail-on-break`` it is an error (exit 2): the check must not pass vacuously."""
    out = out or sys.stdout
    plan = load_plan(args.plan)
    settings = settings_from_args(args)
    progress = Progress(spark, "whatif", ("read", "analyse", "write"))
    progress.start("read")
    records, metadata_rejects = read_metadata(
        spark, args.metadata_dir, allow_partial=getattr(args, "allow_partial", False)
    )
    events, audit_rejects = read_audit(spark, args.audit)
    # a log replay, read by the check below and by both decisions
    acls = state_at(records, **at_kwargs(args.at)).acls.persist()
    rejects = metadata_rejects.unionByName(audit_rejects)
    try:
        # As the audit's: checkpoints in files on a cluster (an executor lost does not lose the flips).
        with checkpoint_directory(spark, getattr(args, "checkpoint_dir", None), args.out):
            code = _run(args, plan, settings, events, acls, rejects, progress, out)
    finally:
        acls.unpersist()
    progress.done()
    return code


def _run(
    args: argparse.Namespace,
    plan: Plan,
    settings: AuthorizerSettings,
    events: DataFrame,
    acls: DataFrame,
    rejects: DataFrame,
    progress: Progress,
    out: IO[str],
) -> int:
    """:func:`run` once the state is read: the deletions check, the flips, their summary."""
    progress.start("analyse")
    unmatched = unmatched_deletions(acls, plan)
    if unmatched and args.fail_on_break:
        others = f" (and {len(unmatched) - 1} more)" if len(unmatched) > 1 else ""
        raise InputError(
            f"{args.plan}: {unmatched[0]}{others} matches no current ACL, so --fail-on-break cannot pass on it"
        )
    for label in unmatched:
        print(
            f"ksteward pipeline whatif: {args.plan}: {label} matches no current ACL: it deletes nothing",
            file=sys.stderr,
        )
    flips = whatif(in_window(events, args.start, args.end), acls, settings, plan)
    try:
        progress.start("write")
        target = child_path(args.out, "flips")
        write_table(flips, target, args.format)
        write_rejects(rejects, args.out, args.format)
        breaks = _print_summary(flips, target, args.show, out)
    finally:
        release_checkpoint(flips)
    return 1 if args.fail_on_break and breaks else 0


def _print_summary(flips: DataFrame, target: str | Path, show: int, out: IO[str]) -> int:
    """Print the totals per change and the ``show`` flips with the most events; returns how many requests
    would be denied."""
    totals = flips.groupBy("change").agg(F.count(F.lit(1)).alias("requests"), F.sum("events").alias("events"))
    by_change = {r.change: (r.requests, r.events) for r in totals.collect()}
    breaks = by_change.get(ALLOWED_TO_DENIED, (0, 0))
    opens = by_change.get(DENIED_TO_ALLOWED, (0, 0))
    print(f"{breaks[0]} request(s) ({breaks[1]} events) would be denied, "
          f"{opens[0]} ({opens[1]} events) newly allowed -> {target}", file=out)  # fmt: skip
    rows = flips.orderBy(F.desc("events"), *REQUEST_COLUMNS).limit(show).collect()
    print_table(
        ("change", "principal", "host", "operation", "resource", "events", "rule before -> after"),
        [
            (
                r.change,
                r.principal,
                r.host,
                r.operation,
                f"{r.resource_type}:{r.resource_name}",
                r.events,
                f"{r.rule_before} -> {r.rule_after}",
            )
            for r in rows
        ],
        out,
    )
    return int(breaks[0])
