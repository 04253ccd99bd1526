"""Desired-state benchmark (issue 19): ``ksteward plan`` and ``ksteward apply`` of a file of 100,000 ACLs against
a cluster that holds 100,000 ACLs, with the time of each phase and the peak memory.

    .venv/bin/python -m bench.state            # 100,000 ACLs (a minute or two on 2 cores)
    .venv/bin/python -m bench.state --quick    # 10,000 ACLs

1. A real cluster starts: a controller-only node and a broker-only node (StandardAuthorizer), as
   ``ksteward cluster up`` makes them. The broker is the bootstrap server: every write is forwarded to the
   controller in an Envelope.
2. The cluster is loaded with ``--acls`` ACLs (``old-<i>`` topics, 100 principals; one CreateAcls v4), then
   the file is written (``state.fileformat.dump``, owning everything, ACL deletion on): the same number of ACLs,
   ALL different (``new-<i>`` topics), so the plan holds ``--acls`` creations and ``--acls`` deletions, the
   largest change such a file can make.
3. ``plan``, phase by phase, in this process, with the code ``ksteward plan`` runs: **read file** (parse the
   YAML, ``state.fileformat``), **read cluster** (``cli.state_live.read_live``: topics, configs, quotas, SCRAM users
   and the ACLs, with DescribeAcls v4, and the metadata offset they were read at), **diff** (``state.diff``),
   **validate** (the lockout guard, ``cli.plan.plan_lockouts``, and the validate_only policy verdicts,
   ``cli.plan_policy``).
4. ``apply``, with the code ``ksteward apply`` runs (``cli.apply_steps.execute``): the precondition check, then
   the plan's change as ONE CreateAcls v4 with the plan's offset as its precondition (one metadata batch). Then a
   second plan must find nothing to do.

Peak memory: this process's ``ru_maxrss`` after each phase (the planner's side), and the controller's and the
broker's ``VmHWM`` at the end. Prints a table and writes ``bench/results/state.json``, with the 1-minute load
average before and after (the machine is shared). The goal: plan <= 10 s, apply <= 20 s.
"""

from __future__ import annotations

import argparse
import asyncio
import resource
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from bench._harness.cluster import broker_node, controller_node, new_cluster_id
from bench._harness.report import table, warn
from bench._harness.runner import Benchmark, parser
from ksteward.authorizer import AclBinding, AuthorizerSettings
from ksteward.cli.acl_apply import AclDelta, apply_atomically
from ksteward.cli.admin_client import AdminClient
from ksteward.cli.admin_common import Connection
from ksteward.cli.apply_steps import changes_from_plan, execute
from ksteward.cli.plan import plan_lockouts
from ksteward.cli.plan_policy import policy_verdicts
from ksteward.cli.state_live import read_live
from ksteward.state.diff import diff
from ksteward.state.fileformat import dump, parse
from ksteward.state.model import Deletion, Ownership, Plan, Precondition, Resources

GOAL_PLAN_S, GOAL_APPLY_S = 10.0, 20.0
PRINCIPALS = 100
ALL_ACLS = {"resource_type_filter": 1, "resource_name_filter": None, "pattern_type_filter": 1,
            "principal_filter": None, "host_filter": None, "operation": 1, "permission_type": 1}  # fmt: skip
T = TypeVar("T")


@dataclass(frozen=True)
class Params:
    quick: bool
    acls: int

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> Params:
        return cls(args.quick, args.acls or (10_000 if args.quick else 100_000))


def acls(tag: str, count: int) -> list[AclBinding]:
    return [AclBinding("TOPIC", f"{tag}-{i}", "PREFIXED" if i % 5 == 0 else "LITERAL",
                       f"User:team-{i % PRINCIPALS}", "*", "READ" if i % 2 else "WRITE", "ALLOW")
            for i in range(count)]  # fmt: skip


def rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


class Phases:
    """Each phase's wall time, the CPU seconds this process and the servers used in it, and this process's peak
    RSS once it is done (``server_cpu``: the controller's and the broker's CPU seconds so far)."""

    def __init__(self, server_cpu: Callable[[], tuple[float, float]]) -> None:
        self.rows: list[dict[str, Any]] = []
        self.server_cpu = server_cpu

    def run(self, name: str, step: Callable[[], T]) -> T:
        began, cpu, (controller, broker) = time.perf_counter(), time.process_time(), self.server_cpu()
        result = step()
        controller_after, broker_after = self.server_cpu()
        self.rows.append({"phase": name, "s": round(time.perf_counter() - began, 3),
                          "planner_cpu_s": round(time.process_time() - cpu, 2),
                          "controller_cpu_s": round(controller_after - controller, 2),
                          "broker_cpu_s": round(broker_after - broker, 2),
                          "peak_rss_mib": round(rss_mib())})  # fmt: skip
        return result

    def total(self, *names: str) -> float:
        return round(sum(r["s"] for r in self.rows if r["phase"] in names), 3)


