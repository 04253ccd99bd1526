"""``ksteward cluster up|restart|status`` (issue 14, item 7): a local cluster in one command, driven as a user
would: the real command as a subprocess, a real client through the bootstrap string it prints."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from clients import Auth, confluent_admin
from harness import HOST, free_port, ksteward_cli, server_env, wait_for

UP_TIMEOUT = 90.0


def consecutive_free_ports(count: int) -> int:
    """A base port such that base..base+count-1 were all free on 127.0.0.1 a moment ago."""
    for _ in range(50):
        base = free_port()
        if base + count > 65535:
            continue
        with contextlib.ExitStack() as held:
            try:
                for port in range(base, base + count):
                    s = held.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM))
                    # As the servers bind (asyncio sets SO_REUSEADDR): a port whose last connection is in
                    # TIME-WAIT is free for them, and after a benchmark there can be thousands of those.
                    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                    s.bind((HOST, port))
            except OSError:
                continue
            return base
    raise AssertionError("no run of free ports found")


class ClusterUp:
    """One ``ksteward cluster up`` process, its output in a file, and a way to kill everything it started."""

    def __init__(self, directory: Path, brokers: int, controllers: int = 1, *, combined: bool = False) -> None:
        self.directory = directory
        self.brokers = brokers
        self.controllers = controllers
        self.combined = combined  # the controllers are combined nodes: each has a client and a controller port
        self.proc: subprocess.Popen[bytes] | None = None
        self.output = directory.parent / f"{directory.name}-up-{id(self)}.out"

    def start(self) -> str:
        """Start ``up`` on free ports; returns the bootstrap.servers value once it is printed."""
        for _ in range(3):  # a port taken between our check and `up`'s own check: try other ports
            base = consecutive_free_ports(self.brokers + self.controllers * (2 if self.combined else 1))
            with self.output.open("wb") as out:
                command = [sys.executable, "-m", "ksteward.cli.main", "cluster", "up", "--brokers", str(self.brokers),
                           "--controllers", str(self.controllers), "--dir", str(self.directory),
                           "--base-port", str(base), *(["--combined"] if self.combined else [])]  # fmt: skip
                self.proc = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=server_env())
            bootstrap = wait_for(self._bootstrap_or_exit, UP_TIMEOUT, "`cluster up` to print bootstrap.servers")
            if bootstrap != "exited":
                return str(bootstrap)
            if "already in use" not in self.text():
                raise AssertionError(f"`cluster up` exited with {self.proc.returncode}:\n{self.text()}")
        raise AssertionError(f"`cluster up` found no free ports:\n{self.text()}")

    def _bootstrap_or_exit(self) -> str | None:
        for line in self.text().splitlines():
            if line.startswith("bootstrap.servers="):
                return line.split("=", 1)[1]
        assert self.proc is not None
        return "exited" if self.proc.poll() is not None else None

    def text(self) -> str:
        return self.output.read_text(encoding="utf-8", errors="replace")

    def state(self) -> dict[str, Any]:
        state: dict[str, Any] = json.loads((self.directory / "cluster.json").read_text(encoding="utf-8"))
        return state

    def node_pids(self) -> list[int]:
        return [n["pid"] for n in self.state()["nodes"] if n["pid"]]

    def kill(self) -> None:
        """Teardown after a failure: the nodes run in their own sessions, so they are killed one by one."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        with contextlib.suppress(OSError, ValueError):
            for pid in self.node_pids():
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.fixture
def ups(tmp_path: Path) -> Iterator[list[ClusterUp]]:
    made: list[ClusterUp] = []
    try:
        yield made
    finally:
        for up in made:
            up.kill()


def broker_ids(bootstrap: str) -> set[int]:
    return set(confluent_admin(bootstrap, Auth()).list_topics(timeout=10).brokers)


def topics(bootstrap: str) -> set[str]:
    return set(confluent_admin(bootstrap, Auth()).list_topics(timeout=10).topics)


def create_topic(bootstrap: str, name: str) -> None:
    from confluent_kafka.admin import NewTopic

    admin = confluent_admin(bootstrap, Auth())  # kept alive until the result: a dropped client fails its futures
    admin.create_topics([NewTopic(name, num_partitions=2)])[name].result(30)


