"""The nodes of a ksteward cluster as benchmark subprocesses: a controller-only node and broker-only nodes,
configured as ``ksteward cluster up`` (``cli/cluster.node_properties``) and the integration tests'
``Cluster`` configure them, and a combined node with the same security settings to compare against.

Every node gets ``config/server.properties`` plus overrides. A controller-only node listens only on its
CONTROLLER listener and is the one voter of ``controller.quorum.voters``; a broker-only node has one PLAINTEXT
client listener and finds the controller through ``controller.quorum.bootstrap.servers``. Every node of a
cluster is formatted with the same ``cluster.id``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path

from bench._harness.server import ServerProcess
from bench._harness.wire import HOST, free_ports
from ksteward.metadata.meta_properties import random_uuid_text

# As the integration tests' CLUSTER_DEFAULTS: the StandardAuthorizer, and ANONYMOUS (the principal of
# PLAINTEXT connections: the benchmark's clients, and brokers on the PLAINTEXT controller listener) a super
# user, so every request is authorized and the authorizer is on the path as in a secured cluster.
SECURITY = {
    "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "super.users": "User:ANONYMOUS",
}
CONTROLLER_ID = 1


def new_cluster_id() -> str:
    return random_uuid_text()


def combined_node(workdir: Path, name: str, overrides: Mapping[str, str] | None = None) -> ServerProcess:
    """``process.roles=broker,controller`` (the default of ``ksteward serve``), with ``SECURITY``."""
    return ServerProcess(workdir, name, overrides={**SECURITY, **(overrides or {})})


def controller_node(
    workdir: Path,
    name: str,
    cluster_id: str,
    *,
    data_dir: Path | None = None,
    overrides: Mapping[str, str] | None = None,
    watch: tuple[str, ...] = (),
    kind: type[ServerProcess] = ServerProcess,
) -> ServerProcess:
    """A controller-only node (node 1): its ``port`` is its CONTROLLER listener, which also answers the
    readiness probe (ApiVersions). ``kind`` may be a subclass (``callgrind.CallgrindServer``)."""
    (port,) = free_ports(1)
    settings = {
        **SECURITY,
        "process.roles": "controller",
        "node.id": str(CONTROLLER_ID),
        "cluster.id": cluster_id,
        "listeners": f"CONTROLLER://{HOST}:{port}",
        "advertised.listeners": "",
        "inter.broker.listener.name": "",
        "controller.quorum.voters": f"{CONTROLLER_ID}@{HOST}:{port}",
        **(overrides or {}),
    }
    return kind(workdir, name, data_dir=data_dir, ports=(port, port), overrides=settings, watch=watch)


def broker_node(
    workdir: Path,
    name: str,
    cluster_id: str,
    controller: ServerProcess | Sequence[ServerProcess],
    node_id: int,
    *,
    data_dir: Path | None = None,
    overrides: Mapping[str, str] | None = None,
    watch: tuple[str, ...] = (),
) -> ServerProcess:
    """A broker-only node: one PLAINTEXT client listener, opened (and the ready line printed) only once the
    controller has unfenced it, which needs it caught up with the metadata log."""
    (port,) = free_ports(1)
    controllers = [controller] if isinstance(controller, ServerProcess) else list(controller)
    # A quorum's brokers also list the static voters, to reach a leader named without its endpoint.
    voters = {}
    if len(controllers) > 1:
        voters["controller.quorum.voters"] = controllers[0].extra["controller.quorum.voters"]
    settings = {
        **SECURITY,
        "process.roles": "broker",
        "node.id": str(node_id),
        "cluster.id": cluster_id,
        "listeners": f"PLAINTEXT://{HOST}:{port}",
        "advertised.listeners": f"PLAINTEXT://{HOST}:{port}",
        "controller.quorum.bootstrap.servers": ",".join(f"{HOST}:{c.port}" for c in controllers),
        **voters,
        **(overrides or {}),
    }
    return ServerProcess(workdir, name, data_dir=data_dir, ports=(port, port), overrides=settings, watch=watch)


def quorum_nodes(
    workdir: Path,
    cluster_id: str,
    count: int,
    *,
    overrides: Mapping[str, str] | None = None,
    kind: type[ServerProcess] = ServerProcess,
    metrics: bool = False,
) -> list[ServerProcess]:
    """``count`` controller-only voters (nodes 1..count, ``controller`` 1..count), each listing all of them in
    ``controller.quorum.voters`` (issue 18). Start them together: none is ready alone until a leader exists.
    With ``metrics``, each serves ``/metrics`` on a port of its own (``metrics.port`` in its ``extra``)."""
    ports = free_ports(count)
    metrics_ports = free_ports(count) if metrics else []
    voters = ",".join(f"{i + 1}@{HOST}:{port}" for i, port in enumerate(ports))
    nodes = []
    for i, port in enumerate(ports):
        settings = {
            **SECURITY,
            "process.roles": "controller",
            "node.id": str(i + 1),
            "cluster.id": cluster_id,
            "listeners": f"CONTROLLER://{HOST}:{port}",
            "advertised.listeners": "",
            "inter.broker.listener.name": "",
            "controller.quorum.voters": voters,
            **({"metrics.port": str(metrics_ports[i])} if metrics else {}),
            **(overrides or {}),
        }
        nodes.append(kind(workdir, f"controller{i + 1}", ports=(port, port), overrides=settings))
    return nodes


def quorum_state(node: ServerProcess) -> dict[str, int] | None:
    """The node's ``quorum-state`` file (leaderId, leaderEpoch, ...), or None while it has none or it is torn."""
    try:
        return json.loads((node.data_dir / "__cluster_metadata-0" / "quorum-state").read_text())
    except (OSError, ValueError):
        return None
