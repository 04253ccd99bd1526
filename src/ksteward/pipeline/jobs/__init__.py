"""The pipeline's jobs: pure functions from DataFrames to DataFrames, each with a ``ksteward pipeline`` command.

Every job module (``state``, ``audit``, ``whatif``, ``who_can``) exposes::

    add_arguments(parser: argparse.ArgumentParser) -> None   # its own options
    run(spark: SparkSession, args: argparse.Namespace) -> int  # I/O at the edges; returns the exit code

``args`` also carries the common options ``--master`` and ``--format`` (``cli.pipeline``). A ``run`` raises
:class:`~ksteward.pipeline.readers.InputError` (or ``FileNotFoundError``) for input it cannot use; the
command prints it on one line and exits 2. This module holds the output helpers the jobs share.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import IO, TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession
    from pyspark.sql.types import DataType

JOB_NAMES = ("state", "audit", "whatif", "who_can")
"""Module names under ``ksteward.pipeline.jobs``; the command spells ``who_can`` as ``who-can``."""

#: How many rejected lines a job prints to stderr (all of them are written to ``OUT/rejects``).
REJECTS_SHOWN = 5


#: The separator of an array's items in a CSV cell (CSV has no arrays).
CSV_ARRAY_SEPARATOR = ";"


def write_table(frame: DataFrame, path: str | Path, fmt: str = "parquet", partition_by: tuple[str, ...] = ()) -> None:
    """Write ``frame`` to ``path`` in ``fmt`` (Spark's writer name: parquet, json, csv, orc), replacing it.

    CSV gets a header row and text for what it cannot hold: an array becomes its items joined by
    ``CSV_ARRAY_SEPARATOR``, a map or struct its JSON text."""
    if fmt == "csv":
        frame = frame.select(*(_csv_cell(f.name, f.dataType).alias(f.name) for f in frame.schema))
    writer = frame.write.mode("overwrite").format(fmt)
    if fmt == "csv":
        writer = writer.option("header", True)
    if partition_by:
        writer = writer.partitionBy(*partition_by)
    writer.save(str(path))


def _csv_cell(name: str, data_type: DataType) -> Column:
    from pyspark.sql import functions as F
    from pyspark.sql.types import ArrayType, MapType, StructType

    if isinstance(data_type, ArrayType):
        return F.concat_ws(CSV_ARRAY_SEPARATOR, F.col(name).cast("array<string>"))
    if isinstance(data_type, MapType | StructType):
        return F.to_json(F.col(name))
    return F.col(name)


def read_table(spark: SparkSession, path: str | Path, fmt: str = "parquet") -> DataFrame:
    """Read back a table :func:`write_table` wrote (CSV: with its header row; every column is text)."""
    reader = spark.read.format(fmt)
    if fmt == "csv":
        reader = reader.option("header", True)
    return reader.load(str(path))


def write_rejects(rejects: DataFrame, out: str | Path, fmt: str = "parquet", err: IO[str] | None = None) -> int:
    """Write ``rejects`` (``REJECTS_SCHEMA``) to ``out/rejects`` when there are any; print a count and the
    first few as ``file:line: reason`` to ``err``. Returns how many there were."""
    err = err or sys.stderr
    first = rejects.orderBy("source_file", "source_line").limit(REJECTS_SHOWN).collect()
    if not first:
        return 0
    count = rejects.count()
    write_table(rejects, Path(out) / "rejects", fmt)
    print(f"{count} input line(s) rejected, set aside in {Path(out) / 'rejects'}:", file=err)
    for row in first:
        print(f"  {row.source_file}:{row.source_line}: {row.reason}", file=err)
    return count
