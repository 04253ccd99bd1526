"""CreateAcls / DeleteAcls / DescribeAcls validation on the wire, layer by layer (docs/authorizer.md §3).

Raw requests, because real clients validate some of these before sending: each layer must answer
with its own error code and message, per element, in request order.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from harness import KstewardServer
from rawkafka import ConnectionClosed, RawConnection, connect

from ksteward.protocol.apis import ApiKey

ALLOW, DENY, READ, TOPIC, CLUSTER, LITERAL, PREFIXED = 3, 2, 3, 2, 4, 3, 4


def creation(**over: Any) -> dict[str, Any]:
    base = {
        "resource_type": TOPIC,
        "resource_name": "orders",
        "resource_pattern_type": LITERAL,
        "principal": "User:bob",
        "host": "*",
        "operation": READ,
        "permission_type": ALLOW,
    }
    return {**base, **over}


def acl_filter(**over: Any) -> dict[str, Any]:
    base = {
        "resource_type_filter": 1,
        "resource_name_filter": None,
        "pattern_type_filter": 1,
        "principal_filter": None,
        "host_filter": None,
        "operation": 1,
        "permission_type": 1,
    }
    return {**base, **over}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KstewardServer]:
    s = KstewardServer(tmp_path_factory.mktemp("aclval"), "sasl", name="aclval")
    try:
        yield s.start()
    finally:
        s.kill()


@pytest.fixture
def admin(server: KstewardServer) -> Iterator[RawConnection]:
    with connect(server.address) as conn:
        assert int(conn.sasl_plain("admin", "admin-secret").body.error_code) == 0
        yield conn


def results(conn: RawConnection, creations: list[dict[str, Any]], version: int = 3) -> list[tuple[int, str | None]]:
    body = conn.request(ApiKey.CREATE_ACLS, version, {"creations": creations}).body
    return [(int(r.error_code), r.error_message) for r in body.results]


def test_each_validation_layer_answers_per_creation_in_order(admin: RawConnection) -> None:
    got = results(
        admin,
        [
            creation(resource_type=CLUSTER, resource_name="other"),
            creation(resource_name=""),
            creation(resource_type=99),  # decodes to UNKNOWN
            creation(resource_pattern_type=99),
            creation(operation=99),
            creation(permission_type=99),
            creation(principal="bob"),
            creation(resource_name="valid-one"),
        ],
    )
    assert got == [
        (42, "The only valid name for the CLUSTER resource is kafka-cluster"),
        (42, "Invalid empty resource name"),
        (42, "Invalid resourceType UNKNOWN"),
        (42, "Invalid patternType UNKNOWN"),
        (42, "Invalid operation UNKNOWN"),
        (42, "Invalid permissionType UNKNOWN"),
        (42, "Could not parse principal from `bob`: expected principalType:principalName"),
        (0, None),
    ]


def test_any_or_match_where_a_value_is_needed_fails_the_whole_request(admin: RawConnection) -> None:
    assert results(admin, [creation(resource_name="fine"), creation(resource_pattern_type=2)]) == [
        (-1, None),
        (-1, None),
    ]


def test_a_raw_unknown_code_closes_the_connection(server: KstewardServer) -> None:
    with connect(server.address) as conn:
        conn.sasl_plain("admin", "admin-secret")
        conn.send_request(ApiKey.CREATE_ACLS, 3, {"creations": [creation(operation=0)]})
        with pytest.raises(ConnectionClosed):
            conn.read_frame()
    with connect(server.address) as conn:  # the server itself carries on
        assert int(conn.api_versions().body.error_code) == 0


def test_more_than_10000_new_acls_is_refused_whole(admin: RawConnection) -> None:
    many = [creation(resource_name=f"t{i}") for i in range(10_001)]
    got = results(admin, many)
    assert set(got) == {(44, "Unable to perform excessively large batch operation.")}
    body = admin.request(ApiKey.DESCRIBE_ACLS, 3, acl_filter(resource_name_filter="t0", pattern_type_filter=1)).body
    assert list(body.resources) == []


def test_delete_filter_validation(admin: RawConnection) -> None:
    body = admin.request(
        ApiKey.DELETE_ACLS,
        3,
        {
            "filters": [
                acl_filter(pattern_type_filter=99),
                acl_filter(operation=99),
                acl_filter(resource_name_filter="none"),
            ]
        },
    ).body
    assert [(int(r.error_code), r.error_message, len(r.matching_acls)) for r in body.filter_results] == [
        (42, "Unknown patternFilter.", 0),
        (42, "Unknown entryFilter.", 0),
        (0, None, 0),
    ]


def test_no_authorizer_means_security_disabled(server_factory) -> None:  # type: ignore[no-untyped-def]
    plain = server_factory("server").start()
    with connect(plain.address) as conn:
        describe = conn.request(ApiKey.DESCRIBE_ACLS, 2, acl_filter()).body
        assert (int(describe.error_code), describe.error_message) == (54, "No Authorizer is configured on the broker")
        assert results(conn, [creation()], version=2) == [(54, "No Authorizer is configured.")]
        delete = conn.request(ApiKey.DELETE_ACLS, 1, {"filters": [acl_filter()]}).body
        assert [int(r.error_code) for r in delete.filter_results] == [54]


@pytest.mark.parametrize("version", [1, 2, 3])
def test_every_served_version_round_trips(admin: RawConnection, version: int) -> None:
    name = f"v{version}-topic"
    assert results(admin, [creation(resource_name=name, resource_pattern_type=PREFIXED)], version) == [(0, None)]
    body = admin.request(ApiKey.DESCRIBE_ACLS, version, acl_filter(resource_name_filter=name)).body
    assert [(r.resource_name, int(r.pattern_type), len(r.acls)) for r in body.resources] == [(name, PREFIXED, 1)]
    deleted = admin.request(ApiKey.DELETE_ACLS, version, {"filters": [acl_filter(resource_name_filter=name)]}).body
    assert [len(r.matching_acls) for r in deleted.filter_results] == [1]


def test_scram_credential_apis_need_cluster_describe_and_alter(server: KstewardServer) -> None:
    import hashlib

    salted = hashlib.pbkdf2_hmac("sha256", b"pw", b"salt", 4096)
    upsert = {"name": "carol", "mechanism": 1, "iterations": 4096, "salt": b"salt", "salted_password": salted}
    with connect(server.address) as alice:
        assert int(alice.sasl_plain("alice", "alice-secret").body.error_code) == 0
        described = alice.request(50, 0, {"users": None}).body
        assert int(described.error_code) == 31 and list(described.results) == []
        altered = alice.request(51, 0, {"deletions": [], "upsertions": [upsert]}).body
        assert [(r.user, int(r.error_code)) for r in altered.results] == [("carol", 31)]
    with connect(server.address) as admin:  # the super user may do both
        assert int(admin.sasl_plain("admin", "admin-secret").body.error_code) == 0
        altered = admin.request(51, 0, {"deletions": [], "upsertions": [upsert]}).body
        assert [(r.user, int(r.error_code)) for r in altered.results] == [("carol", 0)]
        assert "carol" in {r.user for r in admin.request(50, 0, {"users": None}).body.results}
