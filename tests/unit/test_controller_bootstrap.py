"""The controller's start-up records: metadata.version on a new log, the broker registration when it changed."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from ksteward.configs.server_config import Endpoint
from ksteward.controller.cluster import BrokerRegistration, bootstrap
from ksteward.metadata.delta import MetadataDelta
from ksteward.metadata.image import EMPTY_IMAGE, MetadataImage
from ksteward.metadata.records import FeatureLevelRecord, RegisterBrokerRecord

PLAIN = Endpoint("PLAINTEXT", "localhost", 9092, "PLAINTEXT")
BROKER = BrokerRegistration(1, uuid.UUID(int=7), (PLAIN,), rack="r1")


def apply(image: MetadataImage, records: Sequence[Any]) -> MetadataImage:
    delta = MetadataDelta(image)
    for record in records:
        delta.replay(record)
    return delta.apply(offset=image.offset + len(records))


def test_a_new_log_gets_metadata_version_and_the_registration() -> None:
    done = bootstrap(EMPTY_IMAGE, BROKER)
    *features, registration = done.records
    assert features == [  # as Kafka 4.0's kafka-storage format finalizes them
        FeatureLevelRecord(name="metadata.version", feature_level=25),
        FeatureLevelRecord(name="group.version", feature_level=1),
        FeatureLevelRecord(name="transaction.version", feature_level=2),
    ]
    assert isinstance(registration, RegisterBrokerRecord)
    assert (registration.broker_id, registration.incarnation_id, registration.rack) == (1, uuid.UUID(int=7), "r1")
    assert registration.broker_epoch == 0 and not registration.fenced
    [endpoint] = registration.end_points
    assert (endpoint.name, endpoint.host, endpoint.port, endpoint.security_protocol) == (
        "PLAINTEXT",
        "localhost",
        9092,
        0,
    )
    # every feature this node supports, as a Kafka 4.0 broker registers them
    assert [(f.name, f.min_supported_version, f.max_supported_version) for f in registration.features] == [
        ("metadata.version", 7, 25),
        ("kraft.version", 0, 0),
        ("group.version", 0, 1),
        ("transaction.version", 0, 2),
    ]
    assert done.response is None


def test_a_controller_only_node_writes_only_the_features() -> None:
    assert [type(r) for r in bootstrap(EMPTY_IMAGE, None).records] == [FeatureLevelRecord] * 3


def test_an_unchanged_restart_writes_nothing_and_a_changed_rack_registers_again() -> None:
    image = apply(EMPTY_IMAGE, bootstrap(EMPTY_IMAGE, BROKER).records)
    assert list(bootstrap(image, BROKER).records) == []
    assert list(bootstrap(image, BrokerRegistration(1, uuid.UUID(int=8), (PLAIN,), rack="r1")).records) == []
    [again] = bootstrap(image, BrokerRegistration(1, uuid.UUID(int=8), (PLAIN,), rack="r2")).records
    assert isinstance(again, RegisterBrokerRecord) and again.rack == "r2" and again.broker_epoch == image.offset + 1
