"""Start the real ``ksteward serve`` as a subprocess on free loopback ports, and drive its lifecycle.

Readiness is a condition, never a sleep: the ``is serving on`` line in the server's stderr *and*
an ApiVersions round trip on the client listener, polled until a deadline. Every server started
here is registered, so the pytest hooks can kill strays and show log tails when a test fails.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path

from rawkafka import ConnectionClosed, RawConnection

REPO = Path(__file__).resolve().parents[2]
CONFIG_DIR = REPO / "config"
HOST = "127.0.0.1"
START_TIMEOUT = 30.0
STOP_TIMEOUT = 30.0
READY_LINE = "is serving on"

# The ``server_factory`` fixture: make(template="server", overrides=None, *, name=None, debug_log=False),
# not started.
ServerFactory = Callable[..., "KstewardServer"]

# Every server a test started and has not yet been reaped: for teardown and failure reports.
LIVE: list[KstewardServer] = []


def server_env() -> dict[str, str]:
    """The environment for a server process.

    In the dev venv kio imports hypothesis, whose first use in a directory builds a Unicode table
    under ``./.hypothesis`` (about 2 s). Pointing every server at one shared storage directory keeps
    that to the first start of the session instead of every start in a fresh ``tmp_path``.
    """
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    env.setdefault("HYPOTHESIS_STORAGE_DIRECTORY", str(REPO / ".hypothesis"))
    return env


def ksteward_cli(*args: str, timeout: float = 60.0) -> subprocess.CompletedProcess[str]:
    """Run ``ksteward ARGS...`` (this interpreter's) to completion, capturing its text output."""
    return subprocess.run(
        [sys.executable, "-m", "ksteward.cli.main", *args], capture_output=True, text=True, timeout=timeout, check=False
    )


def free_port() -> int:
    """A port that was free on 127.0.0.1 a moment ago (bind port 0, read it, close)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


def wait_for(condition: Callable[[], object], timeout: float, what: str, interval: float = 0.02) -> object:
    """Poll ``condition`` until it returns something truthy; AssertionError naming ``what`` at the deadline."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(interval)  # a pause between polls of a condition, not synchronisation


# --- fault tests: how many kill cycles, and where (`make test-slow` raises the count) -----------------------

#: Kill-and-restart cycles per fault test: 1 in ``make test``; ``make test-slow`` sets KSTEWARD_FAULT_CYCLES=20.
FAULT_CYCLES = int(os.environ.get("KSTEWARD_FAULT_CYCLES", "1"))


def fault_rng(name: str) -> random.Random:
    """A seeded RNG for kill points; the seed is printed so a failing run replays with KSTEWARD_FAULT_SEED=N."""
    seed = int(os.environ.get("KSTEWARD_FAULT_SEED") or random.SystemRandom().randrange(2**32))
    print(f"{name}: KSTEWARD_FAULT_SEED={seed}")
    return random.Random(seed)


def read_meta_properties(directory: Path) -> dict[str, str]:
    props: dict[str, str] = {}
    for line in (directory / "meta.properties").read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if line and not line.startswith("#") and "=" in line:
            key, _, value = line.partition("=")
            props[key.strip()] = value.strip()
    return props


class ServerExited(AssertionError):
    """The server process ended while we waited for it to become ready."""


class KstewardServer:
    """One ``ksteward serve`` process, its config file, its data directory and its log.

    ``template`` is ``"server"`` (PLAINTEXT) or ``"sasl"`` (SASL_PLAINTEXT): the repository's
    ``config/<template>.properties`` is copied into ``workdir`` and the listeners, advertised
    listeners and ``metadata.log.dir`` are set with ``--override`` (as an operator would), so the
    shipped config files are what the tests run.
    """

    def __init__(
        self,
        workdir: Path,
        template: str = "server",
        overrides: Mapping[str, str] | None = None,
        *,
        name: str = "ksteward",
        debug_log: bool = False,
    ) -> None:
        self.workdir = Path(workdir)
        self.debug_log = debug_log  # serve with --log-level DEBUG
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.template = template
        self.name = name
        self.config_path = self.workdir / f"{name}.properties"
        shutil.copyfile(CONFIG_DIR / f"{template}.properties", self.config_path)
        self.data_dir = self.workdir / f"{name}-data"
        self.log_path = self.workdir / f"{name}.log"
        self.client_listener = "SASL_PLAINTEXT" if template == "sasl" else "PLAINTEXT"
        self.extra_overrides: dict[str, str] = dict(overrides or {})
        self._pick_ports()
        self.proc: subprocess.Popen[bytes] | None = None
        self.returncode: int | None = None
        self._log_offset = 0  # where the current run's output starts in the log file
        self.starts = 0

    # --- configuration ------------------------------------------------------------------------
    def _pick_ports(self) -> None:
        self.port = free_port()
        self.controller_port = free_port()
        while self.controller_port == self.port:
            self.controller_port = free_port()

    @property
    def address(self) -> tuple[str, int]:
        return (HOST, self.port)

    @property
    def bootstrap(self) -> str:
        return f"{HOST}:{self.port}"

    @property
    def node_id(self) -> int:
        return int(self.overrides().get("node.id") or _template_value(self.config_path, "node.id"))

    def overrides(self) -> dict[str, str]:
        base = {
            "listeners": f"{self.client_listener}://{HOST}:{self.port},CONTROLLER://{HOST}:{self.controller_port}",
            "advertised.listeners": f"{self.client_listener}://{HOST}:{self.port}",
            "metadata.log.dir": str(self.data_dir),
        }
        base.update(self.extra_overrides)
        return base

    def command(self) -> list[str]:
        cmd = [sys.executable, "-m", "ksteward.cli.main", "serve", "--config", str(self.config_path)]
        for key, value in self.overrides().items():
            cmd += ["--override", f"{key}={value}"]
        if self.debug_log:
            cmd += ["--log-level", "DEBUG"]
        return cmd

    @property
    def cluster_id(self) -> str:
        return read_meta_properties(self.data_dir)["cluster.id"]

    # --- process control ----------------------------------------------------------------------
    def spawn(self) -> subprocess.Popen[bytes]:
        """Start the process without waiting for anything (for tests that expect it to fail)."""
        if self.proc is not None and self.proc.poll() is None:
            raise RuntimeError(f"{self.name} is already running (pid {self.proc.pid})")
        self._log_offset = self.log_path.stat().st_size if self.log_path.exists() else 0
        with open(self.log_path, "ab") as log:
            header = f"===== start #{self.starts + 1}: {' '.join(self.command())}\n".encode()
            log.write(header)
            self._log_offset += len(header)
            log.flush()
            self.proc = subprocess.Popen(
                self.command(),
                cwd=self.workdir,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                env=server_env(),
                start_new_session=True,  # our own process group: a Ctrl-C on pytest does not reach it
            )
        self.returncode = None
        self.starts += 1
        if self not in LIVE:
            LIVE.append(self)
        return self.proc

    def start(self, timeout: float = START_TIMEOUT) -> KstewardServer:
        """Start and wait until it is ready. If the port was taken meanwhile, retry on new ports."""
        for attempt in range(3):
            self.spawn()
            try:
                self.wait_ready(timeout)
                return self
            except ServerExited:
                text = self.run_log()
                if "already in use" in text and attempt < 2 and self.starts == attempt + 1:
                    self._pick_ports()  # lost a race for a free port with another process: try again
                    continue
                raise
        raise AssertionError("unreachable")

    def wait_ready(self, timeout: float = START_TIMEOUT) -> None:
        deadline = time.monotonic() + timeout

        def ready_line() -> bool:
            self._check_alive()
            return READY_LINE in self.run_log()

        wait_for(ready_line, timeout, f"{self.name} to print {READY_LINE!r}")
        wait_for(
            self._api_versions_round_trip,
            max(deadline - time.monotonic(), 1.0),
            f"{self.name} to answer ApiVersions on {self.bootstrap}",
        )

    def _check_alive(self) -> None:
        assert self.proc is not None
        rc = self.proc.poll()
        if rc is not None:
            self.returncode = rc
            raise ServerExited(f"{self.name} exited with code {rc} before it was ready:\n{self.log_tail()}")

    def _api_versions_round_trip(self) -> bool:
        self._check_alive()
        try:
            with RawConnection(HOST, self.port, timeout=5.0) as conn:
                response = conn.api_versions(3)
        except (OSError, ConnectionClosed):
            return False
        return int(response.body.error_code) == 0

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def send_signal(self, signum: int) -> None:
        assert self.proc is not None, "not started"
        self.proc.send_signal(signum)

    def wait_exit(self, timeout: float = STOP_TIMEOUT) -> int:
        """Wait for the process to end; returns its exit code. Kills it (and fails) at the deadline."""
        assert self.proc is not None, "not started"
        try:
            self.returncode = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(f"{self.name} did not exit within {timeout:.0f}s:\n{self.log_tail()}") from None
        if self in LIVE:
            LIVE.remove(self)
        return self.returncode

    def stop(self, signum: int = signal.SIGTERM, timeout: float = STOP_TIMEOUT, expect: int | None = 0) -> int:
        """Signal (SIGTERM by default), wait for exit, and assert the exit code (``expect=None``: don't)."""
        self.send_signal(signum)
        rc = self.wait_exit(timeout)
        if expect is not None:
            assert rc == expect, (
                f"{self.name} exited with {rc} after {signal.Signals(signum).name}, expected {expect}:\n"
                f"{self.log_tail()}"
            )
        return rc

    def kill(self) -> None:
        """SIGKILL the whole process group and reap it. Safe to call on a stopped server."""
        if self.proc is None:
            return
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=10)
        self.returncode = self.proc.returncode
        if self in LIVE:
            LIVE.remove(self)

    def restart(self, *, hard: bool = False, timeout: float = START_TIMEOUT) -> KstewardServer:
        """Stop (SIGTERM, or SIGKILL with ``hard``) and start again on the same ports and data dir."""
        if self.running:
            if hard:
                self.kill()
            else:
                self.stop()
        self.spawn()
        self.wait_ready(timeout)
        return self

    def run_to_exit(self, timeout: float = START_TIMEOUT) -> tuple[int, str]:
        """Start a server that is expected to refuse to start: (exit code, its output of this run).

        If it becomes ready instead, it is killed and the test fails.
        """
        self.spawn()
        assert self.proc is not None
        deadline = time.monotonic() + timeout
        while self.proc.poll() is None:
            if READY_LINE in self.run_log():
                self.kill()
                raise AssertionError(f"{self.name} started although it should have refused to:\n{self.log_tail()}")
            if time.monotonic() >= deadline:
                self.kill()
                raise AssertionError(
                    f"{self.name} neither started nor exited within {timeout:.0f}s:\n{self.log_tail()}"
                )
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=0.05)
        rc = self.wait_exit()
        return rc, self.run_log()

    # --- logs ---------------------------------------------------------------------------------
    def log_text(self) -> str:
        """Everything every run of this server has written to stdout and stderr."""
        if not self.log_path.exists():
            return ""
        return self.log_path.read_text(encoding="utf-8", errors="replace")

    def run_log(self) -> str:
        """The output of the current (or last) run only."""
        if not self.log_path.exists():
            return ""
        with open(self.log_path, "rb") as f:
            f.seek(self._log_offset)
            return f.read().decode("utf-8", errors="replace")

    def log_tail(self, lines: int = 40) -> str:
        text = self.log_text().splitlines()
        return "\n".join(text[-lines:])

    def wait_for_log(self, pattern: str, timeout: float = 10.0, since: int = 0) -> str:
        """Wait until a log line (after character offset ``since``) matches regex ``pattern``; return it."""
        regex = re.compile(pattern)

        def find() -> str | None:
            for line in self.log_text()[since:].splitlines():
                if regex.search(line):
                    return line
            return None

        return str(wait_for(find, timeout, f"a log line of {self.name} matching {pattern!r}"))

    def log_size(self) -> int:
        return len(self.log_text())

    def __repr__(self) -> str:
        state = "running" if self.running else f"exited {self.returncode}"
        return f"<KstewardServer {self.name} {self.template} {self.bootstrap} {state}>"


