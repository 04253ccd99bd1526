"""The pure parts of ``ksteward topics``, as Kafka's ``org.apache.kafka.tools.TopicCommand`` has them: the
option rules and their messages, ``--topic`` as a Java regex (``TopicFilter.IncludeList``), the
``--replica-assignment`` and ``--config`` parsing, and the tab-separated describe lines. No I/O here."""

from __future__ import annotations

import argparse
import re
from dataclasses import dataclass, field
from typing import Any

from ksteward.cli.admin_common import UsageError
from ksteward.configs.topic_catalog import validate_topic_configs

# Kafka's Topic.isInternal: the names ``--exclude-internal`` leaves out.
INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state", "__share_group_state"})

ACTIONS = ("create", "list", "alter", "describe", "delete")
ACTION_RULE = "Command must include exactly one action: --list, --describe, --create, --alter or --delete"
PARTITION_FILTERS = ("under_replicated_partitions", "under_min_isr_partitions", "at_min_isr_partitions",
                     "unavailable_partitions")  # fmt: skip
COLLISION_WARNING = ("WARNING: Due to limitations in metric names, topics with a period ('.') or underscore ('_') "
                     "could collide. To avoid issues it is best to use either, but not both.")  # fmt: skip
CONFIGS_TOOL_HINT = " (To alter topic configurations, the kafka-configs tool can be used.)"


def _flag(dest: str) -> str:
    return dest.replace("_", "-")


def _given(args: argparse.Namespace, dest: str) -> bool:
    value = getattr(args, dest, None)
    return value not in (None, False, [])


def check_options(args: argparse.Namespace) -> str:
    """TopicCommandOptions.checkArgs: exactly one action and the per-action option rules, with Kafka's
    messages. Returns the action."""
    actions = [a for a in ACTIONS if getattr(args, a)]
    if len(actions) != 1:
        raise UsageError(ACTION_RULE)
    action = actions[0]
    if action == "describe" and args.if_exists and not (args.topic or args.topic_id):
        raise UsageError("--topic or --topic-id is required to describe a topic")
    if action not in ("list", "describe") and args.topic is None:
        raise UsageError('Missing required argument "[topic]"')
    if action == "alter":
        if args.config:
            # CommandLineUtils.checkInvalidArgsSet prints the set of options as Java prints a Set
            raise UsageError('Option combination "[[bootstrap-server], [config]]" can\'t be used with option "[alter]"'
                             + CONFIGS_TOOL_HINT)  # fmt: skip
        if args.partitions is None:
            raise UsageError('Missing required argument "[partitions]"')
    allowed = {
        "config": ("alter", "create"),  # alter already refused above, as Kafka's checkInvalidArgsSet does
        "partitions": ("alter", "create"),
        "replication_factor": ("create",),
        "replica_assignment": ("alter", "create"),
        "if_exists": ("alter", "delete", "describe"),
        "if_not_exists": ("create",),
        "exclude_internal": ("list", "describe"),
        "topics_with_overrides": ("describe",),
        **{f: ("describe",) for f in PARTITION_FILTERS},
    }
    for dest, actions_ok in allowed.items():
        if _given(args, dest) and action not in actions_ok:
            raise UsageError(f'Option "[{_flag(dest)}]" can\'t be used with option "[{action}]"')
    if action == "create" and args.replica_assignment:
        for other in ("partitions", "replication_factor"):
            if _given(args, other):
                raise UsageError(f'Option "[replica-assignment]" can\'t be used with option "[{_flag(other)}]"')
    if args.topics_with_overrides:
        for f in PARTITION_FILTERS:
            if getattr(args, f):
                raise UsageError(f'Option "[{_flag(f)}]" can\'t be used with option "[topics-with-overrides]"')
    return action


# --- --topic: a Java regex ------------------------------------------------------------------------------

_NAMED_GROUP = re.compile(r"\(\?<(?=[A-Za-z])")
_QUOTED = re.compile(r"\\Q(.*?)(?:\\E|$)", re.DOTALL)


