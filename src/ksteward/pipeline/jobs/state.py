"""``ksteward pipeline state``: write the ACLs, topics, configs and quotas as they were at an offset or time.

::

    ksteward pipeline state --metadata-dir DATA --at 2025-01-31T12:00:00Z --out OUT

The state is rebuilt by :func:`ksteward.pipeline.state.state_at` (its module documents the semantics and
the four tables' schemas); this command reads the log, resolves ``--at`` (an offset or a time; default the
latest), writes ``OUT/acls``, ``OUT/topics``, ``OUT/configs``, ``OUT/quotas`` and the rejected records, and
prints one line of counts.
"""

from __future__ import annotations

import argparse
import sys
from typing import IO, TYPE_CHECKING

from ksteward.pipeline.readers import read_metadata
from ksteward.pipeline.state import TABLES, resolve_target, state_for

from ._shared import Progress, at_kwargs, child_path, parse_at, read_table, write_rejects, write_table

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--metadata-dir", required=True, help="a data dir, a __cluster_metadata-0 dir, or one file")
    parser.add_argument("--at", type=parse_at, default=None, metavar="OFFSET|TIMESTAMP",
                        help="metadata offset (inclusive) or ISO-8601 time; default: the latest state")  # fmt: skip
    parser.add_argument("--out", required=True, metavar="DIR", help="writes DIR/{acls,topics,configs,quotas}")


def run(spark: SparkSession, args: argparse.Namespace, out: IO[str] | None = None) -> int:
    """Read ``--metadata-dir``, rebuild the state ``--at`` and write its four tables under ``--out``."""
    out = out or sys.stdout
    progress = Progress(spark, "state", ("read", "write"))
    progress.start("read")
    records, rejects = read_metadata(spark, args.metadata_dir, allow_partial=getattr(args, "allow_partial", False))
    target = resolve_target(records, **at_kwargs(args.at))
    state = state_for(records, target)
    counts = {}
    progress.start("write")  # the state is rebuilt as its tables are written
    for name, frame in zip(TABLES, state, strict=True):
        write_table(frame, child_path(args.out, name), args.format)
        counts[name] = read_table(spark, child_path(args.out, name), args.format).count()
    rejected = write_rejects(rejects, args.out, args.format)
    progress.done()
    base = f"snapshot at {target.snapshot_offset} + log" if target.snapshot_offset is not None else "log from 0"
    summary = ", ".join(f"{n} {k}" for k, n in counts.items())
    print(f"state at offset {target.offset} ({base}): {summary} -> {args.out}", file=out)
    if rejected:
        print(f"{rejected} rejected record(s) in {child_path(args.out, 'rejects')}", file=out)
    return 0
