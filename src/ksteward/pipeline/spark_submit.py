"""The file to give ``spark-submit``: ``ksteward pipeline JOB ...`` as a Python application.

``spark-submit`` runs a ``.py`` file or a jar; the installed ``ksteward`` command is neither (Spark takes
it for a jar and fails), so this module is the application file::

    SUBMIT=$(python -c 'import ksteward.pipeline.spark_submit as m; print(m.__file__)')
    PYSPARK_PYTHON=/opt/ksteward/venv/bin/python spark-submit --master spark://host:7077 "$SUBMIT" \\
        audit --metadata-dir hdfs:///kafka/meta --audit hdfs:///kafka/audit --out hdfs:///reports/audit

The arguments are those of ``ksteward pipeline``; the master and every ``--conf`` are spark-submit's
(``pipeline.session``). The Python that ``PYSPARK_PYTHON`` names must have ksteward installed, on the driver
and on every worker host.
"""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    """Run ``ksteward pipeline`` with ``argv`` (default: the arguments spark-submit passed)."""
    from ksteward.cli.main import main as ksteward_main

    sys.modules.setdefault("hypothesis", None)  # type: ignore[arg-type]  # as the ksteward command (cli.main.entry)
    return ksteward_main(["pipeline", *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    sys.exit(main())
