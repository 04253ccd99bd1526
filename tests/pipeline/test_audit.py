"""The audit job on small hand-built frames: hits, last use, unused, shadowed and redundant ACLs, denials,
and the partitioned output layout."""

from __future__ import annotations

import argparse
import itertools
import random
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import pytest
from chispa import assert_df_equality
from pyspark.sql import DataFrame, SparkSession

from ksteward.authorizer import AclBinding, StandardAuthorizer
from ksteward.pipeline.jobs.audit import (
    PARTITIONED_TABLES,
    audit,
    covered_acls,
    report_data,
    write_result,
)
from ksteward.pipeline.local_frames import local_frame
from ksteward.pipeline.report import render_report
from ksteward.pipeline.schemas import ACL_SCHEMA, AUTHZ_EVENT_SCHEMA, AuthorizerSettings

T0 = datetime(2026, 11, 1, 9, 0, tzinfo=UTC)
NO_SETTINGS = AuthorizerSettings()


def at(hours: float) -> datetime:
    return T0 + timedelta(hours=hours)


def local(moment: datetime) -> datetime:
    """``moment`` as PySpark's ``collect`` returns a timestamp: naive, in the process's local time."""
    return moment.astimezone().replace(tzinfo=None)


def acl(
    acl_id: str,
    name: str,
    principal: str = "User:alice",
    operation: str = "READ",
    permission: str = "ALLOW",
    *,
    pattern: str = "LITERAL",
    host: str = "*",
    resource_type: str = "TOPIC",
) -> tuple[str, ...]:
    return (acl_id, resource_type, name, pattern, principal, host, operation, permission)


def event(
    when: datetime,
    principal: str,
    operation: str,
    name: str,
    granted: bool,
    rule: str | None = None,
    acl_id: str | None = None,
    *,
    host: str = "10.0.0.1",
    resource_type: str = "TOPIC",
    line: int = 1,
    forwarded_by: tuple[str, str] | None = None,
) -> tuple[object, ...]:
    source = "ksteward" if acl_id is not None or rule not in (None, "acl") else "kafka_authorizer_log"
    broker_principal, broker_host = forwarded_by or (None, None)
    return (
        when,
        when.astimezone(UTC).date(),
        principal,
        host,
        operation,
        resource_type,
        name,
        granted,
        rule,
        acl_id,
        None,
        None,
        broker_principal,
        broker_host,
        source,
        "audit.log",
        line,
    )


def acls_frame(spark: SparkSession, rows: list[tuple[str, ...]]) -> DataFrame:
    return local_frame(spark, rows, ACL_SCHEMA)


def events_frame(spark: SparkSession, rows: list[tuple[object, ...]]) -> DataFrame:
    return local_frame(spark, rows, AUTHZ_EVENT_SCHEMA)


# --- usage ---------------------------------------------------------------------------------------


