"""``ksteward topics``: Kafka's ``kafka-topics.sh`` (``org.apache.kafka.tools.TopicCommand``), same flags and
output, on confluent-kafka's AdminClient, plus DeleteTopics v7 ``--validate-only`` (KIP-934, a ksteward
extension sent by ksteward's own client). Flags, formats, the JSON schema and what differs from Kafka's tool:
docs/cli-topics-configs.md. The option rules and formats live in :mod:`ksteward.cli.topics_logic`."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ksteward.cli.admin_common import (
    CommandError,
    Connection,
    UsageError,
    add_connection_flags,
    confirm,
    confluent_admin,
    connection,
    describe_kafka_error,
    ksteward_admin,
    print_json,
    run_command,
)
from ksteward.cli.topics_logic import (
    COLLISION_WARNING,
    INTERNAL_TOPICS,
    ConfigValue,
    DescribeFilters,
    PartitionInfo,
    TopicInfo,
    check_create,
    check_options,
    describe_json,
    describe_lines,
    has_collision_chars,
    parse_replica_assignment,
    parse_topic_configs,
    select_topics,
)

TIMEOUT = 30.0
Verdict = tuple[str, str | None, str | None]  # topic, Kafka's error name or None, its message

EXAMPLES = """examples:
  ksteward topics --bootstrap-server localhost:9092 --create --topic orders --partitions 3 --replication-factor 1 \\
      --config retention.ms=3600000
  ksteward topics --bootstrap-server localhost:9092 --list --exclude-internal
  ksteward topics --bootstrap-server localhost:9092 --describe --topic 'orders|payments.*'
  ksteward topics --bootstrap-server localhost:9092 --describe --under-min-isr-partitions --output json
  ksteward topics --bootstrap-server localhost:9092 --alter --topic orders --partitions 6
  ksteward topics --bootstrap-server localhost:9092 --command-config admin.properties --delete --topic 'tmp-.*' \\
      --validate-only      # DeleteTopics v7: each topic's verdict, the delete policy's included; deletes nothing
"""


def add_parser(sub: Any) -> None:
    p = sub.add_parser("topics", help="create, delete, describe, list or alter topics (kafka-topics.sh)",
                       description="Create, delete, describe, or change a topic, as kafka-topics.sh does.",
                       epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    add_connection_flags(p, controller=False)
    for action, text in (("create", "create a new topic"), ("delete", "delete the topics --topic matches"),
                         ("list", "list the topics (sorted)"), ("describe", "describe the topics --topic matches"),
                         ("alter", "increase the partition count (--partitions)")):  # fmt: skip
        p.add_argument(f"--{action}", action="store_true", help=text)
    p.add_argument("--topic", help="a topic name; a Java-style regex for every action but --create")
    p.add_argument("--topic-id", help="the topic id to describe (takes precedence over --topic)")
    p.add_argument("--partitions", type=int, help="partitions for --create (default: the cluster's) or --alter")
    p.add_argument("--replication-factor", type=int, help="replication factor for --create (default: the cluster's)")
    p.add_argument("--replica-assignment", metavar="B1:B2,B3:B4,...",
                   help="brokers per partition: partitions by commas, replicas by colons")  # fmt: skip
    p.add_argument("--config", action="append", default=[], metavar="NAME=VALUE",
                   help="a topic config for --create (repeatable)")  # fmt: skip
    p.add_argument("--delete-config", action="append", default=[], help=argparse.SUPPRESS)  # Kafka 4: a warning
    p.add_argument("--if-exists", action="store_true", help="alter, delete, describe: only if the topic exists")
    p.add_argument("--if-not-exists", action="store_true", help="create: no error if the topic exists")
    p.add_argument("--exclude-internal", action="store_true", help="list, describe: leave out internal topics")
    p.add_argument("--under-replicated-partitions", action="store_true", help="describe: only under-replicated ones")
    p.add_argument("--under-min-isr-partitions", action="store_true", help="describe: only ISR below min.insync")
    p.add_argument("--at-min-isr-partitions", action="store_true", help="describe: only ISR equal to min.insync")
    p.add_argument("--unavailable-partitions", action="store_true", help="describe: only partitions with no leader")
    p.add_argument("--topics-with-overrides", action="store_true", help="describe: only topics with overrides")
    p.add_argument("--partition-size-limit-per-response", type=int, help=argparse.SUPPRESS)  # accepted, unused
    p.add_argument("--validate-only", action="store_true",
                   help="with --delete: DeleteTopics v7 (ksteward extension): check, delete nothing")  # fmt: skip
    p.add_argument("--force", action="store_true", help="delete without asking on a terminal")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    return run_command("topics", lambda: _run(args))


def _run(args: argparse.Namespace) -> int:
    action = check_options(args)
    if args.validate_only and action != "delete":
        raise UsageError('Option "[validate-only]" can only be used with option "[delete]"')
    if args.delete_config:
        print("delete-config option is no longer supported and deprecated since version 4.0. "
              "The config will be fully removed in future releases.", file=sys.stderr)  # fmt: skip
    conn = connection(args)
    handlers = {"create": _create, "list": _list, "describe": _describe, "alter": _alter, "delete": _delete}
    return handlers[action](args, conn)


def _result(future: Any) -> Any:
    return future.result(timeout=TIMEOUT + 5)


def _admin(conn: Connection) -> Any:
    return confluent_admin(conn)


def _all_topic_names(admin: Any) -> list[str]:
    return list(admin.list_topics(timeout=TIMEOUT).topics)


def _matching(args: argparse.Namespace, admin: Any) -> list[str]:
    """The topics ``--topic`` names, and Kafka's ``Topic 'x' does not exist as expected`` without --if-exists."""
    topics = select_topics(_all_topic_names(admin), args.topic, args.exclude_internal)
    if args.topic and not topics and not args.if_exists:
        raise CommandError(f"Topic '{args.topic}' does not exist as expected")
    return topics


