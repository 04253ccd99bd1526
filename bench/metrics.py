"""Metrics benchmarks: request throughput with the metrics endpoint on and off, and one scrape of a large node.

    .venv/bin/python -m bench.metrics            # both sections (about 3 minutes on 2 cores)
    .venv/bin/python -m bench.metrics --quick    # smoke test (about 40 seconds)
    .venv/bin/python -m bench.metrics --only scrape

Prints one table per section and writes ``bench/results/metrics.json``.

1. ``throughput``: two servers in the same run, identical but for ``metrics.port``: ApiVersions v3 and
   DescribeAcls v3 (the StandardAuthorizer on, so every DescribeAcls is one authorization and one error code),
   with 1 and 50 connections, closed loop. Cells are interleaved round by round (off, on, off, on, ...; in
   odd rounds each pair runs on first). While
   a metrics-on cell runs, ``/metrics`` is scraped once a second, as a busy Prometheus would. Goal: metrics on
   at most 5% slower.
2. ``scrape``: a server started from a snapshot of 10,000 topics (3 partitions each) and 100,000 ACLs, with
   the authorizer and the metrics on. After some requests of each kind, ``/metrics`` is scraped
   ``--scrapes`` times, one after the other; each scrape is timed from the request's first byte to the
   response's last. Goal: at most 50 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench._harness.load import LoadResult, cell_stats, closed_loop, merge, round_counts, split
from bench._harness.report import median, table, warn
from bench._harness.runner import Benchmark, parser
from bench._harness.server import ServerProcess
from bench._harness.snapshot import build_snapshot_dir
from bench._harness.wire import CLIENT_ID, HOST, encode_request, free_ports, with_correlation_id
from ksteward.protocol.apis import ApiKey

AUTHORIZER = {
    "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "super.users": "User:ANONYMOUS",
}
ANY = 1


@dataclass(frozen=True)
class Params:
    quick: bool
    sections: tuple[str, ...]
    requests_1: int  # requests per cell with 1 connection
    requests_50: int  # requests per cell with 50 connections
    rounds: int
    warmup: int
    scrape_interval_s: float  # scrapes of the metrics-on server while its cells run
    topics: int  # scrape section: topics in the snapshot (3 partitions each)
    acls: int  # scrape section: ACLs in the snapshot
    scrapes: int  # scrape section: timed scrapes
    cell_seconds: float

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> Params:
        quick = bool(args.quick)
        return cls(
            quick=quick,
            sections=tuple(args.only or SECTIONS),
            requests_1=args.requests_1 or (2_000 if quick else 20_000),
            requests_50=args.requests_50 or (5_000 if quick else 50_000),
            rounds=args.rounds,
            warmup=200 if quick else 1_000,
            scrape_interval_s=args.scrape_interval,
            topics=args.topics if args.topics is not None else (1_000 if quick else 10_000),
            acls=args.acls if args.acls is not None else (10_000 if quick else 100_000),
            scrapes=args.scrapes or (5 if quick else 30),
            cell_seconds=args.cell_seconds,
        )


# --- wire ---------------------------------------------------------------------------------------------


def api_versions_frame() -> bytes:
    return encode_request(ApiKey.API_VERSIONS, 3, {"client_software_name": CLIENT_ID, "client_software_version": "1"})


def describe_acls_frame() -> bytes:
    values = {"resource_type_filter": ANY, "resource_name_filter": None, "pattern_type_filter": ANY,
              "principal_filter": None, "host_filter": None, "operation": ANY, "permission_type": ANY}  # fmt: skip
    return encode_request(ApiKey.DESCRIBE_ACLS, 3, values)


def api_versions_ok(payload: bytes) -> bool:
    return payload[4:6] == b"\x00\x00"  # response header v0, then the error code


def describe_acls_ok(payload: bytes) -> bool:
    return payload[9:11] == b"\x00\x00"  # header v1 (correlation id, no tags), throttle time, then the error code


async def scrape(port: int, timeout: float = 60.0) -> tuple[float, bytes]:
    """One ``GET /metrics``: (seconds from the request's first byte to the response's last, the body)."""
    reader, writer = await asyncio.open_connection(HOST, port)
    try:
        started = time.perf_counter()
        writer.write(f"GET /metrics HTTP/1.1\r\nHost: {HOST}:{port}\r\n\r\n".encode())
        response = await asyncio.wait_for(reader.read(), timeout)  # the server closes after its answer
        seconds = time.perf_counter() - started
    finally:
        writer.close()
    head, _, body = response.partition(b"\r\n\r\n")
    if not head.startswith(b"HTTP/1.1 200"):
        raise RuntimeError(f"/metrics answered {head[:40]!r}")
    return seconds, body


async def scrape_every(port: int, interval_s: float, count: list[int]) -> None:
    while True:
        await scrape(port)
        count[0] += 1
        await asyncio.sleep(interval_s)


# --- 1. throughput with the metrics on and off ------------------------------------------------------------

CELL_COLUMNS = [
    ("api", "api"), ("conns", "connections"), ("metrics", "metrics"), ("requests", "requests"), ("failed", "failed"),
    ("req/s", "per_s"), ("rounds req/s", "rounds"), ("p50 ms", "p50_ms"), ("p99 ms", "p99_ms"),
    ("server us/req", "server_cpu_us_per_req"), ("client us/req", "client_cpu_us_per_req"),
]  # fmt: skip
RATIO_COLUMNS = [
    ("api", "api"), ("conns", "connections"), ("off req/s", "off_per_s"), ("on req/s", "on_per_s"),
    ("on / off", "ratio"), ("median round on / off", "round_ratio"), ("off us/req", "off_us"), ("on us/req", "on_us"),
]  # fmt: skip


async def section_throughput(p: Params, workdir: Path) -> dict[str, Any]:
    metrics_port = free_ports(1)[0]
    servers = {
        "off": ServerProcess(workdir, "metrics-off", overrides=AUTHORIZER),
        "on": ServerProcess(workdir, "metrics-on", overrides={**AUTHORIZER, "metrics.port": str(metrics_port)}),
    }
    apis = [("ApiVersions v3", api_versions_frame(), api_versions_ok),
            ("DescribeAcls v3", describe_acls_frame(), describe_acls_ok)]  # fmt: skip
    cells = [(label, frame, check, conns, mode) for label, frame, check in apis
             for conns in (1, 50) for mode in ("off", "on")]  # fmt: skip
    rounds: dict[int, list[LoadResult]] = {i: [] for i in range(len(cells))}
    scrapes = [0]
    try:
        await asyncio.gather(*(s.start() for s in servers.values()))
        for _label, frame, check, conns, mode in cells:
            warm = [with_correlation_id(frame, -1 - i) for i in range(p.warmup)]
            await closed_loop(servers[mode], split(warm, conns), check=check, budget_s=10.0)
        for r in range(p.rounds):
            # Off then on in even rounds, on then off in odd ones: neither side always runs second.
            order = [i ^ (r % 2) for i in range(len(cells))]
            for index in order:
                _label, frame, check, conns, mode = cells[index]
                count = round_counts(p.requests_1 if conns == 1 else p.requests_50, p.rounds)[r]
                frames = [with_correlation_id(frame, i) for i in range(count)]
                scraper = None
                if mode == "on":
                    scraper = asyncio.ensure_future(scrape_every(metrics_port, p.scrape_interval_s, scrapes))
                try:
                    result = await closed_loop(servers[mode], split(frames, conns), check=check,
                                               budget_s=p.cell_seconds / p.rounds)  # fmt: skip
                finally:
                    if scraper is not None:
                        scraper.cancel()
                rounds[index].append(result)
            print(f"  round {r + 1}/{p.rounds} done", flush=True)
        await asyncio.gather(*(s.stop() for s in servers.values()))
    finally:
        for s in servers.values():
            s.kill()
    rows = [{"api": label, "connections": conns, "metrics": mode, **cell_stats(merge(rounds[i]), rounds[i])}
            for i, (label, _, _, conns, mode) in enumerate(cells)]  # fmt: skip
    ratios = [on_off_ratio(off, on) for off, on in zip(rows[0::2], rows[1::2], strict=True)]
    print()
    title = (f"1. Throughput, metrics off and on (each cell in {p.rounds} interleaved rounds; "
             f"the metrics-on server scraped every {p.scrape_interval_s:g} s while loaded)")  # fmt: skip
    print(table(title, CELL_COLUMNS, rows))
    print()
    print(table("   Metrics on / off, same run (goal: at least 0.95)", RATIO_COLUMNS, ratios))
    problems = [f"{r['api']}, {r['connections']} conn(s), metrics {r['metrics']}: {r['failed']} failed"
                for r in rows if r["failed"]]  # fmt: skip
    problems += [f"{r['api']}, {r['connections']} conn(s), metrics {r['metrics']}: stopped by the time budget"
                 for r in rows if r["truncated"]]  # fmt: skip
    problems += [f"{name} server log: {line}" for name, s in servers.items() for line in s.log_errors()]
    warn(problems)
    return {"cells": rows, "ratios": ratios, "scrapes_during_load": scrapes[0], "problems": problems}


def on_off_ratio(off: dict[str, Any], on: dict[str, Any]) -> dict[str, Any]:
    """Metrics on / off for one (api, connections): overall, and the median of the per-round ratios (each round
    measures off and on back to back, so a neighbour's burst hits both)."""
    round_ratios = [b / a for a, b in zip(off["round_per_s"], on["round_per_s"], strict=True) if a]
    return {
        "api": off["api"], "connections": off["connections"], "off_per_s": off["per_s"], "on_per_s": on["per_s"],
        "ratio": round(on["per_s"] / off["per_s"], 3) if off["per_s"] else None,
        "round_ratio": round(median(round_ratios), 3) if round_ratios else None,
        "off_us": off["server_cpu_us_per_req"], "on_us": on["server_cpu_us_per_req"],
    }  # fmt: skip


# --- 2. one scrape at 100,000 ACLs and 10,000 topics ----------------------------------------------------

SCRAPE_COLUMNS = [
    ("topics", "topics"), ("ACLs", "acls"), ("scrapes", "scrapes"), ("median ms", "median_ms"), ("p90 ms", "p90_ms"),
    ("max ms", "max_ms"), ("server CPU ms/scrape", "server_cpu_ms"), ("bytes", "bytes"), ("samples", "series"),
]  # fmt: skip


async def section_scrape(p: Params, workdir: Path) -> dict[str, Any]:
    from prometheus_client.parser import text_string_to_metric_families

    port, controller_port = free_ports(2)
    metrics_port = free_ports(1)[0]
    # One principal per ACL: every ACL distinct (the default layout repeats after 30,000).
    build = await build_snapshot_dir(workdir, "scrape-data", (port, controller_port), p.topics, 0, p.acls,
                                     principals=p.acls)  # fmt: skip
    server = ServerProcess(workdir, "scrape", data_dir=build.data_dir, ports=(port, controller_port),
                           overrides={**AUTHORIZER, "metrics.port": str(metrics_port)})  # fmt: skip
    try:
        await server.start(timeout=900.0)
        for frame, check in ((api_versions_frame(), api_versions_ok), (describe_acls_frame(), None)):
            frames = [with_correlation_id(frame, i) for i in range(20)]
            await closed_loop(server, split(frames, 2), check=check, budget_s=300.0)
        _, body = await scrape(metrics_port)  # the first one fills the rate windows
        times = []
        cpu0 = server.cpu_seconds()
        for _ in range(p.scrapes):
            seconds, body = await scrape(metrics_port)
            times.append(seconds * 1000)
        cpu_ms = (server.cpu_seconds() - cpu0) * 1000 / p.scrapes
        await server.stop()
    finally:
        server.kill()
    families = list(text_string_to_metric_families(body.decode()))
    samples = {s.name: s.value for f in families for s in f.samples if not s.labels}
    served = {
        "topics": int(samples.get("kafka_controller_kafkacontroller_globaltopiccount", -1)),
        "acls": int(samples.get("kafka_server_kafka_security_authorizer_metrics_acls_total_count", -1)),
    }
    ordered = sorted(times)
    row = {**served, "scrapes": p.scrapes, "median_ms": round(median(times), 2),
           "p90_ms": round(ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))], 2),
           "max_ms": round(max(times), 2), "server_cpu_ms": round(cpu_ms, 2), "bytes": len(body),
           "series": sum(len(f.samples) for f in families)}  # fmt: skip
    print()
    print(table("2. One scrape of /metrics, timed by the scraper (goal: at most 50 ms)", SCRAPE_COLUMNS, [row]))
    problems = [f"the node serves {served[k]} {k}, the snapshot holds {want}"
                for k, want in (("topics", p.topics), ("acls", p.acls)) if served[k] != want]  # fmt: skip
    problems += [f"server log: {line}" for line in server.log_errors()]
    warn(problems)
    return {"row": row, "times_ms": [round(t, 3) for t in times], "problems": problems,
            "snapshot": {"records": build.records, "bytes": build.bytes}}  # fmt: skip


