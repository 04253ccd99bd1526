"""Controller failover benchmark (issue 18): a quorum of three controller voters and one broker.

    .venv/bin/python -m bench.failover              # 20 kills at Kafka's default timeouts, 20 with lowered ones
    .venv/bin/python -m bench.failover --quick      # 3 kills each, fewer commits: a smoke test

Sections:

- **failover, default timeouts** (``controller.quorum.election.timeout.ms`` 1000, ``fetch.timeout.ms`` 2000):
  each round SIGKILLs the active controller (the node whose ``quorum-state`` names itself leader of the highest
  epoch) and at once sends a CreateAcls v3 of a new binding through the broker, which forwards it in an
  Envelope and retries on the way (NOT_CONTROLLER, a lost connection). The failover time is from the SIGKILL
  to that write's acknowledgement (or, should the broker give up on it, the first acknowledged one after it).
  The killed node is then restarted and waits until it follows the new epoch before the next round.
- **failover, lowered timeouts**: the same with the election timeout at 200 ms and the fetch timeout at
  400 ms, to show how the time scales with them.
- **commit latency**: CreateAcls v3 sent straight to the active controller's listener (KIP-919), one request
  in flight, on the three-voter quorum and on a one-voter controller started beside it, in interleaved rounds.
  With three voters a write is answered once a majority has it durable (the leader's fsync, a follower's Fetch
  and fsync, the next Fetch reporting it); with one voter, after the leader's own fsync. With each kind's
  server CPU per commit (``/proc``), and the leader's alone. A third kind, "3 voters, 1 paused", is the same
  quorum with one follower SIGSTOPped for its rounds (and caught up again before the next): a commit still
  needs the leader and a follower, but the paused follower's CPU and fsync no longer share the two cores. It
  shows how much of the ratio comes from running three voters on one small machine.
- **floor**: the same ratio for a minimal model of the commit path (``bench._harness.replication_model``: four
  small asyncio processes, a busy loop for the CPU work), with no work on the followers, with some, and with the
  CPU the latency section measured (a follower's per commit; the leader's beyond one voter's, per follower
  acknowledgement). It shows the ratio this machine allows at all, and how fast it grows with the CPU spent
  on each side of a replication hop.
- **instructions**: the same commits with every server under valgrind's callgrind (``_harness/callgrind``): the
  user-space instructions per commit of the leader, of each follower and of a single voter. Unlike CPU time they
  do not move with the machine's load, so a change to the commit path can be measured with one run. The Raft
  timeouts are raised (``CALLGRIND_TIMEOUTS``) so that valgrind's slowdown, about 50x, causes no elections.
  Skipped, with the reason, when valgrind is not installed.

Prints the tables and writes ``bench/results/failover.json``; ``bench/README.md`` has the results.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import sys
import time
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from prometheus_client.parser import text_string_to_metric_families

from bench._harness import callgrind
from bench._harness.cluster import broker_node, controller_node, new_cluster_id, quorum_nodes, quorum_state
from bench._harness.cpu import process_cpu_seconds
from bench._harness.replication_model import measure
from bench._harness.report import table
from bench._harness.runner import Benchmark, parser
from bench._harness.server import ServerProcess
from bench._harness.wire import HOST, FrameClient, decode_response, encode_request, free_ports
from ksteward.protocol.apis import ApiKey

GOAL_P99_S = 3.0  # the goal at Kafka's default timeouts
GOAL_LATENCY_RATIO = 2.0  # three voters' p50 commit latency <= 2 x one voter's
LOWERED = {"controller.quorum.election.timeout.ms": "200", "controller.quorum.fetch.timeout.ms": "400"}
_names = itertools.count()
#: The instructions section's timeouts: a voter under valgrind runs about 50 times slower.
CALLGRIND_TIMEOUTS = {"controller.quorum.election.timeout.ms": "15000", "controller.quorum.fetch.timeout.ms": "30000",
                      "controller.quorum.request.timeout.ms": "60000"}  # fmt: skip
#: The latency section's measurements, for the floor section that runs after it (µs): the single voter's CPU per
#: commit, a follower's per commit, and the leader's beyond the single voter's per follower acknowledgement.
_MEASURED_US: dict[str, float] = {}
#: Used by the floor section when the latency section did not run: its figures at 50d2467 on this host.
_DEFAULT_US = {"leader_us": 343.0, "follower_us": 515.0, "ack_us": 315.0}


@dataclass(frozen=True)
class Params:
    quick: bool
    kills: int
    commits: int  # per node kind and round, one in flight
    rounds: int

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> Params:
        quick = bool(args.quick)
        return cls(quick, args.kills or (3 if quick else 20), args.commits or (100 if quick else 1000), args.rounds)


def percentiles(values: list[float]) -> dict[str, float]:
    """Nearest-rank p50 and p99 (as ``report.percentile_ms``), rounded."""
    ordered = sorted(values)

    def rank(q: float) -> float:
        return ordered[max(1, min(len(ordered), round(q / 100 * len(ordered) + 0.5))) - 1]

    return {"p50": round(rank(50), 4), "p99": round(rank(99), 4)}


def create_acl_frame(cid: int) -> bytes:
    creation = {"resource_type": 2, "resource_name": f"failover-{next(_names):08d}", "resource_pattern_type": 3,
                "principal": "User:bench", "host": "*", "operation": 3, "permission_type": 3}  # fmt: skip
    return encode_request(ApiKey.CREATE_ACLS, 3, {"creations": [creation]}, correlation_id=cid)


def acked(payload: bytes) -> bool:
    _, body = decode_response(ApiKey.CREATE_ACLS, 3, payload)
    return len(body.results) == 1 and int(body.results[0].error_code) == 0


def leader(nodes: list[ServerProcess]) -> ServerProcess | None:
    states = [(n, quorum_state(n)) for n in nodes if n.proc is not None and n.proc.returncode is None]
    known = [(n, s) for n, s in states if s is not None]
    if not known:
        return None
    top = max(s["leaderEpoch"] for _, s in known)
    return next((n for n, s in known if s["leaderEpoch"] == top and s["leaderId"] == int(n.extra["node.id"])), None)


async def reap(*nodes: ServerProcess) -> None:
    """SIGKILL the nodes and wait for them, so that no process outlives the event loop that started it."""
    await asyncio.gather(*(node.crash() for node in nodes if node.proc is not None), return_exceptions=True)


async def wait_until(condition: Any, timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        await asyncio.sleep(0.01)
    raise TimeoutError(what)


async def start_voters(
    workdir: Path,
    overrides: Mapping[str, str],
    *,
    kind: type[ServerProcess] = ServerProcess,
    ready_s: float = 120.0,
    metrics: bool = False,
) -> tuple[list[ServerProcess], str, Path]:
    """Three controllers of a new cluster (servers of ``kind``), each ready within ``ready_s`` of the last spawn;
    with ``metrics``, each serves ``/metrics``."""
    cluster_id = new_cluster_id()
    workdir = workdir / f"quorum-{next(_names)}"  # each section's quorum in its own directory
    workdir.mkdir()
    controllers = quorum_nodes(workdir, cluster_id, 3, overrides=overrides, kind=kind, metrics=metrics)
    for node in controllers:
        await node.spawn()
    for node in controllers:
        await node.wait_ready(ready_s)
    return controllers, cluster_id, workdir


async def start_quorum(workdir: Path, overrides: Mapping[str, str]) -> tuple[list[ServerProcess], ServerProcess]:
    controllers, cluster_id, workdir = await start_voters(workdir, overrides)
    broker = broker_node(workdir, f"broker-{next(_names)}", cluster_id, controllers, 4, overrides=overrides)
    await broker.start(120.0)
    return controllers, broker


async def write_until_acked(client: FrameClient, cid: itertools.count[int]) -> float:
    """Send writes, one at a time, until one is acknowledged; the time (perf_counter) of that answer."""
    while True:
        payload = await client.request(create_acl_frame(next(cid)), timeout=120.0)
        if acked(payload):
            return time.perf_counter()


async def section_failover(p: Params, workdir: Path, overrides: Mapping[str, str]) -> dict[str, Any]:
    controllers, broker = await start_quorum(workdir, overrides)
    cid = itertools.count(1)
    times: list[float] = []
    try:
        client = await FrameClient.connect(broker.port)
        await write_until_acked(client, cid)
        for kill in range(p.kills):
            old = await wait_until(lambda: leader(controllers), 60.0, "a leader")
            epoch = quorum_state(old)["leaderEpoch"]  # type: ignore[index]
            killed_at = time.perf_counter()
            old.kill()
            acked_at = await write_until_acked(client, cid)
            times.append(acked_at - killed_at)
            new = await wait_until(lambda: leader(controllers), 60.0, "a new leader")
            print(f"  kill {kill + 1}: {old.name} (epoch {epoch}) -> {new.name}: {times[-1]:.3f}s", flush=True)
            await old.crash()  # reap it (killed above, off the clock now)
            await old.spawn()
            await old.wait_ready(120.0)
            new_epoch = quorum_state(new)["leaderEpoch"]  # type: ignore[index]
            await wait_until(lambda o=old, e=new_epoch: (quorum_state(o) or {}).get("leaderEpoch", -1) >= e, 60.0,
                             "the killed node follows the new epoch")  # fmt: skip
        client.close()
    finally:
        await reap(broker, *controllers)
    stats = percentiles(times)
    rows = [{"kills": len(times), "p50_s": stats["p50"], "p99_s": stats["p99"], "max_s": round(max(times), 4)}]
    print(table("failover: SIGKILL of the active controller -> first forwarded write acknowledged",
                [("kills", "kills"), ("p50 s", "p50_s"), ("p99 s", "p99_s"), ("max s", "max_s")], rows))  # fmt: skip
    return {"overrides": dict(overrides), "seconds": [round(t, 4) for t in times], **rows[0]}


async def section_default(p: Params, workdir: Path) -> dict[str, Any]:
    result = await section_failover(p, workdir, {})
    result["goal_p99_s"] = GOAL_P99_S
    return result


async def section_lowered(p: Params, workdir: Path) -> dict[str, Any]:
    return await section_failover(p, workdir, LOWERED)


async def commit_latencies(port: int, count: int) -> list[float]:
    client = await FrameClient.connect(port)
    out = []
    try:
        for cid in range(count):
            frame = create_acl_frame(cid)
            started = time.perf_counter()
            payload = await client.request(frame, timeout=60.0)
            out.append((time.perf_counter() - started) * 1000)
            assert acked(payload), "a commit failed"
    finally:
        client.close()
    return out


async def log_end_offsets(port: int) -> dict[int, int]:
    """Each voter's log end offset as the leader at ``port`` reports it (DescribeQuorum v0)."""
    client = await FrameClient.connect(port)
    try:
        values = {"topics": [{"topic_name": "__cluster_metadata", "partitions": [{"partition_index": 0}]}]}
        payload = await client.request(encode_request(ApiKey.DESCRIBE_QUORUM, 0, values), timeout=30.0)
    finally:
        client.close()
    _, body = decode_response(ApiKey.DESCRIBE_QUORUM, 0, payload)
    voters = body.topics[0].partitions[0].current_voters
    return {int(v.replica_id): int(v.log_end_offset) for v in voters}


