"""``ksteward state export``: a live cluster as one state file (docs/state-files.md).

The file lists every non-internal topic (partitions, replication factor, its DYNAMIC_TOPIC_CONFIG
overrides), every ACL, client quota and SCRAM user (names, mechanisms, iterations: never a salt, key or
password). It owns everything (``ownership: {all: true}``) and deletes nothing (every ``delete`` switch
off), so applying it to the cluster it came from changes nothing and applying it elsewhere only adds. Sorted
throughout: two exports of the same cluster are the same bytes.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from ksteward.cli.admin_common import EXIT_OK, UsageError, add_connection_flags, connection, run_command

DESCRIPTION = "Write a live cluster's topics, configs, ACLs, client quotas and SCRAM users as one state file."
EXAMPLES = """examples:
  ksteward state export --bootstrap-server localhost:9092 -o cluster.yaml
  ksteward state export --bootstrap-server kafka:9092 --command-config admin.properties > cluster.yaml

The file owns everything and deletes nothing; narrow its ownership and switch deletion on per section
before using it to manage a cluster (docs/state-files.md). Notes (a section that could not be read) go to
stderr.
exit codes: 0 written, 1 a server-side or connection error, 2 bad usage
"""
# No cluster id or time in the header: the same resources give the same bytes, whichever cluster holds them.
HEADER = """ksteward state file (docs/state-files.md), written by `ksteward state export`.
Owns everything and deletes nothing: narrow `ownership` and switch `delete` on per section to manage with it."""


def add_parser(sub: Any) -> None:
    p = sub.add_parser("state", help="desired state as a file: export a live cluster",
                       description=DESCRIPTION, epilog=EXAMPLES,
                       formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    actions = p.add_subparsers(dest="state_command", required=True, metavar="ACTION")
    e = actions.add_parser("export", help="write the cluster as a state file", description=DESCRIPTION,
                           epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    add_connection_flags(e, controller=False)
    e.add_argument("-o", "--output-file", metavar="FILE", help="write here (default: stdout)")
    e.set_defaults(func=run_export)


def run_export(args: argparse.Namespace) -> int:
    return run_command("state export", lambda: _export(args))


def _export(args: argparse.Namespace) -> int:
    from ksteward.cli.state_live import read_live
    from ksteward.state.fileformat import dump
    from ksteward.state.model import Deletion, Ownership

    if args.output != "text":
        raise UsageError("state export writes the state file (YAML); --output json is not available here")
    live = read_live(connection(args))
    for note in live.notes:
        print(f"ksteward state export: note: {note}", file=sys.stderr)
    text = dump(live.resources, Ownership(all=True), Deletion(), header=HEADER)
    if args.output_file:
        tmp = f"{args.output_file}.tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, args.output_file)
    else:
        sys.stdout.write(text)
    return EXIT_OK
