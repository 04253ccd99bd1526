"""The ``quorum-state`` file (Kafka's ``FileQuorumStateStore``) and the single voter's epoch on start-up
(``QuorumState.initialize`` then ``transitionToCandidate``: one above the stored and the log's epochs)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ksteward.raft.quorum_state import (
    QUORUM_STATE_FILE,
    ElectionState,
    QuorumStateError,
    begin_single_voter_epoch,
    next_leader_epoch,
    read_quorum_state,
    write_quorum_state,
)


@pytest.mark.parametrize(
    ("stored", "log_epoch", "expected"),
    [
        (0, 0, 1),  # a new node: epoch 1 (KafkaRaftClientTest.testInitializeSingleMemberQuorum)
        (0, -1, 1),  # an empty log reports -1 in MetadataLog.last_epoch
        (3, 1, 4),  # the file is ahead of the log: a restart after an epoch with no durable record
        (3, 3, 4),
        (1, 5, 6),  # the log is ahead (an imported or restored log): the file is overruled
    ],
)
def test_the_next_epoch_is_one_above_the_file_and_the_log(stored: int, log_epoch: int, expected: int) -> None:
    assert next_leader_epoch(stored, log_epoch) == expected


def test_each_start_leads_in_a_new_epoch_and_persists_it_first(tmp_path: Path) -> None:
    path = tmp_path / QUORUM_STATE_FILE
    assert read_quorum_state(path) is None
    assert begin_single_voter_epoch(tmp_path, 1, -1) == 1
    assert read_quorum_state(path) == ElectionState(leader_epoch=1, leader_id=1, voted_id=1, voters=(1,))
    assert begin_single_voter_epoch(tmp_path, 1, 1) == 2
    assert begin_single_voter_epoch(tmp_path, 1, 5) == 6
    assert begin_single_voter_epoch(tmp_path, 1, 2) == 7
    assert read_quorum_state(path) == ElectionState(leader_epoch=7, leader_id=1, voted_id=1, voters=(1,))
    assert sorted(p.name for p in tmp_path.iterdir()) == [QUORUM_STATE_FILE]  # no .tmp left behind


def test_the_file_is_kafkas_data_version_0_json_line(tmp_path: Path) -> None:
    path = tmp_path / QUORUM_STATE_FILE
    (tmp_path / "quorum-state.tmp").write_text("left over by a crash")
    write_quorum_state(path, ElectionState(leader_epoch=4, leader_id=1, voted_id=1, voters=(1,)))
    text = path.read_text()
    assert text.endswith("\n") and text.count("\n") == 1
    assert json.loads(text) == {
        "clusterId": "", "leaderId": 1, "leaderEpoch": 4, "votedId": 1, "appliedOffset": 0,
        "currentVoters": [{"voterId": 1}], "data_version": 0,
    }  # fmt: skip
    assert not (tmp_path / "quorum-state.tmp").exists()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # The examples in FileQuorumStateStore's class comment, data versions 0 and 1.
        (
            '{"clusterId":"","leaderId":1,"leaderEpoch":2,"votedId":-1,"appliedOffset":0,"currentVoters":[],'
            '"data_version":0}',
            ElectionState(leader_epoch=2, leader_id=1, voted_id=-1),
        ),
        (
            '{"leaderId":-1,"leaderEpoch":2,"votedId":1,"votedDirectoryId":"J8aAPcfLQt2bqs1JT_rMgQ","data_version":1}',
            ElectionState(leader_epoch=2, leader_id=-1, voted_id=1),
        ),
        (
            '{"leaderId":3,"leaderEpoch":9,"votedId":-1,"currentVoters":[{"voterId":1},{"voterId":3}],'
            '"data_version":0}\n',
            ElectionState(leader_epoch=9, leader_id=3, voted_id=-1, voters=(1, 3)),
        ),
    ],
)
def test_kafkas_files_are_read(tmp_path: Path, text: str, expected: ElectionState) -> None:
    path = tmp_path / QUORUM_STATE_FILE
    path.write_text(text)
    assert read_quorum_state(path) == expected
    assert begin_single_voter_epoch(tmp_path, 1, 0) == expected.leader_epoch + 1


GOOD = '{"leaderId":1,"leaderEpoch":3,"votedId":1,"data_version":0}'


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (b"", "not a line of JSON"),
        (GOOD[:20].encode(), "not a line of JSON"),  # truncated mid-write (a file system without rename order)
        (b"\xff\xfe\x00garbage", "not a line of JSON"),
        (b"\n" + GOOD.encode(), "not a line of JSON"),  # Kafka reads the first line only
        (b"[1, 2, 3]", "does not hold a JSON object"),
        (b'"leaderEpoch"', "does not hold a JSON object"),
        (GOOD.replace(',"data_version":0', "").encode(), "no integer data_version"),
        (GOOD.replace('"data_version":0', '"data_version":"0"').encode(), "no integer data_version"),
        (GOOD.replace('"data_version":0', '"data_version":2').encode(), "data_version 2 is not one of"),
        (GOOD.replace('"leaderEpoch":3,', "").encode(), "leaderEpoch must be an integer"),
        (GOOD.replace('"leaderEpoch":3', '"leaderEpoch":-1').encode(), "leaderEpoch must be an integer"),
        (GOOD.replace('"leaderEpoch":3', '"leaderEpoch":3.5').encode(), "leaderEpoch must be an integer"),
        (GOOD.replace('"leaderEpoch":3', '"leaderEpoch":true').encode(), "leaderEpoch must be an integer"),
        (GOOD.replace('"leaderEpoch":3', '"leaderEpoch":1e400').encode(), "leaderEpoch must be an integer"),
        (GOOD.replace('"leaderEpoch":3', f'"leaderEpoch":{2**31}').encode(), "leaderEpoch must be an integer"),
        (GOOD.replace('"leaderId":1', '"leaderId":-2').encode(), "leaderId must be an integer"),
        (GOOD.replace('"votedId":1', '"votedId":null').encode(), "votedId must be an integer"),
        (GOOD.replace("}", ',"currentVoters":{"voterId":1}}').encode(), "currentVoters is not a list"),
        (GOOD.replace("}", ',"currentVoters":[{"voterId":"x"}]}').encode(), "voterId must be an integer"),
        (b"[" * 100_000, "not a line of JSON"),  # deep nesting: a clean error, not a RecursionError
        (b" " * (2 << 20), "larger than"),
    ],
)
def test_a_hostile_file_is_a_clear_error_and_is_left_alone(tmp_path: Path, content: bytes, reason: str) -> None:
    path = tmp_path / QUORUM_STATE_FILE
    path.write_bytes(content)
    with pytest.raises(QuorumStateError, match=reason) as caught:
        begin_single_voter_epoch(tmp_path, 1, 0)
    assert str(path) in str(caught.value)
    assert path.read_bytes() == content  # never overwritten: the epoch it held is not known


def test_an_unreadable_or_unwritable_file_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / QUORUM_STATE_FILE).mkdir()
    with pytest.raises(QuorumStateError, match="cannot read"):
        begin_single_voter_epoch(tmp_path, 1, 0)
    with pytest.raises(QuorumStateError, match="cannot write"):
        write_quorum_state(tmp_path / "missing-dir" / QUORUM_STATE_FILE, ElectionState(leader_epoch=1))


def test_the_epoch_cannot_overflow_int32(tmp_path: Path) -> None:
    with pytest.raises(QuorumStateError, match="cannot grow past"):
        begin_single_voter_epoch(tmp_path, 1, 2**31 - 1)
