"""The reply to a request whose handler failed unexpectedly: Kafka's ``AbstractRequest.getErrorResponse``.

Kafka answers such a request instead of dropping the connection: every entry the request named gets the
error (UNKNOWN_SERVER_ERROR, with no detail: the exception stays in the server's log), in the shape of
that API's response. :func:`error_values` gives those values for every API ksteward serves, to be passed
through ``build`` like any handler's; None for an API it does not know, and the connection is then closed
as before.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kio.schema.errors import ErrorCode

from ksteward.protocol.apis import ApiKey

__all__ = ["error_values"]

Values = dict[str, Any]


def _topics(body: Any) -> list[Values]:
    """CreateTopics and CreatePartitions: one entry per named topic."""
    return [{"name": t.name} for t in body.topics]


def _create_topics(body: Any, error: Values) -> Values:
    return {"topics": [{**t, **error, "topic_id": None, "topic_config_error_code": 0, "num_partitions": -1,
                        "replication_factor": -1, "configs": []} for t in _topics(body)]}  # fmt: skip


def _delete_topics(body: Any, error: Values) -> Values:
    if hasattr(body, "topics"):  # v6+: names or ids
        entries = [{"name": t.name, "topic_id": t.topic_id} for t in body.topics]
    else:
        entries = [{"name": name, "topic_id": None} for name in body.topic_names]
    return {"responses": [{**e, **error} for e in entries]}


def _create_partitions(body: Any, error: Values) -> Values:
    return {"results": [{**t, **error} for t in _topics(body)]}


def _configs(body: Any, error: Values) -> list[Values]:
    return [{"resource_type": r.resource_type, "resource_name": r.resource_name, **error} for r in body.resources]


def _describe_configs(body: Any, error: Values) -> Values:
    return {"results": [{**r, "configs": []} for r in _configs(body, error)]}


def _alter_configs(body: Any, error: Values) -> Values:
    return {"responses": _configs(body, error)}


def _top_level(**extra: Any) -> Callable[[Any, Values], Values]:
    def values(body: Any, error: Values) -> Values:
        return {**error, **extra}

    return values


def _create_acls(body: Any, error: Values) -> Values:
    if hasattr(body, "deletions"):  # v4, ksteward's atomic change (protocol.acl_transactions): one top-level error
        return {**error, "created": 0, "deleted": 0, "acls_changed_at": -1}
    return {"results": [dict(error) for _ in body.creations]}


def _delete_acls(body: Any, error: Values) -> Values:
    return {"filter_results": [{**error, "matching_acls": []} for _ in body.filters]}


def _alter_scram(body: Any, error: Values) -> Values:
    users = dict.fromkeys([d.name for d in body.deletions] + [u.name for u in body.upsertions])
    return {"results": [{"user": user, **error} for user in users]}


def _alter_quotas(body: Any, error: Values) -> Values:
    return {
        "entries": [
            {**error, "entity": [{"entity_type": e.entity_type, "entity_name": e.entity_name} for e in entry.entity]}
            for entry in body.entries
        ]
    }


def _elect_leaders(body: Any, error: Values) -> Values:
    results = [{"topic": t.topic, "partition_result": [{"partition_id": p, **error} for p in t.partitions]}
               for t in body.topic_partitions or ()]  # fmt: skip
    return {"replica_election_results": results, **error}


def _alter_reassignments(body: Any, error: Values) -> Values:
    responses = [{"name": t.name, "partitions": [{"partition_index": p.partition_index, **error}
                                                 for p in t.partitions]} for t in body.topics]  # fmt: skip
    return {"responses": responses, "allow_replication_factor_change": True, **error}


def _list_reassignments(body: Any, error: Values) -> Values:
    topics = [{"name": t.name, "partitions": [{"partition_index": i} for i in t.partition_indexes]}
              for t in body.topics or ()]  # fmt: skip
    return {"topics": topics, **error}


def _metadata(body: Any, error: Values) -> Values:
    topics = [
        {"error_code": error["error_code"], "name": t.name, "topic_id": getattr(t, "topic_id", None),
         "is_internal": False, "partitions": []}
        for t in (body.topics or ())
    ]  # fmt: skip
    return {"brokers": [], "cluster_id": None, "controller_id": -1, "topics": topics, **error}


def _describe_topic_partitions(body: Any, error: Values) -> Values:
    """Kafka's ``DescribeTopicPartitionsRequest.getErrorResponse``: each listed topic, with no id or partition."""
    return {"topics": [{"error_code": error["error_code"], "name": t.name, "topic_id": None, "is_internal": False,
                        "partitions": []} for t in body.topics]}  # fmt: skip


