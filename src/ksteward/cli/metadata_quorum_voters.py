"""``ksteward metadata quorum add-controller`` and ``remove-controller``: ``kafka-metadata-quorum.sh``'s voter
changes (KIP-853; Kafka's ``MetadataQuorumCommand.handleAddController`` / ``handleRemoveController``).

``add-controller`` reads the new controller's server properties from ``--command-config`` (the same file serves
as the client properties, as in Kafka): its ``node.id``, the directory id in ``meta.properties`` of its metadata
log directory, and its controller listeners' advertised endpoints; then it sends AddRaftVoter. ``remove-controller``
sends RemoveRaftVoter for ``--controller-id`` and ``--controller-directory-id``. Through a broker the request is
forwarded to the active controller; with ``--bootstrap-controller`` the first listed controller that leads
answers. ksteward's quorum is static (``controller.quorum.voters``, ``kraft.version`` 0), so the controllers
refuse both changes with Kafka's UNSUPPORTED_VERSION (docs/raft.md, "Voter changes"); the commands print that
error and exit 1.
"""

from __future__ import annotations

import argparse
import sys
import uuid
from typing import IO, Any

from kio.schema.errors import ErrorCode

from ksteward.cli.admin_common import (
    CommandError,
    Connection,
    UsageError,
    connection,
    ksteward_admin,
    no_leader_answered,
    quorum_addresses,
    raise_for_error,
    run_command,
)
from ksteward.configs.server_config import ConfigError, ServerConfig, parse_server_config
from ksteward.metadata.meta_properties import FILE_NAME, read_meta_properties
from ksteward.metadata.records.kafka_json import kafka_uuid, parse_kafka_uuid
from ksteward.protocol.apis import ApiKey

__all__ = ["add_voter_commands", "controller_endpoints"]

EXAMPLES = """\
examples:
  ksteward metadata quorum --bootstrap-controller localhost:9093 --command-config controller-4.properties \\
      add-controller
  ksteward metadata quorum --bootstrap-server localhost:9092 remove-controller \\
      --controller-id 3 --controller-directory-id 6Bm2yQpKQs2vJv0TqRrW9w
  ksteward metadata quorum --bootstrap-server localhost:9092 remove-controller -i 3 -d 6Bm2yQpKQs2vJv0TqRrW9w \\
      --dry-run
"""

#: Kafka's admin client sends its default API timeout as AddRaftVoter's TimeoutMs (``default.api.timeout.ms``).
_TIMEOUT_MS = 60_000