def fsync_totals(node: ServerProcess) -> tuple[float, float]:
    """(ms, count) of every fsync of ``node``'s metadata log so far: its ``ksteward_metadata_log_fsync_time_ms``
    sum and count, the group commit's and, on a follower voter, those of the Fetch answers it appended."""
    url = f"http://{HOST}:{node.extra['metrics.port']}/metrics"
    with urllib.request.urlopen(url, timeout=30) as response:
        text = response.read().decode()
    found = {s.name: s.value for f in text_string_to_metric_families(text) for s in f.samples
             if s.name.startswith("ksteward_metadata_log_fsync_time_ms_")}  # fmt: skip
    return found["ksteward_metadata_log_fsync_time_ms_sum"], found["ksteward_metadata_log_fsync_time_ms_count"]


def mean_fsync_ms(totals: list[tuple[float, float]]) -> float | None:
    """The mean ms of the fsyncs in ``totals`` ((ms, count) each); None without any."""
    count = sum(n for _, n in totals)
    return round(sum(ms for ms, _ in totals) / count, 3) if count else None


async def caught_up(port: int) -> None:
    """Wait until every voter's log end offset is the leader's (a resumed follower fetched what it missed)."""
    deadline = time.monotonic() + 60.0
    while len(set((await log_end_offsets(port)).values())) != 1:
        if time.monotonic() > deadline:
            raise TimeoutError("a resumed follower did not catch up")
        await asyncio.sleep(0.01)


