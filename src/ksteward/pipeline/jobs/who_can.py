"""``ksteward pipeline who-can``: the principals and hosts allowed an operation on one resource, and why.

::

    answer = who_can(state.acls, settings, "TOPIC", "orders", "READ")
    answer = who_can(acls, settings, "TOPIC", "orders", "READ", principals=events.select("principal", "host"))

Each row is a (``principal``, ``host``) in the ACLs' own terms, and ``decide`` grants it:

- ``principal`` ``User:*`` means *every principal* (of every type: ``Group:x`` too) that no DENY in
  ``narrowed_by`` names; ``host`` ``*`` means *every host* that no DENY in ``narrowed_by`` names. A row is
  exactly ``decide`` of that principal and host: the literal strings ``User:*`` and ``*`` behave in the
  authorizer as a principal and a host that no ACL names specifically, i.e. "anyone else".
- Which rows: the principal and host of every ALLOW ACL that grants the operation on the resource (its
  name, the ``*`` wildcard, its prefixes; ALL and the ALLOW implications, docs/pipeline.md), each super user (host
  ``*``), ``User:*`` from ``*`` (so "everyone" shows whenever everyone is allowed, by a wildcard ACL or by
  ``allow.everyone.if.no.acl.found``), and, when ``principals`` is given, the observed (principal, host)
  pairs (e.g. from audit events). Of those, the ones ``decide`` grants.

The guarantee (tested): a concrete principal P from host H is allowed iff some row covers it (its principal
is P or ``User:*``, its host H or ``*``) and none of that row's ``narrowed_by`` DENYs names P (or ``User:*``)
and H (or ``*``).

Columns: ``principal``, ``host``; ``rule`` (``super_user``, ``acl``, ``allow_everyone_default``) and
``acl_id`` (the deciding ACL) as ``decide`` gives them; ``allowing_acl_ids`` (sorted array: every ALLOW ACL
that applies to this principal and host); ``narrowed_by_acl_ids`` (sorted array: the DENY ACLs, or ACLs
of UNKNOWN permission, that deny the operation to part of what the row covers: another principal under
``User:*``, another host under ``*``); ``note`` (the same in words).

The candidate ACLs are those of one resource, found with constant predicates (no join on names), in one
pass over ``acls``: every later step reads that small set, never ``acls`` again (the ACLs whose pattern
misses the resource cannot change a decision on it, nor whether it "has ACLs"). Up to
``LOCAL_RESOURCE_ACLS`` of them are brought to the driver and the rest of the answer is planned on that
local table (a handful of short stages); a resource that more ACLs match (a broad PREFIXED or ``*``
pattern times many principals) is cached in the executors instead, with the same answer. Rows and their
allowing ACLs are equi-joined; the ``narrowed_by`` pairing is a nested-loop join of two frames bounded by
the ACLs of that one resource.

The command prints at most ``--show`` rows (default ``SHOWN``) and the total; ``--out DIR`` writes them all.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Hashable, Sequence
from typing import IO, TYPE_CHECKING, Any, NamedTuple

from pyspark.sql import Column
from pyspark.sql import functions as F

from ksteward.authorizer import (
    WILDCARD_HOST,
    WILDCARD_PRINCIPAL,
    WILDCARD_RESOURCE,
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
    Rule,
    allow_grants,
    deny_denies,
    parse_enum,
)
from ksteward.pipeline.decide import (
    ACL_OPERATION_CODES,
    PATTERN_CODES,
    PERMISSION_CODES,
    RESOURCE_TYPE_CODES,
    decide,
    denies_operation,
    enum_code,
    grants_operation,
    reference_authorizer,
)
from ksteward.pipeline.local_frames import local_frame
from ksteward.pipeline.local_state import local_acls
from ksteward.pipeline.readers import InputError, read_audit, read_metadata
from ksteward.pipeline.schemas import ACL_SCHEMA, AuthorizerSettings
from ksteward.pipeline.state import state_at

from ._shared import (
    Progress,
    add_settings_arguments,
    at_kwargs,
    child_path,
    parse_at,
    print_table,
    settings_from_args,
    write_rejects,
    write_table,
)

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["LOCAL_RESOURCE_ACLS", "SHOWN", "add_arguments", "matching_acls", "parse_resource", "resource_acls", "run",
           "who_can"]  # fmt: skip

_ALLOW = int(AclPermissionType.ALLOW)

#: The most ACLs of one resource that ``who_can`` brings to the driver (about 200 bytes each); more are cached
#: in the executors instead.
LOCAL_RESOURCE_ACLS = 20_000

#: The rows the command prints by default (``--out`` writes every row).
SHOWN = 100


def _matches_resource(resource_type: ResourceType, resource_name: str) -> Column:
    """True on the ``ACL_SCHEMA`` rows whose pattern matches the one resource (LITERAL name or ``*``; PREFIXED,
    and UNKNOWN which Kafka scans as a prefix, that start it)."""
    pattern = enum_code("pattern_type", PATTERN_CODES, case_sensitive=True)
    name = F.col("resource_name")
    literal = (pattern == int(PatternType.LITERAL)) & ((name == resource_name) | (name == WILDCARD_RESOURCE))
    prefix = pattern.isin(int(PatternType.PREFIXED), int(PatternType.UNKNOWN)) & F.startswith(
        F.lit(resource_name), name
    )
    return (enum_code("resource_type", RESOURCE_TYPE_CODES) == int(resource_type)) & (literal | prefix)


def matching_acls(acls: DataFrame, resource_type: ResourceType, resource_name: str) -> tuple[DataFrame, bool]:
    """The ``ACL_SCHEMA`` rows of ``acls`` whose pattern matches the one resource, computed now (one pass over
    ``acls``), and whether they are local: a local table of up to ``LOCAL_RESOURCE_ACLS`` rows, else a cached
    frame."""
    spark = acls.sparkSession
    matching = acls.where(_matches_resource(resource_type, resource_name)).select(*ACL_SCHEMA.fieldNames())
    rows = matching.limit(LOCAL_RESOURCE_ACLS + 1).collect()
    if len(rows) <= LOCAL_RESOURCE_ACLS:
        return local_frame(spark, rows, ACL_SCHEMA), True
    return matching.persist(), False


def resource_acls(acls: DataFrame, resource_type: ResourceType, resource_name: str) -> DataFrame:
    """The ACLs whose pattern matches the one resource, with ``acl_op`` and ``perm`` codes added."""
    return acls.where(_matches_resource(resource_type, resource_name)).select(
        "acl_id",
        "principal",
        "host",
        enum_code("operation", ACL_OPERATION_CODES).alias("acl_op"),
        enum_code("permission_type", PERMISSION_CODES).alias("perm"),
    )


def _meets(row_value: Column, acl_value: Column, wildcard: str) -> Column:
    """The sets of principals (hosts) of a row and of an ACL intersect."""
    return (acl_value == row_value) | (acl_value == wildcard) | (row_value == wildcard)


def who_can(
    acls: DataFrame,
    settings: AuthorizerSettings,
    resource_type: ResourceType | str,
    resource_name: str,
    operation: AclOperation | str,
    *,
    principals: DataFrame | None = None,
) -> DataFrame:
    """Who is allowed ``operation`` on the resource (columns and meaning in the module docstring).

    ``principals``: optional observed ``principal``, ``host`` pairs to decide as well."""
    rt = parse_enum(ResourceType, resource_type)
    op = parse_enum(AclOperation, operation)
    spark = acls.sparkSession
    acls, local = matching_acls(acls, rt, resource_name)  # every ACL that can bear on the answer, read once
    if local and principals is None:
        rows = _answer_on_driver(acls, settings, rt, resource_name, op)
        if rows is not None:  # sorted, and written as one file
            return local_frame(spark, rows, _ANSWER_SCHEMA).coalesce(1)

    on_resource = resource_acls(acls, rt, resource_name).where(F.instr("principal", ":") > 0)
    allows = on_resource.where((F.col("perm") == _ALLOW) & grants_operation(F.col("acl_op"), F.lit(int(op))))
    denies = on_resource.where((F.col("perm") != _ALLOW) & denies_operation(F.col("acl_op"), F.lit(int(op))))
    fixed = [(WILDCARD_PRINCIPAL, WILDCARD_HOST)] + [(user, WILDCARD_HOST) for user in sorted(settings.super_users)]
    candidates = local_frame(spark, fixed, "principal string, host string").unionByName(
        allows.select("principal", "host")
    )
    if principals is not None:
        candidates = candidates.unionByName(principals.select("principal", "host"))
    requests = candidates.distinct().select(
        "principal",
        "host",
        F.lit(op.name).alias("operation"),
        F.lit(rt.name).alias("resource_type"),
        F.lit(resource_name).alias("resource_name"),
    )
    granted = decide(requests, acls, settings).where("granted").select("principal", "host", "rule", "acl_id")

    d, r = denies.alias("d"), granted.alias("r")
    allowing = (
        granted.select(
            "principal",
            "host",
            F.explode(F.array_distinct(F.array("principal", F.lit(WILDCARD_PRINCIPAL)))).alias("acl_principal"),
        )
        .select("*", F.explode(F.array_distinct(F.array("host", F.lit(WILDCARD_HOST)))).alias("acl_host"))
        .join(
            allows.select(F.col("principal").alias("acl_principal"), F.col("host").alias("acl_host"), "acl_id"),
            on=["acl_principal", "acl_host"],
        )
        .groupBy("principal", "host")
        .agg(F.array_sort(F.collect_set("acl_id")).alias("allowing_acl_ids"))
    )
    # The DENYs that meet a row: a condition with ORs, so a nested-loop join, but of two frames bounded by
    # the ACLs of this one resource.
    narrowing = (
        r.where(F.col("rule") != "super_user")
        .join(
            d,
            _meets(F.col("r.principal"), F.col("d.principal"), WILDCARD_PRINCIPAL)
            & _meets(F.col("r.host"), F.col("d.host"), WILDCARD_HOST),
        )
        .groupBy("r.principal", "r.host")
        .agg(F.array_sort(F.collect_set("d.acl_id")).alias("narrowed_by_acl_ids"))
    )
    empty = F.array().cast("array<string>")
    answer = (
        granted.join(allowing, on=["principal", "host"], how="left")
        .join(narrowing, on=["principal", "host"], how="left")
        .select(
            "principal",
            "host",
            "rule",
            "acl_id",
            F.coalesce("allowing_acl_ids", empty).alias("allowing_acl_ids"),
            F.coalesce("narrowed_by_acl_ids", empty).alias("narrowed_by_acl_ids"),
        )
    )
    return answer.withColumn("note", _note(rt, resource_name)).orderBy("principal", "host")


_ANSWER_SCHEMA = "principal string, host string, rule string, acl_id string, allowing_acl_ids array<string>, " \
    "narrowed_by_acl_ids array<string>, note string"  # fmt: skip


def _answer_on_driver(
    local: DataFrame, settings: AuthorizerSettings, rt: ResourceType, resource_name: str, op: AclOperation
) -> list[AnswerRow] | None:
    """The answer's rows from the resource's ACLs held in a local table (one collect of a local relation)."""
    return answer_rows(local.collect(), settings, rt, resource_name, op)


class AnswerRow(NamedTuple):
    """One row of the answer (the columns of the module docstring)."""

    principal: str
    host: str
    rule: str
    acl_id: str | None
    allowing_acl_ids: list[str]
    narrowed_by_acl_ids: list[str]
    note: str


def answer_rows(
    held: Sequence[Sequence[Any]],
    settings: AuthorizerSettings,
    rt: ResourceType,
    resource_name: str,
    op: AclOperation,
) -> list[AnswerRow] | None:
    """The answer's rows (sorted), from ``held``: the ``ACL_SCHEMA`` rows whose pattern matches the resource.
    The same rows as the Spark plan of ``who_can``, decided by the library authorizer that ``decide`` equals
    (``reference_authorizer``) rather than by a dozen Spark stages on a few rows.

    None when the ACLs cannot be loaded into the library as they are (a row it refuses, which ``decide``
    leaves out, or a repeated 7-tuple, which ``decide`` resolves by id): the Spark plan answers then."""
    if len({tuple(row[1:]) for row in held}) != len(held):
        return None
    bindings: dict[Hashable, AclBinding] = {}
    for row in held:
        try:
            bindings[row[0]] = AclBinding(*row[1:])
        except (ValueError, TypeError):
            return None
    auth = reference_authorizer(bindings, settings)
    allowing, denying = _allowing_and_denying(held, op)
    fixed = [(WILDCARD_PRINCIPAL, WILDCARD_HOST)] + [(user, WILDCARD_HOST) for user in sorted(settings.super_users)]
    wp, wh = WILDCARD_PRINCIPAL, WILDCARD_HOST
    candidates = sorted(set(fixed) | {(principal, host) for _, principal, host in allowing})
    rows: list[AnswerRow] = []
    for principal, host in candidates:
        decision = auth.authorize_with_reason(principal, host, op, rt, resource_name)
        if not decision.allowed:
            continue
        rule = decision.rule
        allowed_by = sorted({i for i, p, h in allowing if p in (principal, wp) and h in (host, wh)})
        narrowed = sorted({i for i, p, h in denying if _overlap(principal, p, wp) and _overlap(host, h, wh)})
        if rule is Rule.SUPER_USER:
            narrowed = []
        acl_id = decision.acl_id if rule is Rule.ACL else None
        note = _note_text(rt, resource_name, rule.value, principal, host, narrowed)
        rows.append(AnswerRow(principal, host, rule.value, acl_id, allowed_by, narrowed, note))  # type: ignore[arg-type]
    return rows


def _allowing_and_denying(
    held: Sequence[Sequence[Any]], op: AclOperation
) -> tuple[list[tuple[str, str, str]], list[tuple[str, str, str]]]:
    """(acl_id, principal, host) of the ALLOW ACLs that grant ``op`` and of the DENY (or UNKNOWN permission) ACLs
    that deny it, among ACLs whose principal has a type (``resource_acls``' filters, on the driver)."""
    allowing, denying = [], []
    for acl_id, _rt, _name, _pattern, principal, host, operation, permission in held:
        if principal is None or ":" not in principal:
            continue
        acl_op, perm = ACL_OPERATION_CODES.get(str(operation).upper()), PERMISSION_CODES.get(str(permission).upper())
        if acl_op is None or perm is None:
            continue
        if perm == _ALLOW and allow_grants(AclOperation(acl_op), op):
            allowing.append((acl_id, principal, host))
        elif perm != _ALLOW and deny_denies(AclOperation(acl_op), op):
            denying.append((acl_id, principal, host))
    return allowing, denying


def _overlap(row_value: str, acl_value: str, wildcard: str) -> bool:
    """``_meets`` on the driver."""
    return acl_value in (row_value, wildcard) or row_value == wildcard


def _note_text(rt: ResourceType, resource_name: str, rule: str, principal: str, host: str, narrowed: list[str]) -> str:
    """``_note`` on the driver."""
    parts = []
    if rule == "super_user":
        parts.append("super user: allowed from any host whatever the ACLs")
    if rule == "allow_everyone_default":
        parts.append(f"everyone: no ACL matches {rt.name}:{resource_name} and allow.everyone.if.no.acl.found=true")
    if rule == "acl" and principal == WILDCARD_PRINCIPAL:
        parts.append("every principal (of any type) not denied below")
    if rule != "super_user" and host == WILDCARD_HOST:
        parts.append("from any host not denied below")
    if narrowed:
        parts.append("narrowed by DENY " + ", ".join(narrowed))
    return "; ".join(parts)


def _note(rt: ResourceType, resource_name: str) -> Column:
    rule, principal, host = F.col("rule"), F.col("principal"), F.col("host")
    narrowed = F.col("narrowed_by_acl_ids")
    return F.concat_ws(
        "; ",
        F.when(rule == "super_user", F.lit("super user: allowed from any host whatever the ACLs")),
        F.when(
            rule == "allow_everyone_default",
            F.lit(f"everyone: no ACL matches {rt.name}:{resource_name} and allow.everyone.if.no.acl.found=true"),
        ),
        F.when(
            (rule == "acl") & (principal == WILDCARD_PRINCIPAL), F.lit("every principal (of any type) not denied below")
        ),
        F.when((rule != "super_user") & (host == WILDCARD_HOST), F.lit("from any host not denied below")),
        F.when(
            F.size(narrowed) > 0,
            F.concat(F.lit("narrowed by DENY "), F.array_join(narrowed, ", ")),
        ),
    )


# --- the command ----------------------------------------------------------------------------------


def parse_resource(text: str) -> tuple[ResourceType, str]:
    """``--resource TYPE:NAME`` (``TOPIC:orders``, ``Group:billing``; the name may contain colons)."""
    kind, sep, name = text.partition(":")
    try:
        rt = parse_enum(ResourceType, kind)
    except ValueError:
        rt = ResourceType.UNKNOWN
    if not sep or rt in (ResourceType.ANY, ResourceType.UNKNOWN):
        raise argparse.ArgumentTypeError(f"expected TYPE:NAME with TYPE one of TOPIC, GROUP, CLUSTER, ...: {text!r}")
    return rt, name


def _operation(text: str) -> AclOperation:
    try:
        op = parse_enum(AclOperation, text)
    except ValueError:
        op = AclOperation.UNKNOWN
    if op in (AclOperation.ANY, AclOperation.UNKNOWN, AclOperation.ALL):
        raise argparse.ArgumentTypeError(f"not a concrete operation: {text!r}")
    return op


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--metadata-dir", required=True, help="a data dir, a __cluster_metadata-0 dir, or one file")
    parser.add_argument("--resource", required=True, type=parse_resource, metavar="TYPE:NAME", help="TOPIC:orders")
    parser.add_argument("--operation", required=True, type=_operation, metavar="OP", help="READ, WRITE, DESCRIBE...")
    parser.add_argument(
        "--at", type=parse_at, default=None, metavar="OFFSET|TIMESTAMP", help="the state then (default: latest)"
    )
    parser.add_argument("--audit", nargs="+", metavar="PATH", help="also decide the principals/hosts seen here")
    parser.add_argument("--out", metavar="DIR", help="also write the answer to DIR/who_can")
    parser.add_argument("--show", type=int, default=SHOWN, metavar="N",
                        help=f"print at most N rows (default {SHOWN}; --out writes them all)")  # fmt: skip
    add_settings_arguments(parser)


def run(spark: SparkSession, args: argparse.Namespace, out: IO[str] | None = None) -> int:
    """Rebuild the state ``--at``, answer, print the table (and write it with ``--out``)."""
    settings = settings_from_args(args)
    progress = Progress(spark, "who-can", ("read", "answer"))
    progress.start("read")
    records, rejects = read_metadata(spark, args.metadata_dir, allow_partial=getattr(args, "allow_partial", False))
    state = state_at(records, **at_kwargs(args.at))
    observed = None
    if args.audit:
        events, audit_rejects = read_audit(spark, args.audit)
        observed = events.select("principal", "host").distinct()
        rejects = rejects.unionByName(audit_rejects)
    progress.start("answer")
    rt, name = args.resource
    answer = who_can(state.acls, settings, rt, name, args.operation, principals=observed).persist()
    try:
        if args.out:
            write_table(answer, child_path(args.out, "who_can"), args.format)
            write_rejects(rejects, args.out, args.format)
        elif rejects.limit(1).count():
            raise InputError(f"{rejects.count()} input record(s) rejected; give --out DIR to keep them")
        shown = max(args.show, 0)
        rows = answer.limit(shown + 1).collect()  # bounded: the answer may hold every observed principal
        total = len(rows) if len(rows) <= shown else answer.count()
    finally:
        answer.unpersist()
    progress.done()
    _print_answer(args, [AnswerRow(*row) for row in rows], total, out or sys.stdout)
    return 0


def run_local(args: argparse.Namespace, out: IO[str] | None = None) -> int | None:
    """The command without Spark, when the Spark plan has nothing more to give: no ``--audit``, no ``--out``,
    and a log on the local file system that ``local_state.local_acls`` reads on the driver (small, whole). The
    ACL state and the answer are the Spark plan's (``tests/pipeline/test_local_state.py``). None: run the Spark
    plan (``ksteward pipeline`` does when ``--master`` is given, too)."""
    if args.audit or args.out:
        return None
    progress = Progress(None, "who-can", ("read", "answer"))
    progress.start("read")
    acls = local_acls(args.metadata_dir, **at_kwargs(args.at))
    if acls is None:
        return None
    progress.start("answer")
    rt, name = args.resource
    held = [acl for acl in acls if _matches_on_driver(acl, rt, name)]
    rows = answer_rows(held, settings_from_args(args), rt, name, args.operation)
    if rows is None:
        return None
    progress.done()
    _print_answer(args, rows, len(rows), out or sys.stdout)
    return 0


def _matches_on_driver(acl: Sequence[Any], resource_type: ResourceType, resource_name: str) -> bool:
    """``_matches_resource`` on the driver, for an ``ACL_SCHEMA`` row."""
    _, acl_type, acl_name, pattern_type = acl[:4]
    if acl_name is None or RESOURCE_TYPE_CODES.get(str(acl_type).upper()) != int(resource_type):
        return False
    pattern = PATTERN_CODES.get(str(pattern_type))
    if pattern == int(PatternType.LITERAL):
        return acl_name in (resource_name, WILDCARD_RESOURCE)
    return pattern in (int(PatternType.PREFIXED), int(PatternType.UNKNOWN)) and resource_name.startswith(acl_name)


def _print_answer(args: argparse.Namespace, rows: Sequence[AnswerRow], total: int, out: IO[str]) -> None:
    """The count, at most ``--show`` rows, and where the rest are."""
    rt, name = args.resource
    shown = max(args.show, 0)
    print(f"{total} principal/host pair(s) may {args.operation.name} {rt.name}:{name}", file=out)
    print_table(
        ("principal", "host", "rule", "allowing ACLs", "note"),
        [(r.principal, r.host, r.rule, ",".join(r.allowing_acl_ids), r.note) for r in rows[:shown]],
        out,
    )
    if total > shown:
        where = f"all in {child_path(args.out, 'who_can')}" if args.out else "give --out DIR for all"
        print(f"... {total - shown} more ({where})", file=out)
