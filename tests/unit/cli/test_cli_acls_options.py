"""``ksteward acls`` flags: Kafka's AclCommand checks (its messages), the shortcut expansion, and the text formats
of AclCommand's output, line by line (org.apache.kafka.tools.AclCommand, Kafka 4.x)."""

from __future__ import annotations

import argparse

import pytest

from ksteward.authorizer import AclBinding, AclBindingFilter, AclOperation, PatternType, ResourceType
from ksteward.cli.acls import options
from ksteward.cli.acls.answers import binding_text
from ksteward.cli.acls.commands import _plan_add, group, listing_lines
from ksteward.cli.acls.options import CLUSTER_PATTERN, Entry, Pattern
from ksteward.cli.admin_common import UsageError
from ksteward.cli.main import build_parser

R, W, D, C, IW = (AclOperation.READ, AclOperation.WRITE, AclOperation.DESCRIBE, AclOperation.CREATE,
                  AclOperation.IDEMPOTENT_WRITE)  # fmt: skip
ALLOW, DENY = options.AclPermissionType.ALLOW, options.AclPermissionType.DENY
TOPIC, GROUP, TXN = ResourceType.TOPIC, ResourceType.GROUP, ResourceType.TRANSACTIONAL_ID
LIT, PRE = PatternType.LITERAL, PatternType.PREFIXED


def parse(*flags: str) -> argparse.Namespace:
    return build_parser().parse_args(["acls", "--bootstrap-server", "b:9092", *flags])


def expand(*flags: str) -> dict[Pattern, set[Entry]]:
    args = parse(*flags)
    action = options.check_args(args)
    expansion = options.resource_to_entries(args) if action == "add" else options.filter_to_entries(args)
    return {p: set(e) for p, e in expansion.items()}


def allow(principal: str, op: AclOperation, host: str = "*") -> Entry:
    return Entry(principal, host, op, ALLOW)


def test_cli_acls_from_flags_every_principal_operation_and_host() -> None:
    got = expand("--add", "--allow-principal", "User:a", "--allow-principal", "User:b", "--operation", "Read",
                 "--operation", "WRITE", "--allow-host", "10.0.0.1", "--allow-host", " 10.0.0.2 ",
                 "--deny-principal", "User:c", "--topic", " t1 ", "--topic", "t2")  # fmt: skip
    entries = {Entry(p, h, op, ALLOW) for p in ("User:a", "User:b") for op in (R, W) for h in ("10.0.0.1", "10.0.0.2")}
    entries |= {Entry("User:c", "*", op, DENY) for op in (R, W)}  # --deny-host defaults to *
    assert got == {Pattern(TOPIC, "t1", LIT): entries, Pattern(TOPIC, "t2", LIT): entries}


def test_default_operation_is_all_and_default_host_is_star() -> None:
    assert expand("--add", "--allow-principal", "User:a", "--cluster") == {
        CLUSTER_PATTERN: {allow("User:a", AclOperation.ALL)}
    }


def test_producer_expands_as_aclcommand() -> None:
    got = expand("--add", "--producer", "--allow-principal", "User:p", "--topic", "t", "--transactional-id", "x",
                 "--group", "ignored")  # fmt: skip
    assert got == {
        Pattern(TOPIC, "t", LIT): {allow("User:p", op) for op in (W, D, C)},
        Pattern(TXN, "x", LIT): {allow("User:p", op) for op in (W, D)},
    }


def test_producer_idempotent_adds_idempotent_write_on_the_cluster_even_with_prefixed_topics() -> None:
    got = expand("--add", "--producer", "--idempotent", "--allow-principal", "User:p", "--topic", "t",
                 "--resource-pattern-type", "PREFIXED")  # fmt: skip
    assert got == {
        Pattern(TOPIC, "t", PRE): {allow("User:p", op) for op in (W, D, C)},
        CLUSTER_PATTERN: {allow("User:p", IW)},
    }


def test_consumer_expands_and_merges_with_producer() -> None:
    assert expand("--add", "--consumer", "--allow-principal", "User:c", "--topic", "t", "--group", "g") == {
        Pattern(TOPIC, "t", LIT): {allow("User:c", R), allow("User:c", D)},
        Pattern(GROUP, "g", LIT): {allow("User:c", R)},
    }
    both = expand("--add", "--producer", "--consumer", "--allow-principal", "User:x", "--topic", "t", "--group", "g")
    assert both[Pattern(TOPIC, "t", LIT)] == {allow("User:x", op) for op in (W, D, C, R)}


