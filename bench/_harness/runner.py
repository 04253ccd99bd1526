"""The sections runner and ``main`` of a server benchmark: the common flags, a temporary working
directory, each section run in turn (one that fails is reported, kept in the JSON, and the rest still
run), every server killed on the way out, and the result document written."""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import shutil
import tempfile
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from bench._harness.report import RESULTS, machine_facts, write_document
from bench._harness.server import kill_all_servers


def parser(doc: str | None, name: str, quick_help: str, *, keep: bool = True) -> argparse.ArgumentParser:
    """An argument parser with the flags every benchmark has: ``--quick``, ``--out`` and (for those
    with a temporary directory) ``--keep``."""
    out = argparse.ArgumentParser(prog=f"python -m bench.{name}", description=(doc or "").split("\n\n")[0])
    out.add_argument("--quick", action="store_true", help=quick_help)
    out.add_argument("--out", type=Path, default=RESULTS / f"{name}.json",
                     help=f"where the JSON goes (default bench/results/{name}.json)")  # fmt: skip
    if keep:
        out.add_argument("--keep", action="store_true", help="keep the temporary directory (server logs and data)")
    return out


def add_profile_flags(parser: argparse.ArgumentParser, what: str) -> None:
    add = parser.add_argument
    add("--profile", action="store_true", help="instead of measuring: profile an in-process server (cProfile) "
        f"on {what}; prints only, writes no JSON")  # fmt: skip
    add("--profile-lines", type=int, default=25, help="functions per profile listing (default 25)")


Section = Callable[[Any, Path], Awaitable[dict[str, Any]]]


async def run_sections(
    sections: Mapping[str, Section], p: Any, workdir: Path, timeout_s: float | None
) -> dict[str, Any]:
    """Run each section in turn; one that fails or takes longer than ``timeout_s`` is reported (and kept
    in the JSON) and the rest still run. Each result also records how long it took and the 1-minute
    load average before and after."""
    results: dict[str, Any] = {}
    for name, section in sections.items():
        print(f"\n== {name}", flush=True)
        began = time.perf_counter()
        load0 = os.getloadavg()[0]
        try:
            results[name] = await asyncio.wait_for(section(p, workdir), timeout_s)
        except Exception as exc:  # a benchmark failure is a result too; the other sections still run
            kill_all_servers()
            message = f"{type(exc).__name__}: {exc}"
            print(f"  FAILED: {message}", flush=True)
            results[name] = {"error": message}
        results[name]["section_s"] = round(time.perf_counter() - began, 1)
        results[name]["loadavg_1m_before_after"] = [round(load0, 2), round(os.getloadavg()[0], 2)]
    return results


@dataclass
class Benchmark:
    """One server benchmark: its name (``bench/<name>.py``), the noun of its header line, and its
    sections. ``document`` adds fields to the JSON from the results (client versions, targets);
    ``strict`` fails the run on any problem a section reported, not only on a failed section."""

    name: str
    title: str
    document: Callable[[Mapping[str, Any]], Mapping[str, Any]] = field(default=lambda results: {})
    strict: bool = False
    section_timeout_s: float | None = 900.0

    def header(self, quick: bool) -> dict[str, Any]:
        """Print the line that opens the output, and return the machine's facts."""
        logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
        facts = machine_facts()
        print(f"ksteward {self.title} benchmarks{' (quick)' if quick else ''}: {facts['cpu_count']} CPUs "
              f"({facts['cpu_model']}), Python {facts['python']}, "
              f"load average {facts['loadavg_at_start']}")  # fmt: skip
        return facts

    def workdir(self) -> Path:
        return Path(tempfile.mkdtemp(prefix=f"ksteward-bench-{self.name}-"))

    def main(self, args: argparse.Namespace, p: Any, sections: Mapping[str, Section]) -> int:
        """Run ``sections`` with parameters ``p``, print their tables, write the JSON; 1 if anything failed."""
        facts = self.header(p.quick)
        workdir = self.workdir()
        began = time.perf_counter()
        try:
            results = asyncio.run(run_sections(sections, p, workdir, self.section_timeout_s))
        finally:
            kill_all_servers()
            if args.keep:
                print(f"kept {workdir}")
            else:
                shutil.rmtree(workdir, ignore_errors=True)
        extra = self.document(results)
        document = write_document(args.out, self.name, {"machine": facts, "params": asdict(p), **extra,
                                                         "total_s": round(time.perf_counter() - began, 1),
                                                         "results": results})  # fmt: skip
        print(f"\nwrote {args.out} ({document['total_s']}s in all)")
        failed = any("error" in r for r in results.values())
        return 1 if failed or (self.strict and any(r.get("problems") for r in results.values())) else 0

    def profile(self, quick: bool, run: Callable[[Path], Awaitable[None]]) -> int:
        """``--profile``: run ``run`` in a temporary directory; it prints, and nothing is written."""
        self.header(quick)
        workdir = self.workdir()
        try:
            asyncio.run(run(workdir))
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
        return 0
