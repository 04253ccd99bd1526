"""Metrics benchmarks: request throughput and instructions per request with the metrics on and off; one scrape of a
large node.

    .venv/bin/python -m bench.metrics            # every section (about 6-7 minutes on 2 cores)
    .venv/bin/python -m bench.metrics --quick    # smoke test (about 5 minutes, 4 of them under valgrind)
    .venv/bin/python -m bench.metrics --only scrape
    .venv/bin/python -m bench.metrics --only instructions   # needs valgrind (about 4-5 minutes)

Prints one table per section and writes ``bench/results/metrics.json``.

1. ``throughput``: servers identical but for ``metrics.port``, ``--processes`` of each (3 by default):
   ApiVersions v3 and DescribeAcls v3 (the StandardAuthorizer on, so every DescribeAcls is one authorization
   and one error code), with 1 and 50 connections, closed loop. Two processes running the same code differ by
   up to a few per cent on this machine, steadily over a run, so each cell is shared by all the processes of
   its kind; its ``process spread`` column shows how far apart they were. Cells are interleaved round by round
   and process by process (off, on, off, on, ...; the other way round every second time). While a metrics-on
   server is loaded, its ``/metrics`` is scraped once a second, as a busy Prometheus would. Goal: metrics on
   at most 5% slower.
2. ``scrape``: a server started from a snapshot of 10,000 topics (3 partitions each) and 100,000 ACLs, with
   the authorizer and the metrics on. After some requests of each kind, ``/metrics`` is scraped
   ``--scrapes`` times, one after the other; each scrape is timed from the request's first byte to the
   response's last. Goal: at most 50 ms.
3. ``instructions``: a metrics-off and a metrics-on server under valgrind's callgrind (``_harness/callgrind``),
   the same ApiVersions v3 and DescribeAcls v3 requests on 50 connections to each, and the user-space
   instructions each executes per request (median of rounds). Where the machine's noise swamps a few per cent of
   CPU time, this count does not move; off / on is the throughput ratio if time followed instructions. Skipped
   when valgrind is not installed.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench._harness import callgrind
from bench._harness.load import LoadResult, cell_stats, closed_loop, merge, process_stats, round_counts, split
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
    processes: int  # server processes of each kind (metrics off, on), sharing each cell
    instr_requests: int  # instructions section: requests per round
    instr_rounds: int
    instr_warmup: int

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> Params:
        quick = bool(args.quick)
        return cls(
            quick=quick,
            sections=tuple(args.only or SECTIONS),
            requests_1=args.requests_1 or (2_000 if quick else 40_000),
            requests_50=args.requests_50 or (10_000 if quick else 300_000),
            rounds=args.rounds,
            warmup=200 if quick else 1_000,
            scrape_interval_s=args.scrape_interval,
            topics=args.topics if args.topics is not None else (1_000 if quick else 10_000),
            acls=args.acls if args.acls is not None else (10_000 if quick else 100_000),
            scrapes=args.scrapes or (5 if quick else 30),
            cell_seconds=args.cell_seconds,
            processes=args.processes,
            instr_requests=1_000 if quick else 6_000,
            instr_rounds=2 if quick else 3,
            instr_warmup=500 if quick else 2_000,
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


class Scraper:
    """Scrapes one server once every ``interval_s`` seconds *of its load*: the time until the next scrape carries
    over from one cell to the next, so that short cells are not each scraped at their start (which would scrape
    far more often than once a second)."""

    def __init__(self, port: int, interval_s: float) -> None:
        self.port = port
        self.interval_s = interval_s
        self.next_in_s = interval_s
        self.scrapes = 0

    async def run(self) -> None:
        """Until cancelled (at the end of a cell)."""
        while True:
            started = time.perf_counter()
            try:
                await asyncio.sleep(self.next_in_s)
            except asyncio.CancelledError:
                self.next_in_s = max(self.next_in_s - (time.perf_counter() - started), 0.0)
                raise
            self.next_in_s = self.interval_s
            await scrape(self.port)
            self.scrapes += 1


# --- 1. throughput with the metrics on and off ------------------------------------------------------------

CELL_COLUMNS = [
    ("api", "api"), ("conns", "connections"), ("metrics", "metrics"), ("requests", "requests"), ("failed", "failed"),
    ("req/s", "per_s"), ("rounds req/s", "rounds"), ("p50 ms", "p50_ms"), ("p99 ms", "p99_ms"),
    ("server us/req", "server_cpu_us_per_req"), ("client us/req", "client_cpu_us_per_req"),
    ("processes req/s", "processes"), ("process spread", "process_spread"),
]  # fmt: skip
RATIO_COLUMNS = [
    ("api", "api"), ("conns", "connections"), ("off req/s", "off_per_s"), ("on req/s", "on_per_s"),
    ("on / off", "ratio"), ("median round on / off", "round_ratio"), ("off us/req", "off_us"), ("on us/req", "on_us"),
]  # fmt: skip


async def section_throughput(p: Params, workdir: Path) -> dict[str, Any]:
    ports = free_ports(p.processes)
    servers = {
        "off": [ServerProcess(workdir, f"metrics-off-{k}", overrides=AUTHORIZER) for k in range(p.processes)],
        "on": [ServerProcess(workdir, f"metrics-on-{k}", overrides={**AUTHORIZER, "metrics.port": str(port)})
               for k, port in enumerate(ports)],
    }  # fmt: skip
    apis = [("ApiVersions v3", api_versions_frame(), api_versions_ok),
            ("DescribeAcls v3", describe_acls_frame(), describe_acls_ok)]  # fmt: skip
    pairs = [(label, frame, check, conns) for label, frame, check in apis for conns in (1, 50)]
    # results[(pair, mode)][process]: that process's rounds
    results: dict[tuple[int, str], list[list[LoadResult]]] = {
        (i, mode): [[] for _ in range(p.processes)] for i in range(len(pairs)) for mode in servers
    }
    everyone = [s for group in servers.values() for s in group]
    scrapers = [Scraper(port, p.scrape_interval_s) for port in ports]
    try:
        await asyncio.gather(*(s.start() for s in everyone))
        for _label, frame, check, conns in pairs:
            warm = [with_correlation_id(frame, -1 - i) for i in range(p.warmup)]
            for s in everyone:
                await closed_loop(s, split(warm, conns), check=check, budget_s=10.0)
        for r in range(p.rounds):
            for i, (_label, frame, check, conns) in enumerate(pairs):
                count = round_counts(p.requests_1 if conns == 1 else p.requests_50, p.rounds)[r]
                for k, share in enumerate(round_counts(count, p.processes)):
                    # Off then on in even rounds, on then off in odd ones: neither side always runs second.
                    for mode in ("off", "on") if (r + k) % 2 == 0 else ("on", "off"):
                        frames = [with_correlation_id(frame, n) for n in range(share)]
                        scraper = None
                        if mode == "on":
                            scraper = asyncio.ensure_future(scrapers[k].run())
                        try:
                            result = await closed_loop(servers[mode][k], split(frames, conns), check=check,
                                                       budget_s=p.cell_seconds / p.rounds / p.processes)  # fmt: skip
                        finally:
                            if scraper is not None:
                                scraper.cancel()
                        results[(i, mode)][k].append(result)
            print(f"  round {r + 1}/{p.rounds} done", flush=True)
        await asyncio.gather(*(s.stop() for s in everyone))
    finally:
        for s in everyone:
            s.kill()
    rows = []
    for i, (label, _, _, conns) in enumerate(pairs):
        for mode in ("off", "on"):
            by_process = results[(i, mode)]
            # A round's figure: every process's share of that round together.
            rounds = [merge([parts[r] for parts in by_process]) for r in range(p.rounds)]
            rows.append({"api": label, "connections": conns, "metrics": mode, **cell_stats(merge(rounds), rounds),
                         **process_stats(by_process)})  # fmt: skip
    ratios = [on_off_ratio(off, on) for off, on in zip(rows[0::2], rows[1::2], strict=True)]
    print()
    title = (f"1. Throughput, metrics off and on ({p.processes} server processes of each; each cell in {p.rounds} "
             f"interleaved rounds shared by its processes; a metrics-on server scraped every "
             f"{p.scrape_interval_s:g} s while loaded)")  # fmt: skip
    print(table(title, CELL_COLUMNS, rows))
    print()
    print(table("   Metrics on / off, same run (goal: at least 0.95)", RATIO_COLUMNS, ratios))
    problems = [f"{r['api']}, {r['connections']} conn(s), metrics {r['metrics']}: {r['failed']} failed"
                for r in rows if r["failed"]]  # fmt: skip
    problems += [f"{r['api']}, {r['connections']} conn(s), metrics {r['metrics']}: stopped by the time budget"
                 for r in rows if r["truncated"]]  # fmt: skip
    problems += [f"{s.name} server log: {line}" for s in everyone for line in s.log_errors()]
    warn(problems)
    return {
        "cells": rows,
        "ratios": ratios,
        "scrapes_during_load": sum(x.scrapes for x in scrapers),
        "problems": problems,
    }


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


# --- 3. instructions per request, metrics on and off -----------------------------------------------------

INSTRUCTION_COLUMNS = [
    ("api", "api"), ("conns", "connections"), ("requests", "requests"), ("off instr/req", "off"),
    ("on instr/req", "on"), ("on / off", "ratio"), ("throughput bound", "bound"),
]  # fmt: skip


async def section_instructions(p: Params, workdir: Path) -> dict[str, Any]:
    """The same requests to a metrics-off and a metrics-on server under callgrind: user-space instructions
    per request, which do not move with the machine's load as its CPU time does."""
    reason = callgrind.missing()
    if reason is not None:
        print(f"\n3. Instructions per request: skipped, {reason}")
        return {"skipped": reason}
    [port] = free_ports(1)
    servers = {"off": callgrind.CallgrindServer(workdir, "instructions-off", overrides=AUTHORIZER),
               "on": callgrind.CallgrindServer(workdir, "instructions-on",
                                               overrides={**AUTHORIZER, "metrics.port": str(port)})}  # fmt: skip
    apis = [("ApiVersions v3", api_versions_frame(), api_versions_ok),
            ("DescribeAcls v3", describe_acls_frame(), describe_acls_ok)]  # fmt: skip
    conns = 50
    rows = []
    try:
        await asyncio.gather(*(s.start(timeout=900.0) for s in servers.values()))
        for label, frame, check in apis:
            per_request: dict[str, list[float]] = {"off": [], "on": []}
            warm = [with_correlation_id(frame, -1 - i) for i in range(p.instr_warmup)]
            frames = [with_correlation_id(frame, i) for i in range(p.instr_requests)]
            for mode, server in servers.items():
                await closed_loop(server, split(warm, conns), check=check, budget_s=1800.0)
                for _ in range(p.instr_rounds):
                    await server.instructions()
                    result = await closed_loop(server, split(frames, conns), check=check, budget_s=1800.0)
                    if result.ok != len(frames):
                        raise RuntimeError(f"{label}, metrics {mode}: {result.ok} of {len(frames)} answered")
                    per_request[mode].append(await server.instructions() / len(frames))
            off, on = median(per_request["off"]), median(per_request["on"])
            rows.append({"api": label, "connections": conns, "requests": p.instr_requests * p.instr_rounds,
                         "off": round(off), "on": round(on), "ratio": round(on / off, 4),
                         "bound": round(off / on, 3), "rounds_off": [round(x) for x in per_request["off"]],
                         "rounds_on": [round(x) for x in per_request["on"]]})  # fmt: skip
        await asyncio.gather(*(s.stop(timeout=600.0) for s in servers.values()))
    finally:
        for s in servers.values():
            s.kill()
    print()
    title = (f"3. Instructions per request under callgrind (user space; median of {p.instr_rounds} rounds of "
             f"{p.instr_requests} requests after {p.instr_warmup} to warm up; no scrape). 'throughput bound': "
             "off / on, the throughput ratio if time followed instructions")  # fmt: skip
    print(table(title, INSTRUCTION_COLUMNS, rows))
    problems = [f"{s.name} server log: {line}" for s in servers.values() for line in s.log_errors()]
    warn(problems)
    return {"rows": rows, "problems": problems}


