"""The DataFrame schemas the readers produce and the jobs consume: the pipeline's one contract.

Enum-valued columns hold the upper-case names of the ``ksteward.authorizer`` enums (``TOPIC``, ``READ``,
``DESCRIBE_CONFIGS``, ``LITERAL``, ``PREFIXED``, ``ALLOW``, ``DENY``), whatever the source format spelled;
principals keep Kafka's ``Type:name`` form (``User:alice``).
"""

from __future__ import annotations

from pyspark.sql.types import (
    BooleanType,
    DateType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

# The jobs take the authorizer's own typed settings (``AuthorizerSettings.from_config`` reads Kafka's strings).
from ksteward.authorizer import AuthorizerSettings as AuthorizerSettings


def _s(*fields: tuple[str, object, bool]) -> StructType:
    return StructType([StructField(name, kind, nullable) for name, kind, nullable in fields])  # type: ignore[arg-type]


#: One authorization decision, from any audit source (``readers.audit``).
#: ``rule``/``acl_id``/``image_offset`` are known only for ksteward's own lines; ``method`` is the API
#: (``kafka.Produce``) when the source says it. ``principal`` and ``host`` are always the client's: for a
#: request a broker forwarded to the controller (KIP-590), ``forwarded_by_principal`` and ``forwarded_by_host``
#: name that broker (ksteward's ``data.ksteward.forwardedBy``); both are null for a direct request and for the
#: other sources. ``source_format``: ``ksteward``, ``confluent`` or ``kafka_authorizer_log``.
AUTHZ_EVENT_SCHEMA = _s(
    ("event_time", TimestampType(), False),
    ("event_date", DateType(), False),
    ("principal", StringType(), False),
    ("host", StringType(), False),
    ("operation", StringType(), False),
    ("resource_type", StringType(), False),
    ("resource_name", StringType(), False),
    ("granted", BooleanType(), False),
    ("rule", StringType(), True),
    ("acl_id", StringType(), True),
    ("image_offset", LongType(), True),
    ("method", StringType(), True),
    ("forwarded_by_principal", StringType(), True),
    ("forwarded_by_host", StringType(), True),
    ("source_format", StringType(), False),
    ("source_file", StringType(), False),
    ("source_line", LongType(), False),
)

#: A line (or batch) a reader could not parse: kept, counted and reported, never silently dropped.
#: ``source_line`` is the 1-based line number for text sources and the file position for binary ones.
REJECTS_SCHEMA = _s(
    ("source_file", StringType(), False),
    ("source_line", LongType(), False),
    ("reason", StringType(), False),
    ("raw", StringType(), True),
)

#: One metadata record (``readers.metadata``), from a log segment or a ``.checkpoint`` snapshot.
#: ``payload`` is the record as JSON in the form ``kafka-metadata-shell``/``ksteward metadata dump``
#: print (``metadata.records.kafka_json``). ``batch_timestamp`` is the batch's max timestamp.
METADATA_RECORD_SCHEMA = _s(
    ("source_file", StringType(), False),
    ("source_kind", StringType(), False),  # "segment" | "snapshot"
    ("offset", LongType(), False),
    ("batch_base_offset", LongType(), False),
    ("batch_timestamp", TimestampType(), False),
    ("leader_epoch", IntegerType(), False),
    ("record_type", StringType(), False),  # e.g. "AccessControlEntryRecord"
    ("record_version", IntegerType(), False),
    ("payload", StringType(), False),
)

#: One ACL binding with its id (Kafka's 22-character base64 text form, as in the audit log).
ACL_SCHEMA = _s(
    ("acl_id", StringType(), False),
    ("resource_type", StringType(), False),
    ("resource_name", StringType(), False),
    ("pattern_type", StringType(), False),
    ("principal", StringType(), False),
    ("host", StringType(), False),
    ("operation", StringType(), False),
    ("permission_type", StringType(), False),
)

#: The columns ``decide`` needs on each request row; any other columns are carried through.
REQUEST_COLUMNS = ("principal", "host", "operation", "resource_type", "resource_name")

#: The columns ``decide`` adds: ``rule`` is a ``ksteward.authorizer.Rule`` value; ``acl_id`` names the
#: deciding ACL when ``rule == "acl"`` (the same ACL ``StandardAuthorizer.authorize_with_reason`` names).
DECISION_SCHEMA = _s(
    ("granted", BooleanType(), False),
    ("rule", StringType(), False),
    ("acl_id", StringType(), True),
)
