"""Read authorization audit logs into ``AUTHZ_EVENT_SCHEMA``, whatever wrote them.

    events, rejects = read_audit(spark, ["/var/log/ksteward/audit", "/var/log/kafka/kafka-authorizer.log*"])

Each line is recognised on its own, so one file may mix formats:

- ``ksteward``: ksteward's CloudEvents lines (``ksteward.authorizer.AuditLogWriter``); ``rule``, ``acl_id``
  (``data.ksteward.acl.id``), ``image_offset`` (``data.ksteward.imageOffset``; -1, "unknown", becomes null),
  ``forwarded_by_principal`` and ``forwarded_by_host`` (``data.ksteward.forwardedBy``: the broker that
  forwarded the request in an Envelope, KIP-590; null for a direct request) come from ``data.ksteward``.
  ``principal`` and ``host`` are the client's in both cases (``authenticationInfo``, ``requestMetadata``), so
  every job counts a forwarded decision as the client's.
- ``confluent``: Confluent Platform's audit events, the same JSON without ``data.ksteward``. ``rule``,
  ``acl_id``, ``image_offset`` and the ``forwarded_by_*`` columns are null. Events of another ``type`` than
  ``io.confluent.kafka.server/authorization`` are rejected (the reason says which type).
- ``kafka_authorizer_log``: Kafka's ``kafka.authorizer.logger`` log4j lines. Both texts are read: the KRaft
  ``StandardAuthorizer`` (3.x/4.x), ``... is Denied operation = READ from host = 10.0.0.1 on resource =
  Topic:LITERAL:orders for request = Fetch with resourceRefCount = 1 based on rule DefaultDeny``, and the
  ZooKeeper-era ``AclAuthorizer`` (``Operation = Read``, no ``based on rule``). The time is the log4j prefix
  ``[2025-01-31 12:00:00,123]`` taken as UTC; ``method`` is ``kafka.`` + the request name; ``rule`` is
  Kafka's rule in ksteward's words (``SuperUser`` -> ``super_user``, ``DefaultAllow`` ->
  ``allow_everyone_default``, ``DefaultDeny`` -> ``no_matching_acl``, ``MatchingAcl(...)`` -> ``acl``), null
  for AclAuthorizer lines; Kafka logs no ACL id.

Operations and resource types are normalised to the enum names of the ``ksteward.authorizer`` enums from any
spelling (``DescribeConfigs``, ``DESCRIBE_CONFIGS``, ``TransactionalId``); an unknown one rejects the line.
``host`` loses the ``/`` that Java's ``InetAddress.toString`` puts in front; a JSON event without
``requestMetadata.clientAddress`` gets ``unknown`` (``UNKNOWN_HOST``). ``event_date`` is the UTC date.

**Paths.** Each of ``paths`` is a file, a glob, or a directory. A directory contributes its files named
``audit*.log*`` (ksteward's ``audit.log`` and rotated ``audit-<time>Z.log``) and ``*authorizer*.log*``
(Kafka's ``kafka-authorizer.log`` and its dated roll-overs), not other logs (``server.log`` would only fill
the rejects): name those explicitly or by a glob. Gzipped files are read too; a local file named ``*.gz`` that
does not start with gzip's magic bytes is set aside whole, as one reject (``source_line`` 0, ``NOT_GZIP``),
instead of failing the job, and when no file is left to read that is an ``InputError``. A path with a URL scheme
(``hdfs://``, ``s3a://``) goes to Spark as is.

**Repeats.** An event with a CloudEvents ``id`` (ksteward's and Confluent's lines) is kept once however many
input files hold it (a rotated file copied beside the live one, two collectors): one of the copies is kept.
Kafka's log4j lines have no id, and two equal lines may well be two decisions (the same request twice in
one millisecond), so they are all kept.

**Line numbers** are exact and 1-based, computed in the JVM: Spark may split a large file into blocks, and
a block's lines come in order, so a first small pass counts the lines of each (file, block) and a running
sum per file gives each block's first line number; the parsing pass adds a line's index within its block
(from ``monotonically_increasing_id``, which numbers a partition's rows in order). Each file is thus read
twice, both times in parallel and without Python. The parsed lines are cached (memory and disk): ``frame``,
``rejects`` and the jobs after them read the cache instead of parsing again.

**rejects** (``REJECTS_SCHEMA``): ``source_line`` is the line number, ``raw`` the line (at most 4096 chars),
``reason`` one of: malformed JSON; not an authorization event; a missing field (named); an unknown
operation or resource type; an unreadable time; not an audit line (neither JSON nor a
``kafka.authorizer.logger`` line). Blank lines are skipped, not rejected.
"""

