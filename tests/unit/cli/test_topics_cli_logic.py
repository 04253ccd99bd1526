"""``ksteward topics``' pure logic against Kafka's TopicCommand: the option rules and their messages, ``--topic``
as a Java regex (IncludeList), ``--replica-assignment`` and ``--config`` parsing, and the describe lines."""

from __future__ import annotations

import argparse

import pytest

from ksteward.cli.admin_common import UsageError
from ksteward.cli.main import build_parser
from ksteward.cli.topics_logic import (
    ACTION_RULE,
    ConfigValue,
    DescribeFilters,
    PartitionInfo,
    TopicInfo,
    check_create,
    check_options,
    describe_json,
    describe_lines,
    parse_replica_assignment,
    parse_topic_configs,
    select_topics,
    topic_pattern,
)


def parse(*flags: str) -> argparse.Namespace:
    return build_parser().parse_args(["topics", "--bootstrap-server", "b:9092", *flags])


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        ([], ACTION_RULE),
        (["--list", "--describe"], ACTION_RULE),
        (["--create"], 'Missing required argument "[topic]"'),
        (["--delete"], 'Missing required argument "[topic]"'),
        (["--alter", "--topic", "t"], 'Missing required argument "[partitions]"'),
        (
            ["--alter", "--topic", "t", "--partitions", "2", "--config", "a=b"],
            'Option combination "[[bootstrap-server], [config]]" can\'t be used with option "[alter]" (To alter topic '
            "configurations, the kafka-configs tool can be used.)",
        ),
        (["--describe", "--config", "a=b"], 'Option "[config]" can\'t be used with option "[describe]"'),
        (["--list", "--partitions", "2"], 'Option "[partitions]" can\'t be used with option "[list]"'),
        (
            ["--alter", "--topic", "t", "--partitions", "2", "--replication-factor", "1"],
            'Option "[replication-factor]" can\'t be used with option "[alter]"',
        ),
        (
            ["--create", "--topic", "t", "--replica-assignment", "1", "--partitions", "1"],
            'Option "[replica-assignment]" can\'t be used with option "[partitions]"',
        ),
        (
            ["--create", "--topic", "t", "--replica-assignment", "1", "--replication-factor", "1"],
            'Option "[replica-assignment]" can\'t be used with option "[replication-factor]"',
        ),
        (["--create", "--topic", "t", "--if-exists"], 'Option "[if-exists]" can\'t be used with option "[create]"'),
        (
            ["--delete", "--topic", "t", "--if-not-exists"],
            'Option "[if-not-exists]" can\'t be used with option "[delete]"',
        ),
        (
            ["--delete", "--topic", "t", "--exclude-internal"],
            'Option "[exclude-internal]" can\'t be used with option "[delete]"',
        ),
        (
            ["--list", "--under-replicated-partitions"],
            'Option "[under-replicated-partitions]" can\'t be used with option "[list]"',
        ),
        (
            ["--describe", "--topics-with-overrides", "--at-min-isr-partitions"],
            'Option "[at-min-isr-partitions]" can\'t be used with option "[topics-with-overrides]"',
        ),
        (["--describe", "--if-exists"], "--topic or --topic-id is required to describe a topic"),
    ],
)
def test_option_rules_carry_kafkas_messages(flags: list[str], message: str) -> None:
    with pytest.raises(UsageError) as caught:
        check_options(parse(*flags))
    assert str(caught.value) == message


@pytest.mark.parametrize(
    "flags",
    [
        ["--list"],
        ["--list", "--exclude-internal", "--topic", "a.*"],
        ["--describe", "--under-min-isr-partitions", "--unavailable-partitions"],
        ["--describe", "--topic-id", "x", "--if-exists"],
        ["--create", "--topic", "t", "--partitions", "3", "--replication-factor", "1", "--config", "a=b"],
        ["--create", "--topic", "t", "--replica-assignment", "1:2,2:1", "--if-not-exists"],
        ["--alter", "--topic", "t", "--partitions", "4", "--replica-assignment", "1,1,1,1", "--if-exists"],
        ["--delete", "--topic", "t", "--if-exists", "--validate-only", "--force"],
    ],
)
def test_accepted_combinations(flags: list[str]) -> None:
    assert check_options(parse(*flags)) == next(
        f[2:] for f in flags if f[2:] in ("list", "describe", "create", "alter", "delete")
    )


