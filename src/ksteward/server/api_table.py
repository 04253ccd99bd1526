"""Which APIs each kind of listener serves, at which versions.

ApiVersions advertises exactly these tables, so adding an API is one line here plus its handler.
Versions are the ranges kio 0.6.5 (Kafka 4.3 schemas) knows for each API.
"""

from __future__ import annotations

from ksteward.broker.acl_transactions import handle_create_acls_or_transaction
from ksteward.broker.acls import handle_delete_acls, handle_describe_acls
from ksteward.broker.api_versions import handle_api_versions
from ksteward.broker.cluster import handle_describe_cluster, handle_metadata
from ksteward.broker.config_resources import handle_list_config_resources
from ksteward.broker.configs import (
    handle_alter_configs,
    handle_controller_alter_configs,
    handle_controller_incremental_alter_configs,
    handle_describe_configs,
    handle_incremental_alter_configs,
)
from ksteward.broker.context import ApiSpec, ApiTable
from ksteward.broker.delegation_tokens import (
    handle_controller_create_delegation_token,
    handle_controller_expire_delegation_token,
    handle_controller_renew_delegation_token,
    handle_create_delegation_token,
    handle_describe_delegation_token,
)
from ksteward.broker.envelope import handle_envelope
from ksteward.broker.features import handle_update_features
from ksteward.broker.quotas import handle_alter_client_quotas, handle_describe_client_quotas
from ksteward.broker.reassignment import (
    handle_alter_partition,
    handle_alter_partition_reassignments,
    handle_elect_leaders,
    handle_list_partition_reassignments,
)
from ksteward.broker.registration import handle_broker_heartbeat, handle_broker_registration
from ksteward.broker.scram import handle_alter_user_scram_credentials, handle_describe_user_scram_credentials
from ksteward.broker.topic_partitions import handle_describe_topic_partitions
from ksteward.broker.topics import handle_create_partitions, handle_create_topics, handle_delete_topics
from ksteward.protocol.apis import ApiKey
from ksteward.server.describe_cluster import handle_controller_describe_cluster
from ksteward.server.describe_quorum import handle_describe_quorum
from ksteward.server.quorum_rpcs import handle_begin_quorum_epoch, handle_end_quorum_epoch, handle_vote
from ksteward.server.raft_service import handle_fetch, handle_fetch_snapshot
from ksteward.server.voter_changes import handle_add_raft_voter, handle_remove_raft_voter

_COMMON = [
    ApiSpec(ApiKey.API_VERSIONS, 0, 4, handle_api_versions),
    ApiSpec(ApiKey.SASL_HANDSHAKE, 0, 1, None),  # answered by protocol.connection.ServerConnection
    ApiSpec(ApiKey.SASL_AUTHENTICATE, 0, 2, None),  # likewise
    ApiSpec(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, 0, 0, handle_describe_user_scram_credentials),
    ApiSpec(ApiKey.ALTER_USER_SCRAM_CREDENTIALS, 0, 0, handle_alter_user_scram_credentials),
    # v4 of both: ksteward's atomic ACL change with a precondition (protocol.acl_transactions)
    ApiSpec(ApiKey.DESCRIBE_ACLS, 1, 4, handle_describe_acls),
    ApiSpec(ApiKey.CREATE_ACLS, 1, 4, handle_create_acls_or_transaction),
    ApiSpec(ApiKey.DELETE_ACLS, 1, 3, handle_delete_acls),
    ApiSpec(ApiKey.DESCRIBE_CLIENT_QUOTAS, 0, 1, handle_describe_client_quotas),
    ApiSpec(ApiKey.ALTER_CLIENT_QUOTAS, 0, 1, handle_alter_client_quotas),
    ApiSpec(ApiKey.DESCRIBE_CONFIGS, 1, 4, handle_describe_configs),
    ApiSpec(ApiKey.UPDATE_FEATURES, 0, 2, handle_update_features),  # brokers forward it (KIP-590)
    # KIP-595/KIP-836/KIP-853: served by the controllers; a broker forwards it (KafkaApis forwardToControllerOrFail)
    ApiSpec(ApiKey.DESCRIBE_QUORUM, 0, 2, handle_describe_quorum),
    # KIP-853 on a static quorum (kraft.version 0): every voter change is refused as Kafka refuses it there
    ApiSpec(ApiKey.ADD_RAFT_VOTER, 0, 1, handle_add_raft_voter),
    ApiSpec(ApiKey.REMOVE_RAFT_VOTER, 0, 0, handle_remove_raft_voter),
]

# The config alters: a broker preprocesses them before the controller's part (KafkaApis); a controller listener
# runs only the controller's part (ControllerApis). docs/forwarding.md, "AlterConfigs and IncrementalAlterConfigs".
_BROKER_CONFIG_ALTERS = [
    ApiSpec(ApiKey.ALTER_CONFIGS, 0, 2, handle_alter_configs),
    ApiSpec(ApiKey.INCREMENTAL_ALTER_CONFIGS, 0, 1, handle_incremental_alter_configs),
]
_CONTROLLER_CONFIG_ALTERS = [
    ApiSpec(ApiKey.ALTER_CONFIGS, 0, 2, handle_controller_alter_configs),
    ApiSpec(ApiKey.INCREMENTAL_ALTER_CONFIGS, 0, 1, handle_controller_incremental_alter_configs),
]


