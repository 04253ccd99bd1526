"""Metadata (key 3) and DescribeCluster (key 60): the cluster as the committed image has it.

Brokers are listed with their endpoint for the listener the request arrived on, as Kafka does, so a
client that bootstrapped on one listener is never sent to another. Only unfenced brokers are listed
(Kafka's ``KRaftMetadataCache.getAliveBrokerNodes``; brokers in controlled shutdown are still unfenced),
and the ``ControllerId`` is a random unfenced broker, as a KRaft broker reports it: clients send their
controller-bound requests to a broker, which forwards them (KIP-590).
"""

from __future__ import annotations

import asyncio
import random
import time
import uuid
from collections.abc import Callable
from typing import Any

from kio.schema.errors import ErrorCode

from ksteward.authorizer import CLUSTER_NAME, AclOperation, ResourceType
from ksteward.broker.authz import authorize, authorized_operations, listing_filter
from ksteward.broker.context import Node, RequestContext
from ksteward.metadata.image import MetadataImage, TopicImage
from ksteward.protocol.apis import ApiKey
from ksteward.protocol.build import build
from ksteward.protocol.codec import PreEncoded, response_class
from ksteward.protocol.error_responses import error_values
from ksteward.protocol.fast_metadata import TopicEncoder, metadata_response_parts

ZERO_UUID = uuid.UUID(int=0)
AUTHORIZED_OPERATIONS_OMITTED = -(2**31)  # Integer.MIN_VALUE: "not requested"
INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state", "__share_group_state"})


def _brokers(image: MetadataImage, listener: str, include_fenced: bool = False) -> list[dict[str, Any]]:
    brokers = []
    for broker_id, reg in sorted(image.cluster.items()):
        if reg.fenced and not include_fenced:
            continue
        endpoint = next((e for e in reg.end_points if e.name == listener), None)
        if endpoint is None:
            continue
        brokers.append(
            {
                "node_id": broker_id,
                "broker_id": broker_id,
                "host": endpoint.host,
                "port": endpoint.port,
                "rack": reg.rack,
                "is_fenced": reg.fenced,
            }
        )
    return brokers


def random_alive_broker(image: MetadataImage) -> int:
    """Kafka's ``KRaftMetadataCache.getRandomAliveBrokerId``: any unfenced broker, whatever its listeners;
    -1 (``MetadataResponse.NO_CONTROLLER_ID``) when every broker is fenced."""
    alive = [broker_id for broker_id, reg in image.cluster.items() if not reg.fenced]
    return random.choice(alive) if alive else -1


#: How long a Metadata answer for every topic of a large cluster works before it yields to the event loop, so
#: that it never holds up the other connections for long: the clock is read every ``TOPICS_PER_CLOCK_READ``
#: topics (about 0.1 ms of work with the bytes kept, 1 ms without).
SLICE_S = 0.004
TOPICS_PER_CLOCK_READ = 64
#: Above this many bytes of topics, the answer stays in parts for the connection to write a slice at a time
#: (``protocol.framing.FrameParts``); a smaller one is joined here.
JOIN_BELOW_BYTES = 256 * 1024


_NONE = int(ErrorCode.none)  # an int, not the member: read 100,000 times for a listing (issue 17)


