"""The audit's tables built from its access tuples: what each ACL decided, and who was denied.

Each is a DataFrame-to-DataFrame step on ``access`` (the attributed access tuples of
:func:`ksteward.pipeline.jobs.audit.audit`; columns in :class:`~ksteward.pipeline.jobs.audit.AuditResult`):

- :func:`acl_usage`: per ACL of the state, its hits in the window (the unused ACLs are those with none);
- :func:`acl_hits_daily`: per day and credited ACL id, whether or not the state still has it;
- :func:`denials_by_tuple` and :func:`top_denied_principals`: the denied events, per day and request, and
  the principals denied most;
- :func:`window_totals`: the one-row summary, collected at once.

An ACL is credited only with the events the audit attributed to it (``rule`` ``acl`` and an ``acl_id``):
a mismatch never inflates a hit count.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from datetime import datetime

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.window import Window

from ksteward.authorizer import Rule
from ksteward.pipeline.schemas import ACL_SCHEMA

__all__ = [
    "TOP_PRINCIPALS",
    "acl_hits_daily",
    "acl_usage",
    "denials_by_tuple",
    "top_denied_principals",
    "window_totals",
]

TOP_PRINCIPALS = 20


def _credited(access: DataFrame) -> DataFrame:
    """The access tuples that credit an ACL with their events (its ``rule`` is ``acl`` and it names one)."""
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
        *ACL_SCHEMA.fieldNames(),
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
    ranking = Window.partitionBy(F.lit(0)).orderBy(F.desc("denials"), "principal")  # top_n rows: one partition
    ranked = top.withColumn("rank", F.row_number().over(ranking))
    return ranked.select("rank", "principal", "denials", "resources", "operations", "first_denied", "last_denied")


def window_totals(
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
