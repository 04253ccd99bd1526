"""The direct Metadata encoder must produce exactly kio's bytes, for every version."""

from __future__ import annotations

import uuid
from typing import Any, NamedTuple

from hypothesis import given, settings
from hypothesis import strategies as st
from kio.schema.errors import ErrorCode

from ksteward.protocol.apis import ApiKey
from ksteward.protocol.build import build
from ksteward.protocol.codec import encode_response, response_class
from ksteward.protocol.fast_metadata import MAX_VERSION, TopicEncoder, metadata_response_parts

text = st.text(max_size=10)
ints = st.lists(st.integers(-1, 5), max_size=4)
i32 = st.integers(-(2**31), 2**31 - 1)
partitions = st.lists(st.tuples(st.integers(0, 50), st.integers(-1, 5), st.integers(-1, 9), ints, ints, ints),
                      max_size=4)  # fmt: skip
topics = st.lists(
    st.tuples(
        st.sampled_from([0, 3, 29, 100]), st.none() | text, st.none() | st.uuids(), st.booleans(), partitions, i32
    ),
    max_size=4,
)
brokers = st.lists(st.tuples(st.integers(0, 9), text, st.integers(0, 65535), st.none() | text), max_size=3)


@settings(max_examples=300, deadline=None)
@given(version=st.integers(0, MAX_VERSION), correlation_id=i32, broker_list=brokers, cluster_id=st.none() | text,
       controller_id=st.integers(-1, 9), topic_list=topics, cluster_ops=i32)  # fmt: skip
def test_byte_identical_to_kio(
    version: int, correlation_id: int, broker_list: list[Any], cluster_id: str | None, controller_id: int,
    topic_list: list[Any], cluster_ops: int,
) -> None:  # fmt: skip
    if version < 2:
        cluster_id = None  # not in the message before v2: kio writes nothing, nor do we
    if version < 1:
        broker_list = [(n, h, p, None) for n, h, p, _ in broker_list]
    encoder = TopicEncoder(version)
    entries = []
    values_topics = []
    for error, name, topic_id, internal, parts, ops in topic_list:
        named = name if name is not None or version >= 12 else ""
        entries.append(encoder.topic(error, name, topic_id, internal, parts, ops))
        values_topics.append({
            "error_code": ErrorCode(error), "name": named, "topic_id": topic_id or uuid.UUID(int=0),
            "is_internal": internal, "topic_authorized_operations": ops,
            "partitions": [{"error_code": ErrorCode.none, "partition_index": i, "leader_id": leader,
                            "leader_epoch": epoch, "replica_nodes": r, "isr_nodes": isr, "offline_replicas": off}
                           for i, leader, epoch, r, isr, off in parts],
        })  # fmt: skip
    values = {
        "throttle_time_ms": 0, "error_code": ErrorCode.none, "cluster_id": cluster_id, "controller_id": controller_id,
        "cluster_authorized_operations": cluster_ops, "topics": values_topics,
        "brokers": [{"node_id": n, "host": h, "port": p, "rack": r} for n, h, p, r in broker_list],
    }  # fmt: skip
    expected = encode_response(ApiKey.METADATA, version, correlation_id, build(response_class(ApiKey.METADATA, version),
                                                                             values))  # fmt: skip
    parts = metadata_response_parts(
        version, correlation_id, brokers=broker_list, cluster_id=cluster_id, controller_id=controller_id,
        topics=entries, cluster_authorized_operations=cluster_ops, topics_size=sum(map(len, entries)),
    )  # fmt: skip
    assert parts.joined() == expected
    assert parts[1 : 1 + len(entries)] == entries  # the entries stay as given, between the header and the tail


def test_error_entries_have_no_partitions_and_omitted_operations() -> None:
    encoder = TopicEncoder(12)
    assert encoder.error(3, "t", None) == encoder.topic(3, "t", None, False, (), -(2**31))


class _Partition(NamedTuple):
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    leader: int
    leader_epoch: int


@settings(max_examples=300, deadline=None)
@given(version=st.integers(0, MAX_VERSION), name=text, topic_id=st.none() | st.uuids(), internal=st.booleans(),
       rows=st.lists(st.tuples(st.integers(0, 50), st.integers(-1, 5), st.integers(-1, 9), ints, ints), max_size=5),
       live=st.frozensets(st.integers(-1, 5)), ops=i32)  # fmt: skip
def test_a_topic_from_the_images_partitions_is_the_same_entry(
    version: int, name: str, topic_id: uuid.UUID | None, internal: bool, rows: list[Any], live: frozenset[int], ops: int
) -> None:
    """``registered`` (the partitions as the image holds them, the offline replicas from the live brokers) writes
    the bytes ``topic`` writes from the rows, which the test above checks against kio; twice, for the kept tails."""
    partitions = [(i, _Partition(tuple(r), tuple(isr), leader, epoch)) for i, leader, epoch, r, isr in rows]
    expected = TopicEncoder(version).topic(
        0, name, topic_id, internal,
        [(i, p.leader, p.leader_epoch, p.replicas, p.isr, tuple(r for r in p.replicas if r not in live))
         for i, p in partitions],
        ops,
    )  # fmt: skip
    encoder = TopicEncoder(version)
    assert encoder.registered(name, topic_id, internal, partitions, live, ops) == expected
    assert encoder.registered(name, topic_id, internal, partitions, live, ops) == expected
