"""AddRaftVoter (api 80) and RemoveRaftVoter (api 81) on a static quorum, sans-IO (KIP-853, ``kraft.version`` 0).

ksteward's controllers form a static quorum: the voters come from ``controller.quorum.voters`` and the finalized
``kraft.version`` is 0. A Kafka 4.x quorum at ``kraft.version`` 0 serves both RPCs and refuses every change with
UNSUPPORTED_VERSION once a request got that far; these functions give the same answers, in Kafka's order of
checks (``KafkaRaftClient.handleAddVoterRequest`` / ``handleRemoveVoterRequest``, then
``AddVoterHandler`` / ``RemoveVoterHandler``):

1. a cluster id that is set and differs from this cluster's: INCONSISTENT_CLUSTER_ID;
2. ``validateLeaderOnlyRequest`` at the replica's own epoch: a replica that does not lead answers
   NOT_LEADER_OR_FOLLOWER, a leader that is shutting down BROKER_NOT_AVAILABLE (neither with a message);
3. a voter id below 0, or no (or the zero) directory id: INVALID_REQUEST; for AddRaftVoter also no endpoint on
   the default (first controller) listener: INVALID_REQUEST;
4. no pending voter change (there never is one at ``kraft.version`` 0);
5. no high watermark in the leader's epoch yet: REQUEST_TIMED_OUT (the leader has not fenced earlier voter
   changes);
6. ``kraft.version`` 0: UNSUPPORTED_VERSION, "Cluster doesn't support adding voter because the kraft.version
   feature is 0" (or "removing").

The callers authorize first (ALTER on the cluster, ``ControllerApis.handleAddRaftVoter``). UpdateRaftVoter (82) is
not served: a voter sends it only to publish endpoints recorded in a ``VotersRecord``, and a static quorum has
none. Changing the voter set itself (``VotersRecord``, ``kraft.version`` 1) is not built (docs/raft.md).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from kio.schema.errors import ErrorCode

__all__ = ["KRAFT_VERSION", "QuorumView", "VoterChangeAnswer", "add_voter", "remove_voter"]

#: The finalized ``kraft.version`` of a static quorum (Kafka's ``KRaftVersion.KRAFT_VERSION_0``).
KRAFT_VERSION = 0
_FEATURE = "kraft.version"
_NO_HWM = "Request timed out waiting for leader to establish HWM and fence previous voter changes"
_ZERO_UUID = uuid.UUID(int=0)


@dataclass(frozen=True, slots=True)
class QuorumView:
    """What this replica knows when a voter change arrives."""

    cluster_id: str
    #: This replica leads its current epoch.
    leading: bool
    shutting_down: bool
    #: The leader's high watermark; -1 until a majority has an offset of its epoch.
    high_watermark: int
    #: The default listener: the first of ``controller.listener.names``.
    default_listener: str


@dataclass(frozen=True, slots=True)
class VoterChangeAnswer:
    error: ErrorCode
    message: str | None = None


def add_voter(view: QuorumView, request: Any) -> VoterChangeAnswer:
    """The answer to an AddRaftVoter request (v0-1)."""
    early = _common_checks(view, request, "Add")
    if early is not None:
        return early
    listeners = {str(listener.name).upper(): listener for listener in request.listeners}  # ListenerName.normalised
    if view.default_listener.upper() not in listeners:
        endpoints = ", ".join(f"ListenerName({name})={entry.host}/<unresolved>:{int(entry.port)}"
                              for name, entry in listeners.items())  # fmt: skip
        message = (f"Add voter request didn't include the endpoint (Endpoints(endpoints={{{endpoints}}})) "
                   f"for the default listener ListenerName({view.default_listener})")  # fmt: skip
        return VoterChangeAnswer(ErrorCode.invalid_request, message)
    return _handler_checks(view, "adding")


def remove_voter(view: QuorumView, request: Any) -> VoterChangeAnswer:
    """The answer to a RemoveRaftVoter request (v0)."""
    early = _common_checks(view, request, "Remove")
    if early is not None:
        return early
    return _handler_checks(view, "removing")


def _common_checks(view: QuorumView, request: Any, verb: str) -> VoterChangeAnswer | None:
    cluster_id = request.cluster_id
    if cluster_id is not None and cluster_id != view.cluster_id:
        message = f'The given id "{cluster_id}" doesn\'t match the cluster id "{view.cluster_id}"'
        return VoterChangeAnswer(ErrorCode.inconsistent_cluster_id, message)
    if not view.leading:
        return VoterChangeAnswer(ErrorCode.not_leader_or_follower)
    if view.shutting_down:
        return VoterChangeAnswer(ErrorCode.broker_not_available)
    directory = request.voter_directory_id
    if int(request.voter_id) < 0 or directory is None or directory == _ZERO_UUID:
        return VoterChangeAnswer(ErrorCode.invalid_request, f"{verb} voter request didn't include a valid voter")
    return None


def _handler_checks(view: QuorumView, doing: str) -> VoterChangeAnswer:
    if view.high_watermark < 0:
        return VoterChangeAnswer(ErrorCode.request_timed_out, _NO_HWM)
    message = f"Cluster doesn't support {doing} voter because the {_FEATURE} feature is {KRAFT_VERSION}"
    return VoterChangeAnswer(ErrorCode.unsupported_version, message)
