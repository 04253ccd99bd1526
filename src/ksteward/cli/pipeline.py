"""``ksteward pipeline JOB``: the governance jobs on Spark (``ksteward.pipeline.jobs``).

    ksteward pipeline state --metadata-dir DATA --at 2025-01-31T12:00:00Z --out OUT
    ksteward pipeline audit --help
    ksteward pipeline who-can --master spark://host:7077 ...

The jobs are registered here by name only; a job's module (and with it PySpark) is imported when that job
runs or its ``--help`` is asked for, so ``ksteward --help`` and the server never load Spark. Every job takes
``--master URL`` (default: spark-submit's master, else ``local[*]``; see ``pipeline.session``) and
``--format`` (the output format, default parquet). Input a job cannot use (a missing file, a state that
cannot be rebuilt, a bad plan) prints one line on stderr and exits 2; bad *lines* are set aside as rejects.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence
from types import ModuleType
from typing import Any

# Command name -> (module under ksteward.pipeline.jobs, help).
JOBS: dict[str, tuple[str, str]] = {
    "state": ("state", "the ACLs, topics, configs and quotas as they were at an offset or time"),
    "audit": ("audit", "ACL usage, unused and shadowed ACLs, denials; Parquet by date and an HTML report"),
    "whatif": ("whatif", "the requests whose decision an ACL plan would flip"),
    "who-can": ("who_can", "the principals and hosts allowed an operation on a resource, and why"),
}
FORMATS = ("parquet", "orc", "json", "csv")


def job_module(name: str) -> ModuleType:
    """Import the module of job ``name`` (``who-can`` or ``who_can``)."""
    module, _ = JOBS[name.replace("_", "-")]
    return importlib.import_module(f"ksteward.pipeline.jobs.{module}")


class _LazyJobs(argparse._SubParsersAction):
    """Sub-commands whose job-specific options are added (importing the job) only when that job is chosen."""

    def __call__(
        self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any, option_string: Any = None
    ) -> None:
        name = values[0] if isinstance(values, Sequence) and values else None
        job_parser = self._name_parser_map.get(name) if isinstance(name, str) else None
        if job_parser is not None and not job_parser.get_default("_options_added"):
            job_module(name).add_arguments(job_parser)  # type: ignore[arg-type]
            job_parser.set_defaults(_options_added=True)
        super().__call__(parser, namespace, values, option_string)


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``pipeline`` and its jobs on the ``ksteward`` command's subparsers."""
    parser = subparsers.add_parser("pipeline", help="governance jobs on Spark: state, audit, whatif, who-can")
    jobs = parser.add_subparsers(dest="pipeline_job", metavar="JOB", required=True, action=_LazyJobs)
    for name, (_, text) in JOBS.items():
        job = jobs.add_parser(name, help=text, description=text)
        job.add_argument("--master", default=None, metavar="URL",
                         help="Spark master (default: spark-submit's, else local[*])")  # fmt: skip
        job.add_argument("--format", default="parquet", choices=FORMATS,
                         help="output format (default parquet; csv: a header row, ;-joined arrays)")  # fmt: skip
        job.add_argument("--allow-partial", action="store_true",
                         help="rebuild states past a damaged part of the metadata log (default: exit 2)")  # fmt: skip
        job.set_defaults(func=run_job)


def window_problem(args: argparse.Namespace) -> str | None:
    """Why ``--from``/``--to`` give an empty window (``--from`` not before ``--to``), or None."""
    start, end = getattr(args, "start", None), getattr(args, "end", None)
    if start is not None and end is not None and start >= end:
        return (
            f"--from {start.isoformat()} is not before --to {end.isoformat()}: the window is empty"
            " (--from is inclusive, --to exclusive)"
        )
    return None


def run_job(args: argparse.Namespace) -> int:
    """Start (or join) the SparkSession and run the chosen job; bad input -> one line on stderr, exit 2."""
    from pyspark.errors import AnalysisException
    from pyspark.sql import SparkSession

    from ksteward.pipeline.readers import InputError
    from ksteward.pipeline.session import spark_session

    name = args.pipeline_job
    problem = window_problem(args)
    if problem:  # before Spark starts: an empty window is a mistake, not "0 events and every ACL unused"
        print(f"ksteward pipeline {name}: {problem}", file=sys.stderr)
        return 2
    module = job_module(name)
    ours = SparkSession.getActiveSession() is None  # in-process callers (tests) keep their session
    # A job that can answer on the driver (who-can on a small local log) does, unless Spark is asked for: a
    # --master, spark-submit (its JVM is up), or an in-process caller's session.
    local = getattr(module, "run_local", None)
    if local is not None and ours and args.master is None and "PYSPARK_GATEWAY_PORT" not in os.environ:
        try:
            answered: int | None = local(args)
        except (InputError, OSError) as exc:
            print(f"ksteward pipeline {name}: {exc}", file=sys.stderr)
            return 2
        if answered is not None:
            return answered
    spark = spark_session(args.master, app_name=f"ksteward-pipeline-{name}")
    try:
        code: int = module.run(spark, args)
        return code
    except (InputError, OSError) as exc:
        print(f"ksteward pipeline {name}: {exc}", file=sys.stderr)
        return 2
    except AnalysisException as exc:  # e.g. a path Spark cannot find: say it in one line
        print(f"ksteward pipeline {name}: {str(exc).splitlines()[0]}", file=sys.stderr)
        return 2
    finally:
        if ours:
            spark.stop()
