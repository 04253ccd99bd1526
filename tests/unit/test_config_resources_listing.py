"""ListConfigResources over the config image: every resource type stored as ConfigRecords (GROUP, CLIENT_METRICS)
is listed from the image, with no code per type; a resource whose last key was deleted is gone."""

from __future__ import annotations

import asyncio
import dataclasses
import uuid
from typing import Any

from kio.static.primitive import i8

from ksteward.broker.config_resources import handle_list_config_resources
from ksteward.broker.context import ApiTable, RequestContext
from ksteward.configs.server_config import parse_server_config
from ksteward.metadata.delta import MetadataDelta
from ksteward.metadata.image import EMPTY_IMAGE, MetadataImage
from ksteward.metadata.records import ConfigRecord, TopicRecord
from ksteward.protocol.apis import ApiKey
from ksteward.protocol.build import build
from ksteward.protocol.codec import request_class

GROUP, CLIENT_METRICS, TOPIC = 32, 16, 2
CONFIG = parse_server_config(
    {"process.roles": "broker,controller", "node.id": "1", "controller.listener.names": "CONTROLLER",
     "listeners": "PLAINTEXT://localhost:9092,CONTROLLER://localhost:9093", "metadata.log.dir": "/nonexistent"}
)  # fmt: skip


@dataclasses.dataclass
class ImageNode:
    """Just what the handler reads: the image, the config, no authorizer (everything allowed)."""

    image: MetadataImage
    config: Any = CONFIG
    authorizer: Any = None
    audit: Any = None


def config(resource_type: int, name: str, key: str, value: str | None) -> ConfigRecord:
    return ConfigRecord(resource_type=i8(resource_type), resource_name=name, name=key, value=value)


def image_of(*records: Any) -> MetadataImage:
    delta = MetadataDelta(EMPTY_IMAGE)
    for record in records:
        delta.replay(record)
    return delta.apply(offset=len(records))


def listed(image: MetadataImage, version: int, types: list[int]) -> list[tuple[int, str]]:
    ctx = RequestContext("User:ANONYMOUS", "127.0.0.1", "PLAINTEXT", "PLAINTEXT", None,
                         ApiKey.LIST_CONFIG_RESOURCES, version, ApiTable([]))  # fmt: skip
    request = build(request_class(ApiKey.LIST_CONFIG_RESOURCES, version), {"resource_types": types})
    response = asyncio.run(handle_list_config_resources(ImageNode(image), ctx, request))  # type: ignore[arg-type]
    assert int(response.error_code) == 0
    return [(int(getattr(r, "resource_type", CLIENT_METRICS)), r.resource_name) for r in response.config_resources]


def test_group_and_client_metrics_resources_come_from_config_records() -> None:
    image = image_of(
        TopicRecord(name="orders", topic_id=uuid.UUID(int=1)),
        config(GROUP, "payments", "consumer.session.timeout.ms", "45000"),
        config(GROUP, "audit", "consumer.heartbeat.interval.ms", "5000"),
        config(CLIENT_METRICS, "all-producers", "interval.ms", "60000"),
        config(CLIENT_METRICS, "dropped", "metrics", "x"),
        config(CLIENT_METRICS, "dropped", "metrics", None),  # its only key deleted: no longer a resource
        config(TOPIC, "orders", "retention.ms", "1000"),
    )
    assert listed(image, 1, []) == [
        (GROUP, "audit"),
        (GROUP, "payments"),
        (CLIENT_METRICS, "all-producers"),
        (TOPIC, "orders"),
    ]
    assert listed(image, 1, [GROUP]) == [(GROUP, "audit"), (GROUP, "payments")]
    assert listed(image, 0, []) == [(CLIENT_METRICS, "all-producers")]  # v0 was ListClientMetricsResources
