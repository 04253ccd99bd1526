"""Statistics, tables, machine facts and the result document every benchmark writes to
``bench/results/<name>.json``: its figures plus where they came from (command, git HEAD, the
directory ``ksteward`` was imported from, the machine and its load)."""

from __future__ import annotations

import contextlib
import datetime
import json
import math
import os
import platform
import random
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import ksteward

REPO = Path(__file__).resolve().parents[2]
RESULTS = REPO / "bench" / "results"


def percentile_ms(latencies_ns: Sequence[int], q: float) -> float:
    """Nearest-rank percentile (``q`` in 0..100) of nanosecond samples, in milliseconds."""
    if not latencies_ns:
        return float("nan")
    ordered = sorted(latencies_ns)
    rank = max(1, min(len(ordered), round(q / 100 * len(ordered) + 0.5)))
    return ordered[rank - 1] / 1e6


def median(values: Sequence[float]) -> float:
    ordered = sorted(values)
    n = len(ordered)
    return ordered[n // 2] if n % 2 else (ordered[n // 2 - 1] + ordered[n // 2]) / 2


def ratio_interval(ratios: Sequence[float], *, resamples: int = 4000, seed: int = 1) -> tuple[float, float, float]:
    """The geometric mean of paired ratios (B / A, one per independent block) and its 95% percentile-bootstrap
    interval over the blocks: (mean, low, high). Seeded, so the same ratios give the same interval."""
    logs = [math.log(r) for r in ratios]
    n = len(logs)
    rnd = random.Random(seed)
    means = sorted(math.fsum(rnd.choices(logs, k=n)) / n for _ in range(resamples))
    low, high = means[int(0.025 * resamples)], means[min(resamples - 1, int(0.975 * resamples))]
    return math.exp(math.fsum(logs) / n), math.exp(low), math.exp(high)


def summary(values: Sequence[float]) -> dict[str, Any]:
    """Median, min, max and spread = (max - min) / median of one method's runs."""
    mid = median(values)
    return {
        "median_s": round(mid, 4),
        "min_s": round(min(values), 4),
        "max_s": round(max(values), 4),
        "spread": round((max(values) - min(values)) / mid, 3) if mid else None,
        "n": len(values),
    }


def table(title: str, columns: Sequence[tuple[str, str]], rows: Sequence[Mapping[str, object]]) -> str:
    """A plain text table of ``rows`` (dicts); ``columns`` are (header, key) pairs; numbers right-aligned."""
    cells = [[_fmt(row.get(key, "")) for _, key in columns] for row in rows]
    headers = [h for h, _ in columns]
    widths = [max(len(h), *(len(r[i]) for r in cells)) for i, h in enumerate(headers)]
    lines = [title, "  ".join(h.rjust(w) for h, w in zip(headers, widths, strict=True))]
    lines.append("  ".join("-" * w for w in widths))
    for row in cells:
        lines.append("  ".join(c.rjust(w) for c, w in zip(row, widths, strict=True)))
    return "\n".join(lines)


def _fmt(value: object) -> str:
    if value is None or isinstance(value, bool):
        return "-" if value is None else "yes" if value else "no"
    if isinstance(value, float):
        if value != value:  # NaN
            return "-"
        if abs(value) >= 1000:
            return f"{value:,.0f}"
        if abs(value) >= 100:
            return f"{value:.1f}"
        return f"{value:.3g}" if abs(value) < 1 else f"{value:.2f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def warn(problems: Sequence[str]) -> None:
    for problem in problems:
        print(f"  WARNING: {problem}")


def machine_facts() -> dict[str, Any]:
    model = ""
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    mem_kib = 0
    with contextlib.suppress(OSError, ValueError, IndexError):
        mem_kib = int(Path("/proc/meminfo").read_text().splitlines()[0].split()[1])
    return {
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "cpu_count": os.cpu_count(),
        "cpu_affinity": len(os.sched_getaffinity(0)),
        "cpu_model": model,
        "mem_total_mib": mem_kib // 1024,
        "python": sys.version.split()[0],
        "python_implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "loadavg_at_start": list(os.getloadavg()),
    }


def git_dirty() -> bool | None:
    """Whether the working tree differs from HEAD (the run then measured uncommitted code). Result files
    under ``bench/results/`` do not count: an earlier benchmark of the same session writes them."""
    try:
        out = subprocess.run(["git", "status", "--porcelain", "--", ".", ":(exclude)bench/results"], cwd=REPO,
                             capture_output=True, text=True, timeout=30, check=True).stdout  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return None
    return bool(out.strip())


def git_head() -> str | None:
    """The commit the run measured (``git rev-parse``, which also reads a worktree's ``.git`` file)."""
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True, timeout=30,
                             check=True).stdout  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return None
    return out.strip() or None


def write_document(path: Path, benchmark: str, fields: Mapping[str, Any]) -> dict[str, Any]:
    """Write ``fields`` as JSON to ``path``, after the facts of the run: which benchmark, the command,
    the git HEAD (and whether the tree was dirty), where ``ksteward`` came from, the load at the end."""
    document = {
        "benchmark": f"bench/{benchmark}.py",
        "command": [Path(sys.executable).name, *sys.argv],
        "git_head": git_head(),
        "git_dirty": git_dirty(),
        "ksteward_imported_from": str(Path(ksteward.__file__).parent),
        "pythonpath": os.environ.get("PYTHONPATH"),
        "loadavg_at_end": [round(x, 2) for x in os.getloadavg()],
        **fields,
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document, indent=2, default=str) + "\n")
    return document