# --- main ---------------------------------------------------------------------------------------------

SECTIONS = {"throughput": section_throughput, "scrape": section_scrape}
BENCHMARK = Benchmark("metrics", "metrics", section_timeout_s=None)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    p = Params.from_args(args)
    return BENCHMARK.main(args, p, {name: run for name, run in SECTIONS.items() if name in p.sections})


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    out = parser(__doc__, "metrics", "smoke test with small counts (about 40 seconds)")
    add = out.add_argument
    add("--only", action="append", choices=list(SECTIONS), help="run only this section (repeatable)")
    add("--requests-1", type=int, help="requests per cell with 1 connection (default 20000, quick 2000)")
    add("--requests-50", type=int, help="requests per cell with 50 connections (default 50000, quick 5000)")
    add("--rounds", type=int, default=3, help="interleaved rounds per cell (default 3)")
    add("--scrape-interval", type=float, default=1.0, help="seconds between scrapes under load (default 1)")
    add("--topics", type=int, help="scrape section: topics (default 10000, quick 1000)")
    add("--acls", type=int, help="scrape section: ACLs (default 100000, quick 10000)")
    add("--scrapes", type=int, help="scrape section: timed scrapes (default 30, quick 5)")
    add("--cell-seconds", type=float, default=120.0, help="time budget per cell (default 120)")
    return out.parse_args(argv)


if __name__ == "__main__":
    sys.exit(main())
