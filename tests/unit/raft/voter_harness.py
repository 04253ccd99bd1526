"""One ``RaftVoter`` driven by hand, as Kafka's ``RaftClientTestContext`` drives one ``KafkaRaftClient``: the test
delivers requests and responses and looks at the actions and answers. The log is raft_sim's ``SimLog``."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

from kio.schema.errors import ErrorCode
from raft_sim import SimLog

from ksteward.protocol.apis import ApiKey
from ksteward.raft import messages
from ksteward.raft.election import QuorumConfig
from ksteward.raft.leader import RaftLeader
from ksteward.raft.observer import AppendBatches, HighWatermarkUpdated, TruncateTo
from ksteward.raft.quorum_state import ElectionState
from ksteward.raft.voter import RaftVoter
from ksteward.raft.voter_actions import FlushLog, PersistElectionState, SendRequest

CLUSTER_ID = "test-cluster"
LISTENER = "CONTROLLER"
#: Kafka's defaults, with the back-off maximum of Kafka's tests (100 ms).
CONFIG = QuorumConfig(election_backoff_max_ms=100)


def stored(epoch: int, *, leader: int = -1, voted: int = -1, voters: Sequence[int] = (1, 2, 3)) -> ElectionState:
    return ElectionState(epoch, leader, voted, tuple(voters))


class Harness:
    def __init__(
        self,
        *,
        node_id: int = 1,
        voters: Sequence[int] = (1, 2, 3),
        state: ElectionState | None = None,
        layout: Sequence[tuple[int, int]] = (),
        config: QuorumConfig = CONFIG,
        seed: int = 0,
        now: int = 0,
    ) -> None:
        self.log = SimLog()
        value = 0
        for epoch, count in layout:
            for _ in range(count):
                value += 1
                self.log.append_value(value, epoch)
        self.log.flush()
        self.now = now
        self.stored = state
        self.voter = RaftVoter(node_id=node_id, cluster_id=CLUSTER_ID, voters=voters, log=self.log,
                               endpoints={LISTENER: ("localhost", 9000 + node_id)}, config=config,
                               rng=random.Random(seed))  # fmt: skip
        self.actions: list[Any] = []
        self._apply(self.voter.start(state, now))

    # --- driving ------------------------------------------------------------------------------------
    def _apply(self, actions: list[Any]) -> list[Any]:
        for action in actions:
            if isinstance(action, PersistElectionState):
                self.stored = action.state
            elif isinstance(action, AppendBatches):
                self.log.append_raw(action.records)
            elif isinstance(action, FlushLog):
                self.log.flush()
            elif isinstance(action, TruncateTo):
                self.log.truncate_to(action.offset)
        self.actions.extend(actions)
        return actions

    def take(self) -> list[Any]:
        actions, self.actions = self.actions, []
        return actions

    def tick(self, to_ms: int) -> list[Any]:
        self.now = to_ms
        return self._apply(self.voter.tick(to_ms))

    def request(self, api_key: int, body: Any, version: int) -> Any:
        response, actions = self.voter.handle_request(api_key, version, body, LISTENER, self.now)
        self._apply(actions)
        return response

    def respond(self, send: SendRequest, response: Any) -> list[Any]:
        return self._apply(self.voter.handle_response(send.request_id, response, self.now))

    def sends(self, api_key: int | None = None) -> list[SendRequest]:
        return [a for a in self.actions if isinstance(a, SendRequest) and (api_key is None or a.api_key == api_key)]

    def high_watermarks(self) -> list[int]:
        return [a.offset for a in self.actions if isinstance(a, HighWatermarkUpdated)]

    # --- messages -----------------------------------------------------------------------------------
    def vote(
        self,
        epoch: int,
        candidate: int,
        last_epoch: int,
        last_offset: int,
        *,
        pre_vote: bool = False,
        voter_id: int | None = None,
        version: int = 2,
        cluster_id: str | None = CLUSTER_ID,
    ) -> tuple[ErrorCode, Any]:
        """Deliver a Vote; the top-level error and the partition answer (None when there is none)."""
        body = messages.vote_request(
            version, cluster_id=cluster_id, voter_id=self.voter.node_id if voter_id is None else voter_id,
            epoch=epoch, replica_id=candidate, last_epoch=last_epoch, last_offset=last_offset, pre_vote=pre_vote,
        )  # fmt: skip
        response = self.request(ApiKey.VOTE, body, version)
        partition = messages.metadata_partition(response) if response.topics else None
        return ErrorCode(response.error_code), partition

    def begin_epoch(self, epoch: int, leader: int, *, version: int = 1, cluster_id: str | None = CLUSTER_ID) -> Any:
        body = messages.begin_quorum_epoch_request(version, cluster_id=cluster_id, voter_id=self.voter.node_id,
                                                   leader_id=leader, epoch=epoch, endpoints={})  # fmt: skip
        return self.request(ApiKey.BEGIN_QUORUM_EPOCH, body, version)

    def end_epoch(
        self,
        epoch: int,
        leader: int,
        preferred: Sequence[int],
        *,
        version: int = 1,
        cluster_id: str | None = CLUSTER_ID,
    ) -> Any:
        body = messages.end_quorum_epoch_request(version, cluster_id=cluster_id, leader_id=leader, epoch=epoch,
                                                 preferred=preferred, endpoints={})  # fmt: skip
        return self.request(ApiKey.END_QUORUM_EPOCH, body, version)


def vote_answer(
    send: SendRequest, *, granted: bool, epoch: int, leader: int = -1, error: ErrorCode = ErrorCode.none
) -> Any:
    return messages.vote_response(send.api_version, error=error, leader_id=leader, epoch=epoch, granted=granted)


def epoch_answer(send: SendRequest, *, epoch: int, leader: int, error: ErrorCode = ErrorCode.none) -> Any:
    return messages.epoch_response(send.api_key, send.api_version, error=error, leader_id=leader, epoch=epoch)


def leader_log(layout: Sequence[tuple[int, int]]) -> SimLog:
    log = SimLog()
    value = 0
    for epoch, count in layout:
        for _ in range(count):
            value += 1
            log.append_value(value, epoch)
    log.flush()
    return log


def fetch_answer(
    send: SendRequest, *, leader_id: int, epoch: int, log: SimLog, voters: Sequence[int] = (1, 2, 3)
) -> Any:
    """What a leader of ``epoch`` holding ``log`` answers to the follower's Fetch ``send``."""
    leader = RaftLeader(node_id=leader_id, cluster_id=CLUSTER_ID, epoch=epoch, log=log, endpoints={},
                        voters=voters, epoch_start_offset=0)  # fmt: skip
    leader.update_high_watermark()
    return leader.complete_fetch(send.body, send.api_version, LISTENER, 0)
