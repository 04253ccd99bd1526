"""``ksteward cluster up|restart|status``: a local cluster of controller-only nodes and broker-only nodes.

``--controllers N`` (default 1) starts N controller-only nodes, 1..N, all listed in ``controller.quorum.voters``:
with N > 1 they form a KRaft quorum and elect the active controller among themselves (KIP-595; 3 or 5 survive
the loss of 1 or 2). The brokers are nodes N+1.., and find the active controller through
``controller.quorum.bootstrap.servers``, which lists every controller. With ``--combined`` the controllers are
combined nodes (``process.roles=broker,controller``, Kafka's combined mode): each serves clients too, and
``--brokers`` may be 0.

``up`` writes one properties file per node under ``--dir``, starts each node as a ``ksteward serve``
subprocess, waits for every ready line, prints the nodes and the bootstrap strings, and supervises them until
SIGINT or SIGTERM. ``<dir>/cluster.json`` records the supervisor's pid and each node's pid, ports and start
count; ``restart`` and ``status`` read it from another terminal.

Restarting a node: ``restart N`` sends SIGTERM to node N (a broker does its controlled shutdown), and the
supervisor starts again any node whose process ended while it is not stopping. So a node that crashes is also
brought back. The cluster id is generated once and kept in ``<dir>/cluster.id``: every node is formatted with
it (a broker's first start needs it, docs/cluster.md), and a second ``up`` on the same dir reuses the data.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HOST = "127.0.0.1"
READY_LINE = "is serving on"
STATE_FILE = "cluster.json"
COMBINED = "broker,controller"
VOTER_ROLES = ("controller", COMBINED)  # the roles listed in controller.quorum.voters
POLL_INTERVAL = 0.1  # how often the supervisor looks at its children (it reacts to exits, never waits on time)

EXAMPLES = """\
examples:
  ksteward cluster up                       # controller on 9095, brokers 2-4 on 9092-9094, data in ./cluster-data
  ksteward cluster up --brokers 2 --base-port 19092 --dir /tmp/kc
  ksteward cluster up --controllers 3 --brokers 3   # a quorum of 3 voters (1-3) on 9095-9097, brokers 4-6
  ksteward cluster up --controllers 3 --combined --brokers 0   # 3 combined nodes: clients on 9092-9094
  ksteward cluster status                   # from another terminal: each node, alive or dead
  ksteward cluster restart 3                # SIGTERM broker 3; `up` starts it again; waits until it serves