# --- create ---------------------------------------------------------------------------------------------


def _create(args: argparse.Namespace, conn: Connection) -> int:
    from confluent_kafka import KafkaError, KafkaException
    from confluent_kafka.admin import NewTopic

    configs = parse_topic_configs(args.config)
    assignment = parse_replica_assignment(args.replica_assignment) if args.replica_assignment else None
    warnings = [COLLISION_WARNING] if has_collision_chars(args.topic) else []
    if warnings and args.output == "text":
        print(warnings[0])
    check_create(args.partitions, args.replication_factor)
    if assignment:
        new = NewTopic(args.topic, num_partitions=len(assignment), replica_assignment=assignment, config=configs)
    else:
        new = NewTopic(args.topic, num_partitions=-1 if args.partitions is None else args.partitions,
                       replication_factor=-1 if args.replication_factor is None else args.replication_factor,
                       config=configs)  # fmt: skip
    admin = _admin(conn)
    result = "created"
    try:
        _result(admin.create_topics([new], operation_timeout=TIMEOUT, request_timeout=TIMEOUT)[args.topic])
    except KafkaException as exc:
        error = exc.args[0] if exc.args else None
        if not (args.if_not_exists and getattr(error, "code", lambda: None)() == KafkaError.TOPIC_ALREADY_EXISTS):
            raise
        result = "exists"
    if args.output == "json":
        print_json({"action": "create", "topics": [{"name": args.topic, "result": result}], "warnings": warnings})
    elif result == "created":
        print(f"Created topic {args.topic}.")
    return 0


# --- list, describe -------------------------------------------------------------------------------------


def _list(args: argparse.Namespace, conn: Connection) -> int:
    admin = _admin(conn)
    topics = select_topics(_all_topic_names(admin), args.topic, args.exclude_internal)
    if args.output == "json":
        print_json({"topics": topics})
    else:
        for name in topics:
            print(name)
    return 0


def _describe(args: argparse.Namespace, conn: Connection) -> int:
    admin = _admin(conn)
    if args.topic and args.topic_id and args.if_exists:
        print("Only topic id will be used when both --topic and --topic-id are specified and topicId is not "
              "Uuid.ZERO_UUID")  # fmt: skip
    if args.topic_id:
        names = select_topics(_all_topic_names(admin), None, args.exclude_internal)
        topics = [t for t in _describe_topics(admin, names) if t.topic_id == args.topic_id]
        if not topics and not args.if_exists:
            raise CommandError(f"TopicId '{args.topic_id}' does not exist as expected")
    else:
        topics = _describe_topics(admin, _matching(args, admin))
    topics = _with_configs(admin, topics)
    live = {int(n.id) for n in _result(admin.describe_cluster(request_timeout=TIMEOUT)).nodes}
    filters = DescribeFilters.from_args(args)
    if args.output == "json":
        print_json(describe_json(topics, filters, live))
    else:
        for line in describe_lines(topics, filters, live):
            print(line)
    return 0


def _describe_topics(admin: Any, names: list[str]) -> list[TopicInfo]:
    from confluent_kafka import TopicCollection

    if not names:
        return []
    futures = admin.describe_topics(TopicCollection(names), request_timeout=TIMEOUT)
    topics = []
    for name in names:
        d = _result(futures[name])
        topic_id = str(d.topic_id) if d.topic_id is not None else None
        partitions = sorted(
            (PartitionInfo(p.id, None if p.leader is None or p.leader.id < 0 else p.leader.id,
                           [n.id for n in p.replicas], [n.id for n in p.isr]) for p in d.partitions),
            key=lambda p: p.partition,
        )  # fmt: skip
        zero = topic_id in (None, "AAAAAAAAAAAAAAAAAAAAAA")
        topics.append(TopicInfo(name, None if zero else topic_id, bool(d.is_internal) or name in INTERNAL_TOPICS,
                                partitions))  # fmt: skip
    return topics


