"""Client quotas against the real server: DescribeClientQuotas / AlterClientQuotas and KIP-599.

None of the four high-level admin clients offers client-quota calls (confluent-kafka 2.16.1,
kafka-python 3.0.12, aiokafka 0.14.0 and kafkajs 2.2.4 have no describe/alter_client_quotas). The
quota RPCs therefore go through kafka-python's own network client and its protocol classes for
APIs 48 and 49 (generated from Kafka's JSON schemas, independent of ksteward's kio codec), on a
``KafkaAdminClient`` connection: its version negotiation, SASL and framing. KIP-599 is checked with
the clients' ordinary topic calls: kafka-python's CreateTopics v7 / DeleteTopics v6 (strict) and
confluent-kafka's CreateTopics v4 (permissive, throttle time reported to ``throttle_cb``).
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from clients import Auth, confluent_config, kafka_python_admin
from harness import KstewardServer, ksteward_cli

ADMIN = Auth("PLAIN", "admin", "admin-secret")
ALICE = Auth("PLAIN", "alice", "alice-secret")
INVALID_REQUEST, CLUSTER_AUTHORIZATION_FAILED, UNSUPPORTED_VERSION, THROTTLING = 42, 31, 35, 89
EXACT, DEFAULT, SPECIFIED = 0, 1, 2
THROTTLED_LOG = re.compile(r"CreateTopicsResponse throttled by broker \((\d+) ms\)")

Entity = tuple[tuple[str, str | None], ...]


@contextmanager
def kafka_python(server: KstewardServer, auth: Auth | None = None, client_id: str | None = None) -> Iterator[Any]:
    if client_id is None:
        admin = kafka_python_admin(server.bootstrap, auth or Auth())
    else:  # PLAINTEXT only: the quota tests key buckets by client id
        from kafka.admin import KafkaAdminClient

        admin = KafkaAdminClient(bootstrap_servers=server.bootstrap, client_id=client_id, request_timeout_ms=5000)
    try:
        yield admin
    finally:
        admin.close()


def send(admin: Any, request: Any) -> Any:
    """One request on kafka-python's connection (it picks the version both sides support)."""

    async def go() -> Any:
        return await admin._manager.send(request)

    return admin._manager.run(go)


def alter(
    admin: Any, changes: list[tuple[Entity, dict[str, float | None]]], validate_only: bool = False
) -> list[tuple[Entity, int, str | None]]:
    from kafka.protocol.admin.client_quotas import AlterClientQuotasRequest as A

    entries = [
        A.EntryData(
            entity=[A.EntryData.EntityData(entity_type=t, entity_name=n) for t, n in entity],
            ops=[A.EntryData.OpData(key=k, value=0.0 if v is None else v, remove=v is None) for k, v in ops.items()],
        )
        for entity, ops in changes
    ]
    response = send(admin, A(entries=entries, validate_only=validate_only))
    return [
        (tuple((e.entity_type, e.entity_name) for e in r.entity), r.error_code, r.error_message)
        for r in response.entries
    ]


def describe(
    admin: Any, components: list[tuple[str, int, str | None]], strict: bool = False
) -> tuple[int, str | None, dict[Entity, dict[str, float]]]:
    from kafka.protocol.admin.client_quotas import DescribeClientQuotasRequest as D

    request = D(
        components=[D.ComponentData(entity_type=t, match_type=m, match=name) for t, m, name in components],
        strict=strict,
    )
    response = send(admin, request)
    found = {
        tuple(sorted((e.entity_type, e.entity_name) for e in entry.entity)): {v.key: v.value for v in entry.values}
        for entry in response.entries or []
    }
    return response.error_code, response.error_message, found


def ok(results: list[tuple[Entity, int, str | None]]) -> None:
    assert [(code, message) for _, code, message in results] == [(0, None)] * len(results), results


USER_DEFAULT: Entity = (("user", None),)
USER_AND_CLIENT: Entity = (("user", "alice"), ("client-id", "app-1"))


