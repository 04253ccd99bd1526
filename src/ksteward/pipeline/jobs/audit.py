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
  the broker decided with: nothing is credited, the logged rule is kept and the event counts as
  ``mismatch``. A mismatch never inflates a hit count.

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
- operation: every operation Y grants (ALLOW's implication table of spec/authorizer.md §1.3, read from
  ``ksteward.authorizer.ALLOW_IMPLICATIONS``) is one X denies (DENY: its own operation, or ALL) or grants (ALLOW,
  with implications). So ALLOW READ covers ALLOW DESCRIBE, and DENY READ does not shadow ALLOW READ (which
  also grants DESCRIBE).

Only single covering ACLs count (a union of two DENYs that together cover A is not detected). ACLs whose
principal has no colon never apply (§2.6) and are left out, as are non-LITERAL/PREFIXED patterns. A DENY
or UNKNOWN permission shadows (Kafka treats UNKNOWN as deny).

**Command.** ``ksteward pipeline audit --metadata-dir DIR --audit PATH... [--from TIME] [--to TIME] --out OUT``
(settings: ``--server-config FILE`` and/or ``--super-users``, ``--allow-everyone-if-no-acl-found``) writes
each table of :class:`AuditResult` to ``OUT/<table>/`` (the per-event ones partitioned by ``event_date``),
the reader rejects to ``OUT/rejects/``, the HTML report to ``OUT/report.html``, and prints a summary. Stages
are logged with their durations, and Spark's console progress bar shows the running ones.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, TYPE_CHECKING, NamedTuple, TypeVar

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
from ksteward.pipeline.schemas import ACL_SCHEMA, REQUEST_COLUMNS, AuthorizerSettings

if TYPE_CHECKING:
    from ksteward.pipeline.report import ReportData

__all__ = ["AuditResult", "add_arguments", "audit", "covered_acls", "run"]

log = logging.getLogger("ksteward.pipeline.audit")

ACL_COLUMNS = tuple(ACL_SCHEMA.fieldNames())
TOP_PRINCIPALS = 20
_TUPLE = ("event_date", *REQUEST_COLUMNS)
_T = TypeVar("_T")


class AuditResult(NamedTuple):
    """The audit's outputs. ``access`` is a checkpoint and ``totals`` a literal row (see :func:`audit`);
    ``acl_usage``, ``acl_hits_daily``, ``shadowed_acls``, ``denials`` and ``denials_by_hour`` are cached
    when first used; the rest are built from them. :meth:`unpersist` frees them all.

    ``access`` (per day and access tuple, partitioned by ``event_date`` on disk): ``event_date``,
    ``principal``, ``host``, ``operation``, ``resource_type``, ``resource_name``, ``granted`` (as logged),
    ``rule`` and ``acl_id`` (logged or re-decided, null on a mismatch), ``attribution`` (``logged``,
    ``redecided`` or ``mismatch``), ``events``, ``first_seen``, ``last_seen``.

    ``acl_usage`` (one row per ACL of the state): the ``ACL_SCHEMA`` columns, ``hits`` (events it decided),
    ``redecided_hits`` (how many of those were attributed by re-deciding), ``first_used``, ``last_used``
    (null when unused).

    ``acl_hits_daily`` (partitioned by ``event_date``): ``event_date``, ``acl_id``, ``hits``, ``first_used``,
    ``last_used``, ``in_state`` (false for an id the state does not have: the ACL was deleted since).

    ``unused_acls``: the ``ACL_SCHEMA`` columns of the ACLs with no hit in the window.

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

    ``totals`` (one row, computed before :func:`audit` returns): ``window_start``, ``window_end`` (the bounds
    given, else the first and last event), ``events``, ``granted``, ``denied``, ``logged``, ``redecided``,
    ``mismatched``, ``acls``, ``acls_used``, ``acls_unused``, ``shadowed``, ``redundant``,
    ``hits_on_acls_not_in_state``.
    """

    access: DataFrame
    acl_usage: DataFrame
    acl_hits_daily: DataFrame
    unused_acls: DataFrame
    shadowed_acls: DataFrame
    denials: DataFrame
    denials_by_hour: DataFrame
    top_denied_principals: DataFrame
    totals: DataFrame

    def unpersist(self) -> None:
        """Drop the cached tables (``access`` and the small ones built from it) once the outputs are written."""
        release_checkpoint(self.access)
        for frame in (self.acl_usage, self.acl_hits_daily, self.shadowed_acls, self.denials, self.denials_by_hour):
            frame.unpersist()


