"""A partition leader's AlterPartition requests during a reassignment, sans-IO: Kafka's ``Partition.maybeExpandIsr``
and ``AlterPartitionManager``, for a broker that has no data to copy (docs/reassignment.md, "Catching up").

In Kafka a follower joins the ISR once it has fetched up to the leader's high watermark, and the leader's
broker then asks the controller for the bigger ISR (AlterPartition, api 56): a new replica of a reassignment, or
a replica whose broker came back. A ksteward replica holds no records, so it has nothing to catch up on: the
leader treats a replica as caught up as soon as the leader's own image holds the record that made it a replica
and the replica's broker is registered, unfenced and not in controlled shutdown (a fenced broker could not
fetch). The request names each proposed member with its broker
epoch (AlterPartition v3, KIP-903), so a replica that restarted in between is refused (INELIGIBLE_REPLICA).

:class:`IsrExpansions` remembers what it asked for at which partition epoch, so each change is sent once; a
partition whose answer was an error (or was lost) is asked for again on the next round.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from typing import Any

from ksteward.controller.partition_change import RECOVERED
from ksteward.controller.reassignment import AlterPartitionRequest, IsrChange
from ksteward.controller.replica_placement import is_active
from ksteward.metadata.image import MetadataImage, TopicImage

__all__ = [
    "ALTER_PARTITION_VERSION",
    "IsrExpansions",
    "PartitionKey",
    "alter_partition_body",
    "alter_partition_request",
    "isr_expansions",
]

ALTER_PARTITION_VERSION = 3
PartitionKey = tuple[uuid.UUID | None, int]


def isr_expansions(
    image: MetadataImage, broker_id: int, topics: Iterable[TopicImage] | None = None
) -> dict[PartitionKey, dict[str, Any]]:
    """The AlterPartition entry of every partition ``broker_id`` leads (of ``topics``; None: every topic) whose
    replicas include active brokers outside the ISR (the ISR plus those replicas), or whose leader is still
    RECOVERING after an unclean election (the same ISR, RECOVERED: with no log to truncate, recovery is
    immediate), at its current epochs."""
    wanted: dict[PartitionKey, dict[str, Any]] = {}
    for topic in image.topics.by_id.values() if topics is None else topics:
        for pid, p in topic.partitions.items():
            if p.leader != broker_id:
                continue
            members = [int(r) for r in p.isr]
            if p.leader_recovery_state == RECOVERED:
                members += [int(r) for r in p.replicas if r not in p.isr and is_active(image.cluster, r)]
                if len(members) == len(p.isr):
                    continue
            wanted[(topic.id, int(pid))] = {
                "partition_index": pid,
                "leader_epoch": p.leader_epoch,
                "partition_epoch": p.partition_epoch,
                "leader_recovery_state": RECOVERED,
                "new_isr_with_epochs": [
                    {"broker_id": b, "broker_epoch": int(image.cluster[b].broker_epoch) if b in image.cluster else -1}
                    for b in members
                ],
            }
    return wanted


def alter_partition_body(
    broker_id: int, broker_epoch: int, entries: dict[PartitionKey, dict[str, Any]]
) -> dict[str, Any]:
    """An AlterPartition v3 request for ``entries``, grouped by topic id."""
    topics: dict[uuid.UUID | None, list[dict[str, Any]]] = {}
    for (topic_id, _), entry in entries.items():
        topics.setdefault(topic_id, []).append(entry)
    return {
        "broker_id": broker_id,
        "broker_epoch": broker_epoch,
        "topics": [{"topic_id": topic_id, "partitions": parts} for topic_id, parts in topics.items()],
    }


def alter_partition_request(
    broker_id: int, broker_epoch: int, entries: dict[PartitionKey, dict[str, Any]]
) -> AlterPartitionRequest:
    """The same request as the controller reads it, for a node that is its own controller."""
    topics: dict[uuid.UUID | None, list[IsrChange]] = {}
    for (topic_id, pid), e in entries.items():
        isr = tuple((int(m["broker_id"]), int(m["broker_epoch"])) for m in e["new_isr_with_epochs"])
        change = IsrChange(pid, int(e["leader_epoch"]), int(e["partition_epoch"]), isr, int(e["leader_recovery_state"]))
        topics.setdefault(topic_id, []).append(change)
    return AlterPartitionRequest(broker_id, broker_epoch, tuple((t, tuple(c)) for t, c in topics.items()))


class IsrExpansions:
    """What was asked for: partition -> the partition epoch it was asked at.

    Each call looks only at the topics whose section changed since the last one (an image shares every topic a
    batch did not touch, so that is a pointer comparison per topic), and at every topic when the brokers changed
    or something is to be asked again."""

    def __init__(self) -> None:
        self._sent: dict[PartitionKey, int] = {}
        self._topics: Mapping[uuid.UUID | None, TopicImage] | None = None
        self._cluster: object = None

    def due(self, image: MetadataImage, broker_id: int) -> dict[PartitionKey, dict[str, Any]]:
        """The entries not asked for yet at their current partition epoch; they count as asked for from here."""
        topics, last = image.topics.by_id, self._topics
        if last is None or image.cluster is not self._cluster:
            changed: list[TopicImage] = list(topics.values())
        else:
            changed = [t for topic_id, t in topics.items() if last.get(topic_id) is not t]
        self._topics, self._cluster = topics, image.cluster
        wanted = isr_expansions(image, broker_id, changed)
        looked_at = {t.id for t in changed}
        # A partition looked at and no longer wanted is done or moved on; one of a deleted topic is gone.
        self._sent = {k: v for k, v in self._sent.items()
                      if k[0] in topics and (k[0] not in looked_at or k in wanted)}  # fmt: skip
        due = {k: e for k, e in wanted.items() if self._sent.get(k) != int(e["partition_epoch"])}
        for key, entry in due.items():
            self._sent[key] = int(entry["partition_epoch"])
        return due

    def retry(self, keys: Iterable[PartitionKey]) -> None:
        """Ask for these again next round (an error answer, or no answer)."""
        self._topics = None  # the next round looks at every topic
        for key in keys:
            self._sent.pop(key, None)