def plan_and_apply(bootstrap: str, state_file: Path, phases: Phases) -> dict[str, Any]:
    """``ksteward plan`` then ``ksteward apply``, phase by phase, with the functions those commands run
    (``cli.plan.make_plan`` is the same steps in one call)."""
    conn = Connection(bootstrap, False, {})
    desired = phases.run("plan: read file", lambda: parse(state_file.read_text()))
    live = phases.run("plan: read cluster", lambda: read_live(conn))

    def plan_diff() -> Plan:
        plan = diff(desired, live.resources, None)
        plan.precondition = Precondition(cluster_id=live.cluster_id, metadata_offset=live.acls_read_at)
        return plan

    plan = phases.run("plan: diff", plan_diff)

    def validate() -> None:
        settings = AuthorizerSettings(super_users=frozenset({"User:ANONYMOUS"}))
        plan.lockouts = plan_lockouts(live.resources.acls, plan.acl_bindings_to_create(),
                                      plan.acl_bindings_to_delete(), settings, {"User:ANONYMOUS": ["*"]})  # fmt: skip
        plan.policy = policy_verdicts(conn, plan)

    phases.run("plan: validate", validate)
    assert not plan.refused, plan.lockouts
    outcome = phases.run("apply", lambda: execute(conn, changes_from_plan(plan), atomic_acls=True,
                                                  report=lambda _: None))  # fmt: skip
    assert outcome.acls is not None
    with AdminClient(bootstrap, timeout=300, min_metadata_offset=outcome.acls.offset) as client:
        listed, _ = client.describe_acls_at(ALL_ACLS)
        second = diff(desired, Resources(acls=frozenset(AclBinding(*a) for a in listed)), None)
    return {"created": outcome.acls.created, "deleted": outcome.acls.deleted, "changes_after": len(second.acls)}


async def section_acls(p: Params, workdir: Path) -> dict[str, Any]:
    cluster_id = new_cluster_id()
    controller = controller_node(workdir, "controller", cluster_id)
    broker = broker_node(workdir, "broker", cluster_id, controller, 2)
    try:
        await controller.spawn()
        await controller.wait_ready(60)
        await broker.spawn()
        await broker.wait_ready(120)
        result = await _measure(p, broker.bootstrap, workdir, lambda: (controller.cpu_seconds(), broker.cpu_seconds()))
        result["server_peak_rss_mib"] = {"controller": controller.status_kib("VmHWM") // 1024,
                                         "broker": broker.status_kib("VmHWM") // 1024}  # fmt: skip
        await broker.stop()
        await controller.stop()
    finally:
        broker.kill()
        controller.kill()
    print(f"  server peak RSS MiB: {result['server_peak_rss_mib']}")
    return result


async def _measure(
    p: Params, bootstrap: str, workdir: Path, server_cpu: Callable[[], tuple[float, float]]
) -> dict[str, Any]:
    def load() -> None:
        with AdminClient(bootstrap, timeout=300) as client:
            loaded = apply_atomically(client, AclDelta(tuple(acls("old", p.acls))), lambda _: None)
        # Until the broker has applied the load, a plan would read the ACLs before it, and apply's precondition
        # would refuse that stale plan (as it should): wait for the broker, with read-your-writes.
        with AdminClient(bootstrap, timeout=300, min_metadata_offset=loaded.offset) as client:
            client.describe_acls_at(ALL_ACLS)

    began = time.perf_counter()
    await asyncio.to_thread(load)
    load_s = round(time.perf_counter() - began, 1)
    print(f"  loaded {p.acls:,} ACLs in {load_s}s")
    state_file = workdir / "state.yaml"
    wanted = Resources(acls=frozenset(acls("new", p.acls)))
    state_file.write_text(dump(wanted, Ownership(all=True), Deletion(acls=True)))
    phases = Phases(server_cpu)
    result = await asyncio.to_thread(plan_and_apply, bootstrap, state_file, phases)
    plan_s = phases.total("plan: read file", "plan: read cluster", "plan: diff", "plan: validate")
    apply_s = phases.total("apply")
    rows = [*phases.rows, {"phase": "plan (total)", "s": plan_s}, {"phase": "apply (total)", "s": apply_s}]
    print(table(f"plan and apply of {p.acls:,} ACLs against {p.acls:,} ({result['created']:,} created, "
                f"{result['deleted']:,} deleted)", [("phase", "phase"), ("seconds", "s"),
                                                     ("planner CPU s", "planner_cpu_s"),
                                                     ("controller CPU s", "controller_cpu_s"),
                                                     ("broker CPU s", "broker_cpu_s"),
                                                     ("planner peak RSS MiB", "peak_rss_mib")], rows))  # fmt: skip
    problems = []
    if result["changes_after"]:
        problems.append(f"a second plan still finds {result['changes_after']} ACL changes")
    if p.acls >= 100_000 and plan_s > GOAL_PLAN_S:
        problems.append(f"plan took {plan_s}s, the goal is {GOAL_PLAN_S}s")
    if p.acls >= 100_000 and apply_s > GOAL_APPLY_S:
        problems.append(f"apply took {apply_s}s, the goal is {GOAL_APPLY_S}s")
    warn(problems)
    return {"acls": p.acls, "load_s": load_s, "phases": phases.rows, "plan_s": plan_s, "apply_s": apply_s,
            **result, "problems": problems}  # fmt: skip


BENCHMARK = Benchmark("state", "desired state", section_timeout_s=None)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = parser(__doc__, "state", "10,000 ACLs instead of 100,000")
    p.add_argument("--acls", type=int, default=0, help="ACLs in the cluster and in the file (default 100,000)")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    return BENCHMARK.main(args, Params.from_args(args), {"acls": section_acls})


if __name__ == "__main__":
    sys.exit(main())
