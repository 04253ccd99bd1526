"""``audit``: which ACLs are used, which are dead, which can never matter, and who was denied.

::

    result = audit(events, acls, AuthorizerSettings(), start=datetime(2026, 11, 1, tzinfo=UTC), end=None)
    result.acl_usage.where("hits = 0").show()        # = result.unused_acls

``events`` are in ``AUTHZ_EVENT_SCHEMA`` (any audit source), ``acls`` in ``ACL_SCHEMA``: the ACL state the
window is judged against (``run`` takes it from the metadata log at the window's end, or at its last record).

**Window.** An event counts when ``start <= event_time < end``; a bound left ``None`` is open. Naive
datetimes are UTC.

**Attribution** (which ACL an event credits with a hit):

- An event that names its ACL (``acl_id`` set: ksteward's own lines) credits that ACL; an event whose rule
  names none (``super_user``, ``allow_everyone_default``, ``no_matching_acl``) credits no ACL. Both are taken
  as logged (``attribution = logged``).
- An event with no ``acl_id`` and either no ``rule`` (Confluent's lines) or ``rule = acl`` (Kafka's
  ``kafka.authorizer.logger`` ``MatchingAcl(...)`` lines, which print the ACL but no id) is re-decided with
  :func:`ksteward.pipeline.decide.decide` against ``acls`` and ``settings``, which names the ACL
  ``StandardAuthorizer.authorize_with_reason`` would (the first applicable DENY, else the last applicable
  ALLOW). It credits that ACL only when the re-decision agrees with the log: the same ``granted`` and, when
  the line had a rule, the same rule (``attribution = redecided``). Otherwise the ACL state is not the one
  the broker decided with: nothing is credited, the logged rule is kept and the event is ``unattributed``
  (the one name for it, in every table, the summary and the report). An unattributed event never inflates a
  hit count.

Re-deciding works on distinct access tuples, not on events: events are first grouped per day and tuple.

**Coverage** (static, on ``acls`` alone; see :func:`covered_acls`): an ALLOW ACL A is *shadowed* by a DENY
D when D matches every request A matches, so A can never take effect; A is *redundant* because of another
ALLOW B when B matches every request A matches, so deleting A changes no decision. "X matches every
request Y matches" (X *covers* Y) holds when all of these hold:

- resource: same resource type, and X's pattern covers Y's: X LITERAL ``*`` covers every name of the type;
  X LITERAL n covers Y LITERAL n; X PREFIXED p covers Y LITERAL or PREFIXED names that start with p
  (p itself included), except Y LITERAL ``*``, which only a LITERAL ``*`` covers;
- principal: X's equals Y's, or X's is ``User:*`` (which matches every principal type);
- host: X's equals Y's, or X's is ``*``;
- operation: every operation Y grants (ALLOW's implications, as in docs/pipeline.md, read from
  ``ksteward.authorizer.ALLOW_IMPLICATIONS``) is one X denies (DENY: its own operation, or ALL) or grants (ALLOW,
  with implications). So ALLOW READ covers ALLOW DESCRIBE, and DENY READ does not shadow ALLOW READ (which
  also grants DESCRIBE).

Only single covering ACLs count (a union of two DENYs that together cover A is not detected). ACLs whose
principal has no colon never apply (docs/pipeline.md; KAFKA-18051) and are left out, as are
non-LITERAL/PREFIXED patterns. A DENY or UNKNOWN permission shadows (Kafka treats UNKNOWN as deny).

**Command.** ``ksteward pipeline audit --metadata-dir DIR --audit PATH... [--from TIME] [--to TIME] --out OUT``
(settings: ``--server-config FILE`` and/or ``--super-users``, ``--allow-everyone-if-no-acl-found``) writes
each table of :class:`AuditResult` to ``OUT/<table>/`` (the per-event ones partitioned by ``event_date``),
the reader rejects to ``OUT/rejects/``, the HTML report to ``OUT/report.html``, and prints a summary. Each of
its four phases (read, analyse, write tables, report) says one line on stderr as it starts, and the last
line gives each one's time; Spark's console progress bar is shown only when stderr is a terminal
(``pipeline.session``).

**Where the steps are.** This module holds the job (:func:`audit`), its attribution and coverage steps and
the command; the tables built from the access tuples are in ``_audit_tables``, the writing and the report
data in ``_audit_output``. Everything is imported from here.
"""