_TOPICS = [
    ApiSpec(ApiKey.CREATE_TOPICS, 2, 7, handle_create_topics),
    ApiSpec(ApiKey.DELETE_TOPICS, 1, 7, handle_delete_topics),  # v7: the KIP-934 validate_only extension
    ApiSpec(ApiKey.CREATE_PARTITIONS, 0, 3, handle_create_partitions),
    ApiSpec(ApiKey.ELECT_LEADERS, 0, 2, handle_elect_leaders),
    ApiSpec(ApiKey.ALTER_PARTITION_REASSIGNMENTS, 0, 1, handle_alter_partition_reassignments),
    ApiSpec(ApiKey.LIST_PARTITION_REASSIGNMENTS, 0, 0, handle_list_partition_reassignments),
]

# Delegation tokens (KIP-48), in Kafka 4.x's ranges (v0 removed by KIP-896). A broker checks a mutation before
# the controller runs it; Describe is a broker's only (docs/delegation-tokens.md).
_BROKER_TOKENS = [
    ApiSpec(ApiKey.CREATE_DELEGATION_TOKEN, 1, 3, handle_create_delegation_token),
    ApiSpec(ApiKey.RENEW_DELEGATION_TOKEN, 1, 2, handle_controller_renew_delegation_token),
    ApiSpec(ApiKey.EXPIRE_DELEGATION_TOKEN, 1, 2, handle_controller_expire_delegation_token),
    ApiSpec(ApiKey.DESCRIBE_DELEGATION_TOKEN, 1, 3, handle_describe_delegation_token),
]
_CONTROLLER_TOKENS = [
    ApiSpec(ApiKey.CREATE_DELEGATION_TOKEN, 1, 3, handle_controller_create_delegation_token),
    ApiSpec(ApiKey.RENEW_DELEGATION_TOKEN, 1, 2, handle_controller_renew_delegation_token),
    ApiSpec(ApiKey.EXPIRE_DELEGATION_TOKEN, 1, 2, handle_controller_expire_delegation_token),
]

_MEMBERSHIP = [
    ApiSpec(
        ApiKey.ALTER_PARTITION, 2, 3, handle_alter_partition
    ),  # a partition leader's ISR change (docs/reassignment.md)
    ApiSpec(ApiKey.BROKER_REGISTRATION, 0, 4, handle_broker_registration),
    ApiSpec(ApiKey.BROKER_HEARTBEAT, 0, 2, handle_broker_heartbeat),
]


# Brokers only: these APIs' listeners are ["broker"] in Kafka's message schemas (ApiMessageType), so a controller
# listener neither serves nor advertises them.
_BROKER_ONLY = [
    ApiSpec(ApiKey.METADATA, 0, 13, handle_metadata),
    ApiSpec(ApiKey.LIST_CONFIG_RESOURCES, 0, 1, handle_list_config_resources),
    ApiSpec(ApiKey.DESCRIBE_TOPIC_PARTITIONS, 0, 0, handle_describe_topic_partitions),
]


def broker_api_table() -> ApiTable:
    describe_cluster = ApiSpec(ApiKey.DESCRIBE_CLUSTER, 0, 2, handle_describe_cluster)  # the brokers (KIP-919)
    return ApiTable([*_COMMON, describe_cluster, *_BROKER_CONFIG_ALTERS, *_TOPICS, *_BROKER_TOKENS, *_BROKER_ONLY])


# KRaft replication of __cluster_metadata (KIP-595, KIP-630): controller listener only, as in Kafka. Fetch
# v4-18 is kio's range; before v13 a Fetch names no topic id and gets INVALID_REQUEST (docs/raft.md).
_RAFT = [
    ApiSpec(ApiKey.FETCH, 4, 18, handle_fetch),
    ApiSpec(ApiKey.FETCH_SNAPSHOT, 0, 1, handle_fetch_snapshot),
    # Elections among several controller voters (KIP-595, KIP-996 pre-vote in Vote v2; docs/cluster.md, "Quorum")
    ApiSpec(ApiKey.VOTE, 0, 2, handle_vote),
    ApiSpec(ApiKey.BEGIN_QUORUM_EPOCH, 0, 1, handle_begin_quorum_epoch),
    ApiSpec(ApiKey.END_QUORUM_EPOCH, 0, 1, handle_end_quorum_epoch),
]


def controller_api_table() -> ApiTable:
    """KRaft controllers serve admin clients a subset (KIP-919): no Metadata. Brokers register, heartbeat,
    fetch the metadata log and forward requests in an Envelope (KIP-590) here only: a client listener never
    accepts those (Kafka's ControllerApis)."""
    describe_cluster = ApiSpec(ApiKey.DESCRIBE_CLUSTER, 0, 2, handle_controller_describe_cluster)  # the controllers
    specs = [*_COMMON, describe_cluster, *_CONTROLLER_CONFIG_ALTERS, *_TOPICS, *_CONTROLLER_TOKENS, *_MEMBERSHIP]
    specs += _RAFT
    return ApiTable([*specs, ApiSpec(ApiKey.ENVELOPE, 0, 0, handle_envelope)])
