"""What ``ksteward configs`` sends, and through which client.

confluent-kafka's AdminClient carries TOPIC and BROKER configs and SCRAM credentials on ``--bootstrap-server``
(so SSL and every SASL mechanism work). ksteward's own wire client (``cli.admin_client``) carries what
confluent-kafka cannot: client quotas (librdkafka has no DescribeClientQuotas / AlterClientQuotas),
BROKER_LOGGER configs (no such resource type in confluent-kafka), and everything on ``--bootstrap-controller``
(librdkafka has no ``bootstrap.controllers``, KIP-919). Both return the same plain records."""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from typing import Any

from ksteward.cli.admin_client import AdminError
from ksteward.cli.admin_common import (
    CommandError,
    Connection,
    confluent_admin,
    describe_cluster,
    described_nodes,
    ksteward_admin,
)
from ksteward.cli.configs_entities import (
    BROKER_LOGGERS,
    BROKERS,
    CLIENT_METRICS,
    GROUPS,
    IPS,
    NAMED_ONLY,
    SCRAM_MECHANISMS,
    TOPICS,
    USERS,
    ScramUpsert,
)
from ksteward.configs.catalog import ConfigResourceType
from ksteward.protocol.apis import ApiKey

TIMEOUT = 30.0
RESOURCE_TYPES = {TOPICS: ConfigResourceType.TOPIC, BROKERS: ConfigResourceType.BROKER,
                  BROKER_LOGGERS: ConfigResourceType.BROKER_LOGGER, GROUPS: ConfigResourceType.GROUP,
                  CLIENT_METRICS: ConfigResourceType.CLIENT_METRICS}  # fmt: skip
# Java's ConfigEntry.ConfigSource names, by DescribeConfigs' wire code.
SOURCE_NAMES = {0: "UNKNOWN", 1: "DYNAMIC_TOPIC_CONFIG", 2: "DYNAMIC_BROKER_CONFIG", 3: "DYNAMIC_DEFAULT_BROKER_CONFIG",
                4: "STATIC_BROKER_CONFIG", 5: "DEFAULT_CONFIG", 6: "DYNAMIC_BROKER_LOGGER_CONFIG",
                7: "DYNAMIC_CLIENT_METRICS_CONFIG", 8: "DYNAMIC_GROUP_CONFIG"}  # fmt: skip
QUOTA_ENTITY_TYPES = {USERS: "user", "clients": "client-id", IPS: "ip"}
MECHANISM_NAMES = {v: k for k, v in SCRAM_MECHANISMS.items()}


@dataclass(frozen=True)
class Synonym:
    source: str
    name: str
    value: str | None


@dataclass(frozen=True)
class Entry:
    name: str
    value: str | None  # None when sensitive
    sensitive: bool
    source: str
    synonyms: list[Synonym]


def _what(entity_type: str, name: str) -> str:
    return f"{entity_type[:-1]} {name}" if name else f"the default {entity_type[:-1]}"


def _wire_error(code: int, message: str | None, what: str) -> None:
    if code:
        raise CommandError(f"{what}: {AdminError(code, message).args[0]}")


def _uses_wire(conn: Connection, entity_type: str, name: str) -> bool:
    # librdkafka refuses an empty BROKER name, which is how the cluster-wide default is named, and has no
    # CLIENT_METRICS resource (its GROUP is the ACL resource type, 3).
    return conn.to_controller or entity_type in (BROKER_LOGGERS, *NAMED_ONLY) or (entity_type == BROKERS and name == "")


_ADMINS: dict[int, Any] = {}


def _wire_can_log_in(conn: Connection) -> bool:
    """Whether ksteward's client can log in as ``conn`` says (PLAINTEXT, or SASL_PLAINTEXT with PLAIN)."""
    protocol = conn.properties.get("security.protocol", "PLAINTEXT").strip().upper()
    mechanism = conn.properties.get("sasl.mechanism", "").strip().upper()
    return protocol == "PLAINTEXT" or (protocol == "SASL_PLAINTEXT" and mechanism == "PLAIN")


def _confluent(conn: Connection) -> Any:
    """One confluent-kafka AdminClient per connection, kept for the command's life (a client dropped while a
    request is in flight fails it with _DESTROY)."""
    if id(conn) not in _ADMINS:
        _ADMINS[id(conn)] = confluent_admin(conn)
    return _ADMINS[id(conn)]


