"""AddRaftVoter and RemoveRaftVoter on a static quorum (KIP-853 at kraft.version 0), one statement a row: Kafka's
order of checks in ``KafkaRaftClient.handleAddVoterRequest`` / ``handleRemoveVoterRequest`` and
``AddVoterHandler`` / ``RemoveVoterHandler`` (KafkaRaftClientReconfigTest for the error of each case)."""

from __future__ import annotations

import uuid
from dataclasses import replace
from typing import Any

import pytest
from kio.schema.errors import ErrorCode

from ksteward.protocol.apis import ApiKey
from ksteward.protocol.build import build
from ksteward.protocol.codec import request_class
from ksteward.raft.voter_changes import QuorumView, add_voter, remove_voter

CLUSTER = "MkU3OEVBNTcwNTJENDM2Qg"
DIRECTORY = uuid.UUID("6f1c1d2e-0000-4000-8000-000000000004")
LEADER = QuorumView(cluster_id=CLUSTER, leading=True, shutting_down=False, high_watermark=12,
                    default_listener="CONTROLLER")  # fmt: skip
NO_HWM = "Request timed out waiting for leader to establish HWM and fence previous voter changes"


def add_request(version: int = 1, **changes: Any) -> Any:
    values: dict[str, Any] = {
        "cluster_id": CLUSTER, "timeout": 30000, "voter_id": 4, "voter_directory_id": DIRECTORY,
        "listeners": [{"name": "CONTROLLER", "host": "localhost", "port": 9097}], "ack_when_committed": True,
    }  # fmt: skip
    return build(request_class(ApiKey.ADD_RAFT_VOTER, version), {**values, **changes})


def remove_request(**changes: Any) -> Any:
    values = {"cluster_id": CLUSTER, "voter_id": 3, "voter_directory_id": DIRECTORY, **changes}
    return build(request_class(ApiKey.REMOVE_RAFT_VOTER, 0), values)


ADD_CASES = [
    # (statement, view, request, error, message)
    ("a static quorum refuses to add a voter (testAddVoterWithKraftVersion0)", LEADER, add_request(),
     ErrorCode.unsupported_version, "Cluster doesn't support adding voter because the kraft.version feature is 0"),
    ("v0 likewise", LEADER, add_request(version=0),
     ErrorCode.unsupported_version, "Cluster doesn't support adding voter because the kraft.version feature is 0"),
    ("the version is checked before the voter set: an existing voter's id too", LEADER, add_request(voter_id=1),
     ErrorCode.unsupported_version, "Cluster doesn't support adding voter because the kraft.version feature is 0"),
    ("a replica that does not lead (testAddVoterToNotLeader)", replace(LEADER, leading=False, high_watermark=-1),
     add_request(), ErrorCode.not_leader_or_follower, None),
    ("a leader shutting down", replace(LEADER, shutting_down=True), add_request(),
     ErrorCode.broker_not_available, None),
    ("before the leader has a high watermark in its epoch (testAddVoterWithoutFencedPreviousLeaders)",
     replace(LEADER, high_watermark=-1), add_request(), ErrorCode.request_timed_out, NO_HWM),
    ("no directory id (testAddVoterWithMissingDirectoryId)", LEADER, add_request(voter_directory_id=None),
     ErrorCode.invalid_request, "Add voter request didn't include a valid voter"),
    ("the zero directory id", LEADER, add_request(voter_directory_id=uuid.UUID(int=0)),
     ErrorCode.invalid_request, "Add voter request didn't include a valid voter"),
    ("a negative voter id", LEADER, add_request(voter_id=-1),
     ErrorCode.invalid_request, "Add voter request didn't include a valid voter"),
    ("no endpoint on the default listener", LEADER,
     add_request(listeners=[{"name": "PLAINTEXT", "host": "h", "port": 9092}]), ErrorCode.invalid_request,
     "Add voter request didn't include the endpoint (Endpoints(endpoints={ListenerName(PLAINTEXT)=h/<unresolved>"
     ":9092})) for the default listener ListenerName(CONTROLLER)"),
    ("listener names are compared normalised (upper case)", LEADER,
     add_request(listeners=[{"name": "controller", "host": "h", "port": 9097}]),
     ErrorCode.unsupported_version, "Cluster doesn't support adding voter because the kraft.version feature is 0"),
    ("another cluster's id", LEADER, add_request(cluster_id="other"), ErrorCode.inconsistent_cluster_id,
     f'The given id "other" doesn\'t match the cluster id "{CLUSTER}"'),
    ("the cluster id is checked before the leadership", replace(LEADER, leading=False), add_request(cluster_id=""),
     ErrorCode.inconsistent_cluster_id, f'The given id "" doesn\'t match the cluster id "{CLUSTER}"'),
    ("no cluster id is accepted", LEADER, add_request(cluster_id=None),
     ErrorCode.unsupported_version, "Cluster doesn't support adding voter because the kraft.version feature is 0"),
    ("the leadership is checked before the voter", replace(LEADER, leading=False), add_request(voter_id=-1),
     ErrorCode.not_leader_or_follower, None),
]  # fmt: skip

REMOVE_CASES = [
    ("a static quorum refuses to remove a voter", LEADER, remove_request(),
     ErrorCode.unsupported_version, "Cluster doesn't support removing voter because the kraft.version feature is 0"),
    ("the version is checked before the voter set: a non-voter too (not VOTER_NOT_FOUND)", LEADER,
     remove_request(voter_id=99), ErrorCode.unsupported_version,
     "Cluster doesn't support removing voter because the kraft.version feature is 0"),
    ("a replica that does not lead", replace(LEADER, leading=False), remove_request(),
     ErrorCode.not_leader_or_follower, None),
    ("a leader shutting down", replace(LEADER, shutting_down=True), remove_request(),
     ErrorCode.broker_not_available, None),
    ("before the leader has a high watermark", replace(LEADER, high_watermark=-1), remove_request(),
     ErrorCode.request_timed_out, NO_HWM),
    ("no directory id", LEADER, remove_request(voter_directory_id=None),
     ErrorCode.invalid_request, "Remove voter request didn't include a valid voter"),
    ("a negative voter id", LEADER, remove_request(voter_id=-2),
     ErrorCode.invalid_request, "Remove voter request didn't include a valid voter"),
    ("another cluster's id", LEADER, remove_request(cluster_id="x"), ErrorCode.inconsistent_cluster_id,
     f'The given id "x" doesn\'t match the cluster id "{CLUSTER}"'),
]  # fmt: skip


@pytest.mark.parametrize(("statement", "view", "request_", "error", "message"), ADD_CASES,
                         ids=[c[0] for c in ADD_CASES])  # fmt: skip
def test_add_raft_voter(statement: str, view: QuorumView, request_: Any, error: ErrorCode, message: str | None) -> None:
    answer = add_voter(view, request_)
    assert (answer.error, answer.message) == (error, message)


@pytest.mark.parametrize(("statement", "view", "request_", "error", "message"), REMOVE_CASES,
                         ids=[c[0] for c in REMOVE_CASES])  # fmt: skip
def test_remove_raft_voter(
    statement: str, view: QuorumView, request_: Any, error: ErrorCode, message: str | None
) -> None:
    answer = remove_voter(view, request_)
    assert (answer.error, answer.message) == (error, message)
