"""Metrics benchmarks: request throughput and instructions per request with the metrics on and off; one scrape of a
large node.

    .venv/bin/python -m bench.metrics            # every section (about 14-15 minutes on 2 cores)
    .venv/bin/python -m bench.metrics --quick    # smoke test (about 5 minutes, 4 of them under valgrind)
    .venv/bin/python -m bench.metrics --only scrape
    .venv/bin/python -m bench.metrics --only instructions   # needs valgrind (about 4-5 minutes)

Prints one table per section and writes ``bench/results/metrics.json``.

1. ``throughput``: ApiVersions v3 and DescribeAcls v3 (the StandardAuthorizer on, so every DescribeAcls is one
   authorization and one error code), with 1 and 50 connections, closed loop, in ``--blocks`` blocks. Each block
   starts three fresh servers identical but for ``metrics.port``: ``off-a`` and ``off-b`` with the metrics off,
   ``on`` with them on. For each (api, connections) every server serves two short cells, in an order turned
   round in the middle of the block (off-a, off-b, on, on, off-b, off-a, the first server moving on each
   block), and the block gives one ratio: on / the mean of the two offs. The figure is the geometric mean of
   the blocks' ratios with a 95% bootstrap interval over the blocks. Why blocks of fresh servers: on this
   machine one server's rate moves by a tenth from one second to the next, and two processes running the same
   code differ steadily by a few per cent, so long cells on a few long-lived servers gave ratios from 0.88 to
   1.04 for the same code; short cells side by side cancel the machine's moments, and a new trio each block
   turns the processes' differences into noise the interval covers. ``off-b / off-a`` in every block is an A/A
   control: the same measure between servers that differ in nothing. While the ``on`` server is loaded, its
   ``/metrics`` is scraped once a second of its load, as a busy Prometheus would. This section has no verdict:
   its A/A control moves by 5-13% from one full run to the next on this machine (bench/README.md), as much as
   the goal, so it cannot tell a 5% cost from none; the next section can.
2. ``shared``: the goal's measure. The same three fresh servers a block (``--shared-blocks``), all pinned to
   one core, the load generator on the others; for each (api, connections) all three are loaded at once, the
   same connections each, and their answers counted in the same window (``--window`` seconds, after a warm-up
   window). Servers that share a core and are all kept busy share its time evenly, so on / off in one window
   is the ratio of what a request costs each, and a moment of the machine (a neighbour, the clock) falls on
   the three alike: the A/A control stays within a few per cent in every block. The ``on`` server is scraped
   once a second, as above. Goal: metrics on at most 5% slower (a ratio of at least 0.95). The core's time
   is split three ways, so every rate is about a third of the sequential section's.
3. ``scrape``: a server started from a snapshot of 10,000 topics (3 partitions each) and 100,000 ACLs, with
   the authorizer and the metrics on. After some requests of each kind, ``/metrics`` is scraped
   ``--scrapes`` times, one after the other; each scrape is timed from the request's first byte to the
   response's last. Goal: at most 50 ms.
4. ``instructions``: a metrics-off and a metrics-on server under valgrind's callgrind (``_harness/callgrind``),
   the same ApiVersions v3 and DescribeAcls v3 requests on 50 connections to each, and the user-space
   instructions each executes per request (median of rounds). Where the machine's noise swamps a few per cent of
   CPU time, this count does not move; off / on is the throughput ratio if time followed instructions. Skipped
   when valgrind is not installed.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench._harness import callgrind
from bench._harness.cpu import pin_process
from bench._harness.load import LoadResult, cell_stats, closed_loop, merge, shared_window, split
from bench._harness.report import median, ratio_interval, table, warn
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
    blocks: int  # throughput: blocks of three fresh servers
    cell_1: int  # throughput: requests per cell with 1 connection
    cell_50: int  # throughput: requests per cell with 50 connections
    warmup: int  # throughput: requests to each server of a block before its cells, per (api, connections)
    scrape_interval_s: float  # scrapes of the metrics-on server while its cells run
    shared_blocks: int  # shared: blocks of three fresh servers on one core
    window_s: float  # shared: seconds of one measured window
    topics: int  # scrape section: topics in the snapshot (3 partitions each)
    acls: int  # scrape section: ACLs in the snapshot
    scrapes: int  # scrape section: timed scrapes
    instr_requests: int  # instructions section: requests per round
    instr_rounds: int
    instr_warmup: int

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> Params:
        quick = bool(args.quick)
        return cls(
            quick=quick,
            sections=tuple(args.only or SECTIONS),
            blocks=args.blocks or (3 if quick else 30),
            cell_1=args.cell_1 or (300 if quick else 1_500),
            cell_50=args.cell_50 or (2_000 if quick else 8_000),
            warmup=200 if quick else 1_000,
            scrape_interval_s=args.scrape_interval,
            shared_blocks=args.shared_blocks or (2 if quick else 12),
            window_s=args.window or (1.0 if quick else 3.0),
            topics=args.topics if args.topics is not None else (1_000 if quick else 10_000),
            acls=args.acls if args.acls is not None else (10_000 if quick else 100_000),
            scrapes=args.scrapes or (5 if quick else 30),
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


Pair = tuple[str, bytes, Callable[[bytes], bool], int]  # (api label, frame, response check, connections)


def throughput_pairs() -> list[Pair]:
    """What the throughput sections measure: ApiVersions v3 and DescribeAcls v3, each on 1 and 50 connections."""
    requests = [("ApiVersions v3", api_versions_frame(), api_versions_ok),
                ("DescribeAcls v3", describe_acls_frame(), describe_acls_ok)]  # fmt: skip
    return [(label, frame, check, conns) for label, frame, check in requests for conns in (1, 50)]


class Blocks:
    """What a block section has measured so far: ``cells[(pair, server kind)]`` every cell of that kind,
    ``ratios[pair]`` one (on / off, off-b / off-a) per block, the scrapes under load and the servers' log errors."""

    def __init__(self, pairs: Sequence[Pair], total: int) -> None:
        self.pairs = pairs
        self.total = total  # blocks the section runs
        self.cells: dict[tuple[int, str], list[LoadResult]] = {
            (i, kind): [] for i in range(len(pairs)) for kind in BLOCK_SERVERS
        }
        self.ratios: dict[int, list[tuple[float, float]]] = {i: [] for i in range(len(pairs))}
        self.scrapes = 0
        self.log_problems: list[str] = []

    def add_ratio(self, pair: int, rate: Mapping[str, float]) -> None:
        """One block's rates of the three servers for ``pair``: its on / off and A/A."""
        if all(rate.values()):
            self.ratios[pair].append((rate["on"] / off_rate(rate), rate["off-b"] / rate["off-a"]))

    def end_block(self, b: int, servers: Mapping[str, ServerProcess], scraper: Scraper) -> None:
        """After block ``b``'s servers stopped: its scrapes, its servers' log errors, and a progress line."""
        self.scrapes += scraper.scrapes
        self.log_problems += [f"block {b}, {s.name} server log: {line}"
                              for s in servers.values() for line in s.log_errors()]  # fmt: skip
        latest = "  ".join(f"{r[-1][0]:.3f}" for r in self.ratios.values() if r)
        print(f"  block {b + 1}/{self.total}: on / off {latest}", flush=True)


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
    ("api", "api"), ("conns", "connections"), ("server", "metrics"), ("requests", "requests"), ("failed", "failed"),
    ("req/s", "per_s"), ("p50 ms", "p50_ms"), ("p99 ms", "p99_ms"), ("server us/req", "server_cpu_us_per_req"),
    ("client us/req", "client_cpu_us_per_req"),
]  # fmt: skip
RATIO_COLUMNS = [
    ("api", "api"), ("conns", "connections"), ("blocks", "blocks"), ("on / off", "ratio"),
    ("95% interval", "interval"), ("A/A off / off", "aa_ratio"), ("A/A 95% interval", "aa_interval"),
    ("on / off pooled", "pooled_ratio"),
]  # fmt: skip
SHARED_COLUMNS = [*RATIO_COLUMNS, ("verdict", "verdict")]
#: The three fresh servers of a block and the order their cells run in; a block's cells run in one of these
#: orders and then in reverse (a palindrome: a drift within the block weighs on each server alike), the first
#: order moving on by one every block, so that no server always runs first.
BLOCK_SERVERS = ("off-a", "off-b", "on")
BLOCK_ORDERS = (("off-a", "off-b", "on"), ("off-b", "on", "off-a"), ("on", "off-a", "off-b"))
#: Time budget of one cell; a cell takes well under a second on 2 cores.
CELL_BUDGET_S = 60.0
GOAL_RATIO = 0.95  # metrics on at most 5% slower