def test_topic_is_a_java_style_regex_matched_whole() -> None:
    names = ["orders", "orders-eu", "payments", "test.topic", "testXtopic", "__consumer_offsets"]
    assert select_topics(names, "orders", False) == ["orders"]  # whole-name match, not search
    assert select_topics(names, "orders.*", False) == ["orders", "orders-eu"]
    assert select_topics(names, "orders,payments", False) == ["orders", "payments"]  # IncludeList: ',' is '|'
    assert select_topics(names, "'orders'", False) == ["orders"]  # surrounding quotes dropped
    assert select_topics(names, "test\\.topic", False) == ["test.topic"]
    assert select_topics(names, "test.topic", False) == ["test.topic", "testXtopic"]
    assert select_topics(names, "\\Qtest.topic\\E", False) == ["test.topic"]  # Java's quoting
    assert select_topics(names, "(?<region>orders)-eu", False) == ["orders-eu"]  # Java's named group
    assert select_topics(names, None, True) == ["orders", "orders-eu", "payments", "test.topic", "testXtopic"]
    assert select_topics(names, "__.*", True) == []
    with pytest.raises(UsageError, match=r"not a valid regular expression"):
        topic_pattern("orders(")


def test_replica_assignment_rules() -> None:
    assert parse_replica_assignment("1:2, 2:3 ,3:1") == [[1, 2], [2, 3], [3, 1]]
    with pytest.raises(UsageError, match=r"^Partition replica lists may not contain duplicate entries: 1$"):
        parse_replica_assignment("1:2,1:1")
    with pytest.raises(UsageError, match=r"^Partition 1 has different replication factor: \[2\]$"):
        parse_replica_assignment("1:2,2")
    with pytest.raises(UsageError, match='For input string: "x"'):
        parse_replica_assignment("1:x")


def test_topic_configs_are_checked_before_sending() -> None:
    assert parse_topic_configs(["retention.ms = 1000", "cleanup.policy=compact,delete"]) == {
        "retention.ms": "1000",
        "cleanup.policy": "compact,delete",
    }
    for bad in (["retention.ms"], ["retention.ms="], ["a=b=c"]):
        with pytest.raises(UsageError, match='all configs to be added must be in the format "key=val"'):
            parse_topic_configs(bad)
    with pytest.raises(UsageError, match=r"^Unknown topic config name: nope$"):
        parse_topic_configs(["nope=1"])
    with pytest.raises(UsageError, match=r"retention.ms"):
        parse_topic_configs(["retention.ms=soon"])


def test_create_range_checks() -> None:
    check_create(1, 32767)
    check_create(None, None)
    for rf in (0, 32768):
        with pytest.raises(UsageError, match=r"^The replication factor must be between 1 and 32767 inclusive$"):
            check_create(None, rf)
    with pytest.raises(UsageError, match=r"^The partitions must be greater than 0$"):
        check_create(0, None)


def _topic() -> TopicInfo:
    configs = [
        ConfigValue("cleanup.policy", "compact", False),
        ConfigValue("min.insync.replicas", "2", False),
        ConfigValue("retention.ms", "604800000", True),
        ConfigValue("secret", None, False),
    ]
    partitions = [
        PartitionInfo(0, 1, [1, 2], [1, 2]),
        PartitionInfo(1, 2, [2, 1], [2]),
        PartitionInfo(2, None, [3, 1], []),
    ]
    return TopicInfo("orders", "kI5mQbQ4TjG7bVNJ7x2h0A", False, partitions, configs)