def topic_pattern(text: str) -> re.Pattern[str]:
    """``--topic`` as Kafka's ``IncludeList`` reads it: trimmed, commas mean alternation (``a,b``), spaces and
    surrounding quotes dropped, then matched against the whole name. Java syntax Python's ``re`` spells
    differently is translated: ``(?<name>...)`` and ``\\Q...\\E``."""
    regex = text.strip().replace(",", "|").replace(" ", "")
    regex = re.sub(r"^[\"']+", "", regex)
    regex = re.sub(r"[\"']+$", "", regex)
    regex = _QUOTED.sub(lambda m: re.escape(m.group(1)), regex)
    regex = _NAMED_GROUP.sub("(?P<", regex)
    try:
        return re.compile(regex)
    except re.error as exc:
        raise UsageError(f"--topic {text!r} is not a valid regular expression: {exc}") from None


def select_topics(names: list[str], pattern: str | None, exclude_internal: bool) -> list[str]:
    """TopicService.getTopics: the names (sorted) that ``pattern`` matches whole, internal ones dropped on
    ``--exclude-internal``."""
    compiled = topic_pattern(pattern) if pattern is not None else None
    return [
        n
        for n in sorted(names)
        if (compiled is None or compiled.fullmatch(n)) and not (exclude_internal and n in INTERNAL_TOPICS)
    ]


# --- create inputs --------------------------------------------------------------------------------------


def parse_replica_assignment(text: str) -> list[list[int]]:
    """``b1:b2,b3:b4``: partitions by commas, replicas by colons (TopicCommand.parseReplicaAssignment)."""
    assignment: list[list[int]] = []
    for index, part in enumerate(text.split(",")):
        brokers: list[int] = []
        for item in part.split(":"):
            try:
                brokers.append(int(item.strip()))
            except ValueError:
                raise UsageError(f'--replica-assignment: For input string: "{item.strip()}"') from None
        duplicates = sorted({b for b in brokers if brokers.count(b) > 1})
        if duplicates:
            raise UsageError("Partition replica lists may not contain duplicate entries: "
                             + ",".join(map(str, duplicates)))  # fmt: skip
        if assignment and len(brokers) != len(assignment[0]):
            raise UsageError(f"Partition {index} has different replication factor: [{', '.join(map(str, brokers))}]")
        assignment.append(brokers)
    return assignment


def parse_topic_configs(items: list[str]) -> dict[str, str]:
    """``--config k=v`` (repeatable), checked as Kafka's tool checks it before sending (LogConfig.validate)."""
    configs: dict[str, str] = {}
    for item in items:
        pair = re.split(r"\s*=\s*", item)
        while pair and pair[-1] == "":  # Java's String.split drops trailing empty strings
            pair.pop()
        if len(pair) != 2:
            raise UsageError('Invalid topic config: all configs to be added must be in the format "key=val".')
        configs[pair[0].strip()] = pair[1].strip()
    error = validate_topic_configs(configs)
    if error is not None:
        raise UsageError(error.message or "invalid topic config")
    return configs


def check_create(partitions: int | None, replication_factor: int | None) -> None:
    """TopicService.createTopic's client-side checks."""
    if replication_factor is not None and not 1 <= replication_factor <= 32767:
        raise UsageError("The replication factor must be between 1 and 32767 inclusive")
    if partitions is not None and partitions < 1:
        raise UsageError("The partitions must be greater than 0")


def has_collision_chars(name: str) -> bool:
    return "." in name or "_" in name


# --- describe -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PartitionInfo:
    partition: int
    leader: int | None
    replicas: list[int]
    isr: list[int]


@dataclass(frozen=True)
class ConfigValue:
    name: str
    value: str | None  # None: sensitive, printed "null" as Kafka's tool prints it
    is_default: bool  # source DEFAULT_CONFIG


@dataclass(frozen=True)
class TopicInfo:
    name: str
    topic_id: str | None  # None for the zero id
    internal: bool
    partitions: list[PartitionInfo]
    configs: list[ConfigValue] = field(default_factory=list)

    def overrides(self) -> list[ConfigValue]:
        return [c for c in self.configs if not c.is_default]

    def min_isr(self) -> int:
        for c in self.configs:
            if c.name == "min.insync.replicas" and c.value is not None:
                return int(c.value)
        return 1


