"""DescribeConfigs (32), AlterConfigs (33) and IncrementalAlterConfigs (44).

See docs/topics-and-configs.md, "Config alter path" and "Config authorization".

DescribeConfigs is served from this node's image. The two alter RPCs run the broker's preprocessing
here (duplicate resources, duplicate keys and null values, BROKER_LOGGER applied on the spot, the
broker's own checks of BROKER values), then authorize what is left as the controller does and hand it
to ``Controller.alter_configs``, and answer one entry per resource in request order.

Supported resource types: TOPIC, BROKER (this node's id, or ``""`` for the cluster default) and
BROKER_LOGGER. GROUP and CLIENT_METRICS configs are not implemented: they are refused per resource with
INVALID_REQUEST and a message that says so.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any, Final

from kio.schema.errors import ErrorCode

from ksteward.authorizer import CLUSTER_NAME, AclOperation, ResourceType
from ksteward.broker.authz import authorize
from ksteward.broker.context import Node, RequestContext
from ksteward.broker.loggers import alter_logger_levels, logger_levels
from ksteward.configs.alter import (
    AlterConfigOp,
    AlterResult,
    apply_incremental,
    check_incremental_request,
    check_legacy_request,
)
from ksteward.configs.broker_catalog import validate_broker_configs, validate_broker_reconfiguration
from ksteward.configs.catalog import ConfigResourceType, ConfigSource, ConfigType, java_int
from ksteward.configs.resolve import ConfigEntryView, ConfigResolver
from ksteward.configs.sensitive import is_sensitive
from ksteward.controller.configs import ConfigAlteration
from ksteward.controller.result import ApiError
from ksteward.controller.topic_names import validation_error
from ksteward.protocol.apis import ApiKey
from ksteward.protocol.build import build
from ksteward.protocol.codec import PreEncoded, response_class
from ksteward.protocol.fast_describe_configs import ResourceResult, encode_describe_configs_response

T, B, BL = ConfigResourceType.TOPIC, ConfigResourceType.BROKER, ConfigResourceType.BROKER_LOGGER
_UNSUPPORTED: Final = (ConfigResourceType.GROUP, ConfigResourceType.CLIENT_METRICS)

# Errors' default messages, which Kafka sends with an authorization failure.
_DENIED: Final = {
    T: (ErrorCode.topic_authorization_failed, "Topic authorization failed."),
    ConfigResourceType.GROUP: (ErrorCode.group_authorization_failed, "Group authorization failed."),
}
_CLUSTER_DENIED: Final = (ErrorCode.cluster_authorization_failed, "Cluster authorization failed.")


def _invalid(message: str) -> ApiError:
    return ApiError(ErrorCode.invalid_request, message)


def _unsupported(rtype: ConfigResourceType) -> ApiError:
    return _invalid(f"{rtype.name} configs are not supported by ksteward")


def _may(node: Node, ctx: RequestContext, op: AclOperation, rtype: ConfigResourceType, name: str) -> bool:
    """Kafka's per-type check (docs/topics-and-configs.md, "Config authorization"): the topic or group itself, else
    the cluster."""
    if rtype is T:
        return authorize(node, ctx, op, ResourceType.TOPIC, name)
    if rtype is ConfigResourceType.GROUP:
        return authorize(node, ctx, op, ResourceType.GROUP, name)
    return authorize(node, ctx, op, ResourceType.CLUSTER, CLUSTER_NAME)


def _denied(rtype: ConfigResourceType) -> tuple[ErrorCode, str]:
    return _DENIED.get(rtype, _CLUSTER_DENIED)


def _node_id(name: str, node_id: int, *, noun: str = "Node", expected: str = "{id}, but") -> ApiError | None:
    """A BROKER or BROKER_LOGGER name must be this node's id (Scala ``toInt``). The alter path's words are
    the defaults; DescribeConfigs words them ``Broker id ...`` and ``expected N or empty string, but``."""
    requested = java_int(name)
    if requested is None:
        return _invalid(f"{noun} id must be an integer, but it is: {name}")
    if requested != node_id:
        return _invalid(f"Unexpected broker id, expected {expected.format(id=node_id)} received {name}")
    return None


# ---------------------------------------------------------------------------------------------- describe


def _logger_entries(keys: Sequence[str] | None) -> list[ConfigEntryView]:
    levels = logger_levels()
    names = [n for n in levels if not keys or n in keys]
    entries = []
    for n in names:
        sensitive = is_sensitive(BL, n)  # the one rule: a log level is never secret
        value = None if sensitive else levels[n]
        entries.append(
            ConfigEntryView(n, value, ConfigSource.DYNAMIC_BROKER_LOGGER_CONFIG, False, sensitive, ConfigType.STRING)
        )
    return entries


def _describe_one(
    node: Node, resolver: ConfigResolver, rtype: ConfigResourceType, name: str, keys: Sequence[str] | None,
    synonyms: bool, documentation: bool,
) -> list[ConfigEntryView] | ApiError:  # fmt: skip
    node_id = node.config.node_id
    if rtype is T:
        message = validation_error(name)
        if message is not None:
            return ApiError(ErrorCode.invalid_topic_exception, message)
        if name not in node.image.topics.by_name:
            return ApiError(ErrorCode.unknown_topic_or_partition, "")
        overrides = node.image.configs.get((int(T), name), {})
        return resolver.describe_topic(
            overrides, include_synonyms=synonyms, include_documentation=documentation, keys=keys
        )
    if rtype is B:
        error = None if not name else _node_id(name, node_id, noun="Broker", expected="{id} or empty string, but")
        return error or resolver.describe_broker(
            cluster_default=not name, include_synonyms=synonyms, include_documentation=documentation, keys=keys
        )
    if rtype is BL:
        if not name:
            return _invalid("Broker id must not be empty")
        return _node_id(name, node_id, noun="Broker", expected="{id} but") or _logger_entries(keys)
    return _unsupported(rtype)


async def handle_describe_configs(node: Node, ctx: RequestContext, request: Any) -> Any:
    version = ctx.api_version
    synonyms = bool(getattr(request, "include_synonyms", False))
    documentation = bool(getattr(request, "include_documentation", False))
    resources = list(request.resources)
    types = [ConfigResourceType.from_code(r.resource_type) for r in resources]
    results: list[ResourceResult] = []
    if any(t is ConfigResourceType.UNKNOWN for t in types):
        # Kafka throws while sorting resources by authorization: the whole request fails.
        bad = next(r for r, t in zip(resources, types, strict=True) if t is ConfigResourceType.UNKNOWN)
        message = f"Unexpected resource type UNKNOWN for resource {bad.resource_name}"
        results = [(ErrorCode.invalid_request, message, r.resource_type, r.resource_name, ()) for r in resources]
        return PreEncoded(encode_describe_configs_response(version, ctx.correlation_id, results))
    resolver = node.config_resolver()
    denied: list[ResourceResult] = []
    for resource, rtype in zip(resources, types, strict=True):
        name = resource.resource_name
        if not _may(node, ctx, AclOperation.DESCRIBE_CONFIGS, rtype, name):
            code, message = _denied(rtype)
            denied.append((code, message, rtype, name, ()))
            continue
        keys = resource.configuration_keys or None
        outcome = _describe_one(node, resolver, rtype, name, keys, synonyms, documentation)
        if isinstance(outcome, ApiError):
            results.append((outcome.code, outcome.message, rtype, name, ()))
        else:
            results.append((ErrorCode.none, "", rtype, name, outcome))
    # Kafka answers the authorized resources first, then the refused ones. The frame is encoded directly
    # (byte-identical to kio, see fast_describe_configs): kio costs ~25 µs an entry.
    return PreEncoded(encode_describe_configs_response(version, ctx.correlation_id, results + denied))


# ---------------------------------------------------------------------------------------------- alter


def _broker_preprocess(
    node: Node, resolver: ConfigResolver, name: str, ops: Sequence[AlterConfigOp] | None,
    configs: dict[str, str | None] | None,
) -> ApiError | None:  # fmt: skip
    """The broker's own check of a BROKER change (``ConfigAdminManager.preprocess``): the name, then the resulting
    dynamic map as a broker config and as a reconfiguration of this node."""
    node_id = node.config.node_id
    if name:
        error = _node_id(name, node_id)
        if error is not None:
            return error
    level = node.image.configs.get((int(B), name), {})
    result: AlterResult | ApiError
    if ops is not None:
        result = apply_incremental(B, level, ops, broker_preprocess=True)
        if isinstance(result, ApiError):
            return result
        proposed = dict(result.configs)
    else:
        proposed = {k: v for k, v in (configs or {}).items() if v is not None}
    cluster_default = not name
    error = validate_broker_configs(proposed, cluster_default=cluster_default)
    if error is not None:
        return error
    image_configs = node.image.configs
    after = ConfigResolver(
        broker_configs=image_configs.get((int(B), str(node_id)), {}) if cluster_default else proposed,
        cluster_defaults=proposed if cluster_default else image_configs.get((int(B), ""), {}),
        static=node.config.static,
    )
    return validate_broker_reconfiguration(resolver.broker_values(), after.broker_values())


async def _alter(node: Node, ctx: RequestContext, request: Any, *, incremental: bool) -> Any:
    api_key = ApiKey.INCREMENTAL_ALTER_CONFIGS if incremental else ApiKey.ALTER_CONFIGS
    validate_only = bool(request.validate_only)
    resources = list(request.resources)
    seen = Counter((r.resource_type, r.resource_name) for r in resources)
    outcomes: list[ApiError | None] = [None] * len(resources)
    pending: list[tuple[int, ConfigAlteration]] = []
    resolver = node.config_resolver()
    for index, resource in enumerate(resources):
        rtype, name = ConfigResourceType.from_code(resource.resource_type), resource.resource_name
        ops: list[AlterConfigOp] | None = None
        configs: dict[str, str | None] | None = None
        if seen[(resource.resource_type, name)] > 1:
            outcomes[index] = _invalid("Each resource must appear at most once.")
            continue
        if incremental:
            ops = [AlterConfigOp(c.name, int(c.config_operation), c.value) for c in resource.configs]
            error = check_incremental_request(ops)
        else:
            pairs = [(c.name, c.value) for c in resource.configs]
            configs = dict(pairs)
            error = check_legacy_request(pairs)
        if error is None and rtype is BL and incremental:
            assert ops is not None
            if not _may(node, ctx, AclOperation.ALTER_CONFIGS, rtype, name):
                error = ApiError(*_CLUSTER_DENIED)
            else:
                error = _node_id(name, node.config.node_id) or alter_logger_levels(ops, validate_only=validate_only)
            outcomes[index] = error
            continue
        if error is None and rtype is B:
            error = _broker_preprocess(node, resolver, name, ops, configs)
        elif error is None and rtype in _UNSUPPORTED:
            error = _unsupported(rtype)
        elif error is None and rtype is not T:
            error = _invalid(f"Unknown resource type {resource.resource_type}")
        if error is not None:
            outcomes[index] = error
            continue
        # What a controller checks before its ConfigurationControlManager
        # (``ControllerApis.handleIncrementalAlterConfigs``).
        if not _may(node, ctx, AclOperation.ALTER_CONFIGS, rtype, name):
            outcomes[index] = ApiError(*_denied(rtype))
            continue
        pending.append((index, ConfigAlteration(rtype, name, ops=ops, configs=configs)))
    if pending:
        results = await node.controller.alter_configs([a for _, a in pending], validate_only=validate_only)
        for (index, _), outcome in zip(pending, results, strict=True):
            outcomes[index] = outcome
    responses = [
        {
            "error_code": ErrorCode.none if outcome is None else outcome.code,
            "error_message": None if outcome is None else outcome.message,
            "resource_type": int(resource.resource_type),
            "resource_name": resource.resource_name,
        }
        for resource, outcome in zip(resources, outcomes, strict=True)
    ]
    return build(response_class(api_key, ctx.api_version), {"responses": responses})


async def handle_alter_configs(node: Node, ctx: RequestContext, request: Any) -> Any:
    return await _alter(node, ctx, request, incremental=False)


async def handle_incremental_alter_configs(node: Node, ctx: RequestContext, request: Any) -> Any:
    return await _alter(node, ctx, request, incremental=True)