@contextlib.contextmanager
def adaptive_execution(spark: SparkSession, *, enabled: bool) -> Iterator[None]:
    """Plan the queries run inside with ``spark.sql.adaptive.enabled`` set to ``enabled``; restored after."""
    key = "spark.sql.adaptive.enabled"
    before = spark.conf.get(key)
    spark.conf.set(key, str(enabled).lower())
    try:
        yield
    finally:
        if before is None:
            spark.conf.unset(key)
        else:
            spark.conf.set(key, before)


def release_checkpoint(frame: DataFrame) -> None:
    """Free the blocks of a ``localCheckpoint()`` frame now rather than when the JVM collects it (no-op for
    any other frame)."""
    plan = frame._jdf.queryExecution().logical()
    if plan.getClass().getSimpleName() == "LogicalRDD":
        plan.rdd().unpersist(False)


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
    from ksteward.pipeline.jobs.whatif import in_window

    start, end = (t.replace(tzinfo=UTC) if t is not None and t.tzinfo is None else t for t in (start, end))
    spark = events.sparkSession
    windowed = in_window(events, start, end)
    # One scan of the events, to the access tuples, checkpointed: the re-decision reads them twice and the join
    # that attributes them once, and what is built on a checkpoint plans against a short lineage. Partitioned
    # by date, so ``access`` is written as it is and the per-day tables need no shuffle; planned without AQE,
    # whose plans' checkpoints do not record their partitioning (Spark 4.0).
    with adaptive_execution(spark, enabled=False):
        tuples = access_tuples(windowed).repartition("event_date").localCheckpoint()
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
        decisions = redecisions(tuples, acls, settings).localCheckpoint()
        for job in beside:
            job.result()  # before the AQE setting changes under them
    with adaptive_execution(spark, enabled=False):
        access = attribute(tuples, decisions).localCheckpoint()
    release_checkpoint(tuples)
    release_checkpoint(decisions)
    # The small derived tables feed several outputs (and the totals): cache them rather than recompute.
    usage = acl_usage(access, acls).persist()
    daily = acl_hits_daily(access, acls).persist()
    denials = denials_by_tuple(access).persist()
    unused = usage.where(F.col("hits") == 0).select(*ACL_COLUMNS)
    top = top_denied_principals(denials, top_n)
    totals = _totals(access, usage, covered, daily, start, end)
    return AuditResult(access, usage, daily, unused, covered, denials, by_hour, top, totals)


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


def attribute(tuples: DataFrame, decisions: DataFrame) -> DataFrame:
    """Fill ``rule``/``acl_id`` of the tuples whose source named no ACL from ``decisions``
    (:func:`redecisions`, broadcast onto the tuples with one left join) and add ``attribution``; the tuples a
    source named keep theirs (see the module doc)."""
    rule, acl_id = F.col("rule"), F.col("acl_id")
    unnamed = _unnamed()
    joined = tuples.join(F.broadcast(decisions), on=list(REQUEST_COLUMNS), how="left")
    agrees = (F.col("decided_granted") == F.col("granted")) & (rule.isNull() | (F.col("decided_rule") == rule))
    agrees = F.coalesce(agrees, F.lit(False))
    return joined.select(
        *_TUPLE,
        "granted",
        F.when(unnamed & agrees, F.col("decided_rule")).otherwise(rule).alias("rule"),
        F.when(~unnamed, acl_id).when(agrees, F.col("decided_acl_id")).alias("acl_id"),
        F.when(~unnamed, F.lit("logged"))
        .when(agrees, F.lit("redecided"))
        .otherwise(F.lit("mismatch"))
        .alias("attribution"),
        "events",
        "first_seen",
        "last_seen",
    )


