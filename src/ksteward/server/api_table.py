"""Which APIs each kind of listener serves, at which versions.

ApiVersions advertises exactly these tables, so adding an API is one line here plus its handler.
Versions are the ranges kio 0.6.5 (Kafka 4.3 schemas) knows for each API.
"""

from __future__ import annotations

from ksteward.broker.acls import handle_create_acls, handle_delete_acls, handle_describe_acls
from ksteward.broker.api_versions import handle_api_versions
from ksteward.broker.cluster import handle_describe_cluster, handle_metadata
from ksteward.broker.configs import handle_alter_configs, handle_describe_configs, handle_incremental_alter_configs
from ksteward.broker.context import ApiSpec, ApiTable
from ksteward.broker.quotas import handle_alter_client_quotas, handle_describe_client_quotas
from ksteward.broker.scram import handle_alter_user_scram_credentials, handle_describe_user_scram_credentials
from ksteward.broker.topics import handle_create_partitions, handle_create_topics, handle_delete_topics

_COMMON = [
    ApiSpec(18, 0, 4, handle_api_versions),
    ApiSpec(17, 0, 1, None),  # SaslHandshake: the connection's session handles it
    ApiSpec(36, 0, 2, None),  # SaslAuthenticate: likewise
    ApiSpec(60, 0, 2, handle_describe_cluster),
    ApiSpec(50, 0, 0, handle_describe_user_scram_credentials),
    ApiSpec(51, 0, 0, handle_alter_user_scram_credentials),
    ApiSpec(29, 1, 3, handle_describe_acls),
    ApiSpec(30, 1, 3, handle_create_acls),
    ApiSpec(31, 1, 3, handle_delete_acls),
    ApiSpec(48, 0, 1, handle_describe_client_quotas),
    ApiSpec(49, 0, 1, handle_alter_client_quotas),
    ApiSpec(32, 1, 4, handle_describe_configs),
    ApiSpec(33, 0, 2, handle_alter_configs),
    ApiSpec(44, 0, 1, handle_incremental_alter_configs),
]


_TOPICS = [
    ApiSpec(19, 2, 7, handle_create_topics),
    ApiSpec(20, 1, 7, handle_delete_topics),  # v7: the KIP-934 validate_only extension
    ApiSpec(37, 0, 3, handle_create_partitions),
]


def broker_api_table() -> ApiTable:
    return ApiTable([*_COMMON, *_TOPICS, ApiSpec(3, 0, 13, handle_metadata)])


def controller_api_table() -> ApiTable:
    """KRaft controllers serve admin clients a subset (KIP-919): no Metadata."""
    return ApiTable([*_COMMON, *_TOPICS])
