"""Closed-loop load: each connection sends one request, awaits its response and sends the next (nothing
is pipelined, as the server handles a connection's requests one at a time anyway), and the figures of
one cell: rate, latency percentiles, CPU per request, and the spread of its interleaved rounds."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from bench._harness.cpu import Measured, client_cpu_seconds
from bench._harness.report import percentile_ms
from bench._harness.wire import FrameClient


@dataclass
class LoadResult:
    """One measured cell: successes only count towards throughput and latency."""

    requests: int  # sent (and answered)
    truncated: bool  # the time budget ran out before every request was sent
    ok: int
    failed: int
    wall_s: float
    latencies_ns: list[int]
    client_cpu_s: float
    server_cpu_s: float

    @property
    def rate(self) -> float:
        return self.ok / self.wall_s if self.wall_s > 0 else 0.0


async def closed_loop(
    server: Measured,
    work: Sequence[Sequence[bytes]],
    *,
    check: Callable[[bytes], bool] | None = None,
    budget_s: float = 120.0,
) -> LoadResult:
    """Drive ``len(work)`` connections at once (over the ports of a ``MeasuredGroup`` round-robin); connection
    ``i`` sends the frames of ``work[i]`` one at a time (send, await the response, repeat: one request in flight
    per connection, as the server handles a connection's requests one by one anyway).

    A response is a success when its correlation id matches the request's and, if given,
    ``check(payload)`` is true; ``check`` runs after the clock stops, so it costs the measurement
    nothing. Failures count in ``failed`` and their latencies are left out. After ``budget_s`` no
    connection sends another request (``truncated`` says so); one response that takes longer
    than the budget plus a minute is an error.
    """
    ports = getattr(server, "ports", (server.port,))  # a MeasuredGroup's: connection i goes to ports[i % n]
    clients = [await FrameClient.connect(ports[i % len(ports)]) for i in range(len(work))]
    go = asyncio.Event()
    samples: list[tuple[list[int], list[bytes]]] = [([], []) for _ in work]
    deadline_ns = 0

    async def one(client: FrameClient, frames: Sequence[bytes], latencies: list[int], payloads: list[bytes]) -> None:
        clock = time.perf_counter_ns
        await go.wait()
        for frame in frames:
            started = clock()
            if started > deadline_ns:
                return
            payload = await client.send(frame)
            latencies.append(clock() - started)
            payloads.append(payload)

    tasks = [
        asyncio.ensure_future(one(c, w, lat, pay)) for c, w, (lat, pay) in zip(clients, work, samples, strict=True)
    ]
    try:
        server_cpu0, client_cpu0 = server.cpu_seconds(), client_cpu_seconds()
        started = time.perf_counter()
        deadline_ns = time.perf_counter_ns() + int(budget_s * 1e9)
        go.set()
        await asyncio.wait_for(asyncio.gather(*tasks), budget_s + 60)
        wall = time.perf_counter() - started
        server_cpu, client_cpu = server.cpu_seconds() - server_cpu0, client_cpu_seconds() - client_cpu0
    finally:
        for t in tasks:
            t.cancel()
        await asyncio.gather(*(c.aclose() for c in clients))
    ok_latencies: list[int] = []
    failed = 0
    for frames, (latencies, payloads) in zip(work, samples, strict=True):
        for frame, latency, payload in zip(frames, latencies, payloads, strict=False):
            if payload[:4] == frame[8:12] and (check is None or check(payload)):
                ok_latencies.append(latency)
            else:
                failed += 1
    sent = sum(len(lat) for lat, _ in samples)
    return LoadResult(
        requests=sent,
        truncated=sent < sum(len(w) for w in work),
        ok=len(ok_latencies),
        failed=failed,
        wall_s=wall,
        latencies_ns=ok_latencies,
        client_cpu_s=client_cpu,
        server_cpu_s=server_cpu,
    )


async def shared_window(
    servers: Mapping[str, Measured],
    work: Sequence[Sequence[bytes]],
    *,
    seconds: float,
    check: Callable[[bytes], bool] | None = None,
    ramp_s: float = 0.2,
) -> dict[str, LoadResult]:
    """Load every server of ``servers`` at once, ``len(work)`` closed-loop connections each (connection ``i``
    cycles through the frames of ``work[i]``), and count what each answers within the same window of
    ``seconds`` (after ``ramp_s`` of load): one result per server, ``wall_s`` the window, ``client_cpu_s`` this
    process's CPU time in it split evenly between the servers (one load generator serves them all).

    Servers that share one core and are all kept busy share its time evenly, so their rates in one window
    compare what a request costs each of them, with the machine's moments (another tenant, the clock) falling
    on all of them alike. A response is a success as in :func:`closed_loop`; it counts when it arrives inside
    the window."""
    clients = {name: [await FrameClient.connect(s.port) for _ in work] for name, s in servers.items()}
    results = {name: LoadResult(0, False, 0, 0, seconds, [], 0.0, 0.0) for name in servers}
    window = {"open": False, "stop": False}

    async def one(client: FrameClient, frames: Sequence[bytes], result: LoadResult) -> None:
        clock = time.perf_counter_ns
        latencies = result.latencies_ns
        i = 0
        while not window["stop"]:
            frame = frames[i % len(frames)]
            i += 1
            started = clock()
            payload = await client.send(frame)
            if not window["open"]:
                continue
            result.requests += 1
            if payload[:4] == frame[8:12] and (check is None or check(payload)):
                result.ok += 1
                latencies.append(clock() - started)
            else:
                result.failed += 1

    tasks = [
        asyncio.ensure_future(one(client, frames, results[name]))
        for name, group in clients.items()
        for client, frames in zip(group, work, strict=True)
    ]
    try:
        await asyncio.sleep(ramp_s)
        cpu0 = {name: s.cpu_seconds() for name, s in servers.items()}
        client0, started = client_cpu_seconds(), time.perf_counter()
        window["open"] = True
        await asyncio.sleep(seconds)
        window["open"] = False
        wall, client_cpu = time.perf_counter() - started, client_cpu_seconds() - client0
        for name, s in servers.items():
            results[name].wall_s, results[name].client_cpu_s = wall, client_cpu / len(servers)
            results[name].server_cpu_s = s.cpu_seconds() - cpu0[name]
        window["stop"] = True
        await asyncio.wait_for(asyncio.gather(*tasks), 60)
    finally:
        for t in tasks:
            t.cancel()
        await asyncio.gather(*(c.aclose() for group in clients.values() for c in group))
    return results


def merge(parts: Sequence[LoadResult]) -> LoadResult:
    """One result from several rounds of the same cell: counts, times and samples add up."""
    return LoadResult(
        requests=sum(r.requests for r in parts),
        truncated=any(r.truncated for r in parts),
        ok=sum(r.ok for r in parts),
        failed=sum(r.failed for r in parts),
        wall_s=sum(r.wall_s for r in parts),
        latencies_ns=[x for r in parts for x in r.latencies_ns],
        client_cpu_s=sum(r.client_cpu_s for r in parts),
        server_cpu_s=sum(r.server_cpu_s for r in parts),
    )


def process_stats(by_process: Sequence[Sequence[LoadResult]]) -> dict[str, Any]:
    """The rate of each server process of one cell (its rounds merged), and how far apart they are.

    Two processes running the same code differ by up to a few per cent on this machine, steadily over a whole
    run (where each lands in memory and on the cores); a cell served by several processes averages that out, and
    ``process_spread`` shows how large it was: a difference between two cells below it is noise."""
    rates = [merge(parts).rate for parts in by_process]
    mean = sum(rates) / len(rates) if rates else 0.0
    return {
        "process_per_s": [round(x, 1) for x in rates],
        "processes": " / ".join(f"{x:,.0f}" for x in rates),
        "process_spread": round((max(rates) - min(rates)) / mean, 3) if mean else None,
    }


def split(items: Sequence[bytes], parts: int) -> list[list[bytes]]:
    """Deal ``items`` round-robin into ``parts`` lists."""
    return [list(items[i::parts]) for i in range(parts)]


def round_counts(total: int, rounds: int) -> list[int]:
    """``total`` dealt into ``rounds`` near-equal counts."""
    return [total // rounds + (1 if r < total % rounds else 0) for r in range(rounds)]


def cell_stats(result: LoadResult, rounds: list[LoadResult]) -> dict[str, Any]:
    """The figures of one cell (all its rounds merged in ``result``), with each round's rate."""
    rates = [r.rate for r in rounds]
    return {
        "requests": result.requests,
        "truncated": result.truncated,
        "ok": result.ok,
        "failed": result.failed,
        "wall_s": round(result.wall_s, 4),
        "per_s": round(result.rate, 1),
        "round_per_s": [round(x, 1) for x in rates],
        "rounds": " / ".join(f"{x:,.0f}" for x in rates),
        "spread": round((max(rates) - min(rates)) / result.rate, 3) if result.rate else None,
        "p50_ms": round(percentile_ms(result.latencies_ns, 50), 4),
        "p99_ms": round(percentile_ms(result.latencies_ns, 99), 4),
        "p999_ms": round(percentile_ms(result.latencies_ns, 99.9), 4),
        "client_cpu_s": round(result.client_cpu_s, 3),
        "server_cpu_s": round(result.server_cpu_s, 3),
        "client_cpu_us_per_req": round(result.client_cpu_s / max(result.requests, 1) * 1e6, 1),
        "server_cpu_us_per_req": round(result.server_cpu_s / max(result.requests, 1) * 1e6, 1),
    }