from __future__ import annotations

import argparse
import sys
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from typing import IO, NamedTuple

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from ksteward.authorizer import (
    WILDCARD_HOST,
    WILDCARD_PRINCIPAL,
    WILDCARD_RESOURCE,
    AclOperation,
    Rule,
    allow_grants,
    deny_denies,
)
from ksteward.pipeline.decide import BROADCAST_ACLS
from ksteward.pipeline.readers import InputError
from ksteward.pipeline.schemas import ACL_SCHEMA, REQUEST_COLUMNS, AuthorizerSettings

from ._audit_output import PARTITIONED_TABLES, report_data, summary, write_result
from ._audit_tables import (
    TOP_PRINCIPALS,
    UNATTRIBUTED,
    acl_hits_daily,
    acl_usage,
    denials_by_tuple,
    hits_not_in_state,
    top_denied_operations,
    top_denied_principals,
    top_denied_resources,
    unused_acls,
    window_totals,
)
from ._shared import (
    Progress,
    adaptive_execution,
    add_checkpoint_argument,
    add_settings_arguments,
    checkpoint,
    checkpoint_directory,
    child_path,
    in_window,
    parse_time,
    release_checkpoint,
    settings_from_args,
    write_rejects,
    write_text,
)

# The steps of the audit live in private modules; this module is the job's one public surface.
__all__ = [
    "PARTITIONED_TABLES",
    "AuditResult",
    "access_tuples",
    "acl_hits_daily",
    "acl_usage",
    "add_arguments",
    "attribute",
    "audit",
    "covered_acls",
    "denials_by_tuple",
    "operation_cover_rows",
    "redecisions",
    "report_data",
    "run",
    "summary",
    "top_denied_principals",
    "write_result",
]

ACL_COLUMNS = tuple(ACL_SCHEMA.fieldNames())
_TUPLE = ("event_date", *REQUEST_COLUMNS)