def add_voter_commands(actions: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``add-controller`` and ``remove-controller`` on ``metadata quorum``'s subcommands."""

    def command(name: str, help_: str, description: str) -> argparse.ArgumentParser:
        parser = actions.add_parser(name, help=help_, epilog=EXAMPLES, description=description,
                                    formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
        parser.add_argument("--dry-run", action="store_true", help="print what would be sent, send nothing")
        return parser

    refused = "A static quorum (controller.quorum.voters) refuses it with UNSUPPORTED_VERSION, as Kafka's does."
    what = "Add the controller whose server properties --command-config names to the voters."
    add = command("add-controller", "add a controller to the KRaft quorum (AddRaftVoter)", f"{what}\n{refused}")
    add.set_defaults(func=run_add_controller)
    remove = command("remove-controller", "remove a controller from the KRaft quorum (RemoveRaftVoter)",
                     f"Remove a voter from the quorum.\n{refused}")  # fmt: skip
    remove.add_argument("-i", "--controller-id", type=int, required=True, help="the id of the controller to remove")
    remove.add_argument("-d", "--controller-directory-id", required=True,
                        help="its metadata directory id (directory.id in its meta.properties)")  # fmt: skip
    remove.set_defaults(func=run_remove_controller)


def run_add_controller(args: argparse.Namespace, out: IO[str] | None = None) -> int:
    return run_command("metadata quorum add-controller", lambda: _add_controller(args, out or sys.stdout))


def run_remove_controller(args: argparse.Namespace, out: IO[str] | None = None) -> int:
    return run_command("metadata quorum remove-controller", lambda: _remove_controller(args, out or sys.stdout))


def _add_controller(args: argparse.Namespace, out: IO[str]) -> int:
    conn = connection(args)
    if not conn.properties:
        raise UsageError("add-controller needs --command-config: the server properties of the controller to add")
    config = _controller_config(conn.properties)
    directory_id = _directory_id(config)
    endpoints = controller_endpoints(config)
    shown = ", ".join(f"{name}://{host}:{port}" for name, host, port in endpoints)
    what = f"controller {config.node_id} with directory id {kafka_uuid(directory_id)} and endpoints: {shown}"
    if args.dry_run:
        out.write(f"DRY RUN of adding {what}\n")
        return 0
    values = {"cluster_id": None, "timeout": _TIMEOUT_MS, "voter_id": config.node_id,
              "voter_directory_id": directory_id, "ack_when_committed": True,
              "listeners": [{"name": n, "host": h, "port": p} for n, h, p in endpoints]}  # fmt: skip
    _send(conn, ApiKey.ADD_RAFT_VOTER, values, max_version=1)
    out.write(f"Added {what}\n")
    return 0


def _remove_controller(args: argparse.Namespace, out: IO[str]) -> int:
    conn = connection(args)
    try:
        directory_id = parse_kafka_uuid(args.controller_directory_id)
    except ValueError:
        raise UsageError(f"--controller-directory-id {args.controller_directory_id!r} is not a Kafka uuid "
                         "(22 characters of URL-safe base64)") from None  # fmt: skip
    what = f"KRaft controller {args.controller_id} with directory id {kafka_uuid(directory_id)}"
    if args.dry_run:
        out.write(f"DRY RUN of removing {what}\n")
        return 0
    values = {"cluster_id": None, "voter_id": args.controller_id, "voter_directory_id": directory_id}
    _send(conn, ApiKey.REMOVE_RAFT_VOTER, values, max_version=0)
    out.write(f"Removed {what}\n")
    return 0


def _send(conn: Connection, api_key: int, values: dict[str, Any], *, max_version: int) -> None:
    """Send to a broker (it forwards), or to each listed controller until one that leads answers."""
    refusals = []
    for address in quorum_addresses(conn):
        with ksteward_admin(Connection(address, conn.to_controller, conn.properties)) as admin:
            body = admin.request(api_key, values, max_version=max_version)
        if conn.to_controller and body.error_code == ErrorCode.not_leader_or_follower:
            refusals.append(address)
            continue
        raise_for_error(int(body.error_code), body.error_message)
        return
    raise no_leader_answered(refusals)


def _controller_config(properties: Any) -> ServerConfig:
    if "node.id" not in properties:
        raise CommandError("node.id not found in the --command-config file: is it a controller's server properties?")
    try:
        config = parse_server_config(properties)
    except (ConfigError, ValueError) as exc:
        raise CommandError(f"the --command-config file is not a valid server configuration: {exc}") from None
    if not config.is_controller:
        raise CommandError(f"node {config.node_id} is not a controller: process.roles must include controller")
    return config


def _directory_id(config: ServerConfig) -> uuid.UUID:
    """``directory.id`` in ``meta.properties`` of the controller's metadata log directory (written at its first
    start)."""
    path = config.metadata_log_dir / FILE_NAME
    try:
        text = read_meta_properties(config.metadata_log_dir).get("directory.id", "")
    except (OSError, UnicodeDecodeError) as exc:
        reason = getattr(exc, "strerror", None) or exc
        raise CommandError(f"cannot read {path}: {reason} (start the controller once first)") from None
    try:
        return parse_kafka_uuid(text)
    except ValueError:
        raise CommandError(f"no valid directory.id in {path}") from None


def controller_endpoints(config: ServerConfig) -> list[tuple[str, str, int]]:
    """Each controller listener as (name, host, port), where other nodes reach it
    (``ServerConfig.advertised_controller_endpoint``)."""
    endpoints = [(name, *endpoint) for name in config.controller_listener_names
                 if (endpoint := config.advertised_controller_endpoint(name)) is not None]  # fmt: skip
    if not endpoints:
        raise CommandError(f"node {config.node_id} has no controller listener (controller.listener.names)")
    return endpoints
