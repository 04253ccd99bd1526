"""Cluster membership at start-up: the metadata.version a new log is finalized at, and this node's
broker registration, as Kafka's ``FeatureControlManager`` and ``ClusterControlManager.registerBroker``.

Pure record generation, like every manager here: :func:`bootstrap` reads the image and returns the
records the controller commits before the listeners open. A first start writes a FeatureLevelRecord;
a broker writes a RegisterBrokerRecord unless the image already holds an unfenced registration with
the same endpoints and rack (a restart with an unchanged configuration writes nothing). This node's broker
is its own controller, so it registers unfenced; other brokers join through BrokerRegistration and
BrokerHeartbeat (:mod:`ksteward.controller.membership`, docs/cluster-membership.md).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass

from kio.schema.types import BrokerId
from kio.static.primitive import i16, i64, u16

from ksteward.configs.server_config import Endpoint
from ksteward.controller.features import (
    BOOTSTRAP_FEATURES,
    METADATA_VERSION,
    METADATA_VERSION_LEVEL,
    SUPPORTED_FEATURES,
)
from ksteward.controller.result import ControllerResult
from ksteward.metadata.image import MetadataImage
from ksteward.metadata.records import BrokerEndpoint, BrokerFeature, FeatureLevelRecord, RegisterBrokerRecord

__all__ = ["SECURITY_PROTOCOL_CODES", "BrokerRegistration", "bootstrap", "registration_record"]

# Kafka's SecurityProtocol ids, as RegisterBrokerRecord's endpoints carry them.
SECURITY_PROTOCOL_CODES = {"PLAINTEXT": 0, "SSL": 1, "SASL_PLAINTEXT": 2, "SASL_SSL": 3}


@dataclass(frozen=True, slots=True)
class BrokerRegistration:
    """What a broker registers: its id, this process's incarnation, advertised listeners and rack."""

    node_id: int
    incarnation_id: uuid.UUID
    endpoints: Sequence[Endpoint]
    rack: str | None = None


def registration_record(image: MetadataImage, broker: BrokerRegistration) -> RegisterBrokerRecord:
    """The broker's RegisterBrokerRecord; its epoch is the offset the record will take in the log."""
    return RegisterBrokerRecord(
        broker_id=BrokerId(broker.node_id),
        is_migrating_zk_broker=False,
        incarnation_id=broker.incarnation_id,
        broker_epoch=i64(max(image.offset + 1, 0)),
        end_points=tuple(
            BrokerEndpoint(
                name=e.name,
                host=e.host,
                port=u16(e.port),
                security_protocol=i16(SECURITY_PROTOCOL_CODES[e.security_protocol]),
            )
            for e in broker.endpoints
        ),
        features=tuple(
            BrokerFeature(name=name, min_supported_version=i16(lo), max_supported_version=i16(hi))
            for name, (lo, hi) in SUPPORTED_FEATURES.items()
        ),
        rack=broker.rack,
        fenced=False,
        in_controlled_shutdown=False,
        log_dirs=(),
    )


def bootstrap(image: MetadataImage, broker: BrokerRegistration | None) -> ControllerResult[None]:
    """First start: finalize the features as ``kafka-storage format`` does for Kafka 4.0 (metadata.version, and
    group.version 1 and transaction.version 2, Kafka 4.0's production defaults). Every start of a broker:
    register it if needed."""
    records: list[object] = []
    if METADATA_VERSION not in image.features:
        records.append(FeatureLevelRecord(name=METADATA_VERSION, feature_level=i16(METADATA_VERSION_LEVEL)))
        records += [FeatureLevelRecord(name=name, feature_level=i16(level)) for name, level in BOOTSTRAP_FEATURES]
    if broker is not None:
        wanted = registration_record(image, broker)
        current = image.cluster.get(broker.node_id)
        if current is None or current.fenced or current.end_points != wanted.end_points or current.rack != wanted.rack:
            records.append(wanted)
    return ControllerResult(records, None)