def _ids(nodes: list[int]) -> str:
    return ",".join(map(str, nodes))


def topic_line(topic: TopicInfo) -> str:
    """TopicDescription.printDescription: ``Topic: t\\tTopicId: id\\tPartitionCount: N\\t...``."""
    configs = ",".join(f"{c.name}={'null' if c.value is None else c.value}" for c in topic.overrides())
    parts = [f"Topic: {topic.name}"]
    if topic.topic_id:
        parts.append(f"TopicId: {topic.topic_id}")
    rf = len(topic.partitions[0].replicas) if topic.partitions else 0
    parts += [f"PartitionCount: {len(topic.partitions)}", f"ReplicationFactor: {rf}", f"Configs: {configs}"]
    return "\t".join(parts)


def partition_line(topic: str, p: PartitionInfo) -> str:
    """PartitionDescription.printDescription. ELR is ``N/A``: it comes only from DescribeTopicPartitions
    (KIP-966), which the server side ksteward serves does not have, so Kafka's own tool prints the same."""
    leader = "none" if p.leader is None else str(p.leader)
    return (f"\tTopic: {topic}\tPartition: {p.partition}\tLeader: {leader}\tReplicas: {_ids(p.replicas)}"
            f"\tIsr: {_ids(p.isr)}\tElr: N/A\tLastKnownElr: N/A")  # fmt: skip


@dataclass(frozen=True)
class DescribeFilters:
    """The describe filters (TopicCommand.DescribeOptions)."""

    under_replicated: bool = False
    under_min_isr: bool = False
    at_min_isr: bool = False
    unavailable: bool = False
    with_overrides: bool = False

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> DescribeFilters:
        return cls(args.under_replicated_partitions, args.under_min_isr_partitions, args.at_min_isr_partitions,
                   args.unavailable_partitions, args.topics_with_overrides)  # fmt: skip

    @property
    def any_partition_filter(self) -> bool:
        return self.under_replicated or self.under_min_isr or self.at_min_isr or self.unavailable

    def show_topic_line(self, topic: TopicInfo) -> bool:
        if self.any_partition_filter:
            return False
        return not self.with_overrides or bool(topic.overrides())

    def show_partition(self, topic: TopicInfo, p: PartitionInfo, live_brokers: set[int]) -> bool:
        if self.with_overrides:
            return False
        if not self.any_partition_filter:
            return True
        no_leader = p.leader is None
        return (
            (self.under_replicated and len(p.replicas) - len(p.isr) > 0)
            or (self.unavailable and (no_leader or p.leader not in live_brokers))
            or (self.under_min_isr and (no_leader or len(p.isr) < topic.min_isr()))
            or (self.at_min_isr and len(p.isr) == topic.min_isr())
        )


def describe_lines(topics: list[TopicInfo], filters: DescribeFilters, live_brokers: set[int]) -> list[str]:
    lines: list[str] = []
    for topic in topics:
        if filters.show_topic_line(topic) and topic.partitions:
            lines.append(topic_line(topic))
        lines += [partition_line(topic.name, p) for p in topic.partitions
                  if filters.show_partition(topic, p, live_brokers)]  # fmt: skip
    return lines


def describe_json(topics: list[TopicInfo], filters: DescribeFilters, live_brokers: set[int]) -> dict[str, Any]:
    """The ``--describe --output json`` document (docs/cli-topics-configs.md): the same selection as the text."""
    out = []
    for topic in topics:
        if filters.with_overrides and not topic.overrides():
            continue
        partitions = [p for p in topic.partitions if filters.show_partition(topic, p, live_brokers)]
        if filters.any_partition_filter and not partitions:
            continue
        out.append({
            "name": topic.name,
            "topic_id": topic.topic_id,
            "internal": topic.internal,
            "partition_count": len(topic.partitions),
            "replication_factor": len(topic.partitions[0].replicas) if topic.partitions else 0,
            "configs": {c.name: c.value for c in topic.overrides()},
            "partitions": [{"partition": p.partition, "leader": p.leader, "replicas": p.replicas, "isr": p.isr,
                            "elr": None, "last_known_elr": None} for p in partitions],
        })  # fmt: skip
    return {"topics": out}
