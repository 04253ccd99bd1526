"""A Spark standalone cluster on loopback for the pipeline's tests, and the driver the tests run against it.

:class:`Standalone` starts a master and one worker (one core) from the installed pyspark
(``spark-class org.apache.spark.deploy.master.Master`` / ``...worker.Worker``, ``SPARK_LOCAL_IP=127.0.0.1``,
free ports, logs and the worker's directory under a temporary directory) and stops them.

Run as a script, this module is a driver: one SparkSession on the cluster, then ``ksteward pipeline`` commands
in it (``ksteward.cli.main.main``, as the command runs them), one per JSON argument::

    python spark_cluster.py spark://127.0.0.1:7077 [--kill-after N --worker-pid PID] '["pipeline", "state", ...]' ...

``--kill-after N`` SIGKILLs the worker's executor right after the audit's N-th checkpoint and waits until the
driver has lost it and a new executor has registered, so the rest of the audit runs on an executor that has
none of the earlier one's blocks. ``--local-checkpoints`` makes the audit checkpoint as it did before issue 21
(``localCheckpoint``), to show what such a kill does to that. The last line printed is the commands' exit
codes, as JSON.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import IO, Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integration"))

from harness import free_port, wait_for

HOST = "127.0.0.1"


def spark_home() -> Path:
    from pyspark.find_spark_home import _find_spark_home

    return Path(_find_spark_home())


def spark_env(**extra: str) -> dict[str, str]:
    """The environment of the cluster's processes and of a driver: loopback, and ksteward's Python."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYSPARK_")}
    env.update(SPARK_HOME=str(spark_home()), SPARK_LOCAL_IP=HOST, PYSPARK_PYTHON=sys.executable)
    env.update(extra)
    return env


#: The test cluster's own ``spark-defaults.conf``: what a site sizes for its cluster, as ksteward sets nothing on a
#: cluster master but the session's time zone (``ksteward.pipeline.session``). Spark's default of 200 shuffle
#: partitions made each of the jobs' dozens of shuffles 200 tasks on the worker's one core: the four jobs took
#: 286 s on a 2-core machine, and 94 s with these.
SITE_DEFAULTS = {"spark.sql.shuffle.partitions": "2"}


class Standalone:
    """A master and one worker with one core; ``url`` is the master's ``spark://`` URL. Its drivers and
    ``spark-submit`` run with :meth:`env`: the cluster's ``SPARK_CONF_DIR`` (:data:`SITE_DEFAULTS`)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.conf_dir = root / "conf"
        self.work_dir = root / "work"
        self.processes: list[subprocess.Popen[bytes]] = []
        self._logs: list[IO[bytes]] = []
        self.url = ""
        self._ui = 0

    def env(self, **extra: str) -> dict[str, str]:
        """:func:`spark_env` with this cluster's ``spark-defaults.conf``: for its drivers and ``spark-submit``."""
        return spark_env(SPARK_CONF_DIR=str(self.conf_dir), **extra)

    def start(self) -> None:
        (self.root / "logs").mkdir(parents=True, exist_ok=True)
        self.conf_dir.mkdir(parents=True, exist_ok=True)
        (self.conf_dir / "spark-defaults.conf").write_text("".join(f"{k} {v}\n" for k, v in SITE_DEFAULTS.items()))
        self.work_dir.mkdir(parents=True, exist_ok=True)
        port, self._ui = free_port(), free_port()
        self.url = f"spark://{HOST}:{port}"
        self._run("master", "org.apache.spark.deploy.master.Master", "--host", HOST, "--port", str(port),
                  "--webui-port", str(self._ui))  # fmt: skip
        wait_for(self._status, 120, "the Spark master's web UI")
        self._run("worker", "org.apache.spark.deploy.worker.Worker", self.url, "--host", HOST,
                  "--port", str(free_port()), "--webui-port", str(free_port()), "--cores", "1", "--memory", "2g",
                  "--work-dir", str(self.work_dir))  # fmt: skip
        wait_for(lambda: [w for w in self._status()["workers"] if w["state"] == "ALIVE"], 120, "an ALIVE worker")

    def _run(self, name: str, main_class: str, *args: str) -> None:
        log = open(self.root / "logs" / f"{name}.log", "wb")  # noqa: SIM115 (closed in stop)
        self._logs.append(log)
        command = [str(spark_home() / "bin" / "spark-class"), main_class, *args]
        self.processes.append(subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=self.env()))

    def _status(self) -> Any:
        try:
            with urllib.request.urlopen(f"http://{HOST}:{self._ui}/json/", timeout=5) as reply:
                return json.load(reply)
        except OSError:
            return None

    @property
    def worker_pid(self) -> int:
        return self.processes[1].pid

    def executor_runs(self) -> list[Path]:
        """The executor directories the worker made (``work/app-*/N``): one per executor it launched."""
        return sorted(self.work_dir.glob("app-*/*"))

    def stop(self) -> None:
        for process in reversed(self.processes):  # the worker first: it stops its executors
            process.terminate()
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        for log in self._logs:
            log.close()


def executor_pids(worker_pid: int) -> list[int]:
    """The executor JVMs the worker started (its children running CoarseGrainedExecutorBackend)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            stat = (entry / "stat").read_text()
            parent = int(stat.rsplit(")", 1)[1].split()[1])
            if parent == worker_pid and b"CoarseGrainedExecutorBackend" in (entry / "cmdline").read_bytes():
                found.append(int(entry.name))
    return found


# --- the driver ---------------------------------------------------------------------------------------------


def _executor_ids(spark: Any) -> set[str]:
    ids = spark.sparkContext._jsc.sc().getExecutorIds()
    return {str(ids.apply(i)) for i in range(ids.size())}


def _kill_executor(spark: Any, worker_pid: int) -> None:
    """SIGKILL the one executor; return once the driver runs on a new one."""
    before = _executor_ids(spark)
    [pid] = executor_pids(worker_pid)
    os.kill(pid, signal.SIGKILL)
    wait_for(lambda: _executor_ids(spark) and not _executor_ids(spark) & before, 180, "a new executor", 0.1)
    print(f"killed executor {sorted(before)} (pid {pid}); now {sorted(_executor_ids(spark))}", file=sys.stderr)


def _drive(argv: list[str]) -> int:
    from ksteward.cli.main import main
    from ksteward.pipeline.jobs import audit as audit_job
    from ksteward.pipeline.session import spark_session

    url, commands, kill_after, worker_pid = argv[0], [], 0, 0
    rest = iter(argv[1:])
    for arg in rest:
        if arg == "--kill-after":
            kill_after = int(next(rest))
        elif arg == "--worker-pid":
            worker_pid = int(next(rest))
        elif arg == "--local-checkpoints":  # the audit as it was before issue 21: localCheckpoint()
            audit_job.checkpoint_directory = lambda *_: contextlib.nullcontext()  # type: ignore[assignment]
        else:
            commands.append(json.loads(arg))
    spark = spark_session(url, "ksteward-standalone-test")
    if kill_after:
        real, made = audit_job.checkpoint, []

        def checkpoint_then_kill(frame: Any) -> Any:
            result = real(frame)
            made.append(result)
            if len(made) == kill_after:
                _kill_executor(spark, worker_pid)
            return result

        audit_job.checkpoint = checkpoint_then_kill  # type: ignore[assignment]
    codes = [main(command) for command in commands]
    spark.stop()
    print(json.dumps(codes))
    return 0


if __name__ == "__main__":
    sys.exit(_drive(sys.argv[1:]))
