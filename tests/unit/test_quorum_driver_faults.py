"""A voter's controller that cannot apply what the quorum committed stops the process, as Kafka's controller fault
handler does (``SharedServer.fatalQuorumControllerFaultHandler``). ``fatal.halt`` would end the test run, so it
raises here instead."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import NoReturn

import pytest

from ksteward.configs.server_config import parse_server_config
from ksteward.metadata.log import MetadataLog
from ksteward.raft.observer import HighWatermarkUpdated
from ksteward.server import fatal
from ksteward.server.quorum import QuorumDriver


class Halted(Exception):
    pass


class BrokenRole:
    """A controller whose replay of committed records fails (a bug, or a record it cannot take)."""

    def on_high_watermark(self, high_watermark: int) -> None:
        raise KeyError("no broker registration with that epoch")


def test_a_controller_that_cannot_apply_committed_records_halts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def halt(reason: str, error: BaseException) -> NoReturn:
        raise Halted(reason, error)

    monkeypatch.setattr(fatal, "halt", halt)
    config = parse_server_config({
        "process.roles": "controller", "node.id": "1", "listeners": "CONTROLLER://127.0.0.1:9093",
        "controller.listener.names": "CONTROLLER", "metadata.log.dir": str(tmp_path),
        "controller.quorum.voters": "1@127.0.0.1:9093,2@127.0.0.1:9094,3@127.0.0.1:9095",
    })  # fmt: skip
    log = MetadataLog.open(tmp_path / "__cluster_metadata-0")

    async def run() -> None:
        driver = QuorumDriver(config, cluster_id="c", metadata_log=log, role=BrokenRole(),  # type: ignore[arg-type]
                              endpoints={"CONTROLLER": ("127.0.0.1", 9093)}, sasl_plain=None)  # fmt: skip
        driver._perform([HighWatermarkUpdated(5)])

    try:
        with pytest.raises(Halted) as halted:
            asyncio.run(run())
    finally:
        log.close()
    reason, error = halted.value.args
    assert reason == "this controller could not apply the records committed below offset 5"
    assert isinstance(error, KeyError)
