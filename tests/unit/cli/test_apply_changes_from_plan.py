"""``cli.apply_steps.changes_from_plan``: a plan (``ksteward.state.model``) as the executor's steps."""

from __future__ import annotations

import pytest

from ksteward.authorizer import AclBinding
from ksteward.cli.admin_common import UsageError
from ksteward.cli.apply_steps import ConfigChange, PartitionIncrease, QuotaChange, TopicCreate, changes_from_plan
from ksteward.state import model as m

ACL = AclBinding("TOPIC", "t", "LITERAL", "User:a", "*", "READ", "ALLOW")
OLD = AclBinding("TOPIC", "t", "LITERAL", "User:b", "*", "READ", "ALLOW")


def test_every_kind_of_change_maps_to_its_step(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PW", "secret")
    plan = m.Plan(
        topics=[m.TopicChange("new", m.Action.CREATE, m.Origin.FILE, partitions_after=3, replication_factor=None,
                              configs_set={"retention.ms": "1"}),
                m.TopicChange("grow", m.Action.UPDATE, m.Origin.DRIFT, partitions_before=1, partitions_after=4,
                              configs_set={"a": "1"}, configs_deleted=("b",)),
                m.TopicChange("same-partitions", m.Action.UPDATE, m.Origin.FILE, partitions_before=2,
                              partitions_after=2, configs_deleted=("c",)),
                m.TopicChange("gone", m.Action.DELETE, m.Origin.FILE)],
        acls=[m.AclChange(ACL, m.Action.CREATE, m.Origin.FILE), m.AclChange(OLD, m.Action.DELETE, m.Origin.DRIFT)],
        quotas=[m.QuotaChange((("user", None),), m.Action.UPDATE, m.Origin.FILE, set={"producer_byte_rate": 1.0}),
                m.QuotaChange((("client-id", "c"),), m.Action.DELETE, m.Origin.FILE, removed=("request_percentage",))],
        scram=[m.ScramChange("u", "SCRAM-SHA-256", m.Action.CREATE, m.Origin.FILE, iterations=8192, password_env="PW"),
               m.ScramChange("u", "SCRAM-SHA-512", m.Action.DELETE, m.Origin.FILE)],
        precondition=m.Precondition(cluster_id="c", metadata_offset=41),
    )  # fmt: skip
    changes = changes_from_plan(plan)
    assert changes.create_topics == (TopicCreate("new", 3, -1, {"retention.ms": "1"}),)
    assert changes.add_partitions == (PartitionIncrease("grow", 4),)
    assert changes.configs == (ConfigChange("topics", "grow", {"a": "1"}, ("b",)),
                               ConfigChange("topics", "same-partitions", {}, ("c",)))  # fmt: skip
    assert changes.delete_topics == ("gone",)
    assert (changes.acls.create, changes.acls.delete, changes.acls.planned_at) == ((ACL,), (OLD,), 41)
    assert changes.quotas == (QuotaChange((("user", ""),), {"producer_byte_rate": 1.0}, ()),
                              QuotaChange((("client-id", "c"),), {}, ("request_percentage",)))  # fmt: skip
    (scram,) = changes.scram
    assert scram.user == "u" and scram.deletes == ("SCRAM-SHA-512",)
    assert [(u.mechanism, u.iterations, u.password) for u in scram.upserts] == [("SCRAM-SHA-256", 8192, "secret")]


def test_no_offset_means_no_precondition() -> None:
    plan = m.Plan(acls=[m.AclChange(ACL, m.Action.CREATE, m.Origin.FILE)])
    assert changes_from_plan(plan).acls.planned_at == -1


def test_a_password_must_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NOPE", raising=False)
    plan = m.Plan(scram=[m.ScramChange("u", "SCRAM-SHA-256", m.Action.CREATE, m.Origin.FILE, password_env="NOPE")])
    with pytest.raises(UsageError, match="environment variable NOPE is not set"):
        changes_from_plan(plan)
    plan = m.Plan(scram=[m.ScramChange("u", "SCRAM-SHA-256", m.Action.CREATE, m.Origin.FILE)])
    with pytest.raises(UsageError, match="names no password_env"):
        changes_from_plan(plan)