#: The latency section's kinds, in the order of its table. "3 voters, 1 paused" is the same quorum with one
#: follower SIGSTOPped for its rounds: a commit then needs the leader and the other follower, as with three
#: voters on separate machines, but without the paused follower's CPU and fsync on the two shared cores.
LATENCY_KINDS = ("3 voters", "1 voter", "3 voters, 1 paused")


async def section_latency(p: Params, workdir: Path) -> dict[str, Any]:
    # Like against like: no broker on either side (a broker following the quorum would take CPU from it only).
    controllers, _, _ = await start_voters(workdir, {}, metrics=True)
    (metrics_port,) = free_ports(1)
    single = controller_node(workdir, "single-voter", new_cluster_id(), overrides={"metrics.port": str(metrics_port)})
    await single.start(120.0)
    active = await wait_until(lambda: leader(controllers), 60.0, "a leader")
    client = await FrameClient.connect(active.port)  # a new leader answers NOT_CONTROLLER until it is active
    await write_until_acked(client, itertools.count(10**6))
    client.close()
    paused = next(c for c in controllers if c is not active)
    samples: dict[str, list[float]] = {kind: [] for kind in LATENCY_KINDS}
    cpu_s = dict.fromkeys(LATENCY_KINDS, 0.0)  # the servers' CPU (user + system) while measured
    leader_cpu_s = dict.fromkeys(LATENCY_KINDS, 0.0)  # the leader's (the single voter's) alone
    # Each server's fsyncs while measured, (ms, count): the three voters share this machine's one disk.
    fsyncs: dict[str, dict[ServerProcess, tuple[float, float]]] = {kind: {} for kind in LATENCY_KINDS}
    try:
        for r in range(p.rounds):
            for kind in LATENCY_KINDS if r % 2 == 0 else LATENCY_KINDS[::-1]:
                node = leader(controllers) if kind != "1 voter" else single
                assert node is active or node is single, "the leadership moved during the latency section"
                servers = controllers if kind != "1 voter" else [single]
                # a paused follower's fsyncs would be those of its catching up, after the round
                flushed = {s: fsync_totals(s) for s in servers if not (kind == "3 voters, 1 paused" and s is paused)}
                before = [process_cpu_seconds(s.pid) for s in servers]
                lead_before = process_cpu_seconds(node.pid)
                if kind == "3 voters, 1 paused":
                    paused.pause()
                try:
                    samples[kind] += await commit_latencies(node.port, p.commits)
                finally:
                    if kind == "3 voters, 1 paused":
                        paused.resume()
                cpu_s[kind] += sum(process_cpu_seconds(s.pid) for s in servers) - sum(before)
                leader_cpu_s[kind] += process_cpu_seconds(node.pid) - lead_before
                for s in flushed:
                    (ms, count), (ms_before, count_before) = fsync_totals(s), flushed[s]
                    ms_so_far, count_so_far = fsyncs[kind].get(s, (0.0, 0.0))
                    fsyncs[kind][s] = (ms_so_far + ms - ms_before, count_so_far + count - count_before)
                if kind == "3 voters, 1 paused":
                    await caught_up(active.port)
    finally:
        await reap(single, *controllers)
    rows: list[dict[str, Any]] = []
    one_p50 = percentiles(samples["1 voter"])["p50"]
    for kind, values in samples.items():
        stats = percentiles(values)
        lead = active if kind != "1 voter" else single
        followers = [t for s, t in fsyncs[kind].items() if s is not lead]
        rows.append({"voters": kind, "commits": len(values), "p50_ms": stats["p50"], "p99_ms": stats["p99"],
                     "vs_1_voter": round(stats["p50"] / one_p50, 2),
                     "cpu_ms_per_commit": round(cpu_s[kind] * 1000 / len(values), 3),
                     "leader_cpu_ms_per_commit": round(leader_cpu_s[kind] * 1000 / len(values), 3),
                     "fsync_ms_leader": mean_fsync_ms([fsyncs[kind][lead]]),
                     "fsync_ms_followers": mean_fsync_ms(followers)})  # fmt: skip
    ratio = rows[0]["p50_ms"] / rows[1]["p50_ms"]
    three, one = rows[0], rows[1]
    _MEASURED_US.update(
        leader_us=one["cpu_ms_per_commit"] * 1000,
        follower_us=(three["cpu_ms_per_commit"] - three["leader_cpu_ms_per_commit"]) * 1000 / 2,
        ack_us=max(three["leader_cpu_ms_per_commit"] - one["cpu_ms_per_commit"], 0.0) * 1000 / 2,
    )
    print(table("commit latency: CreateAcls v3 straight to the active controller, one in flight",
                [("quorum", "voters"), ("commits", "commits"), ("p50 ms", "p50_ms"), ("p99 ms", "p99_ms"),
                 ("p50 / 1 voter", "vs_1_voter"), ("CPU ms/commit", "cpu_ms_per_commit"),
                 ("leader's", "leader_cpu_ms_per_commit"), ("fsync ms: leader", "fsync_ms_leader"),
                 ("followers", "fsync_ms_followers")], rows))  # fmt: skip
    print(f"  p50 ratio 3 voters / 1 voter: {ratio:.2f} (goal <= {GOAL_LATENCY_RATIO})")
    print(f"  with one follower paused (its CPU and fsync off the shared cores): {rows[2]['vs_1_voter']:.2f}")
    print("  fsync ms: the mean of each fsync of the metadata log while measured (ksteward_metadata_log_fsync_time_ms);"
          " the three voters' logs share one disk")  # fmt: skip
    return {"rows": rows, "p50_ratio": round(ratio, 3), "goal_p50_ratio": GOAL_LATENCY_RATIO,
            "paused_follower_p50_ratio": rows[2]["vs_1_voter"]}  # fmt: skip


