"""The read-your-writes header tag (ksteward.protocol.read_your_writes): its bytes, hostile input, the codec
round trip, and the waiters a read parks on."""

from __future__ import annotations

import asyncio
import datetime
import struct

import pytest
from kio.schema.create_acls.v1.response import CreateAclsResponse as CreateAclsResponseV0Header
from kio.schema.create_acls.v3.response import CreateAclsResponse
from kio.static.primitive import i32Timedelta

from ksteward.protocol.apis import ApiKey
from ksteward.protocol.codec import decode_request, encode_response
from ksteward.protocol.errors import InvalidRequestError
from ksteward.protocol.read_your_writes import (
    METADATA_OFFSET_TAG,
    offset_tags,
    read_header_offset,
    request_min_offset,
    response_offset,
    with_offset_tag,
    without_header_tags,
)
from ksteward.server.offset_waiters import OffsetWaiters

SERVED = {ApiKey.DESCRIBE_ACLS: (0, 3), ApiKey.METADATA: (0, 12)}


def _describe_acls_v3(tags: bytes, client_id: bytes = b"\x00\x03abc") -> bytes:
    """A DescribeAcls v3 request (header v2) whose header tag section is ``tags``."""
    header = struct.pack(">hhi", ApiKey.DESCRIBE_ACLS, 3, 7) + client_id + tags
    body = bytes([1, 0, 3, 0, 0, 1, 1, 0])  # TOPIC, null name, LITERAL, null principal, null host, ANY, ANY, no tags
    return header + body


def test_the_tag_is_an_int64_under_tag_0x4b53() -> None:
    assert offset_tags(258) == b"\x01" + b"\xd3\x96\x01" + b"\x08" + (258).to_bytes(8, "big")
    assert METADATA_OFFSET_TAG == 0x4B53


def test_a_request_header_tag_reaches_the_decoded_request() -> None:
    request = decode_request(_describe_acls_v3(offset_tags(41)), SERVED)
    assert request.min_offset == 41  # type: ignore[union-attr]
    assert decode_request(_describe_acls_v3(b"\x00"), SERVED).min_offset is None  # type: ignore[union-attr]


def test_other_unknown_header_tags_are_skipped_around_it() -> None:
    tags = b"\x02" + b"\x05\x01\xff" + b"\xd3\x96\x01\x08" + (9).to_bytes(8, "big")
    assert decode_request(_describe_acls_v3(tags), SERVED).min_offset == 9  # type: ignore[union-attr]
    assert decode_request(_describe_acls_v3(tags, client_id=b"\xff\xff"), SERVED).min_offset == 9  # type: ignore[union-attr]


@pytest.mark.parametrize(
    "tags",
    [
        b"\x01\xd3\x96\x01\x04\x00\x00\x00\x01",  # the offset in 4 bytes, not 8
        b"\x01\xd3\x96\x01\x7f\x00",  # a size past the end of the frame
        b"\x05",  # five tags announced, none present
        b"\x01\xd3\x96\x81\x81\x81\x81\x81",  # a varint longer than five bytes
    ],
)
def test_a_malformed_tag_is_an_invalid_request(tags: bytes) -> None:
    with pytest.raises(InvalidRequestError):
        request_min_offset(_describe_acls_v3(tags))


def test_a_response_header_carries_the_offset_and_a_v0_header_goes_without() -> None:
    flexible = CreateAclsResponse(throttle_time=i32Timedelta.parse(datetime.timedelta(0)), results=())
    frame = encode_response(ApiKey.CREATE_ACLS, 3, 5, flexible, metadata_offset=1234)
    assert response_offset(frame[4:]) == 1234
    assert read_header_offset(encode_response(ApiKey.CREATE_ACLS, 3, 5, flexible)[4:], 4) is None
    classic = CreateAclsResponseV0Header(throttle_time=i32Timedelta.parse(datetime.timedelta(0)), results=())
    assert encode_response(ApiKey.CREATE_ACLS, 1, 5, classic, metadata_offset=1234) == encode_response(
        ApiKey.CREATE_ACLS, 1, 5, classic
    )


def test_waiters_resolve_in_offset_order_once_applied() -> None:
    async def run() -> list[int]:
        waiters, done = OffsetWaiters(), []

        async def wait(offset: int) -> None:
            await waiters.wait(offset, applied=3)
            done.append(offset)

        tasks = [asyncio.create_task(wait(o)) for o in (9, 5, 3, 7)]
        await asyncio.sleep(0)  # let each task park (offset 3 is already applied and returns at once)
        waiters.advance(6)
        await asyncio.sleep(0)
        assert sorted(done) == [3, 5]
        tasks[0].cancel()  # a cancelled read leaves its future behind; advancing past it is harmless
        waiters.advance(10)
        await asyncio.gather(*tasks, return_exceptions=True)
        return done

    assert sorted(asyncio.run(run())) == [3, 5, 7]


def test_the_offset_goes_into_a_pre_encoded_frame_and_out_again() -> None:
    body = b"\x00\x00\x00\x00body"
    frame = struct.pack(">i", 4 + 1 + len(body)) + struct.pack(">i", 77) + b"\x00" + body
    tagged = with_offset_tag(frame, 123_456)
    (size,) = struct.unpack_from(">i", tagged, 0)
    assert size == len(tagged) - 4
    assert response_offset(tagged[4:]) == 123_456
    assert tagged[4:8] == frame[4:8] and tagged.endswith(body)
    assert without_header_tags(tagged[4:]) == frame[4:]
