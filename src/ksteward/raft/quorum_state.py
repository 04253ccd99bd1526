"""The ``quorum-state`` file and the single controller voter's election on start-up.

Kafka keeps a voter's election state in ``<metadata.log.dir>/__cluster_metadata-0/quorum-state``
(``FileQuorumStateStore``): one line of JSON from the ``QuorumStateData`` schema plus a ``data_version``
field, written to ``quorum-state.tmp``, fsynced and renamed over the old file. ``QuorumState.initialize``
reads it: a file epoch below the log's last epoch is replaced by the log's, and a quorum of one voter then
becomes candidate and leader at once in the next epoch (``KafkaRaftClient.initialize``,
``QuorumState.transitionToCandidate``: epoch + 1). The new state is written before the node acts on it
(``QuorumState.durableTransitionTo``). So every start of the one controller begins a new epoch, and a
record lost in a crash can never be replaced by a different record with the same offset and epoch.

ksteward writes ``data_version`` 0 (``kraft.version`` 0: static voters from ``controller.quorum.voters``)
and reads Kafka's data versions 0 and 1. A file that cannot be read is a start-up error, as Kafka's
``FileQuorumStateStore.readElectionState`` throws: guessing an epoch could reuse one.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ksteward.metadata.files import fsync_dir, write_all

__all__ = [
    "INT32_MAX",
    "QUORUM_STATE_FILE",
    "ElectionState",
    "QuorumStateError",
    "begin_single_voter_epoch",
    "next_leader_epoch",
    "read_quorum_state",
    "write_quorum_state",
]

#: Kafka's ``FileQuorumStateStore.DEFAULT_FILE_NAME``, in the ``__cluster_metadata-0`` directory.
QUORUM_STATE_FILE = "quorum-state"
_SUPPORTED_VERSIONS = (0, 1)
#: A real file is well under 1 KiB for any sane voter set; refuse to read a huge one.
_MAX_BYTES = 1 << 20
#: Every field of the file is an int32, as on the wire: no epoch, and so no election, goes past this one.
INT32_MAX = 2**31 - 1


class QuorumStateError(Exception):
    """The ``quorum-state`` file cannot be read or written; the message names the file and the reason."""


@dataclass(frozen=True, slots=True)
class ElectionState:
    """Kafka's ``ElectionState``: the epoch, its leader (-1 unknown) and this node's vote (-1 none)."""

    leader_epoch: int
    leader_id: int = -1
    voted_id: int = -1
    voters: tuple[int, ...] = ()


def next_leader_epoch(stored_epoch: int, log_last_epoch: int) -> int:
    """The epoch a single voter leads in after a start: one above both the stored epoch and the epoch of the
    log's last batch (a file behind the log is overruled by the log, as ``QuorumState.initialize`` does)."""
    return max(stored_epoch, log_last_epoch, 0) + 1


def read_quorum_state(path: Path) -> ElectionState | None:
    """The stored state; None when there is no file. Raises ``QuorumStateError`` for anything else."""
    try:
        with open(path, "rb") as f:
            raw = f.read(_MAX_BYTES + 1)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise QuorumStateError(f"cannot read {path}: {exc.strerror or exc}") from None
    if len(raw) > _MAX_BYTES:
        raise QuorumStateError(f"{path} is larger than {_MAX_BYTES} bytes: not a quorum-state file")
    try:
        line = raw.decode("utf-8").split("\n", 1)[0]
        data = json.loads(line)
    except (ValueError, RecursionError) as exc:  # UnicodeDecodeError is a ValueError; RecursionError: deep nesting
        raise QuorumStateError(f"{path} is not a line of JSON (empty, truncated or corrupt): {exc}") from None
    if not isinstance(data, dict):
        raise QuorumStateError(f"{path} does not hold a JSON object")
    version = data.get("data_version")
    if type(version) is not int:
        raise QuorumStateError(f"{path} has no integer data_version field")
    if version not in _SUPPORTED_VERSIONS:
        raise QuorumStateError(f"{path}: data_version {version} is not one of the supported {_SUPPORTED_VERSIONS}")
    epoch = _int_field(path, data, "leaderEpoch", minimum=0)
    leader_id = _int_field(path, data, "leaderId", minimum=-1)
    voted_id = _int_field(path, data, "votedId", minimum=-1)
    voters: tuple[int, ...] = ()
    if version == 0 and "currentVoters" in data:
        entries = data["currentVoters"]
        if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
            raise QuorumStateError(f"{path}: currentVoters is not a list of objects")
        voters = tuple(_int_field(path, e, "voterId", minimum=0) for e in entries)
    return ElectionState(leader_epoch=epoch, leader_id=leader_id, voted_id=voted_id, voters=voters)


def _int_field(path: Path, data: dict[str, Any], name: str, *, minimum: int) -> int:
    value = data.get(name)
    if type(value) is not int or not minimum <= value <= INT32_MAX:
        raise QuorumStateError(f"{path}: field {name} must be an integer from {minimum} to {INT32_MAX}")
    return value


def write_quorum_state(path: Path, state: ElectionState) -> None:
    """Replace the file atomically and durably (``FileQuorumStateStore.writeElectionStateToFile``): the JSON
    goes to ``quorum-state.tmp``, is fsynced and renamed over the file, and the directory is fsynced."""
    body = {
        "clusterId": "",
        "leaderId": state.leader_id,
        "leaderEpoch": state.leader_epoch,
        "votedId": state.voted_id,
        "appliedOffset": 0,
        "currentVoters": [{"voterId": v} for v in state.voters],
        "data_version": 0,
    }
    temp = path.with_name(path.name + ".tmp")
    try:
        temp.unlink(missing_ok=True)
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            write_all(fd, json.dumps(body, separators=(",", ":")).encode() + b"\n")
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temp, path)
        fsync_dir(path.parent)
    except OSError as exc:
        raise QuorumStateError(f"cannot write {path}: {exc.strerror or exc}") from None
    finally:
        temp.unlink(missing_ok=True)


def begin_single_voter_epoch(directory: Path, node_id: int, log_last_epoch: int) -> int:
    """Elect this node, the only voter, in a new epoch: read ``quorum-state`` in ``directory``, choose the next
    epoch, persist "leader ``node_id``, voted for itself" before anything is appended in it, return it."""
    path = directory / QUORUM_STATE_FILE
    stored = read_quorum_state(path)
    epoch = next_leader_epoch(stored.leader_epoch if stored is not None else 0, log_last_epoch)
    if epoch > INT32_MAX:
        raise QuorumStateError(f"{path}: the leader epoch cannot grow past {INT32_MAX}")
    write_quorum_state(path, ElectionState(leader_epoch=epoch, leader_id=node_id, voted_id=node_id, voters=(node_id,)))
    return epoch
