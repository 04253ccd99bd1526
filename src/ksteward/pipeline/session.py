"""The SparkSession: local by default, never a hard-coded master, and the site's Spark settings win.

``--master`` wins; under spark-submit (which starts the JVM first and sets ``PYSPARK_GATEWAY_PORT``) the
master spark-submit was given is used; otherwise ``local[*]``, which needs nothing beyond ``pip install``.

What ksteward sets (:func:`session_settings`):

- ``spark.sql.session.timeZone`` is ``UTC`` in every mode, under spark-submit too, whatever the host's zone:
  the jobs' days (``event_date``) and hours (``denials_by_hour``) are UTC days and hours. It is the one
  setting a site's configuration does not override.
- ``LOCAL_DEFAULTS`` only for a ``local[...]`` master, and of those only the keys the site has not set
  (``spark-defaults.conf`` in ``SPARK_CONF_DIR`` or ``SPARK_HOME/conf``; under spark-submit, every setting
  the running JVM was given). A cluster master (``spark://``, ``yarn``, ``k8s://``) gets nothing else from
  ksteward: its partitions, memory, UI and JVM options are the site's.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

DEFAULT_MASTER = "local[*]"

#: The session time zone of every job, in every mode (see the module docstring).
TIME_ZONE = {"spark.sql.session.timeZone": "UTC"}

#: Settings that suit a laptop-sized local run, for ``local[...]`` masters only; the site's settings win.
LOCAL_DEFAULTS = {
    "spark.ui.enabled": "false",
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


def session_settings(master: str, site: Mapping[str, str]) -> dict[str, str]:
    """What ksteward sets on a session for ``master``, given the settings the site already has (``site``)."""
    local = master == "local" or master.startswith("local[")
    chosen = {key: value for key, value in LOCAL_DEFAULTS.items() if key not in site} if local else {}
    return chosen | TIME_ZONE


def site_defaults(environ: Mapping[str, str] = os.environ) -> dict[str, str]:
    """The site's ``spark-defaults.conf`` (``SPARK_CONF_DIR``, else ``SPARK_HOME/conf``), as spark-submit reads
    it: one ``key value`` per line, ``#`` comments. Empty when there is none."""
    conf_dir = environ.get("SPARK_CONF_DIR") or (
        str(Path(environ["SPARK_HOME"]) / "conf") if environ.get("SPARK_HOME") else None
    )
    if conf_dir is None:
        return {}
    try:
        text = (Path(conf_dir) / "spark-defaults.conf").read_text(encoding="utf-8")
    except OSError:
        return {}
    settings = {}
    for line in text.splitlines():
        parts = line.strip().split(None, 1)
        if parts and not parts[0].startswith("#"):
            settings[parts[0]] = parts[1].strip() if len(parts) > 1 else ""
    return settings


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


@contextlib.contextmanager
def conf_set(spark: SparkSession, key: str, value: str) -> Iterator[None]:
    """The session's ``key`` set to ``value`` while the block runs (it plans its queries with it), then back
    to what it was, or unset."""
    before = spark.conf.get(key)
    spark.conf.set(key, value)
    try:
        yield
    finally:
        if before is None:
            spark.conf.unset(key)
        else:
            spark.conf.set(key, before)


def spark_session(master: str | None = None, app_name: str = "ksteward-pipeline", **conf: str) -> SparkSession:
    """Return the active SparkSession, or build one.

    ``master``: a Spark master URL, or ``None`` to use spark-submit's or else ``local[*]``.
    ``conf``: extra ``spark.*`` settings (``spark_sql_shuffle_partitions="4"`` style names are not
    translated: pass real keys through ``**{"spark.x": "y"}``); they win over everything above.
    """
    from pyspark import SparkConf, SparkContext
    from pyspark.sql import SparkSession

    # Python workers must run the interpreter that has ksteward installed.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    builder = SparkSession.builder.appName(app_name)
    if "PYSPARK_GATEWAY_PORT" in os.environ:  # under spark-submit: the JVM runs, with the site's settings
        SparkContext._ensure_initialized()  # connect to it, so that SparkConf() reads its settings
        site = dict(SparkConf().getAll())
        effective = master or site.get("spark.master", DEFAULT_MASTER)
    else:
        site = site_defaults()
        effective = master or DEFAULT_MASTER
        builder = builder.master(effective)
    if master is not None:
        builder = builder.master(master)
    settings = session_settings(effective, site)
    if "PYSPARK_GATEWAY_PORT" not in os.environ and "spark.ui.showConsoleProgress" not in site:
        # Spark's progress bar redraws one line with carriage returns: in a log file it is a run of fragments.
        settings["spark.ui.showConsoleProgress"] = str(_stderr_is_terminal()).lower()
    for key, value in (settings | conf).items():
        builder = builder.config(key, value)
    # py4j says "Closing down clientserver connection" at INFO for every Python thread that ran a Spark job.
    logging.getLogger("py4j").setLevel(logging.WARNING)
    session = builder.getOrCreate()
    session.conf.set("spark.sql.session.timeZone", conf.get("spark.sql.session.timeZone", "UTC"))  # a reused one too
    session.sparkContext.setLogLevel("WARN")
    _quiet_jvm_loggers(session)
    return session