def test_set_and_describe_default_and_combined_entities(plaintext_server: KstewardServer) -> None:
    with kafka_python(plaintext_server) as admin:
        results = alter(
            admin,
            [
                (USER_DEFAULT, {"producer_byte_rate": 1048576.0, "request_percentage": 12.5}),
                (USER_AND_CLIENT, {"controller_mutation_rate": 2.5, "consumer_byte_rate": 2048.0}),
                ((("client-id", None),), {"consumer_byte_rate": 4096.0}),
                ((("ip", "10.1.2.3"),), {"connection_creation_rate": 30.0}),
            ],
        )
        ok(results)
        assert [entity for entity, _, _ in results][1] == USER_AND_CLIENT  # entities echoed as sent

        code, message, found = describe(admin, [("user", DEFAULT, None)], strict=True)
        assert (code, message) == (0, None)
        assert found == {USER_DEFAULT: {"producer_byte_rate": 1048576.0, "request_percentage": 12.5}}

        combined = (("client-id", "app-1"), ("user", "alice"))
        _, _, found = describe(admin, [("user", EXACT, "alice"), ("client-id", EXACT, "app-1")], strict=True)
        assert found == {combined: {"controller_mutation_rate": 2.5, "consumer_byte_rate": 2048.0}}

        _, _, found = describe(admin, [("client-id", SPECIFIED, None)])  # any client id, the default included
        assert set(found) >= {combined, (("client-id", None),)}
        assert USER_DEFAULT not in found

        _, _, found = describe(admin, [("ip", SPECIFIED, None)])
        assert found == {(("ip", "10.1.2.3"),): {"connection_creation_rate": 30.0}}

        ok(alter(admin, [(USER_AND_CLIENT, {"consumer_byte_rate": None})]))  # remove one key
        _, _, found = describe(admin, [("user", EXACT, "alice"), ("client-id", EXACT, "app-1")], strict=True)
        assert found == {combined: {"controller_mutation_rate": 2.5}}


def test_validate_only_changes_nothing(plaintext_server: KstewardServer) -> None:
    entity: Entity = (("user", "validate-only-user"),)
    with kafka_python(plaintext_server) as admin:
        ok(alter(admin, [(entity, {"producer_byte_rate": 10.0})], validate_only=True))
        (_, code, message), = alter(admin, [(entity, {"producer_byte_rate": -1.0})], validate_only=True)  # fmt: skip
        assert (code, message) == (INVALID_REQUEST, "Quota producer_byte_rate must be greater than 0")
        _, _, found = describe(admin, [("user", EXACT, "validate-only-user")])
        assert found == {}


BAD = [
    ((("user", "u1"),), {"no_such_quota": 1.0}, "Invalid configuration key no_such_quota"),
    ((("user", "u2"),), {"producer_byte_rate": 1.5}, "producer_byte_rate cannot be a fractional value."),
    ((("client-id", "c"),), {"request_percentage": 0.0}, "Quota request_percentage must be greater than 0"),
    ((("ip", "1.2.3.4"), ("user", "u")), {"connection_creation_rate": 1.0},
     "Invalid quota entity combination, IP entity shouldnot be combined with User or ClientId"),
    ((("ip", "999.1.1.1"),), {"connection_creation_rate": 1.0}, "999.1.1.1 is not a valid IP or resolvable host."),
    ((("user", ""),), {"producer_byte_rate": 1.0}, "Empty user not supported"),
    ((("topic", "t"),), {"producer_byte_rate": 1.0}, "Unhandled client quota entity type: topic"),
]  # fmt: skip


def test_bad_alterations_get_kafkas_errors_per_entity(plaintext_server: KstewardServer) -> None:
    good: Entity = (("user", "fine-user"),)
    with kafka_python(plaintext_server) as admin:
        results = alter(admin, [(good, {"producer_byte_rate": 5.0}), *[(e, ops) for e, ops, _ in BAD]])
        assert results[0][1:] == (0, None)
        assert [(code, message) for _, code, message in results[1:]] == [(INVALID_REQUEST, m) for _, _, m in BAD]
        _, _, found = describe(admin, [("user", EXACT, "fine-user")], strict=True)
        assert found == {good: {"producer_byte_rate": 5.0}}  # the valid entry was written all the same


