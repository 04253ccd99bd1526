"""Quiet logs (issue 21, item 8): each job, run as the ``ksteward`` command with stderr to a file, says one line
per phase and one when done, and nothing from py4j or Spark's console progress bar."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

sys.path.insert(0, str(Path(__file__).resolve().parent))

from metadata_logs import write_history

KAFKA_LINES = [
    f"[2026-11-01 {h:02d}:00:00,000] INFO Principal = User:{who} is {verdict} operation = READ from host = 10.0.0.1 "
    f"on resource = Topic:LITERAL:orders for request = Fetch with resourceRefCount = 1 based on rule {rule} "
    "(kafka.authorizer.logger)"
    for h, (who, verdict, rule) in enumerate(
        [("alice", "Allowed", "MatchingAcl(acl=x)"), ("eve", "Denied", "MatchingAcl(acl=y)")] * 6
    )
]

#: The phases each job names, in order (``jobs._shared.Progress``).
PHASES = {
    "audit": ["read", "analyse", "write tables", "report"],
    "whatif": ["read", "analyse", "write"],
    "state": ["read", "write"],
    "who-can": ["read", "answer"],
}


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("quiet")
    write_history(root / "meta")
    (root / "kafka-authorizer.log").write_text("\n".join(KAFKA_LINES) + "\n")
    delete = {"resource_type": "TOPIC", "resource_name": "orders", "principal": "User:alice", "operation": "READ",
              "permission_type": "ALLOW"}  # fmt: skip
    (root / "plan.json").write_text(json.dumps({"delete": [delete]}))
    return root


def argv(job: str, root: Path, out: Path) -> list[str]:
    common = ["--metadata-dir", str(root / "meta")]
    audit = ["--audit", str(root / "kafka-authorizer.log")]
    return {
        "audit": [*common, *audit, "--out", str(out)],
        "whatif": [*common, *audit, "--plan", str(root / "plan.json"), "--out", str(out)],
        "state": [*common, "--out", str(out)],
        "who-can": [*common, "--resource", "TOPIC:orders", "--operation", "READ"],
    }[job]


@pytest.mark.parametrize("job", list(PHASES))
def test_a_jobs_stderr_is_one_line_per_phase(job: str, inputs: Path, tmp_path: Path) -> None:
    err_file = tmp_path / "stderr.log"
    command = [sys.executable, "-m", "ksteward.cli.main", "pipeline", job, "--master", "local[2]"]
    command += argv(job, inputs, tmp_path / "out")
    with err_file.open("w") as err:  # a file, as under systemd or cron: not a terminal
        done = subprocess.run(command, stdout=subprocess.PIPE, stderr=err, text=True, timeout=600, check=False)
    stderr = err_file.read_text()
    assert done.returncode == 0, stderr[-3000:]
    assert "Closing down clientserver connection" not in stderr
    assert "[Stage " not in stderr and "\r" not in stderr  # no progress-bar fragments
    assert "No Partition Defined for Window operation" not in stderr  # the top-N rankings, on purpose
    ours = re.findall(rf"^\d{{4}}-\d\d-\d\d \d\d:\d\d:\d\d {job} (.*)$", stderr, re.MULTILINE)
    phases = PHASES[job]
    assert ours[:-1] == [f"[{i}/{len(phases)}] {name} ..." for i, name in enumerate(phases, 1)], stderr[-3000:]
    times = ", ".join(rf"{re.escape(name)} \d+\.\d s" for name in phases)
    assert re.fullmatch(rf"done in \d+\.\d s \({times}\)", ours[-1]), ours[-1]


def test_the_progress_bar_is_off_when_stderr_is_not_a_terminal(spark: SparkSession) -> None:
    assert not sys.stderr.isatty()
    assert spark.sparkContext.getConf().get("spark.ui.showConsoleProgress") == "false"
