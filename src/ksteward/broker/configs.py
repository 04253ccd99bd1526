"""DescribeConfigs (32), AlterConfigs (33) and IncrementalAlterConfigs (44).

See docs/topics-and-configs.md, "Config alter path", and docs/forwarding.md, "AlterConfigs and
IncrementalAlterConfigs on a broker".

DescribeConfigs is served from this node's image. The two alter RPCs are split as Kafka splits them:

* :func:`preprocess_alter` is the broker's part (``ConfigAdminManager.preprocess``): duplicate resources,
  duplicate keys and null values, BROKER_LOGGER applied on the spot, the broker's own checks of BROKER values.
  Every node with the broker role runs it on its client listeners: a combined node before its own controller's
  part, a broker-only node before it forwards what is left (``ksteward.broker.config_forwarding``).
* :func:`_persist` is the controller's part (``ControllerApis``): authorize each resource and hand it to
  ``Controller.alter_configs``. A controller listener runs only this, with ControllerApis' own handling of
  BROKER_LOGGER, unknown types and duplicates (:func:`handle_controller_incremental_alter_configs`).

Supported resource types: TOPIC, BROKER (this node's id, or ``""`` for the cluster default), BROKER_LOGGER,
GROUP (Kafka's ``GroupConfig`` keys, ``ksteward.configs.group_catalog``) and CLIENT_METRICS (KIP-714
subscriptions, ``ksteward.configs.client_metrics_catalog``). GROUP and CLIENT_METRICS have no broker-side check:
they go to the controller as TOPIC changes do.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from kio.schema.errors import ErrorCode

from ksteward.authorizer import CLUSTER_NAME, AclOperation, ResourceType
from ksteward.broker.authz import CLUSTER_DENIED_MESSAGE, authorize
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
from ksteward.configs.group_catalog import GroupBrokerSettings
from ksteward.configs.resolve import ConfigEntryView, ConfigResolver, describe_client_metrics, describe_group
from ksteward.configs.sensitive import is_sensitive
from ksteward.controller.configs import ConfigAlteration
from ksteward.controller.result import NO_ERROR, ApiError
from ksteward.controller.topic_names import validation_error
from ksteward.protocol.apis import ApiKey
from ksteward.protocol.build import build
from ksteward.protocol.codec import PreEncoded, response_class
from ksteward.protocol.fast_describe_configs import ResourceResult, encode_describe_configs_response

T, B, BL = ConfigResourceType.TOPIC, ConfigResourceType.BROKER, ConfigResourceType.BROKER_LOGGER
G, CM = ConfigResourceType.GROUP, ConfigResourceType.CLIENT_METRICS

# Errors' default messages, which Kafka sends with an authorization failure.
_DENIED: Final = {
    T: (ErrorCode.topic_authorization_failed, "Topic authorization failed."),
    ConfigResourceType.GROUP: (ErrorCode.group_authorization_failed, "Group authorization failed."),
}
_CLUSTER_DENIED: Final = (ErrorCode.cluster_authorization_failed, CLUSTER_DENIED_MESSAGE)


def _invalid(message: str) -> ApiError:
    return ApiError(ErrorCode.invalid_request, message)


def _may(node: Node, ctx: RequestContext, op: AclOperation, rtype: ConfigResourceType, name: str) -> bool:
    """Kafka's per-type check (docs/topics-and-configs.md, "Config authorization"): the topic or group itself, else
    the cluster (BROKER, BROKER_LOGGER, CLIENT_METRICS)."""
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
    if rtype is G:
        if not name:
            return _invalid("Group name must not be empty")
        settings = GroupBrokerSettings.from_static(node.config.static)
        overrides = node.image.configs.get((int(G), name), {})
        return describe_group(
            overrides, settings, include_synonyms=synonyms, include_documentation=documentation, keys=keys
        )
    if not name:  # CLIENT_METRICS, the one type left
        return _invalid("Client metrics subscription name must not be empty")
    stored = node.image.configs.get((int(CM), name), {})
    return describe_client_metrics(stored, include_synonyms=synonyms, include_documentation=documentation, keys=keys)


#: Resources described between two yields to the event loop (a few ms of work).
RESOURCES_PER_SLICE = 50


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
        frame = encode_describe_configs_response(version, ctx.correlation_id, results)
        return PreEncoded(frame, error_codes=tuple(int(r[0]) for r in results))
    resolver = node.config_resolver()
    denied: list[ResourceResult] = []
    for n, (resource, rtype) in enumerate(zip(resources, types, strict=True)):
        if n and not n % RESOURCES_PER_SLICE:
            await asyncio.sleep(0)  # the others' turn; the resolver holds one image, so the answer is unchanged
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
    answered = results + denied
    frame = encode_describe_configs_response(version, ctx.correlation_id, answered)
    return PreEncoded(frame, error_codes=tuple(int(r[0]) for r in answered))


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


@dataclass(frozen=True, slots=True)
class _Changes:
    """One wire resource's changes: ``ops`` (IncrementalAlterConfigs) or ``configs`` (AlterConfigs), and the
    first checks' verdict on them (a key named twice, a null value)."""

    ops: list[AlterConfigOp] | None
    configs: dict[str, str | None] | None
    error: ApiError | None


