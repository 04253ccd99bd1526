"""UpdateFeatures on the controller (Kafka's ``FeatureControlManager.updateFeatures``): the upgrade and downgrade
rules, the support of this controller and of every registered broker, metadata.version's downgrade safety, and
all-or-nothing records."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

import pytest
from kio.schema.errors import ErrorCode

from ksteward.configs.server_config import Endpoint
from ksteward.controller.cluster import BrokerRegistration, bootstrap
from ksteward.controller.features import FeatureUpdate, UpgradeType, update_features
from ksteward.metadata.delta import MetadataDelta
from ksteward.metadata.image import EMPTY_IMAGE, MetadataImage
from ksteward.metadata.records import BrokerEndpoint, BrokerFeature, FeatureLevelRecord, RegisterBrokerRecord

UP, SAFE, UNSAFE, UNKNOWN = UpgradeType.UPGRADE, UpgradeType.SAFE_DOWNGRADE, UpgradeType.UNSAFE_DOWNGRADE, 0


def apply(image: MetadataImage, records: Sequence[Any]) -> MetadataImage:
    delta = MetadataDelta(image)
    for record in records:
        delta.replay(record)
    return delta.apply(offset=image.offset + len(records))


# A combined node 1 at metadata.version 25, registered with every feature this node supports.
BASE = apply(EMPTY_IMAGE, bootstrap(EMPTY_IMAGE, BrokerRegistration(
    1, uuid.UUID(int=7), (Endpoint("PLAINTEXT", "localhost", 9092, "PLAINTEXT"),), rack=None)).records)  # fmt: skip


def run(image: MetadataImage, *updates: tuple[str, int, int]) -> tuple[list[tuple[str, int]], ErrorCode, str | None]:
    result = update_features(image, 1, [FeatureUpdate(n, lvl, UpgradeType.from_code(t)) for n, lvl, t in updates])
    records = [(r.name, int(r.feature_level)) for r in result.records]
    return records, result.response.code, result.response.message


def test_upgrade_then_safe_downgrade_of_group_version() -> None:
    assert BASE.features["group.version"] == 1  # a new log finalizes it, as Kafka 4.0's format does
    base = apply(BASE, [FeatureLevelRecord(name="group.version", feature_level=0)])
    records, code, _ = run(base, ("group.version", 1, UP))
    assert (records, code) == ([("group.version", 1)], ErrorCode.none)
    upgraded = apply(base, update_features(base, 1, [FeatureUpdate("group.version", 1, UP)]).records)
    assert upgraded.features["group.version"] == 1
    assert run(upgraded, ("group.version", 0, UP))[1:] == (
        ErrorCode.invalid_update_version,
        "Invalid update version 0 for feature group.version. Can't downgrade the version of this feature without "
        "setting the upgrade type to either safe or unsafe downgrade.",
    )
    records, code, _ = run(upgraded, ("group.version", 0, SAFE))
    assert (records, code) == ([("group.version", 0)], ErrorCode.none)
    assert "group.version" not in apply(upgraded, [FeatureLevelRecord(name="group.version", feature_level=0)]).features


@pytest.mark.parametrize(
    ("update", "message"),
    [
        (("group.version", 2, UP), "Local controller 1 only supports versions 0-1"),
        (("no.such.feature", 1, UP), "Local controller 1 does not support this feature."),
        (("transaction.version", -1, UP), "A feature version cannot be less than 0."),
        (("transaction.version", 2, SAFE), "Can't downgrade to a newer version."),
        (("transaction.version", 2, UNKNOWN), "The controller does not support the given upgrade type."),
        (("kraft.version", 1, UP), "Local controller 1 does not support this feature."),
    ],
)
def test_invalid_updates(update: tuple[str, int, int], message: str) -> None:
    name, level, _ = update
    low = apply(BASE, [FeatureLevelRecord(name="transaction.version", feature_level=0)])  # below its maximum
    assert run(low, update) == (
        [],
        ErrorCode.invalid_update_version,
        f"Invalid update version {level} for feature {name}. {message}",
    )


def test_every_registered_broker_must_support_the_level() -> None:
    old_broker = RegisterBrokerRecord(
        broker_id=2, incarnation_id=uuid.UUID(int=9), broker_epoch=5, end_points=(BrokerEndpoint(
            name="PLAINTEXT", host="localhost", port=9094, security_protocol=0),),
        features=(BrokerFeature(name="metadata.version", min_supported_version=7, max_supported_version=25),),
        rack=None, fenced=False, in_controlled_shutdown=False, log_dirs=(),
    )  # fmt: skip
    image = apply(BASE, [old_broker])
    assert run(image, ("group.version", 1, UP))[2] == (
        "Invalid update version 1 for feature group.version. Broker 2 does not support this feature."
    )


@pytest.mark.parametrize(
    ("level", "kind", "error"),
    [
        (24, SAFE, None),  # 4.0-IV3 -> IV2 changed no metadata
        (22, SAFE, "Invalid metadata.version 22. Refusing to perform the requested downgrade because it might "
                   "delete metadata information."),  # 4.0-IV1 changed it
        (22, UNSAFE, "Invalid metadata.version 22. Unsafe metadata downgrade is not supported in this version."),
        (26, UP, "Invalid update version 26 for feature metadata.version. Local controller 1 only supports versions "
                 "7-25"),
        (6, SAFE, "Invalid update version 6 for feature metadata.version. Local controller 1 only supports versions "
                  "7-25"),
        (25, UP, None),  # the same level again is allowed and written
    ],
)  # fmt: skip
def test_metadata_version(level: int, kind: UpgradeType, error: str | None) -> None:
    records, code, message = run(BASE, ("metadata.version", level, kind))
    if error is None:
        assert (records, code) == ([("metadata.version", level)], ErrorCode.none)
    else:
        assert (records, code, message) == ([], ErrorCode.invalid_update_version, error)


def test_one_failure_writes_nothing_and_the_last_duplicate_wins() -> None:
    records, code, _ = run(BASE, ("group.version", 1, UP), ("transaction.version", 3, UP))
    assert (records, code) == ([], ErrorCode.invalid_update_version)
    records, code, _ = run(BASE, ("group.version", 5, UP), ("group.version", 1, UP), ("transaction.version", 2, UP))
    assert (records, code) == ([("group.version", 1), ("transaction.version", 2)], ErrorCode.none)
