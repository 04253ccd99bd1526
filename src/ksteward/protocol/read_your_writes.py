"""Read-your-writes across brokers: a ksteward extension carried in Kafka's header tagged fields (KIP-482).

Kafka has a race here (KAFKA-15713): a client that creates an ACL through one broker and then describes
ACLs on another broker may not see it yet, because the second broker has not applied the controller's
record. ksteward closes it with one tagged field, in the headers only, so no message schema changes:

- **Response header v1, tag** :data:`METADATA_OFFSET_TAG`: a response to a forwardable mutation
  (CreateAcls, CreateTopics, IncrementalAlterConfigs, ...) answered by a node with the controller role
  carries the metadata offset that node had committed when it answered: at least the offset of the records
  the request wrote. Inside an Envelope it is always there (the broker is ksteward's own client); a broker
  passes it on to its client, and a node answers with it, only when the client's request carried the tag.
- **Request header v2, the same tag:** a request that carries an offset is answered only once the node
  has applied the metadata log up to that offset, or with REQUEST_TIMED_OUT in every entry after
  ``ksteward.read.your.writes.timeout.ms``. -1 asks for nothing to be applied: it only opts in to the
  offset in the answer. A request without the tag is served at once, as Kafka serves it, and its answer has
  no tagged field.

The answer carries the tag only for a client that asked for it because not every client reads KIP-482's
tagged fields right: kafkajs 2.2's ``Decoder.readTaggedFields`` skips one byte too few, so an unknown tag in
a response header misaligns everything after it.

The value is a signed 64-bit big-endian integer (8 bytes). Headers that are not flexible (request header
v1, response header v0) have no tagged fields, so only flexible API versions carry it. KIP-482 makes every
receiver skip tagged fields it does not know, so unmodified clients ignore it.
"""

from __future__ import annotations

import struct
from typing import Final

from ksteward.protocol.apis import ApiKey
from ksteward.protocol.errors import InvalidRequestError
from ksteward.protocol.varint import read_uvarint, write_uvarint

METADATA_OFFSET_TAG: Final = 0x4B53  # "KS": far above the small tags Kafka's own schemas use
# Forwardable APIs that write nothing: their answers carry no offset. (kafkajs 2.2 also misreads any tagged field
# in a response header, its Decoder.readTaggedFields skipping one byte too few, so a tag there breaks it.)
UNTAGGED_READS: Final = frozenset(
    {ApiKey.LIST_PARTITION_REASSIGNMENTS, ApiKey.DESCRIBE_QUORUM, ApiKey.ADD_RAFT_VOTER, ApiKey.REMOVE_RAFT_VOTER}
)
_I64: Final = struct.Struct(">q")
_CORRELATION_ID_BYTES: Final = 4
_FIXED_REQUEST_HEADER_BYTES: Final = 8  # api key, api version, correlation id


def offset_tags(offset: int) -> bytes:
    """A tagged-field section holding only the metadata offset."""
    return b"\x01" + write_uvarint(METADATA_OFFSET_TAG) + write_uvarint(_I64.size) + _I64.pack(offset)


def read_header_offset(data: bytes, tags_at: int) -> int | None:
    """The metadata offset in the tagged section at ``tags_at``; None if it holds none. Every declared size
    is checked against the bytes present; a malformed section is an :class:`InvalidRequestError`."""
    count, pos = read_uvarint(data, tags_at)
    found = None
    for _ in range(count):
        tag, pos = read_uvarint(data, pos)
        size, pos = read_uvarint(data, pos)
        if size > len(data) - pos:
            raise InvalidRequestError(f"tagged field {tag} declares {size} bytes, {len(data) - pos} remain")
        if tag == METADATA_OFFSET_TAG:
            if size != _I64.size:
                raise InvalidRequestError(f"the metadata offset tag holds {size} bytes, not {_I64.size}")
            (found,) = _I64.unpack_from(data, pos)
        pos += size
    return found


def request_min_offset(payload: bytes) -> int | None:
    """The metadata offset a v2 request header (``payload`` starts with it) asks the node to have applied."""
    if len(payload) < _FIXED_REQUEST_HEADER_BYTES + 2:
        raise InvalidRequestError("request header too short")
    (client_id_length,) = struct.unpack_from(">h", payload, _FIXED_REQUEST_HEADER_BYTES)
    tags_at = _FIXED_REQUEST_HEADER_BYTES + 2 + max(client_id_length, 0)  # ClientId: a classic nullable string
    if tags_at >= len(payload):
        raise InvalidRequestError("request header too short for its tagged fields")
    return read_header_offset(payload, tags_at)


def without_header_tags(response_data: bytes) -> bytes:
    """A v1 response header and body (``response_data`` starts with the header) with the header's tagged fields
    dropped: what a client that did not ask for the offset gets from a broker."""
    count, pos = read_uvarint(response_data, _CORRELATION_ID_BYTES)
    if count == 0:
        return response_data
    for _ in range(count):
        _tag, pos = read_uvarint(response_data, pos)
        size, pos = read_uvarint(response_data, pos)
        pos += size
    if pos > len(response_data):
        raise InvalidRequestError("response header tagged fields run past the response")
    return response_data[:_CORRELATION_ID_BYTES] + b"\x00" + response_data[pos:]


def with_offset_tag(frame: bytes, offset: int) -> bytes:
    """A whole response frame whose v1 header has an empty tagged-field section (as ksteward's encoders write
    it), with the metadata offset put in that section and the size prefix grown to match."""
    if frame[8:9] != b"\x00":
        raise ValueError("the response header already has tagged fields")
    rest = frame[4:8] + offset_tags(offset) + frame[9:]
    return struct.pack(">i", len(rest)) + rest


def response_offset(response_data: bytes) -> int | None:
    """The metadata offset in a v1 response header (``response_data`` starts with it)."""
    return read_header_offset(response_data, _CORRELATION_ID_BYTES)