_BUILDERS: dict[int, Callable[[Any, Values], Values]] = {
    ApiKey.METADATA: _metadata,
    ApiKey.API_VERSIONS: _top_level(api_keys=[]),
    ApiKey.CREATE_TOPICS: _create_topics,
    ApiKey.DELETE_TOPICS: _delete_topics,
    ApiKey.DESCRIBE_ACLS: _top_level(resources=[]),
    ApiKey.CREATE_ACLS: _create_acls,
    ApiKey.DELETE_ACLS: _delete_acls,
    ApiKey.DESCRIBE_CONFIGS: _describe_configs,
    ApiKey.ALTER_CONFIGS: _alter_configs,
    ApiKey.CREATE_PARTITIONS: _create_partitions,
    ApiKey.ELECT_LEADERS: _elect_leaders,
    ApiKey.INCREMENTAL_ALTER_CONFIGS: _alter_configs,
    ApiKey.ALTER_PARTITION_REASSIGNMENTS: _alter_reassignments,
    ApiKey.LIST_PARTITION_REASSIGNMENTS: _list_reassignments,
    ApiKey.DESCRIBE_CLIENT_QUOTAS: _top_level(entries=None),
    ApiKey.ALTER_CLIENT_QUOTAS: _alter_quotas,
    # Kafka's getErrorResponse of each: User:ANONYMOUS and -1 timestamps for a create, 0 for renew and expire.
    ApiKey.CREATE_DELEGATION_TOKEN: _top_level(
        principal_type="User",
        principal_name="ANONYMOUS",
        token_requester_principal_type="User",
        token_requester_principal_name="ANONYMOUS",
        issue_timestamp=-1,
        expiry_timestamp=-1,
        max_timestamp=-1,
        token_id="",
        hmac=b"",
    ),
    ApiKey.RENEW_DELEGATION_TOKEN: _top_level(expiry_timestamp=0),
    ApiKey.EXPIRE_DELEGATION_TOKEN: _top_level(expiry_timestamp=0),
    ApiKey.DESCRIBE_DELEGATION_TOKEN: _top_level(tokens=[]),
    ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: _top_level(results=[]),
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS: _alter_scram,
    ApiKey.ALTER_PARTITION: _top_level(topics=[]),
    ApiKey.BROKER_REGISTRATION: _top_level(broker_epoch=-1),
    ApiKey.BROKER_HEARTBEAT: _top_level(is_caught_up=False, is_fenced=True, should_shut_down=False),
    ApiKey.UPDATE_FEATURES: _top_level(results=[]),
    ApiKey.DESCRIBE_QUORUM: _top_level(topics=[], nodes=[]),  # DescribeQuorumRequest.getErrorResponse
    ApiKey.ADD_RAFT_VOTER: _top_level(),  # AddRaftVoterRequest.getErrorResponse: the code and its message
    ApiKey.REMOVE_RAFT_VOTER: _top_level(),
    ApiKey.DESCRIBE_CLUSTER: _top_level(
        endpoint_type=1, cluster_id="", controller_id=-1, brokers=[], cluster_authorized_operations=0
    ),
    ApiKey.LIST_CONFIG_RESOURCES: _top_level(config_resources=[]),
    ApiKey.DESCRIBE_TOPIC_PARTITIONS: _describe_topic_partitions,
}


def error_values(api_key: int, body: Any, code: ErrorCode = ErrorCode.unknown_server_error) -> Values | None:
    """The response values that give every entry of ``body`` (a decoded request) the error ``code``."""
    builder = _BUILDERS.get(api_key)
    if builder is None:
        return None
    return builder(body, {"error_code": code, "error_message": None})
