"""The audit's tables built from its access tuples: what each ACL decided, and who was denied.

Each is a DataFrame-to-DataFrame step on ``access`` (the attributed access tuples of
:func:`ksteward.pipeline.jobs.audit.audit`; columns in :class:`~ksteward.pipeline.jobs.audit.AuditResult`):

- :func:`acl_usage`: per ACL of the state, its hits in the window (the unused ACLs are those with none);
- :func:`acl_hits_daily`: per day and credited ACL id, whether or not the state still has it;
- :func:`hits_not_in_state`: per credited ACL id the state does not have (deleted since), who used it;
- :func:`unused_acls`: the ACLs with no hit, each marked safe to delete or not, and why (docs/pipeline.md);
- :func:`denials_by_tuple`, :func:`top_denied_principals`, :func:`top_denied_resources` and
  :func:`top_denied_operations`: the denied events, per day and request, and who, what and which operation
  was denied most;
- :func:`window_totals`: the one-row summary, collected at once.

An ACL is credited only with the events the audit attributed to it (``rule`` ``acl`` and an ``acl_id``):
an unattributed event never inflates a hit count.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from datetime import datetime

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.window import Window

from ksteward.authorizer import WILDCARD_PRINCIPAL, Rule
from ksteward.pipeline.schemas import ACL_SCHEMA, AuthorizerSettings

__all__ = [
    "TOP_PRINCIPALS",
    "UNATTRIBUTED",
    "acl_hits_daily",
    "acl_usage",
    "denials_by_tuple",
    "hits_not_in_state",
    "top_denied_operations",
    "top_denied_principals",
    "top_denied_resources",
    "unused_acls",
    "window_totals",
]

#: ``attribution`` of an event the audit could credit to no ACL: the ACL state it is judged against is not the
#: one the broker decided with (the one name for it in the tables, the summary, the report and the docs).
UNATTRIBUTED = "unattributed"
#: How many principals, resources or operations a row of :func:`hits_not_in_state` lists (its counts are exact).
LISTED = 20

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


def hits_not_in_state(access: DataFrame, acls: DataFrame) -> DataFrame:
    """Per credited ACL id that ``acls`` does not have (deleted before the window's end): ``acl_id``, ``hits``,
    ``first_used``, ``last_used``, ``principals`` / ``resources`` / ``operations`` (counts of the distinct
    ones) and ``principals_seen`` / ``resources_seen`` / ``operations_seen`` (the first ``LISTED`` of each, sorted;
    a resource as ``TYPE:name``): who relied on an ACL that is gone, most hits first."""
    resource = F.concat_ws(":", "resource_type", "resource_name")
    credited = _credited(access).join(acls.select("acl_id"), "acl_id", "left_anti")
    grouped = credited.groupBy("acl_id").agg(
        F.sum("events").alias("hits"),
        F.min("first_seen").alias("first_used"),
        F.max("last_seen").alias("last_used"),
        F.array_sort(F.collect_set("principal")).alias("p"),
        F.array_sort(F.collect_set(resource)).alias("r"),
        F.array_sort(F.collect_set("operation")).alias("o"),
    )
    return grouped.select(
        "acl_id",
        F.col("hits").cast("long").alias("hits"),
        "first_used",
        "last_used",
        *(F.size(c).alias(name) for c, name in (("p", "principals"), ("r", "resources"), ("o", "operations"))),
        *(
            F.slice(c, 1, LISTED).alias(f"{name}_seen")
            for c, name in (("p", "principals"), ("r", "resources"), ("o", "operations"))
        ),
    ).orderBy(F.desc("hits"), "acl_id")


def unused_acls(usage: DataFrame, access: DataFrame, covered: DataFrame, settings: AuthorizerSettings) -> DataFrame:
    """The ACLs with no hit in the window: the ``ACL_SCHEMA`` columns, ``safe_to_delete`` and ``why`` (the rule
    of docs/pipeline.md, "Unused ACLs safe to delete", that decided it). Each mark is for deleting that ACL
    alone."""
    acls = usage.select(*ACL_SCHEMA.fieldNames())
    unused = usage.where(F.col("hits") == 0).select(*ACL_SCHEMA.fieldNames())
    kind = covered.groupBy("acl_id").agg(F.min("kind").alias("kind"))  # "redundant" < "shadowed": either will do
    # The principals with unattributed events (their hits may be undercounted) and with allowed requests.
    active = access.groupBy("principal").agg(
        F.max(F.col("attribution") == UNATTRIBUTED).alias("unattributed"),
        F.max(F.col("granted")).alias("allowed"),
    )
    any_unattributed = access.agg(F.max(F.col("attribution") == UNATTRIBUTED).alias("any_unattributed"))
    grants = acls.where(F.col("permission_type") == "ALLOW").groupBy("principal").agg(F.count(F.lit(1)).alias("grants"))
    pattern = ["resource_type", "pattern_type", "resource_name"]
    on_pattern = acls.groupBy(*pattern).agg(F.count(F.lit(1)).alias("on_pattern"))
    joined = (
        unused.join(kind, "acl_id", "left")
        .join(active, "principal", "left")
        .join(grants, "principal", "left")
        .join(on_pattern, pattern, "left")
        .crossJoin(F.broadcast(any_unattributed))
    )
    wildcard = F.col("principal") == WILDCARD_PRINCIPAL
    unattributed = F.when(wildcard, F.col("any_unattributed")).otherwise(F.coalesce("unattributed", F.lit(False)))
    rules = [
        (F.col("permission_type") != "ALLOW", False, "a DENY: deleting it allows more, never less; left to you"),
        (F.col("kind") == "shadowed", True, "shadowed by a DENY: it never takes effect"),
        (F.col("kind") == "redundant", True, "redundant: another ALLOW grants all it grants"),
        (unattributed, False, "unattributed events of its principal may have used it"),
        (
            F.lit(settings.allow_everyone_if_no_acl_found) & (F.col("on_pattern") == 1),
            False,
            "the last ACL on its resource: allow.everyone.if.no.acl.found would open it to all",
        ),
        (
            (F.col("grants") == 1) & F.coalesce("allowed", F.lit(False)),
            False,
            "the only grant of a principal that made allowed requests",
        ),
    ]
    safe, why = F.lit(True), F.lit("no hit in the window")
    for cond, verdict, reason in reversed(rules):  # the first rule that holds decides
        safe = F.when(F.coalesce(cond, F.lit(False)), F.lit(verdict)).otherwise(safe)
        why = F.when(F.coalesce(cond, F.lit(False)), F.lit(reason)).otherwise(why)
    return joined.select(*ACL_SCHEMA.fieldNames(), safe.alias("safe_to_delete"), why.alias("why"))


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


def top_denied_resources(denials: DataFrame, top_n: int = TOP_PRINCIPALS) -> DataFrame:
    """The ``top_n`` resources with the most denials: ``rank``, ``resource_type``, ``resource_name``, ``denials``,
    ``principals`` (distinct), ``operations`` (sorted distinct), ``last_denied``."""
    per_resource = denials.groupBy("resource_type", "resource_name").agg(
        F.sum("denials").alias("denials"),
        F.size(F.collect_set("principal")).alias("principals"),
        F.array_sort(F.collect_set("operation")).alias("operations"),
        F.max("last_denied").alias("last_denied"),
    )
    return _ranked(per_resource, ["resource_type", "resource_name"], top_n).select(
        "rank", "resource_type", "resource_name", "denials", "principals", "operations", "last_denied"
    )


def top_denied_operations(denials: DataFrame, top_n: int = TOP_PRINCIPALS) -> DataFrame:
    """The operations with the most denials: ``rank``, ``operation``, ``denials``, ``principals`` and
    ``resources`` (distinct), ``last_denied``."""
    per_operation = denials.groupBy("operation").agg(
        F.sum("denials").alias("denials"),
        F.size(F.collect_set("principal")).alias("principals"),
        F.size(F.collect_set(F.struct("resource_type", "resource_name"))).alias("resources"),
        F.max("last_denied").alias("last_denied"),
    )
    return _ranked(per_operation, ["operation"], top_n).select(
        "rank", "operation", "denials", "principals", "resources", "last_denied"
    )


def _ranked(frame: DataFrame, keys: list[str], top_n: int) -> DataFrame:
    """The ``top_n`` rows of ``frame`` by ``denials`` (ties by ``keys``), with ``rank`` from 1."""
    order: list[Column | str] = [F.desc("denials"), *keys]
    ranking = Window.partitionBy(F.lit(0)).orderBy(*order)  # top_n rows: one partition
    return frame.orderBy(*order).limit(top_n).withColumn("rank", F.row_number().over(ranking))


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
            events_where(F.col("attribution") == UNATTRIBUTED).alias(UNATTRIBUTED),
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
