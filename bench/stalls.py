"""Big requests, and what they do to everyone else: the time to the last byte of the largest answers, and the
latency of a second client's ApiVersions while they run (issue 17's "no request blocks the others").

    .venv/bin/python -m bench.stalls            # 100,000 topics; 100,000 ACLs and 1,000 topics with configs
    .venv/bin/python -m bench.stalls --quick    # 10,000 topics and 10,000 ACLs (a smoke test)

Each server starts from a snapshot built beforehand (``bench/_harness/snapshot.py``), with the
StandardAuthorizer on and ANONYMOUS (the PLAINTEXT clients) a super user, so every topic is authorized.
While the big request runs, a probe connection sends ApiVersions in a closed loop; its latencies bound the
longest stall of the server's event loop from the outside: a request answered in N ms waited at most N ms.

Cells (each big request ``--runs`` times; the first run of Metadata is the server's first, so its topics are
encoded from the image, the later ones reuse the kept bytes):
- Metadata v12 of every topic;
- DescribeAcls v3 of every ACL (the ANY filter);
- DescribeConfigs v4 of 1,000 topics;
- DeleteAcls v3 of every ACL, once: it deletes them, in requests of at most 10,000 ACLs (Kafka's cap on the
  records of one request).

Prints one table and writes ``bench/results/stalls.json``. Goals: Metadata of 100,000 topics in at most
0.5 s to the last byte, and the probe's p99 at most 20 ms during Metadata and during the DeleteAcls.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench._harness.cluster import SECURITY
from bench._harness.cpu import Measured
from bench._harness.report import percentile_ms, table, warn
from bench._harness.runner import Benchmark, parser
from bench._harness.server import ServerProcess
from bench._harness.snapshot import build_snapshot_dir, topic_name
from bench._harness.wire import FrameClient, decode_response, encode_request, free_ports, with_correlation_id
from bench.server import api_versions_frame, metadata_frame
from ksteward.protocol.apis import ApiKey

ANY_ACL = {"resource_type_filter": 1, "resource_name_filter": None, "pattern_type_filter": 1, "principal_filter": None,
           "host_filter": None, "operation": 1, "permission_type": 1}  # fmt: skip


@dataclass(frozen=True)
class Params:
    quick: bool
    topics: int
    acls: int
    config_topics: int
    runs: int

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> Params:
        return cls(
            quick=args.quick,
            topics=args.topics or (10_000 if args.quick else 100_000),
            acls=args.acls or (10_000 if args.quick else 100_000),
            config_topics=1_000,
            runs=args.runs,
        )


@dataclass
class Probe:
    """ApiVersions in a closed loop on its own connection until stopped: the others' view of a big request."""

    server: Measured
    latencies_ns: list[int]
    stop: asyncio.Event

    @classmethod
    def of(cls, server: Measured) -> Probe:
        return cls(server, [], asyncio.Event())

    async def run(self) -> None:
        client = await FrameClient.connect(self.server.port)
        frame = api_versions_frame()
        try:
            cid = 0
            while not self.stop.is_set():
                cid += 1
                started = time.perf_counter_ns()
                await client.request(with_correlation_id(frame, cid), timeout=600)
                self.latencies_ns.append(time.perf_counter_ns() - started)
        finally:
            await client.aclose()


