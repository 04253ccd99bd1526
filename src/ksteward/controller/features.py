"""Feature levels: what this node supports, what it writes at bootstrap, and UpdateFeatures (key 57).

``metadata.version`` 25 is Kafka 4.0-IV3, the level a fresh Kafka 4.0 cluster is formatted at; the
record versions ksteward writes are the ones Kafka writes at that level. The minimum readable level
is 7 (3.3-IV3), the oldest Kafka 4.x still reads.

:func:`update_features` is Kafka's ``FeatureControlManager.updateFeatures``: every update is checked in turn and
the first failure fails the whole request (INVALID_UPDATE_VERSION) with no record; otherwise one
FeatureLevelRecord per update, as one batch. docs/admin-apis.md, "UpdateFeatures".
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from kio.schema.errors import ErrorCode
from kio.static.primitive import i16

from ksteward.controller.result import NO_ERROR, ApiError, ControllerResult
from ksteward.metadata.image import MetadataImage
from ksteward.metadata.records import FeatureLevelRecord

METADATA_VERSION = "metadata.version"
METADATA_VERSION_LEVEL = 25
METADATA_VERSION_MIN = 7
KRAFT_VERSION = "kraft.version"
GROUP_VERSION = "group.version"
TRANSACTION_VERSION = "transaction.version"

SUPPORTED_FEATURES: dict[str, tuple[int, int]] = {
    METADATA_VERSION: (METADATA_VERSION_MIN, METADATA_VERSION_LEVEL),
    # Kafka 4.0's other production features. kraft.version stays 0: ksteward's quorum is static (no KIP-853
    # voter changes), and Kafka finalizes kraft.version through the Raft log, never with a FeatureLevelRecord.
    KRAFT_VERSION: (0, 0),
    GROUP_VERSION: (0, 1),
    TRANSACTION_VERSION: (0, 2),
}

#: The other features a new log finalizes, at the levels Kafka 4.0's ``kafka-storage format`` gives them by
#: default (``Feature.PRODUCTION_FEATURES`` at metadata.version 4.0-IV3).
BOOTSTRAP_FEATURES: tuple[tuple[str, int], ...] = ((GROUP_VERSION, 1), (TRANSACTION_VERSION, 2))

# Kafka's MetadataVersion.didMetadataChange for the levels ksteward supports (3.3-IV3 .. 4.0-IV3): a downgrade
# across a level that changed the metadata could lose information and is refused.
_METADATA_CHANGED: Mapping[int, bool] = {
    7: True, 8: True, 9: False, 10: False, 11: True, 12: False, 13: True, 14: True, 15: True, 16: False, 17: True,
    18: False, 19: False, 20: False, 21: False, 22: False, 23: True, 24: False, 25: False,
}  # fmt: skip
_METADATA_VERSION_NAMES: Mapping[int, str] = {
    7: "3.3-IV3", 8: "3.4-IV0", 9: "3.5-IV0", 10: "3.5-IV1", 11: "3.5-IV2", 12: "3.6-IV0", 13: "3.6-IV1",
    14: "3.6-IV2", 15: "3.7-IV0", 16: "3.7-IV1", 17: "3.7-IV2", 18: "3.7-IV3", 19: "3.7-IV4", 20: "3.8-IV0",
    21: "3.9-IV0", 22: "4.0-IV0", 23: "4.0-IV1", 24: "4.0-IV2", 25: "4.0-IV3",
}  # fmt: skip
_FEATURE_LEVEL_RECORDS_SINCE = 4  # 3.3-IV0: the first metadata.version with FeatureLevelRecord
# Kafka's FeatureVersion.dependencies: none for the levels of group.version and transaction.version in 4.0.
_DEPENDENCIES: Mapping[tuple[str, int], Mapping[str, int]] = {}


class UpgradeType(enum.IntEnum):
    """Kafka's ``FeatureUpdate.UpgradeType`` codes (UpdateFeatures v1+ ``UpgradeType``)."""

    UNKNOWN = 0
    UPGRADE = 1
    SAFE_DOWNGRADE = 2
    UNSAFE_DOWNGRADE = 3

    @classmethod
    def from_code(cls, code: int) -> UpgradeType:
        return cls(code) if code in (1, 2, 3) else cls.UNKNOWN


@dataclass(frozen=True, slots=True)
class FeatureUpdate:
    name: str
    level: int
    upgrade_type: UpgradeType


def _range_text(low: int, high: int) -> str:
    """Kafka's ``VersionRange.toString``."""
    return str(low) if low == high else f"{low}-{high}"


def _reason_not_supported(level: int, what: str, supported: tuple[int, int]) -> str | None:
    """Kafka's ``QuorumFeatures.reasonNotSupported``."""
    low, high = supported
    if low <= level <= high:
        return None
    if high == 0:
        return f"{what} does not support this feature."
    return f"{what} only supports versions {_range_text(low, high)}"


