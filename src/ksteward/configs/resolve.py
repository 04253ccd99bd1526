"""Effective config values, their sources and their synonyms, as DescribeConfigs reports them
(docs/topics-and-configs.md, "Effective values and synonyms").

A node's broker-level layers are, highest priority first: its dynamic per-broker configs (BROKER
``"<id>"``), the dynamic cluster defaults (BROKER ``""``), its static ``server.properties`` and the
built-in defaults. A topic's override (TOPIC ``<name>``) comes before all of them. The inputs are plain
mappings, so a handler passes sections of ``MetadataImage.configs``::

    configs = image.configs
    resolver = ConfigResolver(
        broker_configs=configs.get((ConfigResourceType.BROKER, str(node_id)), {}),
        cluster_defaults=configs.get((ConfigResourceType.BROKER, ""), {}),
        static=server_config.static,
    )
    for topic in topics:  # one resolver for the whole request: the broker-level part is shared
        entries = resolver.describe_topic(configs.get((ConfigResourceType.TOPIC, topic), {}))

A sensitive entry (:func:`ksteward.configs.sensitive.is_sensitive`: PASSWORD type, or a key whose type is
unknown) carries no value, in itself and in every synonym: the secret never enters a :class:`ConfigEntryView`.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Final

from ksteward.protocol.api_error import ApiError

from .broker_catalog import (
    BROKER_CONFIGS,
    BROKER_QUOTA_CONFIGS,
    UNIT_MS,
    broker_config_key,
    broker_synonyms,
    dynamic_layer,
    validate_broker_configs,
)
from .catalog import ConfigKey, ConfigResourceType, ConfigSource, ConfigType, InvalidValue
from .client_metrics_catalog import CLIENT_METRICS_CONFIGS
from .group_catalog import GROUP_BROKER_DEFAULTS, GROUP_CONFIGS, GroupBrokerSettings
from .sensitive import is_sensitive, loggable_value
from .topic_catalog import TOPIC_CONFIGS, validate_topic_config

__all__ = [
    "ConfigEntryView",
    "ConfigResolver",
    "ConfigSynonym",
    "config_key",
    "describe_client_metrics",
    "describe_group",
    "describe_resource",
    "is_sensitive",  # re-exported from .sensitive, where the rule lives
    "loggable_value",
    "resolve",
    "validate",
]

_EMPTY: Final[Mapping[str, str]] = {}
# KafkaConfig.defaultValues: the built-in defaults that count as DEFAULT_CONFIG synonyms.
_BUILT_IN: Final = {
    k.name: k.default for k in BROKER_CONFIGS.values() if k.default is not None and k.name not in BROKER_QUOTA_CONFIGS
}


@dataclass(frozen=True, slots=True)
class ConfigSynonym:
    name: str
    value: str | None
    source: ConfigSource


@dataclass(frozen=True, slots=True)
class ConfigEntryView:
    """One DescribeConfigs entry. ``value`` is None when the key is sensitive or has no value."""

    name: str
    value: str | None
    source: ConfigSource
    read_only: bool
    is_sensitive: bool
    config_type: ConfigType
    synonyms: tuple[ConfigSynonym, ...] = ()
    """Filled only when synonyms were asked for; the source is computed from them either way."""
    documentation: str | None = None

    @property
    def is_default(self) -> bool:
        """The value is the built-in default. (Kafka never sets the v0 ``IsDefault`` field: the wire
        value stays false, and v0 is gone in 4.0.)"""
        return self.source is ConfigSource.DEFAULT_CONFIG


class ConfigResolver:
    """One node's broker-level config layers, resolved once and shared by every resource described.

    ``broker_configs`` and ``cluster_defaults`` are the stored dynamic configs (BROKER ``"<id>"`` and
    ``""``); what a broker would ignore there (read-only keys, security keys without a listener prefix,
    per-broker keys at the cluster level) is ignored here too. ``static`` is ``server.properties``."""

    def __init__(
        self,
        *,
        broker_configs: Mapping[str, str] = _EMPTY,
        cluster_defaults: Mapping[str, str] = _EMPTY,
        static: Mapping[str, str] = _EMPTY,
    ) -> None:
        static = dict(static)  # the views cached below must not change under the caller's feet
        per_broker = dynamic_layer(broker_configs, cluster_default=False)
        self._cluster = dynamic_layer(cluster_defaults, cluster_default=True)
        self._merged: dict[str, str] = {**static, **self._cluster, **per_broker}
        self._layers: tuple[tuple[ConfigSource, Mapping[str, str]], ...] = (
            (ConfigSource.DYNAMIC_BROKER_CONFIG, per_broker),
            (ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG, self._cluster),
            (ConfigSource.STATIC_BROKER_CONFIG, static),
            (ConfigSource.DEFAULT_CONFIG, _BUILT_IN),
        )
        self._inherited = {name: self._inherited_value(key) for name, key in TOPIC_CONFIGS.items()}
        self._views: dict[tuple[str, bool, bool], ConfigEntryView] = {}

    # -- topics -------------------------------------------------------------------------------------

    def topic_log_defaults(self) -> Mapping[str, str]:
        """What a topic without overrides gets, by topic key (for ``validate_topic_configs``)."""
        return dict(self._inherited)

    def topic_entry(
        self,
        name: str,
        topic_configs: Mapping[str, str],
        *,
        include_synonyms: bool = False,
        include_documentation: bool = False,
    ) -> ConfigEntryView:
        """The entry for ``name`` of a topic whose overrides are ``topic_configs``."""
        override = topic_configs.get(name)
        if override is None:
            cache_key = (name, include_synonyms, include_documentation)
            view = self._views.get(cache_key)
            if view is None:
                view = self._views[cache_key] = self._topic_entry(name, None, include_synonyms, include_documentation)
            return view
        return self._topic_entry(name, override, include_synonyms, include_documentation)

    def describe_topic(
        self,
        topic_configs: Mapping[str, str],
        *,
        include_synonyms: bool = False,
        include_documentation: bool = False,
        keys: Collection[str] | None = None,
    ) -> list[ConfigEntryView]:
        """Every topic config with its effective value, plus any other key stored on the topic, by name.
        ``keys`` (when not empty) keeps only those names; names that are not there are ignored."""
        names = sorted(TOPIC_CONFIGS.keys() | topic_configs.keys())
        if keys:
            names = [n for n in names if n in keys]
        return [self.topic_entry(n, topic_configs, include_synonyms=include_synonyms,
                                 include_documentation=include_documentation) for n in names]  # fmt: skip

    def _topic_entry(self, name: str, override: str | None, synonyms: bool, documentation: bool) -> ConfigEntryView:
        key = TOPIC_CONFIGS.get(name)
        sensitive = is_sensitive(ConfigResourceType.TOPIC, name)
        chain: tuple[ConfigSynonym, ...]
        if key is None:  # stored on the topic, unknown to the catalog (it was written by another version)
            value, chain = None, ()
        elif override is not None:
            value, chain = key.canonical(override), self._chain(key.synonyms[:1], sensitive)
        else:
            value, chain = self._inherited[name], self._chain(key.synonyms[:1], sensitive)
        if override is not None:
            chain = (ConfigSynonym(name, None if sensitive else value, ConfigSource.TOPIC_CONFIG), *chain)
        return ConfigEntryView(
            name=name,
            value=None if sensitive else value,
            source=chain[0].source if chain else ConfigSource.DEFAULT_CONFIG,
            read_only=False,
            is_sensitive=sensitive,
            config_type=key.type if key else ConfigType.UNKNOWN,
            synonyms=chain if synonyms else (),
            documentation=key.doc if key and documentation else None,
        )

    def _inherited_value(self, key: ConfigKey) -> str:
        """The value of a topic key from the broker: the first of its broker synonyms set at any level or
        with a built-in default, in units of the topic key (``KafkaConfig.extractLogConfigMap``)."""
        for synonym in key.synonyms:
            raw = self._merged.get(synonym, BROKER_CONFIGS[synonym].default)
            if raw is None:
                continue
            try:
                value = BROKER_CONFIGS[synonym].parse(raw)
            except InvalidValue:
                continue  # a broker would not have started; fall back as if it were unset
            if synonym in UNIT_MS:
                assert isinstance(value, int)
                value *= UNIT_MS[synonym]
            if key.name == "retention.ms" and isinstance(value, int) and value < 0:
                value = -1  # KafkaConfig.logRetentionTimeMillis: any negative is unlimited
            return key.to_string(value)
        assert key.default is not None
        return key.default

    # -- brokers ------------------------------------------------------------------------------------

    def broker_entry(
        self,
        name: str,
        *,
        cluster_default: bool = False,
        include_synonyms: bool = False,
        include_documentation: bool = False,
    ) -> ConfigEntryView:
        """The entry for ``name`` of this node (BROKER ``"<id>"``), or of the cluster default (``""``)."""
        key = broker_config_key(name)
        defined = BROKER_CONFIGS.get(name)
        sensitive = is_sensitive(ConfigResourceType.BROKER, name)
        if cluster_default:
            value = self._cluster.get(name)
        else:
            value = self._merged.get(name)
            if defined is not None and name not in BROKER_QUOTA_CONFIGS:
                # a defined key is reported parsed and written back, or as its default when unset
                value = defined.default if value is None else defined.canonical(value)
        chain = self._chain((name,), sensitive)
        if cluster_default:
            chain = tuple(s for s in chain if s.source is ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG)
        return ConfigEntryView(
            name=name,
            value=None if sensitive else value,
            source=chain[0].source if chain else ConfigSource.DEFAULT_CONFIG,
            read_only=defined is None or not defined.is_dynamic,
            is_sensitive=sensitive,
            config_type=key.type if key else ConfigType.UNKNOWN,
            synonyms=chain if include_synonyms else (),
            documentation=defined.doc if defined and include_documentation else None,
        )

    def describe_broker(
        self,
        *,
        cluster_default: bool = False,
        include_synonyms: bool = False,
        include_documentation: bool = False,
        keys: Collection[str] | None = None,
    ) -> list[ConfigEntryView]:
        """This node: every defined broker config plus every key set at any level. The cluster default
        (``cluster_default=True``): only the keys set there."""
        if cluster_default:
            names = sorted(self._cluster)
        else:
            names = sorted((BROKER_CONFIGS.keys() - BROKER_QUOTA_CONFIGS) | self._merged.keys())
        if keys:
            names = [n for n in names if n in keys]
        return [
            self.broker_entry(n, cluster_default=cluster_default, include_synonyms=include_synonyms,
                              include_documentation=include_documentation)
            for n in names
        ]  # fmt: skip

    def broker_values(self) -> dict[str, str]:
        """This node's effective value of every broker config that has one (for
        ``validate_broker_reconfiguration``)."""
        values = {name: key.default for name, key in BROKER_CONFIGS.items() if key.default is not None}
        values.update(self._merged)
        return values

    def _chain(self, primaries: tuple[str, ...], sensitive: bool) -> tuple[ConfigSynonym, ...]:
        """Kafka's ``configSynonyms``: every source (per-broker, cluster default, static, default) in turn,
        every same-meaning name in turn, then leading entries dropped up to the primary name
        (docs/topics-and-configs.md)."""
        if not primaries:
            return ()
        primary = primaries[0]
        candidates = broker_synonyms(primary)
        chain = [
            ConfigSynonym(name, None if sensitive else layer[name], source)
            for source, layer in self._layers
            for name in candidates
            if name in layer
        ]
        while chain and chain[0].name != primary:
            chain.pop(0)
        return tuple(chain)


def config_key(resource_type: ConfigResourceType, name: str) -> ConfigKey | None:
    """The definition of ``name`` for a TOPIC, BROKER, GROUP or CLIENT_METRICS resource (a listener-prefixed
    broker key gets its base's); None for a key the catalog does not know."""
    if resource_type is ConfigResourceType.TOPIC:
        return TOPIC_CONFIGS.get(name)
    if resource_type is ConfigResourceType.BROKER:
        return broker_config_key(name)
    if resource_type is ConfigResourceType.GROUP:
        return GROUP_CONFIGS.get(name)
    if resource_type is ConfigResourceType.CLIENT_METRICS:
        return CLIENT_METRICS_CONFIGS.get(name)
    raise ValueError(f"no config catalog for resource type {resource_type.name}")


def validate(
    resource_type: ConfigResourceType, name: str, value: str, *, cluster_default: bool = False
) -> ApiError | None:
    """One key's value for a TOPIC (INVALID_CONFIG: unknown key, bad value) or a BROKER resource
    (INVALID_REQUEST: read-only key, unprefixed security key, per-broker key on the cluster default
    ``cluster_default=True``, bad value; an unknown broker key is a custom config and passes). The
    whole-resource checks are ``validate_topic_configs`` and ``validate_broker_configs``."""
    if resource_type is ConfigResourceType.TOPIC:
        return validate_topic_config(name, value)
    if resource_type is ConfigResourceType.BROKER:
        return validate_broker_configs({name: value}, cluster_default=cluster_default)
    raise ValueError(f"no config catalog for resource type {resource_type.name}")


def resolve(
    resource_type: ConfigResourceType,
    resource_name: str,
    name: str,
    *,
    topic_configs: Mapping[str, str] = _EMPTY,
    broker_configs: Mapping[str, str] = _EMPTY,
    cluster_defaults: Mapping[str, str] = _EMPTY,
    static: Mapping[str, str] = _EMPTY,
    include_synonyms: bool = False,
    include_documentation: bool = False,
) -> ConfigEntryView:
    """The effective value of one key of a TOPIC, of this node (BROKER ``"<id>"``) or of the cluster
    default (BROKER ``""``), with its source and, when asked, its synonyms in Kafka's order."""
    resolver = ConfigResolver(broker_configs=broker_configs, cluster_defaults=cluster_defaults, static=static)
    flags = {"include_synonyms": include_synonyms, "include_documentation": include_documentation}
    if resource_type is ConfigResourceType.TOPIC:
        return resolver.topic_entry(name, topic_configs, **flags)
    if resource_type is ConfigResourceType.BROKER:
        return resolver.broker_entry(name, cluster_default=resource_name == "", **flags)
    raise ValueError(f"no config catalog for resource type {resource_type.name}")


def describe_resource(
    resource_type: ConfigResourceType,
    name: str,
    *,
    topic_configs: Mapping[str, str] = _EMPTY,
    broker_configs: Mapping[str, str] = _EMPTY,
    cluster_defaults: Mapping[str, str] = _EMPTY,
    static: Mapping[str, str] = _EMPTY,
    include_synonyms: bool = False,
    include_documentation: bool = False,
    keys: Collection[str] | None = None,
) -> list[ConfigEntryView]:
    """The full DescribeConfigs entry list of a TOPIC, of this node (BROKER ``"<id>"``: the caller checks
    that the id is this node's) or of the cluster default (BROKER ``""``: only the keys set there)."""
    resolver = ConfigResolver(broker_configs=broker_configs, cluster_defaults=cluster_defaults, static=static)
    if resource_type is ConfigResourceType.TOPIC:
        return resolver.describe_topic(
            topic_configs, include_synonyms=include_synonyms, include_documentation=include_documentation, keys=keys
        )
    if resource_type is ConfigResourceType.BROKER:
        return resolver.describe_broker(
            cluster_default=name == "",
            include_synonyms=include_synonyms,
            include_documentation=include_documentation,
            keys=keys,
        )
    raise ValueError(f"no config catalog for resource type {resource_type.name}")


def describe_group(
    overrides: Mapping[str, str],
    settings: GroupBrokerSettings,
    *,
    include_synonyms: bool = False,
    include_documentation: bool = False,
    keys: Collection[str] | None = None,
) -> list[ConfigEntryView]:
    """Every group config of one GROUP resource, by name (Kafka's ``ConfigHelper.createGroupConfigEntry``). The
    value is the group's override, else the broker-derived default (``extractGroupConfigMap``). The synonyms, in
    order: the override (GROUP_CONFIG), the broker's ``group.<key>`` set in ``server.properties``
    (STATIC_BROKER_CONFIG) and at its built-in default (DEFAULT_CONFIG); a key with no broker config
    (``share.auto.offset.reset``, ``share.isolation.level``) has GroupConfig's own default instead. The source is
    the first synonym's."""
    defaults = settings.group_defaults()
    entries = []
    for name in sorted(GROUP_CONFIGS):
        if keys and name not in keys:
            continue
        key = GROUP_CONFIGS[name]
        override = overrides.get(name)
        value = key.canonical(override) if override is not None else defaults[name]
        broker_key = "group." + name
        chain: list[ConfigSynonym] = []
        if override is not None:
            chain.append(ConfigSynonym(name, value, ConfigSource.GROUP_CONFIG))
        if broker_key in settings.static:
            chain.append(ConfigSynonym(broker_key, str(settings.values[broker_key]), ConfigSource.STATIC_BROKER_CONFIG))
        if broker_key in GROUP_BROKER_DEFAULTS:
            chain.append(ConfigSynonym(broker_key, str(GROUP_BROKER_DEFAULTS[broker_key]), ConfigSource.DEFAULT_CONFIG))
        else:
            chain.append(ConfigSynonym(name, key.default, ConfigSource.DEFAULT_CONFIG))
        entries.append(
            ConfigEntryView(
                name=name,
                value=value,
                source=chain[0].source,
                read_only=False,
                is_sensitive=False,
                config_type=key.type,
                synonyms=tuple(chain) if include_synonyms else (),
                documentation=key.doc if include_documentation else None,
            )
        )
    return entries


def describe_client_metrics(
    overrides: Mapping[str, str],
    *,
    include_synonyms: bool = False,
    include_documentation: bool = False,
    keys: Collection[str] | None = None,
) -> list[ConfigEntryView]:
    """The three keys of one CLIENT_METRICS subscription, by name (Kafka's
    ``ConfigHelper.createClientMetricsConfigEntry``): the stored value (CLIENT_METRICS_CONFIG, its only synonym),
    else the default (DEFAULT_CONFIG, no synonym)."""
    entries = []
    for name in sorted(CLIENT_METRICS_CONFIGS):
        if keys and name not in keys:
            continue
        key = CLIENT_METRICS_CONFIGS[name]
        stored = overrides.get(name)
        value = key.canonical(stored) if stored is not None else key.default
        chain = () if stored is None else (ConfigSynonym(name, value, ConfigSource.CLIENT_METRICS_CONFIG),)
        entries.append(
            ConfigEntryView(
                name=name,
                value=value,
                source=chain[0].source if chain else ConfigSource.DEFAULT_CONFIG,
                read_only=False,
                is_sensitive=False,
                config_type=key.type,
                synonyms=chain if include_synonyms else (),
                documentation=key.doc if include_documentation else None,
            )
        )
    return entries
