"""Metadata by topic id on the real server, over the raw wire, as Kafka's
``KafkaApis.handleTopicMetadataRequest`` answers it.

- From v12 an id is looked up: ids are not sensitive, names are. A topic the caller may not DESCRIBE
  gets TOPIC_AUTHORIZATION_FAILED with a null name and the id it asked about; an unknown id gets
  UNKNOWN_TOPIC_ID; a topic it may describe comes back with its name.
- Once any id is given, the request is answered by id alone (Kafka's ``useTopicId``): names are ignored
  and a repeated id is answered once.
- v10 and v11 carry the fields but Kafka serves neither a null name nor a non-zero id there: the whole
  request gets INVALID_REQUEST (``MetadataRequest.getErrorResponse``), each topic as the caller sent it.

The hidden topic's name must not appear anywhere in a frame sent to a caller who may not describe it.
"""

from __future__ import annotations

import datetime
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from harness import KstewardServer
from rawkafka import RawConnection, Response, connect

from ksteward.protocol.apis import ApiKey

UNKNOWN_TOPIC_ID, TOPIC_AUTHORIZATION_FAILED, INVALID_REQUEST = 100, 29, 42
HIDDEN, SHARED = "ledger-hidden-7f3a", "ledger-shared-2b9c"  # distinctive, to search raw frames for


def login(server: KstewardServer, user: str) -> RawConnection:
    conn = connect(server.address)
    assert int(conn.sasl_plain(user, f"{user}-secret").body.error_code) == 0
    return conn


@pytest.fixture(scope="module")
def ids(sasl_server: KstewardServer) -> dict[str, uuid.UUID]:
    """Both topics created by the super user; alice may DESCRIBE only SHARED. Returns name -> id."""
    with login(sasl_server, "admin") as admin:
        topics = [{"name": n, "num_partitions": 1, "replication_factor": 1, "assignments": [], "configs": []}
                  for n in (HIDDEN, SHARED)]  # fmt: skip
        created = admin.request(ApiKey.CREATE_TOPICS, 7, {"topics": topics, "timeout": datetime.timedelta(seconds=10),
                                                   "validate_only": False}).body.topics  # fmt: skip
        assert [(t.name, int(t.error_code)) for t in created] == [(HIDDEN, 0), (SHARED, 0)]
        grant = {"resource_type": 2, "resource_name": SHARED, "resource_pattern_type": 3, "principal": "User:alice",
                 "host": "*", "operation": 8, "permission_type": 3}  # TOPIC, LITERAL, DESCRIBE, ALLOW  # fmt: skip
        (result,) = admin.request(ApiKey.CREATE_ACLS, 3, {"creations": [grant]}).body.results
        assert int(result.error_code) == 0
        by_name = admin.request(
            ApiKey.METADATA, 12, body(12, [{"name": n, "topic_id": None} for n in (HIDDEN, SHARED)])
        )
        found = {t.name: t.topic_id for t in by_name.body.topics}
    assert {t.name: t.topic_id for t in created} == found and None not in found.values()
    return found


