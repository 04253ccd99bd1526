"""``ksteward plan FILE``: what applying a state file would do, with its drift, policy verdicts, lockout guard,
blast radius and (``--audit-dir``) the requests it would flip (docs/state-files.md §plan).

:func:`make_plan` is the whole computation, shared with ``ksteward apply`` (``ksteward.cli.apply``): it reads
the file, the cluster and the last-apply record, diffs them (``ksteward.state.diff``) and adds the verdicts.
It changes nothing on the cluster.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ksteward.authorizer import (
    WILDCARD_HOST,
    AclBinding,
    AclPermissionType,
    AuthorizerSettings,
    ResourceType,
)
from ksteward.cli.admin_common import (
    EXIT_ERROR,
    EXIT_OK,
    Connection,
    UsageError,
    add_connection_flags,
    connection,
    print_json,
    run_command,
)
from ksteward.cli.state_live import LiveState
from ksteward.state.model import DesiredState, Plan

EXIT_CHANGES = 2  # --detailed-exitcode, as Terraform's
DESCRIPTION = "Compare a state file with the live cluster and print what applying it would do."
EXAMPLES = """examples:
  ksteward plan orders.yaml --bootstrap-server localhost:9092
  ksteward plan orders.yaml --bootstrap-server kafka:9092 --command-config admin.properties --output json
  ksteward plan orders.yaml --bootstrap-server localhost:9092 --audit-dir /var/log/ksteward/audit
  ksteward plan orders.yaml --bootstrap-server localhost:9092 --detailed-exitcode   # for CI

Lines: + create, ~ change, - delete; [drift: ...] marks a difference made outside ksteward since the last
apply (the record FILE.applied.json beside the file says what that apply wrote).
exit codes: 0 success, 1 an error or a refused plan (lockout, policy, ownership), 2 bad usage;
with --detailed-exitcode: 0 no changes, 2 changes, 1 any error
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The flags ``plan`` and ``apply`` share."""
    p.add_argument("file", metavar="FILE", help="the state file (docs/state-files.md)")
    add_connection_flags(p, controller=False)
    p.add_argument("--audit-dir", metavar="DIR", help="which requests in DIR's audit log the ACL changes would flip "
                   "(the pipeline's what-if job; needs pyspark)")  # fmt: skip
    p.add_argument("--protect-principal", action="append", metavar="TYPE:NAME",
                   help="the lockout guard also protects this principal's right to alter ACLs")  # fmt: skip
    p.add_argument("--super-users", metavar="'User:a;User:b'",
                   help="the brokers' super.users, when DescribeConfigs cannot read it")  # fmt: skip
    p.add_argument("--allow-everyone-if-no-acl-found", choices=("true", "false"),
                   help="allow.everyone.if.no.acl.found, when DescribeConfigs cannot read it")  # fmt: skip
    p.add_argument("--no-policy-check", action="store_true", help="skip the validate_only requests")


def add_parser(sub: Any) -> None:
    p = sub.add_parser("plan", help="what applying a state file would change, with drift and impact",
                       description=DESCRIPTION, epilog=EXAMPLES,
                       formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    add_arguments(p)
    p.add_argument("--detailed-exitcode", action="store_true", help="exit 0 no changes, 2 changes, 1 error")
    p.set_defaults(func=run)


@dataclass
class PlanContext:
    """A plan and what it was made from (``apply`` needs the live state and the file)."""

    plan: Plan
    desired: DesiredState
    live: LiveState
    settings: AuthorizerSettings
    notes: list[str] = field(default_factory=list)


def make_plan(args: argparse.Namespace, conn: Connection) -> PlanContext:
    """Read, diff and judge: the plan for ``args.file`` against ``conn``'s cluster."""
    from ksteward.cli.acls.backend import open_backend
    from ksteward.cli.acls.commands import known_settings
    from ksteward.cli.state_live import read_live
    from ksteward.state.diff import diff
    from ksteward.state.fileformat import StateFileError, parse
    from ksteward.state.model import Precondition
    from ksteward.state.record import load_record

    try:
        with open(args.file, encoding="utf-8") as f:
            desired = parse(f.read())
    except OSError as exc:
        raise UsageError(f"cannot read {args.file}: {exc.strerror or exc}") from None
    except StateFileError as exc:
        raise UsageError(f"{args.file}: {exc}") from None
    live = read_live(conn)
    try:
        record = load_record(args.file, live.cluster_id or "")
    except StateFileError as exc:
        raise UsageError(str(exc)) from None
    plan = diff(desired, live.resources, record.resources if record else None)
    # On ksteward, the offset the ACLs were read at: apply's CreateAcls v4 refuses the change if an ACL changed since.
    plan.precondition = Precondition(cluster_id=live.cluster_id, metadata_offset=live.acls_read_at)
    _unread_sections(desired, live, plan)
    backend = open_backend(conn)
    try:
        known = known_settings(args, backend)
    finally:
        backend.close()
    notes = [*live.notes, *known.notes]
    plan.lockouts = plan_lockouts(live.resources.acls, plan.acl_bindings_to_create(), plan.acl_bindings_to_delete(),
                                  known.settings, _protected(args, conn, notes))  # fmt: skip
    if not args.no_policy_check and plan.has_changes:
        from ksteward.cli.plan_policy import policy_verdicts

        plan.policy = policy_verdicts(conn, plan)
    plan.warnings += [f"SCRAM user {s.user} {s.mechanism}: apply needs the password in an environment variable "
                      "(password_env in the file)" for s in plan.scram if s.action.value != "delete"
                      and not s.password_env]  # fmt: skip
    if args.audit_dir and plan.acls:
        plan.whatif = _whatif(args.audit_dir, live.resources.acls, known.settings, plan, notes)
    elif args.audit_dir:
        notes.append("--audit-dir: the plan changes no ACL, so no request can flip (the what-if job was not run)")
    return PlanContext(plan, desired, live, known.settings, notes)