def test_hits_last_used_and_unused_from_logged_events(spark: SparkSession) -> None:
    acls = acls_frame(
        spark,
        [
            acl("a-read", "orders"),
            acl("a-write", "orders", "User:bob", "WRITE"),
            acl("a-idle", "payments"),
            acl("a-deny", "orders", "User:mallory", "ALL", "DENY"),
        ],
    )
    events = events_frame(
        spark,
        [
            event(at(-1), "User:alice", "READ", "orders", True, "acl", "a-read"),  # before the window
            event(at(1), "User:alice", "READ", "orders", True, "acl", "a-read"),
            event(at(2), "User:alice", "DESCRIBE", "orders", True, "acl", "a-read"),
            event(at(26), "User:alice", "READ", "orders", True, "acl", "a-read"),  # the next day
            event(at(3), "User:bob", "WRITE", "orders", True, "acl", "a-write"),
            event(at(4), "User:mallory", "READ", "orders", False, "acl", "a-deny"),
            event(at(5), "User:admin", "ALTER", "orders", True, "super_user"),
            event(at(6), "User:carol", "READ", "orders", False, "no_matching_acl"),
            event(at(7), "User:alice", "READ", "gone", True, "acl", "a-deleted"),
            event(at(48), "User:bob", "WRITE", "orders", True, "acl", "a-write"),  # at the end: excluded
        ],
    )
    result = audit(events, acls, NO_SETTINGS, start=T0, end=at(48))
    assert_df_equality(
        result.acl_usage.select("acl_id", "hits", "redecided_hits"),
        local_frame(
            spark,
            [("a-read", 3, 0), ("a-write", 1, 0), ("a-idle", 0, 0), ("a-deny", 1, 0)],
            "acl_id string, hits long, redecided_hits long",
        ),
        ignore_row_order=True,
        ignore_nullable=True,
    )
    usage = {r["acl_id"]: r for r in result.acl_usage.collect()}
    assert usage["a-read"]["last_used"] == local(at(26))
    assert usage["a-read"]["first_used"] == local(at(1))
    assert usage["a-idle"]["last_used"] is None
    unused = result.unused_acls
    expected = acls_frame(spark, [acl("a-idle", "payments")])
    assert_df_equality(unused.drop("safe_to_delete", "why"), expected, ignore_nullable=True)
    assert [(r["safe_to_delete"], r["why"]) for r in unused.collect()] == [(True, "no hit in the window")]

    assert_df_equality(
        result.acl_hits_daily.select("event_date", "acl_id", "hits", "in_state"),
        local_frame(
            spark,
            [
                (date(2026, 11, 1), "a-read", 2, True),
                (date(2026, 11, 2), "a-read", 1, True),
                (date(2026, 11, 1), "a-write", 1, True),
                (date(2026, 11, 1), "a-deny", 1, True),
                (date(2026, 11, 1), "a-deleted", 1, False),
            ],
            "event_date date, acl_id string, hits long, in_state boolean",
        ),
        ignore_row_order=True,
        ignore_nullable=True,
    )
    totals = result.totals.first()
    assert totals is not None
    assert (totals["events"], totals["granted"], totals["denied"]) == (8, 6, 2)
    assert (totals["logged"], totals["redecided"], totals["unattributed"]) == (8, 0, 0)
    assert (totals["acls"], totals["acls_used"], totals["acls_unused"]) == (4, 3, 1)
    assert totals["hits_on_acls_not_in_state"] == 1
    result.unpersist()


def _library(acls: list[tuple[str, ...]], settings: AuthorizerSettings) -> StandardAuthorizer:
    auth = StandardAuthorizer(settings)
    auth.load_snapshot({row[0]: AclBinding(*row[1:]) for row in acls})
    return auth


def test_events_without_a_rule_are_credited_to_the_acl_the_library_names(spark: SparkSession) -> None:
    rows = [
        acl("p-ord", "ord", pattern="PREFIXED"),
        acl("l-orders", "orders"),  # both apply to alice READ orders: the library names one of them
        acl("w-all", "*", "User:*", "DESCRIBE"),
        acl("d-eve", "orders", "User:eve", "READ", "DENY"),
        acl("l-idle", "idle"),
    ]
    settings = AuthorizerSettings(super_users=frozenset({"User:admin"}))
    library = _library(rows, settings)
    requests = [
        ("User:alice", "READ", "orders", True),
        ("User:alice", "READ", "ordinals", True),
        ("User:bob", "DESCRIBE", "anything", True),
        ("User:eve", "READ", "orders", False),
        ("User:admin", "DELETE", "orders", True),
        ("User:carol", "READ", "orders", False),
    ]
    events = []
    for i, (principal, op, name, granted) in enumerate(requests):
        events += [event(at(i + k / 10), principal, op, name, granted, line=10 * i + k) for k in range(i + 1)]
    events.append(event(at(9), "User:carol", "READ", "orders", True, line=999))  # logged granted: unattributed
    # Kafka's MatchingAcl lines say "acl" without an id: re-decided too, and unattributed if the rule differs.
    events.append(event(at(9), "User:alice", "READ", "orders", True, "acl", line=1000))
    events.append(event(at(9), "User:bob", "READ", "orders", False, "acl", line=1001))
    result = audit(events_frame(spark, events), acls_frame(spark, rows), settings, start=None, end=None)

    expected: dict[str, int] = {}
    for i, (principal, op, name, _) in enumerate(requests):
        decision = library.authorize_with_reason(principal, "10.0.0.1", op, "TOPIC", name)
        if decision.acl_id is not None:
            expected[str(decision.acl_id)] = expected.get(str(decision.acl_id), 0) + i + 1 + (i == 0)
    usage = {r["acl_id"]: (r["hits"], r["redecided_hits"]) for r in result.acl_usage.collect() if r["hits"]}
    assert usage == {acl_id: (n, n) for acl_id, n in expected.items()}
    assert "l-idle" not in usage
    access = {(r["principal"], r["granted"]): (r["attribution"], r["rule"]) for r in result.access.collect()}
    assert access[("User:carol", True)] == ("unattributed", None)
    assert access[("User:carol", False)] == ("redecided", "no_matching_acl")
    assert access[("User:bob", False)] == ("unattributed", "acl")  # no ACL denies bob: no_matching_acl, not "acl"
    totals = result.totals.first()
    assert totals is not None
    assert (totals["events"], totals["redecided"], totals["unattributed"]) == (24, 22, 2)
    assert totals["window_start"] == local(at(0))
    result.unpersist()


