"""The cluster side of ``ksteward acls``: DescribeAcls, CreateAcls, DeleteAcls, and what the answers read
(topic names, the broker's ``super.users`` and ``allow.everyone.if.no.acl.found``).

Two implementations of one small interface (:class:`AclBackend`):

- :class:`ConfluentBackend`, confluent-kafka's AdminClient, for ``--bootstrap-server``: it honours every
  ``--command-config`` property ``admin_common`` maps (SASL, TLS), so the command works against real Kafka.
- :class:`WireBackend`, ksteward's own ``admin_client.AdminClient`` (PLAINTEXT or SASL PLAIN), for what
  librdkafka cannot do: ``--bootstrap-controller`` (KIP-919; librdkafka has no ``bootstrap.controllers``), and
  the DELEGATION_TOKEN and USER resource types and the CreateTokens / DescribeTokens operations, which
  confluent-kafka's enums lack (:func:`needs_wire`).
"""

from __future__ import annotations

import socket
from collections.abc import Iterable, Sequence
from typing import Any, Protocol

from ksteward.authorizer import AclBinding, AclBindingFilter, AclOperation, ResourceType
from ksteward.cli.admin_common import CommandError, Connection, UsageError, confluent_admin

TIMEOUT_S = 30.0
SETTINGS_KEYS = ("super.users", "allow.everyone.if.no.acl.found")
_WIRE_ONLY_TYPES = (ResourceType.DELEGATION_TOKEN, ResourceType.USER)
_WIRE_ONLY_OPS = (AclOperation.CREATE_TOKENS, AclOperation.DESCRIBE_TOKENS)


class AclBackend(Protocol):
    def describe(self, acl_filter: AclBindingFilter) -> list[AclBinding]: ...
    def create(self, bindings: Sequence[AclBinding]) -> None: ...
    def delete(self, filters: Sequence[AclBindingFilter]) -> list[AclBinding]: ...
    def topics(self) -> set[str] | None: ...
    def broker_configs(self) -> dict[str, str | None] | None: ...
    def close(self) -> None: ...


def needs_wire(items: Iterable[AclBinding | AclBindingFilter]) -> bool:
    """True when confluent-kafka cannot express one of ``items`` (a DELEGATION_TOKEN or USER resource, a
    CreateTokens or DescribeTokens operation)."""
    return any(i.resource_type in _WIRE_ONLY_TYPES or i.operation in _WIRE_ONLY_OPS for i in items)


def open_backend(conn: Connection, *, wire: bool = False) -> AclBackend:
    """The backend for ``conn``: ksteward's own client for ``--bootstrap-controller`` or when ``wire``."""
    if conn.to_controller or wire:
        return WireBackend(conn)
    return ConfluentBackend(conn)


def caller_host(conn: Connection) -> str | None:
    """The address this machine uses to reach the first bootstrap server: the client host a broker sees (no NAT)."""
    host, _, port = conn.bootstrap.split(",")[0].strip().rpartition(":")
    try:
        with socket.create_connection((host.strip("[]") or "localhost", int(port)), timeout=5) as sock:
            return str(sock.getsockname()[0])
    except (OSError, ValueError):
        return None


# --- confluent-kafka --------------------------------------------------------------------------------