from __future__ import annotations

import glob
import os
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from ksteward.authorizer import AUDIT_EVENT_TYPE, AclOperation, ResourceType, Rule
from ksteward.pipeline.local_frames import local_frame
from ksteward.pipeline.schemas import AUTHZ_EVENT_SCHEMA, REJECTS_SCHEMA

from . import InputError, ReadResult, conform

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

__all__ = ["DIRECTORY_GLOBS", "KAFKA_LINE", "audit_files", "read_audit"]

DIRECTORY_GLOBS = ("audit*.log*", "*authorizer*.log*")
"""The files a directory contributes (see the module docstring)."""

RAW_LIMIT = 4096

#: A ``kafka.authorizer.logger`` line: 1 date, 2 time, 3 fraction, 4 principal, 5 Allowed|Denied,
#: 6 operation, 7 host, 8 resource type, 9 pattern type, 10 resource name, 11 request, 12 rule.
KAFKA_LINE = (
    r"^\[(\d{4}-\d{2}-\d{2})[ T](\d{2}:\d{2}:\d{2})(?:[,.](\d{1,9}))?\]\s+(?:[A-Z]+\s+)?"
    r"Principal = (.+?) is (Allowed|Denied) [Oo]peration = (\S+) from host = (\S+) "
    r"on resource = ([^:\s]+):([^:\s]+):(.*?) for request = (\S+)"
    r"(?: with resourceRefCount = \d+)?(?: based on rule (.+?))?(?: \([\w.$]+\))?\s*$"
)

_SEP = "\u0000"

_KAFKA_RULES = {"SuperUser": Rule.SUPER_USER, "DefaultAllow": Rule.ALLOW_EVERYONE_DEFAULT,
                "DefaultDeny": Rule.NO_MATCHING_ACL}  # fmt: skip

_JSON_SCHEMA = (
    "struct<id: string, type: string, time: string, data: struct<methodName: string, "
    "authenticationInfo: struct<principal: string>, "
    "authorizationInfo: struct<granted: boolean, operation: string, resourceType: string, resourceName: string>, "
    "requestMetadata: struct<clientAddress: string>, "
    "ksteward: struct<rule: string, imageOffset: long, acl: struct<id: string>, "
    "forwardedBy: struct<principal: string, clientAddress: string>>>, _corrupt: string>"
)

# Required JSON fields, in the order a reject names the first missing one.
_REQUIRED_JSON = (
    "time",
    "data.authenticationInfo.principal",
    "data.authorizationInfo.granted",
    "data.authorizationInfo.operation",
    "data.authorizationInfo.resourceType",
    "data.authorizationInfo.resourceName",
)

#: ``host`` of a JSON event without ``requestMetadata.clientAddress`` (Confluent Cloud's events have none): it
#: matches only ACLs for host ``*``, as an address nobody can name should.
UNKNOWN_HOST = "unknown"


def audit_files(paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]]) -> list[str]:
    """The files ``read_audit`` reads for ``paths`` (see the module docstring); InputError if none."""
    items = [paths] if isinstance(paths, str | os.PathLike) else list(paths)
    files: list[str] = []
    for item in items:
        text = os.fspath(item)
        if "://" in text and not text.startswith("file:"):
            files.append(text)
        elif glob.has_magic(text):
            matched = sorted(p for p in glob.glob(text) if Path(p).is_file())
            if not matched:
                raise InputError(f"{text}: no file matches")
            files += matched
        elif Path(text).is_dir():
            found = sorted({str(p) for pattern in DIRECTORY_GLOBS for p in Path(text).glob(pattern) if p.is_file()})
            if not found:
                raise InputError(f"{text}: no audit log files ({', '.join(DIRECTORY_GLOBS)}) in this directory")
            files += found
        elif Path(text).is_file():
            files.append(text)
        else:
            raise InputError(f"{text}: no such file or directory")
    if not files:
        raise InputError("no audit log files given")
    return list(dict.fromkeys(files))


