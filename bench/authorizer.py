"""Authorizer benchmarks: the ACL layout of Kafka's ``AuthorizerBenchmark`` (jmh-benchmarks) and the
realistic layout without its wildcard host section (both in ``bench/_harness/acl_layout.py``), against a
naive linear-scan authorizer in the same run.

    .venv/bin/python -m bench.authorizer            # every layout, memory at 1,000,000 ACLs (~5-8 minutes)
    .venv/bin/python -m bench.authorizer --quick    # 10k-resource layouts, memory at 200,000 ACLs (< 2 minutes)

Per layout, on one core (the process is pinned to one CPU; the audit writer's thread shares it):
- ``authorize``: the benchmark's WRITE on TOPIC ``foo-bar35_resource-95`` by ``User:test-user`` from
  127.0.0.1 (a DefaultDeny after the wildcard section, Kafka's slow case), and a realistic allowed READ
  (``User:test-user`` on an allowed topic from 10.0.0.1, cycling through up to 1,000 topics);
- ``authorize_by_resource_type``: READ on TOPIC from 127.0.0.2;
- ``add_acl`` and ``remove_acl`` of one ACL; ``acls(ANY)`` materialised as a list;
- the naive authorizer (a loop over every ACL: Kafka's ``StandardAuthorizerData.authorize`` rules and the
  default ``Authorizer.authorizeByResourceType``, as written) for the WRITE and by-type cases;
- ``authorize`` with audit logging off, ``authorize_with_reason``, and audit on (reason + AuditEvent +
  AuditLogWriter.write into a temporary directory), plus the writer's rendering cost per event.

Latencies are per call (``perf_counter_ns`` around each call; the timer's own cost is reported as
``timer_ns``). Memory: 1,000,000 ACLs in the realistic layout built in a child process under tracemalloc;
``index`` is what ``load_snapshot`` allocates, ``total`` adds the AclBinding objects, their strings and the
UUID ids; a second child measures resident-set growth without tracemalloc as a cross-check. Prints tables
and writes ``bench/results/authorizer.json``.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import subprocess
import sys
import tempfile
import time
import tracemalloc
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from bench._harness.acl_layout import (
    ALLOW,
    DENY,
    LITERAL,
    PREFIX,
    PREFIXED,
    PRINCIPAL,
    READ,
    SEED,
    TOPIC,
    Layout,
    build_layout,
)
from bench._harness.report import REPO, machine_facts, table, write_document
from bench._harness.runner import parser
from ksteward.authorizer import (
    WILDCARD_HOST,
    WILDCARD_PRINCIPAL,
    WILDCARD_RESOURCE,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AuditEvent,
    AuditLogWriter,
    AuthorizationResult,
    PatternType,
    ResourceType,
    StandardAuthorizer,
)

WRITE, ALL = AclOperation.WRITE, AclOperation.ALL
ALLOWED, DENIED = AuthorizationResult.ALLOWED, AuthorizationResult.DENIED


# --- the naive baseline --------------------------------------------------------------------------

_IMPLIED = {
    AclOperation.DESCRIBE: {READ, WRITE, AclOperation.DELETE, AclOperation.ALTER, AclOperation.DESCRIBE},
    AclOperation.DESCRIBE_CONFIGS: {AclOperation.ALTER_CONFIGS, AclOperation.DESCRIBE_CONFIGS},
}


class NaiveAuthorizer:
    """Kafka's decision rules as a loop over every ACL: what an unindexed authorizer costs. ``authorize``
    follows ``StandardAuthorizerData.authorize`` (deny wins; an ALLOW of DESCRIBE or DESCRIBE_CONFIGS is
    implied by the operations in ``_IMPLIED``; with no matching ACL at all, ``allow_everyone`` decides);
    ``authorize_by_resource_type`` follows the default ``Authorizer.authorizeByResourceType`` (a probe on
    a resource named ``hardcode``, then a scan where a denied prefix dominates the names under it)."""

    def __init__(self, acls: Sequence[AclBinding], allow_everyone: bool = False) -> None:
        self.acls = acls
        self.allow_everyone = allow_everyone

    @staticmethod
    def _principal_ok(acl_principal: str, principal: str) -> bool:
        return ":" in acl_principal and (acl_principal in (principal, WILDCARD_PRINCIPAL))

    def authorize(
        self, principal: str, host: str, op: AclOperation, rt: ResourceType, name: str
    ) -> AuthorizationResult:
        found = allowed = False
        for acl in self.acls:
            if acl.resource_type is not rt:
                continue
            if acl.pattern_type is LITERAL:
                if acl.resource_name not in (name, WILDCARD_RESOURCE):
                    continue
            elif acl.pattern_type is not PREFIXED or not name.startswith(acl.resource_name):
                continue
            found = True
            if not self._principal_ok(acl.principal, principal) or acl.host not in (WILDCARD_HOST, host):
                continue
            if acl.permission_type is ALLOW:
                if acl.operation is ALL or acl.operation is op or acl.operation in _IMPLIED.get(op, ()):
                    allowed = True
            elif acl.operation is ALL or acl.operation is op:
                return DENIED
        if allowed:
            return ALLOWED
        return DENIED if found or not self.allow_everyone else ALLOWED

    def authorize_by_resource_type(self, principal: str, host: str, op: AclOperation, rt: ResourceType) -> Any:
        if self.authorize(principal, host, op, rt, "hardcode") is ALLOWED:
            return ALLOWED
        deny_lit: set[str] = set()
        deny_pre: set[str] = set()
        allow_lit: set[str] = set()
        allow_pre: set[str] = set()
        for acl in self.acls:
            if acl.resource_type is not rt or acl.host not in (host, WILDCARD_HOST):
                continue
            if not self._principal_ok(acl.principal, principal) or (
                acl.operation is not op and acl.operation is not ALL
            ):
                continue
            literal = acl.pattern_type is LITERAL
            if acl.permission_type is DENY:
                if literal and acl.resource_name == WILDCARD_RESOURCE:
                    return DENIED
                (deny_lit if literal else deny_pre).add(acl.resource_name)
            elif acl.permission_type is ALLOW:
                if literal and acl.resource_name == WILDCARD_RESOURCE:
                    return ALLOWED
                (allow_lit if literal else allow_pre).add(acl.resource_name)

        def dominated(name: str) -> bool:
            return any(name[:n] in deny_pre for n in range(1, len(name) + 1))

        if any(n not in deny_lit and not dominated(n) for n in allow_lit):
            return ALLOWED
        return ALLOWED if any(not dominated(p) for p in allow_pre) else DENIED


# --- timing --------------------------------------------------------------------------------------


def timer_overhead_ns() -> int:
    clock = time.perf_counter_ns
    samples = []
    for _ in range(20000):
        t0 = clock()
        samples.append(clock() - t0)
    return sorted(samples)[len(samples) // 2]


def sample(fn: Callable[[], object], *, count: int, budget_s: float, min_count: int = 3) -> list[int]:
    """Per-call nanoseconds of ``fn``: ``count`` calls, or fewer if ``budget_s`` runs out (at least ``min_count``)."""
    clock = time.perf_counter_ns
    out: list[int] = []
    deadline = clock() + int(budget_s * 1e9)
    for i in range(count):
        t0 = clock()
        fn()
        t1 = clock()
        out.append(t1 - t0)
        if i + 1 >= min_count and t1 > deadline:
            break
    return out


def pct(samples: Sequence[int], q: float) -> float:
    """Nearest-rank percentile in microseconds."""
    ordered = sorted(samples)
    rank = max(1, min(len(ordered), round(q / 100 * len(ordered) + 0.5)))
    return ordered[rank - 1] / 1000


def stats(samples: Sequence[int]) -> dict[str, float]:
    return {"p50_us": pct(samples, 50), "p99_us": pct(samples, 99), "n": len(samples)}


# --- one layout ----------------------------------------------------------------------------------


def run_layout(layout: Layout, quick: bool) -> dict[str, Any]:
    n_fast = 20000 if quick else 50000
    started = time.perf_counter()
    gc.disable()  # millions of new objects: keep the collector out of the build (re-enabled below)
    acls = build_layout(layout)
    pairs = [(uuid.uuid4(), acl) for acl in acls]
    built = time.perf_counter()
    auth = StandardAuthorizer.from_config({"super.users": "User:admin"})
    auth.load_snapshot(pairs)
    loaded = time.perf_counter()
    del pairs
    gc.collect()
    gc.freeze()  # what a server does after a load: the ACLs are long-lived, keep them out of GC passes
    gc.enable()
    naive = NaiveAuthorizer(acls)
    row: dict[str, Any] = {
        "layout": layout.name,
        "resources": layout.resources,
        "acls_per_resource": layout.acls_per_resource,
        "deny_pct": layout.deny_pct,
        "wildcard_section": layout.wildcard_section,
        "acl_count": auth.acl_count(),
        "build_bindings_and_ids_s": round(built - started, 2),
        "load_snapshot_s": round(loaded - built, 2),
    }

    # The benchmark's action (testAuthorizer).
    write_args = (PRINCIPAL, "127.0.0.1", WRITE, TOPIC, PREFIX + "95")
    assert auth.authorize(*write_args) is naive.authorize(*write_args)
    row["authorize_write"] = stats(sample(lambda: auth.authorize(*write_args), count=n_fast, budget_s=10))
    row["authorize_write_result"] = auth.authorize_with_reason(*write_args).rule.value
    row["naive_authorize_write"] = stats(sample(lambda: naive.authorize(*write_args), count=200, budget_s=4))

    # A realistic allowed READ: allowed topics, cycled.
    candidates = [
        PREFIX + str(rid)
        for rid in range(layout.resources)
        if rid % 10 and rid % 5 and auth.authorize(PRINCIPAL, "10.0.0.1", READ, TOPIC, PREFIX + str(rid)) is ALLOWED
    ][:1000] or [PREFIX + "1"]
    rng = random.Random(SEED)
    names = [rng.choice(candidates) for _ in range(n_fast)]
    it = iter(names)
    row["allowed_read_topics"] = len(candidates)
    row["authorize_read"] = stats(
        sample(lambda: auth.authorize(PRINCIPAL, "10.0.0.1", READ, TOPIC, next(it)), count=n_fast, budget_s=10)
    )

    # testAuthorizeByResourceType.
    by_type_args = (PRINCIPAL, "127.0.0.2", READ, TOPIC)
    result = auth.authorize_by_resource_type(*by_type_args)
    assert result is naive.authorize_by_resource_type(*by_type_args)
    row["by_type_result"] = result.value
    row["authorize_by_resource_type"] = stats(
        sample(lambda: auth.authorize_by_resource_type(*by_type_args), count=n_fast // 5, budget_s=10)
    )
    row["naive_by_resource_type"] = stats(
        sample(lambda: naive.authorize_by_resource_type(*by_type_args), count=50, budget_s=6)
    )

    # Add and remove one ACL (a new principal on an existing resource; then the same ACL removed).
    n_changes = 2000 if quick else 5000
    new = [
        (
            uuid.uuid4(),
            AclBinding(
                TOPIC,
                PREFIX + str(1 + (i * 7919) % max(1, layout.resources - 1)),
                LITERAL,
                f"User:new-{i}",
                "*",
                WRITE,
                ALLOW,
            ),
        )
        for i in range(n_changes)
    ]
    adds = iter(new)
    removes = iter(new)
    row["add_acl"] = stats(sample(lambda: auth.add_acl(*next(adds)), count=n_changes, budget_s=30))
    row["remove_acl"] = stats(sample(lambda: auth.remove_acl(next(removes)[0]), count=n_changes, budget_s=30))
    assert auth.acl_count() == len(acls)

    # testAclsIterator: acls(ANY), materialised; and one DescribeAcls-shaped filter.
    row["acls_any_ms"] = pct(sample(lambda: list(auth.acls()), count=7, budget_s=10), 50) / 1000
    topic_filter = AclBindingFilter(TOPIC, PREFIX + "95", PatternType.MATCH)
    row["acls_match_filter_ms"] = pct(sample(lambda: list(auth.acls(topic_filter)), count=5, budget_s=10), 50) / 1000

    # Audit off / reason / on, on the realistic READ.
    row.update(audit_costs(auth, candidates, n_fast))
    gc.unfreeze()
    gc.collect()
    return row


def audit_costs(auth: StandardAuthorizer, names: list[str], count: int) -> dict[str, Any]:
    rng = random.Random(SEED + 1)
    seq = [rng.choice(names) for _ in range(count)]
    out: dict[str, Any] = {}
    it = iter(seq)
    out["audit_off"] = stats(
        sample(lambda: auth.authorize(PRINCIPAL, "10.0.0.1", READ, TOPIC, next(it)), count=count, budget_s=10)
    )
    it = iter(seq)
    out["with_reason"] = stats(
        sample(
            lambda: auth.authorize_with_reason(PRINCIPAL, "10.0.0.1", READ, TOPIC, next(it)), count=count, budget_s=10
        )
    )
    with tempfile.TemporaryDirectory(prefix="ksteward-audit-bench-") as tmp:
        writer = AuditLogWriter(tmp, max_bytes=64 << 20)
        it = iter(seq)

        def audited() -> None:
            name = next(it)
            decision = auth.authorize_with_reason(PRINCIPAL, "10.0.0.1", READ, TOPIC, name)
            writer.write(
                AuditEvent(
                    decision,
                    principal=PRINCIPAL,
                    host="10.0.0.1",
                    operation=READ,
                    resource_type=TOPIC,
                    resource_name=name,
                    method_name="kafka.Fetch",
                )
            )

        out["audit_on"] = stats(sample(audited, count=count, budget_s=10))
        writer.flush()
        # The rendering the writer thread does, measured alone: render+write N events in this thread.
        n_render = 20000
        for name in seq[:n_render]:
            writer._queue.append(
                AuditEvent(
                    auth.authorize_with_reason(PRINCIPAL, "10.0.0.1", READ, TOPIC, name),
                    principal=PRINCIPAL,
                    host="10.0.0.1",
                    operation=READ,
                    resource_type=TOPIC,
                    resource_name=name,
                    method_name="kafka.Fetch",
                )
            )
        t0 = time.perf_counter_ns()
        writer.flush()
        out["audit_render_us_per_event"] = (time.perf_counter_ns() - t0) / n_render / 1000
        writer.close()
        out["audit_bytes_per_event"] = sum(p.stat().st_size for p in Path(tmp).glob("audit*.log")) // (
            n_render + out["audit_on"]["n"]
        )
    return out


# --- memory (child process) ----------------------------------------------------------------------


def _rss_bytes() -> int:
    return int(Path("/proc/self/status").read_text().split("VmRSS:")[1].split()[0]) * 1024


def rss_child(target: int) -> dict[str, Any]:
    """The same build as :func:`memory_child` without tracemalloc: resident-set growth as a cross-check."""
    layout = Layout("realistic", int(target / 12) + 1, 10, 20, wildcard_section=False)
    gc.disable()
    before = _rss_bytes()
    pairs = [(uuid.uuid4(), acl) for acl in build_layout(layout)[:target]]
    after_pairs = _rss_bytes()
    auth = StandardAuthorizer()
    auth.load_snapshot(pairs)
    after_index = _rss_bytes()
    count = auth.acl_count()
    return {
        "rss_index_bytes_per_acl": round((after_index - after_pairs) / count, 1),
        "rss_total_bytes_per_acl": round((after_index - before) / count, 1),
        "rss_total_mib": round((after_index - before) / 2**20, 1),
    }


def memory_child(target: int) -> dict[str, Any]:
    """Build ``target`` ACLs in the realistic layout (10 per resource, 20% deny) under tracemalloc."""
    resources = int(target / 12) + 1
    layout = Layout("realistic", resources, 10, 20, wildcard_section=False)
    gc.disable()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    acls = build_layout(layout)[:target]
    after_bindings = tracemalloc.get_traced_memory()[0]
    ids = [uuid.uuid4() for _ in acls]
    after_ids = tracemalloc.get_traced_memory()[0]
    pairs = list(zip(ids, acls, strict=True))
    after_pairs = tracemalloc.get_traced_memory()[0]
    auth = StandardAuthorizer()
    t0 = time.perf_counter()
    auth.load_snapshot(pairs)
    load_s = time.perf_counter() - t0
    after_index = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    count = auth.acl_count()
    index_bytes = after_index - after_pairs
    return {
        "acl_count": count,
        "index_bytes_per_acl": round(index_bytes / count, 1),
        "bindings_bytes_per_acl": round((after_bindings - base) / count, 1),
        "ids_bytes_per_acl": round((after_ids - after_bindings) / count, 1),
        "total_bytes_per_acl": round((after_bindings - base + after_ids - after_bindings + index_bytes) / count, 1),
        "load_snapshot_s_under_tracemalloc": round(load_s, 2),
    }


def measure_memory(target: int) -> dict[str, Any]:
    """Both children, each in a fresh process so earlier layouts leave no fragmentation behind."""
    result: dict[str, Any] = {}
    for flag in ("--memory-child", "--rss-child"):
        command = [sys.executable, "-m", "bench.authorizer", flag, str(target)]
        out = subprocess.run(command, cwd=REPO, capture_output=True, text=True, check=True)
        result.update(json.loads(out.stdout.strip().splitlines()[-1]))
    return result


# --- main ----------------------------------------------------------------------------------------


def layouts(quick: bool) -> list[Layout]:
    sizes = (10_000,) if quick else (10_000, 50_000, 200_000)
    out = [Layout(f"kafka {n // 1000}k x10 {d}%", n, 10, d, True) for n in sizes for d in (20, 99)]
    out += [Layout(f"realistic {n // 1000}k x10 20%", n, 10, 20, False) for n in sizes]
    return out


def pin_one_core() -> int | None:
    try:
        cpus = sorted(os.sched_getaffinity(0))
        os.sched_setaffinity(0, {cpus[-1]})
        return cpus[-1]
    except (AttributeError, OSError):
        return None


def main(argv: list[str] | None = None) -> None:
    cli = parser(__doc__, "authorizer", "10k-resource layouts and memory at 200,000 ACLs", keep=False)
    cli.add_argument("--memory-child", type=int, help=argparse.SUPPRESS)
    cli.add_argument("--rss-child", type=int, help=argparse.SUPPRESS)
    args = cli.parse_args(argv)
    if args.memory_child:
        print(json.dumps(memory_child(args.memory_child)))
        return
    if args.rss_child:
        print(json.dumps(rss_child(args.rss_child)))
        return

    cpu = pin_one_core()
    started = time.perf_counter()
    facts = machine_facts()
    timer_ns = timer_overhead_ns()
    rows = []
    for layout in layouts(args.quick):
        print(f"... {layout.name}", file=sys.stderr, flush=True)
        rows.append(run_layout(layout, args.quick))
    memory_target = 200_000 if args.quick else 1_000_000
    print(f"... memory at {memory_target:,} ACLs", file=sys.stderr, flush=True)
    memory = measure_memory(memory_target)

    def flat(row: dict[str, Any]) -> dict[str, object]:
        return {
            "layout": row["layout"],
            "acls": row["acl_count"],
            "load_s": row["load_snapshot_s"],
            "w50": row["authorize_write"]["p50_us"],
            "w99": row["authorize_write"]["p99_us"],
            "nw50": row["naive_authorize_write"]["p50_us"] / 1000,
            "wx": row["naive_authorize_write"]["p50_us"] / row["authorize_write"]["p50_us"],
            "r50": row["authorize_read"]["p50_us"],
            "r99": row["authorize_read"]["p99_us"],
            "t50": row["authorize_by_resource_type"]["p50_us"],
            "t99": row["authorize_by_resource_type"]["p99_us"],
            "nt50": row["naive_by_resource_type"]["p50_us"] / 1000,
            "tx": row["naive_by_resource_type"]["p50_us"] / row["authorize_by_resource_type"]["p50_us"],
            "add50": row["add_acl"]["p50_us"],
            "add99": row["add_acl"]["p99_us"],
            "rm50": row["remove_acl"]["p50_us"],
            "rm99": row["remove_acl"]["p99_us"],
            "any_ms": row["acls_any_ms"],
            "off50": row["audit_off"]["p50_us"],
            "why50": row["with_reason"]["p50_us"],
            "on50": row["audit_on"]["p50_us"],
            "on99": row["audit_on"]["p99_us"],
            "render": row["audit_render_us_per_event"],
        }

    flat_rows = [flat(r) for r in rows]
    print()
    print(table("authorize / authorize_by_resource_type (µs unless noted; naive = linear scan in the same run, "
                "x = naive / indexed)", AUTHORIZE_COLUMNS, flat_rows))  # fmt: skip
    print()
    print(table("changes, acls(ANY), audit (µs unless noted; audit on = authorize_with_reason + AuditEvent + write)",
                CHANGE_COLUMNS, flat_rows))  # fmt: skip
    print()
    print(table(f"memory at {memory['acl_count']:,} ACLs, realistic layout (bytes per ACL: tracemalloc; RSS growth "
                "without tracemalloc as a cross-check)", MEMORY_COLUMNS, [memory]))  # fmt: skip
    targets = {"authorize_p50_us_max": 10, "by_resource_type_p50_us_max": 50, "add_remove_p50_us_max": 20,
               "bytes_per_acl_max": 600}  # fmt: skip
    worst = {
        "authorize_p50_us": max(max(r["w50"], r["r50"]) for r in flat_rows),  # type: ignore[type-var]
        "by_resource_type_p50_us": max(r["t50"] for r in flat_rows),  # type: ignore[type-var]
        "add_remove_p50_us": max(max(r["add50"], r["rm50"]) for r in flat_rows),  # type: ignore[type-var]
        "index_bytes_per_acl": memory["index_bytes_per_acl"],
        "total_bytes_per_acl": memory["total_bytes_per_acl"],
    }
    print()
    print(f"targets {targets}")
    print(f"worst   {worst}")
    elapsed_s = round(time.perf_counter() - started, 1)
    parameters = {"quick": args.quick, "seed": SEED, "layouts": [r["layout"] for r in rows],
                  "memory_target_acls": memory_target}  # fmt: skip
    write_document(args.out, "authorizer", {
        "machine": {**facts, "pinned_cpu": cpu, "timer_ns": timer_ns}, "parameters": parameters, "targets": targets,
        "worst": worst, "layouts": rows, "memory": memory, "elapsed_s": elapsed_s,
    })  # fmt: skip
    print(f"\nwrote {args.out} in {elapsed_s} s", file=sys.stderr)


AUTHORIZE_COLUMNS = [
    ("layout", "layout"), ("ACLs", "acls"), ("load s", "load_s"), ("WRITE p50", "w50"), ("p99", "w99"),
    ("naive ms", "nw50"), ("x", "wx"), ("READ p50", "r50"), ("p99", "r99"), ("by-type p50", "t50"), ("p99", "t99"),
    ("naive ms", "nt50"), ("x", "tx"),
]  # fmt: skip
CHANGE_COLUMNS = [
    ("layout", "layout"), ("add p50", "add50"), ("p99", "add99"), ("remove p50", "rm50"), ("p99", "rm99"),
    ("acls(ANY) ms", "any_ms"), ("audit off p50", "off50"), ("reason p50", "why50"), ("audit on p50", "on50"),
    ("p99", "on99"), ("render/event", "render"),
]  # fmt: skip
MEMORY_COLUMNS = [
    ("index", "index_bytes_per_acl"), ("bindings", "bindings_bytes_per_acl"), ("UUID ids", "ids_bytes_per_acl"),
    ("total", "total_bytes_per_acl"), ("RSS index", "rss_index_bytes_per_acl"),
    ("RSS total", "rss_total_bytes_per_acl"),
]  # fmt: skip


if __name__ == "__main__":
    main()
