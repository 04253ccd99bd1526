"""What a KRaft leader knows of each replica's progress: the data DescribeQuorum (api 55) reports.

Kafka's ``LeaderState.ReplicaState`` keeps, per voter and per observer, the log end offset of its last
Fetch, when that Fetch arrived, and when the replica was last caught up to the leader's log end
(``DescribeQuorumResponse`` v0-2, KIP-595 and KIP-836). The leader builds a ``QuorumDescription``; the
DescribeQuorum handler turns it into the response, and ``ksteward metadata quorum`` prints it.
A value that is not known is -1, as on the wire.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

__all__ = ["NO_DIRECTORY_ID", "QuorumDescription", "ReplicaProgress"]

#: ``Uuid.ZERO_UUID``: the directory id of a replica that did not send one (static voters, KIP-853).
NO_DIRECTORY_ID = uuid.UUID(int=0)


@dataclass(frozen=True, slots=True)
class ReplicaProgress:
    """One voter's or observer's progress as the leader saw it (``DescribeQuorumResponse.ReplicaState``)."""

    replica_id: int
    log_end_offset: int = -1
    last_fetch_timestamp_ms: int = -1
    last_caught_up_timestamp_ms: int = -1
    replica_directory_id: uuid.UUID = NO_DIRECTORY_ID


@dataclass(frozen=True, slots=True)
class QuorumDescription:
    """The leader's view of the quorum of ``__cluster_metadata`` partition 0."""

    leader_id: int
    leader_epoch: int
    high_watermark: int
    voters: tuple[ReplicaProgress, ...]
    observers: tuple[ReplicaProgress, ...]
