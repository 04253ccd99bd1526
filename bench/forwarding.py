"""Forwarding benchmark (KIP-590): mutations sent direct to a combined node, and forwarded in an Envelope by
a broker-only node to a controller-only node.

    .venv/bin/python -m bench.forwarding              # about 2 minutes on 2 cores
    .venv/bin/python -m bench.forwarding --quick      # smoke test, about 15 seconds
    .venv/bin/python -m bench.forwarding --profile    # not a measurement: both cluster nodes under cProfile

Three servers run side by side for the whole benchmark: a combined node (``process.roles=broker,controller``,
the default of ``ksteward serve``) and a cluster of one controller-only node and one broker-only node. All
three run the StandardAuthorizer with ANONYMOUS a super user. Three mutations, each of which commits a
metadata record (its reply leaves after the fsync):

- ``CreateAcls v3`` with one creation, a binding new in every request;
- ``IncrementalAlterConfigs v1``, a SET of ``retention.ms`` on an existing topic, to a value new in every
  request;
- ``IncrementalAlterConfigs v1``, a SET of the cluster-wide BROKER default ``log.retention.ms`` (resource
  name ``""``), to a value new in every request;

and, as references, the topic SET with ``validate_only`` (forwarded and answered, nothing written) and an
ApiVersions round trip on the combined node (what one more loopback hop costs on this machine).

Each is sent over the harness's raw wire client (frames encoded with kio before the clock starts) as two
cells per path: latency, one connection with one request in flight, and throughput, several connections in
a closed loop. A third path, latency only, sends the same requests straight to the controller-only node
(KIP-919): it commits as the forwarded path does, with a broker following its log, but without the
envelope's hop. The cells run in interleaved rounds, and the path that goes first alternates, so noise from
the neighbours lands on every path. The ratios forwarded / direct of p50, p99 and throughput come from the
same run. Prints the tables and writes ``bench/results/forwarding.json``; ``bench/README.md`` explains them.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

from bench._harness.cluster import broker_node, combined_node, controller_node, new_cluster_id
from bench._harness.load import LoadResult, cell_stats, closed_loop, merge, round_counts, split
from bench._harness.profile import profile_text
from bench._harness.report import table, warn
from bench._harness.runner import Benchmark, add_profile_flags, parser
from bench._harness.server import ServerProcess
from bench._harness.wire import CLIENT_ID, FrameClient, decode_response, encode_request
from ksteward.protocol.apis import ApiKey

TOPIC, BROKER = 2, 4
LITERAL, ALLOW, READ = 3, 3, 3
TOPIC_NAME = "bench-forwarding"
GOAL_P50_RATIO = 1.5  # the goal: forwarded p50 <= 1.5 x direct


@dataclass(frozen=True)
class Params:
    quick: bool
    latency_requests: int  # per (API, path): one connection, one request in flight
    throughput_requests: int  # per (API, path): ``connections`` connections in a closed loop
    connections: int
    warmup: int  # per (API, path), before the first round, not counted
    rounds: int
    cell_seconds: float

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> Params:
        quick = bool(args.quick)
        return cls(
            quick=quick,
            latency_requests=args.latency_requests or (300 if quick else 3_000),
            throughput_requests=args.throughput_requests or (800 if quick else 6_000),
            connections=args.connections,
            warmup=50 if quick else 300,
            rounds=args.rounds,
            cell_seconds=args.cell_seconds,
        )


# --- requests -------------------------------------------------------------------------------------------


class Sequencer:
    """Fresh names and values: every request of the run is different, so every one commits a record."""

    def __init__(self) -> None:
        self.next = 0

    def take(self, count: int) -> range:
        first = self.next
        self.next += count
        return range(first, first + count)


def create_acls_frame(n: int, cid: int) -> bytes:
    creation = {"resource_type": TOPIC, "resource_name": f"bench-acl-{n:08d}", "resource_pattern_type": LITERAL,
                "principal": "User:bench", "host": "*", "operation": READ, "permission_type": ALLOW}  # fmt: skip
    return encode_request(ApiKey.CREATE_ACLS, 3, {"creations": [creation]}, correlation_id=cid)


def alter_frame(
    resource_type: int, resource_name: str, key: str, n: int, cid: int, *, validate_only: bool = False
) -> bytes:
    config = {"name": key, "config_operation": 0, "value": str(3_600_000 + n)}  # SET
    resources = [{"resource_type": resource_type, "resource_name": resource_name, "configs": [config]}]
    body = {"resources": resources, "validate_only": validate_only}
    return encode_request(ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, body, correlation_id=cid)


def create_acls_ok(payload: bytes) -> bool:
    _, body = decode_response(ApiKey.CREATE_ACLS, 3, payload)
    return len(body.results) == 1 and int(body.results[0].error_code) == 0


def alter_ok(payload: bytes) -> bool:
    _, body = decode_response(ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, payload)
    return len(body.responses) == 1 and int(body.responses[0].error_code) == 0


@dataclass(frozen=True)
class Api:
    label: str
    frame: Callable[[int, int], bytes]  # (sequence number, correlation id) -> frame
    check: Callable[[bytes], bool]


APIS = (
    Api("CreateAcls v3 (1 new binding)", create_acls_frame, create_acls_ok),
    Api("IncrementalAlterConfigs v1 (TOPIC retention.ms)",
        lambda n, cid: alter_frame(TOPIC, TOPIC_NAME, "retention.ms", n, cid), alter_ok),
    Api("IncrementalAlterConfigs v1 (BROKER default log.retention.ms)",
        lambda n, cid: alter_frame(BROKER, "", "log.retention.ms", n, cid), alter_ok),
    # Validated and answered, but nothing is written: no fsync, and no Fetch for the broker to follow.
    Api("IncrementalAlterConfigs v1 validate_only (TOPIC, commits nothing)",
        lambda n, cid: alter_frame(TOPIC, TOPIC_NAME, "retention.ms", n, cid, validate_only=True), alter_ok),
)  # fmt: skip


def api_versions_frame(n: int, cid: int) -> bytes:
    values = {"client_software_name": CLIENT_ID, "client_software_version": "1"}
    return encode_request(ApiKey.API_VERSIONS, 3, values, correlation_id=cid)


def api_versions_ok(payload: bytes) -> bool:
    return payload[4:6] == b"\x00\x00"  # response header v0, then the error code


# A round trip that commits nothing, on the combined node: what one more loopback hop costs on this machine.
REFERENCE = Api("ApiVersions v3 (reference: one round trip)", api_versions_frame, api_versions_ok)


async def create_topic(port: int) -> None:
    topic = {"name": TOPIC_NAME, "num_partitions": 1, "replication_factor": 1, "assignments": [], "configs": []}
    body = {"topics": [topic], "timeout": timedelta(seconds=30), "validate_only": False}
    client = await FrameClient.connect(port)
    try:
        payload = await client.request(encode_request(ApiKey.CREATE_TOPICS, 7, body, correlation_id=1), 60)
    finally:
        await client.aclose()
    _, response = decode_response(ApiKey.CREATE_TOPICS, 7, payload)
    assert int(response.topics[0].error_code) == 0, response.topics[0]


# --- the two paths ----------------------------------------------------------------------------------------


@dataclass
class Route:
    """Where requests go (``port``) and whose CPU they cost: the combined node, or the broker plus the
    controller it forwards to."""

    name: str
    entry: ServerProcess
    behind: ServerProcess | None = None

    @property
    def port(self) -> int:
        return self.entry.port

    def cpu_seconds(self) -> float:
        return self.entry.cpu_seconds() + (self.behind.cpu_seconds() if self.behind else 0.0)

    def servers(self) -> list[ServerProcess]:
        return [s for s in (self.entry, self.behind) if s is not None]


async def run_cell(path: Route, api: Api, seq: Sequencer, count: int, conns: int, budget_s: float) -> LoadResult:
    frames = [api.frame(n, cid) for cid, n in enumerate(seq.take(count))]
    return await closed_loop(path, split(frames, conns), check=api.check, budget_s=budget_s)


CELL_COLUMNS = [
    ("api", "api"), ("path", "path"), ("conns", "connections"), ("requests", "requests"), ("failed", "failed"),
    ("req/s", "per_s"), ("rounds req/s", "rounds"), ("p50 ms", "p50_ms"), ("p99 ms", "p99_ms"),
    ("p99.9 ms", "p999_ms"), ("client us/req", "client_cpu_us_per_req"), ("server us/req", "server_cpu_us_per_req"),
]  # fmt: skip
RATIO_COLUMNS = [
    ("api", "api"), ("direct p50 ms", "direct_p50_ms"), ("fwd p50 ms", "forwarded_p50_ms"),
    ("p50 fwd/direct", "p50_ratio"), ("p50 added ms", "p50_added_ms"),
    ("added / ApiVersions p50", "p50_added_in_round_trips"), ("on controller p50 ms", "controller_p50_ms"),
    ("direct p99 ms", "direct_p99_ms"),
    ("fwd p99 ms", "forwarded_p99_ms"),
    ("p99 fwd/direct", "p99_ratio"), ("direct req/s", "direct_per_s"), ("fwd req/s", "forwarded_per_s"),
    ("req/s fwd/direct", "throughput_ratio"), ("p50 goal <= 1.5x", "goal"),
]  # fmt: skip


async def section_forwarding(p: Params, workdir: Path) -> dict[str, Any]:
    cluster_id = new_cluster_id()
    combined = combined_node(workdir, "combined")
    controller = controller_node(workdir, "controller", cluster_id)
    broker = broker_node(workdir, "broker", cluster_id, controller, node_id=2)
    paths = [Route("direct", combined), Route("forwarded", broker, controller)]
    # Diagnostic, latency only: the same request sent straight to the controller-only node (KIP-919), which
    # commits as the forwarded path does, with a broker following its log, but without the envelope's hop.
    on_controller = Route("controller", controller)
    seqs = {api.label: Sequencer() for api in APIS}  # shared by both paths: names and values never repeat
    modes = [("latency", 1, p.latency_requests), ("throughput", p.connections, p.throughput_requests)]
    cells: dict[tuple[str, str, str], list[LoadResult]] = {}
    budget = p.cell_seconds / p.rounds
    try:
        await combined.start()
        await controller.start()
        await broker.start(timeout=120)
        for path in paths:
            await create_topic(path.port)
        for api in APIS:
            for path in paths:
                await run_cell(path, api, seqs[api.label], p.warmup, 1, budget)
        for r in range(p.rounds):
            for i, api in enumerate(APIS):
                for mode, conns, total in modes:
                    count = round_counts(total, p.rounds)[r]
                    routes = [*paths, on_controller] if mode == "latency" else paths
                    for path in routes if (r + i) % 2 == 0 else list(reversed(routes)):
                        result = await run_cell(path, api, seqs[api.label], count, conns, budget)
                        cells.setdefault((api.label, mode, path.name), []).append(result)
            count = round_counts(p.latency_requests, p.rounds)[r]
            result = await run_cell(paths[0], REFERENCE, Sequencer(), count, 1, budget)
            cells.setdefault((REFERENCE.label, "latency", paths[0].name), []).append(result)
            print(f"  round {r + 1}/{p.rounds} done", flush=True)
        await broker.stop()
        await controller.stop()
        await combined.stop()
    finally:
        for server in (broker, controller, combined):
            server.kill()
    rows = []
    for (label, mode, path_name), parts in cells.items():
        conns = 1 if mode == "latency" else p.connections
        rows.append({"api": label, "path": path_name, "mode": mode, "connections": conns,
                     **cell_stats(merge(parts), parts)})  # fmt: skip
    reference = next(r for r in rows if r["api"] == REFERENCE.label)
    ratios = [ratio_row(api.label, rows, reference["p50_ms"]) for api in APIS]
    print()
    print(table(f"Mutations, direct to a combined node and forwarded by a broker-only node ({p.rounds} interleaved "
                f"rounds; server CPU of the forwarded path = broker + controller)", CELL_COLUMNS, rows))  # fmt: skip
    print(table("\nForwarded / direct (p50, p99: one connection; req/s: "
                f"{p.connections} connections)", RATIO_COLUMNS, ratios))  # fmt: skip
    problems = [f"{r['api']}, {r['path']}, {r['connections']} connection(s): {r['failed']} failed"
                for r in rows if r["failed"]]  # fmt: skip
    problems += [f"{r['api']}, {r['path']}, {r['connections']} connection(s): stopped by the time budget after "
                 f"{r['requests']:,} requests" for r in rows if r["truncated"]]  # fmt: skip
    for server in (combined, controller, broker):
        problems += [f"{server.name} log: {line}" for line in server.log_errors()]
    warn(problems)
    met = all(r["goal"] == "PASS" for r in ratios if r["goal"] != "(reference)")
    print(f"\ngoal (forwarded p50 <= {GOAL_P50_RATIO}x direct, every committing mutation): {'PASS' if met else 'MISS'}")
    return {"cells": rows, "ratios": ratios, "goal_p50_ratio": GOAL_P50_RATIO, "goal_met": met, "problems": problems}


def ratio_row(label: str, rows: Sequence[dict[str, Any]], round_trip_p50_ms: float) -> dict[str, Any]:
    def cell(path: str, mode: str) -> dict[str, Any]:
        return next(r for r in rows if r["api"] == label and r["path"] == path and r["mode"] == mode)

    d, f, c = cell("direct", "latency"), cell("forwarded", "latency"), cell("controller", "latency")
    dt, ft = cell("direct", "throughput"), cell("forwarded", "throughput")
    p50 = round(f["p50_ms"] / d["p50_ms"], 2)
    return {
        "api": label,
        "direct_p50_ms": d["p50_ms"],
        "forwarded_p50_ms": f["p50_ms"],
        "p50_ratio": p50,
        "p50_added_ms": round(f["p50_ms"] - d["p50_ms"], 3),
        "p50_added_in_round_trips": round((f["p50_ms"] - d["p50_ms"]) / round_trip_p50_ms, 1),
        "controller_p50_ms": c["p50_ms"],
        "direct_p99_ms": d["p99_ms"],
        "forwarded_p99_ms": f["p99_ms"],
        "p99_ratio": round(f["p99_ms"] / d["p99_ms"], 2),
        "direct_per_s": dt["per_s"],
        "forwarded_per_s": ft["per_s"],
        "throughput_ratio": round(ft["per_s"] / dt["per_s"], 2) if dt["per_s"] else None,
        # The goal is on the mutations that commit; validate_only (nothing written) is a reference.
        "goal": ("PASS" if p50 <= GOAL_P50_RATIO else "MISS") if "validate_only" not in label else "(reference)",
    }


# --- --profile: where the forwarded path's time goes --------------------------------------------------------


async def profile_forwarding(p: Params, workdir: Path, lines: int) -> None:
    """Not a measurement: the broker and the controller run under ``python -m cProfile`` (their event loop is
    the main thread); ``p.latency_requests`` of each API go through the broker on one connection, then both
    stop (SIGTERM: cProfile writes its file) and the top of each profile is printed."""
    cluster_id = new_cluster_id()
    controller = controller_node(workdir, "controller", cluster_id)
    broker = broker_node(workdir, "broker", cluster_id, controller, node_id=2)
    for server in (controller, broker):
        server.python_args = ("-m", "cProfile", "-o", str(workdir / f"{server.name}.prof"))
    route = Route("forwarded", broker, controller)
    try:
        await controller.start(timeout=120)
        await broker.start(timeout=120)
        await create_topic(broker.port)
        results = []
        for api in APIS:
            seq = Sequencer()
            await run_cell(route, api, seq, p.warmup, 1, 60)
            results.append((api.label, await run_cell(route, api, seq, p.latency_requests, 1, 120)))
        await broker.stop()
        await controller.stop()
    finally:
        broker.kill()
        controller.kill()
    print(
        "PROFILE, NOT A MEASUREMENT: the broker and the controller ran under cProfile (their main thread: the "
        "event loop). Their times are inflated; only the split between functions means something."
    )
    for label, result in results:
        print(f"{label}: {result.ok:,} ok of {result.requests:,}, {result.rate:,.0f}/s under cProfile")
    for server in (broker, controller):
        print(f"\n== PROFILE: {server.name} (main thread, the whole run: start-up, warm-up, "
              f"{len(APIS)} x {p.latency_requests} requests)")  # fmt: skip
        print(profile_text(workdir / f"{server.name}.prof", lines))


BENCHMARK = Benchmark("forwarding", "forwarding")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    out = parser(__doc__, "forwarding", "smoke test with small counts (about 15 seconds)")
    add = out.add_argument
    add("--latency-requests", type=int, help="requests per API and path on 1 connection (default 3000, quick 300)")
    add("--throughput-requests", type=int, help="requests per API and path on --connections (default 6000, quick 800)")
    add("--connections", type=int, default=8, help="connections of the throughput cells (default 8)")
    add("--rounds", type=int, default=3, help="interleaved rounds per cell (default 3)")
    add("--cell-seconds", type=float, default=180.0, help="time budget per cell, all rounds (default 180)")
    add_profile_flags(out, "the broker and the controller while requests are forwarded")
    return out.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    p = Params.from_args(args)
    if args.profile:
        return BENCHMARK.profile(p.quick, lambda workdir: profile_forwarding(p, workdir, args.profile_lines))
    return BENCHMARK.main(args, p, {"forwarding": section_forwarding})


if __name__ == "__main__":
    sys.exit(main())