class AuditResult(NamedTuple):
    """The audit's outputs. ``access`` is a checkpoint and ``totals`` a literal row (see :func:`audit`);
    ``acl_usage``, ``acl_hits_daily``, ``shadowed_acls``, ``denials`` and ``denials_by_hour`` are cached
    when first used; the rest are built from them. :meth:`unpersist` frees them all.

    ``access`` (per day and access tuple, partitioned by ``event_date`` on disk): ``event_date``,
    ``principal``, ``host``, ``operation``, ``resource_type``, ``resource_name``, ``granted`` (as logged),
    ``rule`` and ``acl_id`` (logged or re-decided, null when unattributed), ``attribution`` (``logged``,
    ``redecided`` or ``unattributed``), ``events``, ``first_seen``, ``last_seen``.

    ``acl_usage`` (one row per ACL of the state): the ``ACL_SCHEMA`` columns, ``hits`` (events it decided),
    ``redecided_hits`` (how many of those were attributed by re-deciding), ``first_used``, ``last_used``
    (null when unused).

    ``acl_hits_daily`` (partitioned by ``event_date``): ``event_date``, ``acl_id``, ``hits``, ``first_used``,
    ``last_used``, ``in_state`` (false for an id the state does not have: the ACL was deleted since).

    ``unused_acls``: the ``ACL_SCHEMA`` columns of the ACLs with no hit in the window, ``safe_to_delete`` and
    ``why`` (``_audit_tables.unused_acls``; the rule is in docs/pipeline.md, "Unused ACLs safe to delete").

    ``acl_hits_not_in_state``: per ACL id credited in the window that the state no longer has, its ``hits``,
    ``first_used``, ``last_used`` and who used it (``_audit_tables.hits_not_in_state``).

    ``shadowed_acls``: one row per ALLOW ACL and ``kind`` (``shadowed`` by a DENY, ``redundant`` because of
    an ALLOW): its ``ACL_SCHEMA`` columns, ``kind``, ``covering_count`` (how many ACLs cover it) and the one
    with the smallest id: ``covering_acl_id``, ``covering_resource_name``, ``covering_pattern_type``,
    ``covering_principal``, ``covering_host``, ``covering_operation``, ``covering_permission_type``.

    ``denials`` (partitioned by ``event_date``): ``event_date``, ``principal``, ``resource_type``,
    ``resource_name``, ``operation``, ``denials`` (events), ``hosts`` (distinct), ``rules`` and
    ``deny_acl_ids`` (sorted distinct rules and deciding DENY ids), ``first_denied``, ``last_denied``.

    ``denials_by_hour`` (partitioned by ``event_date``): ``event_date``, ``hour`` (timestamp truncated to the
    hour), ``denials``.

    ``top_denied_principals``: ``rank`` (1 = most denied), ``principal``, ``denials``, ``resources``
    (distinct type and name), ``operations`` (sorted distinct), ``first_denied``, ``last_denied``.
    ``top_denied_resources`` and ``top_denied_operations``: the same by resource and by operation
    (``_audit_tables.top_denied_resources``, ``top_denied_operations``).

    ``totals`` (one row, computed before :func:`audit` returns): ``window_start``, ``window_end`` (the bounds
    given, else the first and last event), ``events``, ``granted``, ``denied``, ``logged``, ``redecided``,
    ``unattributed``, ``acls``, ``acls_used``, ``acls_unused``, ``shadowed``, ``redundant``,
    ``hits_on_acls_not_in_state``.
    """

    access: DataFrame
    acl_usage: DataFrame
    acl_hits_daily: DataFrame
    unused_acls: DataFrame
    acl_hits_not_in_state: DataFrame
    shadowed_acls: DataFrame
    denials: DataFrame
    denials_by_hour: DataFrame
    top_denied_principals: DataFrame
    top_denied_resources: DataFrame
    top_denied_operations: DataFrame
    totals: DataFrame

    def unpersist(self) -> None:
        """Drop the cached tables (``access`` and the small ones built from it) once the outputs are written."""
        release_checkpoint(self.access)
        for frame in (self.acl_usage, self.acl_hits_daily, self.shadowed_acls, self.denials, self.denials_by_hour):
            frame.unpersist()


# --- the job ------------------------------------------------------------------------------------