def _template_value(path: Path, key: str) -> str:
    for line in path.read_text(encoding="utf-8").splitlines():
        k, sep, v = line.partition("=")
        if sep and k.strip() == key:
            return v.strip()
    raise KeyError(key)


@contextlib.contextmanager
def running(server: KstewardServer) -> Iterator[KstewardServer]:
    """Start ``server`` for the duration of a ``with`` block; kill it afterwards whatever happens."""
    try:
        yield server.start()
    finally:
        server.kill()


def kill_all() -> None:
    for server in list(LIVE):
        server.kill()


# --- a cluster: one controller-only node and broker-only nodes (issue 14) ------------------------------------


#: The role of a combined node (``process.roles=broker,controller``).
COMBINED = "broker,controller"


class ClusterNode(KstewardServer):
    """One node of a cluster: ``role`` is ``"controller"`` (its only listener is CONTROLLER, which is then
    also what readiness checks), ``"broker"`` (a PLAINTEXT client listener; it finds the controller through
    ``controller.quorum.bootstrap.servers``) or ``"broker,controller"`` (a combined voter of a quorum: both
    listeners, readiness on PLAINTEXT). Every node is formatted with the same ``cluster.id``."""

    def __init__(
        self,
        workdir: Path,
        role: str,
        node_id: int,
        cluster_id: str,
        controller: ClusterNode | None = None,
        overrides: Mapping[str, str] | None = None,
        *,
        quorum: Sequence[ClusterNode] = (),
    ) -> None:
        self.role = role
        self.cluster_node_id = node_id
        self.cluster_id_value = cluster_id
        self.controller_node = controller
        #: Every controller of a quorum (this node included when it is one); empty: ``controller`` alone.
        self.quorum = quorum  # the cluster's own list: it grows while the cluster is built
        super().__init__(workdir, "server", overrides, name=f"{'combined' if role == COMBINED else role}{node_id}")

    def voters(self) -> str:
        """``controller.quorum.voters`` of this node's quorum."""
        nodes = self.quorum or [self if self.role == "controller" else self.controller_node]
        return ",".join(f"{n.cluster_node_id}@{HOST}:{n.controller_port}" for n in nodes if n is not None)

    def quorum_state(self) -> dict[str, int] | None:
        """This controller's ``quorum-state`` file (docs/raft.md), or None while it has none."""
        path = self.data_dir / "__cluster_metadata-0" / "quorum-state"
        try:
            return json.loads(path.read_text())
        except (OSError, ValueError):
            return None

    def _pick_ports(self) -> None:
        if self.role == COMBINED:
            super()._pick_ports()
            return
        self.port = free_port()
        self.controller_port = self.port  # a controller is reached on its controller listener; a broker has none

    def overrides(self) -> dict[str, str]:
        base = {
            "process.roles": self.role,
            "node.id": str(self.cluster_node_id),
            "cluster.id": self.cluster_id_value,
            "metadata.log.dir": str(self.data_dir),
        }
        if self.role == COMBINED:
            base |= {
                "listeners": f"PLAINTEXT://{HOST}:{self.port},CONTROLLER://{HOST}:{self.controller_port}",
                "advertised.listeners": f"PLAINTEXT://{HOST}:{self.port}",
                "controller.quorum.voters": self.voters(),
            }
        elif self.role == "controller":
            base |= {
                "listeners": f"CONTROLLER://{HOST}:{self.port}",
                "advertised.listeners": "",
                "inter.broker.listener.name": "",
                "controller.quorum.voters": self.voters(),
            }
        else:
            assert self.controller_node is not None
            controllers = self.quorum or [self.controller_node]
            base |= {
                "listeners": f"PLAINTEXT://{HOST}:{self.port}",
                "advertised.listeners": f"PLAINTEXT://{HOST}:{self.port}",
                "controller.quorum.bootstrap.servers": ",".join(f"{HOST}:{n.controller_port}" for n in controllers),
            }
            if self.quorum:  # the static voter set, for a leader named without its endpoint
                base["controller.quorum.voters"] = self.voters()
        base.update(self.extra_overrides)
        return base


