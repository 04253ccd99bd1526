"""CreateAcls v4 / DescribeAcls v4, ksteward's atomic ACL change with a precondition (docs/acl-transactions.md),
on a real single node (SASL, StandardAuthorizer) and through a broker of a real cluster.

Real clients negotiate v3 and never see v4: confluent-kafka and kafka-python still create, describe and delete
ACLs here (``test_acls_wire.py`` runs the same server template)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from clients import Auth, confluent_admin
from harness import Cluster, KstewardServer

from ksteward.cli.admin_client import AdminClient, AdminError
from ksteward.protocol.apis import ApiKey

ADMIN = ("admin", "admin-secret")
ALICE = ("alice", "alice-secret")
EVERYTHING = {"resource_type_filter": 1, "resource_name_filter": None, "pattern_type_filter": 1,
              "principal_filter": None, "host_filter": None, "operation": 1, "permission_type": 1}  # fmt: skip
INVALID_UPDATE_VERSION = 95
CLUSTER_AUTHORIZATION_FAILED = 31
INVALID_REQUEST = 42


def acl(topic: str, principal: str = "User:alice", pattern: int = 3, operation: int = 8) -> dict[str, Any]:
    """An ALLOW ACL on a topic: pattern 3 LITERAL / 4 PREFIXED, operation 8 DESCRIBE."""
    return {"resource_type": 2, "resource_name": topic, "resource_pattern_type": pattern, "principal": principal,
            "host": "*", "operation": operation, "permission_type": 3}  # fmt: skip


def exactly(a: dict[str, Any]) -> dict[str, Any]:
    """The deletion filter that matches exactly ``a``."""
    return {"resource_type_filter": a["resource_type"], "resource_name_filter": a["resource_name"],
            "pattern_type_filter": a["resource_pattern_type"], "principal_filter": a["principal"],
            "host_filter": a["host"], "operation": a["operation"], "permission_type": a["permission_type"]}  # fmt: skip


def as_tuple(a: dict[str, Any]) -> tuple[Any, ...]:
    return (a["resource_type"], a["resource_name"], a["resource_pattern_type"], a["principal"], a["host"],
            a["operation"], a["permission_type"])  # fmt: skip


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KstewardServer]:
    server = KstewardServer(tmp_path_factory.mktemp("acltx"), "sasl", name="acltx")
    try:
        yield server.start()
    finally:
        server.kill()


@pytest.fixture
def admin(node: KstewardServer) -> Iterator[AdminClient]:
    with AdminClient(node.bootstrap, sasl_plain=ADMIN) as client:
        yield client
        # every test starts from no ACLs
        acls, _ = client.describe_acls_at(EVERYTHING)
        client.acl_transaction([], [exactly(dict(zip(ACL_KEYS, a, strict=True))) for a in acls])


ACL_KEYS = ("resource_type", "resource_name", "resource_pattern_type", "principal", "host", "operation",
            "permission_type")  # fmt: skip


def test_v4_is_advertised_where_served(admin: AdminClient) -> None:
    assert admin.max_version(ApiKey.CREATE_ACLS) == 4
    assert admin.max_version(ApiKey.DESCRIBE_ACLS) == 4
    assert admin.serves_acl_transactions()


def test_a_replace_is_one_change_with_the_precondition_of_the_read(admin: AdminClient) -> None:
    old, new = acl("orders"), acl("orders", pattern=4)
    assert admin.acl_transaction([old], [])[:2] == (1, 0)
    listed, read_at = admin.describe_acls_at(EVERYTHING)
    assert listed == [as_tuple(old)]
    created, deleted, changed_at = admin.acl_transaction([new], [exactly(old)], unchanged_since=read_at)
    assert (created, deleted) == (1, 1)
    assert changed_at > read_at
    listed, read_again = admin.describe_acls_at(EVERYTHING)
    assert listed == [as_tuple(new)]
    assert read_again >= changed_at


def test_a_second_identical_change_writes_nothing(admin: AdminClient) -> None:
    kept, gone = acl("payments"), acl("payments-old")
    admin.acl_transaction([kept, gone], [])
    _, read_at = admin.describe_acls_at(EVERYTHING)
    # kept is matched by a deletion and named again by a creation: it stays, and counts in neither
    assert admin.acl_transaction([kept], [exactly(kept), exactly(gone)], unchanged_since=read_at)[:2] == (0, 1)
    _, read_at = admin.describe_acls_at(EVERYTHING)
    created, deleted, changed_at = admin.acl_transaction([kept], [exactly(gone)], unchanged_since=read_at)
    assert (created, deleted) == (0, 0)
    assert changed_at <= read_at  # no batch was written


def test_an_acl_change_after_the_read_refuses_the_whole_change(node: KstewardServer, admin: AdminClient) -> None:
    admin.acl_transaction([acl("a")], [])
    before, read_at = admin.describe_acls_at(EVERYTHING)
    # an out-of-band change, through a real client (CreateAcls v3)
    from confluent_kafka.admin import AclBinding, AclOperation, AclPermissionType, ResourcePatternType, ResourceType

    binding = AclBinding(ResourceType.TOPIC, "oob", ResourcePatternType.LITERAL, "User:bob", "*",
                         AclOperation.READ, AclPermissionType.ALLOW)  # fmt: skip
    out_of_band = confluent_admin(node.bootstrap, Auth("PLAIN", *ADMIN))
    for future in out_of_band.create_acls([binding]).values():
        future.result(timeout=30)
    with pytest.raises(AdminError) as refused:
        admin.acl_transaction([acl("b")], [exactly(acl("a"))], unchanged_since=read_at)
    assert refused.value.code == INVALID_UPDATE_VERSION
    assert "nothing was applied" in str(refused.value)
    after, _ = admin.describe_acls_at(EVERYTHING)
    assert set(after) == {*before, (2, "oob", 3, "User:bob", "*", 3, 3)}


def test_unrelated_records_do_not_break_the_precondition(node: KstewardServer, admin: AdminClient) -> None:
    _, read_at = admin.describe_acls_at(EVERYTHING)
    from confluent_kafka.admin import NewTopic

    topics = confluent_admin(node.bootstrap, Auth("PLAIN", *ADMIN))
    for future in topics.create_topics([NewTopic(f"unrelated-{read_at}", 1, 1)]).values():
        future.result(timeout=30)  # a TopicRecord and a PartitionRecord after the read
    assert admin.acl_transaction([acl("c")], [], unchanged_since=read_at)[:2] == (1, 0)


def test_one_bad_entry_applies_nothing(admin: AdminClient) -> None:
    bad = {**acl("x"), "resource_type": 4, "resource_name": "not-kafka-cluster"}  # CLUSTER must be kafka-cluster
    with pytest.raises(AdminError) as refused:
        admin.acl_transaction([acl("good"), bad], [])
    assert refused.value.code == INVALID_REQUEST
    assert "creation 1" in str(refused.value)
    assert admin.describe_acls_at(EVERYTHING)[0] == []


def test_validate_only_writes_nothing(admin: AdminClient) -> None:
    assert admin.acl_transaction([acl("v")], [], validate_only=True)[:2] == (1, 0)
    assert admin.describe_acls_at(EVERYTHING)[0] == []


def test_it_needs_alter_on_the_cluster(node: KstewardServer, admin: AdminClient) -> None:
    with AdminClient(node.bootstrap, sasl_plain=ALICE) as alice, pytest.raises(AdminError) as refused:
        alice.acl_transaction([acl("mine", principal="User:alice", operation=2)], [])
    assert refused.value.code == CLUSTER_AUTHORIZATION_FAILED
    assert admin.describe_acls_at(EVERYTHING)[0] == []


@pytest.fixture
def cluster_of_two(tmp_path: Any) -> Iterator[Cluster]:
    made = Cluster(tmp_path, brokers=2)
    try:
        yield made.start()
    finally:
        made.kill()


def test_through_a_broker_it_is_forwarded_and_read_on_another(cluster_of_two: Cluster) -> None:
    first, second = cluster_of_two.brokers
    with AdminClient(first.bootstrap) as writer:
        assert writer.serves_acl_transactions()  # the controller serves v4, so the broker advertises it
        writer.acl_transaction([acl("t1")], [])
        listed, read_at = writer.describe_acls_at(EVERYTHING)
        assert listed == [as_tuple(acl("t1"))]
        writer.acl_transaction([acl("t2")], [exactly(acl("t1"))], unchanged_since=read_at)
        with AdminClient(second.bootstrap, min_metadata_offset=writer.metadata_offset) as reader:
            assert reader.describe_acls_at(EVERYTHING)[0] == [as_tuple(acl("t2"))]
        with pytest.raises(AdminError) as refused:  # the read is stale now
            writer.acl_transaction([acl("t3")], [], unchanged_since=read_at)
        assert refused.value.code == INVALID_UPDATE_VERSION


def test_a_large_change_through_a_broker(cluster_of_two: Cluster) -> None:
    """20,000 ACLs replaced by 20,000 others in one change: above ACL_CHANGE_ON_THE_LOOP, so the broker parses it,
    the controller computes and replays it, and the other broker replays it, each in a worker thread."""
    from ksteward.authorizer import AclBinding

    def bindings(tag: str) -> list[AclBinding]:
        return [AclBinding("TOPIC", f"{tag}-{i}", "LITERAL", f"User:u{i % 50}", "*", "READ", "ALLOW")
                for i in range(20_000)]  # fmt: skip

    first, second = cluster_of_two.brokers
    with AdminClient(first.bootstrap, timeout=120) as writer:
        assert writer.replace_acls(bindings("old"), [])[:2] == (20_000, 0)
        _, read_at = writer.describe_acls_at(EVERYTHING)
        assert writer.replace_acls(bindings("new"), bindings("old"), unchanged_since=read_at)[:2] == (20_000, 20_000)
        with AdminClient(second.bootstrap, timeout=120, min_metadata_offset=writer.metadata_offset) as reader:
            listed, _ = reader.describe_acls_at(EVERYTHING)
    assert {AclBinding(*a) for a in listed} == set(bindings("new"))
