"""CreateTopics (19), DeleteTopics (20) and CreatePartitions (37).

The controller validates and writes the records; this layer decides who may do what and passes
those decisions in as name filters, because Kafka interleaves them with its other checks: CREATE on
the cluster or on each topic, DELETE on the topic, ALTER on the topic for new partitions, DESCRIBE to
tell an unknown topic from an unauthorized one, DESCRIBE_CONFIGS to show a created topic's configs
(docs/topics-and-configs.md, "Topic authorization").

Each partition created or deleted is charged to the caller's controller mutation quota (KIP-599),
strictly from CreateTopics v6, DeleteTopics v5 and CreatePartitions v3; the throttle time is reported.
"""

from __future__ import annotations

from collections.abc import Collection, Set
from typing import Any

from ksteward.authorizer import CLUSTER_NAME, AclOperation, ResourceType
from ksteward.broker.authz import authorize
from ksteward.broker.context import Node, RequestContext
from ksteward.controller.mutation_quota import MutationQuotaRecorder
from ksteward.controller.topic_requests import NameFilter, NewPartitions, NewTopic, TopicRef
from ksteward.protocol.apis import ApiKey
from ksteward.protocol.build import build
from ksteward.protocol.codec import response_class

# The first version at which each API refuses mutations over the quota (ControllerApis).
_STRICT_QUOTA_SINCE: dict[int, int] = {ApiKey.CREATE_TOPICS: 6, ApiKey.DELETE_TOPICS: 5, ApiKey.CREATE_PARTITIONS: 3}


def _topic_filter(node: Node, ctx: RequestContext, operation: AclOperation) -> NameFilter:
    def allowed(names: Collection[str]) -> Set[str]:
        return {n for n in names if authorize(node, ctx, operation, ResourceType.TOPIC, n)}

    return allowed


def _mutation_quota(node: Node, ctx: RequestContext) -> MutationQuotaRecorder:
    """The caller's quota, by the principal's name and the request's client id, as Kafka's quota managers key it."""
    user = ctx.principal.partition(":")[2]
    strict = ctx.api_version >= _STRICT_QUOTA_SINCE[ctx.api_key]
    return node.controller.mutation_quotas.recorder(node.image.client_quotas, user, ctx.client_id or "", strict=strict)


async def handle_create_topics(node: Node, ctx: RequestContext, request: Any) -> Any:
    # CREATE on the cluster allows every topic; otherwise CREATE on each topic decides
    # (``ControllerApis.createTopics``).
    may_create: NameFilter = (
        set
        if authorize(node, ctx, AclOperation.CREATE, ResourceType.CLUSTER, CLUSTER_NAME, log_if_denied=False)
        else _topic_filter(node, ctx, AclOperation.CREATE)
    )
    quota = _mutation_quota(node, ctx)
    results = await node.controller.create_topics(
        [NewTopic.from_kio(t) for t in request.topics],
        validate_only=bool(getattr(request, "validate_only", False)),
        may_create=may_create,
        may_describe_configs=_topic_filter(node, ctx, AclOperation.DESCRIBE_CONFIGS),
        describe_created=ctx.api_version >= 5,  # the created topic's configs are in v5+ replies only
        charge=quota.charge,
    )
    topics = [
        {
            "name": r.name,
            "topic_id": r.topic_id,
            "error_code": r.error.code,
            "error_message": r.error.message,
            "topic_config_error_code": r.topic_config_error_code,
            "num_partitions": r.num_partitions,
            "replication_factor": r.replication_factor,
            "configs": [
                {
                    "name": c.name,
                    "value": c.value,
                    "read_only": c.read_only,
                    "config_source": c.config_source,
                    "is_sensitive": c.is_sensitive,
                }
                for c in r.configs
            ],
        }
        for r in results
    ]
    values = {"topics": topics, "throttle_time": quota.throttle_time_ms()}
    return build(response_class(ApiKey.CREATE_TOPICS, ctx.api_version), values)


async def handle_delete_topics(node: Node, ctx: RequestContext, request: Any) -> Any:
    quota = _mutation_quota(node, ctx)
    results = await node.controller.delete_topics(
        TopicRef.list_from_kio(request),
        api_version=ctx.api_version,
        validate_only=bool(getattr(request, "validate_only", False)),
        may_describe=_topic_filter(node, ctx, AclOperation.DESCRIBE),
        may_delete=_topic_filter(node, ctx, AclOperation.DELETE),
        charge=quota.charge,
    )
    responses = [
        {"name": r.name, "topic_id": r.topic_id, "error_code": r.error.code, "error_message": r.error.message}
        for r in results
    ]
    values = {"responses": responses, "throttle_time": quota.throttle_time_ms()}
    return build(response_class(ApiKey.DELETE_TOPICS, ctx.api_version), values)


async def handle_create_partitions(node: Node, ctx: RequestContext, request: Any) -> Any:
    quota = _mutation_quota(node, ctx)
    results = await node.controller.create_partitions(
        [NewPartitions.from_kio(t) for t in request.topics],
        validate_only=bool(request.validate_only),
        may_alter=_topic_filter(node, ctx, AclOperation.ALTER),
        charge=quota.charge,
    )
    values = [{"name": r.name, "error_code": r.error.code, "error_message": r.error.message} for r in results]
    response = {"results": values, "throttle_time": quota.throttle_time_ms()}
    return build(response_class(ApiKey.CREATE_PARTITIONS, ctx.api_version), response)
