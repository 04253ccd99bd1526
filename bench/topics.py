"""Topic administration benchmarks against a real server over PLAINTEXT: one durable CreateTopics of
1,000 topics, Metadata for all of them, and one durable DeleteTopics of all of them.

    .venv/bin/python -m bench.topics            # 3 runs (about 2 minutes on 2 cores)
    .venv/bin/python -m bench.topics --quick    # 2 runs, fewer Metadata requests (about 40 seconds)
    .venv/bin/python -m bench.topics --profile  # not a measurement: cProfile of an in-process server

Every run starts six fresh servers, one per (method, shape), and measures them one after the other
(the order rotates from run to run). Methods: ``raw``, one pre-encoded kio frame on one connection
(the server's share: CreateTopics v7, DeleteTopics v6); ``raw-v4``, the same at v4, the versions
confluent-kafka sends; ``confluent-kafka`` (``AdminClient``). Shapes: ``1p``, 1,000 topics of one
partition each, replication 1, no configs; ``3p1c``, 1,000 topics of 3 partitions and one config
(``retention.ms``) each, 5,000 metadata records (one request may produce at most 10,000).

1. ``create``: one CreateTopics of 1,000 topics, timed from sending to having the whole response,
   which leaves only after its records are fsynced. Every result must be error 0, and a Metadata
   request must then list exactly those topics with their partitions.
2. ``metadata``: on the raw 1p server, Metadata v13 (all topics) in a closed loop with 1 and with 10
   connections, and confluent-kafka ``list_topics()`` end to end; on the raw 3p1c server, the same
   with 1 connection (3,000 partitions).
3. ``delete``: one DeleteTopics of the 1,000 topics, timed the same way; Metadata must list none.

Once per benchmark (``checks``, not timed), one server runs under ``strace`` (when installed) behind
a counting TCP proxy: confluent-kafka goes through the proxy, which counts the requests it sends per
call, and for every CreateTopics and DeleteTopics, raw or confluent-kafka, the trace must show an
fsync of a log segment completing between the server reading the request and writing its reply.

Prints tables and writes ``bench/results/topics.json``; ``bench/README.md`` explains each number.
``--profile`` measures nothing: it runs the server in a thread of this process under cProfile (marked
as such in its output) and prints where the server's time goes; it writes no JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from bench._harness.clients import client_versions, confluent_admin, wait_all
from bench._harness.cpu import CpuMeter, Measured, timed_in_thread
from bench._harness.load import cell_stats, closed_loop, split
from bench._harness.profile import NOT_A_MEASUREMENT, InProcessServer, profile_steps
from bench._harness.proxy import WireLog
from bench._harness.report import median, percentile_ms, summary, table, warn
from bench._harness.runner import Benchmark, Section, add_profile_flags, parser
from bench._harness.server import ServerProcess
from bench._harness.strace import STRACE, TracedServer, fsync_before_reply, trace_events
from bench._harness.wire import (
    HOST,
    REQUEST_TIMEOUT_S,
    FrameClient,
    TimedConnection,
    Timing,
    decode_response,
    encode_request,
    free_ports,
    with_correlation_id,
)
from ksteward.protocol.apis import ApiKey, api_name

CREATE_VERSION, DELETE_VERSION = 7, 6  # the newest the server serves
CLIENT_CREATE_VERSION, CLIENT_DELETE_VERSION = 4, 4  # what librdkafka 2.x sends (the checks count them)
METADATA_VERSION = 13  # the newest; librdkafka's list_topics() sends it too
MAX_RECORDS_PER_REQUEST = 10_000  # one request may produce at most this many metadata records
METHODS = ("raw", "raw-v4", "confluent-kafka")
VERSIONS = {"raw": (CREATE_VERSION, DELETE_VERSION), "raw-v4": (CLIENT_CREATE_VERSION, CLIENT_DELETE_VERSION)}
RAW_CID = 1_000_000  # raw correlation ids start here, far from librdkafka's (checks tell them apart)


@dataclass(frozen=True)
class Shape:
    """The topics of one CreateTopics: how many partitions and which configs each has."""

    name: str
    partitions: int
    configs: tuple[tuple[str, str], ...]

    def records(self, topics: int) -> int:
        """Metadata records the request produces: a TopicRecord, its PartitionRecords, its ConfigRecords."""
        return topics * (1 + self.partitions + len(self.configs))

    def describe(self) -> str:
        configs = ", ".join(f"{k}={v}" for k, v in self.configs) or "no configs"
        return f"{self.partitions} partition(s), replication 1, {configs}"


SHAPES = (Shape("1p", 1, ()), Shape("3p1c", 3, (("retention.ms", "86400000"),)))


@dataclass(frozen=True)
class Params:
    quick: bool
    topics: int  # topics per CreateTopics / DeleteTopics
    runs: int  # fresh servers per (method, shape)
    metadata_1: int  # Metadata requests per run with 1 connection
    metadata_10: int  # Metadata requests per run with 10 connections
    list_reps: int  # confluent-kafka list_topics() calls per run
    metadata_warmup: int
    cell_seconds: float  # time budget of one Metadata cell
    checks: bool  # the strace and counting-proxy checks, once

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> Params:
        quick = bool(args.quick)
        p = cls(
            quick=quick,
            topics=args.topics,
            runs=args.runs or (2 if quick else 3),
            metadata_1=args.metadata_1 or (60 if quick else 200),
            metadata_10=args.metadata_10 or (100 if quick else 400),
            list_reps=args.list_reps or (5 if quick else 15),
            metadata_warmup=10 if quick else 20,
            cell_seconds=args.cell_seconds,
            checks=not args.no_checks,
        )
        worst = max(s.records(p.topics) for s in SHAPES)
        if p.topics <= 0 or worst > MAX_RECORDS_PER_REQUEST:
            raise SystemExit(f"--topics {p.topics}: the 3p1c request would produce {worst:,} records, "
                             f"more than the {MAX_RECORDS_PER_REQUEST:,} one request may")  # fmt: skip
        return p


def topic_names(count: int, prefix: str = "") -> list[str]:
    """Realistic names: a dot and a dash (so the collision check on '.' and '_' runs too)."""
    return [f"{prefix}bench.orders-{i:05d}" for i in range(count)]


# --- wire frames and their checks (decoded after the clock stops) ----------------------------------


def create_frame(names: Sequence[str], shape: Shape, correlation_id: int, version: int = CREATE_VERSION) -> bytes:
    configs = [{"name": k, "value": v} for k, v in shape.configs]
    topics = [
        {"name": n, "num_partitions": shape.partitions, "replication_factor": 1, "assignments": [], "configs": configs}
        for n in names
    ]
    body = {"topics": topics, "timeout_ms": 60_000, "validate_only": False}
    return encode_request(ApiKey.CREATE_TOPICS, version, body, correlation_id)


def delete_frame(names: Sequence[str], correlation_id: int, version: int = DELETE_VERSION) -> bytes:
    body: dict[str, Any] = {"timeout_ms": 60_000}
    if version >= 6:
        body["topics"] = [{"name": n, "topic_id": None} for n in names]
    else:
        body["topic_names"] = list(names)
    return encode_request(ApiKey.DELETE_TOPICS, version, body, correlation_id)


def metadata_frame(correlation_id: int) -> bytes:
    values = {"topics": None, "allow_auto_topic_creation": False, "include_topic_authorized_operations": False}
    return encode_request(ApiKey.METADATA, METADATA_VERSION, values, correlation_id)


def create_outcome(payload: bytes, names: Sequence[str], shape: Shape, version: int = CREATE_VERSION) -> dict[str, Any]:
    """Per-topic results of a CreateTopics response: error 0 for each name and, from v5 on, the partition
    count and the shape's configs among the configs the response describes."""
    _, body = decode_response(ApiKey.CREATE_TOPICS, version, payload)
    errors = sorted({f"{int(t.error_code)} {t.error_message}" for t in body.topics if int(t.error_code) != 0})
    ok = [t for t in body.topics if int(t.error_code) == 0]
    wanted = dict(shape.configs)
    if version < 5:  # no partition count or configs in the response
        return {"results": len(body.topics), "created": len(ok), "errors": errors,
                "names_match": sorted(t.name for t in body.topics) == sorted(names)}  # fmt: skip
    config_ok = sum(1 for t in ok if wanted.items() <= {c.name: c.value for c in t.configs}.items())
    return {
        "results": len(body.topics),
        "created": len(ok),
        "errors": errors,
        "names_match": sorted(t.name for t in body.topics) == sorted(names),
        "partitions_ok": sum(1 for t in ok if int(t.num_partitions) == shape.partitions),
        "configs_ok": config_ok,
        "configs_per_topic": median([len(t.configs) for t in ok]) if ok else None,
    }