def read_audit(spark: SparkSession, paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]]) -> ReadResult:
    """Every authorization decision in ``paths``, and every line that is not one (see the module docstring)."""
    from pyspark.sql import functions as F

    files = audit_files(paths)
    not_gzip = [f for f in files if _not_gzip(f)]
    readable = [f for f in files if f not in not_gzip]
    if not readable:
        raise InputError(
            f"{not_gzip[0]}: {NOT_GZIP}" + (f" (and {len(not_gzip) - 1} more)" if len(not_gzip) > 1 else "")
        )
    parsed = _parse(_numbered_lines(spark, readable))
    columns = [f.name for f in AUTHZ_EVENT_SCHEMA]
    rejected = F.col("reason").isNotNull()
    kept = parsed.select(
        *columns, "event_id", "reason", F.when(rejected, F.substring("line", 1, RAW_LIMIT)).alias("raw")
    )
    # An event with a CloudEvents id is counted once however many files (or copies of a file) hold it; one of
    # its copies is kept. Events without an id (Kafka's log4j lines) cannot be told apart from a repeat and are
    # all kept. Then parse once: both outputs (and every job after them) read the cached result. Without it,
    # Spark pushes the ``reason`` filters into the parse and evaluates from_json and the regex once per use of a
    # field.
    with_id = ~rejected & F.col("event_id").isNotNull()
    both = kept.where(with_id).dropDuplicates(["event_id"]).unionByName(kept.where(~with_id)).cache()
    frame = conform(both.where(F.col("reason").isNull()).select(*columns), AUTHZ_EVENT_SCHEMA)
    rejects = both.where(rejected).select("source_file", "source_line", "reason", "raw")
    if not_gzip:
        rows = [(f, 0, NOT_GZIP, None) for f in not_gzip]
        rejects = rejects.unionByName(
            local_frame(spark, rows, "source_file string, source_line long, reason string, raw string")
        )
    return ReadResult(frame, conform(rejects, REJECTS_SCHEMA))


#: The reason a file named ``*.gz`` that does not start with gzip's magic bytes is rejected, whole.
NOT_GZIP = "not a gzip file, though its name ends in .gz: the whole file is set aside"
_GZIP_MAGIC = b"\x1f\x8b"


def _not_gzip(file: str) -> bool:
    """Whether ``file`` is named ``*.gz`` (which Hadoop decompresses by its name) without being gzip.

    Hadoop would fail the whole job on its first bytes ("not a gzip file") with a stack trace per task; a
    local file is checked here, by its first two bytes, and set aside instead. A file behind a URL scheme is
    not opened on the driver: it is left to Spark."""
    if not file.endswith(".gz") or ("://" in file and not file.startswith("file:")):
        return False
    try:
        with open(file.removeprefix("file://").removeprefix("file:"), "rb") as f:
            return f.read(2) != _GZIP_MAGIC
    except OSError:
        return False  # let Spark's reader report it


