"""CreateAcls / DescribeAcls / DeleteAcls through three real clients, behind one small interface.

An ACL is a 7-tuple of names: (resource type, resource name, pattern type, principal, host,
operation, permission), e.g. ("TOPIC", "orders", "LITERAL", "User:bob", "*", "READ", "ALLOW").
A filter is the same tuple where None means "any" (and pattern type may be ANY or MATCH).
"""

from __future__ import annotations

from typing import Any, Protocol

from clients import Auth, confluent_admin, kafka_python_admin, kafkajs, kafkajs_auth

Acl = tuple[str, str, str, str, str, str, str]
Filter = tuple[str | None, str | None, str | None, str | None, str | None, str | None, str | None]

RESOURCE = {"ANY": 1, "TOPIC": 2, "GROUP": 3, "CLUSTER": 4, "TRANSACTIONAL_ID": 5, "DELEGATION_TOKEN": 6, "USER": 7}
PATTERN = {"ANY": 1, "MATCH": 2, "LITERAL": 3, "PREFIXED": 4}
OPERATION = {
    "ANY": 1, "ALL": 2, "READ": 3, "WRITE": 4, "CREATE": 5, "DELETE": 6, "ALTER": 7, "DESCRIBE": 8,
    "CLUSTER_ACTION": 9, "DESCRIBE_CONFIGS": 10, "ALTER_CONFIGS": 11, "IDEMPOTENT_WRITE": 12,
}  # fmt: skip
PERMISSION = {"ANY": 1, "DENY": 2, "ALLOW": 3}
_NAMES = [{v: k for k, v in table.items()} for table in (RESOURCE, PATTERN, OPERATION, PERMISSION)]


class ClusterAuthorizationFailed(Exception):
    pass


class AclClient(Protocol):
    def create(self, auth: Auth, acls: list[Acl]) -> None: ...
    def describe(self, auth: Auth, acl_filter: Filter) -> set[Acl]: ...
    def delete(self, auth: Auth, filters: list[Filter]) -> list[set[Acl]]: ...


def _any(value: str | None) -> str:
    return "ANY" if value is None else value


# confluent-kafka names resource type 4 BROKER; Kafka and the other clients call it CLUSTER.
def _to_confluent(resource_type: str) -> str:
    return "BROKER" if resource_type == "CLUSTER" else resource_type


def _from_confluent(resource_type: str) -> str:
    return "CLUSTER" if resource_type == "BROKER" else resource_type


class Confluent:
    def _admin(self, bootstrap: str, auth: Auth) -> Any:
        return confluent_admin(bootstrap, auth)

    def __init__(self, bootstrap: str) -> None:
        self.bootstrap = bootstrap

    @staticmethod
    def _enums() -> Any:
        from confluent_kafka import admin

        return admin

    def _binding(self, acl: Acl) -> Any:
        a = self._enums()
        rt, name, pt, principal, host, op, perm = acl
        return a.AclBinding(
            a.ResourceType[_to_confluent(rt)], name, a.ResourcePatternType[pt], principal, host, a.AclOperation[op],
            a.AclPermissionType[perm],
        )  # fmt: skip

    def _filter(self, f: Filter) -> Any:
        a = self._enums()
        rt, name, pt, principal, host, op, perm = f
        return a.AclBindingFilter(
            a.ResourceType[_to_confluent(_any(rt))], name, a.ResourcePatternType[_any(pt)], principal, host,
            a.AclOperation[_any(op)], a.AclPermissionType[_any(perm)],
        )  # fmt: skip

    @staticmethod
    def _tuple(b: Any) -> Acl:
        resource_type = _from_confluent(b.restype.name)
        return (
            resource_type, b.name, b.resource_pattern_type.name, b.principal, b.host, b.operation.name,
            b.permission_type.name,
        )  # fmt: skip

    @staticmethod
    def _raise(exc: Exception) -> None:
        from confluent_kafka import KafkaError

        err = exc.args[0] if exc.args else None
        if isinstance(err, KafkaError) and err.code() == KafkaError.CLUSTER_AUTHORIZATION_FAILED:
            raise ClusterAuthorizationFailed(str(err)) from exc
        raise exc

    def create(self, auth: Auth, acls: list[Acl]) -> None:
        admin = self._admin(self.bootstrap, auth)  # must outlive its futures
        futures = admin.create_acls([self._binding(a) for a in acls], request_timeout=10)
        for future in futures.values():
            try:
                future.result()
            except Exception as exc:
                self._raise(exc)

    def describe(self, auth: Auth, acl_filter: Filter) -> set[Acl]:
        admin = self._admin(self.bootstrap, auth)
        future = admin.describe_acls(self._filter(acl_filter), request_timeout=10)
        try:
            return {self._tuple(b) for b in future.result()}
        except Exception as exc:
            self._raise(exc)
            raise

    def delete(self, auth: Auth, filters: list[Filter]) -> list[set[Acl]]:
        made = [self._filter(f) for f in filters]
        admin = self._admin(self.bootstrap, auth)
        futures = admin.delete_acls(made, request_timeout=10)
        out = []
        for f in made:
            try:
                out.append({self._tuple(b) for b in futures[f].result()})
            except Exception as exc:
                self._raise(exc)
        return out