@pytest.mark.parametrize(
    ("components", "code", "message"),
    [
        ([("user", EXACT, "a"), ("user", DEFAULT, None)], INVALID_REQUEST,
         "Entity type user cannot appear more than once in the filter."),
        ([("user", 5, None)], INVALID_REQUEST, "Unknown match type 5"),
        ([("ip", SPECIFIED, None), ("client-id", SPECIFIED, None)], INVALID_REQUEST,
         "Invalid entity filter component combination. IP filter component should not be used with user or "
         "clientId filter component."),
        ([("group", SPECIFIED, None)], UNSUPPORTED_VERSION, "Unsupported entity type group"),
    ],
)  # fmt: skip
def test_bad_filters_fail_the_request(
    plaintext_server: KstewardServer, components: list[tuple[str, int, str | None]], code: int, message: str
) -> None:
    with kafka_python(plaintext_server) as admin:
        assert describe(admin, components) == (code, message, {})


def test_authorization_needs_cluster_describe_configs_and_alter_configs(sasl_server: KstewardServer) -> None:
    from kafka.admin import ACL, ACLOperation, ACLPermissionType, ACLResourcePatternType, ResourcePattern, ResourceType

    entity: Entity = (("user", "bob"),)
    with kafka_python(sasl_server, ALICE) as alice:
        code, message, found = describe(alice, [])
        assert (code, message, found) == (CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed.", {})
        results = alter(alice, [(entity, {"producer_byte_rate": 1.0}), (entity, {"consumer_byte_rate": 1.0})])
        # Every entry as sent fails, duplicates included.
        assert results == [(entity, CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed.")] * 2

    with kafka_python(sasl_server, ADMIN) as admin:  # the super user
        ok(alter(admin, [(entity, {"producer_byte_rate": 1.0})]))
        cluster = ResourcePattern(ResourceType.CLUSTER, "kafka-cluster", ACLResourcePatternType.LITERAL)
        grant = ACL("User:alice", "*", ACLOperation.DESCRIBE_CONFIGS, ACLPermissionType.ALLOW, cluster)
        assert not admin.create_acls([grant])["failed"]

    with kafka_python(sasl_server, ALICE) as alice:
        code, _, found = describe(alice, [("user", EXACT, "bob")])
        assert (code, found) == (0, {entity: {"producer_byte_rate": 1.0}})
        (_, code, _), = alter(alice, [(entity, {"producer_byte_rate": 2.0})])  # fmt: skip
        assert code == CLUSTER_AUTHORIZATION_FAILED  # DESCRIBE_CONFIGS does not allow ALTER_CONFIGS
        _, _, found = describe(alice, [("user", EXACT, "bob")])
        assert found == {entity: {"producer_byte_rate": 1.0}}


def test_quotas_survive_restart_and_snapshot_and_show_in_the_metadata_shell(server_factory: Any) -> None:
    server: KstewardServer = server_factory("server").start()
    expected = {
        (("user", None),): {"producer_byte_rate": 1000.0},
        (("client-id", "durable-app"), ("user", "carol")): {"controller_mutation_rate": 4.0},
    }
    with kafka_python(server) as admin:
        ok(alter(admin, [(e, dict(v)) for e, v in expected.items()]))  # type: ignore[arg-type]
    server.restart(hard=True)  # kill -9: replayed from the log
    with kafka_python(server) as admin:
        assert describe(admin, [])[2] == expected
    server.restart()  # SIGTERM writes a snapshot, which the restart loads
    assert list((server.data_dir / "__cluster_metadata-0").glob("*.checkpoint"))
    with kafka_python(server) as admin:
        assert describe(admin, [])[2] == expected
    server.stop()
    shell = ksteward_cli("metadata", "shell", str(server.data_dir), "-c", "ls /client-quotas")
    assert shell.returncode == 0, shell
    assert "user(<default>)" in shell.stdout and "carol" in shell.stdout and "durable-app" in shell.stdout, shell
    (label,) = [line.strip() for line in shell.stdout.splitlines() if "carol" in line]
    value = ksteward_cli(
        "metadata", "shell", str(server.data_dir), "-c", f"cat /client-quotas/{label}/controller_mutation_rate"
    )
    assert "4.0" in value.stdout, value


# --------------------------------------------------------------------------- KIP-599


def test_strict_mutation_quota_through_kafka_python(
    plaintext_server: KstewardServer, caplog: pytest.LogCaptureFixture
) -> None:
    from kafka.errors import ThrottlingQuotaExceededError

    client_id = "kip599-strict"
    with kafka_python(plaintext_server) as admin:
        # user=ANONYMOUS (PLAINTEXT) with this client id: 1 partition/s, a burst of 11. A looser
        # client-id default proves the more specific user+client-id entity decides.
        ok(alter(admin, [((("user", "ANONYMOUS"), ("client-id", client_id)), {"controller_mutation_rate": 1.0}),
                         ((("client-id", None),), {"controller_mutation_rate": 1000.0})]))  # fmt: skip
    caplog.set_level(logging.WARNING, logger="kafka")
    with kafka_python(plaintext_server, client_id=client_id) as admin:  # CreateTopics v7: strict
        created = []
        with pytest.raises(ThrottlingQuotaExceededError, match="The throttling quota has been exceeded"):
            for i in range(10):  # 5 partitions a topic: the third overdraws the bucket, the fourth is refused
                admin.create_topics({f"kip599-{i}": {"num_partitions": 5, "replication_factor": 1}})
                created.append(i)
        assert created == [0, 1, 2]
    # kafka-python reports the response's throttle_time_ms (and pauses that connection for it).
    throttled = [int(m.group(1)) for r in caplog.records if (m := THROTTLED_LOG.search(r.getMessage()))]
    assert throttled and max(throttled) > 0, [r.getMessage() for r in caplog.records]
    with kafka_python(plaintext_server, client_id=client_id) as admin:  # a new connection, not paused
        deleted = admin.delete_topics(["kip599-0"], raise_errors=False)  # DeleteTopics v6: strict as well
        assert [r["error_code"] for r in deleted["topics"]] == [THROTTLING]
    with kafka_python(plaintext_server) as admin:  # another client id: its own (looser) quota
        assert {"kip599-0", "kip599-1", "kip599-2"} <= set(admin.list_topics())
        assert "kip599-3" not in admin.list_topics()


def test_permissive_mutation_quota_through_confluent_kafka(plaintext_server: KstewardServer) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    client_id = "kip599-permissive"
    with kafka_python(plaintext_server) as admin:
        ok(alter(admin, [((("client-id", client_id),), {"controller_mutation_rate": 1.0})]))
    throttles: list[Any] = []
    confluent = AdminClient(confluent_config(plaintext_server.bootstrap, Auth(), **{
        "client.id": client_id, "throttle_cb": throttles.append}))  # fmt: skip
    # librdkafka sends CreateTopics v4: over the quota it is accepted, and the throttle time reported.
    for i in range(4):
        futures = confluent.create_topics([NewTopic(f"permissive-{i}", 5, 1)], request_timeout=10)
        assert futures[f"permissive-{i}"].result(10) is None
    deadline = time.monotonic() + 10
    while not throttles and time.monotonic() < deadline:
        confluent.poll(0.1)  # serves throttle_cb; the event is queued before the result above
    assert throttles, "librdkafka reported no throttle time"
    assert max(e.throttle_time for e in throttles) > 0
    assert {f"permissive-{i}" for i in range(4)} <= set(confluent.list_topics(timeout=10).topics)
