"""``whatif``: the requests a plan flips, the allow-everyone trap, plan files and DeleteAcls filters."""

from __future__ import annotations

import datetime
import itertools
import json
from pathlib import Path

import pytest
from chispa import assert_df_equality
from pyspark.sql import DataFrame, SparkSession

from ksteward.authorizer import AclBinding, AclBindingFilter
from ksteward.pipeline.decide import acl_frame
from ksteward.pipeline.jobs.whatif import Plan, filter_condition, load_plan, parse_plan, planned_acls, whatif
from ksteward.pipeline.local_frames import local_frame
from ksteward.pipeline.readers import InputError
from ksteward.pipeline.schemas import REQUEST_COLUMNS, AuthorizerSettings

T0 = datetime.datetime(2026, 11, 1, 12, 0, tzinfo=datetime.UTC)
EVERYONE = AuthorizerSettings(allow_everyone_if_no_acl_found=True)


def events_frame(spark: SparkSession, requests: list[tuple[str, str, str, str, str]], repeat: int = 1) -> DataFrame:
    rows = [(*r, T0 + datetime.timedelta(minutes=i + k)) for i, r in enumerate(requests) for k in range(repeat)]
    return local_frame(spark, rows, ", ".join([*(f"{c} string" for c in REQUEST_COLUMNS), "event_time timestamp"]))


def acl(name: str, principal: str, op: str = "READ", perm: str = "ALLOW", pattern: str = "LITERAL") -> AclBinding:
    return AclBinding("TOPIC", name, pattern, principal, "*", op, perm)


def flips_of(frame: DataFrame) -> dict[tuple[str, str, str], tuple[str, str, str, int]]:
    """(principal, operation, topic) -> (change, rule_before, rule_after, events)."""
    return {
        (r.principal, r.operation, r.resource_name): (r.change, r.rule_before, r.rule_after, r.events)
        for r in frame.collect()
    }


#: The columns of a flip that the tables below spell out.
FLIP_COLUMNS = ("principal", "operation", "resource_name", "change", "rule_before", "rule_after", "events")


def flips_table(spark: SparkSession, rows: list[tuple[object, ...]]) -> DataFrame:
    """The expected flips, as ``FLIP_COLUMNS`` of ``whatif``'s output."""
    return local_frame(
        spark,
        rows,
        "principal string, operation string, resource_name string, change string, rule_before string, "
        "rule_after string, events long",
    )


def test_the_first_allow_on_an_open_topic_denies_everyone_else(spark: SparkSession) -> None:
    """The classic trap: with allow.everyone.if.no.acl.found=true, "orders" has no ACL and is open to all;
    granting one new consumer READ makes "orders" have ACLs, and every other client is denied."""
    events = events_frame(
        spark,
        [
            ("User:shipping", "10.0.0.5", "READ", "TOPIC", "orders"),
            ("User:shipping", "10.0.0.5", "DESCRIBE", "TOPIC", "orders"),
            ("User:checkout", "10.0.0.6", "WRITE", "TOPIC", "orders"),
            ("User:billing", "10.0.0.7", "READ", "TOPIC", "orders"),
            ("User:checkout", "10.0.0.6", "WRITE", "TOPIC", "payments"),  # another topic: untouched
        ],
        repeat=3,
    )
    current = acl_frame(spark, [("p1", acl("payments", "User:checkout", "WRITE"))])
    plan = Plan(create=(acl("orders", "User:billing"),))
    # Most events first, then by request: the rows in the order whatif gives them.
    assert_df_equality(
        whatif(events, current, EVERYONE, plan).select(*FLIP_COLUMNS),
        flips_table(
            spark,
            [
                ("User:checkout", "WRITE", "orders", "ALLOWED->DENIED", "allow_everyone_default", "no_matching_acl", 3),
                ("User:shipping", "DESCRIBE", "orders", "ALLOWED->DENIED", "allow_everyone_default", "no_matching_acl",
                 3),
                ("User:shipping", "READ", "orders", "ALLOWED->DENIED", "allow_everyone_default", "no_matching_acl", 3),
            ],
        ),
        ignore_nullable=True,
    )  # fmt: skip
    # The same ALLOW with allow-everyone off only opens the topic to billing.
    assert_df_equality(
        whatif(events, current, AuthorizerSettings(), plan).select(*FLIP_COLUMNS),
        flips_table(spark, [("User:billing", "READ", "orders", "DENIED->ALLOWED", "no_matching_acl", "acl", 3)]),
        ignore_nullable=True,
    )


def test_flip_rows_carry_both_decisions_and_the_window(spark: SparkSession) -> None:
    events = events_frame(spark, [("User:alice", "10.0.0.1", "READ", "TOPIC", "orders")], repeat=4)
    current = acl_frame(spark, [("a1", acl("ord", "User:alice", pattern="PREFIXED"))])
    plan = Plan(create=(acl("orders", "User:*", "ALL", "DENY"),))
    [row] = whatif(events, current, AuthorizerSettings(), plan).collect()
    assert (row.granted_before, row.rule_before, row.acl_id_before) == (True, "acl", "a1")
    assert (row.granted_after, row.rule_after, row.acl_id_after) == (False, "acl", "plan:create:0")
    naive = T0.replace(tzinfo=None)  # Spark returns session-time (UTC) timestamps without a zone
    assert (row.events, row.first_seen, row.last_seen) == (4, naive, naive + datetime.timedelta(minutes=3))
    assert row.host == "10.0.0.1" and row.change == "ALLOWED->DENIED"