def test_describe_lines_are_kafkas_tab_separated_format() -> None:
    lines = describe_lines([_topic()], DescribeFilters(), {1, 2})
    assert lines == [
        "Topic: orders\tTopicId: kI5mQbQ4TjG7bVNJ7x2h0A\tPartitionCount: 3\tReplicationFactor: 2\t"
        "Configs: cleanup.policy=compact,min.insync.replicas=2,secret=null",
        "\tTopic: orders\tPartition: 0\tLeader: 1\tReplicas: 1,2\tIsr: 1,2\tElr: N/A\tLastKnownElr: N/A",
        "\tTopic: orders\tPartition: 1\tLeader: 2\tReplicas: 2,1\tIsr: 2\tElr: N/A\tLastKnownElr: N/A",
        "\tTopic: orders\tPartition: 2\tLeader: none\tReplicas: 3,1\tIsr: \tElr: N/A\tLastKnownElr: N/A",
    ]
    no_id = TopicInfo("t", None, False, [PartitionInfo(0, 1, [1], [1])])
    assert (
        describe_lines([no_id], DescribeFilters(), {1})[0]
        == "Topic: t\tPartitionCount: 1\tReplicationFactor: 1\tConfigs: "
    )


def test_describe_filters_select_as_kafkas_describe_options() -> None:
    t, live = _topic(), {1, 2}

    def partitions(**flags: bool) -> list[int]:
        return [
            int(line.split("Partition: ")[1].split("\t")[0])
            for line in describe_lines([t], DescribeFilters(**flags), live)
        ]

    assert partitions(under_replicated=True) == [1, 2]
    assert partitions(under_min_isr=True) == [1, 2]  # ISR below min.insync.replicas=2, or no leader
    assert partitions(at_min_isr=True) == [0]
    assert partitions(unavailable=True) == [2]
    assert partitions(under_replicated=True, unavailable=True) == [1, 2]
    overrides = describe_lines([t], DescribeFilters(with_overrides=True), live)
    assert len(overrides) == 1 and overrides[0].startswith("Topic: orders\t")
    plain = TopicInfo("plain", None, False, [PartitionInfo(0, 1, [1], [1])], [ConfigValue("a", "1", True)])
    assert describe_lines([plain], DescribeFilters(with_overrides=True), live) == []
    doc = describe_json([t, plain], DescribeFilters(unavailable=True), live)
    assert [(x["name"], [p["partition"] for p in x["partitions"]]) for x in doc["topics"]] == [("orders", [2])]
    assert doc["topics"][0]["configs"] == {"cleanup.policy": "compact", "min.insync.replicas": "2", "secret": None}


@pytest.mark.parametrize("command", ["topics", "configs"])
def test_help_shows_examples(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args([command, "--help"])
    out = capsys.readouterr().out
    assert "examples:" in out and f"ksteward {command} --bootstrap-server" in out


def test_validate_only_on_a_server_without_delete_topics_v7_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    """Real Kafka serves DeleteTopics up to v6: ApiVersions tells, and the command stops with one line."""
    from ksteward.cli import topics
    from ksteward.cli.admin_common import CommandError, Connection

    class KafkaLike:  # what ApiVersions would have said; nothing else is asked
        def __enter__(self) -> KafkaLike:
            return self

        def __exit__(self, *exc: object) -> None:
            pass

        def max_version(self, api_key: int) -> int:
            return 6

        def request(self, *args: object, **kwargs: object) -> None:
            raise AssertionError("nothing may be sent")

    monkeypatch.setattr(topics, "ksteward_admin", lambda conn: KafkaLike())
    with pytest.raises(CommandError) as caught:
        topics._validate_delete(Connection("b:9092", False), ["orders"])
    assert str(caught.value) == (
        "the server does not support --validate-only (DeleteTopics v7, a ksteward extension, KIP-934); "
        "nothing was deleted"
    )
