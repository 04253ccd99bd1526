"""BrokerHeartbeat on the controller: the state machine (BrokerHeartbeatManagerTest#testCalculateNextBrokerState),
unfencing once caught up, and controlled shutdown with its leader moves."""

from __future__ import annotations

import pytest
from kio.schema.errors import ErrorCode
from membership_world import (
    LOCAL,
    apply,
    commit,
    heartbeat,
    new_world,
    partition,
    register,
    registration,
    with_topic,
)

from ksteward.controller.membership import BrokerControlState, next_broker_state
from ksteward.metadata.records import BrokerRegistrationChangeRecordV0, BrokerRegistrationChangeRecordV1

S = BrokerControlState


@pytest.mark.parametrize(
    ("current", "fence", "shut_down", "offset", "leads", "lowest", "expected"),
    [
        (S.FENCED, False, False, 100, False, 0, S.UNFENCED),  # caught up to the registration offset 100
        (S.FENCED, False, False, 50, False, 0, S.FENCED),  # behind
        (S.FENCED, True, False, 100, False, 0, S.FENCED),
        (S.FENCED, True, True, 100, False, 0, S.SHUTDOWN_NOW),
        (S.FENCED, False, True, 100, False, 0, S.SHUTDOWN_NOW),
        (S.UNFENCED, True, False, 100, True, 0, S.FENCED),
        (S.UNFENCED, True, True, 100, True, 0, S.SHUTDOWN_NOW),
        (S.UNFENCED, False, True, 100, True, 0, S.CONTROLLED_SHUTDOWN),
        (S.UNFENCED, False, True, 100, False, 0, S.SHUTDOWN_NOW),
        (S.UNFENCED, False, False, 100, True, 0, S.UNFENCED),
        (S.CONTROLLED_SHUTDOWN, False, True, 100, True, 10**9, S.CONTROLLED_SHUTDOWN),  # still leads
        (S.CONTROLLED_SHUTDOWN, False, True, 100, False, 119, S.CONTROLLED_SHUTDOWN),  # an active broker is behind
        (S.CONTROLLED_SHUTDOWN, False, True, 100, False, 120, S.SHUTDOWN_NOW),
        (S.CONTROLLED_SHUTDOWN, True, False, 100, False, float("inf"), S.SHUTDOWN_NOW),  # flags are not read
    ],
)
def test_next_broker_state(
    current: S, fence: bool, shut_down: bool, offset: int, leads: bool, lowest: float, expected: S
) -> None:
    request = heartbeat(2, 7, offset, fence=fence, shut_down=shut_down)
    state = next_broker_state(
        current, request, registration_offset=100, leads_partitions=leads, shutdown_offset=120,
        lowest_active_offset=lowest,
    )  # fmt: skip
    assert state is expected


def test_an_unknown_broker_or_another_epoch_is_stale_broker_epoch() -> None:
    image, manager = new_world()
    reply = manager.process_heartbeat(image, heartbeat(2, 5, 0), 0.0).response
    assert reply.error.code == ErrorCode.stale_broker_epoch
    assert reply.error.message == "Receive a heartbeat from broker 2 before registration"
    image, epoch = register(image, manager, 2)
    reply = manager.process_heartbeat(image, heartbeat(2, epoch - 1, image.offset), 0.0).response
    assert reply.error.code == ErrorCode.stale_broker_epoch and reply.is_fenced


def test_a_fenced_broker_is_unfenced_only_once_caught_up_to_its_registration() -> None:
    image, manager = new_world()
    image, reply = commit(image, manager.register_broker(image, registration(2), 0.0))
    epoch = reply.broker_epoch
    wanting = manager.process_heartbeat(image, heartbeat(2, epoch, image.offset, fence=True), 0.0)
    assert not wanting.records and wanting.response.is_caught_up and wanting.response.is_fenced
    behind = manager.process_heartbeat(image, heartbeat(2, epoch, epoch - 1), 0.0)
    assert not behind.records and not behind.response.is_caught_up and behind.response.is_fenced
    caught_up = manager.process_heartbeat(image, heartbeat(2, epoch, epoch), 0.0)
    assert caught_up.response.is_caught_up and not caught_up.response.is_fenced
    assert caught_up.records == [BrokerRegistrationChangeRecordV0(broker_id=2, broker_epoch=epoch, fenced=-1)]
    assert not apply(image, caught_up.records).cluster[2].fenced


