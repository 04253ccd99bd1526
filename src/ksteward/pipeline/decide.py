"""Re-decide authorization requests in Spark exactly as ``StandardAuthorizer.authorize_with_reason`` does.

::

    decided = decide(events, acls, settings)          # events + granted, rule, acl_id
    table = decide_distinct(keys, acls, settings)     # one row per distinct request: the decision table

Inputs.

- ``requests``: any frame with ``REQUEST_COLUMNS`` (``principal`` ``User:x``, ``host``, ``operation``,
  ``resource_type``, ``resource_name``; enum names as in ``schemas``, display names such as
  ``DescribeConfigs`` are accepted as the library accepts them). Other columns are carried through.
  The five columns must not be null.
- ``acls``: ``ACL_SCHEMA``. Rows whose resource type, pattern type, operation or permission is not a name
  the library could hold (``ANY``, ``MATCH``, a misspelling) are ignored, as ``AclBinding`` would refuse
  them; the 7-tuples are expected to be unique, as the library requires (a tie is broken by ``acl_id``).
- ``settings``: ``AuthorizerSettings`` (``super.users``, ``allow.everyone.if.no.acl.found``).

Output. ``decide`` returns ``requests`` with ``DECISION_SCHEMA`` appended: ``granted``; ``rule`` one of
``super_user``, ``acl``, ``allow_everyone_default``, ``no_matching_acl``; ``acl_id`` of the deciding ACL
when ``rule == "acl"``, else null. ``decide_distinct`` returns one row per distinct request key
(``REQUEST_COLUMNS`` + ``DECISION_SCHEMA``).

How (Kafka's ``StandardAuthorizerData.authorize`` and ``findAclRule``; docs/pipeline.md), on the distinct
keys only (events repeat heavily):

1. **Names stage.** Each distinct request is exploded into the match keys of its (resource type, name) R:
   itself (LITERAL), every prefix ``R[:n]`` for ``0 <= n <= len(R)`` (PREFIXED, and UNKNOWN which Kafka
   scans as a prefix), and ``*`` (the LITERAL wildcard). One equi-join on (type, kind, key) with the ACLs'
   distinct keys keeps the keys some ACL's pattern has: no ``startswith`` condition, so no nested-loop
   join. A name with any such key "has ACLs", which turns the allow-everyone default off whoever the ACLs
   are for.
2. **Principals stage.** Each kept key is exploded into the request's principal (itself and ``User:*``)
   and host (itself and ``*``) and equi-joined with the ACLs on (type, kind, key, principal, host). An ACL
   applies if its principal has a colon (the library never applies one without) and its operation matches:
   ALL or the operation itself for DENY (and the UNKNOWN permission, which the library treats as a deny);
   for ALLOW also Kafka's implications (READ/WRITE/DELETE/ALTER grant DESCRIBE, ALTER_CONFIGS grants
   DESCRIBE_CONFIGS).
3. **Decision.** Super user, else the first applicable DENY in Kafka's scan order, else the last applicable
   ALLOW, else ``allow_everyone_default`` if the setting is on and the name has no ACLs at all, else
   ``no_matching_acl``. Scan order (``AclIndex._buckets_in_scan_order``): by pattern name length
   descending, then pattern type code (UNKNOWN, LITERAL, PREFIXED) for one length, then the LITERAL ``*``
   section last, except that for R == ``*`` the wildcard is also met first, as R itself; inside one name
   by (operation code, principal, host, permission code). That position is packed into one long, so "first
   DENY" is a ``min`` and "last ALLOW" a ``max`` (a HashAggregate: plain expressions, no Python UDF), and
   the long, read back against the request, is the deciding ACL's 7-tuple: its id comes from one more
   equi-join with the ACLs.

Cost. One shuffle, the ``distinct`` of the requests: every join is an equi-join with a broadcast of the ACL
side (its distinct keys, the applicable ACLs, the ids by 7-tuple), so the requests keep their partitioning
and each is aggregated where it lies. The broadcasts are bounded: they are asked for only when the ACL set
holds at most ``BROADCAST_ACLS`` rows (counted by the one small job that also finds the prefix lengths);
a larger set is joined by shuffle (a sort-merge join unless adaptive execution measures a side small
enough to broadcast, under ``spark.sql.adaptive.autoBroadcastJoinThreshold``). For event-level frames,
aggregate first (``groupBy(*REQUEST_COLUMNS).agg(...)``) and decide the aggregate (``decide`` of it costs
what ``decide_distinct`` costs); ``decide`` of raw events joins the decision table back, by whatever join
Spark chooses (``broadcast_decisions=True`` asks for a broadcast, for a caller that knows the table small).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, NamedTuple

from pyspark.sql import Column
from pyspark.sql import functions as F

from ksteward.authorizer import (
    ALLOW_IMPLICATIONS,
    WILDCARD_HOST,
    WILDCARD_PRINCIPAL,
    WILDCARD_RESOURCE,
    AclBinding,
    AclId,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
    Rule,
    StandardAuthorizer,
    acl_id_text,
)

from .local_frames import local_frame
from .schemas import ACL_SCHEMA, REQUEST_COLUMNS, AuthorizerSettings

if TYPE_CHECKING:
    import enum

    from pyspark.sql import DataFrame, SparkSession

__all__ = [
    "ACL_OPERATION_CODES",
    "BROADCAST_ACLS",
    "OPERATION_CODES",
    "PATTERN_CODES",
    "PERMISSION_CODES",
    "RESOURCE_TYPE_CODES",
    "AclShapes",
    "acl_frame",
    "acl_shapes",
    "decide",
    "decide_distinct",
    "denies_operation",
    "enum_code",
    "grants_operation",
    "match_keys",
    "prepared_acls",
    "reference_authorizer",
]

_ALL = int(AclOperation.ALL)
# The library's one ALLOW-implication table, as (requested operation code, [implying operation codes]).
_IMPLICATIONS = [(int(op), sorted(int(o) for o in implying)) for op, implying in sorted(ALLOW_IMPLICATIONS.items())]
_ALLOW = int(AclPermissionType.ALLOW)
_LITERAL = int(PatternType.LITERAL)

# Match kinds of the names stage.
_EXACT, _PREFIX, _WILDCARD = 0, 1, 2
# Position of a pattern type among the buckets of one name length (UNKNOWN, LITERAL, PREFIXED).
_PATTERN_ORDER = {int(PatternType.UNKNOWN): 0, int(PatternType.LITERAL): 1, int(PatternType.PREFIXED): 2}
# The packed scan position of a hit (``_hit``): rank (40 bits), operation (4), principal (1), host (1),
# permission (2): 48 bits of a long.
_RANK_BITS = 40
_LAST = (1 << _RANK_BITS) - 1  # the wildcard section's rank: after every name (names up to 2**38 characters)
_ORDER_TO_PATTERN = {order: code for code, order in _PATTERN_ORDER.items()}

#: The most ACLs whose tables ``decide_distinct`` broadcasts (each join side is at most this many rows of about
#: 150 bytes: some 75 MB, built on the driver and held by every executor); above it the joins shuffle.
BROADCAST_ACLS = 500_000


def _names(cls: type[enum.IntEnum], *, exclude: Iterable[str] = (), display: bool = True) -> dict[str, int]:
    """Every spelling ``parse_enum`` accepts for ``cls`` (upper-cased), with its code."""
    table: dict[str, int] = {}
    for member in cls:
        if member.name in exclude:
            continue
        table[member.name] = int(member)
        if display:
            table[member.display_name.upper()] = int(member)  # type: ignore[attr-defined]
    return table


#: Enum name -> code tables for ``enum_code`` (every spelling the library's ``parse_enum`` accepts, upper-cased;
#: ACL tables leave out the filter-only ANY and MATCH, which no stored ACL can have).
RESOURCE_TYPE_CODES = _names(ResourceType, exclude=("ANY",))
OPERATION_CODES = _names(AclOperation)
ACL_OPERATION_CODES = _names(AclOperation, exclude=("ANY",))
PERMISSION_CODES = _names(AclPermissionType, exclude=("ANY",))
PATTERN_CODES = _names(PatternType, exclude=("ANY", "MATCH"), display=False)  # case-sensitive, as in the library


def acl_frame(spark: SparkSession, acls: Iterable[tuple[AclId, AclBinding]]) -> DataFrame:
    """Library ACLs as an ``ACL_SCHEMA`` frame (ids in Kafka's text form, ``acl_id_text``)."""
    rows = [
        (
            acl_id_text(acl_id),
            acl.resource_type.name,
            acl.resource_name,
            acl.pattern_type.name,
            acl.principal,
            acl.host,
            acl.operation.name,
            acl.permission_type.name,
        )
        for acl_id, acl in acls
    ]
    return local_frame(spark, rows, ACL_SCHEMA)


def reference_authorizer(acls: Mapping[AclId, AclBinding], settings: AuthorizerSettings) -> StandardAuthorizer:
    """The library authorizer that ``decide`` equals: configured as ``settings``, loaded with ``acls``."""
    auth = StandardAuthorizer(settings)
    auth.load_snapshot(acls)
    return auth


def enum_code(column: Column | str, table: dict[str, int], *, case_sensitive: bool = False) -> Column:
    """The int code of an enum-name column (null for a name not in ``table``)."""
    col = F.col(column) if isinstance(column, str) else column
    return F.expr(_map_literal(tuple(table.items())))[col if case_sensitive else F.upper(col)]


@functools.lru_cache(maxsize=32)
def _map_literal(items: tuple[tuple[str, int], ...]) -> str:
    """``table`` as one SQL map literal: the JVM parses it in one call, where ``F.create_map`` of ``F.lit``
    values made three py4j round trips an entry, 12% of the calls that build a ``decide`` plan
    (bench/README.md, "Small driver-side frames"). The names are enum names, which need no quoting beyond the
    quotes."""
    for name, code in items:
        if not (name.isascii() and name.replace("_", "").isalnum()) or not isinstance(code, int):
            raise ValueError(f"not an enum name and code: {name!r}, {code!r}")
    return "map(" + ", ".join(f"'{name}', {code}" for name, code in items) + ")"


def grants_operation(acl_op: Column, requested_op: Column) -> Column:
    """An ALLOW ACL of operation code ``acl_op`` grants ``requested_op``: ALL, and the implications of
    ``docs/authorizer.md`` §1.3."""
    granted = (acl_op == _ALL) | (acl_op == requested_op)
    for requested, implying in _IMPLICATIONS:
        granted = granted | ((requested_op == requested) & acl_op.isin(implying))
    return granted


def denies_operation(acl_op: Column, requested_op: Column) -> Column:
    """A DENY ACL of operation code ``acl_op`` denies ``requested_op``: ALL or the same operation, no implication."""
    return (acl_op == _ALL) | (acl_op == requested_op)


def prepared_acls(acls: DataFrame) -> DataFrame:
    """ACLs with int codes and their match kind, the rows the library could not hold dropped.

    Columns: ``acl_id``, ``rt`` (resource type code), ``pattern`` (code), ``kind`` (0 LITERAL name, 1 PREFIXED
    or UNKNOWN prefix, 2 LITERAL ``*``), ``key`` (the pattern name), ``name_len``, ``pattern_order``,
    ``principal``, ``host``, ``acl_op``, ``perm`` (codes)."""
    pattern = enum_code("pattern_type", PATTERN_CODES, case_sensitive=True)
    coded = (
        acls.select(
            "acl_id",
            enum_code("resource_type", RESOURCE_TYPE_CODES).alias("rt"),
            pattern.alias("pattern"),
            F.col("resource_name").alias("key"),
            "principal",
            "host",
            enum_code("operation", ACL_OPERATION_CODES).alias("acl_op"),
            enum_code("permission_type", PERMISSION_CODES).alias("perm"),
        )
        .where(F.col("rt").isNotNull() & F.col("pattern").isNotNull())
        .where(F.col("acl_op").isNotNull() & F.col("perm").isNotNull())
    )
    return coded.select(
        "acl_id",
        "rt",
        "pattern",
        F.when(F.col("pattern") != _LITERAL, F.lit(_PREFIX))
        .when(F.col("key") == WILDCARD_RESOURCE, F.lit(_WILDCARD))
        .otherwise(F.lit(_EXACT))
        .alias("kind"),
        "key",
        F.char_length("key").alias("name_len"),
        F.create_map(*[F.lit(x) for kv in _PATTERN_ORDER.items() for x in kv])[F.col("pattern")].alias("pattern_order"),
        "principal",
        "host",
        "acl_op",
        "perm",
    )


class AclShapes(NamedTuple):
    """What one small job finds in a ``prepared_acls`` frame: the PREFIXED name lengths, whether the LITERAL
    ``*`` occurs, and how many rows there are (which bounds the broadcasts)."""

    lengths: list[int]
    wildcard: bool
    rows: int

    def hint(self, frame: DataFrame) -> DataFrame:
        """``frame`` marked for a broadcast when the ACL set is small enough (``BROADCAST_ACLS``)."""
        return F.broadcast(frame) if self.rows <= BROADCAST_ACLS else frame


def acl_shapes(acls: DataFrame) -> AclShapes:
    """The :class:`AclShapes` of ``acls`` (``prepared_acls``): one small job."""
    row = acls.agg(
        F.collect_set(F.when(F.col("kind") == _PREFIX, F.col("name_len"))).alias("lengths"),
        F.max(F.col("kind") == _WILDCARD).alias("wildcard"),
        F.count(F.lit(1)).alias("rows"),
    ).first()
    if row is None:
        return AclShapes([], False, 0)
    return AclShapes(sorted(row["lengths"]), bool(row["wildcard"]), int(row["rows"]))


def match_keys(acls: DataFrame, requests: DataFrame, shapes: AclShapes | None = None) -> DataFrame:
    """Each request of ``requests`` (with ``rt``) with every (``kind``, ``key``) pattern key an ACL of ``acls``
    (``prepared_acls``) has and the request's name matches (step 1 of the module docstring).

    The keys of a name R: itself (LITERAL), every prefix ``R[:n]`` for ``0 <= n <= len(R)`` (PREFIXED and
    UNKNOWN), and ``*`` (the LITERAL wildcard). They are generated (one ``explode`` of ``-2 .. len(R)``), those
    of a prefix length or wildcard no ACL has are dropped at once (one small job finds which the ACLs have: a
    long name costs no more than the ACLs' few lengths), and the rest are equi-joined with the distinct keys of
    ``acls``, broadcast when ``shapes.hint`` says so. Result: the columns of ``requests``, ``kind``, ``key`` and
    ``present`` (true) for each key some ACL has, and one row with ``present`` null for the request's own name
    when no ACL has it (so that no request is lost). ``shapes``: :func:`acl_shapes` of ``acls``, if known."""
    shapes = shapes if shapes is not None else acl_shapes(acls)
    lengths, wildcard = shapes.lengths, shapes.wildcard
    name = F.col("resource_name")
    n = F.col("n")
    wanted = (n == -1) | ((n == -2) & F.lit(wildcard)) | ((n >= 0) & (n.isin(lengths) if lengths else F.lit(False)))
    kind = F.when(n == -2, F.lit(_WILDCARD)).when(n == -1, F.lit(_EXACT)).otherwise(F.lit(_PREFIX))
    key = F.when(n == -2, F.lit(WILDCARD_RESOURCE)).when(n == -1, name).otherwise(F.substring(name, 1, n))
    exploded = requests.select("*", F.explode(F.sequence(F.lit(-2), F.char_length(name))).alias("n")).where(wanted)
    keyed = exploded.select(*requests.columns, kind.alias("kind"), key.alias("key"))
    present = acls.select("rt", "kind", "key").distinct().withColumn("present", F.lit(True))
    joined = keyed.join(shapes.hint(present), on=["rt", "kind", "key"], how="left")
    return joined.where(F.col("present") | (F.col("kind") == _EXACT))


def _ranks() -> list[Column]:
    """``deny_rank`` and ``allow_rank`` of a request's hit: the position of the ACL's name and pattern in
    Kafka's scan of the request's name (needs the ACL's ``kind``, ``name_len`` and ``pattern_order``)."""
    named_rank = (F.char_length("resource_name") - F.col("name_len")).cast("long") * 4 + F.col("pattern_order")
    wildcard = F.col("kind") == _WILDCARD
    return [
        F.when(~wildcard, named_rank)
        .when(F.col("resource_name") == WILDCARD_RESOURCE, F.lit(_PATTERN_ORDER[_LITERAL]).cast("long"))
        .otherwise(F.lit(_LAST))
        .alias("deny_rank"),
        F.when(~wildcard, named_rank).otherwise(F.lit(_LAST)).alias("allow_rank"),
    ]


def _hit(rank: str) -> Column:
    """A hit's place in Kafka's scan packed into one long (rank, 4 bits of operation, 1 of principal, 1 of
    host, 2 of permission), which also identifies the ACL for this request (``_deciding_acl``).

    Kafka's order is the bucket (``rank``), then operation, principal, host and permission inside it. Of
    one request's hits in one bucket the principal is the request's or ``User:*`` and the host the
    request's or ``*``, so each of those compares as one bit: is it the greater of the two strings."""
    greater_principal = F.col("acl_principal") > F.least(F.col("principal"), F.lit(WILDCARD_PRINCIPAL))
    greater_host = F.col("acl_host") > F.least(F.col("host"), F.lit(WILDCARD_HOST))
    order = F.col(rank) * 16 + F.col("acl_op")
    order = (order * 2 + greater_principal.cast("long")) * 2 + greater_host.cast("long")
    return order * 4 + F.col("perm")


def _deciding_acl(hit: Column) -> list[Column]:
    """The 7-tuple (as ``prepared_acls`` codes) of the ACL a packed ``_hit`` stands for, for this request."""
    rank = F.shiftright(hit, 8)
    named = rank != _LAST
    name_len = F.char_length("resource_name") - F.shiftright(rank, 2)
    pattern_order = F.create_map(*[F.lit(x) for kv in _ORDER_TO_PATTERN.items() for x in kv])
    principals, hosts = (F.col("principal"), F.lit(WILDCARD_PRINCIPAL)), (F.col("host"), F.lit(WILDCARD_HOST))
    return [
        F.when(named, pattern_order[rank.bitwiseAND(F.lit(3))]).otherwise(F.lit(_LITERAL)).alias("pattern"),
        F.when(named, F.substring("resource_name", 1, name_len)).otherwise(F.lit(WILDCARD_RESOURCE)).alias("key"),
        F.when(F.shiftright(hit, 3).bitwiseAND(F.lit(1)) == 1, F.greatest(*principals))
        .otherwise(F.least(*principals))
        .alias("acl_principal"),
        F.when(F.shiftright(hit, 2).bitwiseAND(F.lit(1)) == 1, F.greatest(*hosts))
        .otherwise(F.least(*hosts))
        .alias("acl_host"),
        F.shiftright(hit, 4).bitwiseAND(F.lit(15)).cast("int").alias("acl_op"),
        hit.bitwiseAND(F.lit(3)).cast("int").alias("perm"),
    ]


def decide_distinct(keys: DataFrame, acls: DataFrame, settings: AuthorizerSettings) -> DataFrame:
    """The decision of each distinct request of ``keys``: ``REQUEST_COLUMNS`` + ``DECISION_SCHEMA`` columns.

    ``keys`` may hold repeats and other columns; only the distinct ``REQUEST_COLUMNS`` are decided. One
    shuffle (the ``distinct``): every ACL-side table is broadcast (up to ``BROADCAST_ACLS`` ACLs), so the
    requests keep their partitioning through the joins and are aggregated where they are."""
    distinct = keys.select(*[F.coalesce(F.col(c), F.lit("")).alias(c) for c in REQUEST_COLUMNS]).distinct()
    coded = distinct.select(
        *REQUEST_COLUMNS,
        F.coalesce(enum_code("resource_type", RESOURCE_TYPE_CODES), F.lit(-1)).alias("rt"),
        F.coalesce(enum_code("operation", OPERATION_CODES), F.lit(-1)).alias("op"),
    )
    prepared = prepared_acls(acls)
    shapes = acl_shapes(prepared)
    matched = match_keys(prepared, coded, shapes)
    # Only the keys some ACL has are probed with the request's principal and User:*, host and *: the rows of
    # the ACLs that apply (their principal has a colon) on those keys come from one more broadcast join.
    present = F.col("present")
    principals = F.array_distinct(F.array(F.col("principal"), F.lit(WILDCARD_PRINCIPAL)))
    hosts = F.array_distinct(F.array(F.col("host"), F.lit(WILDCARD_HOST)))
    probes = matched.select("*", F.explode_outer(F.when(present, principals)).alias("acl_principal")).select(
        "*", F.explode_outer(F.when(present, hosts)).alias("acl_host")
    )
    applicable = prepared.where(F.instr("principal", ":") > 0).select(
        "rt",
        "kind",
        "key",
        F.col("principal").alias("acl_principal"),
        F.col("host").alias("acl_host"),
        "name_len",
        "pattern_order",
        "acl_op",
        "perm",
    )
    probe_keys = ["rt", "kind", "key", "acl_principal", "acl_host"]
    hits = probes.join(shapes.hint(applicable), on=probe_keys, how="left").select("*", *_ranks())
    allow = F.col("perm") == _ALLOW
    verdicts = hits.groupBy(*REQUEST_COLUMNS, "rt").agg(
        F.max(present).alias("has_acls"),  # some ACL's pattern matches the name, whoever it is for
        F.min(F.when(~allow & denies_operation(F.col("acl_op"), F.col("op")), _hit("deny_rank"))).alias("deny"),
        F.max(F.when(allow & grants_operation(F.col("acl_op"), F.col("op")), _hit("allow_rank"))).alias("allow"),
    )
    hit = F.coalesce(F.col("deny"), F.col("allow"))
    deciding = verdicts.select(
        *REQUEST_COLUMNS,
        "rt",
        "has_acls",
        F.col("deny").isNotNull().alias("denied"),
        hit.alias("hit"),
        *_deciding_acl(hit),
    )
    # The hit names the deciding ACL's 7-tuple, so its id comes from an equi-join on that tuple; should the ACL
    # frame repeat a tuple, the request's rows are folded into one with the smallest id (where they lie: the
    # requests are still partitioned as the ``distinct`` left them).
    tuple_columns = ["rt", "pattern", "key", "acl_principal", "acl_host", "acl_op", "perm"]
    ids = prepared.select(
        *tuple_columns[:3], F.col("principal").alias("acl_principal"), F.col("host").alias("acl_host"),
        *tuple_columns[5:], "acl_id",
    )  # fmt: skip
    decided = (
        deciding.join(shapes.hint(ids), on=tuple_columns, how="left")
        .groupBy(*REQUEST_COLUMNS, "has_acls", "denied", "hit")
        .agg(F.min("acl_id").alias("acl_id"))
    )
    super_users = sorted(settings.super_users)
    is_super = F.col("principal").isin(super_users) if super_users else F.lit(False)
    by_acl = F.col("hit").isNotNull()
    everyone = F.lit(settings.allow_everyone_if_no_acl_found) & F.col("has_acls").isNull()
    granted = is_super | (~F.coalesce(F.col("denied"), F.lit(False)) & (by_acl | everyone))
    rule = (
        F.when(is_super, F.lit(Rule.SUPER_USER.value))
        .when(by_acl, F.lit(Rule.ACL.value))
        .when(everyone, F.lit(Rule.ALLOW_EVERYONE_DEFAULT.value))
        .otherwise(F.lit(Rule.NO_MATCHING_ACL.value))
    )
    acl_id = F.when(~is_super & by_acl, F.col("acl_id"))
    return decided.select(*REQUEST_COLUMNS, granted.alias("granted"), rule.alias("rule"), acl_id.alias("acl_id"))


def decide(
    requests: DataFrame, acls: DataFrame, settings: AuthorizerSettings, *, broadcast_decisions: bool = False
) -> DataFrame:
    """``requests`` with ``granted``, ``rule`` and ``acl_id`` appended (see the module docstring).

    The decisions are made once per distinct request and joined back by the join Spark chooses (adaptive
    execution broadcasts the table when it measures it under ``spark.sql.adaptive.autoBroadcastJoinThreshold``);
    ``broadcast_decisions`` asks for a broadcast whatever its size, for a caller that knows the distinct
    requests few. Existing ``granted``/``rule``/``acl_id`` columns are replaced."""
    table = decide_distinct(requests, acls, settings)
    if broadcast_decisions:
        table = F.broadcast(table)
    carried = requests.drop("granted", "rule", "acl_id")
    joined = carried.join(table, on=list(REQUEST_COLUMNS), how="left")
    return joined.select(*carried.columns, "granted", "rule", "acl_id")
