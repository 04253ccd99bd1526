"""The direct Fetch writers (``protocol.fast_fetch``) against kio, the reference, byte for byte, for every
version they take; and the codec's entry points with them, read back by kio."""

from __future__ import annotations

import io
import uuid
from datetime import timedelta
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kio.schema.errors import ErrorCode
from kio.serial import entity_writer

from ksteward.protocol.apis import ApiKey
from ksteward.protocol.build import build
from ksteward.protocol.codec import (
    decode_request,
    decode_response,
    encode_request,
    encode_request_header,
    encode_response,
    request_class,
    response_class,
)
from ksteward.protocol.fast_fetch import FIRST_VERSION, LAST_VERSION, fetch_request_body, fetch_response_body

VERSIONS = st.integers(FIRST_VERSION, LAST_VERSION)
i32 = st.integers(-(2**31), 2**31 - 1)
i64 = st.integers(-(2**63), 2**63 - 1)
epochs = st.sampled_from([-1, 0, 7]) | i32  # the defaults (-1) decide whether a tagged field is written
offsets = st.sampled_from([-1, 0, 12345]) | i64
uuids = st.one_of(st.none(), st.uuids())
texts = st.text(max_size=30)
codes = st.sampled_from([ErrorCode.none, ErrorCode.not_leader_or_follower, ErrorCode.fenced_leader_epoch])


def kio_body(entity: Any) -> bytes:
    out = io.BytesIO()
    entity_writer(type(entity))(out, entity)
    return out.getvalue()


@st.composite
def fetch_requests(draw: st.DrawFn) -> tuple[int, Any]:
    version = draw(VERSIONS)
    partitions = [
        {
            "partition": draw(i32),
            "current_leader_epoch": draw(epochs),
            "fetch_offset": draw(offsets),
            "last_fetched_epoch": draw(epochs),
            "log_start_offset": draw(offsets),
            "partition_max_bytes": draw(i32),
            "replica_directory_id": draw(uuids),
        }
        for _ in range(draw(st.integers(0, 2)))
    ]
    forgotten = [
        {"topic_id": draw(st.uuids()), "partitions": draw(st.lists(i32, max_size=3))}
        for _ in range(draw(st.integers(0, 2)))
    ]
    values = {
        "cluster_id": draw(st.one_of(st.none(), texts)),
        "replica_id": draw(epochs),
        "replica_state": {"replica_id": draw(epochs), "replica_epoch": draw(offsets)},
        "max_wait": timedelta(milliseconds=draw(st.integers(0, 2**31 - 1))),
        "min_bytes": draw(i32),
        "max_bytes": draw(i32),
        "isolation_level": draw(st.integers(0, 1)),
        "session_id": draw(i32),
        "session_epoch": draw(i32),
        "topics": [{"topic_id": draw(st.uuids()), "topic": "t", "partitions": partitions}],
        "forgotten_topics_data": forgotten,
        "rack_id": draw(texts),
    }
    return version, build(request_class(ApiKey.FETCH, version), values)


@st.composite
def fetch_responses(draw: st.DrawFn) -> tuple[int, Any]:
    version = draw(VERSIONS)
    partitions = [
        {
            "partition_index": draw(i32),
            "error_code": draw(codes),
            "high_watermark": draw(offsets),
            "last_stable_offset": draw(offsets),
            "log_start_offset": draw(offsets),
            "diverging_epoch": {"epoch": draw(epochs), "end_offset": draw(offsets)},
            "current_leader": {"leader_id": draw(epochs), "leader_epoch": draw(epochs)},
            "snapshot_id": {"end_offset": draw(offsets), "epoch": draw(epochs)},
            "aborted_transactions": None,
            "preferred_read_replica": draw(epochs),
            "records": draw(st.one_of(st.none(), st.binary(max_size=300))),
        }
        for _ in range(draw(st.integers(0, 2)))
    ]
    endpoints = [
        {"node_id": draw(i32), "host": draw(texts), "port": draw(i32), "rack": draw(st.one_of(st.none(), texts))}
        for _ in range(draw(st.integers(0, 2)))
    ]
    values: dict[str, Any] = {
        "throttle_time": timedelta(milliseconds=draw(st.integers(0, 2**31 - 1))),
        "error_code": draw(codes),
        "session_id": draw(i32),
        "responses": [{"topic_id": draw(uuids), "topic": "t", "partitions": partitions}],
    }
    if version >= 16:
        values["node_endpoints"] = endpoints
    return version, build(response_class(ApiKey.FETCH, version), values)


@given(fetch_requests(), i32, st.one_of(st.none(), texts))
def test_a_request_is_kios_bytes(case: tuple[int, Any], correlation_id: int, client_id: str | None) -> None:
    version, body = case
    assert fetch_request_body(version, body) == kio_body(body)
    wire = encode_request(ApiKey.FETCH, version, correlation_id, client_id, body)
    assert wire == encode_request_header(ApiKey.FETCH, version, correlation_id, client_id) + kio_body(body)
    request = decode_request(wire, {ApiKey.FETCH: (FIRST_VERSION, LAST_VERSION)})
    assert (request.correlation_id, request.client_id, request.body) == (correlation_id, client_id, body)


@given(fetch_responses(), i32)
def test_a_response_is_kios_bytes(case: tuple[int, Any], correlation_id: int) -> None:
    version, response = case
    assert fetch_response_body(version, response) == kio_body(response)
    wire = encode_response(ApiKey.FETCH, version, correlation_id, response)
    decoded = decode_response(ApiKey.FETCH, version, wire[4:])
    assert (decoded.correlation_id, decoded.body) == (correlation_id, response)


def test_what_the_writers_do_not_take_goes_through_kio() -> None:
    older = build(response_class(ApiKey.FETCH, 12), {"error_code": ErrorCode.none, "session_id": 0, "responses": []})
    assert fetch_response_body(12, older) is None
    aborted = [{"producer_id": 1, "first_offset": 0}]
    partition = {"partition_index": 0, "error_code": ErrorCode.none, "high_watermark": 0,
                 "aborted_transactions": aborted, "records": None}  # fmt: skip
    values = {"error_code": ErrorCode.none, "session_id": 0,
              "responses": [{"topic_id": uuid.uuid4(), "partitions": [partition]}]}  # fmt: skip
    with_aborted = build(response_class(ApiKey.FETCH, 17), values)
    assert fetch_response_body(17, with_aborted) is None
    frame = encode_response(ApiKey.FETCH, 17, 3, with_aborted)  # still written, by kio
    assert decode_response(ApiKey.FETCH, 17, frame[4:]).body == with_aborted


@pytest.mark.parametrize("version", range(FIRST_VERSION, LAST_VERSION + 1))
def test_the_raft_request_shape(version: int) -> None:
    """The request the Raft observer sends (``raft.observer``), read back by kio."""
    body = build(
        request_class(ApiKey.FETCH, version),
        {"cluster_id": "c1", "replica_id": 3, "replica_state": {"replica_id": 3, "replica_epoch": -1},
         "max_wait": timedelta(milliseconds=500), "min_bytes": 0, "max_bytes": 8_388_608,
         "topics": [{"topic_id": uuid.UUID(int=1), "partitions": [
             {"partition": 0, "current_leader_epoch": 4, "fetch_offset": 99, "last_fetched_epoch": 4,
              "log_start_offset": -1, "partition_max_bytes": 0, "replica_directory_id": uuid.UUID(int=9)}]}],
         "forgotten_topics_data": [], "rack_id": ""},
    )  # fmt: skip
    assert fetch_request_body(version, body) == kio_body(body)
