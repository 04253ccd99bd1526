"""BrokerRegistration on the controller: Kafka's checks and errors (ClusterControlManagerTest), the record
and the broker epoch."""

from __future__ import annotations

import uuid

from kio.schema.errors import ErrorCode
from kio.static.primitive import i16
from membership_world import LOCAL, TIMEOUT, apply, commit, heartbeat, new_world, register, registration

from ksteward.metadata.records import BrokerFeature, RegisterBrokerRecordV1, RegisterBrokerRecordV3


def test_a_new_broker_is_registered_fenced_with_the_records_offset_as_its_epoch() -> None:
    image, manager = new_world()
    result = manager.register_broker(image, registration(2), 0.0)
    assert result.response.error.code == ErrorCode.none
    assert result.response.broker_epoch == image.offset + 1
    [record] = result.records
    assert isinstance(record, RegisterBrokerRecordV3)
    assert record.broker_id == 2 and record.fenced and record.broker_epoch == image.offset + 1
    assert [(e.name, e.port) for e in record.end_points] == [("PLAINTEXT", 9102)]
    image = apply(image, result.records)
    assert image.cluster[2].fenced


def test_the_record_version_follows_metadata_version() -> None:
    image, manager = new_world(level=7)
    features = tuple(
        BrokerFeature(name=name, min_supported_version=i16(lo), max_supported_version=i16(hi))
        for name, (lo, hi) in (("metadata.version", (7, 7)), ("group.version", (0, 1)), ("transaction.version", (0, 2)))
    )
    request = registration(2, log_dirs=(), features=features)
    [record] = manager.register_broker(image, request, 0.0).records
    assert type(record) is RegisterBrokerRecordV1  # no log directories before 3.7-IV2


def test_another_cluster_id_is_inconsistent_cluster_id() -> None:
    image, manager = new_world()
    result = manager.register_broker(image, registration(2, cluster_id="other"), 0.0)
    assert result.response.error.code == ErrorCode.inconsistent_cluster_id and not result.records
    assert result.response.broker_epoch == -1


def test_a_new_incarnation_is_a_duplicate_while_the_old_session_is_live_and_welcome_after() -> None:
    image, manager = new_world()
    image, epoch = register(image, manager, 2, now=1.0)
    second = registration(2)
    result = manager.register_broker(image, second, 1.0 + TIMEOUT)  # not expired: compared strictly
    assert result.response.error.code == ErrorCode.duplicate_broker_registration and not result.records
    result = manager.register_broker(image, second, 1.0 + TIMEOUT + 0.001)
    assert result.response.error.code == ErrorCode.none
    assert result.response.broker_epoch == image.offset + 1 > epoch
    assert (2, epoch) not in manager.contacts  # the old incarnation's session is dropped


def test_a_registration_that_never_heartbeated_has_no_session() -> None:
    image, manager = new_world()
    image, _ = commit(image, manager.register_broker(image, registration(2), 0.0))
    assert manager.register_broker(image, registration(2), 0.0).response.error.code == ErrorCode.none


def test_the_same_incarnation_amends_the_registration_and_keeps_epoch_and_flags() -> None:
    image, manager = new_world()
    incarnation = uuid.uuid4()
    image, reply = commit(image, manager.register_broker(image, registration(2, incarnation), 0.0))
    image, _ = commit(image, manager.process_heartbeat(image, heartbeat(2, reply.broker_epoch, image.offset), 0.0))
    assert not image.cluster[2].fenced
    result = manager.register_broker(image, registration(2, incarnation, rack="r2"), 1.0)
    assert result.response.broker_epoch == reply.broker_epoch
    [record] = result.records
    assert not record.fenced and record.rack == "r2" and record.broker_epoch == reply.broker_epoch


def test_the_combined_nodes_own_broker_cannot_be_taken_over() -> None:
    image, manager = new_world()
    result = manager.register_broker(image, registration(LOCAL), 10 * TIMEOUT)
    assert result.response.error.code == ErrorCode.duplicate_broker_registration


def test_a_migrating_zk_broker_is_refused() -> None:
    image, manager = new_world()
    result = manager.register_broker(image, registration(2, is_migrating_zk_broker=True), 0.0)
    assert result.response.error.code == ErrorCode.broker_id_not_registered


def test_log_directory_checks() -> None:
    image, manager = new_world()
    expected = {
        (): "No directories specified in request",
        (uuid.UUID(int=5),): "Reserved directory ID in request",
    }
    taken = uuid.uuid4()
    duplicated = (taken, taken)
    expected[duplicated] = "Duplicate directory ID in request"
    for dirs, message in expected.items():
        reply = manager.register_broker(image, registration(2, log_dirs=dirs), 0.0).response
        assert (reply.error.code, reply.error.message) == (ErrorCode.invalid_registration, message)
    image, _ = commit(image, manager.register_broker(image, registration(2, log_dirs=(taken,)), 0.0))
    reply = manager.register_broker(image, registration(3, log_dirs=(taken,)), 0.0).response
    assert reply.error.code == ErrorCode.invalid_registration
    assert reply.error.message is not None and reply.error.message.startswith("Broker 2 is already registered")


def test_features_that_exclude_a_finalized_level_are_unsupported_version() -> None:
    image, manager = new_world()
    old = (BrokerFeature(name="metadata.version", min_supported_version=i16(7), max_supported_version=i16(24)),)
    reply = manager.register_broker(image, registration(2, features=old), 0.0).response
    assert reply.error.code == ErrorCode.unsupported_version
    assert reply.error.message == (
        "Unable to register because the broker does not support finalized version 25 of metadata.version. "
        "The broker wants a version between 7 and 24, inclusive."
    )
    # No metadata.version range offered: the broker is taken to support level 1 only.
    assert manager.register_broker(image, registration(2, features=()), 0.0).response.error.code == 35
    # kraft.version is finalized at 0 by a static quorum: a broker that needs 1 cannot join.
    kraft = (*registration(2).features, BrokerFeature(name="kraft.version", min_supported_version=i16(1),
                                                       max_supported_version=i16(1)))  # fmt: skip
    assert manager.register_broker(image, registration(2, features=kraft), 0.0).response.error.code == 35


def test_a_fenced_broker_has_no_session_so_its_next_incarnation_registers_at_once() -> None:
    """Kafka's ``BrokerHeartbeatManager.hasValidSession`` is false for a fenced broker. After a controlled shutdown
    (the broker is fenced once told to shut down) a restarted broker registers at once, not a session timeout
    later; so does one that was never unfenced. Before, both got DUPLICATE_BROKER_REGISTRATION until the old
    session ran out."""
    image, manager = new_world()
    image, epoch = register(image, manager, 2, now=1.0)
    for at in (1.5, 2.0):  # the first asks to shut down, the second hears it may
        image, reply = commit(
            image, manager.process_heartbeat(image, heartbeat(2, epoch, image.offset, shut_down=True), at)
        )
    assert reply.should_shut_down and image.cluster[2].fenced
    result = manager.register_broker(image, registration(2), 2.1)  # its session would be valid until 2.0 + TIMEOUT
    assert result.response.error.code == ErrorCode.none and result.response.broker_epoch == image.offset + 1

    image, manager = new_world()
    image, first = commit(image, manager.register_broker(image, registration(2), 0.0))
    image, beat = commit(
        image, manager.process_heartbeat(image, heartbeat(2, first.broker_epoch, image.offset, fence=True), 1.0)
    )
    assert beat.is_fenced and manager.has_valid_session(2, first.broker_epoch, 1.1)
    assert manager.register_broker(image, registration(2), 1.1).response.error.code == ErrorCode.none
