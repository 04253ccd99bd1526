"""``ksteward topics``: topic operations ksteward adds to Kafka's ``kafka-topics.sh``.

Today: ``--delete --topic T [--validate-only]``, where ``--validate-only`` sends DeleteTopics v7
(KIP-934): the server runs every check and the delete-topic policy and deletes nothing. Standard
operations are best done with any Kafka client or ``kafka-topics.sh``.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ksteward.cli.admin_client import AdminClient, AdminError
from ksteward.configs.properties import load_properties


def add_parser(sub: Any) -> None:
    p = sub.add_parser("topics", help="topic operations (DeleteTopics v7 validate-only)")
    p.add_argument("--bootstrap-server", required=True, help="host:port of a ksteward listener")
    p.add_argument("--command-config", help="client properties: sasl.mechanism=PLAIN and sasl.jaas.config")
    p.add_argument("--delete", action="store_true", help="delete the topics named by --topic")
    p.add_argument("--topic", action="append", default=[], help="a topic name (repeatable)")
    p.add_argument("--validate-only", action="store_true", help="check the deletion, delete nothing")
    p.set_defaults(func=run)


def _sasl_plain(path: str | None) -> tuple[str, str] | None:
    if path is None:
        return None
    from ksteward.protocol.sasl import parse_jaas_config

    props = load_properties(path)
    if props.get("sasl.mechanism", "PLAIN").upper() != "PLAIN":
        raise ValueError("ksteward topics supports sasl.mechanism=PLAIN only")
    options = parse_jaas_config(props["sasl.jaas.config"])[0].options
    return options["username"], options["password"]


def run(args: argparse.Namespace) -> int:
    if not args.delete or not args.topic:
        print("ksteward topics: give --delete and at least one --topic", file=sys.stderr)
        return 2
    try:
        with AdminClient(args.bootstrap_server, sasl_plain=_sasl_plain(args.command_config)) as admin:
            admin.delete_topics(args.topic, validate_only=args.validate_only)
    except (AdminError, OSError, ValueError, KeyError) as exc:
        print(f"ksteward topics: {exc}", file=sys.stderr)
        return 1
    verb = "could be deleted (validate only; nothing was deleted)" if args.validate_only else "deleted"
    print(f"{', '.join(args.topic)}: {verb}")
    return 0
