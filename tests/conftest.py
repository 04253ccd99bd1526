"""How ``make test`` shares the suite between two pytest-xdist workers (``-n 2 --dist loadgroup``).

The tests in ``tests/pipeline`` share one SparkSession (``tests/pipeline/conftest.py``): they are one unit of
work, run by one worker on one JVM, and handed out first, as the largest unit; the other worker takes the unit
and integration tests one at a time, most of which wait on their servers. xdist groups by ``xdist_group`` marks
by renaming each marked item's node id, which pytest 9 no longer allows (``Node.nodeid`` is read-only), so the
group is chosen here by path.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

_STARTED = pytest.StashKey[float]()

SPARK_TESTS = "tests/pipeline/"


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class SparkTestsTogether(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return "spark" if nodeid.startswith(SPARK_TESTS) else nodeid

    return SparkTestsTogether(config, log)


# When each worker ran out of tests, printed at the end of the run: the suite lasts as long as its slower worker,
# so this shows which share to make smaller (docs/testing.md).
_WORKERS_DONE: dict[str, float] = {}


def pytest_testnodedown(node: Any, error: Any) -> None:
    _WORKERS_DONE[node.gateway.id] = time.monotonic()


def pytest_sessionstart(session: pytest.Session) -> None:
    session.config.stash[_STARTED] = time.monotonic()


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    started = config.stash.get(_STARTED, None)
    if started is None or not _WORKERS_DONE:
        return
    done = ", ".join(f"{worker} after {at - started:.0f} s" for worker, at in sorted(_WORKERS_DONE.items()))
    terminalreporter.write_line(f"workers finished: {done}")