def test_up_restart_stop_and_up_again(tmp_path: Path, ups: list[ClusterUp]) -> None:
    directory = tmp_path / "cluster-data"
    first = ClusterUp(directory, brokers=2)
    ups.append(first)
    bootstrap = first.start()
    assert len(bootstrap.split(",")) == 2
    assert "bootstrap.controllers=" in first.text()
    cluster_id = (directory / "cluster.id").read_text(encoding="utf-8").strip()
    assert cluster_id in first.text()
    for role, node in (("controller", "controller-1"), ("broker", "broker-2"), ("broker", "broker-3")):
        assert "process.roles=" + role in (directory / node / "server.properties").read_text(encoding="utf-8")
        assert "is serving on" in (directory / node / "server.log").read_text(encoding="utf-8")

    create_topic(bootstrap, "kept")
    assert broker_ids(bootstrap) == {2, 3}
    wait_for(lambda: "kept" in topics(bootstrap), 30.0, "the topic on both brokers")  # KAFKA-15713, as below

    status = ksteward_cli("cluster", "status", "--dir", str(directory))
    assert status.returncode == 0, status.stderr
    assert status.stdout.count("serving") == 3, status.stdout

    old_pid = next(n["pid"] for n in first.state()["nodes"] if n["node_id"] == 2)
    restart = ksteward_cli("cluster", "restart", "2", "--dir", str(directory), timeout=120)
    assert restart.returncode == 0, restart.stdout + restart.stderr
    assert "node 2 (broker) is serving again" in restart.stdout
    new_pid = next(n["pid"] for n in first.state()["nodes"] if n["node_id"] == 2)
    assert new_pid != old_pid and not alive(old_pid) and alive(new_pid)
    broker_log = (directory / "broker-2" / "server.log").read_text(encoding="utf-8")
    assert "controlled shutdown complete" in broker_log
    # Fenced by its controlled shutdown, the old incarnation has no session left: the new one is not refused.
    assert "duplicate_broker_registration" not in broker_log
    wait_for(lambda: broker_ids(bootstrap) == {2, 3}, 30.0, "Metadata to list broker 2 again")

    # The controller too, with both brokers connected to it (their fetches and heartbeats must not hold
    # its shutdown), and forwarding carries on once it is back.
    restart = ksteward_cli("cluster", "restart", "1", "--dir", str(directory), timeout=120)
    assert restart.returncode == 0, restart.stdout + restart.stderr
    assert "node 1 (controller) is serving again" in restart.stdout
    wait_for(lambda: broker_ids(bootstrap) == {2, 3}, 30.0, "both brokers unfenced after the controller's restart")
    create_topic(bootstrap, "after-controller-restart")
    # Created through one broker and listed through either: the other may apply it a moment later (KAFKA-15713).
    wait_for(lambda: "after-controller-restart" in topics(bootstrap), 30.0, "the new topic on both brokers")

    pids = first.node_pids()
    assert first.proc is not None
    first.proc.send_signal(signal.SIGINT)
    assert first.proc.wait(60) == 0, first.text()
    assert not [pid for pid in pids if alive(pid)]
    assert "stopped" in first.text()

    second = ClusterUp(directory, brokers=2)
    ups.append(second)
    bootstrap = second.start()
    assert cluster_id in second.text()  # the same cluster, from the kept data
    wait_for(lambda: "kept" in topics(bootstrap), 30.0, "the second `up` to find the topic")
    assert second.proc is not None
    second.proc.send_signal(signal.SIGTERM)
    assert second.proc.wait(60) == 0, second.text()


def test_up_refuses_taken_ports_and_restart_needs_a_running_cluster(tmp_path: Path) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as held:
        held.bind((HOST, 0))
        held.listen()
        port = held.getsockname()[1]
        up = ksteward_cli("cluster", "up", "--brokers", "1", "--dir", str(tmp_path / "c"), "--base-port", str(port))
    assert up.returncode == 1
    assert "already in use" in up.stderr
    restart = ksteward_cli("cluster", "restart", "2", "--dir", str(tmp_path / "c"))
    assert restart.returncode == 1
    assert "no cluster is up" in restart.stderr


def test_a_node_that_cannot_start_stops_up_with_its_log_tail(tmp_path: Path) -> None:
    directory = tmp_path / "c"
    data = directory / "controller-1" / "data"
    data.mkdir(parents=True)  # a data directory formatted for another node: the controller refuses to start
    (data / "meta.properties").write_text("version=1\nnode.id=7\ncluster.id=AAAAAAAAAAAAAAAAAAAAAA\n", encoding="utf-8")
    base = consecutive_free_ports(2)
    up = ksteward_cli("cluster", "up", "--brokers", "1", "--dir", str(directory), "--base-port", str(base))
    assert up.returncode == 1, up.stdout + up.stderr
    assert "controller-1 exited with code 1" in up.stderr
    assert "belongs to node.id=7" in up.stderr  # the node's own log tail
    assert "bootstrap.servers=" not in up.stdout