Ctrl-C (or SIGTERM) on `up` stops the brokers (controlled shutdown), then the controllers.
"""


@dataclass
class Node:
    """One node of the local cluster and, while ``up`` runs, its process."""

    node_id: int
    role: str  # "controller", "broker" or COMBINED
    port: int  # the client listener's (a controller-only node's: its controller listener's)
    directory: Path
    controller_port: int | None = None  # a combined node's controller listener
    proc: subprocess.Popen[bytes] | None = None
    starts: int = 0
    ready: bool = False
    log_offset: int = 0  # where in server.log the current start began

    @property
    def name(self) -> str:
        return f"{self.role}-{self.node_id}"

    @property
    def address(self) -> str:
        return f"{HOST}:{self.port}"

    @property
    def is_voter(self) -> bool:
        return self.role in VOTER_ROLES

    @property
    def serves_clients(self) -> bool:
        return self.role in ("broker", COMBINED)

    @property
    def controller_address(self) -> str:
        """Where the other nodes reach this voter: its controller listener."""
        return f"{HOST}:{self.port if self.controller_port is None else self.controller_port}"

    @property
    def metadata_log_dir(self) -> Path:
        return (self.directory / "data").resolve()

    @property
    def config_path(self) -> Path:
        return self.directory / "server.properties"

    @property
    def log_path(self) -> Path:
        return self.directory / "server.log"

    @property
    def command(self) -> list[str]:
        return [sys.executable, "-m", "ksteward.cli.main", "serve", "--config", str(self.config_path)]


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "cluster",
        help="run a local cluster: controllers and brokers on loopback",
        description="A local cluster of controller-only nodes (1..N, one KRaft quorum; combined "
        "broker,controller nodes with --combined) and broker-only nodes (N+1, N+2, ...).",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    actions = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    up = actions.add_parser(
        "up", help="start the cluster and supervise it until Ctrl-C", epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )  # fmt: skip
    voters = "controller-only nodes, all voters of the quorum (default 1; 3 or 5 to survive failures)"
    up.add_argument("--controllers", type=int, default=1, help=voters)
    up.add_argument("--combined", action="store_true",
                    help="the controllers are combined nodes (process.roles=broker,controller) that serve clients "
                         "too, on the first client ports")  # fmt: skip
    up.add_argument("--brokers", type=int, default=3, help="how many broker-only nodes (default 3; 0 with --combined)")
    up.add_argument(
        "--base-port",
        type=int,
        default=9092,
        help="the nodes that serve clients listen on BASE, BASE+1, ...; the controller listeners follow (default 9092)",
    )
    up.add_argument("--start-timeout", type=float, default=60.0, help="seconds to wait for each ready line")
    _dir_argument(up)
    up.set_defaults(func=run_up)
    restart = actions.add_parser(
        "restart", help="stop one node of a running `up` and wait until it serves again", epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )  # fmt: skip
    restart.add_argument("node_id", type=int, metavar="NODE_ID")
    restart.add_argument("--timeout", type=float, default=60.0, help="seconds to wait for the node to serve again")
    _dir_argument(restart)
    restart.set_defaults(func=run_restart)
    status = actions.add_parser("status", help="print each node of a running `up`, alive or dead")
    _dir_argument(status)
    status.set_defaults(func=run_status)


def _dir_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument("--dir", default="./cluster-data", help="where the nodes' data and logs live (./cluster-data)")


# --- layout: ports, properties files, the cluster id --------------------------------------------------------


def plan_nodes(
    directory: Path, brokers: int, base_port: int, controllers: int = 1, *, combined: bool = False
) -> list[Node]:
    """Nodes 1..controllers are the controllers, on base_port+brokers, ...; brokers are the next nodes, on
    base_port, base_port+1, ... (one controller: node 1, brokers 2..brokers+1, as before there were several).
    ``combined``: the controllers serve clients on base_port, ...; the brokers on the next ports, and the
    controllers' controller listeners after those."""
    if combined:
        clients = controllers + brokers
        nodes = [Node(1 + i, COMBINED, base_port + i, directory / f"combined-{1 + i}", base_port + clients + i)
                 for i in range(controllers)]  # fmt: skip
        first_broker_port = base_port + controllers
    else:
        nodes = [Node(1 + i, "controller", base_port + brokers + i, directory / f"controller-{1 + i}")
                 for i in range(controllers)]  # fmt: skip
        first_broker_port = base_port
    for i in range(brokers):
        node_id = controllers + 1 + i
        nodes.append(Node(node_id, "broker", first_broker_port + i, directory / f"broker-{node_id}"))
    return nodes


def cluster_id_for(directory: Path) -> str:
    """The cluster id kept in ``<dir>/cluster.id``, generated on the first ``up``."""
    from ksteward.metadata.meta_properties import random_uuid_text

    path = directory / "cluster.id"
    if path.exists():
        return path.read_text(encoding="utf-8").strip()
    cluster_id = random_uuid_text()
    path.write_text(cluster_id + "\n", encoding="utf-8")
    return cluster_id


def node_properties(node: Node, controllers: list[Node], cluster_id: str) -> dict[str, str]:
    """Kafka's keys for a controller-only, a broker-only or a combined node (docs/cluster.md, "Configuration"):
    every controller is a voter; brokers discover the active one among them all."""
    props = {
        "process.roles": node.role,
        "node.id": str(node.node_id),
        "cluster.id": cluster_id,
        "controller.listener.names": "CONTROLLER",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
        "metadata.log.dir": str(node.metadata_log_dir),
    }
    voters = ",".join(f"{c.node_id}@{c.controller_address}" for c in controllers)
    if node.role == COMBINED:
        props |= {
            "listeners": f"PLAINTEXT://{node.address},CONTROLLER://{node.controller_address}",
            "advertised.listeners": f"PLAINTEXT://{node.address}",
            "inter.broker.listener.name": "PLAINTEXT",
            "controller.quorum.voters": voters,
        }
    elif node.role == "controller":
        props |= {"listeners": f"CONTROLLER://{node.address}", "controller.quorum.voters": voters}
    else:
        props |= {
            "listeners": f"PLAINTEXT://{node.address}",
            "advertised.listeners": f"PLAINTEXT://{node.address}",
            "inter.broker.listener.name": "PLAINTEXT",
            "controller.quorum.bootstrap.servers": ",".join(c.controller_address for c in controllers),
        }
        if len(controllers) > 1:  # a static quorum: brokers map the leader's id to its address (kraft.version 0)
            props["controller.quorum.voters"] = voters
    return props


