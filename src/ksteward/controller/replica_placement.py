"""Where a topic's replicas go: automatic placement and the checks on manual assignments.

Automatic placement follows Kafka's ``StripedReplicaPlacer`` (KRaft), re-implemented here:

* The usable brokers are the registered ones not in controlled shutdown, fenced or not, grouped by
  rack (brokers without a rack form one group). Each rack keeps its unfenced and its fenced brokers
  in two sorted lists, each with a random start offset; the racks are sorted by name (no rack first)
  and iteration starts at a random rack.
* Each partition is one *epoch*: its leader is the next unfenced broker, taken rack by rack from the
  current rack offset; its other replicas come one per rack, round-robin over the racks, unfenced
  brokers before fenced ones, never repeating a broker. Every broker list advances its offset by one
  per epoch, and the rack offset advances by one per partition, so leaders and replicas stripe across
  racks and brokers. Once as many partitions as there are unfenced brokers are placed, the racks and
  broker lists are shuffled, so that the next round does not repeat the same replica sets.
* So a partition's replicas sit in distinct racks while the replication factor allows it, and the
  leaders of consecutive partitions are distinct brokers.

Failures carry Kafka's reasons: a non-positive replication factor, "All brokers are currently
fenced." and "The target replication factor of R cannot be reached because only N broker(s) are
registered.".
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ksteward.metadata.records import RegisterBrokerRecord

UNASSIGNED_DIR = uuid.UUID(int=1)
"""``DirectoryId.UNASSIGNED``: the broker has several log directories and has not picked one yet."""
MIGRATING_DIR: uuid.UUID | None = None
"""``DirectoryId.MIGRATING`` is the zero uuid, which kio reads and writes as None."""


class PlacementError(Exception):
    """Automatic placement is impossible (INVALID_REPLICATION_FACTOR); the message is Kafka's reason."""


class AssignmentError(Exception):
    """A manual assignment is invalid (INVALID_REPLICA_ASSIGNMENT); the message is Kafka's."""


@dataclass(frozen=True, slots=True)
class UsableBroker:
    id: int
    rack: str | None
    fenced: bool


def usable_brokers(cluster: Mapping[int, RegisterBrokerRecord]) -> list[UsableBroker]:
    """The brokers placement may use: registered and not in controlled shutdown."""
    return [
        UsableBroker(int(broker_id), reg.rack, reg.fenced)
        for broker_id, reg in cluster.items()
        if not reg.in_controlled_shutdown
    ]


def is_active(cluster: Mapping[int, RegisterBrokerRecord], broker_id: int) -> bool:
    """Registered, unfenced and not in controlled shutdown: may join the ISR of a new partition."""
    reg = cluster.get(broker_id)
    return reg is not None and not reg.fenced and not reg.in_controlled_shutdown


def default_dir(cluster: Mapping[int, RegisterBrokerRecord], broker_id: int) -> uuid.UUID | None:
    """The log directory a new replica on ``broker_id`` starts in (Kafka's ``ClusterControlManager.defaultDir``)."""
    reg = cluster.get(broker_id)
    if reg is None:
        return UNASSIGNED_DIR
    if not reg.log_dirs:
        return MIGRATING_DIR
    if len(reg.log_dirs) == 1:
        return reg.log_dirs[0]
    return UNASSIGNED_DIR


def validate_manual_assignment(
    cluster: Mapping[int, RegisterBrokerRecord], replicas: Sequence[int], replication_factor: int | None
) -> None:
    """Kafka's ``validateManualPartitionAssignment``: a non-empty list of distinct registered brokers
    (fenced ones count), of ``replication_factor`` entries when one is given. Raises AssignmentError."""
    if not replicas:
        raise AssignmentError("The manual partition assignment includes an empty replica list.")
    previous: int | None = None
    for broker_id in sorted(replicas):
        if broker_id not in cluster:
            raise AssignmentError(
                f"The manual partition assignment includes broker {broker_id}, but no such broker is registered."
            )
        if broker_id == previous:
            raise AssignmentError(f"The manual partition assignment includes the broker {previous} more than once.")
        previous = broker_id
    if replication_factor is not None and len(replicas) != replication_factor:
        raise AssignmentError(
            f"The manual partition assignment includes a partition with {len(replicas)} replica(s), but this is "
            f"not consistent with previous partitions, which have {replication_factor} replica(s)."
        )