async def timed_with_probe(
    server: Measured, frames: list[bytes], check: Callable[[bytes], int], unit: str
) -> dict[str, Any]:
    """Send ``frames`` one after the other on a new connection with the probe running; the seconds to the last
    byte of the last answer, the ``unit``s ``check`` counts in the answers, and the probe's latencies meanwhile."""
    client = await FrameClient.connect(server.port)
    probe = Probe.of(server)
    probe_task = asyncio.create_task(probe.run())
    try:
        while not probe.latencies_ns:  # the probe is connected and answered once before the clock starts
            await asyncio.sleep(0.001)
        before = len(probe.latencies_ns)
        started = time.perf_counter()
        payloads = [await client.request(frame, timeout=900) for frame in frames]
        seconds = time.perf_counter() - started
    finally:
        probe.stop.set()
        await probe_task
        await client.aclose()
    during = probe.latencies_ns[before:]
    return {
        "seconds": round(seconds, 3),
        "requests": len(frames),
        "answer": f"{sum(check(payload) for payload in payloads):,} {unit}",
        "mib": round(sum(len(payload) for payload in payloads) / 2**20, 2),
        "probe_requests": len(during),
        "probe_p50_ms": round(percentile_ms(during, 50), 2),
        "probe_p99_ms": round(percentile_ms(during, 99), 2),
        "probe_max_ms": round(max(during) / 1e6, 2) if during else None,
    }


def count_check(api: int, version: int, field: str, inner: str | None = None) -> Callable[[bytes], int]:
    """Counts the entries of ``field`` (or of each entry's ``inner``) of an answer; fails on an error code."""

    def check(payload: bytes) -> int:
        _, body = decode_response(api, version, payload)
        items = getattr(body, field)
        assert all(int(getattr(i, "error_code", 0)) == 0 for i in items), items[:3]
        return sum(len(getattr(i, inner)) for i in items) if inner else len(items)

    return check


