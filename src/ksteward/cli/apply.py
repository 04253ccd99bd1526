"""``ksteward apply FILE``: make the plan ``ksteward plan FILE`` shows, show it, ask, and carry it out
(docs/state-apply.md).

- The plan is computed here, as ``ksteward plan`` computes it (``ksteward.state``); its refusals (the lockout
  guard, a declared resource outside the ownership selectors ...) stop the apply with nothing done.
- No change: it says so and exits 0, so a second apply of the same file changes nothing.
- It asks for ``yes`` on a terminal, as Terraform does; ``--auto-approve`` skips the question, and without a
  terminal ``--auto-approve`` is required.
- On ksteward (CreateAcls v4 advertised), the ACL change is one atomic metadata batch with the plan's metadata
  offset as its precondition: if an ACL changed since the plan, nothing of it is applied and the command says
  so. Elsewhere, or with ``--safe-order``, every ACL is created before any is deleted. The other resources go
  through Kafka's standard APIs, additive first and destructive last (``cli.apply_steps``), each step reported.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any

from ksteward.cli.admin_common import (
    EXIT_OK,
    CommandError,
    Connection,
    UsageError,
    connection,
    print_json,
    run_command,
)
from ksteward.cli.apply_steps import Outcome, changes_from_plan, execute
from ksteward.state.model import Plan

DESCRIPTION = (
    "Apply a state file: compute the plan `ksteward plan FILE` shows, confirm, and carry it out. On ksteward the "
    "ACL changes are one atomic metadata batch, refused whole if the ACLs changed since the plan; on any other "
    "Kafka, new ACLs are created before old ones are deleted. Reference: docs/state-apply.md."
)

EXAMPLES = """\
examples:
  ksteward apply team-orders.yaml --bootstrap-server localhost:9092
  ksteward apply team-orders.yaml --bootstrap-server localhost:9092 --auto-approve
  ksteward apply team-orders.yaml --bootstrap-server kafka:9093 --command-config admin.properties --auto-approve
  ksteward apply team-orders.yaml --bootstrap-server localhost:9092 --auto-approve --output json
  ksteward apply team-orders.yaml --bootstrap-server localhost:9092 --safe-order   # no atomic ACL batch

exit codes: 0 applied (or nothing to do), 1 refused (lockout guard, precondition, a server error), 2 bad usage
"""

#: The plan maker and its text rendering: ``ksteward plan``'s (:func:`plan_as_ksteward_plan_does`); a test may pass
#: its own plan.
Planner = Callable[[argparse.Namespace, Connection], Plan]
Renderer = Callable[[Plan], str]


def plan_as_ksteward_plan_does(args: argparse.Namespace, conn: Connection) -> Plan:
    from ksteward.cli.plan import make_plan

    ctx = make_plan(args, conn)
    args._plan_context = ctx  # the rendering below shows the notes and cluster id ``plan`` shows
    plan: Plan = ctx.plan
    return plan


def _render_as_ksteward_plan_does(args: argparse.Namespace) -> Renderer:
    def render(plan: Plan) -> str:
        from ksteward.state.render import text_lines

        ctx = getattr(args, "_plan_context", None)
        notes = ctx.notes if ctx is not None else []
        return "\n".join(text_lines(plan, file=args.file, cluster_id=plan.precondition.cluster_id, notes=notes))

    return render


def add_parser(sub: Any) -> None:
    from ksteward.cli.plan import add_arguments

    p = sub.add_parser("apply", help="apply a state file: plan, confirm, then change the cluster",
                       description=DESCRIPTION, epilog=EXAMPLES,
                       formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    add_arguments(p)  # the file, the connection and every flag `ksteward plan` takes
    p.add_argument("--auto-approve", action="store_true", help="apply without asking (required without a terminal)")
    p.add_argument("--safe-order", action="store_true",
                   help="create every new ACL before deleting any old one, even where the server offers the "
                        "atomic ACL change (CreateAcls v4)")  # fmt: skip
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    return run_command("apply", lambda: apply(args))


def _ask(question: str) -> bool:
    """Terraform's question: only ``yes`` goes on."""
    sys.stderr.write(f"{question}\n  Only 'yes' will be accepted to approve.\n\n  Enter a value: ")
    sys.stderr.flush()
    return sys.stdin.readline().strip() == "yes"