def test_whatif_releases_what_it_cached(spark: SparkSession) -> None:
    """The distinct requests are cached while the flips are computed and dropped before ``whatif`` returns;
    the flips, checkpointed, outlive the cache."""
    spark.catalog.clearCache()
    events = events_frame(spark, [("User:alice", "h", "READ", "TOPIC", "orders")], repeat=2)
    current = acl_frame(spark, [("p1", acl("payments", "User:checkout", "WRITE"))])
    flips = whatif(events, current, EVERYONE, Plan(create=(acl("orders", "User:bob"),)))
    assert spark._jsparkSession.sharedState().cacheManager().isEmpty()
    assert flips_of(flips) == {
        ("User:alice", "READ", "orders"): ("ALLOWED->DENIED", "allow_everyone_default", "no_matching_acl", 2)
    }


def test_deletions_exact_and_by_filter_and_settings(spark: SparkSession) -> None:
    requests = [
        ("User:alice", "h", "READ", "TOPIC", "orders"),
        ("User:bob", "h", "READ", "TOPIC", "orders-eu"),
        ("User:carol", "h", "WRITE", "TOPIC", "audit"),
        ("User:ops", "h", "ALTER", "TOPIC", "audit"),
    ]
    events = events_frame(spark, requests)
    current = acl_frame(
        spark,
        [
            ("a", acl("orders", "User:alice")),
            ("b", acl("orders-", "User:bob", pattern="PREFIXED")),
            ("c", acl("audit", "User:carol", "WRITE")),
        ],
    )
    plan = parse_plan(
        {
            "delete": [
                {
                    "resource_type": "TOPIC",
                    "resource_name": "orders",
                    "principal": "User:alice",
                    "operation": "READ",
                    "permission_type": "ALLOW",
                }
            ],
            "delete_matching": [{"resource_type": "TOPIC", "resource_name": "orders-eu", "pattern_type": "MATCH"}],
            "super.users": ["User:ops"],
        }
    )
    assert flips_of(whatif(events, current, AuthorizerSettings(), plan)) == {
        ("User:alice", "READ", "orders"): ("ALLOWED->DENIED", "acl", "no_matching_acl", 1),
        ("User:bob", "READ", "orders-eu"): ("ALLOWED->DENIED", "acl", "no_matching_acl", 1),
        ("User:ops", "ALTER", "audit"): ("DENIED->ALLOWED", "no_matching_acl", "super_user", 1),
    }
    # allow-everyone turned on opens the topics that lose their last ACL
    plan = Plan(delete=(acl("orders", "User:alice"),), allow_everyone_if_no_acl_found=True)
    assert flips_of(whatif(events, current, AuthorizerSettings(), plan)) == {}
    assert flips_of(whatif(events, current, AuthorizerSettings(), Plan(allow_everyone_if_no_acl_found=True))) == {}


def test_a_creation_equal_to_a_kept_acl_keeps_its_id(spark: SparkSession) -> None:
    current = acl_frame(spark, [("a", acl("orders", "User:alice"))])
    plan = Plan(create=(acl("orders", "User:alice"), acl("orders", "User:bob"), acl("orders", "User:bob")))
    rows = sorted((r.acl_id, r.principal) for r in planned_acls(current, plan).collect())
    assert rows == [("a", "User:alice"), ("plan:create:1", "User:bob")]


# --- DeleteAcls filters as Spark expressions ----------------------------------------------------------------

_TYPES, _NAMES, _PATTERNS = ("TOPIC", "GROUP"), ("foo", "foo-1", "*", "f"), ("LITERAL", "PREFIXED")
_PRINCIPALS, _HOSTS, _OPS, _PERMS = ("User:a", "User:*"), ("*", "h1"), ("READ", "ALL"), ("ALLOW", "DENY")
GRID_ACLS = [AclBinding(*f) for f in itertools.product(_TYPES, _NAMES, _PATTERNS, _PRINCIPALS, _HOSTS, _OPS, _PERMS)]
GRID_FILTERS = [
    AclBindingFilter(rt, name, pattern, principal, host, op, perm)
    for rt, name, pattern, principal, host, op, perm in itertools.product(
        ("ANY", "TOPIC"),
        (None, "foo-1", "*", "f"),
        ("ANY", "MATCH", "LITERAL", "PREFIXED"),
        (None, "User:*"),
        (None, "h1"),
        ("ANY", "READ"),
        ("ANY", "DENY"),
    )
]