def _credited(access: DataFrame) -> DataFrame:
    return access.where((F.col("rule") == Rule.ACL.value) & F.col("acl_id").isNotNull())


def acl_usage(access: DataFrame, acls: DataFrame) -> DataFrame:
    """Per ACL of the state: ``hits``, ``redecided_hits``, ``first_used``, ``last_used``."""
    hits = (
        _credited(access)
        .groupBy("acl_id")
        .agg(
            F.sum("events").alias("hits"),
            F.sum(F.when(F.col("attribution") == "redecided", F.col("events")).otherwise(0)).alias("redecided_hits"),
            F.min("first_seen").alias("first_used"),
            F.max("last_seen").alias("last_used"),
        )
    )
    return acls.join(hits, "acl_id", "left").select(
        *ACL_COLUMNS,
        F.coalesce("hits", F.lit(0)).cast("long").alias("hits"),
        F.coalesce("redecided_hits", F.lit(0)).cast("long").alias("redecided_hits"),
        "first_used",
        "last_used",
    )


def acl_hits_daily(access: DataFrame, acls: DataFrame) -> DataFrame:
    """Per day and credited ACL id: ``hits``, ``first_used``, ``last_used``, ``in_state``."""
    known = acls.select("acl_id", F.lit(True).alias("in_state"))
    return (
        _credited(access)
        .groupBy("event_date", "acl_id")
        .agg(
            F.sum("events").alias("hits"),
            F.min("first_seen").alias("first_used"),
            F.max("last_seen").alias("last_used"),
        )
        .join(F.broadcast(known), "acl_id", "left")  # keeps the per-date partitioning (no shuffle on acl_id)
        .select(
            "event_date",
            "acl_id",
            "hits",
            "first_used",
            "last_used",
            F.coalesce("in_state", F.lit(False)).alias("in_state"),
        )
    )


def denials_by_tuple(access: DataFrame) -> DataFrame:
    """Denied events per day, principal, resource and operation (see :class:`AuditResult`)."""
    return (
        access.where(~F.col("granted"))
        .groupBy("event_date", "principal", "resource_type", "resource_name", "operation")
        .agg(
            F.sum("events").alias("denials"),
            F.size(F.collect_set("host")).alias("hosts"),  # not count_distinct: no Expand of every row
            F.array_sort(F.collect_set("rule")).alias("rules"),
            F.array_sort(F.collect_set("acl_id")).alias("deny_acl_ids"),
            F.min("first_seen").alias("first_denied"),
            F.max("last_seen").alias("last_denied"),
        )
    )


def top_denied_principals(denials: DataFrame, top_n: int = TOP_PRINCIPALS) -> DataFrame:
    """The ``top_n`` principals with the most denials (ties broken by name)."""
    per_principal = denials.groupBy("principal").agg(
        F.sum("denials").alias("denials"),
        F.size(F.collect_set(F.struct("resource_type", "resource_name"))).alias("resources"),
        F.array_sort(F.collect_set("operation")).alias("operations"),
        F.min("first_denied").alias("first_denied"),
        F.max("last_denied").alias("last_denied"),
    )
    top = per_principal.orderBy(F.desc("denials"), "principal").limit(top_n)
    from pyspark.sql.window import Window

    ranking = Window.partitionBy(F.lit(0)).orderBy(F.desc("denials"), "principal")  # top_n rows: one partition
    ranked = top.withColumn("rank", F.row_number().over(ranking))
    return ranked.select("rank", "principal", "denials", "resources", "operations", "first_denied", "last_denied")