# --- coverage ------------------------------------------------------------------------------------

# (case, covered ACL, covering ACL, expected kind or None). Each case has its own names and principal, so
# cases do not cover one another; the LITERAL "*" cases each have their own principal.
CASES = [
    ("prefixed-covers-literal", acl("", "c1.orders"), acl("", "c1.ord", pattern="PREFIXED"), "redundant"),
    ("prefix-equal-name", acl("", "c2.ord"), acl("", "c2.ord", pattern="PREFIXED"), "redundant"),
    ("prefixed-covers-prefixed", acl("", "c3.orders", pattern="PREFIXED"), acl("", "c3.o", pattern="PREFIXED"),
     "redundant"),
    ("literal-not-cover-prefixed", acl("", "c4.orders", pattern="PREFIXED"), acl("", "c4.orders"), None),
    ("longer-prefix-not-cover", acl("", "c5.ord"), acl("", "c5.orders", pattern="PREFIXED"), None),
    ("user-star-covers", acl("", "c6.t", "User:bob"), acl("", "c6.t", "User:*"), "redundant"),
    ("user-star-covers-group", acl("", "c7.t", "Group:devs"), acl("", "c7.t", "User:*"), "redundant"),
    ("group-star-not-wildcard", acl("", "c8.t", "Group:devs"), acl("", "c8.t", "Group:*"), None),
    ("host-star-covers", acl("", "c9.t", host="10.0.0.1"), acl("", "c9.t"), "redundant"),
    ("host-not-cover-star", acl("", "c10.t"), acl("", "c10.t", host="10.0.0.1"), None),
    ("all-covers-write", acl("", "c11.t", operation="WRITE"), acl("", "c11.t", operation="ALL"), "redundant"),
    ("read-covers-describe", acl("", "c12.t", operation="DESCRIBE"), acl("", "c12.t", operation="READ"),
     "redundant"),
    ("alter-configs-covers-describe-configs", acl("", "c13.t", operation="DESCRIBE_CONFIGS"),
     acl("", "c13.t", operation="ALTER_CONFIGS"), "redundant"),
    ("write-not-cover-read", acl("", "c14.t"), acl("", "c14.t", operation="WRITE"), None),
    ("describe-not-cover-read", acl("", "c15.t"), acl("", "c15.t", operation="DESCRIBE"), None),
    ("other-type-not-cover", acl("", "c16.t"), acl("", "c16.t", resource_type="GROUP"), None),
    ("wildcard-covers-literal", acl("", "c17.t", "User:c17"), acl("", "*", "User:c17"), "redundant"),
    ("wildcard-covers-prefixed", acl("", "c18.t", "User:c18", pattern="PREFIXED"), acl("", "*", "User:c18"),
     "redundant"),
    ("prefixed-star-not-cover-wildcard", acl("", "*", "User:c19", "DESCRIBE"),
     acl("", "*", "User:c19", "DESCRIBE", "DENY", pattern="PREFIXED"), None),
    ("deny-all-shadows", acl("", "c20.t"), acl("", "c20.t", operation="ALL", permission="DENY"), "shadowed"),
    ("deny-read-not-shadow-read", acl("", "c21.t"), acl("", "c21.t", permission="DENY"), None),
    ("deny-describe-shadows-describe", acl("", "c22.t", operation="DESCRIBE"),
     acl("", "c22.t", operation="DESCRIBE", permission="DENY"), "shadowed"),
    ("prefixed-deny-shadows", acl("", "c23.orders", operation="CREATE"),
     acl("", "c23.", "User:*", "CREATE", "DENY", pattern="PREFIXED"), "shadowed"),
    ("deny-narrower-host-not-shadow", acl("", "c24.t", operation="CREATE"),
     acl("", "c24.t", operation="CREATE", permission="DENY", host="10.0.0.9"), None),
    ("no-colon-never-covers", acl("", "c25.t", "User:x"), acl("", "c25.t", "x"), None),
    ("deny-not-redundant-target", acl("", "c26.t", permission="DENY"), acl("", "c26.t", operation="ALL"), None),
]  # fmt: skip
#: Cases whose covered ACL covers the other one the other way round.
REVERSE = {"literal-not-cover-prefixed", "host-not-cover-star", "describe-not-cover-read"}