def _resource(rtype: ConfigResourceType, name: str, **kwargs: Any) -> Any:
    from confluent_kafka.admin import ConfigResource, ResourceType

    return ConfigResource(ResourceType(int(rtype)), name, **kwargs)


# --- configs --------------------------------------------------------------------------------------------


def describe_configs(conn: Connection, entity_type: str, name: str, *, synonyms: bool = True) -> list[Entry]:
    """DescribeConfigs of one resource (with synonyms, as ConfigCommand asks)."""
    return describe_many(conn, entity_type, [name], synonyms=synonyms)[name]


_BATCH = 500  # resources per DescribeConfigs request


def describe_many(
    conn: Connection, entity_type: str, names: list[str], *, synonyms: bool = True
) -> dict[str, list[Entry]]:
    """DescribeConfigs of several resources of one type: topics in batches, each broker on its own connection.

    confluent-kafka keys a config's synonyms by name, so synonyms of one name (a broker key's per-broker,
    default and static values; log.cleanup.policy both static and default) collapse into one: describe
    through ksteward's client whenever it can log in, through confluent-kafka otherwise (SSL, SCRAM)."""
    rtype = RESOURCE_TYPES[entity_type]
    out: dict[str, list[Entry]] = {}
    by_wire = [n for n in names if _uses_wire(conn, entity_type, n) or _wire_can_log_in(conn)]
    if entity_type == TOPICS:
        batches = [by_wire[i : i + _BATCH] for i in range(0, len(by_wire), _BATCH)]
    else:
        batches = [[n] for n in by_wire]  # a broker answers for itself only: one connection each
    for batch in batches:
        with _wire(conn, entity_type, batch[0]) as wire:
            body = wire.request(ApiKey.DESCRIBE_CONFIGS, {"include_synonyms": synonyms, "include_documentation": False,
                "resources": [{"resource_type": int(rtype), "resource_name": n, "configuration_keys": None}
                              for n in batch]}, max_version=4)  # fmt: skip
        for result in body.results:
            _wire_error(int(result.error_code), result.error_message, _what(entity_type, result.resource_name))
            out[result.resource_name] = [_wire_entry(c) for c in result.configs]
    rest = [n for n in names if n not in out]
    if rest:
        resources = {n: _resource(rtype, n) for n in rest}
        futures = _confluent(conn).describe_configs(list(resources.values()), request_timeout=TIMEOUT)
        for n, resource in resources.items():
            out[n] = [_confluent_entry(e) for e in futures[resource].result(TIMEOUT + 5).values()]
    return out


def _wire_entry(c: Any) -> Entry:
    synonyms = [Synonym(SOURCE_NAMES.get(int(s.source), "UNKNOWN"), s.name, s.value) for s in c.synonyms]
    return Entry(c.name, c.value, bool(c.is_sensitive), SOURCE_NAMES.get(int(c.config_source), "UNKNOWN"), synonyms)


def _wire(conn: Connection, entity_type: str, name: str) -> Any:
    """ksteward's client, connected where the request must go: a broker's or broker logger's own configs are
    answered by that broker only (Kafka's admin client routes them the same way), so connect to it."""
    if entity_type in (BROKERS, BROKER_LOGGERS) and name != "" and conn.to_controller:
        controllers = _controllers(conn)  # KIP-919: a controller, too, answers for itself only
        if int(name) not in controllers:
            raise CommandError(f"controller {name} is not in the quorum's DescribeCluster answer (controllers: "
                               f"{', '.join(str(c) for c in sorted(controllers)) or 'none'})")  # fmt: skip
        host, port = controllers[int(name)]
        return ksteward_admin(Connection(f"{host}:{port}", True, conn.properties))
    if entity_type in (BROKERS, BROKER_LOGGERS) and name != "":
        brokers = _confluent(conn).list_topics(timeout=TIMEOUT).brokers
        broker = brokers.get(int(name))
        if broker is None:
            raise CommandError(f"broker {name} is not in the cluster's metadata (brokers: "
                               f"{', '.join(str(b) for b in sorted(brokers)) or 'none'})")  # fmt: skip
        return ksteward_admin(Connection(f"{broker.host}:{broker.port}", False, conn.properties))
    return ksteward_admin(conn)


def _source_name(source: Any) -> str:
    return SOURCE_NAMES.get(int(getattr(source, "value", source)), "UNKNOWN")


