"""CPU meters: a process's CPU time from ``/proc/<pid>/stat``, this process's from ``getrusage``, and the
whole machine's from ``/proc/stat``. The load generator shares the cores with the server, so every
figure is read beside the CPU both sides (and the neighbours) used meanwhile."""

from __future__ import annotations

import asyncio
import os
import resource
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

CLK_TCK = os.sysconf("SC_CLK_TCK")


def process_cpu_seconds(pid: int) -> float:
    """User plus system CPU time of process ``pid`` (all its threads) so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def process_status_kib(pid: int, key: str) -> int:
    """A ``/proc/<pid>/status`` memory line (``VmHWM``, ``VmRSS``) in KiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1])
    raise KeyError(key)


def client_cpu_seconds() -> float:
    """CPU time of this process (the load generator, with the client libraries' threads)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def machine_busy_seconds() -> float:
    """CPU seconds all processes on the machine have used (``/proc/stat``: everything but idle and
    iowait, stolen time included); minus ours and the server's, that is what neighbours took."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]]
    user, nice, system, _idle, _iowait, irq, softirq, steal = fields
    return (user + nice + system + irq + softirq + steal) / CLK_TCK


class Measured(Protocol):
    """A server whose CPU time can be read: a subprocess, or the in-process one of ``--profile``."""

    name: str
    port: int

    def cpu_seconds(self) -> float: ...


class CpuMeter:
    """CPU seconds of the server, of this process and of everything else on the machine, over a span."""

    def __init__(self, server: Measured) -> None:
        self.server = server
        self.server0, self.client0, self.busy0 = server.cpu_seconds(), client_cpu_seconds(), machine_busy_seconds()

    def read(self) -> dict[str, float]:
        server = self.server.cpu_seconds() - self.server0
        client = client_cpu_seconds() - self.client0
        others = machine_busy_seconds() - self.busy0 - server - client
        return {"server_cpu_s": round(server, 2), "client_cpu_s": round(client, 2),
                "others_cpu_s": round(max(others, 0.0), 2)}  # fmt: skip


async def timed_in_thread(server: Measured, fn: Callable[[], Any]) -> tuple[Any, dict[str, Any]]:
    """(result, row): ``fn()`` (a blocking client library call) timed in a worker thread, so the event
    loop keeps draining the servers' logs, with the CPU seconds of the server, of this process (the client
    library's threads included) and of the machine's other processes meanwhile."""

    def call() -> tuple[Any, float]:
        t0 = time.perf_counter()
        result = fn()
        return result, time.perf_counter() - t0

    meter = CpuMeter(server)
    result, wall = await asyncio.to_thread(call)
    return result, {"s": round(wall, 4), **meter.read()}


class MeasuredGroup:
    """Several independent servers measured as one: ``closed_loop`` deals its connections over their ``ports``
    round-robin, as the kernel deals connections over the processes of one ``SO_REUSEPORT`` port, and their CPU
    time adds up."""

    def __init__(self, name: str, servers: list[Measured]) -> None:
        self.name = name
        self.servers = servers
        self.port = servers[0].port
        self.ports = tuple(s.port for s in servers)

    def cpu_seconds(self) -> float:
        return sum(s.cpu_seconds() for s in self.servers)


def pin_process(pid: int, cpus: set[int]) -> None:
    """Every thread of process ``pid`` onto ``cpus``; threads it starts later inherit the affinity."""
    for tid in os.listdir(f"/proc/{pid}/task"):
        os.sched_setaffinity(int(tid), cpus)