def test_covered_acls_cases(spark: SparkSession) -> None:
    rows = []
    for case, covered, covering, _ in CASES:
        rows.append((f"{case}/covered", *covered[1:]))
        rows.append((f"{case}/covering", *covering[1:]))
    found = {
        (r["acl_id"], r["kind"], r["covering_acl_id"], r["covering_count"])
        for r in covered_acls(acls_frame(spark, rows)).collect()
    }
    expected = {(f"{case}/covered", kind, f"{case}/covering", 1) for case, _, _, kind in CASES if kind}
    expected |= {(f"{case}/covering", "redundant", f"{case}/covered", 1) for case in REVERSE}
    assert found == expected


def test_covered_rows_name_the_covering_acl(spark: SparkSession) -> None:
    rows = [
        acl("narrow", "orders", "User:bob", host="10.0.0.1", operation="DESCRIBE"),
        acl("broad", "ord", "User:*", "READ", pattern="PREFIXED"),
        acl("broadest", "*", "User:*", "ALL"),
    ]
    found = {(r["acl_id"], r["kind"]): r for r in covered_acls(acls_frame(spark, rows)).collect()}
    assert set(found) == {("narrow", "redundant"), ("broad", "redundant")}
    narrow = found[("narrow", "redundant")]
    assert narrow["covering_count"] == 2
    assert (narrow["covering_acl_id"], narrow["covering_resource_name"], narrow["covering_pattern_type"]) == (
        "broad",
        "ord",
        "PREFIXED",
    )
    assert (narrow["covering_principal"], narrow["covering_operation"], narrow["covering_permission_type"]) == (
        "User:*",
        "READ",
        "ALLOW",
    )


NAMES = ("o", "or", "orders", "ordx", "*", "p")
PRINCIPALS = ("User:a", "User:b", "Group:a", "User:*")
HOSTS = ("*", "h1", "h2")
OPS = ("ALL", "READ", "WRITE", "DESCRIBE", "ALTER", "ALTER_CONFIGS", "DESCRIBE_CONFIGS", "CREATE")


def _covers(x: tuple[str, ...], y: tuple[str, ...]) -> str | None:
    """Brute-force reference of the module doc's definition: the kind if ACL ``x`` covers ALLOW ``y``."""
    from ksteward.pipeline.jobs.audit import operation_cover_rows

    _, xt, xn, xp, xpr, xh, xo, xperm = x
    _, yt, yn, yp, ypr, yh, yo, yperm = y
    if yperm != "ALLOW" or xt != yt or ":" not in xpr or ":" not in ypr:
        return None
    wildcard = xp == "LITERAL" and xn == "*"
    same_literal = xp == yp == "LITERAL" and xn == yn
    prefix = xp == "PREFIXED" and not (yp == "LITERAL" and yn == "*") and yn.startswith(xn)
    if not (wildcard or same_literal or prefix):
        return None
    if xpr not in (ypr, "User:*") or xh not in (yh, "*"):
        return None
    kinds = {k for k, op, perm, cover_op in operation_cover_rows() if (op, perm, cover_op) == (yo, xperm, xo)}
    return kinds.pop() if kinds else None


