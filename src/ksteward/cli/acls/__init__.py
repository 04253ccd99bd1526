"""``ksteward acls``: Kafka's ``kafka-acls.sh`` (``org.apache.kafka.tools.AclCommand``), same flags and output,
plus the answers it never gave: ``--dry-run`` (with ``--audit-dir``), ``--who-can``, ``--explain``, the
lockout guard and warnings. docs/cli-acls.md is the reference.

Modules: ``options`` (Kafka's checks and expansion, pure), ``backend`` (confluent-kafka, or ksteward's own
client), ``answers`` (explain, who-can, guard, warnings, all decided by ``ksteward.authorizer``),
``audit_whatif`` (the pipeline's what-if job), ``commands`` (the actions and their output).
"""

from __future__ import annotations

import argparse
from typing import Any

from ksteward.authorizer import PatternType
from ksteward.cli.admin_common import add_connection_flags

from .options import parse_pattern_type

DESCRIPTION = (
    "Kafka's kafka-acls.sh (AclCommand): same flags and output, against ksteward or any Kafka cluster, plus "
    "--dry-run (with --audit-dir), --who-can, --explain, a lockout guard on --remove and warnings. "
    "Reference: docs/cli-acls.md."
)

EXAMPLES = """\
examples:
  ksteward acls --bootstrap-server localhost:9092 --add --allow-principal User:alice --operation Read --topic orders
  ksteward acls --bootstrap-server localhost:9092 --add --producer --idempotent --allow-principal User:app \\
      --topic orders --transactional-id app-tx
  ksteward acls --bootstrap-server localhost:9092 --add --consumer --allow-principal User:bob --topic orders --group g1
  ksteward acls --bootstrap-server localhost:9092 --list --topic orders
  ksteward acls --bootstrap-server localhost:9092 --list --principal User:alice
  ksteward acls --bootstrap-server localhost:9092 --remove --topic orders --resource-pattern-type match --dry-run
  ksteward acls --bootstrap-server localhost:9092 --remove --allow-principal User:old --topic orders --force
  ksteward acls --bootstrap-server localhost:9092 --add --allow-principal User:x --topic t --dry-run --audit-dir audit/
  ksteward acls --bootstrap-server localhost:9092 --who-can --operation Read --topic orders
  ksteward acls --bootstrap-server localhost:9092 --explain --principal User:alice --operation Read --topic orders \\
      --host 10.0.0.7
  ksteward acls --bootstrap-controller localhost:9093 --list --output json

exit codes: 0 success, 1 a server-side error or a refused removal (lockout guard), 2 bad usage
"""


def add_parser(sub: Any) -> None:
    p = sub.add_parser("acls", help="kafka-acls.sh's flags and output, plus who-can, explain and dry runs",
                       description=DESCRIPTION, epilog=EXAMPLES,
                       formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    add_connection_flags(p, controller=True)
    actions = p.add_argument_group("actions (exactly one)")
    actions.add_argument("--add", action="store_true", help="add ACLs")
    actions.add_argument("--remove", action="store_true", help="remove ACLs")
    actions.add_argument("--list", action="store_true", help="list ACLs of the resources given (all without one)")
    actions.add_argument("--who-can", action="store_true", help="who may do --operation on the resource, and why")
    actions.add_argument("--explain", action="store_true",
                         help="the decision for --principal doing --operation on the resource")  # fmt: skip
    res = p.add_argument_group("resources")
    res.add_argument("--topic", action="append", metavar="TOPIC", help="a topic ('*' for all), repeatable")
    res.add_argument("--group", action="append", metavar="GROUP", help="a consumer group ('*' for all), repeatable")
    res.add_argument("--cluster", action="store_true", help="the cluster resource (kafka-cluster)")
    res.add_argument("--transactional-id", action="append", metavar="ID", help="a transactional id, repeatable")
    res.add_argument("--delegation-token", action="append", metavar="ID", help="a delegation token id, repeatable")
    res.add_argument("--user-principal", action="append", metavar="PRINCIPAL",
                     help="a user principal as the resource (CreateTokens, DescribeTokens)")  # fmt: skip
    res.add_argument("--resource-pattern-type", type=parse_pattern_type, default=PatternType.LITERAL,
                     metavar="ANY|MATCH|LITERAL|PREFIXED",
                     help="literal (default) or prefixed; any or match also filter --list/--remove")  # fmt: skip
    who = p.add_argument_group("principals, hosts, operations")
    who.add_argument("--allow-principal", action="append", metavar="TYPE:NAME", help="e.g. User:alice, repeatable")
    who.add_argument("--deny-principal", action="append", metavar="TYPE:NAME", help="repeatable")
    who.add_argument("--allow-host", action="append", metavar="HOST", help="default * with --allow-principal")
    who.add_argument("--deny-host", action="append", metavar="HOST", help="default * with --deny-principal")
    who.add_argument("--operation", action="append", metavar="OP",
                     help="Read, Write, Create, Delete, Alter, Describe, ClusterAction, DescribeConfigs, "
                          "AlterConfigs, IdempotentWrite, CreateTokens, DescribeTokens, All (default All)")  # fmt: skip
    who.add_argument("--principal", action="append", metavar="TYPE:NAME",
                     help="with --list: only this principal's ACLs; with --explain: who asks")  # fmt: skip
    who.add_argument("--host", metavar="ADDRESS", help="with --explain: the client address (default: any address "
                     "no ACL names, '*')")  # fmt: skip
    short = p.add_argument_group("shortcuts")
    short.add_argument("--producer", action="store_true", help="Write, Describe, Create on topics; Write, Describe "
                       "on transactional ids")  # fmt: skip
    short.add_argument("--consumer", action="store_true", help="Read, Describe on topics; Read on groups")
    short.add_argument("--idempotent", action="store_true", help="with --producer: IdempotentWrite on the cluster")
    safe = p.add_argument_group("ksteward's safety and answers")
    safe.add_argument("--force", action="store_true", help="no confirmation; override the lockout guard")
    safe.add_argument("--dry-run", action="store_true", help="with --add/--remove: print what would change, change "
                      "nothing")  # fmt: skip
    safe.add_argument("--audit-dir", metavar="DIR", help="with --dry-run: which requests in DIR's audit log would "
                      "flip (needs pyspark)")  # fmt: skip
    safe.add_argument("--protect-principal", action="append", metavar="TYPE:NAME",
                      help="the lockout guard also protects this principal's right to alter ACLs")  # fmt: skip
    safe.add_argument("--super-users", metavar="'User:a;User:b'",
                      help="the brokers' super.users, when DescribeConfigs cannot read it")  # fmt: skip
    safe.add_argument("--allow-everyone-if-no-acl-found", choices=("true", "false"),
                      help="allow.everyone.if.no.acl.found, when DescribeConfigs cannot read it")  # fmt: skip
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ksteward.cli.admin_common import run_command

    from .commands import execute

    return run_command("acls", lambda: execute(args))