def audit(
    events: DataFrame,
    acls: DataFrame,
    settings: AuthorizerSettings,
    *,
    start: datetime | None,
    end: datetime | None,
    top_n: int = TOP_PRINCIPALS,
) -> AuditResult:
    """The audit of ``events`` in ``[start, end)`` against the ACL state ``acls``. See the module doc.

    Eager in two respects: ``access`` is computed (one pass over ``events``) and checkpointed before it
    returns, so that every table built on it plans against the checkpoint, not the re-decision's plan; and
    ``totals`` is collected. The other tables are lazy. Call :meth:`AuditResult.unpersist` when done."""
    start, end = (t.replace(tzinfo=UTC) if t is not None and t.tzinfo is None else t for t in (start, end))
    if start is not None and end is not None and start >= end:
        raise InputError(f"the window {start.isoformat()} .. {end.isoformat()} is empty: start must be before end")
    spark = events.sparkSession
    windowed = in_window(events, start, end)
    # One scan of the events, to the access tuples, checkpointed: the re-decision reads them twice and the join
    # that attributes them once, and what is built on a checkpoint plans against a short lineage. Partitioned
    # by date, so ``access`` is written as it is and the per-day tables need no shuffle; planned without AQE,
    # whose plans' checkpoints do not record their partitioning (Spark 4.0).
    with adaptive_execution(spark, enabled=False):
        tuples = checkpoint(access_tuples(windowed).repartition("event_date"))
    covered = covered_acls(acls).persist()
    by_hour = (
        windowed.where(~F.col("granted"))
        .groupBy("event_date", F.date_trunc("hour", "event_time").alias("hour"))
        .agg(F.count(F.lit(1)).alias("denials"))
        .persist()  # a second pass over the events, of two columns: written, then read again by the report
    )
    # The coverage analysis (the ACLs alone) and the hourly denials run beside the re-decision, a chain of
    # short stages that leaves the cores idle between them.
    with ThreadPoolExecutor(2, thread_name_prefix="audit") as pool:
        beside = [pool.submit(frame.count) for frame in (covered, by_hour)]
        decisions = checkpoint(redecisions(tuples, acls, settings))
        for job in beside:
            job.result()  # before the AQE setting changes under them
    with adaptive_execution(spark, enabled=False):
        access = checkpoint(attribute(tuples, decisions, broadcast=decisions.count() <= BROADCAST_DECISIONS))
    release_checkpoint(tuples)
    release_checkpoint(decisions)
    # The small derived tables feed several outputs (and the totals): cache them rather than recompute.
    usage = acl_usage(access, acls).persist()
    daily = acl_hits_daily(access, acls).persist()
    denials = denials_by_tuple(access).persist()
    unused = unused_acls(usage, access, covered, settings)
    gone = hits_not_in_state(access, acls)
    tops = (
        top_denied_principals(denials, top_n),
        top_denied_resources(denials, top_n),
        top_denied_operations(denials, top_n),
    )
    totals = window_totals(access, usage, covered, daily, start, end)
    return AuditResult(access, usage, daily, unused, gone, covered, denials, by_hour, *tops, totals)


def access_tuples(events: DataFrame) -> DataFrame:
    """Events grouped per day and (tuple, logged decision): ``events``, ``first_seen``, ``last_seen``."""
    return events.groupBy(*_TUPLE, "granted", "rule", "acl_id").agg(
        F.count(F.lit(1)).alias("events"),
        F.min("event_time").alias("first_seen"),
        F.max("event_time").alias("last_seen"),
    )


def _unnamed() -> Column:
    """The tuples whose source named no ACL: no ``acl_id``, and no rule or the ``acl`` rule."""
    rule = F.col("rule")
    return F.col("acl_id").isNull() & (rule.isNull() | (rule == Rule.ACL.value))


def redecisions(tuples: DataFrame, acls: DataFrame, settings: AuthorizerSettings) -> DataFrame:
    """The decision of each distinct request of the tuples whose source named no ACL, by
    :func:`ksteward.pipeline.decide.decide_distinct`: ``REQUEST_COLUMNS``, ``decided_granted``, ``decided_rule``,
    ``decided_acl_id``. ``tuples`` is read twice: pass a cached or checkpointed frame."""
    from ksteward.pipeline.decide import decide_distinct

    return decide_distinct(tuples.where(_unnamed()), acls, settings).select(
        *REQUEST_COLUMNS,
        F.col("granted").alias("decided_granted"),
        F.col("rule").alias("decided_rule"),
        F.col("acl_id").alias("decided_acl_id"),
    )


