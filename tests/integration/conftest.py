"""Fixtures for the integration tests: real ``ksteward serve`` processes on free loopback ports.

- ``server_factory``: make servers in the test's ``tmp_path`` (not started); all killed at teardown.
- ``plaintext_server`` / ``sasl_server``: one running server per test module (the shipped
  ``config/server.properties`` and ``config/sasl.properties``), for tests that do not change it.
- ``cluster``: a started ``harness.Cluster`` (one controller, two brokers) in the test's ``tmp_path``.

When a test fails, the tail of every server log it touched is attached to the report.
"""

from __future__ import annotations

import atexit
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest
from harness import LIVE, Cluster, KstewardServer, ServerFactory, kill_all

atexit.register(kill_all)  # last resort: never leave a server behind, even if pytest is interrupted

_TOUCHED = pytest.StashKey[list[KstewardServer]]()


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    report = yield
    if report.failed:
        servers = list(item.stash.get(_TOUCHED, []))
        servers += [s for s in LIVE if s not in servers]
        for server in servers:
            report.sections.append((f"ksteward log: {server!r} ({server.log_path})", server.log_tail(60)))
    return report


def pytest_sessionfinish(session: pytest.Session) -> None:
    kill_all()


def _remember(item: pytest.Item, server: KstewardServer) -> None:
    item.stash.setdefault(_TOUCHED, []).append(server)


@pytest.fixture
def server_factory(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[ServerFactory]:
    made: list[KstewardServer] = []

    def make(
        template: str = "server",
        overrides: Mapping[str, str] | None = None,
        *,
        name: str | None = None,
        debug_log: bool = False,
    ) -> KstewardServer:
        server = KstewardServer(
            tmp_path, template, overrides, name=name or f"ksteward{len(made) + 1}", debug_log=debug_log
        )
        made.append(server)
        _remember(request.node, server)
        return server

    yield make
    for server in made:
        server.kill()


def _module_server(
    tmp_path_factory: pytest.TempPathFactory, template: str, overrides: Mapping[str, str] | None = None
) -> KstewardServer:
    return KstewardServer(tmp_path_factory.mktemp(template), template, overrides, name=template)


@pytest.fixture(scope="module")
def plaintext_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KstewardServer]:
    server = _module_server(tmp_path_factory, "server")
    try:
        yield server.start()
    finally:
        server.kill()


@pytest.fixture(scope="module")
def sasl_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KstewardServer]:
    server = _module_server(tmp_path_factory, "sasl")
    try:
        yield server.start()
    finally:
        server.kill()


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    made = Cluster(tmp_path)
    try:
        yield made.start()
    finally:
        made.kill()


@pytest.fixture(autouse=True)
def _remember_module_servers(request: pytest.FixtureRequest) -> None:
    """Attach module-scoped servers a test uses to its failure report."""
    for name in ("plaintext_server", "sasl_server", "small_frames_server"):
        if name in request.fixturenames:
            _remember(request.node, request.getfixturevalue(name))