def write_properties(node: Node, props: dict[str, str]) -> None:
    node.directory.mkdir(parents=True, exist_ok=True)
    lines = ["# written by `ksteward cluster up`; rewritten at every start of the cluster"]
    lines += [f"{key}={value}" for key, value in props.items()]
    node.config_path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def ports_in_use(nodes: list[Node]) -> list[int]:
    taken = []
    for port in [n.port for n in nodes] + [n.controller_port for n in nodes if n.controller_port is not None]:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            try:
                s.bind((HOST, port))
            except OSError:
                taken.append(port)
    return taken


# --- the state file other terminals read ---------------------------------------------------------------------


def write_state(directory: Path, nodes: list[Node], cluster_id: str) -> None:
    state = {
        "pid": os.getpid(),
        "cluster_id": cluster_id,
        "nodes": [
            {
                "node_id": n.node_id,
                "role": n.role,
                "address": n.address,
                "pid": n.proc.pid if n.proc is not None else None,
                "starts": n.starts,
                "ready": n.ready,
                "log": str(n.log_path),
                "metadata_log_dir": str(n.metadata_log_dir),
                "command": n.command,
            }
            for n in nodes
        ],
    }
    tmp = directory / (STATE_FILE + ".tmp")
    tmp.write_text(json.dumps(state, indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, directory / STATE_FILE)  # readers see the old state or the new one, never half of it


def read_state(directory: Path) -> dict[str, Any] | None:
    try:
        state: dict[str, Any] = json.loads((directory / STATE_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return state


def pid_alive(pid: int | None) -> bool:
    if not pid:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


# --- up: start, supervise, stop ------------------------------------------------------------------------------


class Supervisor:
    """Starts the nodes, restarts any that ends while not stopping, and stops them in order on a signal."""

    def __init__(self, directory: Path, nodes: list[Node], cluster_id: str, start_timeout: float) -> None:
        self.directory = directory
        self.nodes = nodes
        self.cluster_id = cluster_id
        self.start_timeout = start_timeout
        self.stopping = False

    def request_stop(self, signum: int, frame: object) -> None:
        self.stopping = True

    def spawn(self, node: Node, reason: str) -> None:
        with node.log_path.open("ab") as log:
            log.write(f"--- ksteward cluster: {reason} node {node.node_id} ({node.role}) ---\n".encode())
            node.log_offset = log.tell()
            # A process group of its own: Ctrl-C in the terminal reaches only `up`, which stops the nodes in order.
            node.proc = subprocess.Popen(
                node.command, stdout=log, stderr=log, stdin=subprocess.DEVNULL, start_new_session=True,
                env=dict(os.environ, PYTHONUNBUFFERED="1"),
            )  # fmt: skip
        node.starts += 1
        node.ready = False

    def ready_line_seen(self, node: Node) -> bool:
        with node.log_path.open("rb") as log:
            log.seek(node.log_offset)
            return READY_LINE.encode() in log.read()

    def wait_ready(self, node: Node) -> bool:
        """True once the node printed its ready line; False (after printing its log tail) if it exited, timed
        out, or a stop was requested meanwhile."""
        deadline = time.monotonic() + self.start_timeout
        assert node.proc is not None
        while not self.stopping:
            if self.ready_line_seen(node):
                node.ready = True
                write_state(self.directory, self.nodes, self.cluster_id)
                return True
            if node.proc.poll() is not None:
                print(f"ksteward cluster: {node.name} exited with code {node.proc.returncode}:", file=sys.stderr)
                print(self.log_tail(node), file=sys.stderr)
                return False
            if time.monotonic() >= deadline:
                print(f"ksteward cluster: {node.name} did not serve within {self.start_timeout:.0f}s:", file=sys.stderr)
                print(self.log_tail(node), file=sys.stderr)
                return False
            time.sleep(POLL_INTERVAL)
        return False

    def log_tail(self, node: Node, lines: int = 30) -> str:
        text = node.log_path.read_text(encoding="utf-8", errors="replace")
        return "\n".join("    " + line for line in text.splitlines()[-lines:])

    def start_all(self) -> bool:
        controllers = [n for n in self.nodes if n.is_voter]
        brokers = [n for n in self.nodes if n.role == "broker"]
        for controller in controllers:  # together: the voters of a quorum elect a leader once a majority is up
            self.spawn(controller, "starting")
        write_state(self.directory, self.nodes, self.cluster_id)
        if not all(self.wait_ready(controller) for controller in controllers):
            return False
        for broker in brokers:  # together: each is ready once the controller has unfenced it
            self.spawn(broker, "starting")
        write_state(self.directory, self.nodes, self.cluster_id)
        return all(self.wait_ready(broker) for broker in brokers)

    def supervise(self) -> None:
        """Until a stop is requested: a node whose process ended (``cluster restart``, or a crash) starts again."""
        while not self.stopping:
            for node in self.nodes:
                if self.stopping or node.proc is None or node.proc.poll() is None:
                    continue
                code = node.proc.returncode
                print(f"ksteward cluster: {node.name} exited with code {code}; starting it again", flush=True)
                self.spawn(node, f"restarting (previous exit code {code})")
                write_state(self.directory, self.nodes, self.cluster_id)
                if self.wait_ready(node):
                    print(f"ksteward cluster: {node.name} is serving again on {node.address}", flush=True)
            time.sleep(POLL_INTERVAL)

    def stop_all(self, timeout: float = 30.0) -> None:
        """Brokers first (SIGTERM: their controlled shutdown needs the controller), then the controllers; combined
        nodes one at a time, so that a majority of voters is up for each one's controlled shutdown."""
        brokers = [n for n in self.nodes if n.role == "broker"]
        controllers = [n for n in self.nodes if n.role == "controller"]
        combined = [[n] for n in self.nodes if n.role == COMBINED]
        for group in (brokers, *combined, controllers):
            for node in group:
                if node.proc is not None and node.proc.poll() is None:
                    node.proc.send_signal(signal.SIGTERM)
            for node in group:
                if node.proc is None:
                    continue
                try:
                    node.proc.wait(timeout)
                except subprocess.TimeoutExpired:
                    print(f"ksteward cluster: {node.name} did not stop in {timeout:.0f}s; killing it", file=sys.stderr)
                    node.proc.kill()
                    node.proc.wait()
                node.ready = False
        write_state(self.directory, self.nodes, self.cluster_id)


def run_up(args: argparse.Namespace) -> int:
    if args.controllers < 1 or args.brokers < (0 if args.combined else 1):
        print("ksteward cluster: --controllers must be at least 1, and --brokers too unless --combined",
              file=sys.stderr)  # fmt: skip
        return 2
    directory = Path(args.dir).resolve()
    directory.mkdir(parents=True, exist_ok=True)
    state = read_state(directory)
    if state is not None and state.get("pid") != os.getpid() and pid_alive(state.get("pid")):
        print(f"ksteward cluster: a cluster is already up on {directory} (pid {state['pid']})", file=sys.stderr)
        return 1
    nodes = plan_nodes(directory, args.brokers, args.base_port, args.controllers, combined=args.combined)
    taken = ports_in_use(nodes)
    if taken:
        print(f"ksteward cluster: ports already in use on {HOST}: {taken}; choose another --base-port", file=sys.stderr)
        return 1
    cluster_id = cluster_id_for(directory)
    for node in nodes:
        write_properties(node, node_properties(node, [n for n in nodes if n.is_voter], cluster_id))
    supervisor = Supervisor(directory, nodes, cluster_id, args.start_timeout)
    previous = {sig: signal.signal(sig, supervisor.request_stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        if not supervisor.start_all():
            supervisor.stopping = True
            supervisor.stop_all()
            return 0 if _stopped_by_signal(supervisor) else 1
        print_table(cluster_id, nodes, directory)
        supervisor.supervise()
        print("ksteward cluster: stopping the brokers, then the controllers", flush=True)
        supervisor.stop_all()
        print("ksteward cluster: stopped", flush=True)
        return 0
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _stopped_by_signal(supervisor: Supervisor) -> bool:
    return all(n.proc is None or n.proc.returncode == 0 for n in supervisor.nodes) and supervisor.stopping


def print_table(cluster_id: str, nodes: list[Node], directory: Path) -> None:
    print(f"ksteward cluster {cluster_id}: data and logs under {directory}")
    print(f"  {'node':>4}  {'role':<17}  {'address':<21}  log")
    for n in nodes:
        print(f"  {n.node_id:>4}  {n.role:<17}  {n.address:<21}  {n.log_path}")
    brokers = ",".join(n.address for n in nodes if n.serves_clients)
    controllers = ",".join(n.controller_address for n in nodes if n.is_voter)
    print(f"bootstrap.servers={brokers}")
    print(f"bootstrap.controllers={controllers}")
    print("restart a node with `ksteward cluster restart NODE_ID`; stop the cluster with Ctrl-C", flush=True)


# --- restart and status, from another terminal -----------------------------------------------------------------


def _running_state(directory: Path) -> dict[str, Any] | None:
    state = read_state(directory)
    if state is None or not pid_alive(state.get("pid")):
        print(f"ksteward cluster: no cluster is up on {directory}", file=sys.stderr)
        return None
    return state


def _node_entry(state: dict[str, Any], node_id: int) -> dict[str, Any] | None:
    for entry in state["nodes"]:
        if entry["node_id"] == node_id:
            return dict(entry)
    return None


def run_restart(args: argparse.Namespace) -> int:
    directory = Path(args.dir).resolve()
    state = _running_state(directory)
    if state is None:
        return 1
    entry = _node_entry(state, args.node_id)
    if entry is None:
        print(f"ksteward cluster: no node {args.node_id} in {directory / STATE_FILE}", file=sys.stderr)
        return 2
    starts = entry["starts"]
    if entry["pid"] and pid_alive(entry["pid"]):
        os.kill(entry["pid"], signal.SIGTERM)
    deadline = time.monotonic() + args.timeout
    while time.monotonic() < deadline:
        current = read_state(directory)
        if current is None or not pid_alive(current.get("pid")):
            print("ksteward cluster: `up` stopped while the node was restarting", file=sys.stderr)
            return 1
        now = _node_entry(current, args.node_id)
        if now is not None and now["starts"] > starts and now["ready"]:
            print(f"node {args.node_id} ({now['role']}) is serving again on {now['address']} (pid {now['pid']})")
            return 0
        time.sleep(POLL_INTERVAL)
    print(f"ksteward cluster: node {args.node_id} did not serve again within {args.timeout:.0f}s", file=sys.stderr)
    return 1


def run_status(args: argparse.Namespace) -> int:
    directory = Path(args.dir).resolve()
    state = read_state(directory)
    if state is None:
        print(f"ksteward cluster: no {STATE_FILE} in {directory}", file=sys.stderr)
        return 1
    up = pid_alive(state.get("pid"))
    print(f"ksteward cluster {state['cluster_id']}: supervisor pid {state['pid']} {'up' if up else 'not running'}")
    print(f"  {'node':>4}  {'role':<17}  {'address':<21}  {'pid':>7}  state")
    several_voters = sum(n["role"] in VOTER_ROLES for n in state["nodes"]) > 1
    for n in state["nodes"]:
        alive = pid_alive(n["pid"])
        what = ("serving" if n["ready"] else "starting") if alive else "dead"
        if alive and several_voters and n["role"] in VOTER_ROLES:
            what += f" ({quorum_role(n)})"
        print(f"  {n['node_id']:>4}  {n['role']:<17}  {n['address']:<21}  {n['pid'] or '-':>7}  {what}")
    return 0 if up else 1


def quorum_role(entry: dict[str, Any]) -> str:
    """A voter's place in the quorum as its ``quorum-state`` file last recorded it (docs/raft.md): written before
    each election state takes effect, so a leader or a follower is named as soon as it is one."""
    from ksteward.metadata.log import PARTITION_DIR_NAME
    from ksteward.raft.quorum_state import QUORUM_STATE_FILE, QuorumStateError, read_quorum_state

    directory = entry.get("metadata_log_dir")
    if directory is None:
        return "quorum state unknown"
    try:
        stored = read_quorum_state(Path(directory) / PARTITION_DIR_NAME / QUORUM_STATE_FILE)
    except QuorumStateError:
        return "quorum state unreadable"
    if stored is None:
        return "no quorum state yet"
    if stored.leader_id == entry["node_id"]:
        return f"leader in epoch {stored.leader_epoch}"
    if stored.leader_id >= 0:
        return f"follows {stored.leader_id} in epoch {stored.leader_epoch}"
    return f"no leader in epoch {stored.leader_epoch}"
