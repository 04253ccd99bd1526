"""The server's policy verdicts on a plan, through validate_only wherever Kafka's API has it.

- topic creations: CreateTopics ``validate_only`` (KIP-108; the CreateTopicPolicy sees the configs too);
- partition increases: CreatePartitions ``validate_only`` (KIP-195);
- topic config changes: IncrementalAlterConfigs ``validate_only`` (KIP-339; AlterConfigPolicy);
- topic deletions: DeleteTopics v7 ``validate_only``, ksteward's extension (KIP-934's DeleteTopicPolicy);
  on a server without v7 the verdict is "not checked";
- client quotas: AlterClientQuotas ``validate_only`` (KIP-546), through ksteward's own client.

ACLs and SCRAM credentials have no validate_only in Kafka's protocol (CreateAcls, DeleteAcls,
AlterUserScramCredentials), so they get no verdict here; the lockout guard and the what-if cover ACLs.
Nothing here changes anything on the cluster.
"""

from __future__ import annotations

from typing import Any

from ksteward.cli.admin_common import Connection, describe_kafka_error
from ksteward.state.model import Action, Plan, PolicyVerdict

TIMEOUT = 30.0


def policy_verdicts(conn: Connection, plan: Plan) -> list[PolicyVerdict]:
    from ksteward.cli.configs_backend import _confluent

    admin = _confluent(conn)
    out = _create_topics(admin, plan)
    out += _create_partitions(admin, plan)
    out += _alter_configs(admin, plan)
    out += _delete_topics(conn, plan)
    out += _quotas(conn, plan)
    return out


def _verdicts(futures: dict[Any, Any], api: str, name_of: Any) -> list[PolicyVerdict]:
    from confluent_kafka import KafkaException

    out = []
    for key, future in futures.items():
        name = name_of(key)
        try:
            future.result(TIMEOUT + 5)
            out.append(PolicyVerdict(name, api))
        except KafkaException as exc:
            error, _, message = describe_kafka_error(exc).partition(": ")
            out.append(PolicyVerdict(name, api, error, message or None))
    return sorted(out, key=lambda v: v.resource)


def _create_topics(admin: Any, plan: Plan) -> list[PolicyVerdict]:
    from confluent_kafka.admin import NewTopic

    new = [NewTopic(t.name, t.partitions_after or -1, -1 if t.replication_factor is None else t.replication_factor,
                    config=dict(t.configs_set))
           for t in plan.topics if t.action is Action.CREATE]  # fmt: skip
    if not new:
        return []
    futures = admin.create_topics(new, validate_only=True, request_timeout=TIMEOUT, operation_timeout=TIMEOUT)
    return _verdicts(futures, "CreateTopics", lambda k: f"topic {k}")


def _create_partitions(admin: Any, plan: Plan) -> list[PolicyVerdict]:
    from confluent_kafka.admin import NewPartitions

    grow = [NewPartitions(t.name, t.partitions_after) for t in plan.topics
            if t.action is Action.UPDATE and t.partitions_after is not None]  # fmt: skip
    if not grow:
        return []
    futures = admin.create_partitions(grow, validate_only=True, request_timeout=TIMEOUT, operation_timeout=TIMEOUT)
    return _verdicts(futures, "CreatePartitions", lambda k: f"topic {k}")


def _alter_configs(admin: Any, plan: Plan) -> list[PolicyVerdict]:
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

    resources = []
    for t in plan.topics:
        if t.action is not Action.UPDATE or not (t.configs_set or t.configs_deleted):
            continue
        entries = [ConfigEntry(k, v, incremental_operation=AlterConfigOpType.SET) for k, v in t.configs_set.items()]
        entries += [ConfigEntry(k, None, incremental_operation=AlterConfigOpType.DELETE) for k in t.configs_deleted]
        resources.append(ConfigResource(ResourceType.TOPIC, t.name, incremental_configs=entries))
    if not resources:
        return []
    futures = admin.incremental_alter_configs(resources, validate_only=True, request_timeout=TIMEOUT)
    return _verdicts(futures, "IncrementalAlterConfigs", lambda k: f"topic {k.name}")


def _delete_topics(conn: Connection, plan: Plan) -> list[PolicyVerdict]:
    from ksteward.cli.admin_client import AdminError
    from ksteward.cli.admin_common import UsageError, ksteward_admin
    from ksteward.protocol.apis import ApiKey

    names = [t.name for t in plan.topics if t.action is Action.DELETE]
    if not names:
        return []
    try:
        with ksteward_admin(conn) as wire:
            if wire.max_version(ApiKey.DELETE_TOPICS) < 7:
                why = "the server has no DeleteTopics v7 validate_only (a ksteward extension)"
                return [PolicyVerdict(f"topic {n}", "DeleteTopics", None, why, checked=False) for n in names]
            body = wire.request(ApiKey.DELETE_TOPICS, {"timeout": int(TIMEOUT * 1000), "validate_only": True,
                                "topics": [{"name": n, "topic_id": None} for n in names]}, max_version=7)  # fmt: skip
    except (UsageError, AdminError, OSError) as exc:
        return [PolicyVerdict(f"topic {n}", "DeleteTopics", None, str(exc), checked=False) for n in names]
    return sorted((_wire_verdict(f"topic {r.name}", "DeleteTopics v7", int(r.error_code), r.error_message)
                   for r in body.responses), key=lambda v: v.resource)  # fmt: skip


def _wire_verdict(resource: str, api: str, code: int, message: str | None) -> PolicyVerdict:
    if code == 0:
        return PolicyVerdict(resource, api)
    from ksteward.cli.admin_client import AdminError

    return PolicyVerdict(resource, api, AdminError(code, None).name, message)


def _quotas(conn: Connection, plan: Plan) -> list[PolicyVerdict]:
    from ksteward.cli.admin_client import AdminError
    from ksteward.cli.admin_common import UsageError, ksteward_admin
    from ksteward.protocol.apis import ApiKey
    from ksteward.state.render import entity_text

    if not plan.quotas:
        return []
    entries = []
    for q in plan.quotas:
        ops = [{"key": k, "value": v, "remove": False} for k, v in q.set.items()]
        ops += [{"key": k, "value": 0.0, "remove": True} for k in q.removed]
        entries.append({"entity": [{"entity_type": t, "entity_name": n} for t, n in q.entity], "ops": ops})
    try:
        with ksteward_admin(conn) as wire:
            body = wire.request(ApiKey.ALTER_CLIENT_QUOTAS, {"entries": entries, "validate_only": True},
                                max_version=1)  # fmt: skip
    except (UsageError, AdminError, OSError) as exc:
        return [PolicyVerdict(f"quota {entity_text(q.entity)}", "AlterClientQuotas", None, str(exc), checked=False)
                for q in plan.quotas]  # fmt: skip
    out = []
    for r in body.entries:
        entity = tuple(sorted((str(e.entity_type), e.entity_name) for e in r.entity))
        out.append(_wire_verdict(f"quota {entity_text(entity)}", "AlterClientQuotas", int(r.error_code),
                                 r.error_message))  # fmt: skip
    return out
