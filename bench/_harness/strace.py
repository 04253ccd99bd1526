"""A server under ``strace -f``, and what its trace shows: whether a log segment was fsynced between
the server reading a request and writing its reply. This proves the ordering, which a SIGKILL and
restart cannot: the page cache survives a killed process. Not for timing."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
from pathlib import Path
from typing import Any

from bench._harness.server import ServerError, ServerProcess

STRACE = shutil.which("strace")
TRACED_SYSCALLS = "fsync,fdatasync,recvfrom,sendto"


class TracedServer(ServerProcess):
    """``ksteward serve`` under ``strace -f``: fsyncs (with the file they sync), and the first 12 bytes of
    every socket read and write (which hold a frame's API key and correlation id). Not for timing.

    ``pid`` is the server's (strace's child), so CPU and memory readings describe the server. strace
    ignores SIGTERM; ``stop`` signals ``pid``, the server, and waits for strace to exit with its code."""

    def __init__(self, *args: Any, trace_path: Path, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.trace_path = trace_path
        self._traced_pid: int | None = None

    def command(self) -> list[str]:
        assert STRACE is not None
        return [STRACE, "-f", "--seccomp-bpf", "-qq", "-y", "-xx", "-s", "12", "-e", f"trace={TRACED_SYSCALLS}",
                "-e", "signal=none", "-o", str(self.trace_path), *super().command()]  # fmt: skip

    @property
    def pid(self) -> int:
        if self._traced_pid is None:
            assert self.proc is not None, "not started"
            for entry in Path("/proc").iterdir():
                with contextlib.suppress(OSError, IndexError):
                    if entry.name.isdigit() and (entry / "stat").read_text().rsplit(")", 1)[1].split()[1] == str(
                        self.proc.pid
                    ):
                        self._traced_pid = int(entry.name)
                        break
            else:
                raise ServerError(f"{self.name}: no child of strace ({self.proc.pid}) found")
        return self._traced_pid

    def kill(self) -> None:
        if self.proc is not None and self.proc.returncode is None and self._traced_pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self._traced_pid, signal.SIGKILL)
        super().kill()


_LINE = re.compile(r"(\d+)\s+(?:<\.\.\. (\w+) resumed>|(\w+)\()(.*)$")
_HEX = re.compile(r'"((?:\\x[0-9a-f]{2})+)"')
_FD = re.compile(r"^(\d+<[^>]*>)")


def _unhex(text: str) -> str:
    """``6<\\x2f\\x74...>`` as ``6</t...>``."""
    latin = re.sub(r"\\x([0-9a-f]{2})", lambda m: chr(int(m.group(1), 16)), text)
    return latin.encode("latin-1").decode("utf-8", "replace")


def trace_events(text: str) -> list[tuple[str, str, str, bytes, bool]]:
    """(syscall, fd with its path, the rest, data bytes, succeeded) per completed syscall, in order of
    completion. An ``<unfinished ...>`` call is joined with its ``resumed`` line."""
    pending: dict[str, str] = {}
    events = []
    for line in text.splitlines():
        m = _LINE.match(line)
        if m is None:
            continue
        pid, resumed, started, rest = m.groups()
        if rest.endswith("<unfinished ...>"):
            pending[pid] = rest[: -len("<unfinished ...>")]
            continue
        name = resumed or started
        if resumed:
            rest = pending.pop(pid, "") + rest
        fd = _FD.match(rest)  # with -xx, strace prints the fd's path in hex too
        data = _HEX.search(rest)
        raw = bytes.fromhex(data.group(1).replace("\\x", "")) if data else b""
        ret = rest.rsplit("=", 1)[-1].strip().split(" ")[0] if "=" in rest else ""
        events.append((name, _unhex(fd.group(1)) if fd else "", rest, raw, ret.isdigit()))
    return events


def fsync_before_reply(events: list[tuple[str, str, str, bytes, bool]], key: int, cid: int) -> dict[str, Any]:
    """For the request (``key``, ``cid``): the fsyncs of a log segment that completed between the server's
    read of the request and its first write of the reply on that socket."""
    want = cid.to_bytes(4, "big", signed=True)
    read = next((i for i, (name, _fd, _r, data, ok) in enumerate(events) if name == "recvfrom" and ok
                 and data[8:12] == want and int.from_bytes(data[4:6], "big") == key), None)  # fmt: skip
    if read is None:
        return {"seen": False, "fsyncs_between": None, "durable_before_reply": None}
    sock = events[read][1]
    reply = next((i for i in range(read + 1, len(events)) if events[i][0] == "sendto" and events[i][1] == sock
                  and events[i][3][4:8] == want), None)  # fmt: skip
    if reply is None:
        return {"seen": True, "fsyncs_between": None, "durable_before_reply": False}
    fsyncs = [e for e in events[read + 1 : reply] if e[0] in ("fsync", "fdatasync") and e[4] and ".log>" in e[1]]
    return {"seen": True, "fsyncs_between": len(fsyncs), "durable_before_reply": bool(fsyncs),
            "synced": sorted({e[1].split("<", 1)[1].rstrip(">").rsplit("/", 1)[-1] for e in fsyncs})}  # fmt: skip