def off_rate(rate: Mapping[str, float]) -> float:
    """What the on server's rate is compared with, in a block or pooled: the mean of the two metrics-off servers'."""
    return (rate["off-a"] + rate["off-b"]) / 2


async def start_block(
    workdir: Path, name: str, order: Sequence[str], servers: dict[str, ServerProcess], scraper: Scraper
) -> None:
    """A block's three fresh servers into ``servers``, started in ``order``, one at a time, each given its ports
    just before it starts (a server's start-up probe connects from an ephemeral port, which could be one picked
    a moment earlier for another server of the block); the ``on`` one serves ``/metrics`` on ``scraper.port``."""
    for kind in order:
        overrides = dict(AUTHORIZER)
        if kind == "on":
            [scraper.port] = free_ports(1)
            overrides["metrics.port"] = str(scraper.port)
        servers[kind] = ServerProcess(workdir, f"{name}-{kind}", overrides=overrides)
        await servers[kind].start()


def block_rows(pairs: Sequence[Pair], cells: Mapping[tuple[int, str], list[LoadResult]]) -> list[dict[str, Any]]:
    """One row per (pair, server kind): its cells of every block merged."""
    return [
        {"api": label, "connections": conns, "metrics": kind, **cell_stats(merge(cells[(i, kind)]), cells[(i, kind)])}
        for i, (label, _, _, conns) in enumerate(pairs)
        for kind in BLOCK_SERVERS
    ]


