"""The four real clients connect, authenticate and read cluster metadata; SCRAM credentials are managed.

Clients: confluent-kafka (librdkafka), kafka-python, aiokafka, kafkajs. Mechanisms: PLAINTEXT (the
shipped ``config/server.properties``) and SASL PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 (the shipped
``config/sasl.properties``; PLAIN users from its JAAS line, SCRAM users created here through
AlterUserScramCredentials by the PLAIN super user).
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Iterator
from typing import Any

import pytest
import rawkafka
from clients import CLIENTS, MECHANISMS, Auth, ClientRefused, ClusterView, cluster_views, kafka_python_admin
from harness import HOST, KstewardServer
from kio.schema.errors import ErrorCode

from ksteward.protocol.apis import ApiKey

ADMIN = Auth("PLAIN", "admin", "admin-secret")
SCRAM_USER, SCRAM_PASSWORD = "scram-user", "scram-secret"
ONLY_256_USER, ONLY_256_PASSWORD = "only-256", "only-256-secret"
# Iterations chosen per mechanism so Describe can be checked against what was set.
ITERATIONS = {"SCRAM-SHA-256": 4096, "SCRAM-SHA-512": 8192}
MECHANISM_CODES = {"SCRAM-SHA-256": 1, "SCRAM-SHA-512": 2}


def auth_for(mechanism: str, password: str | None = None) -> Auth:
    if mechanism == "PLAINTEXT":
        return Auth()
    if mechanism == "PLAIN":
        return Auth("PLAIN", "alice", password or "alice-secret")
    return Auth(mechanism, SCRAM_USER, password or SCRAM_PASSWORD)


def expected_view(server: KstewardServer) -> ClusterView:
    """What every client must see: meta.properties' cluster id, us as controller, our advertised address."""
    return ClusterView(
        cluster_id=server.cluster_id,
        controller_id=server.node_id,
        brokers=frozenset({(server.node_id, HOST, server.port)}),
    )


# --- SCRAM helpers -------------------------------------------------------------------------------


def _kp_upsert(user: str, mechanism: str, password: str, iterations: int, salt: bytes | None = None) -> Any:
    from kafka.admin import UserScramCredentialUpsertion

    return UserScramCredentialUpsertion(user, mechanism, password, iterations=iterations, salt=salt)


def _kp_delete(user: str, mechanism: str) -> Any:
    from kafka.admin import UserScramCredentialDeletion

    return UserScramCredentialDeletion(user, mechanism)


@pytest.fixture(scope="module")
def kp_admin(sasl_server: KstewardServer) -> Iterator[Any]:
    """kafka-python's admin client, logged in as the PLAIN super user."""
    admin = kafka_python_admin(sasl_server.bootstrap, ADMIN)
    try:
        yield admin
    finally:
        admin.close()


@pytest.fixture(scope="module")
def ck_admin(sasl_server: KstewardServer) -> Any:
    """confluent-kafka's admin client, logged in as the PLAIN super user (it reports error codes)."""
    from clients import confluent_admin

    return confluent_admin(sasl_server.bootstrap, ADMIN)


@pytest.fixture(scope="module")
def scram_users(kp_admin: Any) -> dict[str, Any]:
    """Create the SCRAM users once: ``scram-user`` for both mechanisms, ``only-256`` for SCRAM-SHA-256 only."""
    result = kp_admin.alter_user_scram_credentials(
        [
            _kp_upsert(SCRAM_USER, "SCRAM-SHA-256", SCRAM_PASSWORD, ITERATIONS["SCRAM-SHA-256"]),
            _kp_upsert(ONLY_256_USER, "SCRAM-SHA-256", ONLY_256_PASSWORD, 4096),
        ]
    )
    assert result == {SCRAM_USER: None, ONLY_256_USER: None}
    # A second request for the second mechanism: one user may appear only once per request.
    result = kp_admin.alter_user_scram_credentials(
        [_kp_upsert(SCRAM_USER, "SCRAM-SHA-512", SCRAM_PASSWORD, ITERATIONS["SCRAM-SHA-512"])]
    )
    assert result == {SCRAM_USER: None}
    return result