def _numbered_lines(spark: SparkSession, files: list[str]) -> DataFrame:
    """``source_file``, ``source_line`` (1-based) and ``line`` of every line of ``files``."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    lines = spark.read.text(files).select(
        F.input_file_name().alias("uri"),
        F.input_file_block_start().alias("block"),
        F.monotonically_increasing_id().alias("row_id"),
        F.col("value").alias("line"),
    )
    per_file = Window.partitionBy("uri").orderBy("block").rowsBetween(Window.unboundedPreceding, -1)
    blocks = (
        lines.groupBy("uri", "block")
        .agg(F.count("*").alias("n"), F.min("row_id").alias("first_row_id"))
        .withColumn("lines_before", F.coalesce(F.sum("n").over(per_file), F.lit(0)))
        .drop("n")
    )
    numbered = lines.join(F.broadcast(blocks), ["uri", "block"])
    return numbered.select(
        F.regexp_replace("uri", "^file:(//)?", "").alias("source_file"),
        (F.col("row_id") - F.col("first_row_id") + F.col("lines_before") + 1).alias("source_line"),
        "line",
    ).where(F.trim("line") != "")


def _normalise(enum: type[AclOperation | ResourceType], spelled: Column) -> Column:
    """The enum name for any spelling (``DescribeConfigs``, ``DESCRIBE_CONFIGS``, ``describeconfigs``); else null."""
    from pyspark.sql import functions as F

    names = F.create_map(*[F.lit(x) for m in enum if not m.is_unknown for x in (m.name.replace("_", ""), m.name)])
    return F.try_element_at(names, F.upper(F.regexp_replace(spelled, "_", "")))


def _parse(lines: DataFrame) -> DataFrame:
    """Both formats side by side; ``reason`` is null for a good line, else why it is rejected."""
    from pyspark.sql import functions as F

    line = F.col("line")
    is_json = F.ltrim(line).startswith("{")
    j = F.from_json(line, _JSON_SCHEMA, {"mode": "PERMISSIVE", "columnNameOfCorruptRecord": "_corrupt"})
    # One regex evaluation per line: the whole line is replaced by its 12 groups joined with a separator that
    # cannot occur in a log line (12 regexp_extract calls would run the backtracking pattern 12 times).
    packed = F.split(F.regexp_replace(line, KAFKA_LINE, _SEP.join(f"${n}" for n in range(1, 13))), _SEP)
    frame = (
        lines.withColumn("j", F.when(is_json, j))
        .withColumn("groups", F.when(~is_json, packed))
        .withColumn("is_kafka", F.coalesce(F.size("groups") == 12, F.lit(False)))
    )

    def group(n: int) -> Column:
        return F.col("groups").getItem(n - 1)

    kafka_time = F.concat(group(1), F.lit(" "), group(2), F.lit("."), F.rpad(group(3), 3, "0").substr(1, 3))
    kafka_rule_text = group(12)
    kafka_rule = F.when(kafka_rule_text.startswith("MatchingAcl("), F.lit(str(Rule.ACL)))
    for text, rule in _KAFKA_RULES.items():
        kafka_rule = kafka_rule.when(kafka_rule_text == text, F.lit(str(rule)))

    auth = F.col("j.data.authorizationInfo")
    ks = F.col("j.data.ksteward")
    k = F.col("is_kafka")
    image_offset = F.when(ks.imageOffset >= 0, ks.imageOffset)
    fields = {
        "event_time": F.when(k, F.try_to_timestamp(F.concat(kafka_time, F.lit("Z")), F.lit("yyyy-MM-dd HH:mm:ss.SSSX")))
        .otherwise(F.try_to_timestamp(F.col("j.time"))),
        "principal": F.when(k, group(4)).otherwise(F.col("j.data.authenticationInfo.principal")),
        "host": F.regexp_replace(
            F.when(k, group(7)).otherwise(F.coalesce("j.data.requestMetadata.clientAddress", F.lit(UNKNOWN_HOST))),
            "^/",
            "",
        )
        ,
        "operation_text": F.when(k, group(6)).otherwise(auth.operation),
        "resource_type_text": F.when(k, group(8)).otherwise(auth.resourceType),
        "resource_name": F.when(k, group(10)).otherwise(auth.resourceName),
        "granted": F.when(k, group(5) == "Allowed").otherwise(auth.granted),
        "rule": F.when(k, kafka_rule).otherwise(ks.rule),
        "acl_id": F.when(~k, ks.acl.id),
        "image_offset": F.when(~k, image_offset),
        "method": F.when(k, F.concat(F.lit("kafka."), group(11))).otherwise(F.col("j.data.methodName")),
        "forwarded_by_principal": F.when(~k, ks.forwardedBy.principal),
        "forwarded_by_host": F.when(~k, ks.forwardedBy.clientAddress),
        "event_id": F.when(~k, F.col("j.id")),
        "source_format": F.when(k, F.lit("kafka_authorizer_log"))
        .when(ks.isNotNull(), F.lit("ksteward"))
        .otherwise(F.lit("confluent")),
    }  # fmt: skip
    frame = frame.select(
        "source_file", "source_line", "line", "j", "is_kafka", *[v.alias(n) for n, v in fields.items()]
    )
    frame = frame.withColumn("operation", _normalise(AclOperation, F.col("operation_text"))).withColumn(
        "resource_type", _normalise(ResourceType, F.col("resource_type_text"))
    )
    event_time = F.col("event_time")
    event_date = F.expr("date_from_unix_date(CAST(floor(unix_seconds(event_time) / 86400) AS INT))")
    return frame.withColumn("event_date", F.when(event_time.isNotNull(), event_date)).withColumn("reason", _reason())


def _reason(raw_fields: tuple[str, ...] = _REQUIRED_JSON) -> Column:
    from pyspark.sql import functions as F

    j, k = F.col("j"), F.col("is_kafka")
    reason = (
        F.when(k, F.lit(None))
        .when(j.isNull(), F.lit("not an audit line: neither JSON nor a kafka.authorizer.logger line"))
        .when(j._corrupt.isNotNull(), F.lit("malformed JSON"))
        .when(
            F.coalesce(j.type, F.lit("")) != AUDIT_EVENT_TYPE,
            F.concat(F.lit("not an authorization event (type "), F.coalesce(j.type, F.lit("missing")), F.lit(")")),
        )
    )
    for name in raw_fields:
        reason = reason.when(F.col(f"j.{name}").isNull(), F.lit(f"missing field {name}"))
    reason = reason.when(F.col("event_time").isNull(), F.concat(F.lit("unreadable time "), F.col("j.time")))
    common = (
        F.when(
            F.col("operation").isNull(),
            F.concat(F.lit("unknown operation '"), F.coalesce("operation_text", F.lit("")), F.lit("'")),
        )
        .when(
            F.col("resource_type").isNull(),
            F.concat(F.lit("unknown resource type '"), F.coalesce("resource_type_text", F.lit("")), F.lit("'")),
        )
        .when(F.col("event_time").isNull(), F.lit("unreadable time"))
    )
    return F.coalesce(reason, common)
