"""``who_can`` answers a resource whose ACLs fit in a local table on the driver (the library authorizer) and
any other in Spark: the two give the same rows, and the command's bounded printing."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyspark.sql import SparkSession

from ksteward.authorizer import AclBinding
from ksteward.pipeline.decide import acl_frame
from ksteward.pipeline.jobs import who_can as job
from ksteward.pipeline.local_frames import local_frame
from ksteward.pipeline.schemas import ACL_SCHEMA, AuthorizerSettings

PRINCIPALS = ("User:alice", "User:bob", "Group:devs", "User:*")
HOSTS = ("*", "10.0.0.1", "10.0.0.2")

acl_strategy = st.builds(
    AclBinding,
    st.just("TOPIC"),
    st.sampled_from(("orders", "ord", "*", "o", "orders-x", "payments")),
    st.sampled_from(("LITERAL", "PREFIXED")),
    st.sampled_from(PRINCIPALS),
    st.sampled_from(HOSTS),
    st.sampled_from(("READ", "ALL", "DESCRIBE", "WRITE", "ALTER")),
    st.sampled_from(("ALLOW", "DENY")),
)


def both_paths(spark: SparkSession, monkeypatch: pytest.MonkeyPatch, acls, s, op):  # type: ignore[no-untyped-def]
    frame = acl_frame(spark, acls.items())
    on_driver = [r.asDict() for r in job.who_can(frame, s, "TOPIC", "orders", op).collect()]
    with monkeypatch.context() as patched:
        patched.setattr(job, "LOCAL_RESOURCE_ACLS", 0)  # no table is local: the Spark plan answers
        in_spark = [r.asDict() for r in job.who_can(frame, s, "TOPIC", "orders", op).collect()]
    return on_driver, in_spark


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    acls=st.lists(acl_strategy, max_size=12, unique=True),
    super_users=st.frozensets(st.sampled_from(PRINCIPALS[:3]), max_size=1),
    everyone=st.booleans(),
    op=st.sampled_from(("READ", "DESCRIBE", "WRITE")),
)
def test_the_driver_and_the_spark_plan_give_the_same_rows(
    spark: SparkSession,
    monkeypatch: pytest.MonkeyPatch,
    acls: list[AclBinding],
    super_users: frozenset[str],
    everyone: bool,
    op: str,
) -> None:
    by_id = {f"acl-{i:02d}": a for i, a in enumerate(acls)}
    on_driver, in_spark = both_paths(spark, monkeypatch, by_id, AuthorizerSettings(super_users, everyone), op)
    assert on_driver == in_spark


def test_rows_the_library_refuses_leave_the_answer_to_spark(spark: SparkSession) -> None:
    """A stored row the library cannot hold (a misspelt operation) is ignored by ``decide``: the driver path
    steps aside rather than guess, and the answer is the Spark plan's."""
    rows = [
        ("a1", "TOPIC", "orders", "LITERAL", "User:alice", "*", "READ", "ALLOW"),
        ("a2", "TOPIC", "orders", "LITERAL", "User:bob", "*", "REDA", "ALLOW"),
        ("a3", "TOPIC", "orders", "LITERAL", "User:carol", "*", "READ", "ALLOW"),
        ("a4", "TOPIC", "orders", "LITERAL", "User:carol", "*", "READ", "ALLOW"),  # a repeated 7-tuple
    ]
    frame = local_frame(spark, rows, ACL_SCHEMA)
    local, is_local = job.matching_acls(frame, job.ResourceType.TOPIC, "orders")
    held = local.collect()
    assert is_local and len(held) == 4
    answer = job.who_can(frame, AuthorizerSettings(), "TOPIC", "orders", "READ").collect()
    assert [(r.principal, r.acl_id, r.allowing_acl_ids) for r in answer] == [
        ("User:alice", "a1", ["a1"]),
        ("User:carol", "a3", ["a3", "a4"]),
    ]


def test_the_command_prints_at_most_show_rows(
    spark: SparkSession, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from metadata_logs import write_history

    from ksteward.cli.main import main

    data = tmp_path / "data"
    write_history(data)
    argv = ["pipeline", "who-can", "--metadata-dir", str(data), "--resource", "TOPIC:orders", "--operation", "WRITE"]
    assert main([*argv, "--at", "5", "--super-users", "User:root", "--show", "1"]) == 0
    printed = capsys.readouterr().out
    assert printed.startswith("2 principal/host pair(s) may WRITE TOPIC:orders")
    assert "User:bob" in printed and "User:root" not in printed
    assert "... 1 more (give --out DIR for all)" in printed