def _unread_sections(desired: DesiredState, live: LiveState, plan: Plan) -> None:
    """A section the cluster could not be read for must not be planned: refuse what the file asks there."""
    emptied = False
    if not live.quotas_read and (desired.resources.quotas or desired.deletion.quotas):
        plan.refusals.append("client quotas could not be read from this cluster (see the note), so the file's "
                             "quotas cannot be planned")  # fmt: skip
        plan.quotas, emptied = [], True
    if not live.scram_read and (desired.resources.scram_users or desired.deletion.scram_users):
        plan.refusals.append("SCRAM users could not be read from this cluster (see the note), so the file's "
                             "scram_users cannot be planned")  # fmt: skip
        plan.scram, emptied = [], True
    if emptied:
        from ksteward.state.diff import blast_radius

        plan.blast_radius = blast_radius(plan)  # without the sections just emptied


def _protected(args: argparse.Namespace, conn: Connection, notes: list[str]) -> dict[str, list[str]]:
    """The caller (with the address it connects from) and every ``--protect-principal``."""
    from ksteward.cli.acls.backend import caller_host
    from ksteward.cli.acls.commands import caller_principal
    from ksteward.cli.acls.options import parse_principal

    out: dict[str, list[str]] = {}
    caller = caller_principal(conn)
    if caller:
        out[caller] = [h for h in [caller_host(conn)] if h]
    else:
        notes.append("the caller's principal cannot be known from --command-config (TLS certificate, Kerberos or "
                     "OAuth): the lockout guard protects only the --protect-principal principals")  # fmt: skip
    for p in args.protect_principal or []:
        out.setdefault(parse_principal(p.strip()), [])
    return out


def plan_lockouts(
    live_acls: frozenset[AclBinding],
    created: list[AclBinding],
    removed: list[AclBinding],
    settings: AuthorizerSettings,
    protected: Mapping[str, list[str]],
) -> list[dict[str, Any]]:
    """``ksteward.cli.acls.answers.lockouts`` for the ACLs the plan deletes, then the same question for the
    plan as a whole (a new DENY on the cluster locks out as surely as a deleted ALLOW)."""
    from ksteward.cli.acls.answers import authorizer, can_alter_acls, lockouts, reason
    from ksteward.cli.acls.options import CLUSTER_PATTERN

    cluster = [a for a in live_acls if a.resource_type is ResourceType.CLUSTER]
    out = lockouts(cluster, removed, settings, protected)
    new_denies = [a for a in created if a.resource_type is ResourceType.CLUSTER
                  and a.permission_type is AclPermissionType.DENY]  # fmt: skip
    if not new_denies:
        return out
    gone = set(removed)
    before = authorizer(cluster, settings)
    after = authorizer([*(a for a in cluster if a not in gone), *new_denies], settings)
    reported = {lock["principal"] for lock in out}
    for principal, hosts in protected.items():
        lost = [h for h in dict.fromkeys([*hosts, WILDCARD_HOST]) if can_alter_acls(before, principal, h).allowed
                and not can_alter_acls(after, principal, h).allowed]  # fmt: skip
        if lost and principal not in reported:
            now = can_alter_acls(after, principal, lost[0])
            out.append({"principal": principal, "hosts": lost, "allowed_by": [],
                        "after": reason(now, principal, lost[0], CLUSTER_PATTERN, after)})  # fmt: skip
    return out


def _whatif(audit_dir: str, live_acls: frozenset[AclBinding], settings: AuthorizerSettings, plan: Plan,
            notes: list[str]) -> dict[str, Any] | None:  # fmt: skip
    from ksteward.cli.acls.audit_whatif import MISSING, audit_flips

    summary = audit_flips(audit_dir, list(live_acls), settings, plan.acl_bindings_to_create(),
                          plan.acl_bindings_to_delete())  # fmt: skip
    if summary is None:
        notes.append(MISSING)
    return summary


# --- the command ---------------------------------------------------------------------------------------


def run(args: argparse.Namespace) -> int:
    outcome: list[int] = []

    def body() -> int:
        rc = _plan(args)
        outcome.append(rc)
        return rc

    rc = run_command("plan", body)
    if args.detailed_exitcode and not outcome:
        return EXIT_ERROR  # Terraform's contract: 1 for every error, usage errors included
    return rc


def _plan(args: argparse.Namespace) -> int:
    from ksteward.state.render import plan_json, text_lines

    ctx = make_plan(args, connection(args))
    plan, cluster_id = ctx.plan, ctx.live.cluster_id
    if args.output == "json":
        print_json(plan_json(plan, file=args.file, cluster_id=cluster_id, notes=ctx.notes))
    else:
        out = sys.stdout
        for line in text_lines(plan, file=args.file, cluster_id=cluster_id, notes=ctx.notes):
            out.write(line + "\n")
    if plan.refused or any(v.error for v in plan.policy):
        print("ksteward plan: the plan is refused (see above); apply would change nothing", file=sys.stderr)
        return EXIT_ERROR
    if args.detailed_exitcode:
        return EXIT_CHANGES if plan.has_changes else EXIT_OK
    return EXIT_OK
