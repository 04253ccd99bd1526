"""``who_can`` agrees with ``decide`` and the library: every row is granted, and every allowed principal and
host is covered by a row whose narrowing DENYs do not name it."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from chispa import assert_df_equality
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyspark.sql import SparkSession

from ksteward.authorizer import AclBinding
from ksteward.pipeline.decide import acl_frame, reference_authorizer
from ksteward.pipeline.jobs.who_can import who_can
from ksteward.pipeline.local_frames import local_frame
from ksteward.pipeline.schemas import AuthorizerSettings

PRINCIPALS = ("User:alice", "User:bob", "Group:devs")
HOSTS = ("10.0.0.1", "10.0.0.2")


def answer(spark: SparkSession, acls: dict[str, AclBinding], s: AuthorizerSettings, op: str = "READ") -> list:
    return who_can(acl_frame(spark, acls.items()), s, "TOPIC", "orders", op).collect()


def check_agreement(acls: dict[str, AclBinding], s: AuthorizerSettings, rows: list, op: str = "READ") -> None:
    auth = reference_authorizer(acls, s)
    for row in rows:  # every answer is granted, by the rule and ACL decide names
        d = auth.authorize_with_reason(row.principal, row.host, op, "TOPIC", "orders")
        assert d.allowed and (d.rule.value, d.acl_id) == (row.rule, row.acl_id), row
    for principal, host in itertools.product(PRINCIPALS, HOSTS):  # and every allowed pair is covered
        allowed = auth.authorize(principal, host, op, "TOPIC", "orders").name == "ALLOWED"
        covered = any(
            row.principal in (principal, "User:*")
            and row.host in (host, "*")
            and not any(
                acls[d].principal in (principal, "User:*") and acls[d].host in (host, "*")
                for d in row.narrowed_by_acl_ids
            )
            for row in rows
        )
        assert allowed == covered, (principal, host, allowed, rows)


def topic(name: str, principal: str, op: str = "READ", perm: str = "ALLOW", host: str = "*", pattern: str = "LITERAL"):
    return AclBinding("TOPIC", name, pattern, principal, host, op, perm)


def test_acl_rows_allowing_acls_and_narrowing_denies(spark: SparkSession) -> None:
    acls = {
        "lit": topic("orders", "User:alice"),
        "pre": topic("ord", "User:alice", "ALL", pattern="PREFIXED"),
        "any": topic("*", "User:*", host="10.0.0.2"),
        "no-bob": topic("orders", "User:bob", "READ", "DENY", host="10.0.0.2"),
        "other-op": topic("orders", "User:carol", "WRITE"),
        "other-topic": topic("payments", "User:dave"),
    }
    frame = who_can(acl_frame(spark, acls.items()), AuthorizerSettings(), "TOPIC", "orders", "READ")
    rows = frame.collect()
    # Ordered by principal and host ("User:*" sorts before every name).
    assert_df_equality(
        frame.select("principal", "host", "rule", "allowing_acl_ids", "narrowed_by_acl_ids"),
        local_frame(
            spark,
            [("User:*", "10.0.0.2", "acl", ["any"], ["no-bob"]), ("User:alice", "*", "acl", ["lit", "pre"], [])],
            "principal string, host string, rule string, allowing_acl_ids array<string>, "
            "narrowed_by_acl_ids array<string>",
        ),
        ignore_nullable=True,
    )
    check_agreement(acls, AuthorizerSettings(), rows)
    note = next(r.note for r in rows if r.principal == "User:*")
    assert "every principal" in note and "narrowed by DENY no-bob" in note


def test_super_users_and_everyone(spark: SparkSession) -> None:
    s = AuthorizerSettings(frozenset({"User:root"}), allow_everyone_if_no_acl_found=True)
    rows = answer(spark, {"g": AclBinding("GROUP", "orders", "LITERAL", "User:x", "*", "READ", "ALLOW")}, s)
    assert [(r.principal, r.host, r.rule) for r in rows] == [
        ("User:*", "*", "allow_everyone_default"),
        ("User:root", "*", "super_user"),
    ]
    assert "everyone: no ACL matches TOPIC:orders" in rows[0].note
    # one ACL on the topic, for someone else and another operation, closes it to everyone but the super user
    rows = answer(spark, {"w": topic("orders", "User:carol", "WRITE")}, s)
    assert [(r.principal, r.rule) for r in rows] == [("User:root", "super_user")]


def test_observed_principals_are_decided_too(spark: SparkSession) -> None:
    acls = {"any": topic("orders", "User:*"), "no-bob": topic("orders", "User:bob", "ALL", "DENY", host="10.0.0.1")}
    observed = local_frame(spark, [("User:bob", "10.0.0.1"), ("User:bob", "10.0.0.2")], "principal string, host string")
    rows = who_can(acl_frame(spark, acls.items()), AuthorizerSettings(), "TOPIC", "orders", "READ", principals=observed)
    pairs = [(r.principal, r.host) for r in rows.collect()]
    assert pairs == [("User:*", "*"), ("User:bob", "10.0.0.2")]


acl_strategy = st.builds(
    topic,
    st.sampled_from(("orders", "ord", "*", "o", "orders-x")),
    st.sampled_from((*PRINCIPALS, "User:*")),
    st.sampled_from(("READ", "ALL", "DESCRIBE", "WRITE")),
    st.sampled_from(("ALLOW", "DENY")),
    st.sampled_from(("*", *HOSTS)),
    st.sampled_from(("LITERAL", "PREFIXED")),
)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    acls=st.lists(acl_strategy, max_size=10, unique=True),
    super_users=st.frozensets(st.sampled_from(PRINCIPALS), max_size=1),
    everyone=st.booleans(),
    op=st.sampled_from(("READ", "DESCRIBE")),
)
def test_who_can_agrees_with_the_authorizer(
    spark: SparkSession, acls: list[AclBinding], super_users: frozenset[str], everyone: bool, op: str
) -> None:
    by_id = {f"acl-{i}": a for i, a in enumerate(acls)}
    s = AuthorizerSettings(super_users, everyone)
    check_agreement(by_id, s, answer(spark, by_id, s, op), op)


def test_the_command_answers_at_a_point_in_time(
    spark: SparkSession, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from metadata_logs import write_history

    from ksteward.cli.main import main

    data = tmp_path / "data"
    write_history(data)  # offset 3: alice READ orders; 4: bob WRITE orders, removed at 13
    argv = ["pipeline", "who-can", "--metadata-dir", str(data), "--resource", "TOPIC:orders"]
    assert main([*argv, "--operation", "write", "--at", "5", "--super-users", "User:root"]) == 0
    printed = capsys.readouterr().out
    assert printed.startswith("2 principal/host pair(s) may WRITE TOPIC:orders")
    assert "User:bob" in printed and "User:root" in printed
    assert main([*argv, "--operation", "WRITE", "--out", str(tmp_path / "out")]) == 0
    assert capsys.readouterr().out.startswith("0 principal/host pair(s) may WRITE TOPIC:orders")
    assert spark.read.parquet(str(tmp_path / "out" / "who_can")).count() == 0