def _cluster_support_error(image: MetadataImage, node_id: int, name: str, level: int) -> str | None:
    """This controller, then every registered broker, then every other registered controller must support the
    level (``FeatureControlManager.reasonNotSupported``); a node that does not list the feature supports 0 only."""
    reason = _reason_not_supported(level, f"Local controller {node_id}", SUPPORTED_FEATURES.get(name, (0, 0)))
    if reason is not None:
        return reason
    for broker_id, registration in sorted(image.cluster.items()):
        ranges = {f.name: (int(f.min_supported_version), int(f.max_supported_version)) for f in registration.features}
        reason = _reason_not_supported(level, f"Broker {broker_id}", ranges.get(name, (0, 0)))
        if reason is not None:
            return reason
    for controller_id, controller in sorted(image.controllers.items()):
        if controller_id == node_id:
            continue
        ranges = {f.name: (int(f.min_supported_version), int(f.max_supported_version)) for f in controller.features}
        reason = _reason_not_supported(level, f"Controller {controller_id}", ranges.get(name, (0, 0)))
        if reason is not None:
            return reason
    return None


def _invalid(name: str, level: int, message: str) -> ApiError:
    return ApiError(ErrorCode.invalid_update_version, f"Invalid update version {level} for feature {name}. {message}")


def _invalid_metadata_version(level: int, message: str) -> ApiError:
    return ApiError(ErrorCode.invalid_update_version, f"Invalid metadata.version {level}. {message}")


def _metadata_changed(high: int, low: int) -> bool:
    """Kafka's ``MetadataVersion.checkIfMetadataChanged``: did any level above ``low`` up to ``high`` change it."""
    level = high
    while not _METADATA_CHANGED.get(level, True) and level != low:
        level -= 1
    return level != low


def _metadata_version_error(current: int, level: int, unsafe: bool) -> ApiError | None:
    """Kafka's ``FeatureControlManager.updateMetadataVersion`` checks (the level is already known supported)."""
    if level not in _METADATA_VERSION_NAMES:
        return _invalid_metadata_version(level, "Unknown metadata.version.")
    if level < current and _metadata_changed(current, level):
        if unsafe:
            return _invalid_metadata_version(level, "Unsafe metadata downgrade is not supported in this version.")
        return _invalid_metadata_version(
            level, "Refusing to perform the requested downgrade because it might delete metadata information."
        )
    return None


def _dependency_error(name: str, level: int, proposed: Mapping[str, int]) -> str | None:
    """Kafka's ``Features.validateVersion`` on the levels the request would leave."""
    if level >= 1 and proposed.get(METADATA_VERSION, 0) < _FEATURE_LEVEL_RECORDS_SINCE:
        return f"{name} could not be set to {level} because it depends on metadata.version=4 (3.3-IV0)"
    for dependency, needed in _DEPENDENCIES.get((name, level), {}).items():
        if proposed.get(dependency, 0) < needed:
            return f"{name} could not be set to {level} because it depends on {dependency} level {needed}"
    return None


def _update_error(
    image: MetadataImage, node_id: int, update: FeatureUpdate, proposed: Mapping[str, int]
) -> ApiError | None:
    """Kafka's ``FeatureControlManager.updateFeature`` for one update."""
    name, level, kind = update.name, update.level, update.upgrade_type
    if kind is UpgradeType.UNKNOWN:
        return _invalid(name, level, "The controller does not support the given upgrade type.")
    current = image.features.get(name, METADATA_VERSION_LEVEL if name == METADATA_VERSION else 0)
    if level < 0:
        return _invalid(name, level, "A feature version cannot be less than 0.")
    reason = _cluster_support_error(image, node_id, name, level)
    if reason is not None:
        return _invalid(name, level, reason)
    if level < current and kind is UpgradeType.UPGRADE:
        return _invalid(name, level, "Can't downgrade the version of this feature without setting the upgrade "
                        "type to either safe or unsafe downgrade.")  # fmt: skip
    if level > current and kind is not UpgradeType.UPGRADE:
        return _invalid(name, level, "Can't downgrade to a newer version.")
    if name == METADATA_VERSION:
        return _metadata_version_error(current, level, kind is UpgradeType.UNSAFE_DOWNGRADE)
    reason = _dependency_error(name, level, proposed)
    return None if reason is None else _invalid(name, level, reason)


def update_features(image: MetadataImage, node_id: int, updates: Sequence[FeatureUpdate]) -> ControllerResult[ApiError]:
    """The records and the one outcome of an UpdateFeatures request. A feature named twice: the last entry wins,
    as Kafka's controller collects the updates in a map."""
    by_name = {u.name: u for u in updates}
    proposed = {METADATA_VERSION: METADATA_VERSION_LEVEL, **image.features}
    proposed.update({name: u.level for name, u in by_name.items()})
    records = []
    for update in by_name.values():
        error = _update_error(image, node_id, update, proposed)
        if error is not None:
            return ControllerResult([], error)
        records.append(FeatureLevelRecord(name=update.name, feature_level=i16(update.level)))
    return ControllerResult(records, NO_ERROR)