def test_covered_acls_match_brute_force_and_change_no_decision(spark: SparkSession) -> None:
    rng = random.Random(7)
    seen: set[tuple[str, ...]] = set()
    rows: list[tuple[str, ...]] = []
    while len(rows) < 70:
        fields = (
            rng.choice(("TOPIC", "GROUP")),
            rng.choice(NAMES),
            rng.choice(("LITERAL", "PREFIXED")),
            rng.choice(PRINCIPALS),
            rng.choice(HOSTS),
            rng.choice(OPS),
            rng.choices(("ALLOW", "DENY"), (4, 1))[0],
        )
        if fields not in seen:
            seen.add(fields)
            rows.append((f"id{len(rows):02d}", *fields))
    found = {(r["acl_id"], r["kind"]): r["covering_count"] for r in covered_acls(acls_frame(spark, rows)).collect()}
    expected: dict[tuple[str, str], int] = {}
    for x, y in itertools.permutations(rows, 2):
        kind = _covers(x, y)
        if kind:
            expected[(y[0], kind)] = expected.get((y[0], kind), 0) + 1
    assert found == expected
    assert any(k == "shadowed" for _, k in found) and any(k == "redundant" for _, k in found)

    # Soundness against the library: without a shadowed or redundant ACL, every decision stays the same.
    full = _library(rows, NO_SETTINGS)
    grid = list(itertools.product(("User:a", "User:b", "Group:a"), ("h1", "h2"), OPS[1:], ("TOPIC", "GROUP"), NAMES))
    before = [full.authorize(*request) for request in grid]
    for acl_id, _ in found:
        without = _library([r for r in rows if r[0] != acl_id], NO_SETTINGS)
        assert [without.authorize(*request) for request in grid] == before, acl_id


# --- denials and outputs -------------------------------------------------------------------------


def _denials_events() -> list[tuple[object, ...]]:
    rows = []
    for i in range(5):
        rows.append(event(at(i * 0.25), "User:eve", "READ", "secrets", False, "no_matching_acl", line=i))
    rows.append(event(at(1), "User:eve", "READ", "secrets", False, "no_matching_acl", host="10.0.0.2", line=9))
    rows.append(event(at(25), "User:eve", "WRITE", "secrets", False, "acl", "d1", line=10))
    rows += [event(at(2), "User:<script>", "READ", "orders", False, "acl", "d2", line=20 + i) for i in range(2)]
    rows.append(event(at(3), "User:alice", "READ", "orders", True, "acl", "a1", line=30))
    return rows


def test_denials_grouping_top_principals_and_hours(spark: SparkSession) -> None:
    acls = acls_frame(spark, [acl("a1", "orders"), acl("d1", "secrets", "User:eve", "WRITE", "DENY")])
    result = audit(events_frame(spark, _denials_events()), acls, NO_SETTINGS, start=None, end=None, top_n=5)
    denials = {
        (r["event_date"], r["principal"], r["resource_name"], r["operation"]): (
            r["denials"],
            r["hosts"],
            r["rules"],
            r["deny_acl_ids"],
        )
        for r in result.denials.collect()
    }
    assert denials == {
        (date(2026, 11, 1), "User:eve", "secrets", "READ"): (6, 2, ["no_matching_acl"], []),
        (date(2026, 11, 2), "User:eve", "secrets", "WRITE"): (1, 1, ["acl"], ["d1"]),
        (date(2026, 11, 1), "User:<script>", "orders", "READ"): (2, 1, ["acl"], ["d2"]),
    }
    top = [(r["rank"], r["principal"], r["denials"], r["resources"], r["operations"]) for r in
           result.top_denied_principals.orderBy("rank").collect()]  # fmt: skip
    assert top == [(1, "User:eve", 7, 1, ["READ", "WRITE"]), (2, "User:<script>", 2, 1, ["READ"])]
    hours = {r["hour"]: r["denials"] for r in result.denials_by_hour.collect()}
    assert hours == {local(at(h)): n for h, n in ((0, 4), (1, 2), (2, 2), (25, 1))}
    result.unpersist()


def test_outputs_are_partitioned_by_event_date_and_report_renders(spark: SparkSession, tmp_path: Path) -> None:
    acls = acls_frame(spark, [acl("a1", "orders"), acl("a2", "ord", pattern="PREFIXED"), acl("idle", "x")])
    result = audit(events_frame(spark, _denials_events()), acls, NO_SETTINGS, start=T0, end=at(48))
    paths = write_result(spark, result, tmp_path)
    assert set(paths) == set(result._fields)
    for table in PARTITIONED_TABLES:
        dirs = sorted(p.name for p in paths[table].iterdir() if p.is_dir())
        assert dirs == ["event_date=2026-11-01", "event_date=2026-11-02"][: len(dirs)] and dirs, table
        assert all(len(list((paths[table] / d).glob("*.parquet"))) == 1 for d in dirs), table
    denials = spark.read.parquet(str(paths["denials"]))
    assert denials.count() == 3 and "event_date" in denials.columns
    for table in set(result._fields) - set(PARTITIONED_TABLES):
        assert not [p for p in paths[table].iterdir() if p.is_dir()], table
        assert len(list(paths[table].glob("*.parquet"))) == 1, table
    assert sorted(r["acl_id"] for r in spark.read.parquet(str(paths["unused_acls"])).collect()) == ["a2", "idle"]
    covered = spark.read.parquet(str(paths["shadowed_acls"])).collect()
    assert [(r["acl_id"], r["covering_acl_id"]) for r in covered] == [("a1", "a2")]

    data = report_data(result)
    assert data.totals["denied"] == 9 and data.totals["window_start"] == T0
    assert data.top_denied[0] == ("User:eve", 7)
    page = render_report(data)
    assert "User:&lt;script&gt;" in page and "<script" not in page
    result.unpersist()