def delete_outcome(payload: bytes, names: Sequence[str], version: int = DELETE_VERSION) -> dict[str, Any]:
    _, body = decode_response(ApiKey.DELETE_TOPICS, version, payload)
    errors = sorted({f"{int(r.error_code)} {r.error_message}" for r in body.responses if int(r.error_code) != 0})
    return {
        "results": len(body.responses),
        "deleted": sum(1 for r in body.responses if int(r.error_code) == 0),
        "errors": errors,
        "names_match": sorted(r.name for r in body.responses) == sorted(names),
    }


def listing(payload: bytes) -> dict[str, Any]:
    """What a Metadata (all topics) response lists."""
    _, body = decode_response(ApiKey.METADATA, METADATA_VERSION, payload)
    return {
        "error_code": int(getattr(body, "error_code", 0)),  # v13+ only
        "names": sorted(t.name for t in body.topics),
        "topics": len(body.topics),
        "partitions": sum(len(t.partitions) for t in body.topics),
        "topic_errors": sum(1 for t in body.topics if int(t.error_code) != 0),
        "partition_errors": sum(1 for t in body.topics for p in t.partitions if int(p.error_code) != 0),
        "brokers": len(body.brokers),
    }


# --- a raw connection ------------------------------------------------------------------------------


class RawConnection(TimedConnection):
    """One connection for pre-encoded frames, with its correlation ids far from librdkafka's."""

    @classmethod
    async def open(cls, server: Measured, first_cid: int = RAW_CID) -> RawConnection:
        return cls(server, await FrameClient.connect(server.port), first_cid)

    async def listed(self) -> dict[str, Any]:
        """The topics a Metadata (all topics) request lists now (a check, not timed)."""
        return listing(await self.request(metadata_frame(self.next_cid())))