def body(version: int, topics: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {"topics": topics, "allow_auto_topic_creation": False,
                           "include_topic_authorized_operations": False}  # fmt: skip
    if version == 10:
        out["include_cluster_authorized_operations"] = False
    return out


def by_id(*topic_ids: uuid.UUID) -> list[dict[str, Any]]:
    return [{"name": None, "topic_id": i} for i in topic_ids]


def answered(response: Response) -> list[tuple[int, str | None, uuid.UUID | None, int]]:
    """(error code, name, id, partition count) of each topic, in the order sent."""
    return [(int(t.error_code), t.name, t.topic_id, len(t.partitions)) for t in response.body.topics]


@pytest.fixture
def alice(sasl_server: KstewardServer) -> Iterator[RawConnection]:
    with login(sasl_server, "alice") as conn:
        yield conn


@pytest.fixture
def admin(sasl_server: KstewardServer) -> Iterator[RawConnection]:
    with login(sasl_server, "admin") as conn:
        yield conn


@pytest.mark.parametrize("version", [12, 13])
def test_an_id_the_caller_may_not_describe_names_no_topic(
    alice: RawConnection, ids: dict[str, uuid.UUID], version: int
) -> None:
    response = alice.request(ApiKey.METADATA, version, body(version, by_id(ids[HIDDEN])))
    assert answered(response) == [(TOPIC_AUTHORIZATION_FAILED, None, ids[HIDDEN], 0)]
    assert HIDDEN.encode() not in response.raw
    if version >= 13:
        assert int(response.body.error_code) == 0  # a per-topic refusal, not a request-level one


@pytest.mark.parametrize("version", [12, 13])
def test_an_id_the_caller_may_describe_is_answered_with_its_name(
    alice: RawConnection, admin: RawConnection, ids: dict[str, uuid.UUID], version: int
) -> None:
    response = alice.request(ApiKey.METADATA, version, body(version, by_id(ids[SHARED], ids[HIDDEN])))
    assert sorted(answered(response), key=lambda t: t[0]) == [
        (0, SHARED, ids[SHARED], 1),
        (TOPIC_AUTHORIZATION_FAILED, None, ids[HIDDEN], 0),
    ]
    assert HIDDEN.encode() not in response.raw
    # The super user may describe everything.
    assert answered(admin.request(ApiKey.METADATA, version, body(version, by_id(ids[HIDDEN])))) == [
        (0, HIDDEN, ids[HIDDEN], 1)
    ]


@pytest.mark.parametrize("version", [12, 13])
@pytest.mark.parametrize("user", ["alice", "admin"])
def test_an_unknown_id_is_unknown_topic_id(
    sasl_server: KstewardServer, ids: dict[str, uuid.UUID], version: int, user: str
) -> None:
    ghost = uuid.UUID("5f0c6b1e-9d2a-4e7b-8c3f-1a2b3c4d5e6f")
    assert ghost not in ids.values()
    with login(sasl_server, user) as conn:
        assert answered(conn.request(ApiKey.METADATA, version, body(version, by_id(ghost)))) == [
            (UNKNOWN_TOPIC_ID, None, ghost, 0)
        ]


def test_once_an_id_is_given_names_are_ignored_and_ids_answered_once(
    admin: RawConnection, ids: dict[str, uuid.UUID]
) -> None:
    topics = [{"name": SHARED, "topic_id": None}, *by_id(ids[HIDDEN], ids[HIDDEN])]
    assert answered(admin.request(ApiKey.METADATA, 12, body(12, topics))) == [(0, HIDDEN, ids[HIDDEN], 1)]


@pytest.mark.parametrize("version", [10, 11])
@pytest.mark.parametrize("user", ["alice", "admin"])
def test_before_v12_ids_and_null_names_are_refused(
    sasl_server: KstewardServer, ids: dict[str, uuid.UUID], version: int, user: str
) -> None:
    with login(sasl_server, user) as conn:
        response = conn.request(ApiKey.METADATA, version, body(version, by_id(ids[HIDDEN])))
        assert answered(response) == [(INVALID_REQUEST, "", ids[HIDDEN], 0)]
        assert list(response.body.brokers) == []
        assert HIDDEN.encode() not in response.raw
        # One refused entry refuses the whole request; each topic comes back as the caller sent it.
        topics = [{"name": SHARED, "topic_id": None}, {"name": SHARED, "topic_id": ids[HIDDEN]},
                  {"name": None, "topic_id": None}]  # fmt: skip
        response = conn.request(ApiKey.METADATA, version, body(version, topics))
        assert answered(response) == [
            (INVALID_REQUEST, SHARED, None, 0),
            (INVALID_REQUEST, SHARED, ids[HIDDEN], 0),
            (INVALID_REQUEST, "", None, 0),
        ]
        assert HIDDEN.encode() not in response.raw
        # By name alone these versions are served as before.
        by_name = conn.request(ApiKey.METADATA, version, body(version, [{"name": SHARED, "topic_id": None}]))
        assert answered(by_name) == [(0, SHARED, ids[SHARED], 1)]
