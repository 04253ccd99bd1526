"""``ksteward metadata quorum describe``'s output, as kafka-metadata-quorum.sh prints it
(``MetadataQuorumCommand.handleDescribeStatus`` / ``handleDescribeReplication``), from DescribeQuorum answers
built by the server's own builder."""

from __future__ import annotations

import uuid

import pytest
from kio.schema.errors import ErrorCode

from ksteward.cli.admin_common import CommandError
from ksteward.cli.metadata_quorum import (
    QuorumInfo,
    pretty_table,
    quorum_info,
    replication_rows,
    status_document,
    status_lines,
)
from ksteward.protocol.apis import ApiKey
from ksteward.protocol.build import build
from ksteward.protocol.codec import request_class
from ksteward.raft.describe_quorum import VoterNode, describe_quorum_response, top_level_error
from ksteward.raft.progress import QuorumDescription, ReplicaProgress

DIRECTORY = uuid.UUID("2c6e3b8c-4f1a-4c9e-9a35-0d6b1e7f2a10")
THREE = QuorumDescription(
    leader_id=2,
    leader_epoch=5,
    high_watermark=90,
    voters=(
        ReplicaProgress(2, 100, 1_000_000, 1_000_000),
        ReplicaProgress(1, 95, 999_000, 998_500, DIRECTORY),
        ReplicaProgress(3, 80, 999_500, 997_000),
    ),
    observers=(ReplicaProgress(11, 100, 999_900, 999_900),),
)
NODES = (
    VoterNode(1, (("CONTROLLER", "127.0.0.1", 9093),)),
    VoterNode(2, (("CONTROLLER", "127.0.0.1", 9094),)),
    VoterNode(3, (("CONTROLLER", "::1", 9095),)),
)


def info(description: QuorumDescription | None, version: int = 2) -> QuorumInfo | None:
    topics = [{"topic_name": "__cluster_metadata", "partitions": [{"partition_index": 0}]}]
    request = build(request_class(ApiKey.DESCRIBE_QUORUM, version), {"topics": topics})
    return quorum_info(describe_quorum_response(request, version, description, NODES))


def test_status_prints_kafkas_eight_lines() -> None:
    described = info(THREE)
    assert described is not None
    assert status_lines(described, "q1Sh-9_ISia_zwGINzRvyQ") == [
        "ClusterId:              q1Sh-9_ISia_zwGINzRvyQ",
        "LeaderId:               2",
        "LeaderEpoch:            5",
        "HighWatermark:          90",
        "MaxFollowerLag:         20",
        "MaxFollowerLagTimeMs:   3000",
        'CurrentVoters:          [{"id": 2, "endpoints": ["CONTROLLER://127.0.0.1:9094"]}, '
        '{"id": 1, "directoryId": "LG47jE8aTJ6aNQ1rHn8qEA", "endpoints": ["CONTROLLER://127.0.0.1:9093"]}, '
        '{"id": 3, "endpoints": ["CONTROLLER://[::1]:9095"]}]',
        'CurrentObservers:       [{"id": 11}]',
    ]


def test_a_lone_voter_has_no_lag_and_json_has_the_same_facts() -> None:
    alone = info(QuorumDescription(1, 3, 42, (ReplicaProgress(1, 42, 5, 5),), (ReplicaProgress(4, 40, 4, 3),)))
    assert alone is not None
    lines = status_lines(alone, "c")
    assert lines[4:6] == ["MaxFollowerLag:         0", "MaxFollowerLagTimeMs:   0"]
    assert status_document(alone, "c") == {
        "clusterId": "c", "leaderId": 1, "leaderEpoch": 3, "highWatermark": 42, "maxFollowerLag": 0,
        "maxFollowerLagTimeMs": 0,
        "currentVoters": [{"id": 1, "directoryId": "AAAAAAAAAAAAAAAAAAAAAA", "endpoints": ["CONTROLLER://127.0.0.1:9093"]}],
        "currentObservers": [{"id": 4, "directoryId": "AAAAAAAAAAAAAAAAAAAAAA", "endpoints": []}],
    }  # fmt: skip


def test_an_unknown_caught_up_time_gives_minus_one() -> None:
    view = QuorumDescription(1, 3, 42, (ReplicaProgress(1, 42, 5, 5), ReplicaProgress(2)), ())
    described = info(view)
    assert described is not None
    assert status_lines(described, "c")[4:6] == ["MaxFollowerLag:         43", "MaxFollowerLagTimeMs:   -1"]


def test_replication_lists_leader_followers_then_observers_in_a_padded_table() -> None:
    described = info(THREE)
    assert described is not None
    rows = [[str(v) for v in row] for row in replication_rows(described)]
    assert rows == [
        ["2", "AAAAAAAAAAAAAAAAAAAAAA", "100", "0", "1000000", "1000000", "Leader"],
        ["1", "LG47jE8aTJ6aNQ1rHn8qEA", "95", "5", "999000", "998500", "Follower"],
        ["3", "AAAAAAAAAAAAAAAAAAAAAA", "80", "20", "999500", "997000", "Follower"],
        ["11", "AAAAAAAAAAAAAAAAAAAAAA", "100", "0", "999900", "999900", "Observer"],
    ]
    table = pretty_table(("NodeId", "DirectoryId", "LogEndOffset", "Lag", "LastFetchTimestamp",
                          "LastCaughtUpTimestamp", "Status"), rows)  # fmt: skip
    lines = table.split("\n")
    assert (
        lines[0]
        == "NodeId\tDirectoryId           \tLogEndOffset\tLag\tLastFetchTimestamp\tLastCaughtUpTimestamp\tStatus  \t"
    )
    assert (
        lines[1]
        == "2     \tAAAAAAAAAAAAAAAAAAAAAA\t100         \t0  \t1000000           \t1000000              \tLeader  \t"
    )
    assert (len(lines), lines[-1]) == (6, "")


def test_human_readable_times_are_relative_and_a_future_time_is_an_error() -> None:
    described = info(THREE)
    assert described is not None
    rows = replication_rows(described, now_ms=1_000_250)
    assert rows[0][4:6] == ("250 ms ago", "250 ms ago")
    with pytest.raises(CommandError, match="possible drift in system clock"):
        replication_rows(described, now_ms=999_000)


def test_a_non_leader_answer_is_none_and_errors_carry_kafkas_name() -> None:
    assert info(None) is None
    with pytest.raises(CommandError, match=r"^CLUSTER_AUTHORIZATION_FAILED: denied$"):
        quorum_info(top_level_error(2, ErrorCode.cluster_authorization_failed, "denied"))


def test_v0_answers_without_timestamps_print_minus_one() -> None:
    described = info(THREE, version=0)
    assert described is not None
    assert [row[4:6] for row in replication_rows(described)] == [(-1, -1)] * 4


def test_output_json_goes_before_or_after_describe() -> None:
    from ksteward.cli.main import build_parser

    parser = build_parser()
    base = ["metadata", "quorum", "--bootstrap-server", "h:1"]
    assert parser.parse_args([*base, "--output", "json", "describe", "--status"]).output == "json"
    assert parser.parse_args([*base, "describe", "--replication", "--output", "json"]).output == "json"
    assert parser.parse_args([*base, "describe", "--replication"]).output == "text"
