"""A partition leader's AlterPartition entries (broker/isr_expansion.py): which replicas it reports caught up,
and that each change is asked for once per partition epoch."""

from __future__ import annotations

from membership_world import apply, commit, heartbeat, new_world, partition, register, with_topic

from ksteward.broker.isr_expansion import IsrExpansions, alter_partition_body, isr_expansions
from ksteward.controller.reassignment import AlterPartitionRequest, IsrChange, alter_partition
from ksteward.metadata.records import PartitionChangeRecordV2


def test_the_leader_reports_active_replicas_outside_the_isr() -> None:
    image, manager = new_world()
    epochs = {}
    for broker_id in (2, 3):
        image, epochs[broker_id] = register(image, manager, broker_id)
    image = with_topic(image, "t", (1, 2, 3))
    topic = image.topics.by_name["t"]
    image = apply(image, [PartitionChangeRecordV2(partition_id=0, topic_id=topic.id, isr=(1,))])  # type: ignore[arg-type]
    image, _ = commit(image, manager.process_heartbeat(image, heartbeat(3, epochs[3], image.offset, fence=True), 0.0))
    wanted = isr_expansions(image, 1)
    assert list(wanted) == [(topic.id, 0)]
    entry = wanted[(topic.id, 0)]
    assert entry["new_isr_with_epochs"] == [  # broker 3 is fenced: it could not fetch
        {"broker_id": 1, "broker_epoch": int(image.cluster[1].broker_epoch)},
        {"broker_id": 2, "broker_epoch": epochs[2]},
    ]
    assert isr_expansions(image, 2) == {}  # only the leader asks
    tracker = IsrExpansions()
    assert tracker.due(image, 1) == wanted
    assert tracker.due(image, 1) == {}  # asked once per partition epoch
    tracker.retry(wanted)
    assert tracker.due(image, 1) == wanted
    # What the controller makes of it: broker 2 joins the ISR.
    body = alter_partition_body(1, int(image.cluster[1].broker_epoch), wanted)
    change = IsrChange(0, entry["leader_epoch"], entry["partition_epoch"],
                       tuple((m["broker_id"], m["broker_epoch"]) for m in entry["new_isr_with_epochs"]))  # fmt: skip
    request = AlterPartitionRequest(body["broker_id"], body["broker_epoch"], ((topic.id, (change,)),))
    image, reply = commit(image, alter_partition(image, request, unclean=lambda _: False))
    assert reply.topics[0][1][0].error == 0 and partition(image, "t").isr == (1, 2)
    assert isr_expansions(image, 1) == {}


def test_a_recovering_leader_reports_itself_recovered() -> None:
    image, _ = new_world()
    image = with_topic(image, "t", (1,))
    topic = image.topics.by_name["t"]
    image = apply(image, [PartitionChangeRecordV2(partition_id=0, topic_id=topic.id, leader_recovery_state=1)])  # type: ignore[arg-type]
    entry = isr_expansions(image, 1)[(topic.id, 0)]
    assert entry["leader_recovery_state"] == 0 and [m["broker_id"] for m in entry["new_isr_with_epochs"]] == [1]


def test_each_round_looks_at_the_changed_topics_only() -> None:
    image, manager = new_world()
    image, _ = register(image, manager, 2)
    image = with_topic(image, "t", (1, 2))
    image = with_topic(image, "u", (1,))
    t, u = image.topics.by_name["t"], image.topics.by_name["u"]
    image = apply(image, [PartitionChangeRecordV2(partition_id=0, topic_id=t.id, isr=(1,))])  # type: ignore[arg-type]
    tracker = IsrExpansions()
    assert list(tracker.due(image, 1)) == [(t.id, 0)]
    # A batch that touches only "u": "t" is not looked at again, so it is not asked for twice.
    image = apply(image, [PartitionChangeRecordV2(partition_id=0, topic_id=u.id, leader=1)])  # type: ignore[arg-type]
    assert tracker.due(image, 1) == {}
    tracker.retry([(t.id, 0)])
    assert list(tracker.due(image, 1)) == [(t.id, 0)]
