"""Server benchmarks: request throughput and latency, durable mutations with and without group commit,
and start-up from a snapshot of a million records.

    .venv/bin/python -m bench.server            # everything (3-4 minutes on 2 cores)
    .venv/bin/python -m bench.server --quick    # smoke test (about 30 seconds)
    .venv/bin/python -m bench.server --only mutations

Prints one table per section and writes ``bench/results/server.json``. Every server is its own
subprocess on 127.0.0.1 with its data under a temporary directory, removed at the end. The load
generator runs in this process and shares the cores with the server; every cell reports the CPU
seconds of both sides. Cells are measured in interleaved rounds (cell A, cell B, ..., then again),
so a burst of load from a neighbour hits every cell alike. ``bench/README.md`` explains each number.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import logging
import shutil
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench._harness.ceiling import CeilingProcess
from bench._harness.cpu import Measured, MeasuredGroup
from bench._harness.load import LoadResult, cell_stats, closed_loop, merge, process_stats, round_counts, split
from bench._harness.report import median, table, warn
from bench._harness.runner import Benchmark, parser
from bench._harness.server import ServerProcess
from bench._harness.snapshot import SnapshotBuild, build_snapshot_dir
from bench._harness.wire import CLIENT_ID, FrameClient, decode_response, encode_request, free_ports, with_correlation_id
from ksteward.metadata.log import MetadataLog
from ksteward.metadata.records import UserScramCredentialRecord, decode_record
from ksteward.protocol.apis import ApiKey

GROUP_COMMIT_OFF = {"ksteward.metadata.group.commit.enable": "false"}
SCRAM_SHA_256, SCRAM_ITERATIONS = 1, 4096
log = logging.getLogger("bench")


@dataclass(frozen=True)
class Params:
    quick: bool
    sections: tuple[str, ...]
    requests_1: int  # requests per cell with 1 connection
    requests_50: int  # requests per cell with 50 connections
    rounds: int  # each cell's count is split into this many interleaved rounds
    warmup: int  # requests on each connection set before the first round, not counted
    metadata_topics: int  # topics (3 partitions each) the server holds during section 1
    mutations: int  # AlterUserScramCredentials requests per mutation cell
    snapshot_topics: int  # snapshot: topics x (1 TopicRecord + 3 PartitionRecords)
    snapshot_configs: int  # snapshot: TOPIC ConfigRecords
    snapshot_acls: int  # snapshot: AccessControlEntryRecords
    snapshot_runs: int
    cell_seconds: float  # time budget of one cell (all its rounds); requests not sent by then are dropped
    connections: tuple[int, ...] = (1, 50)
    mutation_connections: tuple[int, ...] = (50, 1)
    mutation_processes: int = 3  # servers of each mode, sharing every mutation cell

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> Params:
        quick = bool(args.quick)
        topics = args.snapshot_topics if args.snapshot_topics is not None else (10_000 if quick else 100_000)
        return cls(
            quick=quick,
            sections=tuple(args.only or SECTIONS),
            requests_1=args.requests_1 or (2_000 if quick else 20_000),
            requests_50=args.requests_50 or (5_000 if quick else 50_000),
            rounds=args.rounds,
            warmup=200 if quick else 1_000,
            metadata_topics=args.metadata_topics,
            mutations=args.mutations or (500 if quick else 15_000),
            snapshot_topics=topics,
            snapshot_configs=3 * topics,
            snapshot_acls=3 * topics,
            snapshot_runs=args.snapshot_runs,
            cell_seconds=args.cell_seconds,
            mutation_processes=args.mutation_processes,
        )

    @property
    def round_budget_s(self) -> float:
        return self.cell_seconds / self.rounds


# --- wire helpers -------------------------------------------------------------------------------------


def api_versions_frame() -> bytes:
    return encode_request(ApiKey.API_VERSIONS, 3, {"client_software_name": CLIENT_ID, "client_software_version": "1"})


def metadata_frame() -> bytes:
    values = {"topics": None, "allow_auto_topic_creation": False, "include_topic_authorized_operations": False}
    return encode_request(ApiKey.METADATA, 12, values)


def api_versions_ok(payload: bytes) -> bool:
    return payload[4:6] == b"\x00\x00"  # response header v0, then the error code


# --- 1. request throughput and latency ------------------------------------------------------------------

REQUEST_COLUMNS = [
    ("api", "api"), ("conns", "connections"), ("requests", "requests"), ("failed", "failed"), ("req/s", "per_s"),
    ("rounds req/s", "rounds"), ("p50 ms", "p50_ms"), ("p99 ms", "p99_ms"), ("p99.9 ms", "p999_ms"),
    ("client CPU s", "client_cpu_s"), ("server CPU s", "server_cpu_s"), ("client us/req", "client_cpu_us_per_req"),
    ("server us/req", "server_cpu_us_per_req"),
]  # fmt: skip


async def section_requests(p: Params, workdir: Path) -> dict[str, Any]:
    port, controller_port = free_ports(2)
    data_dir = None
    if p.metadata_topics:
        build = await build_snapshot_dir(workdir, "requests-data", (port, controller_port), p.metadata_topics, 0, 0)
        data_dir = build.data_dir
    server = ServerProcess(workdir, "requests", data_dir=data_dir, ports=(port, controller_port))
    # Issue 17's multi-process option, measured before it is chosen: two independent processes, the connections
    # dealt over them as the kernel deals them over the processes of an SO_REUSEPORT port (each would follow the
    # metadata log as a broker does). An upper bound: no process here pays for following the log.
    second = None if p.metadata_topics else ServerProcess(workdir, "requests-2")
    apis: list[tuple[str, bytes, Callable[[bytes], bool] | None]] = [
        ("ApiVersions v3", api_versions_frame(), api_versions_ok),
        ("Metadata v12 (all topics)", metadata_frame(), None),
    ]
    ceiling: CeilingProcess | None = None
    try:
        await server.start()
        if second is not None:
            await second.start()
        probe = await FrameClient.connect(server.port)
        try:
            av_payload = await probe.request(with_correlation_id(apis[0][1], 1))
            _, av = decode_response(ApiKey.API_VERSIONS, 3, av_payload)
            _, md = decode_response(ApiKey.METADATA, 12, await probe.request(with_correlation_id(apis[1][1], 2)))
        finally:
            await probe.aclose()
        assert int(av.error_code) == 0, av
        assert len(md.topics) == p.metadata_topics, (len(md.topics), p.metadata_topics)
        # The ceiling (issue 17): a minimal asyncio server answering ksteward's own ApiVersions bytes.
        ceiling = CeilingProcess(workdir, av_payload)
        await ceiling.start()
        cells: list[tuple[str, bytes, Callable[[bytes], bool] | None, int, Measured]] = [
            (label, frame, check, conns, server) for label, frame, check in apis for conns in p.connections
        ]
        if second is not None:
            pair = MeasuredGroup("2 processes", [server, second])
            cells += [(f"{label}, {TWO_PROCESSES}", frame, check, max(p.connections), pair)
                      for label, frame, check in apis]  # fmt: skip
        cells += [(CEILING_LABEL, apis[0][1], api_versions_ok, conns, ceiling) for conns in p.connections]
        rounds: dict[int, list[LoadResult]] = {i: [] for i in range(len(cells))}
        for _label, frame, check, conns, target in cells:
            warm = [with_correlation_id(frame, -1 - i) for i in range(p.warmup)]
            await closed_loop(target, split(warm, conns), check=check, budget_s=min(10.0, p.round_budget_s))
        for r in range(p.rounds):
            for index, (_label, frame, check, conns, target) in enumerate(cells):
                count = round_counts(p.requests_1 if conns == 1 else p.requests_50, p.rounds)[r]
                frames = [with_correlation_id(frame, i) for i in range(count)]
                result = await closed_loop(target, split(frames, conns), check=check, budget_s=p.round_budget_s)
                rounds[index].append(result)
            print(f"  round {r + 1}/{p.rounds} done", flush=True)
        await server.stop()
        if second is not None:
            await second.stop()
        await ceiling.stop()
    finally:
        server.kill()
        if second is not None:
            second.kill()
        if ceiling is not None:
            await ceiling.stop()
    rows = [
        {"api": label, "connections": conns, **cell_stats(merge(rounds[i]), rounds[i])}
        for i, (label, _, _, conns, _) in enumerate(cells)
    ]
    ratios = ceiling_ratios(rows, p.connections)
    print()
    title = (
        f"1. Requests over loopback: closed loop, one request in flight per connection "
        f"({len(md.topics)} topics, {len(md.brokers)} broker; each cell in {p.rounds} interleaved rounds)"
    )
    print(table(title, REQUEST_COLUMNS, rows))
    print()
    print(table("   ksteward against the ceiling (goal: at least 0.5 for ApiVersions and small Metadata)",
                RATIO_TO_CEILING_COLUMNS, ratios))  # fmt: skip
    problems = [f"{r['api']}, {r['connections']} connection(s): {r['failed']} failed" for r in rows if r["failed"]]
    problems += [f"{r['api']}, {r['connections']} connection(s): stopped by the time budget after "
                 f"{r['requests']:,} requests" for r in rows if r["truncated"]]  # fmt: skip
    problems += [f"server log: {line}" for line in server.log_errors()]
    if second is not None:
        problems += [f"second server log: {line}" for line in second.log_errors()]
    warn(problems)
    return {
        "client_model": "asyncio Protocol, closed loop: each connection sends one request and awaits its "
        "response before sending the next; frames pre-encoded with kio, correlation ids patched before "
        "the clock starts; the client checks each correlation id (and the ApiVersions error code)",
        "metadata_topics": len(md.topics),
        "brokers": len(md.brokers),
        "cells": rows,
        "ceiling_ratios": ratios,
        "problems": problems,
    }


CEILING_LABEL = "ceiling: pre-encoded ApiVersions"
TWO_PROCESSES = "2 processes"
RATIO_TO_CEILING_COLUMNS = [("api", "api"), ("conns", "connections"), ("ksteward req/s", "per_s"),
                            ("ceiling req/s", "ceiling_per_s"), ("ksteward / ceiling", "ratio")]  # fmt: skip


def ceiling_ratios(rows: list[dict[str, Any]], connections: tuple[int, ...]) -> list[dict[str, Any]]:
    """Each ksteward cell's rate over the ceiling's at the same connection count."""
    ceiling = {r["connections"]: r["per_s"] for r in rows if r["api"] == CEILING_LABEL}
    return [
        {"api": r["api"], "connections": r["connections"], "per_s": r["per_s"],
         "ceiling_per_s": ceiling[r["connections"]], "ratio": round(r["per_s"] / ceiling[r["connections"]], 3)}
        for r in rows
        if r["api"] != CEILING_LABEL and ceiling.get(r["connections"])
    ]  # fmt: skip


# --- 2. durable mutations: group commit vs one fsync per batch -----------------------------------------

MUTATION_COLUMNS = [
    ("mode", "mode"), ("conns", "connections"), ("mutations", "requests"), ("failed", "failed"),
    ("mut/s", "per_s"), ("rounds mut/s", "rounds"), ("p50 ms", "p50_ms"), ("p99 ms", "p99_ms"),
    ("client CPU s", "client_cpu_s"), ("server CPU s", "server_cpu_s"), ("server us/mut", "server_cpu_us_per_req"),
    ("processes mut/s", "processes"), ("process spread", "process_spread"),
]  # fmt: skip
RATIO_COLUMNS = [
    ("conns", "connections"), ("group mut/s", "group_per_s"), ("one-by-one mut/s", "one_by_one_per_s"),
    ("group / one-by-one", "ratio"), ("group p50 ms", "group_p50_ms"), ("one-by-one p50 ms", "one_by_one_p50_ms"),
]  # fmt: skip
VERIFY_COLUMNS = [
    ("mode", "mode"), ("acked users", "acked_users"), ("described", "described_users"),
    ("acked not described", "acked_not_described"), ("in log", "users_in_log"),
    ("acked missing from log", "acked_missing_from_log"), ("log batches", "log_batches"),
]  # fmt: skip
MODES = {"group": {}, "one-by-one": GROUP_COMMIT_OFF}


def scram_credential() -> tuple[bytes, bytes]:
    """One salt and salted password (PBKDF2-HMAC-SHA256, 4096 iterations), reused for every user."""
    salt = hashlib.sha256(b"ksteward-bench-salt").digest()
    return salt, hashlib.pbkdf2_hmac("sha256", b"bench-password", salt, SCRAM_ITERATIONS)


def alter_scram_frames(users: list[str], salt: bytes, salted: bytes) -> list[bytes]:
    """One AlterUserScramCredentials v0 request per user, each with a single upsertion."""
    frames = []
    for i, user in enumerate(users):
        upsertion = {
            "name": user,
            "mechanism": SCRAM_SHA_256,
            "iterations": SCRAM_ITERATIONS,
            "salt": salt,
            "salted_password": salted,
        }
        body = {"deletions": [], "upsertions": [upsertion]}
        frames.append(encode_request(ApiKey.ALTER_USER_SCRAM_CREDENTIALS, 0, body, correlation_id=i))
    return frames


def alter_scram_checker(acked: set[str]) -> Callable[[bytes], bool]:
    """A response check that also collects the users whose upsertion was acknowledged."""

    def check(payload: bytes) -> bool:
        _, body = decode_response(ApiKey.ALTER_USER_SCRAM_CREDENTIALS, 0, payload)
        ok = len(body.results) == 1 and int(body.results[0].error_code) == 0
        if ok:
            acked.add(body.results[0].user)
        return ok

    return check


async def describe_scram_users(server: ServerProcess) -> set[str]:
    client = await FrameClient.connect(server.port)
    try:
        payload = await client.request(encode_request(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, 0, {"users": None}, 1))
    finally:
        await client.aclose()
    _, body = decode_response(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, 0, payload)
    assert int(body.error_code) == 0, body
    return {r.user for r in body.results if int(r.error_code) == 0}


def scram_users_in_log(data_dir: Path) -> tuple[set[str], int]:
    """User names of the UserScramCredentialRecords in the log segments, and how many batches there are.
    The committer keeps the active segment when it snapshots, so every batch of the run is there."""
    names: set[str] = set()
    batches = 0
    with MetadataLog.open(data_dir, read_only=True, logger=log) as metadata_log:
        for batch in metadata_log.read(metadata_log.log_start_offset):
            batches += 1
            for _offset, _ts, _key, value in batch.records:
                if value is not None and not batch.is_control:
                    record = decode_record(value)
                    if isinstance(record, UserScramCredentialRecord):
                        names.add(record.name)
    return names, batches


async def section_mutations(p: Params, workdir: Path) -> dict[str, Any]:
    salt, salted = scram_credential()
    servers = {mode: [ServerProcess(workdir, f"{mode}-{k}", overrides=o) for k in range(p.mutation_processes)]
               for mode, o in MODES.items()}  # fmt: skip
    everyone = [s for group in servers.values() for s in group]
    sent: dict[str, list[str]] = {mode: [] for mode in MODES}
    acked: dict[str, set[str]] = {mode: set() for mode in MODES}
    # results[(connections, mode)][process]: that process's rounds
    results: dict[tuple[int, str], list[list[LoadResult]]] = {
        (c, m): [[] for _ in range(p.mutation_processes)] for c in p.mutation_connections for m in MODES
    }
    verification: dict[str, dict[str, Any]] = {}
    try:
        await asyncio.gather(*(s.start() for s in everyone))
        for r in range(p.rounds):
            # Alternate which mode goes first, so slow drift of the machine's load hits both alike.
            for i, conns in enumerate(p.mutation_connections):
                count = round_counts(p.mutations, p.rounds)[r]
                for k, share in enumerate(round_counts(count, p.mutation_processes)):
                    for mode in list(MODES) if (r + i + k) % 2 == 0 else list(reversed(MODES)):
                        users = [f"bench-{mode}-c{conns}-r{r}-p{k}-{j:06d}" for j in range(share)]
                        sent[mode] += users
                        frames = alter_scram_frames(users, salt, salted)
                        check = alter_scram_checker(acked[mode])
                        result = await closed_loop(servers[mode][k], split(frames, conns), check=check,
                                                   budget_s=p.round_budget_s / p.mutation_processes)  # fmt: skip
                        results[(conns, mode)][k].append(result)
            print(f"  round {r + 1}/{p.rounds} done", flush=True)
        described = {mode: set[str]().union(*[await describe_scram_users(s) for s in group])
                     for mode, group in servers.items()}  # fmt: skip
        await asyncio.gather(*(s.stop() for s in everyone))
    finally:
        for s in everyone:
            s.kill()
    cells = []
    for (conns, mode), by_process in results.items():
        rounds = [merge([parts[r] for parts in by_process]) for r in range(p.rounds)]
        cells.append({"mode": mode, "connections": conns, **cell_stats(merge(rounds), rounds),
                      **process_stats(by_process)})  # fmt: skip
    for mode, group in servers.items():
        in_log: set[str] = set()
        batches = 0
        for server in group:
            names, n = await asyncio.to_thread(scram_users_in_log, server.data_dir)
            in_log |= names
            batches += n
        verification[mode] = {
            "mode": mode,
            "sent": len(sent[mode]),
            "acked_users": len(acked[mode]),
            "described_users": len(described[mode]),
            "acked_not_described": len(acked[mode] - described[mode]),
            "users_in_log": len(in_log),
            "acked_missing_from_log": len(acked[mode] - in_log),
            "log_batches": batches,
        }
    ratios = []
    for conns in p.mutation_connections:
        g, o = (next(c for c in cells if c["connections"] == conns and c["mode"] == m) for m in MODES)
        ratio = round(g["per_s"] / o["per_s"], 3) if o["per_s"] else None
        ratios.append({"connections": conns, "group_per_s": g["per_s"], "one_by_one_per_s": o["per_s"],
                       "ratio": ratio, "group_p50_ms": g["p50_ms"], "one_by_one_p50_ms": o["p50_ms"]})  # fmt: skip
    print()
    # The first process of each mode gets the largest share of every round.
    per_round = [sum(round_counts(round_counts(p.mutations, p.rounds)[r], p.mutation_processes)[0]
                     for _ in p.mutation_connections) for r in range(p.rounds)]  # fmt: skip
    users_before = [sum(per_round[:r]) for r in range(p.rounds + 1)]
    starts = " / ".join(f"{u:,}" for u in users_before[:-1])
    print(table(f"2. Durable mutations: AlterUserScramCredentials v0, one upsertion for a fresh user each "
                f"({p.mutations:,} per cell in {p.rounds} interleaved rounds, shared by {p.mutation_processes} "
                f"servers of each mode; the reply leaves after the fsync). Users per server at the start of each "
                f"round: {starts}, at the end {users_before[-1]:,}", MUTATION_COLUMNS, cells))  # fmt: skip
    print(table("   group commit vs one fsync per batch", RATIO_COLUMNS, ratios))
    print(table("   durability: DescribeUserScramCredentials after the runs; the log on disk after SIGTERM",
                VERIFY_COLUMNS, list(verification.values())))  # fmt: skip
    problems = [f"{c['mode']}, {c['connections']} connection(s): {c['failed']} failed" for c in cells if c["failed"]]
    problems += [f"{c['mode']}, {c['connections']} connection(s): stopped by the time budget after "
                 f"{c['requests']:,} mutations" for c in cells if c["truncated"]]  # fmt: skip
    for mode, v in verification.items():
        if v["acked_not_described"] or v["acked_missing_from_log"]:
            problems.append(f"{mode}: {v['acked_not_described']} acked users not described, "
                            f"{v['acked_missing_from_log']} missing from the log")  # fmt: skip
        problems += [f"{s.name} server log: {line}" for s in servers[mode] for line in s.log_errors()]
    warn(problems)
    return {
        "cells": cells,
        "ratios": ratios,
        "users_per_server_before_round": users_before,
        "verification": verification,
        "problems": problems,
    }


# --- 3. start-up from a large snapshot ------------------------------------------------------------------

SNAPSHOT_COLUMNS = [
    ("run", "run"), ("ready line s", "ready_line_s"), ("ApiVersions s", "first_api_versions_s"),
    ("Metadata s", "metadata_all_topics_s"), ("(request s)", "metadata_request_s"), ("topics", "topics_listed"),
    ("partitions", "partitions_listed"), ("resp MiB", "metadata_response_mib"),
    ("peak RSS MiB loaded", "peak_rss_after_load_mib"), ("peak RSS MiB end", "peak_rss_mib"),
    ("server CPU s", "server_cpu_s_until_stop"), ("stop s", "stop_s"),
]  # fmt: skip


async def snapshot_run(run: int, build: SnapshotBuild, workdir: Path, ports: tuple[int, int]) -> dict[str, Any]:
    """Start a server on a fresh copy of the snapshot's data directory; time the first ApiVersions and
    the first Metadata (all topics) from process start; read its memory; stop it; check the answer."""
    data_dir = workdir / f"snapshot-run{run}"
    await asyncio.to_thread(shutil.copytree, build.data_dir, data_dir)
    server = ServerProcess(workdir, f"snapshot-run{run}", data_dir=data_dir, ports=ports)
    try:
        ready_s = await server.start(timeout=900, probe=False)
        client = await FrameClient.connect(server.port)
        try:
            payload = await client.request(with_correlation_id(api_versions_frame(), 1), timeout=60)
            api_s = time.perf_counter() - server.spawned_at
            assert api_versions_ok(payload), payload[:16]
            hwm_loaded, rss_loaded = server.status_kib("VmHWM"), server.status_kib("VmRSS")
            payload = await client.request(with_correlation_id(metadata_frame(), 2), timeout=900)
            metadata_s = time.perf_counter() - server.spawned_at
        finally:
            await client.aclose()
        hwm, rss, cpu = server.status_kib("VmHWM"), server.status_kib("VmRSS"), server.cpu_seconds()
        stop_s = await server.stop()
    finally:
        server.kill()
    await asyncio.to_thread(shutil.rmtree, data_dir)
    _, body = decode_response(ApiKey.METADATA, 12, payload)  # after the clock: checks the image really loaded
    server_log = server.log_path.read_text(errors="replace")
    return {
        "run": run,
        "server_log_errors": server.log_errors(),
        "ready_line_s": round(ready_s, 3),
        "first_api_versions_s": round(api_s, 3),
        "metadata_all_topics_s": round(metadata_s, 3),
        "metadata_request_s": round(metadata_s - api_s, 3),
        "metadata_response_mib": round((len(payload) + 4) / 2**20, 2),
        "topics_listed": len(body.topics),
        "partitions_listed": sum(len(t.partitions) for t in body.topics),
        "topic_errors": sum(1 for t in body.topics if int(t.error_code) != 0),
        "brokers_listed": len(body.brokers),
        "loaded_this_snapshot": f"loaded metadata snapshot {build.path.name}" in server_log,
        "wrote_snapshot_on_stop": "wrote snapshot" in server_log,
        "peak_rss_after_load_mib": round(hwm_loaded / 1024, 1),
        "rss_after_load_mib": round(rss_loaded / 1024, 1),
        "peak_rss_mib": round(hwm / 1024, 1),
        "rss_before_stop_mib": round(rss / 1024, 1),
        "server_cpu_s_until_stop": round(cpu, 2),
        "stop_s": round(stop_s, 3),
    }


async def section_snapshot(p: Params, workdir: Path) -> dict[str, Any]:
    port, controller_port = free_ports(2)
    build = await build_snapshot_dir(
        workdir, "snapshot-pristine", (port, controller_port), p.snapshot_topics, p.snapshot_configs, p.snapshot_acls
    )
    print(f"  wrote {build.path.name}: {build.records:,} records, {build.bytes / 2**20:.1f} MiB in "
          f"{build.seconds:.1f}s", flush=True)  # fmt: skip
    runs = []
    for run in range(1, p.snapshot_runs + 1):
        runs.append(await snapshot_run(run, build, workdir, (port, controller_port)))
        print(f"  run {run}: ApiVersions after {runs[-1]['first_api_versions_s']:.2f}s, {runs[-1]['topics_listed']:,} "
              f"topics after {runs[-1]['metadata_all_topics_s']:.2f}s", flush=True)  # fmt: skip
    keys = (
        "ready_line_s",
        "first_api_versions_s",
        "metadata_all_topics_s",
        "metadata_request_s",
        "peak_rss_after_load_mib",
        "peak_rss_mib",
        "server_cpu_s_until_stop",
        "stop_s",
    )
    summary: dict[str, Any] = {key: round(median([r[key] for r in runs]), 3) for key in keys}
    print()
    print(table(f"3. Start from a snapshot of {build.records:,} records ({build.bytes / 2**20:.1f} MiB, written in "
                f"{build.seconds:.1f}s); seconds from process start", SNAPSHOT_COLUMNS,
                [*runs, {"run": "median", **summary}]))  # fmt: skip
    expected = p.snapshot_topics
    problems = [
        f"run {r['run']}: {what}"
        for r in runs
        for what, bad in [
            (f"listed {r['topics_listed']} topics, expected {expected}", r["topics_listed"] != expected),
            (
                f"listed {r['partitions_listed']} partitions, expected {3 * expected}",
                r["partitions_listed"] != 3 * expected,
            ),
            (f"{r['topic_errors']} topics with an error code", r["topic_errors"] > 0),
            ("did not load the benchmark's snapshot", not r["loaded_this_snapshot"]),
            ("wrote a snapshot on stop, so it had appended records", r["wrote_snapshot_on_stop"]),
        ]
        if bad
    ]
    problems += [f"run {r['run']} server log: {line}" for r in runs for line in r["server_log_errors"]]
    warn(problems)
    snapshot = {"file": build.path.name, "records": build.records, "bytes": build.bytes,
                "write_s": round(build.seconds, 3), "end_offset": build.end_offset}  # fmt: skip
    return {"snapshot": snapshot, "runs": runs, "median": summary, "problems": problems}


# --- main ---------------------------------------------------------------------------------------------

SECTIONS = {"requests": section_requests, "mutations": section_mutations, "snapshot": section_snapshot}
# The snapshot section waits up to 15 minutes for readiness and 15 for the Metadata answer: no overall cap.
BENCHMARK = Benchmark("server", "server", section_timeout_s=None)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    p = Params.from_args(args)
    return BENCHMARK.main(args, p, {name: run for name, run in SECTIONS.items() if name in p.sections})


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    out = parser(__doc__, "server", "smoke test with small counts (about 30 seconds)")
    add = out.add_argument
    add("--only", action="append", choices=list(SECTIONS), help="run only this section (repeatable)")
    add("--requests-1", type=int, help="requests per cell with 1 connection (default 20000, quick 2000)")
    add("--requests-50", type=int, help="requests per cell with 50 connections (default 50000, quick 5000)")
    add("--rounds", type=int, default=3, help="interleaved rounds per cell (default 3)")
    add("--metadata-topics", type=int, default=0, help="topics (3 partitions each) during section 1 (default 0)")
    add("--mutations", type=int, help="mutations per cell (default 15000, quick 500)")
    add(
        "--mutation-processes",
        type=int,
        default=3,
        help="mutations: servers of each mode, sharing every cell "
        "(default 3: two processes of the same code differ by a few per cent)",
    )
    add("--snapshot-topics", type=int, help="snapshot size: 10 records per topic (default 100000, quick 10000)")
    add("--snapshot-runs", type=int, default=3, help="server starts from the snapshot (default 3)")
    add("--cell-seconds", type=float, default=120.0, help="time budget per cell of sections 1 and 2 (default 120)")
    return out.parse_args(argv)


if __name__ == "__main__":
    sys.exit(main())