class _TopicBytes:
    """The encoded entry of each unchanged topic, per version, kept between requests.

    An entry is reused only while the image still holds the same topic object and the same broker
    registrations (the offline replicas come from them), so it is never stale; the topic name is the key, and
    the entries of deleted topics go when the cache outgrows the image. A change of the registrations empties it.

    Two flat dicts, not one dict of (topic, bytes) tuples: at 100,000 topics those tuples were 100,000 more
    objects for Python's cyclic collector to walk in every full pass (about 24 ms each, a stall of the event
    loop); a dict's entries are walked as one object, and the (version, name) keys hold no reference the
    collector tracks."""

    def __init__(self) -> None:
        self.cluster: object = None  # the broker registrations every kept entry was encoded with
        self.topics: dict[tuple[int, str], object] = {}
        self.encoded: dict[tuple[int, str], bytes] = {}

    def get(self, encoder: TopicEncoder, image: MetadataImage, name: str) -> bytes | None:
        topic = image.topics.by_name.get(name)
        if topic is None:
            return None
        if self.cluster is not image.cluster:
            self.topics.clear()
            self.encoded.clear()
            self.cluster = image.cluster
        key = (encoder.version, name)
        if self.topics.get(key) is topic:
            return self.encoded[key]
        encoded = _encode_topic(encoder, image, topic, AUTHORIZED_OPERATIONS_OMITTED)
        if len(self.topics) > 2 * len(image.topics.by_name) + 1_000:
            self.topics.clear()
            self.encoded.clear()
        self.topics[key] = topic
        self.encoded[key] = encoded
        return encoded


_TOPIC_BYTES = _TopicBytes()


_ALIVE: list[tuple[object, frozenset[int]]] = []  # the last broker registrations seen, and their unfenced ids


def _alive(image: MetadataImage) -> frozenset[int]:
    """The unfenced brokers: a partition's replicas outside them are offline (Kafka's ``getOfflineReplicas``)."""
    if _ALIVE and _ALIVE[0][0] is image.cluster:
        return _ALIVE[0][1]
    alive = frozenset(broker_id for broker_id, reg in image.cluster.items() if not reg.fenced)
    _ALIVE[:] = [(image.cluster, alive)]
    return alive


def _encode_topic(encoder: TopicEncoder, image: MetadataImage, topic: TopicImage, authorized_operations: int) -> bytes:
    return encoder.registered(topic.name, topic.id, topic.name in INTERNAL_TOPICS, sorted(topic.partitions.items()),
                              _alive(image), authorized_operations)  # fmt: skip


class _Topics:
    """The topics' entries of an answer as they are encoded, with their error codes and total size: a Metadata
    answer of 100,000 topics is put together slice by slice, and nothing passes over all of them at the end
    while the loop waits."""

    __slots__ = ("codes", "entries", "size")

    def __init__(self) -> None:
        self.codes: list[int] = []
        self.entries: list[bytes] = []
        self.size = 0

    def add(self, answer: tuple[int, bytes]) -> None:
        code, entry = answer
        self.codes.append(code)
        self.entries.append(entry)
        self.size += len(entry)


def _topic_entry(node: Node, ctx: RequestContext, encoder: TopicEncoder, image: MetadataImage, name: str,
                 include_ops: bool) -> tuple[int, bytes]:  # fmt: skip
    """(error code, encoded entry) of a topic the caller may describe."""
    if name not in image.topics.by_name:
        return ErrorCode.unknown_topic_or_partition, encoder.error(ErrorCode.unknown_topic_or_partition, name, None)
    if include_ops:
        ops = authorized_operations(node, ctx, ResourceType.TOPIC, name)
        return _NONE, _encode_topic(encoder, image, image.topics.by_name[name], ops)
    encoded = _TOPIC_BYTES.get(encoder, image, name)
    assert encoded is not None
    return _NONE, encoded


def cluster_authorized_operations(node: Node, ctx: RequestContext, requested: bool) -> int:
    """Kafka fills the cluster bitfield only when asked, and only for callers that may DESCRIBE it."""
    if not requested:
        return AUTHORIZED_OPERATIONS_OMITTED
    if not authorize(node, ctx, AclOperation.DESCRIBE, ResourceType.CLUSTER, CLUSTER_NAME):
        return 0
    return authorized_operations(node, ctx, ResourceType.CLUSTER, CLUSTER_NAME)


def _requested_topic_ids(requested: Any) -> list[uuid.UUID]:
    """The distinct non-zero topic ids of the request, in request order (Kafka's ``MetadataRequest.topicIds``)."""
    ids = (getattr(t, "topic_id", None) for t in requested)
    return list(dict.fromkeys(i for i in ids if i not in (None, ZERO_UUID)))