class ConfluentBackend:
    def __init__(self, conn: Connection) -> None:
        self._admin = confluent_admin(conn, log_level=3)  # errors only: librdkafka's notices are not ours to show
        self._conn = conn

    def close(self) -> None:
        pass

    def describe(self, acl_filter: AclBindingFilter) -> list[AclBinding]:
        found = self._admin.describe_acls(_to_confluent_filter(acl_filter), request_timeout=TIMEOUT_S)
        acls = [_from_confluent(b) for b in found.result(timeout=TIMEOUT_S)]
        if not acls or any(a.is_unknown for a in acls):
            # confluent-kafka reads a USER or DELEGATION_TOKEN ACL (or a CreateTokens one) as UNKNOWN, and (seen
            # with librdkafka 2.16) answers an empty list where DescribeAcls failed as a whole (error 31, no
            # DESCRIBE on the cluster): ask again with ksteward's own client when this connection allows it.
            try:
                with WireBackend(self._conn) as wire:
                    return wire.describe(acl_filter)
            except UsageError:
                return acls
        return acls

    def create(self, bindings: Sequence[AclBinding]) -> None:
        if not bindings:
            return
        futures = self._admin.create_acls([_to_confluent(b) for b in bindings], request_timeout=TIMEOUT_S)
        for future in futures.values():
            future.result(timeout=TIMEOUT_S)

    def delete(self, filters: Sequence[AclBindingFilter]) -> list[AclBinding]:
        if not filters:
            return []
        futures = self._admin.delete_acls([_to_confluent_filter(f) for f in filters], request_timeout=TIMEOUT_S)
        deleted: list[AclBinding] = []
        for future in futures.values():
            deleted += [_from_confluent(b) for b in future.result(timeout=TIMEOUT_S)]
        return list(dict.fromkeys(deleted))

    def topics(self) -> set[str] | None:
        return set(self._admin.list_topics(timeout=TIMEOUT_S).topics)

    def broker_configs(self) -> dict[str, str | None] | None:
        from confluent_kafka import KafkaException
        from confluent_kafka.admin import ConfigResource

        try:
            brokers = sorted(self._admin.list_topics(timeout=TIMEOUT_S).brokers)
            resource = ConfigResource(ConfigResource.Type.BROKER, str(brokers[0]))
            entries = self._admin.describe_configs([resource], request_timeout=TIMEOUT_S)[resource].result()
        except (KafkaException, IndexError):
            return None
        # A key the broker hides (sensitive, value null) maps to None; one it does not return is absent.
        return {k: None if e.is_sensitive else e.value for k, e in entries.items() if k in SETTINGS_KEYS}


def _enum_name(value: Any) -> str:
    name = str(value.name)
    return "CLUSTER" if name == "BROKER" else name  # confluent-kafka names resource type 4 BROKER


def _from_confluent(b: Any) -> AclBinding:
    return AclBinding(_enum_name(b.restype), b.name, b.resource_pattern_type.name, b.principal, b.host,
                      b.operation.name, b.permission_type.name)  # fmt: skip


def _confluent_enums(resource_type: ResourceType) -> tuple[Any, ...]:
    from confluent_kafka.admin import AclOperation as Op
    from confluent_kafka.admin import AclPermissionType as Perm
    from confluent_kafka.admin import ResourcePatternType as Pat
    from confluent_kafka.admin import ResourceType as Res

    name = "BROKER" if resource_type is ResourceType.CLUSTER else resource_type.name
    if name not in Res.__members__:
        raise UsageError(f"resource type {resource_type.name} needs ksteward's own client (use --bootstrap-controller "
                         "or a PLAINTEXT / SASL PLAIN connection)")  # fmt: skip
    return Res[name], Pat, Op, Perm


def _to_confluent(b: AclBinding) -> Any:
    from confluent_kafka.admin import AclBinding as CAclBinding

    res, pat, op, perm = _confluent_enums(b.resource_type)
    return CAclBinding(res, b.resource_name, pat[b.pattern_type.name], b.principal, b.host,
                       op[b.operation.name], perm[b.permission_type.name])  # fmt: skip


def _to_confluent_filter(f: AclBindingFilter) -> Any:
    from confluent_kafka.admin import AclBindingFilter as CFilter

    res, pat, op, perm = _confluent_enums(f.resource_type)
    # None (any name, principal or host) is what confluent-kafka's filter takes for "any", as Kafka's does.
    fields: tuple[Any, ...] = (res, f.resource_name, pat[f.pattern_type.name], f.principal, f.host,
                               op[f.operation.name], perm[f.permission_type.name])  # fmt: skip
    return CFilter(*fields)


# --- ksteward's own client ----------------------------------------------------------------------------