def _confluent_entry(e: Any) -> Entry:
    synonyms = [Synonym(_source_name(s.source), s.name, s.value) for s in (e.synonyms or {}).values()]
    return Entry(e.name, e.value, bool(e.is_sensitive), _source_name(e.source), synonyms)


def incremental_alter(conn: Connection, entity_type: str, name: str, sets: dict[str, str], deletes: list[str]) -> None:
    """IncrementalAlterConfigs (adds are SET, deletes DELETE), as ConfigCommand sends it."""
    rtype = RESOURCE_TYPES[entity_type]
    if _uses_wire(conn, entity_type, name):
        ops = [{"name": k, "config_operation": 0, "value": v} for k, v in sets.items()]
        ops += [{"name": k, "config_operation": 1, "value": None} for k in deletes]
        with _wire(conn, entity_type, name) as wire:
            body = wire.request(ApiKey.INCREMENTAL_ALTER_CONFIGS, {"validate_only": False, "resources": [
                {"resource_type": int(rtype), "resource_name": name, "configs": ops}]}, max_version=1)  # fmt: skip
        (r,) = body.responses
        _wire_error(int(r.error_code), r.error_message, _what(entity_type, name))
        return
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry

    entries = [ConfigEntry(k, v, incremental_operation=AlterConfigOpType.SET) for k, v in sets.items()]
    entries += [ConfigEntry(k, None, incremental_operation=AlterConfigOpType.DELETE) for k in deletes]
    resource = _resource(rtype, name, incremental_configs=entries)
    futures = _confluent(conn).incremental_alter_configs([resource], request_timeout=TIMEOUT)
    for future in futures.values():
        future.result(TIMEOUT + 5)


def topic_names(conn: Connection) -> list[str]:
    """Every topic, internal ones included (ConfigCommand lists with listInternal(true))."""
    if conn.to_controller:
        raise CommandError("describing every topic needs --bootstrap-server: controllers serve no Metadata "
                           "(KIP-919); name the topic with --entity-name")  # fmt: skip
    return sorted(_confluent(conn).list_topics(timeout=TIMEOUT).topics)


def node_ids(conn: Connection) -> list[str]:
    """The brokers (or, on --bootstrap-controller, the controllers) DescribeCluster names."""
    if not conn.to_controller:
        nodes = _confluent(conn).describe_cluster(request_timeout=TIMEOUT).result(TIMEOUT + 5).nodes
        return [str(n.id) for n in nodes]
    return [str(node_id) for node_id in _controllers(conn)]


def _controllers(conn: Connection) -> dict[int, tuple[str, int]]:
    """Each controller's id and address on this listener: DescribeCluster with EndpointType CONTROLLER (KIP-919),
    as an admin client on ``bootstrap.controllers`` asks."""
    with ksteward_admin(conn) as wire:
        body = describe_cluster(wire, to_controller=True)
    _wire_error(int(body.error_code), body.error_message, "DescribeCluster")
    return described_nodes(body)


# --- client quotas (always ksteward's client) -----------------------------------------------------------


QuotaEntity = dict[str, str | None]  # entity type (user, client-id, ip) -> name, None for the default


def describe_quotas(conn: Connection, types: list[str], names: list[str]) -> list[tuple[QuotaEntity, dict[str, float]]]:
    """DescribeClientQuotas with ConfigCommand's filter: one component per type (exact name, the default for
    "", any for none), matching entities with only those types (strict)."""
    components = []
    for i, t in enumerate(types):
        name = names[i] if i < len(names) else None
        match_type = 2 if name is None else (1 if name == "" else 0)
        components.append({"entity_type": QUOTA_ENTITY_TYPES[t], "match_type": match_type,
                           "match": name if match_type == 0 else None})  # fmt: skip
    with ksteward_admin(conn) as wire:
        body = wire.request(ApiKey.DESCRIBE_CLIENT_QUOTAS, {"components": components, "strict": True}, max_version=1)
    _wire_error(int(body.error_code), body.error_message, "DescribeClientQuotas")
    out = []
    for entry in body.entries or ():
        entity = {e.entity_type: e.entity_name for e in entry.entity}
        out.append((entity, {v.key: float(v.value) for v in entry.values}))
    return out


