"""Which config values are secret: the one rule, and the helpers that apply it to values, maps and records.

Kafka decides from a config's declared type (``KafkaConfigSchema.isSensitive``: ``ConfigDef.Type.PASSWORD``)
and hides what it cannot type: a key of a TOPIC or BROKER resource that the catalog does not define (a
topic key of another version, a custom broker key such as ``my.vault.token`` that a plugin reads) may hold
anything. A listener-prefixed broker key has its base key's type (``listener.name.internal.ssl.key.password``
is a PASSWORD, ``listener.name.internal.ssl.keystore.location`` is not). A GROUP key is typed by Kafka's
``GroupConfig`` (none is a PASSWORD; an unknown one is hidden). BROKER_LOGGER values are log levels and
CLIENT_METRICS values subscriptions: never secret. Any other resource type (UNKNOWN, a code Kafka does not
define) has no catalog here, so every value of it is hidden.

Everything that shows or logs a config value asks :func:`is_sensitive`: DescribeConfigs (``configs.resolve``),
the reprs of the alter results, of the controller's requests and of the policies' request metadata,
``ksteward metadata dump`` and ``shell``, and the pipeline's metadata reader, which runs
:func:`redacted_record_json` on the Spark executors as it decodes each record::

    >>> is_sensitive(ConfigResourceType.BROKER, "my.vault.token")
    True
    >>> loggable_value(ConfigResourceType.TOPIC, "retention.ms", "1000")
    '1000'
    >>> loggable_value(ConfigResourceType.BROKER, "listener.name.internal.ssl.key.password", "pw")
    '[hidden]'
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from ksteward.metadata.records.kafka_json import record_json

from .broker_catalog import broker_config_key
from .catalog import HIDDEN, ConfigResourceType
from .group_catalog import GROUP_CONFIGS
from .topic_catalog import TOPIC_CONFIGS

__all__ = [
    "HIDDEN",
    "SECRET_BEARING_RECORD_TYPES",
    "is_sensitive",
    "loggable_configs",
    "loggable_value",
    "redact_record_json",
    "redacted_record_json",
]

_NEVER_SECRET: Final = frozenset({ConfigResourceType.BROKER_LOGGER, ConfigResourceType.CLIENT_METRICS})

# Metadata record apiKeys that can carry a secret: ConfigRecord (a config value), UserScramCredentialRecord (a
# SCRAM salt and keys), and the delegation-token records, which Kafka's metadata tools redact whole
# (MetadataNodeRedactionCriteria.Normal.shouldRedactDelegationToken): the token id is the SCRAM user name that,
# with delegation.token.secret.key, gives the token's password.
_CONFIG_RECORD: Final = 4
_DELEGATION_TOKEN_RECORD: Final = 10
_USER_SCRAM_CREDENTIAL_RECORD: Final = 11
_REMOVE_DELEGATION_TOKEN_RECORD: Final = 26
SECRET_BEARING_RECORD_TYPES: Final = frozenset(
    {_CONFIG_RECORD, _DELEGATION_TOKEN_RECORD, _USER_SCRAM_CREDENTIAL_RECORD, _REMOVE_DELEGATION_TOKEN_RECORD}
)
"""A record of these apiKeys that cannot be decoded must not be shown as raw bytes either."""
_SCRAM_SECRET_FIELDS: Final = ("salt", "storedKey", "serverKey")
_TOKEN_FIELDS: Final = {
    _DELEGATION_TOKEN_RECORD: (
        "owner", "requester", "renewers", "issueTimestamp", "maxTimestamp", "expirationTimestamp", "tokenId",
    ),
    _REMOVE_DELEGATION_TOKEN_RECORD: ("tokenId",),
}  # fmt: skip


def is_sensitive(resource_type: ConfigResourceType, name: str) -> bool:
    """Whether a value of config ``name`` of a ``resource_type`` resource must never be shown or logged."""
    if resource_type == ConfigResourceType.TOPIC:
        key = TOPIC_CONFIGS.get(name)
    elif resource_type == ConfigResourceType.BROKER:
        key = broker_config_key(name)
    elif resource_type == ConfigResourceType.GROUP:
        key = GROUP_CONFIGS.get(name)
    else:
        return resource_type not in _NEVER_SECRET
    return key is None or key.is_sensitive


def loggable_value(resource_type: ConfigResourceType, name: str, value: str | None) -> str | None:
    """``value`` for a log line, a repr or a tool's output: ``[hidden]`` when sensitive (a null value,
    which deletes the key, stays null)."""
    return HIDDEN if value is not None and is_sensitive(resource_type, name) else value


def loggable_configs(resource_type: ConfigResourceType, configs: Mapping[str, str | None]) -> dict[str, str | None]:
    """A copy of ``configs`` for a repr or a log line: every sensitive value replaced by ``[hidden]``."""
    return {name: loggable_value(resource_type, name, value) for name, value in configs.items()}


def redact_record_json(api_key: int, data: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of a metadata record's Kafka-JSON ``data`` with its secrets replaced by ``[hidden]``: a
    ConfigRecord's value when :func:`is_sensitive` says so for its ``resourceType`` and ``name`` (Kafka's
    ``KafkaConfigSchema.isSensitive(ConfigRecord)``), a UserScramCredentialRecord's salt and keys, every field of
    a DelegationTokenRecord and the id of a RemoveDelegationTokenRecord."""
    out = dict(data)
    hidden_fields = _SCRAM_SECRET_FIELDS if api_key == _USER_SCRAM_CREDENTIAL_RECORD else _TOKEN_FIELDS.get(api_key)
    if hidden_fields is not None:
        for field in hidden_fields:
            if field in out:
                out[field] = HIDDEN
    elif api_key == _CONFIG_RECORD:
        code, name, value = out.get("resourceType"), out.get("name"), out.get("value")
        resource_type = ConfigResourceType.from_code(code) if isinstance(code, int) else ConfigResourceType.UNKNOWN
        if isinstance(value, str):
            out["value"] = loggable_value(resource_type, name, value) if isinstance(name, str) else HIDDEN
    return out


def redacted_record_json(record: Any) -> dict[str, Any]:
    """``{"type", "version", "data"}`` of a decoded metadata record, as ``kafka-dump-log`` prints it, with
    its secrets hidden: what the tools print and the pipeline reads (``kafka_json.record_json`` alone
    keeps every value in clear)."""
    rendered = record_json(record)
    rendered["data"] = redact_record_json(int(record.__api_key__), rendered["data"])
    return rendered