class WireBackend:
    """The three ACL APIs and DescribeConfigs at v1-v3 / v4, over ksteward's own client (PLAINTEXT or SASL PLAIN)."""

    def __init__(self, conn: Connection) -> None:
        from ksteward.cli.admin_client import AdminError
        from ksteward.cli.admin_common import ksteward_admin

        self._errors = (AdminError, OSError)
        self._client = ksteward_admin(conn)  # PLAINTEXT or SASL PLAIN; anything else is a UsageError saying so
        self._to_controller = conn.to_controller  # DescribeCluster lists the controllers there (KIP-919)

    @property
    def client(self) -> Any:
        """The ``admin_client.AdminClient`` underneath (for ksteward's extensions, such as DescribeAcls v4)."""
        return self._client

    def __enter__(self) -> WireBackend:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._client.close()

    def _request(self, api_key: int, values: dict[str, Any], max_version: int) -> Any:
        try:
            return self._client.request(api_key, values, max_version=max_version)
        except self._errors as exc:
            raise CommandError(str(exc)) from None

    def describe(self, acl_filter: AclBindingFilter) -> list[AclBinding]:
        from ksteward.protocol.apis import ApiKey

        body = self._request(ApiKey.DESCRIBE_ACLS, _wire_filter(acl_filter), 3)
        _check(int(body.error_code), body.error_message)
        return [AclBinding(int(r.resource_type), r.resource_name, int(r.pattern_type), a.principal, a.host,
                           int(a.operation), int(a.permission_type))
                for r in body.resources for a in r.acls]  # fmt: skip

    def create(self, bindings: Sequence[AclBinding]) -> None:
        from ksteward.protocol.apis import ApiKey

        if not bindings:
            return
        creations = [{"resource_type": int(b.resource_type), "resource_name": b.resource_name,
                      "resource_pattern_type": int(b.pattern_type), "principal": b.principal, "host": b.host,
                      "operation": int(b.operation), "permission_type": int(b.permission_type)}
                     for b in bindings]  # fmt: skip
        body = self._request(ApiKey.CREATE_ACLS, {"creations": creations}, 3)
        for result in body.results:
            _check(int(result.error_code), result.error_message)

    def delete(self, filters: Sequence[AclBindingFilter]) -> list[AclBinding]:
        from ksteward.protocol.apis import ApiKey

        if not filters:
            return []
        body = self._request(ApiKey.DELETE_ACLS, {"filters": [_wire_filter(f) for f in filters]}, 3)
        deleted: list[AclBinding] = []
        for result in body.filter_results:
            _check(int(result.error_code), result.error_message)
            deleted += [AclBinding(int(m.resource_type), m.resource_name, int(m.pattern_type), m.principal, m.host,
                                   int(m.operation), int(m.permission_type)) for m in result.matching_acls]  # fmt: skip
        return list(dict.fromkeys(deleted))

    def topics(self) -> set[str] | None:
        return None  # a controller serves no Metadata (KIP-919)

    def broker_configs(self) -> dict[str, str | None] | None:
        from ksteward.cli.admin_common import describe_cluster
        from ksteward.protocol.apis import ApiKey

        try:
            cluster = describe_cluster(self._client, to_controller=self._to_controller)
            node = str(sorted(int(b.broker_id) for b in cluster.brokers)[0])
            body = self._client.request(ApiKey.DESCRIBE_CONFIGS, {
                "resources": [{"resource_type": 4, "resource_name": node, "configuration_keys": list(SETTINGS_KEYS)}],
                "include_synonyms": False, "include_documentation": False}, max_version=4)  # fmt: skip
        except (*self._errors, IndexError):
            return None
        result = body.results[0]
        if int(result.error_code) != 0:
            return None
        return {c.name: None if c.is_sensitive else c.value for c in result.configs if c.name in SETTINGS_KEYS}


def _check(code: int, message: str | None) -> None:
    if code != 0:
        from kio.schema.errors import ErrorCode

        name = ErrorCode(code).name.upper() if code in ErrorCode._value2member_map_ else str(code)
        raise CommandError(f"{name}: {message or 'no message'}")


def _wire_filter(f: AclBindingFilter) -> dict[str, Any]:
    return {"resource_type_filter": int(f.resource_type), "resource_name_filter": f.resource_name,
            "pattern_type_filter": int(f.pattern_type), "principal_filter": f.principal, "host_filter": f.host,
            "operation": int(f.operation), "permission_type": int(f.permission_type)}  # fmt: skip