def _invalid_request(request: Any) -> dict[str, Any]:
    """Kafka's ``MetadataRequest.getErrorResponse`` for INVALID_REQUEST: every topic as the request named it,
    a null name written as "" (the response's name is not nullable before v12), the id echoed, no brokers."""
    values = error_values(ApiKey.METADATA, request, ErrorCode.invalid_request)
    assert values is not None
    for topic in values["topics"]:
        if topic["name"] is None:
            topic["name"] = ""
    return values


def _topics_by_id(
    node: Node,
    ctx: RequestContext,
    encoder: TopicEncoder,
    image: MetadataImage,
    topic_ids: list[uuid.UUID],
    include_ops: bool,
) -> _Topics:
    """Kafka's ``KafkaApis.handleTopicMetadataRequest`` when ``useTopicId``: ids are not sensitive, names are.

    An unknown id gets UNKNOWN_TOPIC_ID; a topic the caller may not DESCRIBE gets TOPIC_AUTHORIZATION_FAILED
    with a null name and its id kept (``metadataCache.getTopicId(topic)``), so the id never reveals the name.
    """
    topics = _Topics()
    for topic_id in topic_ids:
        topic = image.topics.by_id.get(topic_id)
        if topic is None:
            topics.add((ErrorCode.unknown_topic_id, encoder.error(ErrorCode.unknown_topic_id, None, topic_id)))
        elif not authorize(node, ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, topic.name):
            denied = ErrorCode.topic_authorization_failed
            topics.add((denied, encoder.error(denied, None, topic_id)))
        else:
            topics.add(_topic_entry(node, ctx, encoder, image, topic.name, include_ops))
    return topics


async def handle_metadata(node: Node, ctx: RequestContext, request: Any) -> Any:
    image = node.image
    version = ctx.api_version
    include_ops = bool(getattr(request, "include_topic_authorized_operations", False))
    requested = request.topics
    if version == 0 and not requested:
        requested = None  # v0: an empty list means every topic
    encoder = TopicEncoder(version)
    topics = _Topics()
    if requested is None:
        # Listing every topic shows only those the caller may describe, and logs no denials. The image is one
        # immutable state, so yielding to the loop between slices changes nothing in the answer.
        describes = listing_filter(node, ctx, AclOperation.DESCRIBE, ResourceType.TOPIC)
        yield_at = time.perf_counter() + SLICE_S
        for n, name in enumerate(sorted(image.topics.by_name)):
            if not n % TOPICS_PER_CLOCK_READ and time.perf_counter() > yield_at:
                await asyncio.sleep(0)
                yield_at = time.perf_counter() + SLICE_S
            if describes(name):
                topics.add(_topic_entry(node, ctx, encoder, image, name, include_ops))
    elif version < 12 and any(
        t.name is None or getattr(t, "topic_id", None) not in (None, ZERO_UUID) for t in requested
    ):
        # v10 and v11 carry the fields but Kafka serves neither: KafkaApis.handleTopicMetadataRequest throws
        # InvalidRequestException ("Topic name can not be null" / "Topic IDs are not supported in requests
        # for version"), which is answered with MetadataRequest.getErrorResponse, naming no topic itself.
        return build(response_class(ApiKey.METADATA, version), _invalid_request(request))
    elif topic_ids := _requested_topic_ids(requested):
        # As Kafka's useTopicId: once any id is given, the request is answered by id alone (names ignored).
        topics = _topics_by_id(node, ctx, encoder, image, topic_ids, include_ops)
    else:
        for t in requested:
            asked: str | None = getattr(t, "name", None)
            if asked is None:
                topics.add((ErrorCode.invalid_request, encoder.error(ErrorCode.invalid_request, None, None)))
            elif not authorize(node, ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, asked):
                denied = ErrorCode.topic_authorization_failed
                topics.add((denied, encoder.error(denied, asked, None)))
            else:
                topics.add(_topic_entry(node, ctx, encoder, image, asked, include_ops))
    include_cluster_ops = bool(getattr(request, "include_cluster_authorized_operations", False))
    frame = metadata_response_parts(
        version,
        ctx.correlation_id,
        brokers=[(b["node_id"], b["host"], b["port"], b["rack"]) for b in _brokers(image, ctx.listener)],
        cluster_id=node.cluster_id,
        controller_id=random_alive_broker(image),
        topics=topics.entries,
        topics_size=topics.size,
        cluster_authorized_operations=cluster_authorized_operations(node, ctx, include_cluster_ops),
    )
    # The metrics' error counts, as Kafka's MetadataResponse.errorCounts: the top-level code (v13+) and each topic's.
    codes = ((0,) if version >= 13 else ()) + tuple(topics.codes)
    return PreEncoded(frame.joined() if topics.size < JOIN_BELOW_BYTES else frame, codes)