def timing_row(timing: Timing) -> dict[str, Any]:
    """A timed request's row, with its sizes in KiB."""
    return {"s": round(timing.wall_s, 4), "first_byte_s": round(timing.first_byte_s, 4), **timing.cpu,
            "request_kib": round(timing.request_bytes / 1024, 1),
            "response_kib": round((len(timing.payload) + 4) / 1024, 1)}  # fmt: skip


def listing_problems(where: str, listed: dict[str, Any], names: Sequence[str], partitions: int) -> list[str]:
    """Metadata must list exactly ``names``, each with ``partitions`` partitions, without errors."""
    problems = []
    if listed["names"] != sorted(names):
        problems.append(f"{where}: Metadata lists {listed['topics']:,} topics, expected {len(names):,}")
    if listed["partitions"] != len(names) * partitions:
        problems.append(f"{where}: Metadata lists {listed['partitions']:,} partitions, "
                        f"expected {len(names) * partitions:,}")  # fmt: skip
    if listed["error_code"] or listed["topic_errors"] or listed["partition_errors"]:
        problems.append(f"{where}: Metadata error {listed['error_code']}, {listed['topic_errors']} topic errors, "
                        f"{listed['partition_errors']} partition errors")  # fmt: skip
    return problems


# --- confluent-kafka (blocking; called in a worker thread so the event loop keeps draining logs) --------


class Confluent:
    """One confluent-kafka AdminClient, connected before any clock starts (a warm-up list_topics)."""

    def __init__(self, bootstrap: str) -> None:
        self.admin: Any = confluent_admin(bootstrap)
        self.list_topics()

    @staticmethod
    def new_topics(names: Sequence[str], shape: Shape) -> list[Any]:
        from confluent_kafka.admin import NewTopic

        return [NewTopic(n, shape.partitions, 1, config=dict(shape.configs)) for n in names]

    def create(self, new_topics: list[Any]) -> tuple[int, list[str]]:
        """(created, distinct errors): until every topic's future is done."""
        return wait_all(self.admin.create_topics(new_topics, request_timeout=REQUEST_TIMEOUT_S))

    def delete(self, names: list[str]) -> tuple[int, list[str]]:
        return wait_all(self.admin.delete_topics(names, request_timeout=REQUEST_TIMEOUT_S))

    def list_topics(self) -> int:
        """Topics listed by one list_topics() (Metadata for all topics), end to end."""
        return len(self.admin.list_topics(timeout=REQUEST_TIMEOUT_S).topics)

    def list_topics_timed(self, reps: int) -> tuple[list[float], list[int]]:
        """Seconds and topic counts of ``reps`` list_topics() calls, one after the other."""
        seconds, counts = [], []
        for _ in range(reps):
            t0 = time.perf_counter()
            metadata = self.admin.list_topics(timeout=REQUEST_TIMEOUT_S)
            seconds.append(time.perf_counter() - t0)
            counts.append(len(metadata.topics))
        return seconds, counts

    def close(self) -> None:
        self.admin = None  # librdkafka's handle has no close(); dropping the last reference destroys it
        gc.collect()


# --- one run: four fresh servers ----------------------------------------------------------------------


@dataclass
class RunOutput:
    create: list[dict[str, Any]]
    delete: list[dict[str, Any]]
    metadata: list[dict[str, Any]]
    problems: list[str]