def test_unfencing_elects_the_broker_for_leaderless_partitions_it_is_in_sync_for() -> None:
    image, manager = new_world()
    image, epoch = register(image, manager, 2)
    image = with_topic(image, "t", (2,))
    image, _ = commit(image, manager.process_heartbeat(image, heartbeat(2, epoch, image.offset, fence=True), 1.0))
    assert image.cluster[2].fenced and partition(image, "t").leader == -1
    assert list(partition(image, "t").isr) == [2]  # without ELR the last member stays in the ISR
    image, reply = commit(image, manager.process_heartbeat(image, heartbeat(2, epoch, image.offset), 2.0))
    assert not reply.is_fenced and partition(image, "t").leader == 2


def test_want_fence_moves_leadership_and_leaves_the_isr() -> None:
    image, manager = new_world()
    image, epoch = register(image, manager, 2)
    image = with_topic(image, "t", (2, 1), (1, 2))
    image, reply = commit(image, manager.process_heartbeat(image, heartbeat(2, epoch, image.offset, fence=True), 1.0))
    assert reply.is_fenced and not reply.should_shut_down and image.cluster[2].fenced
    p0, p1 = partition(image, "t", 0), partition(image, "t", 1)
    assert (p0.leader, list(p0.isr), p0.leader_epoch) == (1, [1], 1)
    assert (p1.leader, list(p1.isr), p1.leader_epoch) == (1, [1], 0)  # an ISR shrink alone keeps the epoch


def test_controlled_shutdown_moves_leaders_then_says_shut_down() -> None:
    image, manager = new_world()
    image, epoch = register(image, manager, 2)
    image = with_topic(image, "t", (2, 1))
    result = manager.process_heartbeat(image, heartbeat(2, epoch, image.offset, shut_down=True), 1.0)
    assert result.response.in_controlled_shutdown and not result.response.should_shut_down
    assert not result.response.is_fenced
    assert isinstance(result.records[0], BrokerRegistrationChangeRecordV1)
    assert result.records[0].in_controlled_shutdown == 1
    image, _ = commit(image, result)
    assert partition(image, "t").leader == 1 and image.cluster[2].in_controlled_shutdown
    assert not image.cluster[2].fenced  # still listed by Metadata until it shuts down
    image, reply = commit(
        image, manager.process_heartbeat(image, heartbeat(2, epoch, image.offset, shut_down=True), 2.0)
    )
    assert reply.should_shut_down and reply.is_fenced and image.cluster[2].fenced


def test_controlled_shutdown_waits_until_every_active_broker_has_seen_it() -> None:
    image, manager = new_world()
    image, epoch2 = register(image, manager, 2)
    image, epoch3 = register(image, manager, 3)
    image = with_topic(image, "t", (2, 3))
    image, reply = commit(
        image, manager.process_heartbeat(image, heartbeat(2, epoch2, image.offset, shut_down=True), 1.0)
    )
    assert reply.in_controlled_shutdown and partition(image, "t").leader == 3
    shutdown_offset = image.offset
    # Broker 3 last reported an offset before the shutdown batch: broker 2 must wait.
    _, reply = commit(image, manager.process_heartbeat(image, heartbeat(2, epoch2, image.offset, shut_down=True), 2.0))
    assert not reply.should_shut_down
    image, _ = commit(image, manager.process_heartbeat(image, heartbeat(3, epoch3, shutdown_offset), 2.0))
    _, reply = commit(image, manager.process_heartbeat(image, heartbeat(2, epoch2, image.offset, shut_down=True), 3.0))
    assert reply.should_shut_down


def test_a_broker_that_leads_nothing_shuts_down_at_once() -> None:
    image, manager = new_world()
    image, epoch = register(image, manager, 2)
    image, reply = commit(
        image, manager.process_heartbeat(image, heartbeat(2, epoch, image.offset, shut_down=True), 1.0)
    )
    assert reply.should_shut_down and reply.is_fenced and image.cluster[2].fenced


@pytest.mark.parametrize(("fence", "shut_down"), [(True, False), (False, True), (False, False)])
def test_a_heartbeat_naming_the_combined_nodes_own_broker_changes_nothing(fence: bool, shut_down: bool) -> None:
    """The combined node's broker never heartbeats; a heartbeat naming it, at its epoch, is someone else's. Accepted,
    a want_fence would fence the node's broker for good (nothing heartbeats it back), and Metadata would list no
    broker until a restart. Refused as a stale epoch, and nothing is written."""
    image, manager = new_world()
    epoch = int(image.cluster[LOCAL].broker_epoch)
    result = manager.process_heartbeat(image, heartbeat(LOCAL, epoch, image.offset, fence=fence, shut_down=shut_down),
                                       1.0)  # fmt: skip
    assert result.records == []
    assert result.response.error.code == ErrorCode.stale_broker_epoch
    assert "own broker" in (result.response.error.message or "")
    assert not image.cluster[LOCAL].fenced and manager.has_valid_session(LOCAL, epoch, 10_000.0)