#: DescribeCluster's ``EndpointType`` (KIP-919; Kafka's ``org.apache.kafka.clients.admin.EndpointType``).
BROKER_ENDPOINT, CONTROLLER_ENDPOINT = 1, 2
_ENDPOINT_NAMES = {BROKER_ENDPOINT: "BROKER", CONTROLLER_ENDPOINT: "CONTROLLER"}


def describe_cluster_answer(
    node: Node,
    ctx: RequestContext,
    request: Any,
    expected: int,
    nodes: Callable[[], list[dict[str, Any]]],
    controller_id: Callable[[], int],
) -> Any:
    """Kafka's ``AuthHelper.computeDescribeClusterResponse``: a listener answers only for its own endpoint type
    (``expected``: brokers on a client listener, controllers on a controller listener, KIP-919). An unknown type
    is UNSUPPORTED_ENDPOINT_TYPE and the other type MISMATCHED_ENDPOINT_TYPE (INVALID_REQUEST at v0). The
    controller id is -1 when ``nodes`` does not list it."""
    cls = response_class(ApiKey.DESCRIBE_CLUSTER, ctx.api_version)
    requested = getattr(request, "endpoint_type", BROKER_ENDPOINT)
    if requested != expected:
        if requested in _ENDPOINT_NAMES:
            error = ErrorCode.mismatched_endpoint_type
            message = (f"The request was sent to an endpoint of type {_ENDPOINT_NAMES[expected]}, but we wanted an "
                       f"endpoint of type {_ENDPOINT_NAMES[requested]}")  # fmt: skip
        else:
            error, message = ErrorCode.unsupported_endpoint_type, f"Unsupported endpoint type {requested}"
        return build(cls, {"error_code": ErrorCode.invalid_request if ctx.api_version == 0 else error,
                           "error_message": message, "endpoint_type": BROKER_ENDPOINT, "cluster_id": "",
                           "controller_id": -1, "brokers": [],
                           "cluster_authorized_operations": AUTHORIZED_OPERATIONS_OMITTED})  # fmt: skip
    listed = nodes()
    leader = controller_id()
    return build(cls, {
        "error_code": ErrorCode.none,
        "error_message": None,
        "endpoint_type": expected,
        "cluster_id": node.cluster_id,
        "controller_id": leader if any(n["broker_id"] == leader for n in listed) else -1,
        "brokers": listed,
        "cluster_authorized_operations": cluster_authorized_operations(
            node, ctx, bool(getattr(request, "include_cluster_authorized_operations", False))
        ),
    })  # fmt: skip


async def handle_describe_cluster(node: Node, ctx: RequestContext, request: Any) -> Any:
    """A client listener's DescribeCluster (Kafka's ``KafkaApis.handleDescribeCluster``): the unfenced brokers
    (the fenced too at v2 when asked), with a random unfenced broker as the controller."""
    fenced = bool(getattr(request, "include_fenced_brokers", False))
    return describe_cluster_answer(node, ctx, request, BROKER_ENDPOINT,
                                   lambda: _brokers(node.image, ctx.listener, include_fenced=fenced),
                                   lambda: random_alive_broker(node.image))  # fmt: skip