def test_resource_flags_and_the_cluster_only_when_literal() -> None:
    args = parse("--list", "--topic", "a", "--cluster", "--group", "g", "--transactional-id", " x ",
                 "--delegation-token", "tok", "--user-principal", "User:u")  # fmt: skip
    assert options.resource_filters(args, die_if_none=True) == [
        Pattern(TOPIC, "a", LIT), CLUSTER_PATTERN, Pattern(GROUP, "g", LIT),
        Pattern(TXN, " x ", LIT),  # Kafka does not trim transactional ids
        Pattern(ResourceType.DELEGATION_TOKEN, "tok", LIT), Pattern(ResourceType.USER, "User:u", LIT),
    ]  # fmt: skip
    prefixed = parse("--list", "--cluster", "--topic", "a", "--resource-pattern-type", "prefixed")
    assert options.resource_filters(prefixed, die_if_none=True) == [Pattern(TOPIC, "a", PRE)]


def test_remove_without_principals_matches_every_entry_and_with_them_exactly() -> None:
    args = parse("--remove", "--topic", "t", "--resource-pattern-type", "match")
    options.check_args(args)
    assert options.delete_filters(options.filter_to_entries(args)) == [AclBindingFilter(TOPIC, "t", PatternType.MATCH)]
    args = parse("--remove", "--topic", "t", "--allow-principal", "User:a", "--operation", "Read")
    assert options.delete_filters(options.filter_to_entries(args)) == [
        AclBindingFilter(TOPIC, "t", LIT, "User:a", "*", R, ALLOW)
    ]


@pytest.mark.parametrize("name, operation", [
    ("Read", R), ("READ", R), ("read", R), ("IdempotentWrite", IW), ("IDEMPOTENTWRITE", IW), ("idempotentwrite", IW),
    ("idempotent_write", AclOperation.UNKNOWN), ("DescribeConfigs", AclOperation.DESCRIBE_CONFIGS),
    ("CreateTokens", AclOperation.CREATE_TOKENS), ("nonsense", AclOperation.UNKNOWN),
])  # fmt: skip
def test_operation_names_as_securityutils_reads_them(name: str, operation: AclOperation) -> None:
    assert options.parse_operation(name) is operation


@pytest.mark.parametrize("flags, message", [
    ([], "Command must include exactly one action: --list, --add, --remove. "),
    (["--add", "--list"], "Command must include exactly one action"),
    (["--list", "--producer"], 'Option "[list]" can\'t be used with option "[producer]"'),
    (["--list", "--allow-principal", "User:a"], 'Option "[list]" can\'t be used with option "[allow-principal]"'),
    (["--add", "--producer", "--topic", "t", "--operation", "Read"],
     'Option "[producer]" can\'t be used with option "[operation]"'),
    (["--add", "--consumer", "--topic", "t", "--group", "g", "--deny-principal", "User:x"],
     'Option "[consumer]" can\'t be used with option "[deny-principal]"'),
    (["--add", "--principal", "User:a", "--topic", "t"], "The --principal option is only available if --list is set"),
    (["--add", "--producer", "--allow-principal", "User:a"], "With --producer you must specify a --topic"),
    (["--add", "--idempotent", "--topic", "t"], "The --idempotent option is only available if --producer is set"),
    (["--add", "--consumer", "--topic", "t"], "With --consumer you must specify a --topic and a --group and no "
                                              "--cluster or --transactional-id option should be specified."),
    (["--add", "--consumer", "--topic", "t", "--group", "g", "--cluster"], "With --consumer you must specify"),
])  # fmt: skip
def test_check_args_messages(flags: list[str], message: str) -> None:
    with pytest.raises(UsageError) as err:
        options.check_args(parse(*flags))
    assert str(err.value).startswith(message)