class _BrokerList:
    """Brokers iterated from a rotating offset, each at most once per epoch."""

    __slots__ = ("brokers", "epoch", "index", "offset")

    def __init__(self) -> None:
        self.brokers: list[int] = []
        self.index = 0
        self.offset = 0
        self.epoch = 0

    def initialize(self, rng: random.Random) -> None:
        if self.brokers:
            self.brokers.sort()
            self.offset = rng.randrange(len(self.brokers))

    def next(self, epoch: int) -> int:
        """The next broker of this epoch, or -1 when every broker was returned in it."""
        size = len(self.brokers)
        if size == 0:
            return -1
        if self.epoch != epoch:
            self.epoch, self.index, self.offset = epoch, 0, (self.offset + 1) % size
        if self.index >= size:
            return -1
        broker = self.brokers[(self.index + self.offset) % size]
        self.index += 1
        return broker


class _Rack:
    __slots__ = ("fenced", "unfenced")

    def __init__(self) -> None:
        self.unfenced = _BrokerList()
        self.fenced = _BrokerList()

    def next(self, epoch: int) -> int:
        broker = self.unfenced.next(epoch)
        return broker if broker >= 0 else self.fenced.next(epoch)


class _RackList:
    def __init__(self, rng: random.Random, brokers: Sequence[UsableBroker]) -> None:
        self.rng = rng
        self.racks: dict[str | None, _Rack] = {}
        for broker in brokers:
            rack = self.racks.setdefault(broker.rack, _Rack())
            (rack.fenced if broker.fenced else rack.unfenced).brokers.append(broker.id)
        for rack in self.racks.values():
            rack.unfenced.initialize(rng)
            rack.fenced.initialize(rng)
        self.names: list[str | None] = sorted(self.racks, key=lambda name: (name is not None, name or ""))
        self.total = len(brokers)
        self.unfenced = sum(1 for b in brokers if not b.fenced)
        self.epoch = 0
        self.offset = rng.randrange(len(self.names)) if self.names else 0

    def _shuffle(self) -> None:
        self.rng.shuffle(self.names)
        for rack in self.racks.values():
            self.rng.shuffle(rack.unfenced.brokers)
            self.rng.shuffle(rack.fenced.brokers)

    def place(self, replication_factor: int) -> tuple[int, ...]:
        if self.epoch == self.unfenced and self.unfenced > 1:
            self._shuffle()
            self.epoch = 0
        if self.offset == len(self.names):
            self.offset = 0
        count = len(self.names)
        first_rack, leader = self.offset, -1
        for _ in range(count):  # the leader: the next unfenced broker, from the current rack onwards
            leader = self.racks[self.names[first_rack]].unfenced.next(self.epoch)
            if leader >= 0:
                break
            first_rack = (first_rack + 1) % count
        if leader < 0:
            raise PlacementError("All brokers are currently fenced.")
        chosen = [leader]
        rack_index = self.offset
        for _ in range(1, replication_factor):
            broker = -1
            for _attempt in range(2 * count + 1):  # a broker turns up within two passes over the racks
                if rack_index == first_rack:
                    first_rack = -1  # skip the leader's rack once
                else:
                    broker = self.racks[self.names[rack_index]].next(self.epoch)
                rack_index = (rack_index + 1) % count
                if broker >= 0:
                    break
            if broker < 0:  # pragma: no cover - excluded by the broker count check
                raise RuntimeError("replica placement ran out of brokers")
            chosen.append(broker)
        self.epoch += 1
        self.offset += 1
        return tuple(chosen)


def place_replicas(
    brokers: Sequence[UsableBroker], num_partitions: int, replication_factor: int, rng: random.Random
) -> list[tuple[int, ...]]:
    """Replica lists (leader first) for ``num_partitions`` new partitions. Raises PlacementError."""
    if replication_factor <= 0:
        raise PlacementError(
            f"Invalid replication factor {replication_factor}: the replication factor must be positive."
        )
    racks = _RackList(rng, brokers)
    if racks.unfenced == 0:
        raise PlacementError("All brokers are currently fenced.")
    if replication_factor > racks.total:
        raise PlacementError(
            f"The target replication factor of {replication_factor} cannot be reached because only "
            f"{racks.total} broker(s) are registered."
        )
    return [racks.place(replication_factor) for _ in range(num_partitions)]