def alter_quotas(
    conn: Connection, types: list[str], names: list[str], sets: dict[str, float], deletes: list[str]
) -> None:
    entity = [
        {"entity_type": QUOTA_ENTITY_TYPES[t], "entity_name": n or None} for t, n in zip(types, names, strict=False)
    ]
    ops = [{"key": k, "value": v, "remove": False} for k, v in sets.items()]
    ops += [{"key": k, "value": 0.0, "remove": True} for k in deletes]
    with ksteward_admin(conn) as wire:
        body = wire.request(ApiKey.ALTER_CLIENT_QUOTAS, {"entries": [{"entity": entity, "ops": ops}],
                                                         "validate_only": False}, max_version=1)  # fmt: skip
    for r in body.entries:
        _wire_error(int(r.error_code), r.error_message, "AlterClientQuotas")


# --- SCRAM credentials ----------------------------------------------------------------------------------


def describe_scram(conn: Connection, users: list[str] | None) -> dict[str, list[tuple[str, int]] | str]:
    """Each user's (mechanism, iterations), or Kafka's error text for a user it could not describe."""
    if conn.to_controller:
        with ksteward_admin(conn) as wire:
            named = None if users is None else [{"name": u} for u in users]
            body = wire.request(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, {"users": named}, max_version=0)
        _wire_error(int(body.error_code), body.error_message, "DescribeUserScramCredentials")
        out: dict[str, list[tuple[str, int]] | str] = {}
        for r in body.results:
            if r.error_code:
                out[r.user] = AdminError(int(r.error_code), r.error_message).args[0]
            else:
                out[r.user] = [(MECHANISM_NAMES.get(int(c.mechanism), "UNKNOWN"), int(c.iterations))
                               for c in r.credential_infos]  # fmt: skip
        return out
    return _describe_scram_confluent(conn, users)


def _describe_scram_confluent(conn: Connection, users: list[str] | None) -> dict[str, list[tuple[str, int]] | str]:
    from confluent_kafka import KafkaException

    from ksteward.cli.admin_common import describe_kafka_error

    admin = _confluent(conn)
    out: dict[str, list[tuple[str, int]] | str] = {}
    if users is None:
        descriptions = admin.describe_user_scram_credentials(request_timeout=TIMEOUT).result(TIMEOUT + 5)
        items = list(descriptions.items())
    else:
        futures = admin.describe_user_scram_credentials(users, request_timeout=TIMEOUT)
        items = []
        for user, future in futures.items():
            try:
                items.append((user, future.result(TIMEOUT + 5)))
            except KafkaException as exc:  # librdkafka may leave a stray control byte at the end
                out[user] = "".join(ch for ch in describe_kafka_error(exc) if ch.isprintable())
    for user, d in items:
        out[user] = [(c.mechanism.name.replace("_", "-"), int(c.iterations)) for c in d.scram_credential_infos]
    return out


def alter_scram(conn: Connection, user: str, upserts: list[ScramUpsert], deletes: list[str]) -> None:
    """AlterUserScramCredentials for one user; the password leaves this process only as the salted password."""
    if conn.to_controller:
        ups = []
        for u in upserts:
            salt = os.urandom(32)
            digest = "sha256" if u.mechanism == "SCRAM-SHA-256" else "sha512"
            salted = hashlib.pbkdf2_hmac(digest, u.password.encode(), salt, u.iterations)  # SCRAM's Hi()
            ups.append({"name": user, "mechanism": SCRAM_MECHANISMS[u.mechanism], "iterations": u.iterations,
                        "salt": salt, "salted_password": salted})  # fmt: skip
        dels = [{"name": user, "mechanism": SCRAM_MECHANISMS[m]} for m in deletes]
        with ksteward_admin(conn) as wire:
            body = wire.request(ApiKey.ALTER_USER_SCRAM_CREDENTIALS, {"deletions": dels, "upsertions": ups},
                                max_version=0)  # fmt: skip
        for r in body.results:
            _wire_error(int(r.error_code), r.error_message, f"user {user}")
        return
    from confluent_kafka.admin import (
        ScramCredentialInfo,
        ScramMechanism,
        UserScramCredentialDeletion,
        UserScramCredentialUpsertion,
    )

    def mechanism(name: str) -> Any:
        return ScramMechanism[name.replace("-", "_")]

    alterations: list[Any] = [
        UserScramCredentialUpsertion(
            user, ScramCredentialInfo(mechanism(u.mechanism), u.iterations), u.password.encode()
        )
        for u in upserts
    ]
    alterations += [UserScramCredentialDeletion(user, mechanism(m)) for m in deletes]
    for future in _confluent(conn).alter_user_scram_credentials(alterations, request_timeout=TIMEOUT).values():
        future.result(TIMEOUT + 5)