@pytest.mark.parametrize("flags, message", [
    (["--add", "--allow-principal", "User:a", "--topic", "t", "--resource-pattern-type", "match"],
     "A '--resource-pattern-type' value of 'MATCH' is not valid when adding acls."),
    (["--add", "--topic", "t"],
     "You must specify one of: --allow-principal, --deny-principal when trying to add ACLs."),
    (["--add", "--allow-principal", "User:a"], "You must provide at least one resource: --topic <topic> or --cluster "
                                               "or --group <group> or --delegation-token <Delegation Token ID>"),
    (["--add", "--allow-principal", "User:a", "--operation", "Write", "--group", "g"],
     "ResourceType GROUP only supports operations [ALL, READ, DELETE, DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS]"),
    (["--add", "--allow-principal", "User:a", "--operation", "Bogus", "--topic", "t"],
     "ResourceType TOPIC only supports operations"),
    (["--add", "--allow-principal", "alice", "--topic", "t"],
     "expected a string in format principalType:principalName but got alice"),
])  # fmt: skip
def test_add_checks(flags: list[str], message: str) -> None:
    args = parse(*flags)
    with pytest.raises(UsageError) as err:
        options.check_args(args)
        options.resource_to_entries(args)
    assert str(err.value).startswith(message)


@pytest.mark.parametrize("flags, message", [
    (["--who-can", "--topic", "t"], "--who-can needs exactly one --operation"),
    (["--who-can", "--operation", "Read", "--topic", "a", "--topic", "b"], "--who-can answers for one resource"),
    (["--explain", "--operation", "Read", "--topic", "a"], "--explain needs exactly one --principal"),
    (["--list", "--dry-run"], "--dry-run is only available with --add or --remove"),
    (["--remove", "--topic", "t", "--audit-dir", "d"], "--audit-dir is only available with --dry-run"),
])  # fmt: skip
def test_ksteward_answer_checks(flags: list[str], message: str) -> None:
    with pytest.raises(UsageError, match="^" + message.replace("[", r"\[")):
        options.check_args(parse(*flags))


def test_unknown_pattern_type_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        parse("--list", "--resource-pattern-type", "unknown")
    assert exit_.value.code == 2
    assert "Unknown resource-pattern-type: unknown" in capsys.readouterr().err


def test_kafka_tostring_formats() -> None:
    pattern = Pattern(TOPIC, "orders", LIT)
    assert pattern.as_pattern() == "ResourcePattern(resourceType=TOPIC, name=orders, patternType=LITERAL)"
    assert pattern.as_filter() == "ResourcePatternFilter(resourceType=TOPIC, name=orders, patternType=LITERAL)"
    entry = allow("User:alice", R)
    assert str(entry) == "(principal=User:alice, host=*, operation=READ, permissionType=ALLOW)"
    assert binding_text(options.binding(pattern, entry)) == (
        "(pattern=ResourcePattern(resourceType=TOPIC, name=orders, patternType=LITERAL), "
        "entry=(principal=User:alice, host=*, operation=READ, permissionType=ALLOW))"
    )


def test_listing_lines_as_printresourceacls() -> None:
    acls = [AclBinding("TOPIC", "t", "LITERAL", "User:b", "*", "WRITE", "ALLOW"),
            AclBinding("TOPIC", "t", "LITERAL", "User:a", "*", "READ", "ALLOW"),
            AclBinding("CLUSTER", "kafka-cluster", "LITERAL", "User:a", "h", "ALTER", "DENY")]  # fmt: skip
    assert listing_lines(group(acls)) == [
        "Current ACLs for resource `ResourcePattern(resourceType=TOPIC, name=t, patternType=LITERAL)`:",
        "\t(principal=User:a, host=*, operation=READ, permissionType=ALLOW)",
        "\t(principal=User:b, host=*, operation=WRITE, permissionType=ALLOW)",
        "",
        "Current ACLs for resource `ResourcePattern(resourceType=CLUSTER, name=kafka-cluster, patternType=LITERAL)`:",
        "\t(principal=User:a, host=h, operation=ALTER, permissionType=DENY)",
        "",
    ]