# --- main ---------------------------------------------------------------------------------------------

SECTIONS = {"throughput": section_throughput, "scrape": section_scrape, "instructions": section_instructions}
BENCHMARK = Benchmark("metrics", "metrics", section_timeout_s=None)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    p = Params.from_args(args)
    return BENCHMARK.main(args, p, {name: run for name, run in SECTIONS.items() if name in p.sections})


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    out = parser(__doc__, "metrics", "smoke test with small counts (about 5 minutes, 4 of them under valgrind)")
    add = out.add_argument
    add("--only", action="append", choices=list(SECTIONS), help="run only this section (repeatable)")
    add("--requests-1", type=int, help="requests per cell with 1 connection (default 40000, quick 2000)")
    add("--requests-50", type=int, help="requests per cell with 50 connections (default 300000, quick 10000)")
    add("--rounds", type=int, default=6, help="interleaved rounds per cell (default 6)")
    add("--scrape-interval", type=float, default=1.0, help="seconds between scrapes under load (default 1)")
    add("--topics", type=int, help="scrape section: topics (default 10000, quick 1000)")
    add("--acls", type=int, help="scrape section: ACLs (default 100000, quick 10000)")
    add("--scrapes", type=int, help="scrape section: timed scrapes (default 30, quick 5)")
    add("--cell-seconds", type=float, default=120.0, help="time budget per cell (default 120)")
    add(
        "--processes",
        type=int,
        default=3,
        help="throughput: server processes with the metrics off, and as many "
        "with them on; each cell is shared among them (default 3)",
    )
    return out.parse_args(argv)


if __name__ == "__main__":
    sys.exit(main())