def _changes(resource: Any, *, incremental: bool) -> _Changes:
    if incremental:
        ops = [AlterConfigOp(c.name, int(c.config_operation), c.value) for c in resource.configs]
        return _Changes(ops, None, check_incremental_request(ops))
    pairs = [(c.name, c.value) for c in resource.configs]
    return _Changes(None, dict(pairs), check_legacy_request(pairs))


def preprocess_alter(node: Node, ctx: RequestContext, request: Any, *, incremental: bool) -> list[ApiError | None]:
    """Kafka's ``ConfigAdminManager.preprocess``, on the node that received the request: one result per resource,
    in request order. An ApiError (``NO_ERROR`` for a BROKER_LOGGER change made here) is that resource's final
    answer; None means the resource goes on to the controller (:func:`_persist`, or forwarded from a broker-only
    node, ``ksteward.broker.config_forwarding``). BROKER_LOGGER changes are applied to this process's loggers."""
    resources = list(request.resources)
    seen = Counter((r.resource_type, r.resource_name) for r in resources)
    validate_only = bool(request.validate_only)
    results: list[ApiError | None] = []
    for resource in resources:
        if seen[(resource.resource_type, resource.resource_name)] > 1:
            results.append(_invalid("Each resource must appear at most once."))
        else:
            results.append(_preprocess_one(node, ctx, resource, incremental=incremental, validate_only=validate_only))
    return results


def _preprocess_one(
    node: Node, ctx: RequestContext, resource: Any, *, incremental: bool, validate_only: bool
) -> ApiError | None:
    rtype, name = ConfigResourceType.from_code(resource.resource_type), resource.resource_name
    changes = _changes(resource, incremental=incremental)
    if changes.error is not None:
        return changes.error
    if rtype is BL and incremental:
        assert changes.ops is not None
        if not _may(node, ctx, AclOperation.ALTER_CONFIGS, rtype, name):
            return ApiError(*_CLUSTER_DENIED)
        return _logger_change(node, name, changes.ops, validate_only=validate_only)
    if rtype is B:
        return _broker_preprocess(node, node.config_resolver(), name, changes.ops, changes.configs)
    if rtype in (T, G, CM):
        return None
    return _invalid(f"Unknown resource type {resource.resource_type}")


def _logger_change(node: Node, name: str, ops: Sequence[AlterConfigOp], *, validate_only: bool) -> ApiError:
    """BROKER_LOGGER on this process (Kafka's ``RuntimeLoggerManager.applyChangesForResource``), once authorized:
    the name must be this node's id (``validateResourceNameIsNodeId``'s words; Kafka prints its own id where the
    received one belongs, ksteward prints the received one), then the levels are checked and set."""
    requested, node_id = java_int(name), node.config.node_id
    if requested is None:
        return _invalid(f"Node id must be an integer, but it is: {name}")
    if requested != node_id:
        return _invalid(f"Unexpected node id. Expected {node_id}, but received {name}")
    return alter_logger_levels(ops, validate_only=validate_only) or NO_ERROR


def _alter_denied(node: Node, ctx: RequestContext, rtype: ConfigResourceType, name: str) -> ApiError | None:
    """``ControllerApis.authorizeAlterResource``: ALTER_CONFIGS on the topic, the group, or the cluster."""
    if rtype not in (T, B, G, CM):
        return _invalid(f"Unexpected resource type {rtype.name}.")
    if _may(node, ctx, AclOperation.ALTER_CONFIGS, rtype, name):
        return None
    return ApiError(*_denied(rtype))


async def _persist(
    node: Node, ctx: RequestContext, resources: Sequence[Any], *, incremental: bool, validate_only: bool
) -> list[ApiError | None]:
    """The controller's part (``ControllerApis`` then ``ConfigurationControlManager``): authorize each resource and
    hand the authorized ones to ``Controller.alter_configs``. One outcome per resource, None on success.

    The first checks (a key named twice, a null value) run here again: a broker already made them, but a client
    talking to the controller directly (KIP-919) did not, and the manager expects one operation per key."""
    outcomes: list[ApiError | None] = [None] * len(resources)
    pending: list[tuple[int, ConfigAlteration]] = []
    for index, resource in enumerate(resources):
        rtype, name = ConfigResourceType.from_code(resource.resource_type), resource.resource_name
        changes = _changes(resource, incremental=incremental)
        error = changes.error or _alter_denied(node, ctx, rtype, name)
        if error is not None:
            outcomes[index] = error
            continue
        pending.append((index, ConfigAlteration(rtype, name, ops=changes.ops, configs=changes.configs)))
    if pending:
        results = await node.controller.alter_configs([a for _, a in pending], validate_only=validate_only)
        for (index, _), outcome in zip(pending, results, strict=True):
            outcomes[index] = outcome
    return outcomes