def test_csv_outputs_join_arrays_with_semicolons(spark: SparkSession, tmp_path: Path) -> None:
    acls = acls_frame(spark, [acl("a1", "orders"), acl("d1", "secrets", "User:eve", "WRITE", "DENY")])
    result = audit(events_frame(spark, _denials_events()), acls, NO_SETTINGS, start=T0, end=at(48))
    paths = write_result(spark, result, tmp_path, "csv")
    top = spark.read.option("header", True).csv(str(paths["top_denied_principals"]))
    ranked = [(r["rank"], r["principal"], r["operations"]) for r in top.orderBy("rank").collect()]
    assert ranked == [("1", "User:eve", "READ;WRITE"), ("2", "User:<script>", "READ")]
    denials = spark.read.option("header", True).csv(str(paths["denials"]))
    eve = denials.where("principal = 'User:eve'").collect()
    assert {(r["operation"], r["rules"], r["deny_acl_ids"] or "") for r in eve} == {
        ("READ", "no_matching_acl", ""),  # an empty array is an empty cell
        ("WRITE", "acl", "d1"),
    }
    result.unpersist()


def kafka_line(when: str, principal: str, verdict: str, operation: str, host: str, rule: str) -> str:
    return (
        f"[{when},000] INFO Principal = {principal} is {verdict} operation = {operation} from host = {host} on "
        f"resource = Topic:LITERAL:orders for request = Fetch with resourceRefCount = 1 based on rule {rule} "
        "(kafka.authorizer.logger)\n"
    )


KAFKA_LOG = (
    kafka_line("2026-11-01 09:00:00", "User:alice", "Allowed", "READ", "10.0.0.1", "MatchingAcl(acl=x)")
    + kafka_line("2026-11-01 10:00:00", "User:eve", "Denied", "READ", "10.0.0.2", "MatchingAcl(acl=y)")
    + kafka_line("2026-11-02 11:00:00", "User:<script>x</script>", "Denied", "WRITE", "10.0.0.3", "DefaultDeny")
    + "this is not an audit line\n"
)


def test_run_reads_logs_writes_tables_rejects_and_report(
    spark: SparkSession, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from metadata_logs import ACL_DENY, ACL_READ, write_history

    from ksteward.authorizer import acl_id_text
    from ksteward.pipeline.jobs.audit import add_arguments, run

    write_history(tmp_path / "meta")
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "kafka-authorizer.log").write_text(KAFKA_LOG)
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    out = tmp_path / "out"
    args = parser.parse_args(
        ["--metadata-dir", str(tmp_path / "meta"), "--audit", str(tmp_path / "logs"), "--out", str(out),
         "--from", "2026-11-01", "--to", "2026-11-03T00:00:00Z"]
    )  # fmt: skip
    assert run(spark, args) == 0
    printed = capsys.readouterr().out
    assert "events 3: granted 1, denied 2" in printed and "bad input lines set aside: 1" in printed
    usage = {r["acl_id"]: r["hits"] for r in spark.read.parquet(str(out / "acl_usage")).collect()}
    assert usage == {acl_id_text(ACL_READ): 1, acl_id_text(ACL_DENY): 1}
    assert sorted(p.name for p in (out / "denials").iterdir() if p.is_dir()) == [
        "event_date=2026-11-01",
        "event_date=2026-11-02",
    ]
    assert spark.read.parquet(str(out / "rejects")).count() == 1
    page = (out / "report.html").read_text()
    assert "User:&lt;script&gt;x&lt;/script&gt;" in page and "<script" not in page