@pytest.fixture
def server_for(request: pytest.FixtureRequest) -> Any:
    def pick(mechanism: str) -> KstewardServer:
        if mechanism == "PLAINTEXT":
            return request.getfixturevalue("plaintext_server")
        request.getfixturevalue("scram_users")
        return request.getfixturevalue("sasl_server")

    return pick


# --- connecting ----------------------------------------------------------------------------------


@pytest.mark.parametrize("mechanism", MECHANISMS)
@pytest.mark.parametrize("client", CLIENTS)
def test_client_connects_and_reads_metadata(client: str, mechanism: str, server_for: Any) -> None:
    server = server_for(mechanism)
    views = cluster_views(client, server.bootstrap, auth_for(mechanism))
    expected = expected_view(server)
    assert views, "the client reported nothing"
    for source, view in views.items():
        assert view == expected, f"{client} over {mechanism}, from {source}"


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
@pytest.mark.parametrize("client", CLIENTS)
def test_wrong_password_is_refused(client: str, mechanism: str, server_for: Any) -> None:
    server = server_for(mechanism)
    with pytest.raises(ClientRefused) as info:
        cluster_views(client, server.bootstrap, auth_for(mechanism, password="wrong-password"), timeout=3.0)
    assert info.value.auth_failure, f"{client} did not report an authentication failure: {info.value}"


@pytest.mark.parametrize("client", CLIENTS)
def test_unknown_user_is_refused(client: str, server_for: Any) -> None:
    server = server_for("SCRAM-SHA-512")
    with pytest.raises(ClientRefused) as info:
        cluster_views(client, server.bootstrap, Auth("SCRAM-SHA-512", "nobody", "whatever"), timeout=3.0)
    assert info.value.auth_failure, f"{client} did not report an authentication failure: {info.value}"


@pytest.mark.parametrize("client", CLIENTS)
def test_scram_credential_only_for_its_mechanism(client: str, server_for: Any) -> None:
    """``only-256`` has a SCRAM-SHA-256 credential: it logs in with that and is refused with SHA-512."""
    server = server_for("SCRAM-SHA-256")
    views = cluster_views(client, server.bootstrap, Auth("SCRAM-SHA-256", ONLY_256_USER, ONLY_256_PASSWORD))
    assert set(views.values()) == {expected_view(server)}
    with pytest.raises(ClientRefused) as info:
        cluster_views(client, server.bootstrap, Auth("SCRAM-SHA-512", ONLY_256_USER, ONLY_256_PASSWORD), timeout=3.0)
    assert info.value.auth_failure, f"{client} did not report an authentication failure: {info.value}"


@pytest.mark.parametrize("client", CLIENTS)
def test_plaintext_client_on_sasl_listener_is_refused(client: str, sasl_server: KstewardServer) -> None:
    with pytest.raises(ClientRefused):
        cluster_views(client, sasl_server.bootstrap, Auth(), timeout=3.0)
    # The refusal was for that connection only: an authenticated client is still served.
    assert set(cluster_views("kafkajs", sasl_server.bootstrap, ADMIN).values()) == {expected_view(sasl_server)}


# --- DescribeUserScramCredentials / AlterUserScramCredentials -------------------------------------


def _kp_described(kp_admin: Any, users: list[str] | None) -> dict[str, Any]:
    described = kp_admin.describe_user_scram_credentials(users)
    return {
        user: (
            info["error"],
            sorted((ci["mechanism"].name, ci["iterations"]) for ci in info["credential_infos"]),
        )
        for user, info in described.items()
    }


