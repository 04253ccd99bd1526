"""The controller's long poll: a parked Fetch is released by the committer's publish hook, by its
MaxWaitMs, or by shutdown; never by polling."""

from __future__ import annotations

import asyncio
from pathlib import Path

from kio.schema.errors import ErrorCode
from raft_helpers import CLUSTER_ID, CONTROLLER, LEADER_ID, fetch_request, open_log, partition_of, write_epochs

from ksteward.metadata.image import EMPTY_IMAGE
from ksteward.raft.leader import ParkedFetch
from ksteward.server.raft_service import RaftService


def service_for(path: Path) -> RaftService:
    log = open_log(path)
    write_epochs(log, [(1, 3)])
    return RaftService(node_id=LEADER_ID, cluster_id=CLUSTER_ID, epoch=1, metadata_log=log,
                       endpoints={CONTROLLER: ("127.0.0.1", 9093)})  # fmt: skip


def test_a_parked_fetch_is_released_by_the_publish_hook(tmp_path: Path) -> None:
    service = service_for(tmp_path)
    log = service.view.log

    async def scenario() -> None:
        parked = service.leader.handle_fetch(fetch_request(3, 1, leader_epoch=1, max_wait_ms=600_000), 17, CONTROLLER)
        assert parked == ParkedFetch(3, 600_000)
        waiting = asyncio.create_task(service.wait_for_data(parked))
        await asyncio.sleep(0)  # let it park (a scheduling step, not a wait for time)
        assert not waiting.done()
        log.append([b"new"], timestamp_ms=1, leader_epoch=1)
        service.on_publish(EMPTY_IMAGE, [])  # appended but not durable: still parked
        await asyncio.sleep(0)
        assert not waiting.done()
        log.flush()
        service.on_publish(EMPTY_IMAGE, [])
        await waiting

    asyncio.run(scenario())
    done = partition_of(service.leader.complete_fetch(fetch_request(3, 1, leader_epoch=1), 17, CONTROLLER))
    assert done.records and done.high_watermark == 4
    log.close()


def test_an_expired_wait_answers_empty_and_shutdown_releases_everyone(tmp_path: Path) -> None:
    service = service_for(tmp_path)

    async def scenario() -> None:
        await service.wait_for_data(ParkedFetch(3, 1))  # MaxWaitMs 1: returns once it passes
        waiting = asyncio.create_task(service.wait_for_data(ParkedFetch(3, 600_000)))
        await asyncio.sleep(0)
        service.shut_down()
        await waiting

    asyncio.run(scenario())
    empty = partition_of(service.leader.complete_fetch(fetch_request(3, 1, leader_epoch=1), 17, CONTROLLER))
    assert empty.error_code == ErrorCode.broker_not_available and not empty.records
    service.view.log.close()