async def section_floor(p: Params, workdir: Path) -> dict[str, Any]:
    measured = dict(_MEASURED_US or _DEFAULT_US)
    leader_us = measured["leader_us"]
    cases = [(0.0, 0.0), (100.0, 50.0), (200.0, 100.0), (measured["follower_us"] / 2, measured["ack_us"] / 2),
             (measured["follower_us"], measured["ack_us"])]  # fmt: skip
    rows = []
    for i, (follower_us, ack_us) in enumerate(cases):
        one, three = await asyncio.to_thread(measure, workdir / f"model-{i}", leader_us=leader_us,
                                             follower_us=follower_us, ack_us=ack_us, commits=p.commits,
                                             rounds=p.rounds)  # fmt: skip
        rows.append({"follower_us": round(follower_us), "ack_us": round(ack_us), "one_p50_ms": round(one, 3),
                     "three_p50_ms": round(three, 3), "ratio": round(three / one, 2)})  # fmt: skip
    print(table(f"floor: a minimal model of the commit path, {leader_us:.0f} us of work per request on the leader",
                [("follower us/commit", "follower_us"), ("leader us/ack", "ack_us"), ("1 voter p50 ms", "one_p50_ms"),
                 ("3 voters p50 ms", "three_p50_ms"), ("ratio", "ratio")], rows))  # fmt: skip
    source = "the latency section" if _MEASURED_US else "defaults (the latency section did not run)"
    print(f"  the last two rows: half of, and all of, the CPU measured by {source}")
    return {"leader_us": round(leader_us), "measured_from": source, "rows": rows}