def _serves_acl_transactions(conn: Connection) -> bool:
    """True when the server advertises CreateAcls v4 (ksteward); False for any other Kafka, or when ksteward's
    own client cannot log in to this listener (TLS, SCRAM: the safe order through confluent-kafka is used)."""
    from ksteward.cli.admin_common import ksteward_admin

    try:
        with ksteward_admin(conn) as client:
            return bool(client.serves_acl_transactions())
    except UsageError:
        return False


def apply(args: argparse.Namespace, planner: tuple[Planner, Renderer] | None = None) -> int:
    conn = connection(args)
    make_plan, render = planner or (plan_as_ksteward_plan_does, _render_as_ksteward_plan_does(args))
    plan = make_plan(args, conn)
    text = args.output == "text"
    if text:
        print(render(plan), flush=True)  # the plan this command carries out, as `ksteward plan` shows it
    if plan.refused or any(v.error for v in plan.policy):
        reasons = [f"{v.resource}: {v.api} would fail with {v.error}" for v in plan.policy if v.error]
        reasons += plan.refusals
        for lock in plan.lockouts:
            hosts = ", ".join(map(str, lock.get("hosts", []))) or "any host"
            reasons.append(f"lockout: {lock.get('principal')} would lose the right to alter ACLs (from {hosts})")
        raise CommandError("the plan is refused, nothing was applied: " + "; ".join(reasons))
    if not plan.has_changes:
        if text:
            print("No changes. The cluster matches the file; nothing to apply.")
        else:
            print_json({"applied": False, "changes": 0, "steps": []})
        return EXIT_OK
    changes = changes_from_plan(plan)  # reads SCRAM passwords first: a missing one stops before anything is done
    if not args.auto_approve:
        if not sys.stdin.isatty():
            raise UsageError("not a terminal: pass --auto-approve to apply without confirmation")
        if not _ask(f"Do you want to apply these {_count(plan)} changes to {conn.bootstrap}?"):
            raise CommandError("apply cancelled; nothing was applied")
    atomic = not args.safe_order and _serves_acl_transactions(conn)
    report = (lambda line: print(f"  {line}", flush=True)) if text else (lambda _line: None)
    outcome = execute(conn, changes, atomic_acls=atomic, report=report)  # PreconditionFailed says "Plan again."
    _record(args.file, plan, outcome, report)
    _done(plan, outcome, text)
    return EXIT_OK


def _record(state_file: str, plan: Plan, outcome: Outcome, report: Callable[[str], None]) -> None:
    """The last-apply record beside the file (``ksteward.state.record``): what this apply made the owned part of
    the cluster, so that the next plan tells a change in the file from drift made outside the tool."""
    from ksteward.state.model import AppliedRecord
    from ksteward.state.record import save_record

    cluster_id = plan.precondition.cluster_id
    if cluster_id is None:
        return
    offset = outcome.acls.offset if outcome.acls is not None else plan.precondition.metadata_offset
    path = save_record(state_file, AppliedRecord(cluster_id, plan.desired_owned, offset))
    report(f"recorded what was applied in {path}")


def _count(plan: Plan) -> int:
    return len(plan.topics) + len(plan.acls) + len(plan.quotas) + len(plan.scram)


def _done(plan: Plan, outcome: Outcome, text: bool) -> None:
    acls = outcome.acls
    if text:
        mode = f" ACLs: {acls.mode}." if acls is not None else ""
        print(f"Apply complete: {_count(plan)} changes in {len(outcome.steps)} steps.{mode}")
        return
    acl_result = None if acls is None else {"mode": acls.mode, "created": acls.created, "deleted": acls.deleted,
                                            "metadata_offset": acls.offset}  # fmt: skip
    print_json({"applied": True, "changes": _count(plan), "steps": outcome.steps, "acls": acl_result})
