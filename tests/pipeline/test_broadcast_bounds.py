"""The broadcasts of ``decide`` and the audit are bounded (``decide.BROADCAST_ACLS``,
``audit.BROADCAST_DECISIONS``): above a bound the joins are planned without a broadcast hint, with the same
answers."""

from __future__ import annotations

import pytest
from pyspark.sql import DataFrame, SparkSession
from test_audit import acl, acls_frame, at, event, events_frame

from ksteward.pipeline import decide as decide_module
from ksteward.pipeline.jobs import audit as audit_module
from ksteward.pipeline.schemas import REQUEST_COLUMNS, AuthorizerSettings

ACLS = [
    acl("p-ord", "ord", pattern="PREFIXED"),
    acl("l-orders", "orders"),
    acl("w-all", "*", "User:*", "DESCRIBE"),
    acl("d-eve", "orders", "User:eve", "READ", "DENY"),
    acl("l-idle", "idle"),
    acl("r-idle", "idle", operation="ALL"),  # makes l-idle redundant
]
REQUESTS = [
    ("User:alice", "READ", "orders", True),
    ("User:alice", "READ", "ordinals", True),
    ("User:bob", "DESCRIBE", "anything", True),
    ("User:eve", "READ", "orders", False),
    ("User:carol", "READ", "orders", False),
]


def _events(spark: SparkSession) -> DataFrame:
    rows = [event(at(i), p, op, name, granted, line=i) for i, (p, op, name, granted) in enumerate(REQUESTS)]
    return events_frame(spark, rows)


def _hinted(frame: DataFrame) -> bool:
    return "strategy=broadcast" in frame._jdf.queryExecution().optimizedPlan().toString()


def _unbounded(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every bound at 0: nothing is small enough to broadcast."""
    monkeypatch.setattr(decide_module, "BROADCAST_ACLS", 0)
    monkeypatch.setattr(audit_module, "BROADCAST_ACLS", 0)
    monkeypatch.setattr(audit_module, "BROADCAST_DECISIONS", 0)


def test_decide_broadcasts_acls_only_under_the_bound(spark: SparkSession, monkeypatch: pytest.MonkeyPatch) -> None:
    acls, events = acls_frame(spark, ACLS), _events(spark)
    small = decide_module.decide_distinct(events, acls, AuthorizerSettings())
    assert _hinted(small)
    expected = sorted(small.collect())
    _unbounded(monkeypatch)
    large = decide_module.decide_distinct(events, acls, AuthorizerSettings())
    assert not _hinted(large)
    assert sorted(large.collect()) == expected
    # decide() joins the decisions back without a hint unless asked
    assert not _hinted(decide_module.decide(events, acls, AuthorizerSettings()))
    assert _hinted(decide_module.decide(events, acls, AuthorizerSettings(), broadcast_decisions=True))


def test_the_audit_gives_the_same_tables_above_its_bounds(spark: SparkSession, monkeypatch: pytest.MonkeyPatch) -> None:
    acls, events = acls_frame(spark, ACLS), _events(spark)

    def tables() -> tuple[list, ...]:
        result = audit_module.audit(events, acls, AuthorizerSettings(), start=None, end=None)
        try:
            access = sorted(result.access.select(*REQUEST_COLUMNS, "rule", "acl_id", "attribution").collect())
            usage = sorted(result.acl_usage.select("acl_id", "hits").collect())
            covered = sorted(result.shadowed_acls.select("acl_id", "kind", "covering_acl_id").collect())
            return access, usage, covered
        finally:
            result.unpersist()

    expected = tables()
    assert ("l-idle", "redundant", "r-idle") in [tuple(r) for r in expected[2]]
    _unbounded(monkeypatch)
    assert not _hinted(audit_module.covered_acls(acls))
    assert tables() == expected