def attribute(tuples: DataFrame, decisions: DataFrame, *, broadcast: bool = True) -> DataFrame:
    """Fill ``rule``/``acl_id`` of the tuples whose source named no ACL from ``decisions``
    (:func:`redecisions`, joined onto the tuples with one left join: broadcast when ``broadcast``, which
    keeps the tuples' partitioning; else shuffled, and the tuples partitioned by date again) and add
    ``attribution``; the tuples a source named keep theirs (see the module doc)."""
    rule, acl_id = F.col("rule"), F.col("acl_id")
    unnamed = _unnamed()
    joined = tuples.join(F.broadcast(decisions) if broadcast else decisions, on=list(REQUEST_COLUMNS), how="left")
    if not broadcast:
        joined = joined.repartition("event_date")
    agrees = (F.col("decided_granted") == F.col("granted")) & (rule.isNull() | (F.col("decided_rule") == rule))
    agrees = F.coalesce(agrees, F.lit(False))
    return joined.select(
        *_TUPLE,
        "granted",
        F.when(unnamed & agrees, F.col("decided_rule")).otherwise(rule).alias("rule"),
        F.when(~unnamed, acl_id).when(agrees, F.col("decided_acl_id")).alias("acl_id"),
        F.when(~unnamed, F.lit("logged"))
        .when(agrees, F.lit("redecided"))
        .otherwise(F.lit(UNATTRIBUTED))
        .alias("attribution"),
        "events",
        "first_seen",
        "last_seen",
    )


#: The most distinct re-decided requests the audit broadcasts onto the access tuples (about 200 bytes each);
#: above it the join shuffles both sides.
BROADCAST_DECISIONS = 1_000_000


# --- coverage: shadowed and redundant ACLs ------------------------------------------------------

_REQUEST_OPS = tuple(op for op in AclOperation if op not in (AclOperation.UNKNOWN, AclOperation.ANY, AclOperation.ALL))


def _granted_by(acl_op: AclOperation) -> frozenset[AclOperation]:
    """The requested operations an ALLOW of ``acl_op`` grants (implications included)."""
    return frozenset(op for op in _REQUEST_OPS if allow_grants(acl_op, op))


def _denied_by(acl_op: AclOperation) -> frozenset[AclOperation]:
    """The requested operations a DENY of ``acl_op`` denies (its own, or all for ALL)."""
    return frozenset(op for op in _REQUEST_OPS if deny_denies(acl_op, op))


def operation_cover_rows() -> list[tuple[str, str, str, str]]:
    """(kind, operation, covering permission, covering operation): an ALLOW of ``operation`` is ``kind``
    when an ACL with that permission and operation covers its resource, principal and host."""
    rows = []
    for op in AclOperation:
        granted = _granted_by(op)
        if not granted:
            continue  # an operation no request has (UNKNOWN, ANY): the ACL never applies
        for cover in AclOperation:
            if granted <= _granted_by(cover):
                rows.append(("redundant", op.name, "ALLOW", cover.name))
            if granted <= _denied_by(cover):
                rows.extend(("shadowed", op.name, permission, cover.name) for permission in ("DENY", "UNKNOWN"))
    return rows


def _cover_kind() -> Column:
    """``kind`` of a (covered ALLOW, covering ACL) pair by their operations and the covering permission, per
    :func:`operation_cover_rows`; null when the covering ACL's operation does not cover. A set lookup, not a
    join: the table is a few dozen rows."""
    rows = operation_cover_rows()
    pairs = {
        kind: sorted({f"{op}|{cover}" for k, op, _, cover in rows if k == kind}) for kind in ("redundant", "shadowed")
    }
    shadowing = sorted({perm for k, _, perm, _ in rows if k == "shadowed"})
    pair = F.concat_ws("|", "operation", "k_operation")
    permission = F.col("k_permission")
    return F.when((permission == "ALLOW") & pair.isin(pairs["redundant"]), F.lit("redundant")).when(
        permission.isin(shadowing) & pair.isin(pairs["shadowed"]), F.lit("shadowed")
    )


#: A covering ACL's columns under their join-key names.
_COVER_KEYS = (
    ("acl_id", "k_acl_id"),
    ("resource_name", "k_name"),
    ("pattern_type", "k_pattern"),
    ("principal", "k_principal"),
    ("host", "k_host"),
    ("operation", "k_operation"),
    ("permission_type", "k_permission"),
)


class _KeyShapes(NamedTuple):
    """What the ACL set holds that decides which covering keys are worth generating."""

    prefix_lengths: list[int]  # the lengths of PREFIXED names
    wildcard_principal: bool  # some ACL is for User:*
    wildcard_resource: bool  # some ACL is LITERAL *
    rows: int  # how many: the covering side is broadcast up to decide.BROADCAST_ACLS of them


