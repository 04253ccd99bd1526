"""ListConfigResources (key 74; ListClientMetricsResources before Kafka 4.1, KIP-1142): the config resources of
each type, as Kafka's ``KafkaApis.handleListConfigResources`` lists them. docs/admin-apis.md, "ListConfigResources".

Brokers only (the API's listeners are ``["broker"]``); a broker answers from its own image. DESCRIBE_CONFIGS on the
cluster is required (else CLUSTER_AUTHORIZATION_FAILED). v0 lists the CLIENT_METRICS resources; v1 takes a set of
resource types (empty: all five Kafka lists) and refuses any other type with UNSUPPORTED_VERSION.
"""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from ksteward.authorizer import CLUSTER_NAME, AclOperation, ResourceType
from ksteward.broker.authz import authorize
from ksteward.broker.context import Node, RequestContext
from ksteward.metadata.image import MetadataImage
from ksteward.protocol.apis import ApiKey
from ksteward.protocol.build import build
from ksteward.protocol.codec import response_class

# ConfigResource.Type ids
TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP = 2, 4, 8, 16, 32
# The types v1 accepts, in the order Kafka's handler lists them.
LISTED_TYPES = (GROUP, CLIENT_METRICS, BROKER_LOGGER, BROKER, TOPIC)


def _stored(image: MetadataImage, resource_type: int) -> list[str]:
    """The resources of ``resource_type`` that have configs in the image (ConfigRecords), by name. Any type kept as
    ConfigRecords (GROUP, CLIENT_METRICS, and whatever is stored that way later) is listed from here."""
    return sorted(name for (kind, name), values in image.configs.items() if kind == resource_type and values)


def _brokers(image: MetadataImage, listener: str) -> list[str]:
    """Kafka's ``getBrokerNodes(listener)``: every registered broker with an endpoint on this listener."""
    return [
        str(broker_id)
        for broker_id, reg in sorted(image.cluster.items())
        if any(e.name == listener for e in reg.end_points)
    ]


def _names(image: MetadataImage, resource_type: int, listener: str) -> list[str]:
    if resource_type == TOPIC:
        return sorted(image.topics.by_name)  # every topic, with configs or not
    if resource_type in (BROKER, BROKER_LOGGER):
        return _brokers(image, listener)
    return _stored(image, resource_type)


def _response(ctx: RequestContext, error: ErrorCode, resources: list[dict[str, Any]]) -> Any:
    values = {"throttle_time": 0, "error_code": error, "config_resources": resources}
    return build(response_class(ApiKey.LIST_CONFIG_RESOURCES, ctx.api_version), values)


async def handle_list_config_resources(node: Node, ctx: RequestContext, request: Any) -> Any:
    if not authorize(node, ctx, AclOperation.DESCRIBE_CONFIGS, ResourceType.CLUSTER, CLUSTER_NAME):
        return _response(ctx, ErrorCode.cluster_authorization_failed, [])
    image = node.image
    if ctx.api_version == 0:
        types: set[int] = {CLIENT_METRICS}  # v0 was ListClientMetricsResources
    else:
        types = {int(t) for t in request.resource_types} or set(LISTED_TYPES)
        if not types <= set(LISTED_TYPES):
            return _response(ctx, ErrorCode.unsupported_version, [])
    resources = [
        {"resource_name": name, "resource_type": resource_type}
        for resource_type in LISTED_TYPES
        if resource_type in types
        for name in _names(image, resource_type, ctx.listener)
    ]
    return _response(ctx, ErrorCode.none, resources)
