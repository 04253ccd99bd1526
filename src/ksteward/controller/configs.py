"""AlterConfigs and IncrementalAlterConfigs on the controller: Kafka's ConfigurationControlManager
(docs/topics-and-configs.md, "Config alter path").

Each resource is handled on its own: the operations are applied to the resource's stored overrides,
the resulting map is validated (the controller's ConfigurationValidator), the resource must exist, and
the AlterConfigPolicy has the last word. The records of every resource that passed are committed as one
batch by the caller; one failure never affects another resource. Authorization and the broker's
preprocessing (duplicates, null values, BROKER_LOGGER, the broker's own checks of BROKER values) happen
before, in ``ksteward.broker.configs``.

The broker-level layers every topic inherits from (this node's and the cluster's dynamic configs over
``server.properties``) are resolved once per state of the image's configs section and shared::

    manager = ConfigControlManager(node_id=1, static=server_config.static, policies=policies)
    done = manager.alter(image, [ConfigAlteration(ConfigResourceType.TOPIC, "orders", ops=[...])])
    done.records   # the ConfigRecords of every resource that passed
    done.response  # one ApiError per alteration, None on success
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from kio.schema.errors import ErrorCode
from kio.static.primitive import i8

from ksteward.configs.alter import AlterConfigOp, AlterResult, apply_incremental, apply_legacy
from ksteward.configs.catalog import ConfigResourceType, java_int
from ksteward.configs.client_metrics_catalog import validate_client_metrics
from ksteward.configs.group_catalog import GroupBrokerSettings, validate_group_configs
from ksteward.configs.resolve import ConfigResolver
from ksteward.configs.sensitive import loggable_configs
from ksteward.configs.topic_catalog import validate_topic_configs
from ksteward.controller.result import EXCESSIVELY_LARGE_BATCH, MAX_RECORDS_PER_USER_OP, ApiError, ControllerResult
from ksteward.controller.topic_names import validation_error
from ksteward.metadata.image import MetadataImage
from ksteward.metadata.records import ConfigRecord
from ksteward.policy import AlterConfigRequestMetadata, ConfigResource, Policies, policy_error

__all__ = ["ConfigAlteration", "ConfigControlManager"]

_EMPTY: Mapping[str, str] = {}


@dataclass(frozen=True, slots=True)
class ConfigAlteration:
    """One resource of a request that reached the controller: ``ops`` for IncrementalAlterConfigs, or
    ``configs`` (the whole new set) for AlterConfigs."""

    resource_type: ConfigResourceType
    resource_name: str
    ops: Sequence[AlterConfigOp] | None = None
    configs: Mapping[str, str | None] | None = None

    def __repr__(self) -> str:
        # Secrets hidden, as in every repr that holds config values (the ops' values are left out already).
        configs = None if self.configs is None else loggable_configs(self.resource_type, self.configs)
        return (
            f"ConfigAlteration(resource_type={self.resource_type.name}, resource_name={self.resource_name!r}, "
            f"ops={self.ops!r}, configs={configs!r})"
        )


class ConfigControlManager:
    def __init__(self, *, node_id: int, static: Mapping[str, str], policies: Policies | None = None) -> None:
        self.node_id = node_id
        self.static = static
        self.policies = policies or Policies()
        self.group_settings = GroupBrokerSettings.from_static(static)
        self._cache: tuple[object, ConfigResolver] | None = None

    def resolver(self, image: MetadataImage) -> ConfigResolver:
        """This node's broker-level layers in ``image``; rebuilt only when the configs section changed
        (every config change makes a new mapping), since building one parses every static key."""
        configs = image.configs
        cached = self._cache
        if cached is not None and cached[0] is configs:
            return cached[1]
        broker = int(ConfigResourceType.BROKER)
        resolver = ConfigResolver(
            broker_configs=configs.get((broker, str(self.node_id)), _EMPTY),
            cluster_defaults=configs.get((broker, ""), _EMPTY),
            static=self.static,
        )
        self._cache = (configs, resolver)
        return resolver

    def alter(
        self, image: MetadataImage, alterations: Sequence[ConfigAlteration]
    ) -> ControllerResult[list[ApiError | None]]:
        """The records to commit and one outcome per alteration (None: success), in order. Past
        MAX_RECORDS_PER_USER_OP records the whole request fails with POLICY_VIOLATION, as Kafka's does."""
        records: list[ConfigRecord] = []
        errors: list[ApiError | None] = []
        for alteration in alterations:
            outcome = self._alter_one(image, alteration)
            if isinstance(outcome, ApiError):
                errors.append(outcome)
                continue
            errors.append(None)
            code, name = i8(int(alteration.resource_type)), alteration.resource_name
            records.extend(
                ConfigRecord(resource_type=code, resource_name=name, name=change.name, value=change.value)
                for change in outcome.changes
            )
        if len(records) > MAX_RECORDS_PER_USER_OP:
            too_large = ApiError(ErrorCode.policy_violation, EXCESSIVELY_LARGE_BATCH)
            return ControllerResult([], [too_large] * len(alterations))
        return ControllerResult(records, errors)

    def _alter_one(self, image: MetadataImage, alteration: ConfigAlteration) -> AlterResult | ApiError:
        rtype, name = alteration.resource_type, alteration.resource_name
        current = image.configs.get((int(rtype), name), _EMPTY)
        result: AlterResult | ApiError
        if alteration.ops is not None:
            result = apply_incremental(rtype, current, alteration.ops)
        else:
            result = apply_legacy(rtype, current, alteration.configs or {})
        if isinstance(result, ApiError):
            return result
        error = self._validate(image, rtype, name, result, current) or self._exists(image, rtype, name)
        if error is not None:
            return error
        policy = self.policies.alter_config
        if policy is not None:
            metadata = AlterConfigRequestMetadata(ConfigResource(rtype, name), result.policy_configs, result.configs)
            refused = policy_error(policy, metadata)
            if refused is not None:
                return ApiError(refused.code, refused.message or "")
        return result

    def _validate(
        self,
        image: MetadataImage,
        rtype: ConfigResourceType,
        name: str,
        result: AlterResult,
        current: Mapping[str, str],
    ) -> ApiError | None:
        """Kafka's ControllerConfigurationValidator on the resulting map. GROUP bounds come from this controller's
        ``server.properties`` (Kafka's controller checks with its own ``groupCoordinatorConfig``); a group or a
        subscription need not exist to be configured."""
        if rtype is ConfigResourceType.TOPIC:
            if not name:
                return ApiError(ErrorCode.invalid_request, "Default topic resources are not allowed.")
            message = validation_error(name)
            if message is not None:
                return ApiError(ErrorCode.invalid_topic_exception, message)
            defaults = self.resolver(image).topic_log_defaults()
            return validate_topic_configs(result.configs, log_defaults=defaults, existing=current)
        if rtype is ConfigResourceType.BROKER:
            if not name:
                return None
            broker_id = java_int(name)
            if broker_id is None:
                return ApiError(ErrorCode.invalid_request, "Unable to parse broker name as a base 10 number.")
            if broker_id < 0:
                return ApiError(ErrorCode.invalid_request, "Invalid negative broker ID.")
            return None
        if rtype is ConfigResourceType.GROUP:
            if not name:
                return ApiError(ErrorCode.invalid_request, "Default group resources are not allowed.")
            return validate_group_configs(result.configs, self.group_settings)
        if rtype is ConfigResourceType.CLIENT_METRICS:
            return validate_client_metrics(name, result.configs)
        return ApiError(ErrorCode.invalid_request, f"Unknown resource type {int(rtype)}")

    def _exists(self, image: MetadataImage, rtype: ConfigResourceType, name: str) -> ApiError | None:
        if rtype is ConfigResourceType.TOPIC and name not in image.topics.by_name:
            return ApiError(ErrorCode.unknown_topic_or_partition, f"The topic '{name}' does not exist.")
        if rtype is ConfigResourceType.BROKER and name:
            broker_id = int(name)
            if broker_id != self.node_id and broker_id not in image.cluster and broker_id not in image.controllers:
                return ApiError(ErrorCode.broker_id_not_registered, f"No node with id {broker_id} found.")
        return None