async def metadata_cells(
    p: Params, run: int, shape: Shape, server: ServerProcess, listed_payload: bytes
) -> tuple[list[dict[str, Any]], list[str]]:
    """Raw Metadata (all topics) in a closed loop (1 connection; also 10 and confluent-kafka
    list_topics() on the 1p server). A response counts only if it is as long as the one checked."""
    size = len(listed_payload)

    def same_size(payload: bytes) -> bool:
        return len(payload) == size

    frame = metadata_frame(0)
    # 3p1c: the same topics with 3 partitions each; half the requests, 1 connection only
    cells = [(1, p.metadata_1), (10, p.metadata_10)] if shape.name == "1p" else [(1, max(p.metadata_1 // 2, 1))]
    rows: list[dict[str, Any]] = []
    problems: list[str] = []
    warm = [with_correlation_id(frame, -1 - i) for i in range(p.metadata_warmup)]
    await closed_loop(server, [warm], check=same_size, budget_s=30)
    for conns, count in cells:
        frames = [with_correlation_id(frame, i) for i in range(count)]
        meter = CpuMeter(server)
        result = await closed_loop(server, split(frames, conns), check=same_size, budget_s=p.cell_seconds)
        others = meter.read()["others_cpu_s"]
        stats = {**cell_stats(result, [result]), "others_cpu_s": others}
        for key in ("rounds", "round_per_s", "spread"):
            stats.pop(key)
        rows.append({"run": run, "shape": shape.name, "method": "raw", "connections": conns,
                     "response_kib": round((size + 4) / 1024, 1), **stats})  # fmt: skip
        where = f"run {run}, {shape.name}, Metadata with {conns} connection(s)"
        if result.failed:
            problems.append(f"{where}: {result.failed} responses failed (wrong correlation id or size)")
        if result.truncated:
            problems.append(f"{where}: stopped by the time budget after {result.requests} requests")
    if shape.name == "1p":
        client = await asyncio.to_thread(Confluent, f"{HOST}:{server.port}")
        try:
            (seconds, counts), row = await timed_in_thread(server, lambda: client.list_topics_timed(p.list_reps))
        finally:
            await asyncio.to_thread(client.close)
        ns = [int(s * 1e9) for s in seconds]
        rows.append({
            "run": run, "shape": shape.name, "method": "confluent-kafka list_topics", "connections": 1,
            "requests": len(seconds), "ok": sum(1 for c in counts if c == p.topics),
            "failed": sum(1 for c in counts if c != p.topics),
            "per_s": round(len(seconds) / sum(seconds), 1), "p50_ms": round(percentile_ms(ns, 50), 3),
            "p99_ms": round(percentile_ms(ns, 99), 3), "wall_s": round(sum(seconds), 4),
            "server_cpu_s": row["server_cpu_s"], "client_cpu_s": row["client_cpu_s"],
            "others_cpu_s": row["others_cpu_s"],
            "server_cpu_us_per_req": round(row["server_cpu_s"] / len(seconds) * 1e6, 1),
            "client_cpu_us_per_req": round(row["client_cpu_s"] / len(seconds) * 1e6, 1),
        })  # fmt: skip
        if any(c != p.topics for c in counts):
            problems.append(f"run {run}: list_topics() counted {sorted(set(counts))} topics, expected {p.topics}")
    return rows, problems


async def job_raw(p: Params, run: int, method: str, shape: Shape, server: ServerProcess, out: RunOutput) -> None:
    """``raw``: CreateTopics v7, the Metadata cells, DeleteTopics v6. ``raw-v4``: CreateTopics v4 and
    DeleteTopics v4, the versions confluent-kafka sends, so its difference to the client is the client's."""
    create_version, delete_version = VERSIONS[method]
    names = topic_names(p.topics)
    conn = await RawConnection.open(server)
    where = f"run {run}, {method}, {shape.name}"
    try:
        timing = await conn.timed(create_frame(names, shape, conn.next_cid(), create_version))
        payload, row = timing.payload, timing_row(timing)
        outcome = create_outcome(payload, names, shape, create_version)
        listed_payload = await conn.request(metadata_frame(conn.next_cid()))
        listed = listing(listed_payload)
        out.problems += listing_problems(f"{where}, after CreateTopics", listed, names, shape.partitions)
        out.create.append({"run": run, "method": method, "shape": shape.name, **row, **outcome,
                           "listed": listed["topics"], "listed_partitions": listed["partitions"]})  # fmt: skip
        if method == "raw":
            rows, problems = await metadata_cells(p, run, shape, server, listed_payload)
            out.metadata += rows
            out.problems += problems
        timing = await conn.timed(delete_frame(names, conn.next_cid(), delete_version))
        deleted = delete_outcome(timing.payload, names, delete_version)
        row = timing_row(timing)
        after = await conn.listed()
        out.delete.append({"run": run, "method": method, "shape": shape.name, **row, **deleted,
                           "listed": after["topics"], "listed_partitions": after["partitions"]})  # fmt: skip
    finally:
        await conn.aclose()


async def job_confluent(p: Params, run: int, method: str, shape: Shape, server: ServerProcess, out: RunOutput) -> None:
    names = topic_names(p.topics)
    client = await asyncio.to_thread(Confluent, f"{HOST}:{server.port}")
    conn = await RawConnection.open(server)
    where = f"run {run}, confluent-kafka, {shape.name}"
    try:
        new_topics = client.new_topics(names, shape)
        (created, errors), row = await timed_in_thread(server, lambda: client.create(new_topics))
        listed = await conn.listed()
        out.problems += listing_problems(f"{where}, after create_topics", listed, names, shape.partitions)
        out.create.append({"run": run, "method": "confluent-kafka", "shape": shape.name, **row, "results": len(names),
                           "created": created, "errors": errors, "listed": listed["topics"],
                           "listed_partitions": listed["partitions"]})  # fmt: skip
        (deleted, errors), row = await timed_in_thread(server, lambda: client.delete(list(names)))
        after = await conn.listed()
        out.delete.append({"run": run, "method": "confluent-kafka", "shape": shape.name, **row, "results": len(names),
                           "deleted": deleted, "errors": errors, "listed": after["topics"],
                           "listed_partitions": after["partitions"]})  # fmt: skip
    finally:
        await conn.aclose()
        await asyncio.to_thread(client.close)


async def one_run(p: Params, run: int, workdir: Path) -> RunOutput:
    """Fresh servers, one per (method, shape), measured one after the other in a rotating order."""
    jobs = [(m, s) for s in SHAPES for m in METHODS]
    shift = (run - 1) % len(jobs)
    jobs = jobs[shift:] + jobs[:shift]
    servers = {(m, s.name): ServerProcess(workdir, f"r{run}-{m}-{s.name}") for m, s in jobs}
    out = RunOutput([], [], [], [])
    try:
        await asyncio.gather(*(s.start(timeout=120) for s in servers.values()))
        for method, shape in jobs:
            gc.collect()
            server = servers[(method, shape.name)]
            job = job_confluent if method == "confluent-kafka" else job_raw
            await job(p, run, method, shape, server, out)
            created = next(r for r in reversed(out.create) if r["method"] == method and r["shape"] == shape.name)
            deleted = next(r for r in reversed(out.delete) if r["method"] == method and r["shape"] == shape.name)
            print(f"  run {run}, {method}, {shape.name}: create {created['s']:.3f}s, delete {deleted['s']:.3f}s",
                  flush=True)  # fmt: skip
        for server in servers.values():
            await server.stop()
    finally:
        for server in servers.values():
            server.kill()
    for server in servers.values():
        out.problems += [f"{server.name} log: {line}" for line in server.log_errors()]
    return out


def result_problems(p: Params, create: list[dict[str, Any]], delete: list[dict[str, Any]]) -> list[str]:
    problems = []
    n = p.topics
    for r in create:
        where = f"run {r['run']}, {r['method']}, {r['shape']}"
        if r["created"] != n or r["errors"] or r["results"] != n:
            problems.append(f"{where}: CreateTopics {r['created']:,} of {n:,} created, errors {r['errors']}")
        if r.get("names_match") is False:
            problems.append(f"{where}: the CreateTopics results name other topics than the request")
        shape = next(s for s in SHAPES if s.name == r["shape"])
        if r["method"] == "raw" and (r["partitions_ok"] != n or (shape.configs and r["configs_ok"] != n)):
            problems.append(f"{where}: {r['partitions_ok']:,} results with {shape.partitions} partitions, "
                            f"{r['configs_ok']:,} describing {dict(shape.configs)}")  # fmt: skip
    for r in delete:
        where = f"run {r['run']}, {r['method']}, {r['shape']}"
        if r["deleted"] != n or r["errors"] or r["results"] != n:
            problems.append(f"{where}: DeleteTopics {r['deleted']:,} of {n:,} deleted, errors {r['errors']}")
        if r["listed"] or r["listed_partitions"]:
            problems.append(f"{where}: Metadata still lists {r['listed']:,} topics after DeleteTopics")
    return problems


def op_summaries(p: Params, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per (shape, method): median, min, max, spread of the runs; topics/s at the median; CPU medians."""
    out = []
    for shape in SHAPES:
        medians: dict[str, float] = {}
        for method in METHODS:
            mine = [r for r in rows if r["method"] == method and r["shape"] == shape.name]
            if not mine:
                continue
            s = summary([r["s"] for r in mine])
            row = {"shape": shape.name, "method": method, **s,
                   "topics_per_s": round(p.topics / s["median_s"], 1) if s["median_s"] else None,
                   "per_s_runs": " / ".join(f"{p.topics / r['s']:,.0f}" for r in mine),
                   "server_cpu_median_s": round(median([r["server_cpu_s"] for r in mine]), 3),
                   "client_cpu_median_s": round(median([r["client_cpu_s"] for r in mine]), 3),
                   "others_cpu_median_s": round(median([r["others_cpu_s"] for r in mine]), 3)}  # fmt: skip
            medians[method] = s["median_s"]
            if method in VERSIONS:
                row["first_byte_median_s"] = round(median([r["first_byte_s"] for r in mine]), 4)
            elif "raw-v4" in medians:  # the client minus the server's share at the client's versions
                row["minus_raw_v4_s"] = round(s["median_s"] - medians["raw-v4"], 4)
            out.append(row)
    return out


def metadata_summaries(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per cell: medians over the runs of req/s, p50 and p99; spread of req/s over the runs."""
    out = []
    cells = list(dict.fromkeys((r["shape"], r["method"], r["connections"]) for r in rows))
    cells.sort(key=lambda c: (c[0], c[1] != "raw", c[2]))  # per shape: raw by connections, then list_topics
    for shape, method, conns in cells:
        mine = [r for r in rows if (r["shape"], r["method"], r["connections"]) == (shape, method, conns)]
        rates = [r["per_s"] for r in mine]
        mid = median(rates)
        out.append({
            "shape": shape, "method": method, "connections": conns, "runs": len(mine),
            "requests": sum(r["requests"] for r in mine), "failed": sum(r["failed"] for r in mine),
            "per_s": round(mid, 1), "per_s_runs": " / ".join(f"{x:,.1f}" for x in rates),
            "spread": round((max(rates) - min(rates)) / mid, 3) if mid else None,
            "p50_ms": round(median([r["p50_ms"] for r in mine]), 3),
            "p99_ms": round(median([r["p99_ms"] for r in mine]), 3),
            "response_kib": mine[0].get("response_kib"),
            "server_cpu_us_per_req": round(median([r["server_cpu_us_per_req"] for r in mine]), 1),
            "client_cpu_us_per_req": round(median([r["client_cpu_us_per_req"] for r in mine]), 1),
            "others_cpu_s": round(sum(r["others_cpu_s"] for r in mine), 2),
        })  # fmt: skip
    return out


# --- checks: what confluent-kafka sends, and fsync before every reply -------------------------------------


# What the proxy counts in each topic request a client sends: its topics ("all" for a Metadata of all).
TOPIC_COUNTS = {
    ApiKey.CREATE_TOPICS: lambda body, version: f"{len(body.topics):,}",
    ApiKey.DELETE_TOPICS: lambda body, version: f"{len(body.topic_names if version < 6 else body.topics):,}",
    ApiKey.METADATA: lambda body, version: "all" if body.topics is None else f"{len(body.topics):,}",
}


WIRE_COLUMNS = [("client", "client"), ("call", "call"), ("request", "api"), ("requests", "requests"),
                ("bytes", "bytes"), ("topics per request", "topics")]  # fmt: skip
FSYNC_COLUMNS = [("request", "request"), ("by", "by"), ("corr id", "cid"), ("seen in trace", "seen"),
                 ("log fsyncs between read and reply", "fsyncs_between"),
                 ("fsync before reply", "durable_before_reply"), ("expected", "expected"),
                 ("file", "synced")]  # fmt: skip


async def section_checks(p: Params, workdir: Path) -> dict[str, Any]:
    """One server (under strace when installed) behind the counting proxy: raw CreateTopics of both shapes,
    confluent-kafka create_topics / list_topics / delete_topics through the proxy, raw DeleteTopics."""
    proxy_port, port, controller_port = free_ports(3)
    trace_path = workdir / "checks.strace"
    server: ServerProcess
    if STRACE:
        server = TracedServer(workdir, "checks", ports=(port, controller_port), advertise_port=proxy_port,
                              trace_path=trace_path)  # fmt: skip
    else:
        server = ServerProcess(workdir, "checks", ports=(port, controller_port), advertise_port=proxy_port)
    wire = WireLog(port)
    problems: list[str] = []
    raw_mutations: list[tuple[str, int, int]] = []  # (label, api key, correlation id)
    raw_names = {s.name: topic_names(p.topics, f"raw-{s.name}.") for s in SHAPES}
    names = topic_names(p.topics, "confluent.")
    listed_counts: list[int] = []
    try:
        await server.start(timeout=120)
        await wire.start(proxy_port)
        conn = await RawConnection.open(server)
        try:
            for shape in SHAPES:
                cid = conn.next_cid()
                timing = await conn.timed(create_frame(raw_names[shape.name], shape, cid))
                outcome = create_outcome(timing.payload, raw_names[shape.name], shape)
                if outcome["created"] != p.topics:
                    problems.append(f"checks: raw CreateTopics {shape.name}: {outcome['errors']}")
                raw_mutations.append((f"CreateTopics v{CREATE_VERSION} {shape.name}", ApiKey.CREATE_TOPICS, cid))
            wire.tag = "connect"
            client = await asyncio.to_thread(Confluent, f"{HOST}:{proxy_port}")
            try:
                new_topics = client.new_topics(names, SHAPES[0])
                wire.tag = "create_topics"
                created, errors = await asyncio.to_thread(client.create, new_topics)
                wire.tag = "list_topics"
                listed_counts = [await asyncio.to_thread(client.list_topics) for _ in range(2)]
                wire.tag = "delete_topics"
                deleted, delete_errors = await asyncio.to_thread(client.delete, list(names))
                wire.tag = "close"
            finally:
                await asyncio.to_thread(client.close)
            if created != p.topics or errors or deleted != p.topics or delete_errors:
                problems.append(f"checks: confluent-kafka created {created}, deleted {deleted}: "
                                f"{errors + delete_errors}")  # fmt: skip
            if listed_counts != [3 * p.topics] * 2:
                problems.append(f"checks: list_topics() counted {listed_counts}, expected {3 * p.topics} twice")
            for shape in SHAPES:
                cid = conn.next_cid()
                timing = await conn.timed(delete_frame(raw_names[shape.name], cid))
                if delete_outcome(timing.payload, raw_names[shape.name])["deleted"] != p.topics:
                    problems.append(f"checks: raw DeleteTopics {shape.name} failed")
                raw_mutations.append((f"DeleteTopics v{DELETE_VERSION} {shape.name}", ApiKey.DELETE_TOPICS, cid))
            left = await conn.listed()  # also the control: a read-only request, no fsync expected
            raw_mutations.append((f"control: Metadata v{METADATA_VERSION}", ApiKey.METADATA, conn.last_cid))
            if left["topics"]:
                problems.append(f"checks: {left['topics']} topics left after deleting all")
        finally:
            await conn.aclose()
        await server.stop()
    finally:
        await wire.close()
        server.kill()
    problems += [f"checks server log: {line}" for line in server.log_errors()]
    wire_rows = [{"client": "confluent-kafka", "call": call, **r} for call in
                 ("create_topics", "list_topics", "delete_topics")
                 for r in wire.report(call, "topics", TOPIC_COUNTS)]  # fmt: skip
    fsync_rows: list[dict[str, Any]] = []
    if STRACE:
        events = trace_events(trace_path.read_text(errors="replace"))
        asked = [(label, "raw", key, cid) for label, key, cid in raw_mutations]
        mutations = wire.requests((ApiKey.CREATE_TOPICS, ApiKey.DELETE_TOPICS))
        asked += [(f"{api_name(key)} v{version} ({tag})", "confluent-kafka", key, cid)
                  for tag, key, version, cid in mutations]  # fmt: skip
        for label, by, key, cid in asked:
            found = fsync_before_reply(events, key, cid)
            fsync_rows.append({"request": label, "by": by, "cid": cid, "expected": key != ApiKey.METADATA, **found})
        problems += [f"checks: {r['request']} by {r['by']}: log fsync between reading it and replying: "
                     f"{'yes' if r['durable_before_reply'] else 'no'}, expected {'yes' if r['expected'] else 'no'}"
                     for r in fsync_rows if r["seen"] and r["durable_before_reply"] != r["expected"]]  # fmt: skip
        problems += [f"checks: {r['request']} by {r['by']}: not found in the trace (not checked)"
                     for r in fsync_rows if not r["seen"]]  # fmt: skip
    print()
    print(table("   checks (untimed): what confluent-kafka sends, through the counting proxy (list_topics "
                "called twice)", WIRE_COLUMNS, wire_rows))  # fmt: skip
    if STRACE:
        print(table("   checks (untimed): every CreateTopics / DeleteTopics under strace -f: a log segment "
                    "fsync completes between reading the request and writing its reply", FSYNC_COLUMNS,
                    [{**r, "synced": ", ".join(r.get("synced", []))} for r in fsync_rows]))  # fmt: skip
    else:
        print("   checks: strace is not installed; the fsync-before-reply check was skipped")
    warn(problems)
    return {"strace": STRACE, "wire": wire_rows, "fsync_before_reply": fsync_rows, "problems": problems}


# --- the measured runs --------------------------------------------------------------------------------

CREATE_COLUMNS = [
    ("run", "run"), ("shape", "shape"), ("method", "method"), ("s", "s"), ("first byte s", "first_byte_s"),
    ("server CPU s", "server_cpu_s"), ("client CPU s", "client_cpu_s"), ("others CPU s", "others_cpu_s"),
    ("req KiB", "request_kib"), ("resp KiB", "response_kib"), ("ok", "ok"), ("listed", "listed"),
    ("partitions", "listed_partitions"),
]  # fmt: skip
OP_SUMMARY_COLUMNS = [
    ("shape", "shape"), ("method", "method"), ("median s", "median_s"), ("min s", "min_s"), ("max s", "max_s"),
    ("spread", "spread"), ("runs", "n"), ("topics/s", "topics_per_s"), ("runs topics/s", "per_s_runs"),
    ("first byte s", "first_byte_median_s"), ("server CPU s", "server_cpu_median_s"),
    ("client CPU s", "client_cpu_median_s"), ("others CPU s", "others_cpu_median_s"),
    ("minus raw-v4 s", "minus_raw_v4_s"),
]  # fmt: skip
METADATA_COLUMNS = [
    ("run", "run"), ("shape", "shape"), ("method", "method"), ("conns", "connections"), ("requests", "requests"),
    ("failed", "failed"), ("req/s", "per_s"), ("p50 ms", "p50_ms"), ("p99 ms", "p99_ms"),
    ("resp KiB", "response_kib"), ("server us/req", "server_cpu_us_per_req"),
    ("client us/req", "client_cpu_us_per_req"), ("others CPU s", "others_cpu_s"),
]  # fmt: skip
METADATA_SUMMARY_COLUMNS = [
    ("shape", "shape"), ("method", "method"), ("conns", "connections"), ("runs", "runs"), ("requests", "requests"),
    ("failed", "failed"), ("req/s", "per_s"), ("runs req/s", "per_s_runs"), ("spread", "spread"),
    ("p50 ms", "p50_ms"), ("p99 ms", "p99_ms"), ("resp KiB", "response_kib"),
    ("server us/req", "server_cpu_us_per_req"), ("client us/req", "client_cpu_us_per_req"),
    ("others CPU s (sum)", "others_cpu_s"),
]  # fmt: skip


async def section_runs(p: Params, workdir: Path) -> dict[str, Any]:
    create: list[dict[str, Any]] = []
    delete: list[dict[str, Any]] = []
    metadata: list[dict[str, Any]] = []
    problems: list[str] = []
    for run in range(1, p.runs + 1):
        out = await one_run(p, run, workdir)
        create += out.create
        delete += out.delete
        metadata += out.metadata
        problems += out.problems
    for rows, key in ((create, "created"), (delete, "deleted")):
        for r in rows:
            r["ok"] = r[key]
    problems += result_problems(p, create, delete)
    create_summary, delete_summary = op_summaries(p, create), op_summaries(p, delete)
    metadata_summary = metadata_summaries(metadata)
    shapes = "; ".join(f"{s.name} = {s.describe()}, {s.records(p.topics):,} records" for s in SHAPES)
    print()
    print(table(f"1. One CreateTopics of {p.topics:,} topics on a fresh server, acknowledged after fsync; seconds "
                f"from sending to the whole response ({shapes}). raw / raw-v4: one kio-encoded v{CREATE_VERSION} / "
                f"v{CLIENT_CREATE_VERSION} frame (v{CLIENT_CREATE_VERSION} is what confluent-kafka sends); "
                "confluent-kafka: create_topics() until every future is done", CREATE_COLUMNS, create))  # fmt: skip
    print(table("   per shape and method", OP_SUMMARY_COLUMNS, create_summary))
    print()
    print(table(f"2. Metadata v{METADATA_VERSION} for all topics ({p.topics:,}): raw closed loop (one request in "
                "flight per connection); confluent-kafka list_topics() end to end, one call after the other",
                METADATA_COLUMNS, metadata))  # fmt: skip
    print(table("   per cell: medians over the runs", METADATA_SUMMARY_COLUMNS, metadata_summary))
    print()
    print(table(f"3. One DeleteTopics of the {p.topics:,} topics, acknowledged after fsync; raw / raw-v4: one "
                f"kio-encoded v{DELETE_VERSION} / v{CLIENT_DELETE_VERSION} frame; confluent-kafka: delete_topics() "
                "until every future is done", CREATE_COLUMNS, delete))  # fmt: skip
    print(table("   per shape and method", OP_SUMMARY_COLUMNS, delete_summary))
    warn(problems)
    return {
        "shapes": {s.name: {**asdict(s), "records": s.records(p.topics)} for s in SHAPES},
        "create": create,
        "create_summary": create_summary,
        "metadata": metadata,
        "metadata_summary": metadata_summary,
        "delete": delete,
        "delete_summary": delete_summary,
        "problems": problems,
    }


# --- --profile: a diagnosis, not a measurement ---------------------------------------------------------


async def profile_server(p: Params, workdir: Path, lines: int) -> None:
    """Profile, on the server's thread only: CreateTopics of each shape (v7, and v4 as librdkafka sends it),
    20 Metadata requests for all topics, and DeleteTopics."""
    print(NOT_A_MEASUREMENT, flush=True)
    server = InProcessServer(workdir, sasl=False)
    await asyncio.to_thread(server.start)
    names = topic_names(p.topics)
    v4_names = topic_names(p.topics, "v4.")
    try:
        conn = await RawConnection.open(server)
        try:

            def metadata_burst() -> list[bytes]:
                return [metadata_frame(conn.next_cid()) for _ in range(20)]

            steps: list[tuple[str, list[bytes]]] = [
                (f"CreateTopics v{CREATE_VERSION} of {p.topics:,} ({SHAPES[0].describe()})",
                 [create_frame(names, SHAPES[0], conn.next_cid())]),
                (f"20 x Metadata v{METADATA_VERSION} for all {p.topics:,} topics", metadata_burst()),
                (f"DeleteTopics v{DELETE_VERSION} of {p.topics:,}", [delete_frame(names, conn.next_cid())]),
                (f"CreateTopics v{CREATE_VERSION} of {p.topics:,} ({SHAPES[1].describe()})",
                 [create_frame(names, SHAPES[1], conn.next_cid())]),
                (f"DeleteTopics v{DELETE_VERSION} of {p.topics:,} ({SHAPES[1].name})",
                 [delete_frame(names, conn.next_cid())]),
                (f"CreateTopics v4 of {p.topics:,} ({SHAPES[0].describe()}; the version librdkafka sends, no "
                 "configs in the response)", [create_frame(v4_names, SHAPES[0], conn.next_cid(), version=4)]),
            ]  # fmt: skip
            await profile_steps(server, conn.client, steps, lines)
        finally:
            await conn.aclose()
    finally:
        await asyncio.to_thread(server.stop)


# --- main ---------------------------------------------------------------------------------------------


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    out = parser(__doc__, "topics", "2 runs and fewer Metadata requests (under a minute)")
    add = out.add_argument
    add("--topics", type=int, default=1_000, help="topics per CreateTopics / DeleteTopics (default 1000)")
    add("--runs", type=int, help="fresh servers per (method, shape) (default 3, quick 2)")
    add("--metadata-1", type=int, help="Metadata requests per run with 1 connection (default 200, quick 60)")
    add("--metadata-10", type=int, help="Metadata requests per run with 10 connections (default 400, quick 100)")
    add("--list-reps", type=int, help="confluent-kafka list_topics() calls per run (default 15, quick 5)")
    add("--cell-seconds", type=float, default=60.0, help="time budget of one Metadata cell (default 60)")
    add("--no-checks", action="store_true", help="skip the strace fsync check and the counting proxy")
    add_profile_flags(out, "CreateTopics, Metadata and DeleteTopics")
    return out.parse_args(argv)


# The exit code is 1 if anything failed or any WARNING was printed.
BENCHMARK = Benchmark("topics", "topic", document=lambda results: {"clients": client_versions()}, strict=True)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    p = Params.from_args(args)
    if args.profile:
        return BENCHMARK.profile(p.quick, lambda workdir: profile_server(p, workdir, args.profile_lines))
    sections: dict[str, Section] = {"runs": section_runs}  # the measured runs, then the checks
    if p.checks:
        sections["checks"] = section_checks
    return BENCHMARK.main(args, p, sections)


if __name__ == "__main__":
    sys.exit(main())
