"""What the operator commands (``topics``, ``configs``, ``acls``) share, so each feels like the Kafka tool it
stands in for: the connection flags, Kafka client properties turned into confluent-kafka's, the output mode,
exit codes, and terminal manners.

- **Connection.** ``--bootstrap-server`` (or ``--bootstrap-controller``, KIP-919, where Kafka's tool has it)
  and ``--command-config FILE``: Kafka's Java client properties (``security.protocol``, ``sasl.mechanism``,
  ``sasl.jaas.config``, ``ssl.truststore.location`` ...). :func:`confluent_config` maps them to librdkafka's
  names; a property that cannot be honoured (a JKS trust store) is a :class:`UsageError`, never ignored.
- **Exit codes.** 0 success, 1 a server-side or connection error (:class:`CommandError`, or a
  ``KafkaException``), 2 bad usage (:class:`UsageError`, and argparse's own). Each error is one line on stderr
  naming what was wrong, never a traceback.
- **Output.** ``--output text`` (the default, the Kafka tool's format) or ``--output json``.
- **Terminal manners.** Progress only when stdout is a terminal; :func:`confirm` asks only on a terminal;
  a closed pipe (``| head``) ends the command quietly (``ksteward.cli.main``).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from kio.schema.errors import ErrorCode

from ksteward.configs.properties import load_properties
from ksteward.protocol.apis import ApiKey

EXIT_OK, EXIT_ERROR, EXIT_USAGE = 0, 1, 2

T = TypeVar("T")


class UsageError(Exception):
    """Bad flags or a bad ``--command-config``: exit code 2."""


class CommandError(Exception):
    """The server refused, or could not be reached: exit code 1."""


# --- connection -----------------------------------------------------------------------------------------


def add_connection_flags(parser: argparse.ArgumentParser, *, controller: bool) -> None:
    """``--bootstrap-server`` / ``--bootstrap-controller`` (only where Kafka's tool has it), ``--command-config``
    and ``--output``."""
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--bootstrap-server", metavar="HOST:PORT[,...]", help="brokers to connect to")
    if controller:
        where.add_argument("--bootstrap-controller", metavar="HOST:PORT[,...]",
                           help="controllers to connect to directly (KIP-919)")  # fmt: skip
    parser.add_argument("--command-config", metavar="FILE",
                        help="Kafka client properties: security.protocol, sasl.mechanism, sasl.jaas.config, "
                             "ssl.truststore.location (PEM) ...")  # fmt: skip
    parser.add_argument("--output", choices=("text", "json"), default="text",
                        help="text (the Kafka tool's format, the default) or json")  # fmt: skip


@dataclass(frozen=True)
class Connection:
    """Where to connect and how: the flags, with the ``--command-config`` properties read."""

    bootstrap: str
    to_controller: bool  # --bootstrap-controller
    properties: Mapping[str, str] = field(default_factory=dict)


def connection(args: argparse.Namespace) -> Connection:
    path = getattr(args, "command_config", None)
    try:
        properties = load_properties(path) if path else {}
    except OSError as exc:
        raise UsageError(f"cannot read --command-config {path}: {exc.strerror or exc}") from None
    controller = getattr(args, "bootstrap_controller", None)
    return Connection(controller or args.bootstrap_server, controller is not None, properties)


_PASSED_THROUGH = ("security.protocol", "sasl.mechanism", "client.id")


def confluent_config(conn: Connection, **extra: Any) -> dict[str, Any]:
    """librdkafka's configuration for ``conn``'s Kafka client properties. Raises :class:`UsageError` for a
    property it cannot honour. (librdkafka has no ``bootstrap.controllers``: a caller with
    ``conn.to_controller`` must use ksteward's own client.)"""
    props = conn.properties
    config: dict[str, Any] = {"bootstrap.servers": conn.bootstrap, **extra}
    for key in _PASSED_THROUGH:
        if props.get(key):
            config[key] = props[key].strip()
    if props.get("sasl.jaas.config"):
        config.update(_sasl_login(props["sasl.jaas.config"]))
    config.update(_ssl_settings(props))
    if props.get("request.timeout.ms"):
        config["socket.timeout.ms"] = props["request.timeout.ms"].strip()
    return config


def _sasl_login(jaas: str) -> dict[str, str]:
    from ksteward.protocol.sasl import parse_jaas_config

    try:
        entries = parse_jaas_config(jaas)
    except ValueError as exc:
        raise UsageError(f"sasl.jaas.config in --command-config: {exc}") from None
    options = entries[0].options if entries else {}
    if "username" not in options or "password" not in options:
        raise UsageError("sasl.jaas.config in --command-config needs username and password options")
    return {"sasl.username": options["username"], "sasl.password": options["password"]}


def _ssl_settings(props: Mapping[str, str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for kind in ("truststore", "keystore"):
        location = props.get(f"ssl.{kind}.location", "").strip()
        store_type = props.get(f"ssl.{kind}.type", "PEM" if location.endswith((".pem", ".crt")) else "JKS")
        if location and store_type.strip().upper() != "PEM":
            raise UsageError(f"ssl.{kind}.location {location}: only PEM files are supported (ssl.{kind}.type=PEM)")
    if props.get("ssl.truststore.location"):
        out["ssl.ca.location"] = props["ssl.truststore.location"].strip()
    if props.get("ssl.keystore.location"):  # a PEM key store holds the certificate chain and the private key
        out["ssl.certificate.location"] = out["ssl.key.location"] = props["ssl.keystore.location"].strip()
    if props.get("ssl.key.password"):
        out["ssl.key.password"] = props["ssl.key.password"]
    if "ssl.endpoint.identification.algorithm" in props:
        algorithm = props["ssl.endpoint.identification.algorithm"].strip().lower()
        out["ssl.endpoint.identification.algorithm"] = algorithm or "none"
    return out


#: How often the CLI's librdkafka client asks for metadata again (librdkafka's default: 5 minutes). librdkafka sends
#: each admin request to the broker that Metadata named controller, a random unfenced one in KRaft (Kafka's
#: ``getRandomAliveBrokerId``). After a combined node dies, it stays unfenced for its session, and a command that
#: drew it would wait for it until its timeout. A refresh every second draws again (docs/cluster.md).
METADATA_REFRESH_MS = 1000


def confluent_admin(conn: Connection, **extra: Any) -> Any:
    """A confluent-kafka AdminClient for ``conn``. librdkafka's own log lines (a connection retried every 50 ms,
    each a line on stderr) go to a silent logger: the command reports the failure once, in one line. Its metadata
    is refreshed every second (``METADATA_REFRESH_MS``)."""
    if conn.to_controller:
        raise UsageError("--bootstrap-controller is not supported by this operation")
    from confluent_kafka.admin import AdminClient

    extra.setdefault("logger", _silent_librdkafka_logger())
    extra.setdefault("topic.metadata.refresh.interval.ms", METADATA_REFRESH_MS)
    return AdminClient(confluent_config(conn, **extra))


def _silent_librdkafka_logger() -> Any:
    import logging

    logger = logging.getLogger("ksteward.cli.librdkafka")
    if not logger.handlers:
        logger.addHandler(logging.NullHandler())
        logger.propagate = False
    return logger


def caller_username(conn: Connection) -> str | None:
    """The user ``--command-config`` logs in as (``username`` in ``sasl.jaas.config``), or None."""
    jaas = conn.properties.get("sasl.jaas.config")
    return _sasl_login(jaas)["sasl.username"] if jaas else None


def ksteward_admin(conn: Connection, *, timeout: float = 30.0) -> Any:
    """ksteward's own wire client (:mod:`ksteward.cli.admin_client`) for what confluent-kafka cannot send:
    DeleteTopics v7, ``--bootstrap-controller``, client quotas, BROKER_LOGGER configs. It speaks PLAINTEXT or
    SASL_PLAINTEXT with PLAIN only; anything else is a :class:`UsageError` saying so."""
    from ksteward.cli.admin_client import AdminClient, AdminError

    protocol = conn.properties.get("security.protocol", "PLAINTEXT").strip().upper()
    login: tuple[str, str] | None = None
    if protocol == "SASL_PLAINTEXT":
        mechanism = conn.properties.get("sasl.mechanism", "GSSAPI").strip().upper()
        if mechanism != "PLAIN":
            raise UsageError(f"sasl.mechanism={mechanism}: this operation logs in with PLAIN only")
        options = _sasl_login(conn.properties.get("sasl.jaas.config", ""))
        login = (options["sasl.username"], options["sasl.password"])
    elif protocol != "PLAINTEXT":
        raise UsageError(f"security.protocol={protocol}: this operation supports PLAINTEXT and SASL_PLAINTEXT only")
    failures = []
    for address in [a.strip() for a in conn.bootstrap.split(",") if a.strip()]:  # the first that answers
        try:
            return AdminClient(address, sasl_plain=login, timeout=timeout)
        except AdminError as exc:  # the server answered: a refused login is final
            raise CommandError(f"{address}: {exc}") from None
        except (OSError, ValueError) as exc:
            failures.append(f"{address}: {getattr(exc, 'strerror', None) or exc}")
    raise CommandError(f"cannot connect to {'; '.join(failures) or 'no address given'}")


def quorum_addresses(conn: Connection) -> list[str]:
    """Where a request for the KRaft leader goes, one address after the other. With ``--bootstrap-controller``:
    the active controller first, as the first listed controller that answers DescribeCluster with EndpointType
    CONTROLLER names it (KIP-919; Kafka's admin client sends leader-only requests there), then each controller
    listed (only the leader answers, the others say NOT_LEADER_OR_FOLLOWER). Otherwise the brokers as one
    bootstrap list (a broker forwards to the active controller)."""
    if not conn.to_controller:
        return [conn.bootstrap]
    listed = [a.strip() for a in conn.bootstrap.split(",") if a.strip()]
    active = _active_controller(conn, listed)
    return list(dict.fromkeys([active, *listed] if active else listed))


def _active_controller(conn: Connection, listed: list[str]) -> str | None:
    """``host:port`` of the active controller, as the first of ``listed`` that answers DescribeCluster says;
    None when none answers or none knows it."""
    from ksteward.cli.admin_client import AdminError

    for address in listed:
        try:
            with ksteward_admin(Connection(address, True, conn.properties), timeout=10.0) as admin:
                body = describe_cluster(admin, to_controller=True)
        except (CommandError, AdminError, OSError):
            continue
        if body.error_code != ErrorCode.none:
            continue
        active = described_nodes(body).get(int(body.controller_id))
        return None if active is None else f"{active[0]}:{active[1]}"
    return None


def describe_cluster(admin: Any, *, to_controller: bool) -> Any:
    """The DescribeCluster answer of ksteward's client ``admin``, asked with the endpoint type of the listener it
    is connected to (KIP-919): a controller lists the controllers and answers only CONTROLLER (2), a broker lists
    the brokers and answers only BROKER (1)."""
    return admin.request(ApiKey.DESCRIBE_CLUSTER, {"include_cluster_authorized_operations": False,
                                                   "endpoint_type": 2 if to_controller else 1,
                                                   "include_fenced_brokers": False}, max_version=2)  # fmt: skip


def described_nodes(body: Any) -> dict[int, tuple[str, int]]:
    """Each node a DescribeCluster answer lists: its id, host and port."""
    return {int(b.broker_id): (str(b.host), int(b.port)) for b in body.brokers}


def no_leader_answered(refused: Iterable[str]) -> CommandError:
    return CommandError(f"no controller that leads the quorum answered ({', '.join(refused)}: NOT_LEADER_OR_FOLLOWER)")


def raise_for_error(code: int, message: str | None) -> None:
    """Unless ``code`` is NONE, a :class:`CommandError` ``NAME: message``, with Kafka's error name as its tools
    print it."""
    if code != ErrorCode.none:
        name = ErrorCode(code).name.upper() if code in ErrorCode._value2member_map_ else str(code)
        raise CommandError(f"{name}: {message or 'no message'}")


# --- output ---------------------------------------------------------------------------------------------


def print_json(document: Any) -> None:
    """One JSON document on stdout, keys in the order given (the documented schema's order)."""
    json.dump(document, sys.stdout, indent=2, default=str)
    sys.stdout.write("\n")


def progress(items: Iterable[T], total: int, label: str) -> Iterator[T]:
    """``items``, with a counter on stderr while stdout is a terminal; nothing when the output is piped."""
    show = sys.stdout.isatty() and sys.stderr.isatty() and total > 1
    for done, item in enumerate(items, 1):
        if show:
            sys.stderr.write(f"\r{label}: {done}/{total}")
            sys.stderr.flush()
        yield item
    if show:
        sys.stderr.write("\n")


@contextlib.contextmanager
def status(label: str) -> Iterator[None]:
    """A long step's ``label`` on stderr while stdout is a terminal, then how long it took; nothing when the
    output is piped."""
    show = sys.stdout.isatty() and sys.stderr.isatty()
    started = time.monotonic()
    if show:
        sys.stderr.write(f"{label}...")
        sys.stderr.flush()
    try:
        yield
    finally:
        if show:
            sys.stderr.write(f" {time.monotonic() - started:.1f} s\n")


def confirm(question: str, *, force: bool) -> bool:
    """Ask ``question`` on a terminal (y/N); True without asking under ``--force`` or when stdin is not one
    (a script), as Kafka's tools proceed when they are scripted."""
    if force or not sys.stdin.isatty():
        return True
    sys.stderr.write(f"{question} (y/N) ")  # stderr: stdout carries only the result (text or JSON)
    sys.stderr.flush()
    answer = sys.stdin.readline()  # "" at end of input: no
    return answer.strip().lower() in ("y", "yes")


# --- running --------------------------------------------------------------------------------------------


def run_command(name: str, body: Callable[[], int]) -> int:
    """Run one command's ``body`` and turn its failures into a line on stderr and Kafka-tool exit codes."""
    from confluent_kafka import KafkaException

    from ksteward.cli.admin_client import AdminError

    try:
        return body()
    except UsageError as exc:
        print(f"ksteward {name}: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except CommandError as exc:
        print(f"ksteward {name}: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except KafkaException as exc:
        print(f"ksteward {name}: {describe_kafka_error(exc)}", file=sys.stderr)
        return EXIT_ERROR
    except BrokenPipeError:
        raise  # the reader went away: ksteward.cli.main ends quietly
    except (AdminError, OSError) as exc:  # ksteward's own client: Kafka's error name and message, or the socket's
        print(f"ksteward {name}: {exc}", file=sys.stderr)
        return EXIT_ERROR


def describe_kafka_error(exc: Any) -> str:
    """A ``KafkaException``'s error as ``NAME: message`` (Kafka's error name, as its tools print it)."""
    error = exc.args[0] if exc.args else None
    if error is None or not hasattr(error, "name"):
        return str(exc)
    return f"{error.name()}: {error.str()}"