def _totals(
    access: DataFrame,
    usage: DataFrame,
    covered: DataFrame,
    daily: DataFrame,
    start: datetime | None,
    end: datetime | None,
) -> DataFrame:
    """The one-row ``totals`` table. Eager: its four aggregates are collected at once (four small concurrent
    jobs, which also fill the caches of ``usage`` and ``daily``) and the row is a literal, so
    writing and reporting it costs nothing more."""

    def events_where(cond: Column) -> Column:
        return F.coalesce(F.sum(F.when(cond, F.col("events")).otherwise(0)), F.lit(0)).cast("long")

    micros = {
        "window_start": F.lit(start) if start is not None else F.min("first_seen"),
        "window_end": F.lit(end) if end is not None else F.max("last_seen"),
    }
    aggregates = [
        access.agg(
            *(F.unix_micros(bound.cast("timestamp")).alias(name) for name, bound in micros.items()),
            events_where(F.lit(True)).alias("events"),
            events_where(F.col("granted")).alias("granted"),
            events_where(~F.col("granted")).alias("denied"),
            events_where(F.col("attribution") == "logged").alias("logged"),
            events_where(F.col("attribution") == "redecided").alias("redecided"),
            events_where(F.col("attribution") == "mismatch").alias("mismatched"),
        ),
        usage.agg(
            F.count(F.lit(1)).alias("acls"),
            F.count(F.when(F.col("hits") > 0, 1)).alias("acls_used"),
            F.count(F.when(F.col("hits") == 0, 1)).alias("acls_unused"),
        ),
        covered.agg(
            F.count(F.when(F.col("kind") == "shadowed", 1)).alias("shadowed"),
            F.count(F.when(F.col("kind") == "redundant", 1)).alias("redundant"),
        ),
        daily.agg(
            F.coalesce(F.sum(F.when(~F.col("in_state"), F.col("hits"))), F.lit(0))
            .cast("long")
            .alias("hits_on_acls_not_in_state")
        ),
    ]
    with ThreadPoolExecutor(len(aggregates), thread_name_prefix="audit-totals") as pool:
        rows = list(pool.map(lambda frame: frame.first(), aggregates))
    values = {key: value for row in rows if row is not None for key, value in row.asDict().items()}
    return access.sparkSession.range(1).select(
        *(F.timestamp_micros(F.lit(values[name]).cast("long")).alias(name) for name in micros),
        *(F.lit(values[name]).cast("long").alias(name) for name in values if name not in micros),
    )


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