def _response(api_key: int, version: int, answers: Sequence[tuple[Any, ApiError | None]]) -> Any:
    """The response: one entry per (wire resource, outcome), in the order given; None is success."""
    responses = [
        {
            "error_code": ErrorCode.none if outcome is None else outcome.code,
            "error_message": None if outcome is None else outcome.message,
            "resource_type": int(resource.resource_type),
            "resource_name": resource.resource_name,
        }
        for resource, outcome in answers
    ]
    return build(response_class(api_key, version), {"responses": responses})


def _api_key(incremental: bool) -> ApiKey:
    return ApiKey.INCREMENTAL_ALTER_CONFIGS if incremental else ApiKey.ALTER_CONFIGS


async def _alter(node: Node, ctx: RequestContext, request: Any, *, incremental: bool) -> Any:
    """A node with both roles: the broker's preprocess, then the controller's part for what is left, answered one
    entry per resource in request order (what a broker-only node gets by forwarding, in one process)."""
    resources = list(request.resources)
    outcomes = preprocess_alter(node, ctx, request, incremental=incremental)
    remaining = [index for index, outcome in enumerate(outcomes) if outcome is None]
    persisted = await _persist(
        node, ctx, [resources[i] for i in remaining], incremental=incremental, validate_only=bool(request.validate_only)
    )
    for index, outcome in zip(remaining, persisted, strict=True):
        outcomes[index] = outcome
    return _response(_api_key(incremental), ctx.api_version, list(zip(resources, outcomes, strict=True)))


async def handle_alter_configs(node: Node, ctx: RequestContext, request: Any) -> Any:
    return await _alter(node, ctx, request, incremental=False)


async def handle_incremental_alter_configs(node: Node, ctx: RequestContext, request: Any) -> Any:
    return await _alter(node, ctx, request, incremental=True)


# ---------------------------------------------------------------------------------------------- controller


async def _controller_alter(node: Node, ctx: RequestContext, request: Any, *, incremental: bool) -> Any:
    """A controller listener (``ControllerApis.handleIncrementalAlterConfigs`` / ``handleLegacyAlterConfigs``): what
    a broker forwarded after its preprocess, or what a client sent directly (KIP-919). No broker preprocess runs
    here. BROKER_LOGGER (incremental) changes the controller's own loggers, checked with CLUSTER_ACTION on the
    cluster; a type id Kafka does not know is UNSUPPORTED_VERSION; a resource named twice is dropped and answered
    once with INVALID_REQUEST "Duplicate resource.". Entries come in request order; a duplicate's answer stands
    where its second copy was."""
    resources = list(request.resources)
    validate_only = bool(request.validate_only)
    answers: list[ApiError | _Skip | None] = [_SKIP] * len(resources)
    first: dict[tuple[int, str], int] = {}
    duplicated: set[tuple[int, str]] = set()
    for index, resource in enumerate(resources):
        rtype, name = ConfigResourceType.from_code(resource.resource_type), resource.resource_name
        key = (int(resource.resource_type), name)
        if rtype is BL and incremental:
            if not authorize(node, ctx, AclOperation.CLUSTER_ACTION, ResourceType.CLUSTER, CLUSTER_NAME):
                answers[index] = ApiError(*_CLUSTER_DENIED)
            else:
                ops = [AlterConfigOp(c.name, int(c.config_operation), c.value) for c in resource.configs]
                answers[index] = _logger_change(node, name, ops, validate_only=validate_only)
        elif rtype is ConfigResourceType.UNKNOWN:
            answers[index] = ApiError(ErrorCode.unsupported_version, f"Unknown resource type {resource.resource_type}.")
        elif key in duplicated:
            continue
        elif key in first:
            duplicated.add(key)
            answers[first.pop(key)] = _SKIP
            answers[index] = _invalid("Duplicate resource.")
        else:
            first[key] = index
    kept = sorted(first.values())
    persisted = await _persist(
        node, ctx, [resources[i] for i in kept], incremental=incremental, validate_only=validate_only
    )
    for index, outcome in zip(kept, persisted, strict=True):
        answers[index] = outcome
    entries = [(r, a) for r, a in zip(resources, answers, strict=True) if not isinstance(a, _Skip)]
    return _response(_api_key(incremental), ctx.api_version, entries)


class _Skip:
    """No entry for this resource (the first copy of a duplicate, or a later copy after the second)."""


_SKIP: Final = _Skip()


async def handle_controller_alter_configs(node: Node, ctx: RequestContext, request: Any) -> Any:
    return await _controller_alter(node, ctx, request, incremental=False)


async def handle_controller_incremental_alter_configs(node: Node, ctx: RequestContext, request: Any) -> Any:
    return await _controller_alter(node, ctx, request, incremental=True)