def test_filter_condition_is_acl_binding_filter_matches(spark: SparkSession) -> None:
    frame = acl_frame(spark, [(str(i), a) for i, a in enumerate(GRID_ACLS)])
    columns = [filter_condition(f).alias(f"f{j}") for j, f in enumerate(GRID_FILTERS)]
    rows = frame.select("acl_id", *columns).collect()  # one job for every (ACL, filter) pair
    assert len(rows) == len(GRID_ACLS)
    for row in rows:
        acl_binding = GRID_ACLS[int(row.acl_id)]
        for j, f in enumerate(GRID_FILTERS):
            assert row[f"f{j}"] is f.matches(acl_binding), (f, acl_binding)


# --- plan files ------------------------------------------------------------------------------------------


def test_the_example_plan_loads() -> None:
    plan = load_plan(Path(__file__).parents[2] / "config" / "whatif-plan.example.json")
    assert plan.create and plan.delete and plan.delete_matching
    assert plan.allow_everyone_if_no_acl_found is False and plan.super_users == frozenset({"User:admin", "User:ops"})


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ({"create": [{"resource_type": "TOPIC"}]}, "create[0]: missing 'resource_name'"),
        (
            {
                "create": [
                    {
                        **dict(
                            zip(
                                ("resource_type", "resource_name", "principal", "operation", "permission_type"),
                                ("CLUSTER", "x", "User:a", "ALTER", "ALLOW"),
                                strict=True,
                            )
                        )
                    }
                ]
            },
            "create[0]: not a valid ACL: The only valid name for the CLUSTER resource is kafka-cluster",
        ),
        ({"delete_matching": [{}, {"principle": "User:a"}]}, "delete_matching[1]: unknown key(s) 'principle'"),
        ({"delete_matching": [{"operation": "REED"}]}, "delete_matching[0]: 'REED' is not a AclOperation"),
        ({"delete_matching": [{"operation": "UNKNOWN"}]}, "delete_matching[0]: a filter with an UNKNOWN field"),
        ({"remove": []}, "unknown key(s) 'remove'"),
        ({"super.users": "bob"}, "'super.users': expected a string in format principalType:principalName"),
    ],
)
def test_plan_errors_name_the_file_and_the_entry(tmp_path: Path, document: object, message: str) -> None:
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(document))
    with pytest.raises(InputError) as caught:
        load_plan(path)
    assert str(caught.value).startswith(f"{path}: ")
    assert message in str(caught.value)


def test_a_plan_that_is_not_json_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "plan.json"
    path.write_text('{\n  "create": [\n  }\n')
    with pytest.raises(InputError, match=rf"^{path}:3: not JSON"):
        load_plan(path)


# --- the command ----------------------------------------------------------------------------------------


def kafka_line(principal: str, verdict: str, op: str, host: str, topic: str) -> str:
    return (
        f"[2026-11-01 12:00:00,000] INFO Principal = {principal} is {verdict} operation = {op} from host = {host} on "
        f"resource = Topic:LITERAL:{topic} for request = Fetch with resourceRefCount = 1 based on rule DefaultAllow "
        "(kafka.authorizer.logger)"
    )


def test_the_command_writes_the_flips_and_fails_on_a_break(
    spark: SparkSession, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from metadata_logs import write_history

    from ksteward.cli.main import main

    data = tmp_path / "data"
    write_history(data)  # the latest state: alice may READ orders, eve is denied it
    audit = tmp_path / "kafka-authorizer.log"
    audit.write_text(
        "\n".join(
            [
                kafka_line("User:alice", "Allowed", "READ", "10.0.0.1", "orders"),
                kafka_line("User:carol", "Allowed", "READ", "10.0.0.3", "open"),
                kafka_line("User:carol", "Allowed", "READ", "10.0.0.3", "open"),
                kafka_line("User:dave", "Allowed", "WRITE", "10.0.0.4", "open"),
            ]
        )
        + "\n"
    )
    plan = tmp_path / "plan.json"
    grant = {"resource_type": "TOPIC", "resource_name": "open", "principal": "User:billing", "operation": "READ",
             "permission_type": "ALLOW"}  # fmt: skip
    plan.write_text(json.dumps({"create": [grant]}))
    out = tmp_path / "out"
    argv = ["pipeline", "whatif", "--metadata-dir", str(data), "--audit", str(audit), "--plan", str(plan)]
    argv += ["--out", str(out), "--allow-everyone-if-no-acl-found", "true", "--from", "2026-11-01"]
    assert main([*argv, "--fail-on-break"]) == 1
    printed = capsys.readouterr().out
    assert "2 request(s) (3 events) would be denied, 0 (0 events) newly allowed" in printed
    assert "ALLOWED->DENIED  User:carol" in printed
    rows = {(r.principal, r.events, r.rule_after) for r in spark.read.parquet(str(out / "flips")).collect()}
    assert rows == {("User:carol", 2, "no_matching_acl"), ("User:dave", 1, "no_matching_acl")}
    # without allow-everyone nothing breaks; a window that ends before the events sees nothing
    assert main([*argv[:-4], "--fail-on-break"]) == 0
    assert main([*argv, "--to", "2026-11-01T11:00:00Z", "--fail-on-break"]) == 0