def _with_configs(admin: Any, topics: list[TopicInfo]) -> list[TopicInfo]:
    from confluent_kafka.admin import ConfigResource, ConfigSource, ResourceType

    if not topics:
        return []
    resources = [ConfigResource(ResourceType.TOPIC, t.name) for t in topics]
    futures = admin.describe_configs(resources, request_timeout=TIMEOUT)
    out = []
    for topic, resource in zip(topics, resources, strict=True):
        entries = _result(futures[resource]).values()
        configs = [ConfigValue(e.name, e.value, e.source == ConfigSource.DEFAULT_CONFIG.value) for e in entries]
        out.append(TopicInfo(topic.name, topic.topic_id, topic.internal, topic.partitions, configs))
    return out


# --- alter ----------------------------------------------------------------------------------------------


def _alter(args: argparse.Namespace, conn: Connection) -> int:
    from confluent_kafka.admin import NewPartitions

    assignment = parse_replica_assignment(args.replica_assignment) if args.replica_assignment else None
    admin = _admin(conn)
    topics = _matching(args, admin)
    requests = []
    if topics:
        current = {t.name: len(t.partitions) for t in _describe_topics(admin, topics)}
        for name in topics:
            if assignment:  # TopicService.topicNewPartitions: the entries past the existing partitions
                requests.append(NewPartitions(name, args.partitions, assignment[current[name] :]))
            else:
                requests.append(NewPartitions(name, args.partitions))
        futures = admin.create_partitions(requests, operation_timeout=TIMEOUT, request_timeout=TIMEOUT)
        for name in topics:
            _result(futures[name])
    if args.output == "json":
        print_json({"action": "alter", "topics": [{"name": n, "partitions": args.partitions} for n in topics]})
    return 0


# --- delete ---------------------------------------------------------------------------------------------


def _delete(args: argparse.Namespace, conn: Connection) -> int:
    admin = _admin(conn)
    topics = _matching(args, admin)
    if not topics:
        if args.output == "json":
            print_json({"action": "delete", "validate_only": args.validate_only, "topics": []})
        return 0
    if not args.validate_only and not confirm(f"Delete {len(topics)} topic(s): {', '.join(topics)}?",
                                              force=args.force):  # fmt: skip
        raise CommandError("not confirmed; nothing was deleted")
    verdicts = _validate_delete(conn, topics) if args.validate_only else _delete_topics(admin, topics)
    return _report_delete(args, verdicts)


def _delete_topics(admin: Any, topics: list[str]) -> list[Verdict]:
    futures = admin.delete_topics(topics, operation_timeout=TIMEOUT, request_timeout=TIMEOUT)
    verdicts: list[Verdict] = []
    for name in topics:
        try:
            _result(futures[name])
            verdicts.append((name, None, None))
        except Exception as exc:  # a KafkaException per topic: report each, then exit 1
            error: Any = exc.args[0] if exc.args else None
            code = error.name() if hasattr(error, "name") else type(exc).__name__
            verdicts.append((name, code, describe_kafka_error(exc)))
    return verdicts


def _validate_delete(conn: Connection, topics: list[str]) -> list[Verdict]:
    """DeleteTopics v7 (KIP-934, ksteward's extension): each topic's verdict, nothing deleted."""
    from kio.schema.errors import ErrorCode

    from ksteward.protocol.apis import ApiKey

    with ksteward_admin(conn) as wire:
        if wire.max_version(ApiKey.DELETE_TOPICS) < 7:
            raise CommandError("the server does not support --validate-only (DeleteTopics v7, a ksteward "
                               "extension, KIP-934); nothing was deleted")  # fmt: skip
        body = wire.request(ApiKey.DELETE_TOPICS, {"timeout": int(TIMEOUT * 1000), "validate_only": True,
                                                   "topics": [{"name": t, "topic_id": None} for t in topics]},
                            max_version=7)  # fmt: skip
    verdicts: dict[str, Verdict] = {}
    for r in body.responses:
        code = ErrorCode(r.error_code)
        if code == ErrorCode.none:
            verdicts[r.name] = (r.name, None, None)
        else:
            name = code.name.upper()
            verdicts[r.name] = (r.name, name, f"{name}: {r.error_message or 'no message'}")
    return [verdicts[t] for t in topics if t in verdicts]  # in the order asked (sorted), whatever the server's


def _report_delete(args: argparse.Namespace, verdicts: list[Verdict]) -> int:
    ok = "valid" if args.validate_only else "deleted"
    if args.output == "json":
        print_json({"action": "delete", "validate_only": args.validate_only, "topics": [
            {"name": name, "result": ok if code is None else "refused",
             "error": None if code is None else {"code": code, "message": message}}
            for name, code, message in verdicts]})  # fmt: skip
    else:
        for name, code, message in verdicts:
            if code is None and args.validate_only:
                print(f"Topic {name}: could be deleted (validate only; nothing was deleted)")
            elif code is not None:
                print(f"ksteward topics: topic {name}: {message}", file=sys.stderr)
    return 1 if any(code is not None for _, code, _ in verdicts) else 0
