"""Catch-up benchmark: how long an empty broker-only node takes to catch up from the controller's snapshot
(FetchSnapshot, KIP-630) against a cold start of a broker whose data directory already holds that snapshot.

    .venv/bin/python -m bench.catchup            # 1,000,000 ACL records (a few minutes on 2 cores)
    .venv/bin/python -m bench.catchup --quick    # 100,000 ACL records

1. A controller-only node starts on an empty data directory (it formats it with the cluster's id, writes
   metadata.version and its shutdown snapshot) and stops. With ``MetadataLog.write_snapshot``, a snapshot is
   then written at the log's end: the controller's own records, then ``--records`` AccessControlEntryRecords
   (``bench-catchup-<i>`` topics, ten principals each, every tenth resource PREFIXED).
2. The controller starts again on that directory (the time it takes to load is reported, not compared).
3. Per run (``--runs``), in alternating order:
   - ``fetch``: an empty broker-only node (a new node id) is spawned. Its log is empty, so the controller
     answers its Fetch with the snapshot id, and it downloads the snapshot with FetchSnapshot, installs it,
     replays it into its image and authorizer, registers, and opens its client listener only once the
     controller has unfenced it: caught up.
   - ``local``: a broker-only node (a new node id) whose empty data directory has been given a copy of the
     snapshot file the ``fetch`` broker downloaded (byte-identical to the controller's): it loads it from
     disk, fetches the records after it, registers and is unfenced in the same way.

   Each time runs from spawn to the ``is serving on`` line (the ready line), then an ApiVersions and a
   DescribeAcls for one resource, which must list its ten ACLs (the image really holds the snapshot). Log
   lines are timed too: ``installed metadata snapshot`` (fetch: the download is complete), ``loaded metadata
   snapshot`` (fetch: image and authorizer built; local: the image only) and ``resuming the metadata log``
   (local: the authorizer is loaded too). Peak RSS is the broker's ``VmHWM`` once ready.

Prints a table, the fetch / local ratio (the goal: within 2x), and writes ``bench/results/catchup.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import random
import shutil
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kio.static.primitive import i8

from bench._harness.cluster import broker_node, controller_node, new_cluster_id
from bench._harness.report import median, table, warn
from bench._harness.runner import Benchmark, parser
from bench._harness.server import ServerProcess
from bench._harness.snapshot import SnapshotBuild, append_snapshot, bootstrap
from bench._harness.wire import FrameClient, decode_response, encode_request
from ksteward.metadata.records import AccessControlEntryRecord, MetadataRecord
from ksteward.protocol.apis import ApiKey

TOPIC, LITERAL, PREFIXED, ANY = 2, 3, 4, 1
ACLS_PER_RESOURCE = 10
GOAL_RATIO = 2.0  # the goal: catch-up by FetchSnapshot within 2x of a local cold start
INSTALLED = "installed metadata snapshot"
LOADED = "loaded metadata snapshot"
RESUMING = "resuming the metadata log"
# A broker is unfenced on the first heartbeat that reports it caught up; at the default interval (2 s) that
# wait alone would add up to 2 s of noise to every start. The integration tests' cluster uses 200 ms too.
BROKER_SETTINGS = {"broker.heartbeat.interval.ms": "200"}


@dataclass(frozen=True)
class Params:
    quick: bool
    records: int  # AccessControlEntryRecords in the snapshot
    runs: int
    start_timeout_s: float

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> Params:
        quick = bool(args.quick)
        records = args.records or (100_000 if quick else 1_000_000)
        return cls(quick=quick, records=records, runs=args.runs, start_timeout_s=args.start_timeout)


def resource_name(index: int) -> str:
    return f"bench-catchup-{index:07d}"


def acl_records(count: int, seed: int = 14) -> Iterator[MetadataRecord]:
    """``count`` distinct ACLs: resource ``i // 10`` (every tenth resource PREFIXED), ten principals each,
    READ, WRITE or DESCRIBE, ALLOW from any host; ids drawn from a seeded generator."""
    rng = random.Random(seed)
    for a in range(count):
        resource = a // ACLS_PER_RESOURCE
        yield AccessControlEntryRecord(
            id=uuid.UUID(int=rng.getrandbits(128), version=4),
            resource_type=i8(TOPIC),
            resource_name=resource_name(resource),
            pattern_type=i8(PREFIXED if resource % 10 == 9 else LITERAL),
            principal=f"User:app-{a % ACLS_PER_RESOURCE}",
            host="*",
            operation=i8((3, 4, 8)[a % 3]),  # READ, WRITE, DESCRIBE
            permission_type=i8(3),  # ALLOW
        )


async def described_acls(port: int, resource: str) -> int:
    """How many ACLs a DescribeAcls for TOPIC LITERAL ``resource`` lists (any principal, host, operation)."""
    body = {"resource_type_filter": TOPIC, "resource_name_filter": resource, "pattern_type_filter": LITERAL,
            "principal_filter": None, "host_filter": None, "operation": ANY, "permission_type": ANY}  # fmt: skip
    client = await FrameClient.connect(port)
    try:
        payload = await client.request(encode_request(ApiKey.DESCRIBE_ACLS, 3, body, correlation_id=7), 120)
    finally:
        await client.aclose()
    _, response = decode_response(ApiKey.DESCRIBE_ACLS, 3, payload)
    assert int(response.error_code) == 0, response
    return sum(len(r.acls) for r in response.resources)


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


# --- one broker start ---------------------------------------------------------------------------------------


async def timed_start(broker: ServerProcess, mode: str, run: int, p: Params) -> dict[str, Any]:
    """Spawn ``broker``, time it to ready, read its memory and CPU, check its image, stop it."""
    try:
        await broker.spawn()
        ready_s = await broker.wait_ready(p.start_timeout_s)
        hwm_kib, cpu_s = broker.status_kib("VmHWM"), broker.cpu_seconds()
        await broker.api_versions()
        listed = await described_acls(broker.port, resource_name(0))
        await broker.stop()
    finally:
        broker.kill()
    text = broker.log_path.read_text(errors="replace")
    return {
        "mode": mode,
        "run": run,
        "node": broker.name,
        "ready_s": round(ready_s, 3),
        "installed_s": round(broker.seen[INSTALLED], 3) if INSTALLED in broker.seen else None,
        "loaded_s": round(broker.seen[LOADED], 3) if LOADED in broker.seen else None,
        "acls_ready_s": round(broker.seen[LOADED if mode == "fetch" else RESUMING], 3),
        "peak_rss_mib": round(hwm_kib / 1024, 1),
        "cpu_s_until_ready": round(cpu_s, 2),
        "acls_listed": listed,
        "fetched_snapshot": INSTALLED in text,
        "log_errors": broker.log_errors(),
    }


def seed_local_dir(fetched: ServerProcess, snapshot_name: str, target: Path) -> Path:
    """An empty broker data directory holding only the snapshot file ``fetched`` downloaded, at the same
    relative path; returns the copy."""
    source = next(fetched.data_dir.rglob(snapshot_name))
    copy = target / source.relative_to(fetched.data_dir)
    copy.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, copy)
    return copy


# --- the section --------------------------------------------------------------------------------------------

COLUMNS = [
    ("mode", "mode"), ("run", "run"), ("node", "node"), ("ready s", "ready_s"),
    ("snapshot installed s", "installed_s"), ("image loaded s", "loaded_s"), ("image + ACLs s", "acls_ready_s"),
    ("CPU s to ready", "cpu_s_until_ready"),
    ("peak RSS MiB", "peak_rss_mib"), ("ACLs listed", "acls_listed"),
]  # fmt: skip


async def section_catchup(p: Params, workdir: Path) -> dict[str, Any]:
    cluster_id = new_cluster_id()
    controller = controller_node(workdir, "controller", cluster_id, watch=(LOADED,))
    await bootstrap(controller)
    build: SnapshotBuild = await asyncio.to_thread(append_snapshot, controller.data_dir, acl_records(p.records))
    print(f"  wrote {build.path.name}: {build.records:,} records, {build.bytes / 2**20:.1f} MiB in "
          f"{build.seconds:.1f}s", flush=True)  # fmt: skip
    rows: list[dict[str, Any]] = []
    problems: list[str] = []
    copies_identical = True
    try:
        controller_ready_s = await controller.start(timeout=p.start_timeout_s)
        print(f"  controller ready after {controller_ready_s:.1f}s", flush=True)
        for run in range(1, p.runs + 1):
            node_id = 2 * run
            fetch = broker_node(workdir, f"broker{node_id}-fetch", cluster_id, controller, node_id,
                                overrides=BROKER_SETTINGS, watch=(INSTALLED, LOADED))  # fmt: skip
            local = broker_node(workdir, f"broker{node_id + 1}-local", cluster_id, controller, node_id + 1,
                                overrides=BROKER_SETTINGS, watch=(LOADED, RESUMING))  # fmt: skip
            # The local start needs the fetched file, so fetch goes first in every run; the local start's
            # own runs land between fetches, which spreads the machine's drift over both.
            rows.append(await timed_start(fetch, "fetch", run, p))
            copy = await asyncio.to_thread(seed_local_dir, fetch, build.path.name, local.data_dir)
            copies_identical &= await asyncio.to_thread(sha256, copy) == await asyncio.to_thread(sha256, build.path)
            rows.append(await timed_start(local, "local", run, p))
            print(f"  run {run}: fetch ready after {rows[-2]['ready_s']:.2f}s, local after {rows[-1]['ready_s']:.2f}s",
                  flush=True)  # fmt: skip
        controller_hwm = controller.status_kib("VmHWM")
        await controller.stop()
    finally:
        controller.kill()
    summary = summarize(rows)
    print()
    print(table(f"Broker catch-up from a snapshot of {build.records:,} records ({build.bytes / 2**20:.1f} MiB); "
                "seconds from spawn", COLUMNS, rows))  # fmt: skip
    s = summary
    print(f"\nfetch / local (median ready s): {s['fetch_ready_s']} / {s['local_ready_s']} = {s['ratio']}x, "
          f"goal <= {GOAL_RATIO}x: {s['goal']}; image + ACLs: {s['fetch_acls_ready_s']} / "
          f"{s['local_acls_ready_s']} = {s['acls_ready_ratio']}x")  # fmt: skip
    for row in rows:
        if row["acls_listed"] != ACLS_PER_RESOURCE:
            problems.append(f"{row['node']}: DescribeAcls listed {row['acls_listed']}, expected {ACLS_PER_RESOURCE}")
        if row["fetched_snapshot"] != (row["mode"] == "fetch"):
            problems.append(f"{row['node']}: {'did not fetch' if row['mode'] == 'fetch' else 'fetched'} the snapshot")
        problems += [f"{row['node']} log: {line}" for line in row["log_errors"]]
    if not copies_identical:
        problems.append("a broker's downloaded snapshot differs from the controller's")
    problems += [f"controller log: {line}" for line in controller.log_errors()]
    warn(problems)
    snapshot = {"file": build.path.name, "records": build.records, "bytes": build.bytes,
                "write_s": round(build.seconds, 3), "end_offset": build.end_offset}  # fmt: skip
    return {
        "snapshot": snapshot,
        "controller_ready_s": round(controller_ready_s, 3),
        "controller_peak_rss_mib": round(controller_hwm / 1024, 1),
        "downloaded_copies_identical": copies_identical,
        "runs": rows,
        "summary": summary,
        "goal_ratio": GOAL_RATIO,
        "problems": problems,
    }


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    def mid(mode: str, key: str) -> float:
        return round(median([r[key] for r in rows if r["mode"] == mode]), 3)

    fetch, local = mid("fetch", "ready_s"), mid("local", "ready_s")
    ratio = round(fetch / local, 2)
    fetch_loaded, local_loaded = mid("fetch", "acls_ready_s"), mid("local", "acls_ready_s")
    return {
        "fetch_ready_s": fetch,
        "local_ready_s": local,
        "ratio": ratio,
        "fetch_acls_ready_s": fetch_loaded,
        "local_acls_ready_s": local_loaded,
        "acls_ready_ratio": round(fetch_loaded / local_loaded, 2),
        "goal": "PASS" if ratio <= GOAL_RATIO else "MISS",
        "fetch_peak_rss_mib": mid("fetch", "peak_rss_mib"),
        "local_peak_rss_mib": mid("local", "peak_rss_mib"),
        "fetch_cpu_s": mid("fetch", "cpu_s_until_ready"),
        "local_cpu_s": mid("local", "cpu_s_until_ready"),
    }


BENCHMARK = Benchmark("catchup", "catch-up", section_timeout_s=None)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    out = parser(__doc__, "catchup", "100,000 ACL records instead of 1,000,000")
    add = out.add_argument
    add("--records", type=int, help="ACL records in the snapshot (default 1000000, quick 100000)")
    add("--runs", type=int, default=3, help="fetch and local starts, each (default 3)")
    add("--start-timeout", type=float, default=1800.0, help="seconds a node has to become ready (default 1800)")
    return out.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    p = Params.from_args(args)
    return BENCHMARK.main(args, p, {"catchup": section_catchup})


if __name__ == "__main__":
    sys.exit(main())