def test_describe_shows_mechanisms_and_iterations(kp_admin: Any, scram_users: Any) -> None:
    assert _kp_described(kp_admin, [SCRAM_USER, ONLY_256_USER]) == {
        SCRAM_USER: (None, [("SCRAM_SHA_256", 4096), ("SCRAM_SHA_512", 8192)]),
        ONLY_256_USER: (None, [("SCRAM_SHA_256", 4096)]),
    }
    everyone = _kp_described(kp_admin, None)
    assert everyone[SCRAM_USER] == (None, [("SCRAM_SHA_256", 4096), ("SCRAM_SHA_512", 8192)])
    assert "admin" not in everyone, "PLAIN users have no SCRAM credential and must not be listed"


def test_describe_with_confluent_kafka(ck_admin: Any, scram_users: Any) -> None:
    from confluent_kafka.admin import ScramMechanism

    futures = ck_admin.describe_user_scram_credentials([SCRAM_USER], request_timeout=10)
    description = futures[SCRAM_USER].result(timeout=15)
    assert description.user == SCRAM_USER
    assert sorted((ci.mechanism, ci.iterations) for ci in description.scram_credential_infos) == [
        (ScramMechanism.SCRAM_SHA_256, 4096),
        (ScramMechanism.SCRAM_SHA_512, 8192),
    ]


def _scram_secrets(mechanism: str, password: str, salt: bytes, iterations: int) -> list[bytes]:
    """RFC 5802's salted password, ClientKey, StoredKey and ServerKey."""
    name = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}[mechanism]
    salted = hashlib.pbkdf2_hmac(name, password.encode(), salt, iterations)
    client_key = hmac.new(salted, b"Client Key", name).digest()
    stored_key = hashlib.new(name, client_key).digest()
    server_key = hmac.new(salted, b"Server Key", name).digest()
    return [salted, client_key, stored_key, server_key]


def test_describe_never_reveals_salt_or_keys(sasl_server: KstewardServer, kp_admin: Any) -> None:
    salt = hashlib.sha256(b"a salt no response would contain by chance").digest()[:24]
    password = "salty-secret"
    assert kp_admin.alter_user_scram_credentials([_kp_upsert("salty", "SCRAM-SHA-512", password, 4096, salt=salt)]) == {
        "salty": None
    }
    with rawkafka.connect(sasl_server.address) as conn:
        auth = conn.sasl_plain("admin", "admin-secret")
        assert auth.body.error_code == ErrorCode.none
        response = conn.request(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, 0, {"users": [{"name": "salty"}]})
    body = response.body
    assert body.error_code == ErrorCode.none
    assert [(r.user, r.error_code) for r in body.results] == [("salty", ErrorCode.none)]
    assert [(int(c.mechanism), int(c.iterations)) for c in body.results[0].credential_infos] == [(2, 4096)]
    for secret in [salt, *_scram_secrets("SCRAM-SHA-512", password, salt, 4096)]:
        assert secret not in response.raw, "DescribeUserScramCredentials leaked a salt or key"
        assert secret[:8] not in response.raw, "DescribeUserScramCredentials leaked part of a salt or key"


def test_delete_credential(sasl_server: KstewardServer, kp_admin: Any) -> None:
    user, password = "temp-user", "temp-secret"
    assert kp_admin.alter_user_scram_credentials([_kp_upsert(user, "SCRAM-SHA-256", password, 4096)]) == {user: None}
    assert kp_admin.alter_user_scram_credentials([_kp_upsert(user, "SCRAM-SHA-512", password, 4096)]) == {user: None}
    assert set(cluster_views("kafkajs", sasl_server.bootstrap, Auth("SCRAM-SHA-256", user, password)).values()) == {
        expected_view(sasl_server)
    }

    assert kp_admin.alter_user_scram_credentials([_kp_delete(user, "SCRAM-SHA-256")]) == {user: None}
    assert _kp_described(kp_admin, [user]) == {user: (None, [("SCRAM_SHA_512", 4096)])}
    with pytest.raises(ClientRefused) as info:
        cluster_views("kafkajs", sasl_server.bootstrap, Auth("SCRAM-SHA-256", user, password), timeout=3.0)
    assert info.value.auth_failure, str(info.value)
    # The other mechanism's credential still works.
    assert set(cluster_views("kafkajs", sasl_server.bootstrap, Auth("SCRAM-SHA-512", user, password)).values()) == {
        expected_view(sasl_server)
    }

    assert kp_admin.alter_user_scram_credentials([_kp_delete(user, "SCRAM-SHA-512")]) == {user: None}
    error, infos = _kp_described(kp_admin, [user])[user]
    assert error is not None and infos == [], "a user with no credential left must be RESOURCE_NOT_FOUND"
    assert user not in _kp_described(kp_admin, None)