def cell_problems(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """Failed answers and cells stopped by their time budget."""
    problems = [f"{r['api']}, {r['connections']} conn(s), {r['metrics']}: {r['failed']} failed"
                for r in rows if r["failed"]]  # fmt: skip
    problems += [f"{r['api']}, {r['connections']} conn(s), {r['metrics']}: stopped by the time budget"
                 for r in rows if r["truncated"]]  # fmt: skip
    return problems


async def section_throughput(p: Params, workdir: Path) -> dict[str, Any]:
    """Blocks of three fresh servers, two with the metrics off and one with them on (see the module docstring)."""
    pairs = throughput_pairs()
    done = Blocks(pairs, p.blocks)
    for b in range(p.blocks):
        servers: dict[str, ServerProcess] = {}
        scraper = Scraper(0, p.scrape_interval_s)
        try:
            await start_block(workdir, f"block{b}", BLOCK_SERVERS, servers, scraper)
            for i, (_label, frame, check, conns) in enumerate(pairs):
                warm = split([with_correlation_id(frame, -1 - n) for n in range(p.warmup)], conns)
                for server in servers.values():
                    await closed_loop(server, warm, check=check, budget_s=CELL_BUDGET_S)
                count = p.cell_1 if conns == 1 else p.cell_50
                frames = split([with_correlation_id(frame, n) for n in range(count)], conns)
                order = BLOCK_ORDERS[b % len(BLOCK_ORDERS)]
                block: dict[str, list[LoadResult]] = {kind: [] for kind in BLOCK_SERVERS}
                for kind in (*order, *reversed(order)):
                    running = asyncio.ensure_future(scraper.run()) if kind == "on" else None
                    try:
                        result = await closed_loop(servers[kind], frames, check=check, budget_s=CELL_BUDGET_S)
                    finally:
                        if running is not None:
                            running.cancel()
                    block[kind].append(result)
                    done.cells[(i, kind)].append(result)
                done.add_ratio(i, {kind: merge(parts).rate for kind, parts in block.items()})
            await asyncio.gather(*(s.stop() for s in servers.values()))
        finally:
            for s in servers.values():
                s.kill()
        done.end_block(b, servers, scraper)
    titles = (
        f"1. Throughput, metrics off and on ({p.blocks} blocks of three fresh servers, off-a, off-b and on; "
        f"{p.cell_1:,} requests a cell on 1 connection, {p.cell_50:,} on 50; two cells of each server a block; "
        f"the on server scraped every {p.scrape_interval_s:g} s of its load)",
        "   Metrics on / off: the geometric mean of the blocks' ratios; A/A is the same measure between the two "
        "metrics-off servers, which differ in nothing (no verdict here: see the shared section)",
    )
    return report_blocks(done, titles, verdict=False)


def report_blocks(done: Blocks, titles: tuple[str, str], *, verdict: bool) -> dict[str, Any]:
    """Print a block section's two tables (every server kind's cells, then on / off per pair, with the goal's
    verdict when ``verdict``) and return its results."""
    rows = block_rows(done.pairs, done.cells)
    summaries = []
    for i, (label, _, _, conns) in enumerate(done.pairs):
        summary = block_ratios(label, conns, done.ratios[i], rows[3 * i : 3 * i + 3])
        if verdict and done.ratios[i]:
            summary["verdict"] = "met" if summary["ratio"] >= GOAL_RATIO else "missed"
        summaries.append(summary)
    print()
    print(table(titles[0], CELL_COLUMNS, rows))
    print()
    print(table(titles[1], SHARED_COLUMNS if verdict else RATIO_COLUMNS, summaries))
    problems = cell_problems(rows) + done.log_problems
    warn(problems)
    return {"cells": rows, "ratios": summaries, "scrapes_during_load": done.scrapes, "problems": problems}


def block_ratios(
    label: str, conns: int, ratios: list[tuple[float, float]], rows: list[dict[str, Any]]
) -> dict[str, Any]:
    """One (api, connections): on / off and the A/A control off-b / off-a, each the geometric mean of the blocks'
    ratios with its 95% bootstrap interval over the blocks (fresh servers in each block, so the interval covers
    how one process differs from another as well as the machine's moments)."""
    if not ratios:
        return {"api": label, "connections": conns, "blocks": 0}
    ratio, low, high = ratio_interval([on for on, _ in ratios])
    aa, aa_low, aa_high = ratio_interval([aa for _, aa in ratios])
    pooled = {row["metrics"]: row["per_s"] for row in rows}
    off = off_rate(pooled)
    return {
        "api": label, "connections": conns, "blocks": len(ratios), "ratio": round(ratio, 3),
        "low": round(low, 3), "high": round(high, 3), "interval": f"{low:.3f}-{high:.3f}",
        "aa_ratio": round(aa, 3), "aa_low": round(aa_low, 3), "aa_high": round(aa_high, 3),
        "aa_interval": f"{aa_low:.3f}-{aa_high:.3f}",
        "pooled_ratio": round(pooled["on"] / off, 3) if off else None,
        "block_ratios": [round(on, 4) for on, _ in ratios], "block_aa": [round(aa, 4) for _, aa in ratios],
    }  # fmt: skip


# --- 2. throughput on one shared core: the goal's measure --------------------------------------------------

#: Frames each connection of a shared window cycles through (their correlation ids, so every answer is checked).
SHARED_CYCLE = 256


async def section_shared(p: Params, workdir: Path) -> dict[str, Any]:
    """Blocks of three fresh servers on one core, loaded at once (see the module docstring)."""
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        warn(["shared: skipped, it needs two cores (one for the servers, one for the load)"])
        return {"skipped": "fewer than two cores"}
    core, load_cores = {cpus[-1]}, set(cpus[:-1])
    pairs = throughput_pairs()
    done = Blocks(pairs, p.shared_blocks)
    os.sched_setaffinity(0, load_cores)
    try:
        for b in range(p.shared_blocks):
            servers: dict[str, ServerProcess] = {}
            scraper = Scraper(0, p.scrape_interval_s)
            try:
                # The start order (and so where each lands in memory) moves on each block.
                await start_block(workdir, f"shared{b}", BLOCK_ORDERS[b % len(BLOCK_ORDERS)], servers, scraper)
                for server in servers.values():
                    pin_process(server.pid, core)
                for i, (_label, frame, check, conns) in enumerate(pairs):
                    work = [[with_correlation_id(frame, c * SHARED_CYCLE + n) for n in range(SHARED_CYCLE)]
                            for c in range(conns)]  # fmt: skip
                    await shared_window(servers, work, seconds=p.window_s / 3, check=check)  # warm-up
                    running = asyncio.ensure_future(scraper.run())
                    try:
                        results = await shared_window(servers, work, seconds=p.window_s, check=check)
                    finally:
                        running.cancel()
                    for kind, result in results.items():
                        done.cells[(i, kind)].append(result)
                    done.add_ratio(i, {kind: result.rate for kind, result in results.items()})
                await asyncio.gather(*(s.stop() for s in servers.values()))
            finally:
                for s in servers.values():
                    s.kill()
            done.end_block(b, servers, scraper)
    finally:
        os.sched_setaffinity(0, set(cpus))
    titles = (
        f"2. Throughput on one shared core ({p.shared_blocks} blocks of three fresh servers pinned to CPU {cpus[-1]}, "
        f"loaded at once; {p.window_s:g} s windows; the on server scraped every {p.scrape_interval_s:g} s; the load "
        "generator's CPU split three ways)",
        "   Metrics on / off in the same window: the geometric mean of the blocks' ratios (goal: at least 0.95); "
        "A/A is the same measure between the two metrics-off servers",
    )
    return report_blocks(done, titles, verdict=True)


# --- 3. one scrape at 100,000 ACLs and 10,000 topics ----------------------------------------------------

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
    print(table("3. One scrape of /metrics, timed by the scraper (goal: at most 50 ms)", SCRAPE_COLUMNS, [row]))
    problems = [f"the node serves {served[k]} {k}, the snapshot holds {want}"
                for k, want in (("topics", p.topics), ("acls", p.acls)) if served[k] != want]  # fmt: skip
    problems += [f"server log: {line}" for line in server.log_errors()]
    warn(problems)
    return {"row": row, "times_ms": [round(t, 3) for t in times], "problems": problems,
            "snapshot": {"records": build.records, "bytes": build.bytes}}  # fmt: skip


# --- 4. instructions per request, metrics on and off -----------------------------------------------------

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
    title = (f"4. Instructions per request under callgrind (user space; median of {p.instr_rounds} rounds of "
             f"{p.instr_requests} requests after {p.instr_warmup} to warm up; no scrape). 'throughput bound': "
             "off / on, the throughput ratio if time followed instructions")  # fmt: skip
    print(table(title, INSTRUCTION_COLUMNS, rows))
    problems = [f"{s.name} server log: {line}" for s in servers.values() for line in s.log_errors()]
    warn(problems)
    return {"rows": rows, "problems": problems}


# --- main ---------------------------------------------------------------------------------------------

SECTIONS = {
    "throughput": section_throughput,
    "shared": section_shared,
    "scrape": section_scrape,
    "instructions": section_instructions,
}
BENCHMARK = Benchmark("metrics", "metrics", section_timeout_s=None)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    p = Params.from_args(args)
    return BENCHMARK.main(args, p, {name: run for name, run in SECTIONS.items() if name in p.sections})


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    out = parser(__doc__, "metrics", "smoke test with small counts (about 5 minutes, 4 of them under valgrind)")
    add = out.add_argument
    add("--only", action="append", choices=list(SECTIONS), help="run only this section (repeatable)")
    add("--blocks", type=int, help="throughput: blocks of three fresh servers (default 30, quick 3)")
    add("--cell-1", type=int, help="throughput: requests per cell on 1 connection (default 1500, quick 300)")
    add("--cell-50", type=int, help="throughput: requests per cell on 50 connections (default 8000, quick 2000)")
    add("--scrape-interval", type=float, default=1.0, help="seconds between scrapes under load (default 1)")
    add("--shared-blocks", type=int, help="shared: blocks of three fresh servers on one core (default 12, quick 2)")
    add("--window", type=float, help="shared: seconds of each measured window (default 3, quick 1)")
    add("--topics", type=int, help="scrape section: topics (default 10000, quick 1000)")
    add("--acls", type=int, help="scrape section: ACLs (default 100000, quick 10000)")
    add("--scrapes", type=int, help="scrape section: timed scrapes (default 30, quick 5)")
    return out.parse_args(argv)


if __name__ == "__main__":
    sys.exit(main())
