"""ACL administration end to end: real clients, SASL principals, the StandardAuthorizer.

alice (an ordinary PLAIN user) is denied DescribeAcls until the super user admin grants her
DESCRIBE on the cluster, and denied again once the grant is deleted. ACLs survive restarts and
snapshots. Describe filters return exactly what docs/authorizer.md §3.4 lists.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from acl_clients import Acl, AclClient, ClusterAuthorizationFailed, Filter, acl_client
from clients import Auth
from harness import KstewardServer

CLIENTS = ["confluent-kafka", "kafka-python", "kafkajs"]
ADMIN = Auth("PLAIN", "admin", "admin-secret")
ALICE = Auth("PLAIN", "alice", "alice-secret")
EVERYTHING: Filter = (None, None, None, None, None, None, None)


# Each test that creates GRANT deletes it again, so tests sharing a server start from no ACLs.
GRANT: Acl = ("CLUSTER", "kafka-cluster", "LITERAL", "User:alice", "*", "DESCRIBE", "ALLOW")


@pytest.fixture(scope="module")
def acl_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KstewardServer]:
    server = KstewardServer(tmp_path_factory.mktemp("acls"), "sasl", name="acls")
    try:
        yield server.start()
    finally:
        server.kill()


# An unrelated ACL that is always there, so an allowed describe is never empty.
MARKER: Acl = ("TOPIC", "marker", "LITERAL", "User:nobody", "*", "READ", "ALLOW")


def alice_is_denied(c: AclClient, client: str) -> bool:
    try:
        listed = c.describe(ALICE, EVERYTHING)
    except ClusterAuthorizationFailed:
        return True
    if client == "confluent-kafka":
        # librdkafka drops DescribeAcls' top-level error code (rd_kafka_DescribeAclsResponse_parse
        # returns NO_ERROR whatever the broker said): a refusal reaches it as an empty listing.
        return listed == set()
    return False


@pytest.mark.parametrize("client", CLIENTS)
def test_grant_then_revoke(acl_server: KstewardServer, client: str) -> None:
    c = acl_client(client, acl_server.bootstrap)
    c.create(ADMIN, [MARKER])
    assert alice_is_denied(c, client)
    c.create(ADMIN, [GRANT])
    assert c.describe(ALICE, EVERYTHING) == {MARKER, GRANT}
    assert c.delete(ADMIN, [GRANT]) == [{GRANT}]
    assert alice_is_denied(c, client)


@pytest.mark.parametrize("client", CLIENTS)
def test_non_super_user_cannot_create_or_delete(acl_server: KstewardServer, client: str) -> None:
    c = acl_client(client, acl_server.bootstrap)
    acl: Acl = ("TOPIC", "orders", "LITERAL", "User:alice", "*", "READ", "ALLOW")
    with pytest.raises(ClusterAuthorizationFailed):
        c.create(ALICE, [acl])
    with pytest.raises(ClusterAuthorizationFailed):
        c.delete(ALICE, [acl])
    assert acl not in c.describe(ADMIN, EVERYTHING)


# The example set of docs/authorizer.md §3.4.
A0: Acl = ("TOPIC", "foo-1", "LITERAL", "User:alice", "*", "READ", "ALLOW")
A1: Acl = ("TOPIC", "foo-1", "LITERAL", "User:alice", "192.168.0.1", "WRITE", "ALLOW")
A2: Acl = ("TOPIC", "bar-1", "LITERAL", "User:alice", "*", "DESCRIBE", "ALLOW")
A3: Acl = ("TOPIC", "bar-", "PREFIXED", "User:*", "*", "READ", "ALLOW")
A4: Acl = ("TOPIC", "*", "LITERAL", "User:bob", "*", "READ", "DENY")
A5: Acl = ("GROUP", "bar-1", "LITERAL", "User:alice", "*", "ALL", "ALLOW")
A6: Acl = ("TOPIC", "b", "PREFIXED", "User:carol", "*", "ALL", "ALLOW")
EXAMPLES = [A0, A1, A2, A3, A4, A5, A6]

FILTERS: list[tuple[str, Filter, set[Acl]]] = [
    ("match bar-1", (None, "bar-1", "MATCH", None, None, None, None), {A2, A3, A4, A5, A6}),
    ("any bar-1", (None, "bar-1", "ANY", None, None, None, None), {A2, A5}),
    ("topic * match", ("TOPIC", "*", "MATCH", None, None, None, None), {A4}),
    ("principal User:*", (None, None, None, "User:*", None, None, None), {A3}),
    ("operation READ", (None, None, None, None, None, "READ", None), {A0, A3, A4}),
    ("prefixed", (None, None, "PREFIXED", None, None, None, None), {A3, A6}),
]


@pytest.fixture(scope="module")
def example_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KstewardServer]:
    server = KstewardServer(tmp_path_factory.mktemp("acl-examples"), "sasl", name="acl-examples")
    try:
        server.start()
        acl_client("kafka-python", server.bootstrap).create(ADMIN, EXAMPLES)
        yield server
    finally:
        server.kill()


@pytest.mark.parametrize("client", CLIENTS)
@pytest.mark.parametrize(("what", "acl_filter", "expected"), FILTERS, ids=[f[0] for f in FILTERS])
def test_describe_filters_match_the_spec(
    example_server: KstewardServer, client: str, what: str, acl_filter: Filter, expected: set[Acl]
) -> None:
    assert acl_client(client, example_server.bootstrap).describe(ADMIN, acl_filter) == expected


def test_a_duplicate_creation_succeeds_and_adds_nothing(example_server: KstewardServer) -> None:
    c = acl_client("kafka-python", example_server.bootstrap)  # confluent-kafka refuses duplicates locally
    c.create(ADMIN, [A0, A0])
    assert c.describe(ADMIN, EVERYTHING) == set(EXAMPLES)


def test_overlapping_delete_filters_each_report_the_acl(server_factory) -> None:  # type: ignore[no-untyped-def]
    server = server_factory("sasl").start()
    c = acl_client("kafka-python", server.bootstrap)
    c.create(ADMIN, EXAMPLES)
    by_name: Filter = ("TOPIC", "foo-1", "LITERAL", None, None, None, None)
    by_op: Filter = (None, None, None, None, None, "READ", None)
    assert c.delete(ADMIN, [by_name, by_op]) == [{A0, A1}, {A0, A3, A4}]
    assert c.describe(ADMIN, EVERYTHING) == {A2, A5, A6}


@pytest.mark.parametrize("how", ["sigterm", "kill -9"])
def test_acls_survive_restart_and_snapshot(server_factory, how: str) -> None:  # type: ignore[no-untyped-def]
    server = server_factory("sasl").start()
    c = acl_client("confluent-kafka", server.bootstrap)
    c.create(ADMIN, EXAMPLES)
    c.delete(ADMIN, [A1])
    if how == "sigterm":
        server.restart()  # a clean stop writes a snapshot; the restart loads it
        assert list((server.data_dir / "__cluster_metadata-0").glob("*.checkpoint"))
    else:
        server.restart(hard=True)  # the log alone, replayed
    assert c.describe(ADMIN, EVERYTHING) == set(EXAMPLES) - {A1}
    # Authorization follows the restored ACLs: alice has no grant yet, then one that survives.
    assert alice_is_denied(c, "confluent-kafka")
    c.create(ADMIN, [GRANT])
    server.restart()
    assert GRANT in c.describe(ALICE, EVERYTHING)