def test_delete_credential_with_confluent_kafka(ck_admin: Any) -> None:
    from confluent_kafka.admin import ScramCredentialInfo, ScramMechanism, UserScramCredentialDeletion
    from confluent_kafka.admin import UserScramCredentialUpsertion as Upsert

    user = "ck-user"
    info = ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 5000)
    ck_admin.alter_user_scram_credentials([Upsert(user, info, b"ck-secret")])[user].result(timeout=15)
    described = ck_admin.describe_user_scram_credentials([user])[user].result(timeout=15)
    assert [(c.mechanism, c.iterations) for c in described.scram_credential_infos] == [
        (ScramMechanism.SCRAM_SHA_256, 5000)
    ]
    ck_admin.alter_user_scram_credentials([UserScramCredentialDeletion(user, ScramMechanism.SCRAM_SHA_256)])[
        user
    ].result(timeout=15)
    _assert_confluent_error(ck_admin.describe_user_scram_credentials([user])[user], "RESOURCE_NOT_FOUND")


# --- errors reach the clients ---------------------------------------------------------------------


def _assert_confluent_error(future: Any, expected: str) -> None:
    from confluent_kafka import KafkaError, KafkaException

    with pytest.raises(KafkaException) as info:
        future.result(timeout=15)
    error = info.value.args[0]
    assert error.code() == getattr(KafkaError, expected), f"expected {expected}, got {error.name()}: {error.str()}"


@pytest.mark.parametrize("iterations", [4095, 16385, 1])
def test_unacceptable_iterations(ck_admin: Any, kp_admin: Any, iterations: int) -> None:
    from confluent_kafka.admin import ScramCredentialInfo, ScramMechanism
    from confluent_kafka.admin import UserScramCredentialUpsertion as Upsert

    user = f"iter-{iterations}"
    for mechanism in (ScramMechanism.SCRAM_SHA_256, ScramMechanism.SCRAM_SHA_512):
        futures = ck_admin.alter_user_scram_credentials(
            [Upsert(user, ScramCredentialInfo(mechanism, iterations), b"secret")]
        )
        _assert_confluent_error(futures[user], "UNACCEPTABLE_CREDENTIAL")
    result = kp_admin.alter_user_scram_credentials([_kp_upsert(user, "SCRAM-SHA-256", "secret", iterations)])
    assert result[user], f"kafka-python got no error message for iterations={iterations}: {result}"
    error, infos = _kp_described(kp_admin, [user])[user]
    assert error is not None and infos == [], "a refused credential must not have been stored"


@pytest.mark.parametrize("iterations", [4096, 16384])
def test_iteration_bounds_are_inclusive(kp_admin: Any, iterations: int) -> None:
    user = f"bound-{iterations}"
    assert kp_admin.alter_user_scram_credentials([_kp_upsert(user, "SCRAM-SHA-512", "secret", iterations)]) == {
        user: None
    }
    assert _kp_described(kp_admin, [user]) == {user: (None, [("SCRAM_SHA_512", iterations)])}