def test_add_lines_as_addacls() -> None:
    pattern = Pattern(TOPIC, "t", LIT)
    there = options.binding(pattern, allow("User:a", R))
    new, present, lines = _plan_add({pattern: [allow("User:a", R), allow("User:a", W), allow("User:b", W)]},
                                    {pattern: [there]})  # fmt: skip
    assert present == [there] and len(new) == 2
    assert lines == [
        f"Acl {binding_text(there)} already exists.",
        "Adding ACLs for resource `ResourcePattern(resourceType=TOPIC, name=t, patternType=LITERAL)`: ",
        " \t(principal=User:a, host=*, operation=WRITE, permissionType=ALLOW)",
        "\t(principal=User:b, host=*, operation=WRITE, permissionType=ALLOW)",
        "",
    ]


def test_help_shows_examples(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args(["acls", "--help"])
    out = capsys.readouterr().out
    assert "examples:" in out and "--who-can --operation Read --topic orders" in out


class FakeBackend:
    """What ``known_settings`` and the removal read, without a cluster."""

    def __init__(self, configs: dict[str, str | None] | None) -> None:
        self.configs = configs
        self.deleted: list[AclBindingFilter] = []

    def broker_configs(self) -> dict[str, str | None] | None:
        return self.configs

    def delete(self, filters: list[AclBindingFilter]) -> list[AclBinding]:
        self.deleted += filters
        return []


@pytest.mark.parametrize("configs, flags, super_users, allow, notes", [
    ({"super.users": "User:a; User:b", "allow.everyone.if.no.acl.found": "TRUE"}, [], {"User:a", "User:b"}, True, []),
    ({"super.users": None, "allow.everyone.if.no.acl.found": None}, [], set(), False,
     ["super.users: DescribeConfigs hides its value", "allow.everyone.if.no.acl.found: DescribeConfigs hides"]),
    ({}, [], set(), False, ["super.users: DescribeConfigs does not return it", "allow.everyone.if.no.acl.found: "
                                                                               "DescribeConfigs does not return it"]),
    (None, [], set(), False, ["super.users: DescribeConfigs on the broker failed", "allow.everyone.if.no.acl.found"]),
    (None, ["--super-users", "User:s", "--allow-everyone-if-no-acl-found", "true"], {"User:s"}, True, []),
])  # fmt: skip
def test_known_settings_flags_then_describeconfigs_then_assumptions(
    configs: dict[str, str | None] | None, flags: list[str], super_users: set[str], allow: bool, notes: list[str]
) -> None:
    from ksteward.cli.acls.commands import known_settings

    known = known_settings(parse("--who-can", *flags), FakeBackend(configs))  # type: ignore[arg-type]
    assert (set(known.settings.super_users), known.settings.allow_everyone_if_no_acl_found) == (super_users, allow)
    assert len(known.notes) == len(notes)
    assert all(n.startswith(want) for n, want in zip(known.notes, notes, strict=True))
    assert known.allow_everyone_known == (not any(n.startswith("allow.everyone") for n in notes))


def test_removal_asks_kafkas_question_per_resource(monkeypatch: pytest.MonkeyPatch) -> None:
    from ksteward.cli.acls import commands

    asked: list[str] = []
    monkeypatch.setattr(commands, "confirm", lambda q, force: asked.append(q) or "all" in q)
    args = parse("--remove", "--topic", "a", "--group", "g")
    backend = FakeBackend({})
    commands._confirm_and_delete(args, backend, options.filter_to_entries(args))  # type: ignore[arg-type]
    assert asked == [
        "Are you sure you want to delete all ACLs for resource filter "
        "`ResourcePatternFilter(resourceType=TOPIC, name=a, patternType=LITERAL)`?",
        "Are you sure you want to delete all ACLs for resource filter "
        "`ResourcePatternFilter(resourceType=GROUP, name=g, patternType=LITERAL)`?",
    ]
    assert backend.deleted == [AclBindingFilter(TOPIC, "a", LIT), AclBindingFilter(GROUP, "g", LIT)]
    asked.clear()
    args = parse("--remove", "--topic", "a", "--allow-principal", "User:x", "--operation", "Read")
    commands._confirm_and_delete(args, FakeBackend({}), options.filter_to_entries(args))  # type: ignore[arg-type]
    assert asked == [
        "Are you sure you want to remove ACLs: \n \t(principal=User:x, host=*, operation=READ, permissionType=ALLOW)"
        "\n from resource filter `ResourcePatternFilter(resourceType=TOPIC, name=a, patternType=LITERAL)`?"
    ]