def delete_all_frames(acls: int, topics: int) -> list[bytes]:
    """DeleteAcls requests that together delete every generated ACL, none over Kafka's 10,000 records a request
    (``QuorumController.MAX_RECORDS_PER_USER_OP``): the PREFIXED ones (all on one name) first, then the
    LITERAL ones, 100 topic names (about ``acls / topics`` ACLs each) a request."""

    def name_filter(name: str, pattern: int) -> dict[str, Any]:
        return {**ANY_ACL, "resource_type_filter": 2, "resource_name_filter": name, "pattern_type_filter": pattern}

    frames = [encode_request(ApiKey.DELETE_ACLS, 3, {"filters": [name_filter(topic_name(0)[:14], 4)]})]
    names = [topic_name(t) for t in range(topics)]
    per_request = max(1, min(100, 9_000 // max(1, acls // max(topics, 1))))
    for start in range(0, len(names), per_request):
        filters = [name_filter(n, 3) for n in names[start : start + per_request]]
        frames.append(encode_request(ApiKey.DELETE_ACLS, 3, {"filters": filters}))
    return frames


COLUMNS = [("request", "request"), ("run", "run"), ("requests", "requests"), ("s to last byte", "seconds"),
           ("answer", "answer"),
           ("MiB", "mib"), ("probe requests", "probe_requests"), ("probe p50 ms", "probe_p50_ms"),
           ("probe p99 ms", "probe_p99_ms"), ("probe max ms", "probe_max_ms")]  # fmt: skip


async def start_from_snapshot(workdir: Path, name: str, topics: int, configs: int, acls: int) -> ServerProcess:
    port, controller_port = free_ports(2)
    ports = (port, controller_port)
    build = await build_snapshot_dir(workdir, f"{name}-data", ports, topics, configs, acls, principals=max(acls, 1))
    server = ServerProcess(workdir, name, data_dir=build.data_dir, ports=ports, overrides=SECURITY)
    await server.start(timeout=900)
    return server


async def section_big(p: Params, workdir: Path) -> dict[str, Any]:
    rows: list[dict[str, Any]] = []
    problems: list[str] = []
    server = await start_from_snapshot(workdir, "topics", p.topics, 0, 0)
    try:
        check = count_check(ApiKey.METADATA, 12, "topics")
        for run in range(1, p.runs + 1):
            frame = with_correlation_id(metadata_frame(), run)
            rows.append({"request": f"Metadata v12, all {p.topics:,} topics", "run": run,
                         **await timed_with_probe(server, [frame], check, "topics")})  # fmt: skip
            print(f"  Metadata run {run}: {rows[-1]['seconds']} s", flush=True)
        problems += [f"topics server log: {line}" for line in server.log_errors()]
        await server.stop()
    finally:
        server.kill()
    server = await start_from_snapshot(workdir, "acls", p.config_topics, 3 * p.config_topics, p.acls)
    try:
        describe_acls = encode_request(ApiKey.DESCRIBE_ACLS, 3, ANY_ACL)
        for run in range(1, p.runs + 1):
            rows.append({"request": f"DescribeAcls v3, all {p.acls:,} ACLs", "run": run,
                         **await timed_with_probe(server, [with_correlation_id(describe_acls, run)],
                                                  count_check(ApiKey.DESCRIBE_ACLS, 3, "resources", "acls"),
                                                  "ACLs")})  # fmt: skip
        resources = [{"resource_type": 2, "resource_name": topic_name(t), "configuration_keys": None}
                     for t in range(p.config_topics)]  # fmt: skip
        describe_configs = encode_request(ApiKey.DESCRIBE_CONFIGS, 4, {"resources": resources,
                                                                       "include_synonyms": False,
                                                                       "include_documentation": False})  # fmt: skip
        for run in range(1, p.runs + 1):
            rows.append({"request": f"DescribeConfigs v4, {p.config_topics:,} topics", "run": run,
                         **await timed_with_probe(server, [with_correlation_id(describe_configs, run)],
                                                  count_check(ApiKey.DESCRIBE_CONFIGS, 4, "results"),
                                                  "topics")})  # fmt: skip
        deletes = [with_correlation_id(f, i) for i, f in enumerate(delete_all_frames(p.acls, p.config_topics))]
        check = count_check(ApiKey.DELETE_ACLS, 3, "filter_results", "matching_acls")
        rows.append({"request": f"DeleteAcls v3, all {p.acls:,} ACLs", "run": 1,
                     **await timed_with_probe(server, deletes, check, "ACLs deleted")})  # fmt: skip
        problems += [f"acls server log: {line}" for line in server.log_errors()]
        await server.stop()
    finally:
        server.kill()
    print()
    print(table(f"Big requests, with a second client's ApiVersions meanwhile ({p.topics:,} topics; {p.acls:,} ACLs)",
                COLUMNS, rows))  # fmt: skip
    metadata = [r for r in rows if r["request"].startswith("Metadata")]
    deletes = [r for r in rows if r["request"].startswith("DeleteAcls")]
    goals = {
        "metadata_last_byte_s_max": max(r["seconds"] for r in metadata),
        "metadata_probe_p99_ms_max": max(r["probe_p99_ms"] for r in metadata),
        "delete_acls_probe_p99_ms": deletes[0]["probe_p99_ms"],
        "longest_stall_seen_ms": max(r["probe_max_ms"] or 0 for r in rows),
    }
    print(
        f"\n  goals: Metadata <= 0.5 s to the last byte: {goals['metadata_last_byte_s_max']} s (worst run); probe "
        f"p99 <= 20 ms during Metadata: {goals['metadata_probe_p99_ms_max']} ms, during DeleteAcls: "
        f"{goals['delete_acls_probe_p99_ms']} ms; longest stall a probe saw: {goals['longest_stall_seen_ms']} ms"
    )
    warn(problems)
    return {"cells": rows, "goals": goals, "problems": problems}


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    p = Params.from_args(args)
    return Benchmark("stalls", "big-request", section_timeout_s=None).main(args, p, {"big": section_big})


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    out = parser(__doc__, "stalls", "10,000 topics and 10,000 ACLs")
    add = out.add_argument
    add("--topics", type=int, help="topics (3 partitions each) for Metadata (default 100000, quick 10000)")
    add("--acls", type=int, help="ACLs for DescribeAcls and DeleteAcls (default 100000, quick 10000)")
    add("--runs", type=int, default=3, help="runs of each read (default 3)")
    return out.parse_args(argv)


if __name__ == "__main__":
    sys.exit(main())