def _key_shapes(acls: DataFrame) -> _KeyShapes:
    """One small job: the distinct PREFIXED name lengths and whether the wildcards occur at all."""
    row = acls.agg(
        F.collect_set(F.when(F.col("pattern_type") == "PREFIXED", F.length("resource_name"))).alias("lengths"),
        F.max(F.col("principal") == WILDCARD_PRINCIPAL).alias("principal"),
        F.max((F.col("pattern_type") == "LITERAL") & (F.col("resource_name") == WILDCARD_RESOURCE)).alias("resource"),
        F.count(F.lit(1)).alias("rows"),
    ).first()
    if row is None:
        return _KeyShapes([], False, False, 0)
    lengths = sorted(n for n in row["lengths"] if n)
    return _KeyShapes(lengths, bool(row["principal"]), bool(row["resource"]), int(row["rows"]))


def covered_acls(acls: DataFrame) -> DataFrame:
    """The ALLOW ACLs shadowed by a DENY or redundant because of another ALLOW (see the module doc).

    Equi-joins only: each ALLOW is exploded into the (pattern, name, principal, host) keys an ACL covering it
    would have — the same LITERAL name, LITERAL ``*``, each PREFIXED prefix of its name, its principal and
    ``User:*``, its host and ``*``, leaving out prefix lengths and wildcards no ACL has — and joined to the
    ACLs' own keys;
    operations are then checked against the small table of :func:`operation_cover_rows` (:func:`_cover_kind`)."""
    applicable = acls.where(F.col("principal").contains(":") & F.col("pattern_type").isin("LITERAL", "PREFIXED"))
    shapes = _key_shapes(applicable)
    name, pattern = F.col("resource_name"), F.col("pattern_type")
    keys = [F.when(pattern == "LITERAL", F.struct(F.lit("LITERAL").alias("p"), name.alias("n")))]
    if shapes.wildcard_resource:
        keys.append(F.struct(F.lit("LITERAL").alias("p"), F.lit(WILDCARD_RESOURCE).alias("n")))
    not_wildcard_literal = ~((pattern == "LITERAL") & (name == WILDCARD_RESOURCE))
    for length in shapes.prefix_lengths:
        keys.append(
            F.when(
                not_wildcard_literal & (F.length(name) >= length),
                F.struct(F.lit("PREFIXED").alias("p"), F.substring(name, 1, length).alias("n")),
            )
        )
    resource_keys = F.array_distinct(F.array(*keys))  # a null stands for the keys left out; dropped below
    principals = [F.col("principal"), *([F.lit(WILDCARD_PRINCIPAL)] if shapes.wildcard_principal else [])]
    coverers = applicable.select("resource_type", *(F.col(field).alias(key) for field, key in _COVER_KEYS))
    resource = ["resource_type", "k_pattern", "k_name"]
    # Two broadcast joins, no shuffle: the resource keys some ACL has (so only those are multiplied by the
    # principal and host keys), then the covering ACLs on all five keys. Broadcast up to BROADCAST_ACLS ACLs.
    hint = F.broadcast if shapes.rows <= BROADCAST_ACLS else (lambda frame: frame)
    allows = (
        applicable.where(F.col("permission_type") == "ALLOW")
        .repartition(acls.sparkSession.sparkContext.defaultParallelism)  # the explosion is the work: spread it
        .select(*ACL_COLUMNS, F.explode(resource_keys).alias("rk"))
        .where(F.col("rk").isNotNull())
        .select(*ACL_COLUMNS, F.col("rk.p").alias("k_pattern"), F.col("rk.n").alias("k_name"))
        .join(hint(coverers.select(*resource).distinct()), resource, "left_semi")
        .withColumn("k_principal", F.explode(F.array_distinct(F.array(*principals))))
        .withColumn("k_host", F.explode(F.array_distinct(F.array("host", F.lit(WILDCARD_HOST)))))
    )
    pairs = (
        allows.join(hint(coverers), [*resource, "k_principal", "k_host"])
        .where(F.col("k_acl_id") != F.col("acl_id"))
        .withColumn("kind", _cover_kind())
        .where(F.col("kind").isNotNull())
    )
    cover = F.struct(*(F.col(key).alias(field) for field, key in _COVER_KEYS))
    grouped = pairs.groupBy(*ACL_COLUMNS, "kind").agg(
        F.count(F.lit(1)).alias("covering_count"), F.min(cover).alias("c")
    )
    return grouped.select(
        *ACL_COLUMNS,
        "kind",
        "covering_count",
        *(F.col(f"c.{field}").alias(f"covering_{field}") for field, _ in _COVER_KEYS),
    )