def _key_shapes(acls: DataFrame) -> _KeyShapes:
    """One small job: the distinct PREFIXED name lengths and whether the wildcards occur at all."""
    row = acls.agg(
        F.collect_set(F.when(F.col("pattern_type") == "PREFIXED", F.length("resource_name"))).alias("lengths"),
        F.max(F.col("principal") == WILDCARD_PRINCIPAL).alias("principal"),
        F.max((F.col("pattern_type") == "LITERAL") & (F.col("resource_name") == WILDCARD_RESOURCE)).alias("resource"),
    ).first()
    if row is None:
        return _KeyShapes([], False, False)
    return _KeyShapes(sorted(n for n in row["lengths"] if n), bool(row["principal"]), bool(row["resource"]))


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
    # principal and host keys), then the covering ACLs on all five keys.
    allows = (
        applicable.where(F.col("permission_type") == "ALLOW")
        .repartition(acls.sparkSession.sparkContext.defaultParallelism)  # the explosion is the work: spread it
        .select(*ACL_COLUMNS, F.explode(resource_keys).alias("rk"))
        .where(F.col("rk").isNotNull())
        .select(*ACL_COLUMNS, F.col("rk.p").alias("k_pattern"), F.col("rk.n").alias("k_name"))
        .join(F.broadcast(coverers.select(*resource).distinct()), resource, "left_semi")
        .withColumn("k_principal", F.explode(F.array_distinct(F.array(*principals))))
        .withColumn("k_host", F.explode(F.array_distinct(F.array("host", F.lit(WILDCARD_HOST)))))
    )
    pairs = (
        allows.join(F.broadcast(coverers), [*resource, "k_principal", "k_host"])
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

#: Output tables written per ``event_date`` partition (the per-event ones); the others are window totals.
PARTITIONED_TABLES = ("access", "acl_hits_daily", "denials", "denials_by_hour")
#: Of those, the ones :func:`audit` builds partition-wise from ``access``, which it keeps hash-partitioned by
#: ``event_date``: each task holds whole dates, so they are written as they are, one file per date, no shuffle.
_PARTITIONED_BY_DATE = ("access", "acl_hits_daily", "denials")
REPORT_ROWS = 1000


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``ksteward pipeline audit`` (the window and settings options are ``whatif``'s)."""
    from ksteward.pipeline.jobs.whatif import add_settings_arguments, parse_time

    parser.add_argument("--metadata-dir", type=Path, required=True, metavar="DIR",
                        help="a data dir or a KRaft __cluster_metadata-0 directory: the ACL state")  # fmt: skip
    parser.add_argument("--audit", nargs="+", required=True, metavar="PATH",
                        help="audit log files, dirs or globs (ksteward, Confluent, Kafka authorizer)")  # fmt: skip
    parser.add_argument("--from", dest="start", type=parse_time, metavar="TIME", help="window start (inclusive)")
    parser.add_argument("--to", dest="end", type=parse_time, metavar="TIME",
                        help="window end (exclusive), where the ACL state is taken (default: the end)")  # fmt: skip
    parser.add_argument("--out", type=Path, required=True, metavar="DIR", help="output directory")
    parser.add_argument("--top", type=int, default=TOP_PRINCIPALS, help="how many top denied principals")
    add_settings_arguments(parser)


@contextlib.contextmanager
def stage(spark: SparkSession, name: str) -> Iterator[None]:
    """Log a stage's start and duration, and name its Spark jobs (shown with the console progress bar)."""
    log.info("audit: %s ...", name)
    spark.sparkContext.setJobDescription(f"audit: {name}")
    started = time.perf_counter()
    try:
        yield
    finally:
        spark.sparkContext.setJobDescription(None)  # type: ignore[arg-type]
        log.info("audit: %s done in %.1f s", name, time.perf_counter() - started)


#: How many tables ``write_result`` writes at once. Most are small: a write of one is mostly Spark's per-job
#: latency (planning, scheduling, committing), which overlaps (300,000 events: 8.8-10.0 s with one at a time,
#: 7.3-8.4 s with four; 10,000,000 events, three rounds each, interleaved: 4.9/3.7 s with four, 4.0/3.5 s with
#: nine).
WRITE_THREADS = 9


def write_result(spark: SparkSession, result: AuditResult, out: Path, fmt: str = "parquet") -> dict[str, Path]:
    """Write every table of ``result`` under ``out/<table>/`` (replacing it), in ``fmt`` (Parquet by default;
    CSV as :func:`~ksteward.pipeline.jobs.write_table` writes it); the per-event tables are partitioned by
    ``event_date``, one file per date. The tables are written ``WRITE_THREADS`` at a time (concurrent Spark
    jobs; the cached tables they share are computed once). Returns the paths by table."""
    from ksteward.pipeline.jobs import write_table

    def write(table: str, frame: DataFrame) -> None:
        path = out / table
        with stage(spark, f"write {table}"):
            if table in PARTITIONED_TABLES:
                by_date = frame if table in _PARTITIONED_BY_DATE else frame.repartition("event_date")
                write_table(by_date, path, fmt, partition_by=("event_date",))
            else:
                write_table(frame.coalesce(1), path, fmt)

    tables = result._asdict()
    # The slowest first (the coverage analysis, then the per-event tables), so the small ones fill in around them.
    order = sorted(tables, key=lambda t: (t != "shadowed_acls", t not in PARTITIONED_TABLES))
    with ThreadPoolExecutor(WRITE_THREADS, thread_name_prefix="audit-write") as pool:
        futures = [pool.submit(write, table, tables[table]) for table in order]
        for future in futures:
            future.result()
    return {table: out / table for table in tables}


def report_data(result: AuditResult, *, rows: int = REPORT_ROWS) -> ReportData:
    """Collect what the HTML report shows (small: per-hour counts, the top principals, capped tables)."""
    from ksteward.pipeline.report import ReportData

    row = result.totals.first()
    assert row is not None
    totals = {key: _aware(value) for key, value in row.asDict().items()}
    hours = [(_aware(r["hour"]), int(r["denials"])) for r in result.denials_by_hour.orderBy("hour").collect()]
    top = [(r["principal"], int(r["denials"])) for r in result.top_denied_principals.orderBy("rank").collect()]
    unused = [
        r.asDict() for r in result.unused_acls.orderBy("resource_type", "resource_name", "acl_id").limit(rows).collect()
    ]
    covered = [
        r.asDict()
        for r in result.shadowed_acls.orderBy("kind", "resource_type", "resource_name", "acl_id").limit(rows).collect()
    ]
    return ReportData(totals=totals, denials_by_hour=hours, top_denied=top, unused_acls=unused, covered_acls=covered)


def _aware(value: _T) -> _T:
    """A collected timestamp as an aware UTC datetime (PySpark returns naive local time); others as they are."""
    if isinstance(value, datetime) and value.tzinfo is None:
        return value.astimezone(UTC)
    return value


def run(spark: SparkSession, args: argparse.Namespace, out: IO[str] | None = None) -> int:
    """``ksteward pipeline audit``: read, audit, write the tables, the rejects and ``report.html``; print a summary."""
    from ksteward.pipeline.jobs import write_rejects
    from ksteward.pipeline.jobs.state import state_at
    from ksteward.pipeline.jobs.whatif import settings_from_args
    from ksteward.pipeline.readers import read_audit, read_metadata
    from ksteward.pipeline.report import write_report

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    settings = settings_from_args(args)
    target = Path(args.out)
    with stage(spark, "read audit logs and metadata"):
        audit_log = read_audit(spark, [str(p) for p in args.audit])
        metadata = read_metadata(spark, str(args.metadata_dir))
        acls = state_at(metadata.frame, timestamp=args.end).acls.persist()  # a log replay, read several times
    result = audit(audit_log.frame, acls, settings, start=args.start, end=args.end, top_n=args.top)
    fmt = getattr(args, "format", "parquet")
    paths = write_result(spark, result, target, fmt)
    with stage(spark, "write rejects"):
        rejected = write_rejects(audit_log.rejects.unionByName(metadata.rejects), target, fmt)
    with stage(spark, "report"):
        data = report_data(result)
        report = write_report(target / "report.html", data)
    result.unpersist()
    acls.unpersist()
    out = out or sys.stdout
    print(summary(data.totals, data.top_denied, rejected), file=out)
    print(f"tables: {', '.join(str(p) for p in paths.values())}", file=out)
    print(f"report: {report}", file=out)
    return 0


def summary(totals: Mapping[str, object], top: Sequence[tuple[str, int]], rejected: int) -> str:
    """The lines ``run`` prints."""
    lines = [
        f"audit window {totals['window_start']} .. {totals['window_end']}",
        f"  events {totals['events']:,}: granted {totals['granted']:,}, denied {totals['denied']:,}"
        f" (attributed: logged {totals['logged']:,}, re-decided {totals['redecided']:,},"
        f" mismatched {totals['mismatched']:,})",
        f"  ACLs {totals['acls']:,}: used {totals['acls_used']:,}, unused {totals['acls_unused']:,},"
        f" shadowed {totals['shadowed']:,}, redundant {totals['redundant']:,}",
        f"  hits on ACLs no longer in the state: {totals['hits_on_acls_not_in_state']:,}",
        f"  bad input lines set aside: {rejected:,}",
    ]
    if top:
        lines.append("  top denied principals: " + ", ".join(f"{p} ({n:,})" for p, n in top[:5]))
    return "\n".join(lines)