def test_resource_not_found(ck_admin: Any, kp_admin: Any) -> None:
    from confluent_kafka.admin import ScramMechanism, UserScramCredentialDeletion

    futures = ck_admin.alter_user_scram_credentials(
        [UserScramCredentialDeletion("ghost", ScramMechanism.SCRAM_SHA_256)]
    )
    _assert_confluent_error(futures["ghost"], "RESOURCE_NOT_FOUND")
    _assert_confluent_error(ck_admin.describe_user_scram_credentials(["ghost"])["ghost"], "RESOURCE_NOT_FOUND")
    result = kp_admin.alter_user_scram_credentials([_kp_delete("ghost", "SCRAM-SHA-512")])
    assert result["ghost"], f"kafka-python got no error message: {result}"
    error, infos = _kp_described(kp_admin, ["ghost"])["ghost"]
    assert error is not None and infos == []


def test_resource_not_found_for_the_other_mechanism(kp_admin: Any, scram_users: Any) -> None:
    """only-256 exists, but has no SCRAM-SHA-512 credential to delete."""
    result = kp_admin.alter_user_scram_credentials([_kp_delete(ONLY_256_USER, "SCRAM-SHA-512")])
    assert result[ONLY_256_USER], f"kafka-python got no error message: {result}"
    assert _kp_described(kp_admin, [ONLY_256_USER]) == {ONLY_256_USER: (None, [("SCRAM_SHA_256", 4096)])}


def test_duplicate_resource(kp_admin: Any) -> None:
    user = "twice"
    result = kp_admin.alter_user_scram_credentials(
        [_kp_upsert(user, "SCRAM-SHA-256", "a-secret", 4096), _kp_upsert(user, "SCRAM-SHA-512", "a-secret", 4096)]
    )
    assert result[user], f"kafka-python got no error message for a user altered twice: {result}"
    error, infos = _kp_described(kp_admin, [user])[user]
    assert error is not None and infos == [], "neither alteration of a duplicated user may be applied"
    described = kp_admin.describe_user_scram_credentials([SCRAM_USER, SCRAM_USER])
    assert described[SCRAM_USER]["error"], f"describing a user twice must fail: {described}"


def test_scram_error_codes_on_the_wire(sasl_server: KstewardServer, scram_users: Any) -> None:
    """The exact codes, read with kio: DUPLICATE_RESOURCE, RESOURCE_NOT_FOUND, UNACCEPTABLE_CREDENTIAL."""
    upsert = {"mechanism": 1, "iterations": 4096, "salt": b"s" * 16, "salted_password": b"p" * 32}
    with rawkafka.connect(sasl_server.address) as conn:
        assert conn.sasl_plain("admin", "admin-secret").body.error_code == ErrorCode.none
        alter = conn.request(
            ApiKey.ALTER_USER_SCRAM_CREDENTIALS,
            0,
            {
                "deletions": [{"name": "nobody-here", "mechanism": 1}],
                "upsertions": [
                    {"name": "dup", **upsert},
                    {"name": "dup", **upsert, "mechanism": 2},
                    {"name": "low", **upsert, "iterations": 4095},
                    {"name": "high", **upsert, "iterations": 16385},
                ],
            },
        ).body
        describe = conn.request(
            ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS,
            0,
            {"users": [{"name": SCRAM_USER}, {"name": SCRAM_USER}, {"name": "ghost"}]},
        ).body
    codes = {r.user: r.error_code for r in alter.results}
    assert codes == {
        "nobody-here": ErrorCode.resource_not_found,
        "dup": ErrorCode.duplicate_resource,
        "low": ErrorCode.unacceptable_credential,
        "high": ErrorCode.unacceptable_credential,
    }
    assert all(r.error_message for r in alter.results), alter
    assert describe.error_code == ErrorCode.none
    assert {r.user: r.error_code for r in describe.results} == {
        SCRAM_USER: ErrorCode.duplicate_resource,
        "ghost": ErrorCode.resource_not_found,
    }
