"""Readers: files in, DataFrames out, with every line or batch they could not parse set aside.

Each reader returns a :class:`ReadResult`: ``frame`` in the schema the reader documents (a schema from
``ksteward.pipeline.schemas``) and ``rejects`` in ``REJECTS_SCHEMA`` (file, line or byte position, reason,
raw text when it is safe to keep). Nothing bad is silently dropped and nothing bad crashes a read::

    from ksteward.pipeline.readers import read_audit, read_metadata

    records, rejects = read_metadata(spark, "/var/lib/ksteward/data")
    events, bad_lines = read_audit(spark, ["/var/log/ksteward/audit"])
"""

from __future__ import annotations

import datetime
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame
    from pyspark.sql.types import DataType, StructType


class ReadResult(NamedTuple):
    """What a reader returns: the parsed rows and the rejected input (``REJECTS_SCHEMA``)."""

    frame: DataFrame
    rejects: DataFrame


class InputError(ValueError):
    """Input a reader or job cannot use at all; the message names the file (and line, when there is one).

    ``ksteward pipeline`` prints it on one line and exits 2. Bad *lines* are not errors: they are rejects.
    """


def conform(frame: DataFrame, schema: StructType) -> DataFrame:
    """``frame``, whose columns already have ``schema``'s names, order and types, with ``schema``'s nullability.

    Spark marks parsed columns nullable even where the reader has made sure (by rejecting the row) that
    they are not; ``coalesce`` with a typed literal only tells Spark so, to keep the contract's schema.
    """
    from pyspark.sql import functions as F

    return frame.select(
        *[F.col(f.name) if f.nullable else F.coalesce(F.col(f.name), _zero(f.dataType)).alias(f.name) for f in schema]
    ).to(schema)


def _zero(kind: DataType) -> Column:
    from pyspark.sql import functions as F
    from pyspark.sql.types import BooleanType, DateType, StringType, TimestampType

    if isinstance(kind, StringType):
        return F.lit("")
    if isinstance(kind, BooleanType):
        return F.lit(False)
    if isinstance(kind, TimestampType):
        return F.lit(datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC))
    if isinstance(kind, DateType):
        return F.lit(datetime.date(1970, 1, 1))
    return F.lit(0).cast(kind)


from .audit import read_audit  # noqa: E402  (ReadResult must exist first: the readers import it)
from .metadata import read_metadata  # noqa: E402

__all__ = ["InputError", "ReadResult", "conform", "read_audit", "read_metadata"]
