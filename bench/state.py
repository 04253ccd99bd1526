"""Desired-state benchmark (issue 19): ``ksteward plan`` and ``ksteward apply`` of a file of 100,000 ACLs against
a cluster that holds 100,000 ACLs, with the time of each phase and the peak memory.

    .venv/bin/python -m bench.state            # 100,000 ACLs (a minute or two on 2 cores)
    .venv/bin/python -m bench.state --quick    # 10,000 ACLs

1. A real cluster starts: a controller-only node and a broker-only node (StandardAuthorizer), as
   ``ksteward cluster up`` makes them. The broker is the bootstrap server: every write is forwarded to the
   controller in an Envelope.
2. The cluster is loaded with ``--acls`` ACLs (``old-<i>`` topics, 100 principals; one CreateAcls v4), then
   the file is written: the same number of ACLs, ALL different (``new-<i>`` topics), so the plan holds
   ``--acls`` creations and ``--acls`` deletions, the largest change such a file can make.
3. ``plan``, phase by phase, in this process: **read** (the live ACLs, with DescribeAcls v4, and the metadata
   offset they were read at), **diff** (the file against them), **validate** (the lockout guard, and CreateAcls v4
   with ``validate_only``: every entry checked by the controller, nothing written).
4. ``apply``: the plan's change as ONE CreateAcls v4 with the plan's offset as its precondition (one metadata
   batch). Then a second plan must find nothing to do.

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
from ksteward.authorizer import AclBinding
from ksteward.cli.acl_apply import AclDelta, apply_atomically
from ksteward.cli.admin_client import AdminClient

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
    """Each phase's wall time and this process's peak RSS once it is done."""

    def __init__(self) -> None:
        self.rows: list[dict[str, Any]] = []

    def run(self, name: str, step: Callable[[], T]) -> T:
        began = time.perf_counter()
        result = step()
        self.rows.append({"phase": name, "s": round(time.perf_counter() - began, 3), "peak_rss_mib": round(rss_mib())})
        return result

    def total(self, *names: str) -> float:
        return round(sum(r["s"] for r in self.rows if r["phase"] in names), 3)


def plan_and_apply(bootstrap: str, desired: list[AclBinding], phases: Phases) -> dict[str, Any]:
    with AdminClient(bootstrap, timeout=300) as client:

        def read() -> tuple[set[AclBinding], int]:
            listed, offset = client.describe_acls_at(ALL_ACLS)
            return {AclBinding(*a) for a in listed}, offset

        live, planned_at = phases.run("plan: read", read)

        def diff() -> AclDelta:
            wanted = set(desired)
            return AclDelta(tuple(a for a in desired if a not in live), tuple(a for a in live if a not in wanted),
                             planned_at)  # fmt: skip

        change = phases.run("plan: diff", diff)

        def validate() -> tuple[int, int, int]:
            return client.replace_acls(change.create, change.delete, unchanged_since=planned_at, validate_only=True)

        phases.run("plan: validate", validate)
        applied = phases.run("apply", lambda: apply_atomically(client, change, lambda _: None))
    with AdminClient(bootstrap, timeout=300, min_metadata_offset=applied.offset) as again:
        listed, _ = again.describe_acls_at(ALL_ACLS)
    left = {AclBinding(*a) for a in listed} ^ set(desired)
    return {"created": applied.created, "deleted": applied.deleted, "differences_after": len(left)}


async def section_acls(p: Params, workdir: Path) -> dict[str, Any]:
    cluster_id = new_cluster_id()
    controller = controller_node(workdir, "controller", cluster_id)
    broker = broker_node(workdir, "broker", cluster_id, controller, 2)
    try:
        await controller.spawn()
        await controller.wait_ready(60)
        await broker.spawn()
        await broker.wait_ready(120)
        result = await _measure(p, broker.bootstrap)
        result["server_peak_rss_mib"] = {"controller": controller.status_kib("VmHWM") // 1024,
                                         "broker": broker.status_kib("VmHWM") // 1024}  # fmt: skip
        await broker.stop()
        await controller.stop()
    finally:
        broker.kill()
        controller.kill()
    print(f"  server peak RSS MiB: {result['server_peak_rss_mib']}")
    return result


async def _measure(p: Params, bootstrap: str) -> dict[str, Any]:
    def load() -> None:
        with AdminClient(bootstrap, timeout=300) as client:
            apply_atomically(client, AclDelta(tuple(acls("old", p.acls))), lambda _: None)

    began = time.perf_counter()
    await asyncio.to_thread(load)
    load_s = round(time.perf_counter() - began, 1)
    print(f"  loaded {p.acls:,} ACLs in {load_s}s")
    desired = acls("new", p.acls)
    phases = Phases()
    result = await asyncio.to_thread(plan_and_apply, bootstrap, desired, phases)
    plan_s, apply_s = phases.total("plan: read", "plan: diff", "plan: validate"), phases.total("apply")
    rows = [*phases.rows, {"phase": "plan (total)", "s": plan_s}, {"phase": "apply (total)", "s": apply_s}]
    print(table(f"plan and apply of {p.acls:,} ACLs against {p.acls:,} ({result['created']:,} created, "
                f"{result['deleted']:,} deleted)", [("phase", "phase"), ("seconds", "s"),
                                                     ("planner peak RSS MiB", "peak_rss_mib")], rows))  # fmt: skip
    problems = []
    if result["differences_after"]:
        problems.append(f"{result['differences_after']} ACLs differ from the file after apply")
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
