"""Vote (52) v0-2, BeginQuorumEpoch (53) v0-1 and EndQuorumEpoch (54) v0-1 as the voter builds them survive
ksteward's wire codec both ways, so a driver can send what ``RaftVoter`` returns and hand back what it decodes
(Kafka's RaftUtil builders; KafkaRaftClientTest drives every version through the same paths)."""

from __future__ import annotations

import dataclasses
import uuid

import pytest
from kio.schema.errors import ErrorCode

from ksteward.protocol.apis import ApiKey
from ksteward.protocol.codec import decode_request, decode_response, encode_request, encode_response
from ksteward.raft import messages

_DIR = uuid.UUID(int=7)


def _request_roundtrip(api_key: int, version: int, body: object) -> object:
    payload = encode_request(api_key, version, 11, "ksteward-raft", body)
    request = decode_request(payload, {api_key: (0, 2)})
    assert request.api_version == version
    return request.body


def _response_roundtrip(api_key: int, version: int, body: object) -> object:
    frame = encode_response(api_key, version, 11, body)
    return decode_response(api_key, version, frame[4:]).body


@pytest.mark.parametrize("version", [0, 1, 2])
def test_vote_request_and_response(version: int) -> None:
    body = messages.vote_request(version, cluster_id="c", voter_id=2, epoch=5, replica_id=1, last_epoch=4,
                                 last_offset=99, pre_vote=True, replica_directory_id=_DIR)  # fmt: skip
    decoded = _request_roundtrip(ApiKey.VOTE, version, body)
    p = messages.metadata_partition(decoded)
    assert p is not None
    assert (p.replica_epoch, p.replica_id, p.last_offset_epoch, p.last_offset) == (5, 1, 4, 99)
    assert getattr(p, "pre_vote", False) is (version >= 2)
    assert getattr(decoded, "voter_id", -1) == (2 if version >= 1 else -1)
    endpoints = [{"node_id": 1, "host": "h", "port": 9093}]
    answer = messages.vote_response(version, leader_id=1, epoch=5, granted=True, node_endpoints=endpoints)
    decoded = _response_roundtrip(ApiKey.VOTE, version, answer)
    p = messages.metadata_partition(decoded)
    assert (p.error_code, p.leader_id, p.leader_epoch, p.vote_granted) == (ErrorCode.none, 1, 5, True)
    top = _response_roundtrip(
        ApiKey.VOTE, version, messages.vote_response(version, top_error=ErrorCode.invalid_request)
    )
    assert top.error_code == ErrorCode.invalid_request and top.topics == ()


@pytest.mark.parametrize("version", [0, 1])
def test_begin_quorum_epoch_request_and_response(version: int) -> None:
    body = messages.begin_quorum_epoch_request(version, cluster_id=None, voter_id=3, leader_id=1, epoch=7,
                                               endpoints={"CONTROLLER": ("h", 9093)})  # fmt: skip
    decoded = _request_roundtrip(ApiKey.BEGIN_QUORUM_EPOCH, version, body)
    p = messages.metadata_partition(decoded)
    assert (p.leader_id, p.leader_epoch) == (1, 7)
    if version >= 1:
        assert [(e.name, e.host, e.port) for e in decoded.leader_endpoints] == [("CONTROLLER", "h", 9093)]
    answer = messages.epoch_response(ApiKey.BEGIN_QUORUM_EPOCH, version, leader_id=1, epoch=7)
    p = messages.metadata_partition(_response_roundtrip(ApiKey.BEGIN_QUORUM_EPOCH, version, answer))
    assert (p.error_code, p.leader_id, p.leader_epoch) == (ErrorCode.none, 1, 7)


@pytest.mark.parametrize("version", [0, 1])
def test_end_quorum_epoch_request_keeps_the_preferred_order(version: int) -> None:
    body = messages.end_quorum_epoch_request(version, cluster_id="c", leader_id=1, epoch=7, preferred=[3, 2],
                                             endpoints={})  # fmt: skip
    decoded = _request_roundtrip(ApiKey.END_QUORUM_EPOCH, version, body)
    p = messages.metadata_partition(decoded)
    assert (p.leader_id, p.leader_epoch, messages.preferred_candidates(p)) == (1, 7, [3, 2])
    answer = messages.epoch_response(ApiKey.END_QUORUM_EPOCH, version, error=ErrorCode.fenced_leader_epoch, epoch=8)
    p = messages.metadata_partition(_response_roundtrip(ApiKey.END_QUORUM_EPOCH, version, answer))
    assert (p.error_code, p.leader_epoch) == (ErrorCode.fenced_leader_epoch, 8)


def test_a_message_for_another_partition_is_not_the_metadata_partition() -> None:
    body = messages.vote_request(2, cluster_id="c", voter_id=2, epoch=5, replica_id=1, last_epoch=4, last_offset=9,
                                 pre_vote=False)  # fmt: skip
    topic = dataclasses.replace(body.topics[0], topic_name="other")
    assert messages.metadata_partition(dataclasses.replace(body, topics=(topic,))) is None
