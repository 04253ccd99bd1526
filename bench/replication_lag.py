"""Replication lag benchmark (issue 14): how long after the controller commits a mutation a broker-only node
has applied it, under a steady stream of mutations.

    .venv/bin/python -m bench.replication_lag            # about a minute on 2 cores
    .venv/bin/python -m bench.replication_lag --quick    # smoke test, about 20 seconds

One controller-only node and one broker-only node, with the StandardAuthorizer (ANONYMOUS a super user). An
open-loop writer sends CreateAcls v3 (one new binding each) straight to the controller's listener (KIP-919) at
a fixed rate (1,000 per second by default), spread over a few connections. Each answer carries the metadata
offset the controller committed (ksteward's read-your-writes header tag, docs/forwarding.md). As soon as an
answer arrives, a probe is sent to the broker: a Metadata request for no topics, carrying that offset, which
the broker answers only once it has applied the offset (constant work, whatever the number of ACLs). The lag
of one mutation is

    (the probe's answer arrives) - (the controller's answer arrived)

which is the broker's lag after the commit plus one loopback hop (the probe's answer coming back); it over-
states the true lag by that hop. The same probe sent for an offset the broker already has measures the hop
alone, in the same run (the baseline). At the end the broker must hold every ACL written, or the run
reports it.

Goal (issue 14): lag p99 <= 50 ms at 1,000 mutations per second. Prints a table and writes
``bench/results/replication_lag.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench._harness.cluster import broker_node, controller_node, new_cluster_id
from bench._harness.report import percentile_ms, table, warn
from bench._harness.runner import Benchmark, parser
from bench._harness.server import ServerProcess
from bench._harness.wire import CLIENT_ID, FrameClient
from ksteward.protocol.apis import ApiKey
from ksteward.protocol.build import build
from ksteward.protocol.codec import decode_response, encode_request, request_class
from ksteward.protocol.framing import frame

GOAL_P99_MS = 50.0
TOPIC, LITERAL, ALLOW, READ = 2, 3, 3, 3
_LATE_NS = 5_000_000  # a write sent more than 5 ms after its slot counts as late (the event loop's timer slack is
# about a millisecond, so writes go out in small bursts; the offered rate over a second is what matters)
_WRITE_CONNECTIONS = 4  # the writer's connections to the controller: requests on one are served in order


@dataclass(frozen=True)
class Params:
    quick: bool
    rate: int  # mutations per second, open loop
    seconds: float
    warmup_seconds: float
    baseline_probes: int

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> Params:
        quick = bool(args.quick)
        return cls(quick=quick, rate=args.rate, seconds=args.seconds or (5.0 if quick else 30.0),
                   warmup_seconds=1.0 if quick else 3.0, baseline_probes=200 if quick else 1000)  # fmt: skip


def _binding(n: int) -> dict[str, Any]:
    return {"resource_type": TOPIC, "resource_name": f"lag-{n:09d}", "resource_pattern_type": LITERAL,
            "principal": "User:bench", "host": "*", "operation": READ, "permission_type": ALLOW}  # fmt: skip


def _request(api_key: int, version: int, values: dict[str, Any], cid: int, min_offset: int | None = None) -> bytes:
    body = build(request_class(api_key, version), values)
    return frame(encode_request(api_key, version, cid, CLIENT_ID, body, min_offset=min_offset))


def create_acl_frame(n: int, cid: int) -> bytes:
    # The request tag -1 asks for the committed offset in the answer without waiting for anything (the
    # response tag is opt-in since 7086033; docs/forwarding.md, "Read-your-writes").
    return _request(ApiKey.CREATE_ACLS, 3, {"creations": [_binding(n)]}, cid, min_offset=-1)


def probe_frame(offset: int, cid: int) -> bytes:
    """Metadata v12 for no topics, carrying ``offset``: constant work on the broker, whatever the ACL count (a
    DescribeAcls for one name would scan every ACL, and measure that scan rather than the lag)."""
    values = {"topics": [], "allow_auto_topic_creation": False, "include_topic_authorized_operations": False}
    return _request(ApiKey.METADATA, 12, values, cid, min_offset=offset)


async def count_acls(client: FrameClient) -> int:
    values = {"resource_type_filter": TOPIC, "resource_name_filter": None, "pattern_type_filter": LITERAL,
              "principal_filter": "User:bench", "host_filter": None, "operation": READ,
              "permission_type": ALLOW}  # fmt: skip
    answer = await client.request(_request(ApiKey.DESCRIBE_ACLS, 3, values, 1), 120)
    body = decode_response(ApiKey.DESCRIBE_ACLS, 3, answer).body
    return sum(len(r.acls) for r in body.resources)


class Run:
    """One open-loop run: the writer's schedule, and each mutation's commit answer and probe answer times."""

    def __init__(self, writers: list[FrameClient], prober: FrameClient) -> None:
        self.writers = writers
        self.prober = prober
        self.cids = itertools.count(1)
        self.lags_ns: list[int] = []
        self.commits_ns: list[int] = []  # write sent -> the controller's answer (its commit, fsync included)
        self.last_ack_ns = 0
        self.late_sends_ns: list[int] = []  # how far behind its slot each write went out
        self.failures: list[str] = []
        self.last_offset = -1
        self.probes: list[bytes] = []  # checked after the run, off the clock
        self._tasks: set[asyncio.Task[None]] = set()

    async def one(self, n: int, record: bool) -> None:
        writer = self.writers[n % len(self.writers)]
        sent = time.perf_counter_ns()
        payload = await writer.request(create_acl_frame(n, next(self.cids)), 60)
        acked = self.last_ack_ns = time.perf_counter_ns()
        if record:
            self.commits_ns.append(acked - sent)
        response = decode_response(ApiKey.CREATE_ACLS, 3, payload)
        if response.metadata_offset is None or int(response.body.results[0].error_code) != 0:
            self.failures.append(f"write {n}: {response.body.results} (offset {response.metadata_offset})")
            return
        self.last_offset = max(self.last_offset, response.metadata_offset)
        answer = await self.prober.request(probe_frame(response.metadata_offset, next(self.cids)), 60)
        seen = time.perf_counter_ns()
        if record:
            self.lags_ns.append(seen - acked)
        self.probes.append(answer)

    async def stream(self, first: int, rate: int, seconds: float, record: bool) -> int:
        """Start one write every 1/rate seconds for ``seconds`` (open loop: a slow answer does not delay the
        next write); wait for every write and probe. Returns the next sequence number."""
        interval_ns = 1_000_000_000 // rate
        count = int(rate * seconds)
        began = time.perf_counter_ns()
        i = 0
        while i < count:
            now = time.perf_counter_ns()
            while i < count and began + i * interval_ns <= now:  # every write that is due, late ones included
                late = now - (began + i * interval_ns)
                if record and late > _LATE_NS:
                    self.late_sends_ns.append(late)
                task = asyncio.create_task(self.one(first + i, record))
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)
                i += 1
            await asyncio.sleep(max(0.0, (began + i * interval_ns - time.perf_counter_ns()) / 1e9))
        await asyncio.gather(*list(self._tasks))
        return first + count

    async def baseline(self, probes: int) -> list[int]:
        """Probes for an offset the broker already has: one loopback round trip each, nothing waited for."""
        out = []
        for _ in range(probes):
            started = time.perf_counter_ns()
            self.probes.append(await self.prober.request(probe_frame(self.last_offset, next(self.cids))))
            out.append(time.perf_counter_ns() - started)
        return out

    def check_probes(self) -> None:
        for answer in self.probes:  # an answer names the broker; a timed-out one (no entries to fail) does not
            if not decode_response(ApiKey.METADATA, 12, answer).body.brokers:
                self.failures.append("a probe came back without the broker list: it timed out")


def _cpu(controller: ServerProcess, broker: ServerProcess) -> tuple[float, float, float]:
    """CPU seconds used so far by the controller, the broker and this (client) process."""
    return controller.cpu_seconds(), broker.cpu_seconds(), time.process_time()


async def section_lag(p: Params, workdir: Path) -> dict[str, Any]:
    cluster_id = new_cluster_id()
    controller = controller_node(workdir, "controller", cluster_id)
    broker = broker_node(workdir, "broker", cluster_id, controller, node_id=2)
    try:
        await controller.start(timeout=120)
        await broker.start(timeout=120)
        writers = [await FrameClient.connect(controller.port) for _ in range(_WRITE_CONNECTIONS)]
        prober = await FrameClient.connect(broker.port)
        run = Run(writers, prober)
        following = await run.stream(0, p.rate, p.warmup_seconds, record=False)
        began, cpu0 = time.perf_counter_ns(), _cpu(controller, broker)
        end = await run.stream(following, p.rate, p.seconds, record=True)
        elapsed = (time.perf_counter_ns() - began) / 1e9  # until the last probe's answer
        acked_s = (run.last_ack_ns - began) / 1e9  # until the controller's last answer
        cpu = [
            round((after - before) / elapsed, 2) for before, after in zip(cpu0, _cpu(controller, broker), strict=True)
        ]
        baseline = await run.baseline(p.baseline_probes)
        run.check_probes()
        on_broker = await count_acls(prober)
        if on_broker != end:
            run.failures.append(f"the broker holds {on_broker} of the {end} ACLs written")
        for client in (*writers, prober):
            await client.aclose()
        await broker.stop()
        await controller.stop()
    finally:
        broker.kill()
        controller.kill()
    lags = run.lags_ns
    row: dict[str, Any] = {
        "rate_target": p.rate,
        "rate_offered": round(len(lags) / p.seconds),
        "rate_committed": round(len(lags) / acked_s) if acked_s else None,
        "commit_p50_ms": round(percentile_ms(run.commits_ns, 50), 3),
        "commit_p99_ms": round(percentile_ms(run.commits_ns, 99), 3),
        "mutations": len(lags),
        "p50_ms": round(percentile_ms(lags, 50), 3),
        "p99_ms": round(percentile_ms(lags, 99), 3),
        "p999_ms": round(percentile_ms(lags, 99.9), 3),
        "max_ms": round(max(lags) / 1e6, 3) if lags else None,
        "baseline_p50_ms": round(percentile_ms(baseline, 50), 3),
        "baseline_p99_ms": round(percentile_ms(baseline, 99), 3),
        "cpu_controller": cpu[0],
        "cpu_broker": cpu[1],
        "cpu_client": cpu[2],
        "late_sends": len(run.late_sends_ns),
        "late_send_p99_ms": round(percentile_ms(run.late_sends_ns, 99), 3) if run.late_sends_ns else 0.0,
    }
    met = row["p99_ms"] <= GOAL_P99_MS
    row["goal"] = "PASS" if met else "MISS"
    columns = [("target /s", "rate_target"), ("offered /s", "rate_offered"), ("committed /s", "rate_committed"),
               ("commit p50 ms", "commit_p50_ms"), ("commit p99 ms", "commit_p99_ms"), ("mutations", "mutations"),
               ("lag p50 ms", "p50_ms"), ("lag p99 ms", "p99_ms"), ("lag p99.9 ms", "p999_ms"), ("max ms", "max_ms"),
               ("cores: controller", "cpu_controller"), ("broker", "cpu_broker"), ("client", "cpu_client"),
               ("hop p50 ms", "baseline_p50_ms"), ("hop p99 ms", "baseline_p99_ms"), ("late sends", "late_sends"),
               ("p99 <= 50 ms", "goal")]  # fmt: skip
    print(table("Lag from the controller's answer until the broker has applied the mutation (a read-your-writes "
                "probe); 'hop' is the same probe for an offset already applied", columns, [row]))  # fmt: skip
    problems = run.failures[:20]
    for server in (controller, broker):
        problems += [f"{server.name} log: {line}" for line in server.log_errors()]
    if row["late_sends"] > len(lags) // 100:
        problems.append(f"the writer fell behind its schedule {row['late_sends']} times (p99 "
                        f"{row['late_send_p99_ms']} ms): the offered rate was lower than the target")  # fmt: skip
    warn(problems)
    print(f"\ngoal (lag p99 <= {GOAL_P99_MS:g} ms at {p.rate:,} mutations/s): {row['goal']}")
    return {"lag": row, "goal_p99_ms": GOAL_P99_MS, "goal_met": met, "problems": problems}


BENCHMARK = Benchmark("replication_lag", "replication lag")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    out = parser(__doc__, "replication_lag", "smoke test: 5 seconds of load")
    out.add_argument("--rate", type=int, default=1000, help="mutations per second (default 1000)")
    out.add_argument("--seconds", type=float, help="measured seconds of load (default 30, quick 5)")
    return out.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    return BENCHMARK.main(args, Params.from_args(args), {"replication lag": section_lag})


if __name__ == "__main__":
    sys.exit(main())
