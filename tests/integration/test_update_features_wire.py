"""Features (KIP-584) through kafka-python's ``describe_features`` / ``update_features`` (the only client of the four
with calls for them; ``kafka-features.sh describe`` reads the same ApiVersions fields) and the raw wire:
UpdateFeatures v0-v2, validate-only, Kafka's upgrade and downgrade errors, ALTER on the cluster, the finalized
features and their epoch in ApiVersions, and on a cluster a broker forwarding UpdateFeatures to the controller."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from acl_clients import acl_client
from clients import Auth, kafka_python_admin
from harness import Cluster, KstewardServer, wait_for
from rawkafka import RawConnection, connect

from ksteward.protocol.apis import ApiKey

ADMIN = Auth("PLAIN", "admin", "admin-secret")
ALICE = Auth("PLAIN", "alice", "alice-secret")
CLUSTER_AUTHORIZATION_FAILED, INVALID_UPDATE_VERSION = 31, 95
UPGRADE, SAFE_DOWNGRADE = 1, 2
SUPPORTED = {"metadata.version": (7, 25), "kraft.version": (0, 0), "group.version": (0, 1),
             "transaction.version": (0, 2)}  # fmt: skip


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KstewardServer]:
    s = KstewardServer(tmp_path_factory.mktemp("features"), "sasl", name="features")
    try:
        yield s.start()
    finally:
        s.kill()


def login(address: tuple[str, int], auth: Auth | None) -> RawConnection:
    conn = connect(address)
    if auth is not None:
        assert int(conn.sasl_plain(auth.username, auth.password).body.error_code) == 0
    return conn


def update(conn: RawConnection, version: int, updates: list[tuple[str, int, int]], validate_only: bool = False) -> Any:
    flag = {"allow_downgrade": False} if version == 0 else {}  # v0 has AllowDowngrade, v1+ UpgradeType
    body: dict[str, Any] = {
        "timeout": timedelta(seconds=10),
        "feature_updates": [
            {"feature": name, "max_version_level": level, **(flag or {"upgrade_type": kind})}
            for name, level, kind in updates
        ],
    }
    if version >= 1:
        body["validate_only"] = validate_only
    return conn.request(ApiKey.UPDATE_FEATURES, version, body).body


def finalized(conn: RawConnection, version: int = 4) -> tuple[dict[str, int], int]:
    body = conn.api_versions(version).body
    levels = {f.name: int(f.max_version_level) for f in body.finalized_features}
    assert all(int(f.min_version_level) == int(f.max_version_level) for f in body.finalized_features)
    return levels, int(body.finalized_features_epoch)


def test_kafka_python_describes_and_updates_features(server: KstewardServer) -> None:
    admin = kafka_python_admin(server.bootstrap, ADMIN)
    try:
        fresh = admin.describe_features()
        # A new log's levels, as Kafka 4.0's kafka-storage format finalizes them.
        assert [fresh[name].get("finalized") for name in SUPPORTED] == [(25, 25), None, (1, 1), (2, 2)]
        assert admin.update_features({"group.version": ("SAFE_DOWNGRADE", 0),
                                      "transaction.version": ("SAFE_DOWNGRADE", 0)}) == {
            "group.version": "OK", "transaction.version": "OK"}  # fmt: skip
        before = admin.describe_features()
        assert before["metadata.version"]["finalized"] == (25, 25)
        assert {name: f["supported"] for name, f in before.items()} == SUPPORTED
        assert "finalized" not in before["group.version"]  # level 0: not finalized
        epoch = before["metadata.version"]["finalized_epoch"]
        assert admin.update_features({"group.version": 1}, validate_only=True) == {"group.version": "OK"}
        assert "finalized" not in admin.describe_features()["group.version"]
        assert admin.update_features({"group.version": 1, "transaction.version": 2}) == {
            "group.version": "OK",
            "transaction.version": "OK",
        }
        after = admin.describe_features()
        assert after["group.version"]["finalized"] == (1, 1) and after["transaction.version"]["finalized"] == (2, 2)
        assert after["group.version"]["finalized_epoch"] > epoch
        with pytest.raises(Exception, match="downgrade"):
            admin.update_features({"group.version": 0})
        assert admin.update_features({"transaction.version": ("SAFE_DOWNGRADE", 0)}) == {"transaction.version": "OK"}
        assert "finalized" not in admin.describe_features()["transaction.version"]
    finally:
        admin.close()


def test_each_version_of_the_response(server: KstewardServer) -> None:
    with login(server.address, ADMIN) as conn:
        ok_v0 = update(conn, 0, [("metadata.version", 25, UPGRADE)])
        assert (int(ok_v0.error_code), ok_v0.error_message) == (0, None)
        assert [(r.feature, int(r.error_code)) for r in ok_v0.results] == [("metadata.version", 0)]
        ok_v2 = update(conn, 2, [("metadata.version", 25, UPGRADE)], validate_only=True)
        assert (int(ok_v2.error_code), getattr(ok_v2, "results", ())) == (0, ())
        refused = update(conn, 1, [("group.version", 1, UPGRADE), ("metadata.version", 22, SAFE_DOWNGRADE)])
        assert int(refused.error_code) == INVALID_UPDATE_VERSION and list(refused.results) == []
        assert refused.error_message == (
            "The update failed for all features since the following feature had an error: Invalid metadata.version "
            "22. Refusing to perform the requested downgrade because it might delete metadata information."
        )
        unknown = update(conn, 2, [("no.such.feature", 1, UPGRADE)])
        assert int(unknown.error_code) == INVALID_UPDATE_VERSION
        assert unknown.error_message.endswith("Local controller 1 does not support this feature.")
        # ApiVersions v3 leaves out the supported features whose minimum is 0 (KAFKA-17492); v4 lists them all
        v3 = {f.name for f in conn.api_versions(3).body.supported_features}
        v4 = {f.name for f in conn.api_versions(4).body.supported_features}
    assert v3 == {"metadata.version"} and v4 == set(SUPPORTED)


def test_alter_on_the_cluster_is_required(server: KstewardServer) -> None:
    with login(server.address, ALICE) as conn:
        denied = update(conn, 1, [("group.version", 1, UPGRADE)])
        assert (int(denied.error_code), denied.error_message, list(denied.results)) == (
            CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed.", [])  # fmt: skip
        levels, _ = finalized(conn)  # ApiVersions needs no authorization
        assert levels["metadata.version"] == 25
    grant = ("CLUSTER", "kafka-cluster", "LITERAL", "User:alice", "*", "ALTER", "ALLOW")
    acl_client("kafka-python", server.bootstrap).create(ADMIN, [grant])
    try:
        with login(server.address, ALICE) as conn:
            assert int(update(conn, 2, [("metadata.version", 25, UPGRADE)], validate_only=True).error_code) == 0
    finally:
        acl_client("kafka-python", server.bootstrap).delete(ADMIN, [grant])


def test_the_controller_listener_serves_it(server: KstewardServer) -> None:
    with login((server.address[0], server.controller_port), None) as conn:
        versions = {int(k.api_key): (int(k.min_version), int(k.max_version)) for k in conn.api_versions().body.api_keys}
        assert versions[ApiKey.UPDATE_FEATURES] == (0, 2)
        # the controller listener is PLAINTEXT (ANONYMOUS), which has no ALTER on this SASL server
        assert int(update(conn, 2, [("metadata.version", 25, UPGRADE)]).error_code) == CLUSTER_AUTHORIZATION_FAILED


def test_a_broker_forwards_it_and_every_node_finalizes_it(cluster: Cluster) -> None:
    first, second = cluster.brokers
    with connect(first.address) as conn:
        versions = {int(k.api_key): (int(k.min_version), int(k.max_version)) for k in conn.api_versions().body.api_keys}
        assert versions[ApiKey.UPDATE_FEATURES] == (0, 2)

    def group_version(address: tuple[str, int]) -> int | None:
        with connect(address) as conn:
            return finalized(conn)[0].get("group.version")

    admin = kafka_python_admin(first.bootstrap, Auth())
    try:
        # A new log finalizes group.version 1: take it down first, then up again, each through a broker.
        assert admin.update_features({"group.version": ("SAFE_DOWNGRADE", 0)}) == {"group.version": "OK"}
        for node in (second, first):
            wait_for(lambda n=node: group_version(n.address) is None, 15, f"group.version 0 on {node}")
        assert admin.update_features({"group.version": 1}) == {"group.version": "OK"}
    finally:
        admin.close()
    for node in (second, first):
        wait_for(lambda n=node: group_version(n.address) == 1, 15, f"group.version on {node}")
    with connect(cluster.controller.address) as conn:
        levels, epoch = finalized(conn)
    assert levels == {"metadata.version": 25, "group.version": 1, "transaction.version": 2} and epoch > 0
    with connect(second.address) as conn:  # a downgrade without the downgrade type, through the other broker
        refused = update(conn, 2, [("group.version", 0, UPGRADE)])
    assert int(refused.error_code) == INVALID_UPDATE_VERSION