# Short sessions keep the fencing tests quick; a broker heartbeats ten times per session.
CLUSTER_DEFAULTS = {
    "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "super.users": "User:ANONYMOUS",  # brokers reach the PLAINTEXT controller listener as ANONYMOUS
    "broker.session.timeout.ms": "2000",
    "broker.heartbeat.interval.ms": "200",
}


class Cluster:
    """``controllers`` controller-only nodes (1, ..., a quorum of voters, issue 18), or combined voters with
    ``combined``, and ``brokers`` broker-only nodes (numbered after them), started in that order. ``controller``
    is the first controller: with one, the controller; with several, use :meth:`leader` for the active one."""

    def __init__(
        self,
        workdir: Path,
        brokers: int = 2,
        overrides: Mapping[str, str] | None = None,
        *,
        controllers: int = 1,
        combined: bool = False,
    ) -> None:
        from ksteward.metadata.meta_properties import random_uuid_text

        self.cluster_id = random_uuid_text()
        settings = {**CLUSTER_DEFAULTS, **(overrides or {})}
        self.controllers: list[ClusterNode] = []
        for i in range(controllers):
            quorum = self.controllers if controllers > 1 else []  # filled below: every node sees the whole list
            self.controllers.append(ClusterNode(workdir, COMBINED if combined else "controller", 1 + i,
                                                self.cluster_id, overrides=settings, quorum=quorum))  # fmt: skip
        self.controller = self.controllers[0]
        quorum = self.controllers if controllers > 1 else []
        first = controllers + 1
        self.brokers = [
            ClusterNode(workdir, "broker", first + i, self.cluster_id, self.controller, settings, quorum=quorum)
            for i in range(brokers)
        ]

    @property
    def nodes(self) -> list[ClusterNode]:
        return [*self.controllers, *self.brokers]

    def leader(self) -> ClusterNode | None:
        """The running controller that its ``quorum-state`` file names leader of the highest epoch any running
        controller's file holds; None while no running controller leads."""
        states = [(node, node.quorum_state()) for node in self.controllers if node.running]
        epochs = [state["leaderEpoch"] for _, state in states if state is not None]
        if not epochs:
            return None
        top = max(epochs)
        for node, state in states:
            if state is not None and state["leaderEpoch"] == top and state["leaderId"] == node.cluster_node_id:
                return node
        return None

    def wait_for_leader(self, timeout: float = 30.0, *, other_than: ClusterNode | None = None) -> ClusterNode:
        """Wait until a running controller (not ``other_than``) leads, and return it."""

        def found() -> ClusterNode | None:
            node = self.leader()
            return node if node is not None and node is not other_than else None

        leader = wait_for(found, timeout, "a controller leads the quorum")
        assert isinstance(leader, ClusterNode)
        return leader

    def start(self) -> Cluster:
        for controller in self.controllers:
            controller.spawn()  # voters start together: none is ready alone until a leader exists
        for controller in self.controllers:
            controller.wait_ready()
        for broker in self.brokers:
            broker.spawn()  # brokers start together; each is ready once the controller unfenced it
        for broker in self.brokers:
            broker.wait_ready()
        return self

    def kill(self) -> None:
        for node in self.nodes:
            node.kill()
