"""A server under valgrind's callgrind: the instructions it executes, where its CPU time is too noisy to compare.

On a shared 2-core machine one and the same server's CPU per request moves by a third from one round to the
next (bench/README.md, "The metrics endpoint"); the instructions it executes for the same requests move by
well under 1%. ``CallgrindServer`` runs ``ksteward serve`` under ``valgrind --tool=callgrind`` (user-space
instructions only: system calls count as one instruction, their time in the kernel not at all) and reads the
instructions executed since the last reading with ``callgrind_control --dump``. A guest under valgrind runs
about 50 times slower, so only a few thousand requests are worth sending it.
"""

from __future__ import annotations

import asyncio
import re
import shutil
import subprocess
import time
from pathlib import Path

from bench._harness.server import ServerProcess

_TOTALS = re.compile(rb"^totals: (\d+)\n", re.MULTILINE)  # the last line of a dump, once it is complete


def missing() -> str | None:
    """Why the instruction counts cannot be taken here, or None when they can."""
    for tool in ("valgrind", "callgrind_control"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed (the valgrind package)"
    return None


class CallgrindServer(ServerProcess):
    """A ``ServerProcess`` under callgrind; :meth:`instructions` reads and resets its instruction count."""

    @property
    def _out(self) -> Path:
        return self.workdir / f"{self.name}.callgrind"

    def command(self) -> list[str]:
        return ["valgrind", "--tool=callgrind", "--quiet", f"--callgrind-out-file={self._out}", *super().command()]

    async def instructions(self, timeout: float = 120.0) -> int:
        """The instructions executed since the start or the last call (callgrind dumps its counters to a new
        ``.N`` file and zeroes them)."""
        before = set(self.workdir.glob(f"{self._out.name}.*"))
        done = await asyncio.to_thread(
            subprocess.run, ["callgrind_control", "--dump", str(self.pid)], capture_output=True, timeout=timeout
        )
        if done.returncode != 0:
            raise RuntimeError(f"callgrind_control --dump {self.pid}: {done.stderr.decode(errors='replace')[-300:]}")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:  # the dump is written by the guest's next scheduling point
            for path in set(self.workdir.glob(f"{self._out.name}.*")) - before:
                found = _TOTALS.search(path.read_bytes())
                if found:
                    return int(found.group(1))
            await asyncio.sleep(0.05)
        raise RuntimeError(f"{self.name}: no callgrind dump within {timeout:.0f}s")