async def section_instructions(p: Params, workdir: Path) -> dict[str, Any]:
    """Instructions per commit on each server, all under callgrind (see the module docstring)."""
    reason = callgrind.missing()
    if reason is not None:
        print(f"\ninstructions per commit: skipped, {reason}")
        return {"skipped": reason}
    workdir = workdir / "instructions"
    workdir.mkdir()
    kind = callgrind.CallgrindServer
    single = cast(kind, controller_node(workdir, "single-voter", new_cluster_id(), kind=kind))
    voters: list[callgrind.CallgrindServer] = []
    commits, warmup = (50, 20) if p.quick else (150, 60)
    rows: list[dict[str, Any]] = []
    try:
        await single.spawn()  # it starts while the voters do: a server under valgrind takes a minute or more
        nodes, _, _ = await start_voters(workdir, CALLGRIND_TIMEOUTS, kind=kind, ready_s=900.0)
        voters = [cast(kind, node) for node in nodes]
        await single.wait_ready(900.0)
        await single.api_versions(900.0)
        active = await wait_until(lambda: leader(voters), 600.0, "a leader")
        client = await FrameClient.connect(active.port)
        await write_until_acked(client, itertools.count(10**6))
        client.close()
        for servers, port in ((voters, active.port), ([single], single.port)):
            await commit_latencies(port, warmup)
            for server in servers:
                await server.instructions()
            await commit_latencies(port, commits)
            for server in servers:
                role = "single voter" if server is single else "leader" if server is active else "follower"
                per_commit = await server.instructions() / commits
                rows.append({"server": f"{server.name} ({role})", "instructions_per_commit": round(per_commit)})
    finally:
        await reap(single, *voters)
    one = rows[-1]["instructions_per_commit"]
    for row in rows:
        row["vs_single"] = round(row["instructions_per_commit"] / one, 2)
    three = sum(r["instructions_per_commit"] for r in rows[:-1])
    print(table(f"instructions per commit under callgrind (user space; {commits} commits after {warmup})",
                [("server", "server"), ("instructions/commit", "instructions_per_commit"),
                 ("x single voter", "vs_single")], rows))  # fmt: skip
    print(f"  three voters together: {three:,} a commit, {three / one:.2f}x the single voter")
    return {"commits": commits, "rows": rows, "three_voters_total": three, "three_vs_single": round(three / one, 2)}


BENCHMARK = Benchmark("failover", "controller failover")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    out = parser(__doc__, "failover", "3 kills per section and 100 commits per round (a smoke test)")
    add = out.add_argument
    add("--kills", type=int, help="SIGKILLs of the active controller per failover section (default 20, quick 3)")
    add("--commits", type=int, help="commits per quorum kind and round (default 1000, quick 100)")
    add("--rounds", type=int, default=3, help="interleaved rounds of the commit latency section (default 3)")
    sections = "default, lowered, latency, floor, instructions"
    add("--skip", action="append", default=[], help=f"a section to leave out ({sections})")
    return out.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    p = Params.from_args(args)
    sections = {"default": section_default, "lowered": section_lowered, "latency": section_latency,
                "floor": section_floor, "instructions": section_instructions}  # fmt: skip
    return BENCHMARK.main(args, p, {k: v for k, v in sections.items() if k not in args.skip})


if __name__ == "__main__":
    sys.exit(main())
