"""The SparkSession: local by default, never a hard-coded master.

``--master`` wins; under spark-submit (which starts the JVM first and sets ``PYSPARK_GATEWAY_PORT``) the
master spark-submit was given is used; otherwise ``local[*]``, which needs nothing beyond ``pip install``.
"""

from __future__ import annotations

import logging
import os
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

DEFAULT_MASTER = "local[*]"

#: Settings that suit a laptop-sized local run; spark-submit's ``--conf`` overrides any of them.
LOCAL_DEFAULTS = {
    "spark.ui.enabled": "false",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.shuffle.partitions": "8",
    "spark.sql.adaptive.enabled": "true",
    "spark.driver.memory": "4g",
    # A job is dozens of short queries of distinct shapes; with Spark's default of 100 cached generated classes
    # they evict each other, are compiled again and JIT-compiled again (bench/pipeline.py: about 20% of a run).
    "spark.sql.codegen.cache.maxEntries": "2000",
    # Local mode runs every task in the driver's JVM: the throughput collector suits a batch job there better
    # than G1, whose concurrent marking and write barriers cost CPU the tasks need (bench/pipeline.py's audit of
    # 10M events, rounds 2-5 in one JVM: 8.7/8.2/7.5 s against 9.9/9.7/8.9 s; GC threads 0.4-0.7 CPU-s
    # against 1.2-1.8 per round).
    "spark.driver.extraJavaOptions": "-XX:+UseParallelGC",
}


#: JVM loggers held at ERROR: their warnings are about what the jobs do on purpose. WindowExec warns "No
#: Partition Defined for Window operation" on every run of a window over one partition, which the jobs use only
#: to rank a top-N list of at most ``--top`` rows (dozens of lines per audit otherwise).
QUIET_JVM_LOGGERS = ("org.apache.spark.sql.execution.window.WindowExec",)


def _quiet_jvm_loggers(session: SparkSession) -> None:
    jvm = session.sparkContext._jvm
    assert jvm is not None
    level = jvm.org.apache.logging.log4j.Level.ERROR
    for name in QUIET_JVM_LOGGERS:
        jvm.org.apache.logging.log4j.core.config.Configurator.setLevel(name, level)


def _stderr_is_terminal() -> bool:
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):  # replaced or closed
        return False


def spark_session(master: str | None = None, app_name: str = "ksteward-pipeline", **conf: str) -> SparkSession:
    """Return the active SparkSession, or build one.

    ``master``: a Spark master URL, or ``None`` to use spark-submit's or else ``local[*]``.
    ``conf``: extra ``spark.*`` settings (``spark_sql_shuffle_partitions="4"`` style names are not
    translated: pass real keys through ``**{"spark.x": "y"}``).
    """
    from pyspark.sql import SparkSession

    # Python workers must run the interpreter that has ksteward installed.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    builder = SparkSession.builder.appName(app_name)
    if master is not None:
        builder = builder.master(master)
    elif "PYSPARK_GATEWAY_PORT" not in os.environ:
        builder = builder.master(DEFAULT_MASTER)
    under_submit = "PYSPARK_GATEWAY_PORT" in os.environ
    for key, value in LOCAL_DEFAULTS.items():
        if not under_submit:
            builder = builder.config(key, value)
    if not under_submit:
        # Spark's progress bar redraws one line with carriage returns: in a log file it is a run of fragments.
        builder = builder.config("spark.ui.showConsoleProgress", str(_stderr_is_terminal()).lower())
    for key, value in conf.items():
        builder = builder.config(key, value)
    # py4j says "Closing down clientserver connection" at INFO for every Python thread that ran a Spark job.
    logging.getLogger("py4j").setLevel(logging.WARNING)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("WARN")
    _quiet_jvm_loggers(session)
    return session
