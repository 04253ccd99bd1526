"""BrokerRegistration (62) and BrokerHeartbeat (63): a broker joining the cluster and keeping its session.

Served on controller listeners only. As Kafka's ``ControllerApis.handleBrokerRegistration`` and
``handleBrokerHeartBeatRequest``, both need CLUSTER_ACTION on the cluster; the controller then decides
(``ksteward.controller.membership``) and answers once its records are durable.
"""

from __future__ import annotations

import uuid
from typing import Any

from kio.schema.errors import ErrorCode

from ksteward.authorizer import CLUSTER_NAME, AclOperation, ResourceType
from ksteward.broker.authz import authorize
from ksteward.broker.context import Node, RequestContext
from ksteward.controller.membership import HeartbeatRequest, RegistrationRequest
from ksteward.metadata.records import BrokerEndpoint, BrokerFeature
from ksteward.protocol.apis import ApiKey
from ksteward.protocol.build import build
from ksteward.protocol.codec import response_class


def _may_act_for_cluster(node: Node, ctx: RequestContext) -> bool:
    return authorize(node, ctx, AclOperation.CLUSTER_ACTION, ResourceType.CLUSTER, CLUSTER_NAME)


def registration_request(request: Any) -> RegistrationRequest:
    """The wire request (any version) as the controller reads it; fields a version lacks take Kafka's defaults."""
    return RegistrationRequest(
        broker_id=int(request.broker_id),
        cluster_id=request.cluster_id,
        incarnation_id=request.incarnation_id or uuid.UUID(int=0),  # kio reads the zero uuid as None
        listeners=tuple(
            BrokerEndpoint(name=li.name, host=li.host, port=li.port, security_protocol=li.security_protocol)
            for li in request.listeners
        ),
        features=tuple(
            BrokerFeature(
                name=f.name,
                min_supported_version=f.min_supported_version,
                max_supported_version=f.max_supported_version,
            )
            for f in request.features
        ),
        rack=request.rack,
        is_migrating_zk_broker=bool(getattr(request, "is_migrating_zk_broker", False)),
        log_dirs=tuple(getattr(request, "log_dirs", ())),
    )


async def handle_broker_registration(node: Node, ctx: RequestContext, request: Any) -> Any:
    cls = response_class(ApiKey.BROKER_REGISTRATION, ctx.api_version)
    if not _may_act_for_cluster(node, ctx):
        return build(cls, {"error_code": ErrorCode.cluster_authorization_failed, "broker_epoch": -1})
    reply = await node.controller.register_broker(registration_request(request))
    return build(cls, {"error_code": reply.error.code, "broker_epoch": reply.broker_epoch})


async def handle_broker_heartbeat(node: Node, ctx: RequestContext, request: Any) -> Any:
    cls = response_class(ApiKey.BROKER_HEARTBEAT, ctx.api_version)
    if not _may_act_for_cluster(node, ctx):
        values = {"error_code": ErrorCode.cluster_authorization_failed, "should_shut_down": False}
        return build(cls, values)
    heartbeat = HeartbeatRequest(
        broker_id=int(request.broker_id),
        broker_epoch=int(request.broker_epoch),
        current_metadata_offset=int(request.current_metadata_offset),
        want_fence=bool(request.want_fence),
        want_shut_down=bool(request.want_shut_down),
    )
    reply = await node.controller.broker_heartbeat(heartbeat)
    values = {
        "error_code": reply.error.code,
        "is_caught_up": reply.is_caught_up,
        "is_fenced": reply.is_fenced,
        "should_shut_down": reply.should_shut_down,
    }
    return build(cls, values)
