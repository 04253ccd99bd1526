"""DataFrames of rows the driver already holds, built through Arrow so that the JVM reads them.

``spark.createDataFrame`` on a Python list makes a Python RDD: every job that scans the frame (each join, and
each broadcast the planner makes of it) has Python worker processes unpickle the rows again, and one decision
plan scans a small ACL table several times. From a ``pyarrow.Table`` (Spark 4, SPARK-48220), Spark builds a
local relation that the JVM scans itself (bench/README.md, "Small driver-side frames", has the difference measured).

For columns of strings, integers, doubles, booleans, dates, timestamps and arrays of them. A timestamp must
carry its time zone: PySpark reads a naive ``datetime`` in the host's zone and Arrow in UTC, so
:func:`local_frame` refuses a naive one rather than pick either.
"""

from __future__ import annotations

import datetime
from collections.abc import Sequence
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import (
    ArrayType,
    BooleanType,
    DataType,
    DateType,
    DoubleType,
    IntegerType,
    LongType,
    StringType,
    StructType,
    TimestampType,
)

_PLAIN = (StringType, IntegerType, LongType, DoubleType, BooleanType, DateType, TimestampType)


def _plain(kind: DataType) -> bool:
    if isinstance(kind, ArrayType):
        return _plain(kind.elementType)
    return isinstance(kind, _PLAIN)


def local_frame(spark: SparkSession, rows: Sequence[Sequence[Any]], schema: StructType | str) -> DataFrame:
    """``spark.createDataFrame(rows, schema)`` with the same schema (names, types and nullability), scanned by
    the JVM. ``schema``: a StructType or a DDL string (``"principal string, host string"``). Raises ValueError
    for a column type not listed in the module docstring, a row of the wrong width, a naive timestamp, and a
    null in a column that is not nullable (as ``createDataFrame``'s schema check does)."""
    struct = StructType.fromDDL(schema) if isinstance(schema, str) else schema
    if not isinstance(struct, StructType):
        raise ValueError(f"not a row schema: {schema!r}")
    for field in struct.fields:
        if not _plain(field.dataType):
            raise ValueError(f"local_frame: column {field.name} is {field.dataType.simpleString()}")
    width = len(struct.fields)
    for row in rows:
        if len(row) != width:
            raise ValueError(f"local_frame: a row of {len(row)} values for {width} columns")
    arrow_schema = to_arrow_schema(struct)
    columns = [pa.array([row[i] for row in rows], type=arrow_schema.field(i).type) for i in range(width)]
    for i, (field, column) in enumerate(zip(struct.fields, columns, strict=True)):
        if not field.nullable and column.null_count:
            raise ValueError(f"local_frame: a null in column {field.name}, which is not nullable")
        if isinstance(field.dataType, TimestampType) and any(_naive(row[i]) for row in rows):
            raise ValueError(f"local_frame: a timestamp without a time zone in column {field.name}")
    return spark.createDataFrame(pa.Table.from_arrays(columns, schema=arrow_schema))


def _naive(value: object) -> bool:
    return isinstance(value, datetime.datetime) and value.tzinfo is None
