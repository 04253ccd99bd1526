"""The pipeline's jobs: pure functions from DataFrames to DataFrames, each with a ``ksteward pipeline`` command.

Every job module (``state``, ``audit``, ``whatif``, ``who_can``) exposes::

    add_arguments(parser: argparse.ArgumentParser) -> None   # its own options
    run(spark: SparkSession, args: argparse.Namespace) -> int  # I/O at the edges; returns the exit code

``args`` also carries the common options ``--master`` and ``--format`` (``cli.pipeline``). A ``run`` raises
:class:`~ksteward.pipeline.readers.InputError` (or ``FileNotFoundError``) for input it cannot use; the
command prints it on one line and exits 2. What the jobs share (options, output, Spark helpers) is in
``_shared``; no job imports another.
"""

JOB_NAMES = ("state", "audit", "whatif", "who_can")
"""Module names under ``ksteward.pipeline.jobs``; the command spells ``who_can`` as ``who-can``."""
