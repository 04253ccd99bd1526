"""``ksteward cluster up --controllers 3`` (issue 18): three controller-only voters elect a leader, the brokers
find it, and ``ksteward metadata quorum describe`` shows the quorum; Ctrl-C stops everything."""

from __future__ import annotations

import importlib.util
import signal
from pathlib import Path

import pytest
from harness import ksteward_cli, wait_for
from test_cluster_cli import ClusterUp

# The voters' server side comes with the quorum piece of issue 18; without it three controllers would not elect.
if importlib.util.find_spec("ksteward.server.quorum") is None:
    pytest.skip("needs the controller quorum (ksteward.server.quorum)", allow_module_level=True)


def test_up_with_three_controllers_elects_one_and_the_brokers_follow_it(tmp_path: Path) -> None:
    up = ClusterUp(tmp_path / "quorum", brokers=2, controllers=3)
    try:
        bootstrap = up.start()  # printed once both brokers serve: registered with, and unfenced by, the leader
        roles = [(n["node_id"], n["role"]) for n in up.state()["nodes"]]
        assert roles == [(1, "controller"), (2, "controller"), (3, "controller"), (4, "broker"), (5, "broker")]
        controllers = next(line.split("=", 1)[1] for line in up.text().splitlines()
                           if line.startswith("bootstrap.controllers="))  # fmt: skip
        assert len(controllers.split(",")) == 3
        status = ksteward_cli("metadata", "quorum", "--bootstrap-controller", controllers, "describe", "--status")
        assert status.returncode == 0, status.stderr
        lines = status.stdout.splitlines()
        assert lines[1] in {f"LeaderId:               {i}" for i in (1, 2, 3)}
        assert lines[6].count('"id"') == 3
        forwarded = ksteward_cli("metadata", "quorum", "--bootstrap-server", bootstrap.split(",")[0], "describe",
                                 "--status")  # fmt: skip
        assert forwarded.returncode == 0, forwarded.stderr
        assert forwarded.stdout.splitlines()[1] == lines[1]
        leader = int(lines[1].split()[-1])

        def roles() -> list[str] | None:
            shown = ksteward_cli("cluster", "status", "--dir", str(tmp_path / "quorum")).stdout.splitlines()
            rows = [line for line in shown if " controller " in line]
            return rows if sum("(follows" in row for row in rows) == 2 else None

        rows = wait_for(roles, 30.0, "cluster status to show both followers")  # each learns the leader at once
        assert isinstance(rows, list)
        assert [row.split()[0] for row in rows if "(leader in epoch" in row] == [str(leader)]
        for node in (1, 2, 3):  # each voter formatted its empty directory, and said what that means
            log = (tmp_path / "quorum" / f"controller-{node}" / "server.log").read_text(encoding="utf-8")
            assert f"formatted an empty metadata log directory for voter {node} of a static quorum" in log
        assert all(f"(follows {leader} in epoch" in row for row in rows if row.split()[0] != str(leader))
        assert up.proc is not None
        up.proc.send_signal(signal.SIGINT)
        assert up.proc.wait(60) == 0
        assert "stopping the brokers, then the controllers" in up.text()
    finally:
        up.kill()


def test_up_with_three_combined_controllers_serves_clients_on_each(tmp_path: Path) -> None:
    """``--combined``: three ``broker,controller`` nodes and no broker-only node; every node serves clients,
    DescribeQuorum through any of them reaches the leader, and Ctrl-C stops them one at a time."""
    up = ClusterUp(tmp_path / "combined", brokers=0, controllers=3, combined=True)
    try:
        bootstrap = up.start()  # printed once all three brokers serve: registered with, and unfenced by, the leader
        assert [(n["node_id"], n["role"]) for n in up.state()["nodes"]] == [
            (1, "broker,controller"), (2, "broker,controller"), (3, "broker,controller")
        ]  # fmt: skip
        assert len(bootstrap.split(",")) == 3
        leaders = set()
        for address in bootstrap.split(","):
            shown = ksteward_cli("metadata", "quorum", "--bootstrap-server", address, "describe", "--status")
            assert shown.returncode == 0, shown.stderr
            leaders.add(shown.stdout.splitlines()[1])
        assert len(leaders) == 1 and next(iter(leaders)).split()[-1] in {"1", "2", "3"}
        created = ksteward_cli("topics", "--bootstrap-server", bootstrap, "--create", "--topic", "orders",
                               "--partitions", "3", "--replication-factor", "3")  # fmt: skip
        assert created.returncode == 0, created.stderr

        def status_rows() -> list[str] | None:
            shown = ksteward_cli("cluster", "status", "--dir", str(tmp_path / "combined")).stdout.splitlines()
            rows = [line for line in shown if " broker,controller " in line]
            return rows if sum("(follows" in r for r in rows) == 2 and sum("(leader" in r for r in rows) == 1 else None

        wait_for(status_rows, 30.0, "cluster status to show one leader and two followers")
        assert up.proc is not None
        up.proc.send_signal(signal.SIGINT)
        assert up.proc.wait(90) == 0
    finally:
        up.kill()
