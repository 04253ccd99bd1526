"""The controller on top of a Raft quorum of several voters: Kafka's ``QuorumController`` as a
``RaftClient.Listener`` (KIP-631), driven by the quorum driver (``server.quorum``).

Three states:

- **standby** (a follower, a candidate, or a leader not yet caught up): every write is refused with
  NOT_CONTROLLER (``Controller.is_active``). Each time the high watermark moves, the committed batches in the
  local log are replayed into the image and published (:meth:`GroupCommitter.publish_committed`): the standby
  answers reads from committed state and is ready to lead.
- **claiming**: this node won an election in epoch E. The Raft layer appended the epoch's LeaderChange batch at
  the epoch start offset S. Records of earlier epochs between the committed image and S are not committed yet:
  they will be once the high watermark passes S (Raft commits only through a record of the current epoch).
  Replay goes on as on a standby until the image holds everything below the high watermark.
- **active**: the high watermark passed S, so the image holds every committed record (Kafka fires
  ``handleLeaderChange`` on the leader only once its listener consumed up to the epoch start offset). The
  committer accepts writes (:meth:`GroupCommitter.activate`), and every registered broker gets a fresh
  session (``ClusterControlManager.activate``, Kafka's ``BrokerHeartbeatManager`` built anew on activation), so
  no broker is fenced by the failover itself. From here the committer publishes its own batches as the high
  watermark passes them.

Losing the leadership (a higher epoch, a resignation, a fatal write error) returns to standby: waiting writes
fail with NOT_CONTROLLER, whose outcome is unknown (a majority may have them; the next leader then commits
them), and the controller's state goes back to the last committed image (``QuorumController.renounce``).
"""

from __future__ import annotations

import enum
import logging
import time
from collections.abc import Callable, Iterator
from itertools import takewhile
from typing import Any

from kio.schema.leader_change_message.v0.data import Voter as LeaderChangeVoter
from kio.schema.types import BrokerId
from kio.static.primitive import i16, i32

from ksteward.controller.active import Controller
from ksteward.metadata.batch import Batch
from ksteward.metadata.loader import replay_batches
from ksteward.metadata.log import MetadataLog
from ksteward.metadata.records import MetadataRecord
from ksteward.metadata.records.control import LeaderChangeMessage
from ksteward.server.committer import GroupCommitter

log = logging.getLogger(__name__)


class ControllerState(enum.Enum):
    STANDBY = "standby"
    CLAIMING = "claiming"
    ACTIVE = "active"


class ControllerQuorumRole:
    """See the module docstring. ``on_active`` runs (scheduled by the caller) once this node is active."""

    def __init__(
        self,
        *,
        node_id: int,
        metadata_log: MetadataLog,
        committer: GroupCommitter,
        controller: Controller,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._node_id = node_id
        self._log = metadata_log
        self._committer = committer
        self._controller = controller
        self._clock = clock
        self.state = ControllerState.STANDBY
        self.epoch = -1
        self._epoch_start = -1
        self.high_watermark = -1
        self.on_active: list[Callable[[int], None]] = []
        controller.is_active = lambda: committer.active
        controller.pending_write = committer.newest_pending

    # --- Raft events ---------------------------------------------------------------------------------
    def begin_claim(self, epoch: int, epoch_start_offset: int, message: LeaderChangeMessage) -> None:
        """This node leads ``epoch``: append the LeaderChange batch at the epoch start (the log end) and claim
        the controller once it is committed."""
        if self.state is not ControllerState.STANDBY:
            self.renounce(f"a new epoch {epoch} began")
        if epoch_start_offset != self._log.next_offset:
            raise RuntimeError(f"epoch {epoch} starts at {epoch_start_offset}, the log ends at {self._log.next_offset}")
        self.state = ControllerState.CLAIMING
        self.epoch = epoch
        self._epoch_start = epoch_start_offset
        self._committer.begin_epoch(message, epoch)
        log.info("claiming the controller in epoch %d: waiting for the high watermark to pass offset %d",
                 epoch, self._epoch_start)  # fmt: skip

    def renounce(self, reason: str) -> None:
        """The leadership ended (or never completed): back to standby, failing what waits (see the docstring)."""
        if self.state is ControllerState.STANDBY:
            return
        was = self.state
        self.state = ControllerState.STANDBY
        self._committer.abandon()
        if was is ControllerState.ACTIVE:
            log.info("renouncing the controller of epoch %d: %s; pending writes fail with NOT_CONTROLLER",
                     self.epoch, reason)  # fmt: skip
        self.high_watermark = self._committer.published.offset + 1

    def on_high_watermark(self, high_watermark: int) -> None:
        """The Raft high watermark moved to ``high_watermark`` (exclusive; it never goes down)."""
        if high_watermark <= self.high_watermark:
            return
        self.high_watermark = high_watermark
        if self.state is ControllerState.ACTIVE:
            self._committer.advance_high_watermark(high_watermark)
            return
        self._apply_committed(high_watermark)
        if self.state is ControllerState.CLAIMING and high_watermark > self._epoch_start:
            self._activate()

    # --- internals -----------------------------------------------------------------------------------
    def _committed_batches(self, high_watermark: int) -> Iterator[Batch]:
        start = self._committer.published.offset + 1
        return takewhile(lambda b: b.last_offset < high_watermark, self._log.read(start))

    def _apply_committed(self, high_watermark: int) -> None:
        """Replay the committed batches the image does not hold yet, and publish the result."""
        before = self._committer.published
        if before.offset + 1 >= high_watermark or before.offset + 1 >= self._log.next_offset:
            return
        records: list[MetadataRecord] = []
        after = replay_batches(before, self._committed_batches(high_watermark), on_record=records.append)
        if after is not before or records:
            self._committer.publish_committed(after, list[Any](records))

    def _activate(self) -> None:
        self.state = ControllerState.ACTIVE
        self._committer.activate(self.epoch)
        self._controller.membership.activate(self._committer.latest, self._clock())
        log.info("active controller in epoch %d, from offset %d", self.epoch, self._committer.published.offset + 1)
        for callback in self.on_active:
            callback(self.epoch)


def leader_change(node_id: int, voters: tuple[int, ...], granting: tuple[int, ...]) -> LeaderChangeMessage:
    """Kafka's LeaderChangeMessage v0: this node leads; the voter set, and the voters that granted it."""
    return LeaderChangeMessage(
        version=i16(0),
        leader_id=BrokerId(node_id),
        voters=tuple(LeaderChangeVoter(voter_id=i32(v)) for v in voters),
        granting_voters=tuple(LeaderChangeVoter(voter_id=i32(v)) for v in granting),
    )