# --- the command: ksteward pipeline audit -------------------------------------------------------


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``ksteward pipeline audit`` (the window and settings options as ``whatif`` has them)."""
    parser.add_argument("--metadata-dir", required=True, metavar="DIR",
                        help="a data dir or a KRaft __cluster_metadata-0 directory: the ACL state")  # fmt: skip
    parser.add_argument("--audit", nargs="+", required=True, metavar="PATH",
                        help="audit log files, dirs or globs (ksteward, Confluent, Kafka authorizer)")  # fmt: skip
    parser.add_argument("--from", dest="start", type=parse_time, metavar="TIME", help="window start (inclusive)")
    parser.add_argument("--to", dest="end", type=parse_time, metavar="TIME",
                        help="window end (exclusive), where the ACL state is taken (default: the end)")  # fmt: skip
    parser.add_argument(
        "--out", required=True, metavar="DIR", help="output directory (a path or a URI: hdfs://, s3a://)"
    )
    parser.add_argument("--top", type=int, default=TOP_PRINCIPALS, help="how many top denied principals")
    add_checkpoint_argument(parser)
    add_settings_arguments(parser)


def run(spark: SparkSession, args: argparse.Namespace, out: IO[str] | None = None) -> int:
    """``ksteward pipeline audit``: read, audit, write the tables, the rejects and ``report.html``; print a summary.

    One line on stderr as each phase starts (:class:`~ksteward.pipeline.jobs._shared.Progress`)."""
    from ksteward.pipeline.readers import read_audit, read_metadata
    from ksteward.pipeline.report import render_report
    from ksteward.pipeline.state import state_at

    settings = settings_from_args(args)
    target: str = args.out  # a URI stays a URI (``_shared.child_path``)
    progress = Progress(spark, "audit", ("read", "analyse", "write tables", "report"))
    progress.start("read")
    audit_log = read_audit(spark, [str(p) for p in args.audit])
    metadata = read_metadata(spark, str(args.metadata_dir), allow_partial=getattr(args, "allow_partial", False))
    acls = state_at(metadata.frame, timestamp=args.end).acls.persist()  # a log replay, read several times
    # Checkpoints in files on a cluster (an executor lost does not lose them), removed once the tables are written.
    with checkpoint_directory(spark, args.checkpoint_dir, target):
        try:
            progress.start("analyse")
            result = audit(audit_log.frame, acls, settings, start=args.start, end=args.end, top_n=args.top)
            try:
                fmt = getattr(args, "format", "parquet")
                progress.start("write tables")
                paths = write_result(spark, result, target, fmt)
                rejected = write_rejects(audit_log.rejects.unionByName(metadata.rejects), target, fmt)
                progress.start("report")
                data = report_data(result)
                report = write_text(spark, child_path(target, "report.html"), render_report(data))
            finally:
                result.unpersist()
        finally:
            acls.unpersist()
    progress.done()
    out = out or sys.stdout
    print(summary(data.totals, data.top_denied, rejected), file=out)
    print(f"tables: {', '.join(str(p) for p in paths.values())}", file=out)
    print(f"report: {report}", file=out)
    return 0