class KafkaPython:
    def __init__(self, bootstrap: str) -> None:
        self.bootstrap = bootstrap

    def _admin(self, auth: Auth) -> Any:
        return kafka_python_admin(self.bootstrap, auth)

    @staticmethod
    def _acl(acl: Acl) -> Any:
        from kafka.admin import (
            ACL,
            ACLOperation,
            ACLPermissionType,
            ACLResourcePatternType,
            ResourcePattern,
            ResourceType,
        )

        rt, name, pt, principal, host, op, perm = acl
        pattern = ResourcePattern(ResourceType[rt], name, ACLResourcePatternType[pt])
        return ACL(principal, host, ACLOperation[op], ACLPermissionType[perm], pattern)

    @staticmethod
    def _filter(f: Filter) -> Any:
        from kafka.admin import (
            ACLFilter,
            ACLOperation,
            ACLPermissionType,
            ACLResourcePatternType,
            ResourcePatternFilter,
            ResourceType,
        )  # fmt: skip

        rt, name, pt, principal, host, op, perm = f
        pattern = ResourcePatternFilter(ResourceType[_any(rt)], name, ACLResourcePatternType[_any(pt)])
        return ACLFilter(principal, host, ACLOperation[_any(op)], ACLPermissionType[_any(perm)], pattern)

    @staticmethod
    def _tuple(acl: Any) -> Acl:
        p = acl.resource_pattern
        return (
            p.resource_type.name, p.resource_name, p.pattern_type.name, acl.principal, acl.host, acl.operation.name,
            acl.permission_type.name,
        )  # fmt: skip

    @staticmethod
    def _check(error: Any) -> None:
        name = error.__name__ if isinstance(error, type) else type(error).__name__
        if "ClusterAuthorizationFailed" in name:
            raise ClusterAuthorizationFailed(name)
        if getattr(error, "errno", 0):
            raise AssertionError(f"kafka-python ACL call failed: {error!r}")

    def create(self, auth: Auth, acls: list[Acl]) -> None:
        admin = self._admin(auth)
        try:
            result = admin.create_acls([self._acl(a) for a in acls])
        finally:
            admin.close()
        for error in result["failed"]:  # kafka-python lists the error classes of the failed creations
            self._check(error)

    def describe(self, auth: Auth, acl_filter: Filter) -> set[Acl]:
        admin = self._admin(auth)
        try:
            acls, error = admin.describe_acls(self._filter(acl_filter))
        except Exception as exc:
            self._check(exc)
            raise
        finally:
            admin.close()
        self._check(error)
        return {self._tuple(a) for a in acls}

    def delete(self, auth: Auth, filters: list[Filter]) -> list[set[Acl]]:
        admin = self._admin(auth)
        try:
            results = admin.delete_acls([self._filter(f) for f in filters])
        finally:
            admin.close()
        out = []
        for _, acls, error in results:
            self._check(error)
            out.append({self._tuple(a) for a in acls})
        return out


class KafkaJs:
    def __init__(self, bootstrap: str) -> None:
        self.bootstrap = bootstrap

    def _run(self, auth: Auth, action: str, args: dict[str, Any]) -> Any:
        job = {"brokers": [self.bootstrap], "sasl": kafkajs_auth(auth), "action": action, "args": args}
        result = kafkajs(job)
        if not result["ok"]:
            chain = str(result["error"])
            if "CLUSTER_AUTHORIZATION_FAILED" in chain or "Cluster authorization failed" in chain:
                raise ClusterAuthorizationFailed(chain)
            raise AssertionError(f"kafkajs {action} failed: {chain}")
        return result["result"]

    @staticmethod
    def _filter(f: Filter) -> dict[str, Any]:
        rt, name, pt, principal, host, op, perm = f
        out: dict[str, Any] = {
            "resourceType": RESOURCE[_any(rt)], "resourcePatternType": PATTERN[_any(pt)],
            "operation": OPERATION[_any(op)], "permissionType": PERMISSION[_any(perm)],
        }  # fmt: skip
        # kafkajs refuses null names; an absent (undefined) one is sent as null.
        for key, value in (("resourceName", name), ("principal", principal), ("host", host)):
            if value is not None:
                out[key] = value
        return out

    @staticmethod
    def _tuple(resource: dict[str, Any], acl: dict[str, Any]) -> Acl:
        return (
            _NAMES[0][resource["resourceType"]], resource["resourceName"], _NAMES[1][resource["resourcePatternType"]],
            acl["principal"], acl["host"], _NAMES[2][acl["operation"]], _NAMES[3][acl["permissionType"]],
        )  # fmt: skip

    def create(self, auth: Auth, acls: list[Acl]) -> None:
        entries = [
            {
                "resourceType": RESOURCE[rt],
                "resourceName": name,
                "resourcePatternType": PATTERN[pt],
                "principal": principal,
                "host": host,
                "operation": OPERATION[op],
                "permissionType": PERMISSION[perm],
            }
            for rt, name, pt, principal, host, op, perm in acls
        ]
        self._run(auth, "createAcls", {"acl": entries})

    def describe(self, auth: Auth, acl_filter: Filter) -> set[Acl]:
        result = self._run(auth, "describeAcls", self._filter(acl_filter))
        return {self._tuple(r, a) for r in result["resources"] for a in r["acls"]}

    def delete(self, auth: Auth, filters: list[Filter]) -> list[set[Acl]]:
        result = self._run(auth, "deleteAcls", {"filters": [self._filter(f) for f in filters]})
        return [
            {
                (
                    _NAMES[0][m["resourceType"]],
                    m["resourceName"],
                    _NAMES[1][m["resourcePatternType"]],
                    m["principal"],
                    m["host"],
                    _NAMES[2][m["operation"]],
                    _NAMES[3][m["permissionType"]],
                )
                for m in fr["matchingAcls"]
            }
            for fr in result["filterResponses"]
        ]


def acl_client(name: str, bootstrap: str) -> AclClient:
    return {"confluent-kafka": Confluent, "kafka-python": KafkaPython, "kafkajs": KafkaJs}[name](bootstrap)
