"""``ksteward apply`` carrying out a plan on a real node (SASL, StandardAuthorizer), checked with real clients:
every kind of step in the safe order, the precondition (a stale plan changes nothing at all), the safe order
forced, a refused plan, a missing SCRAM password, and no confirmation without a terminal.

The plans here are built by hand (``ksteward.state.model.Plan``) and handed to ``cli.apply.apply`` in this
process, so that each test names exactly what the executor must do."""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from clients import Auth, confluent_admin
from harness import KstewardServer

from ksteward.authorizer import AclBinding
from ksteward.cli.admin_client import AdminClient
from ksteward.cli.admin_common import run_command
from ksteward.cli.apply import apply
from ksteward.cli.main import build_parser
from ksteward.state.model import (
    AclChange,
    Action,
    Origin,
    Plan,
    Precondition,
    QuotaChange,
    ScramChange,
    TopicChange,
)

ADMIN = Auth("PLAIN", "admin", "admin-secret")
JAAS = 'org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret";'
EVERYTHING = {"resource_type_filter": 1, "resource_name_filter": None, "pattern_type_filter": 1,
              "principal_filter": None, "host_filter": None, "operation": 1, "permission_type": 1}  # fmt: skip
OLD = AclBinding("TOPIC", "orders", "LITERAL", "User:app", "*", "READ", "ALLOW")
NEW = AclBinding("TOPIC", "orders", "PREFIXED", "User:app", "*", "READ", "ALLOW")


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KstewardServer]:
    server = KstewardServer(tmp_path_factory.mktemp("apply"), "sasl", name="apply")
    try:
        yield server.start()
    finally:
        server.kill()


@pytest.fixture
def properties(tmp_path: Path) -> Path:
    path = tmp_path / "admin.properties"
    path.write_text(f"security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\nsasl.jaas.config={JAAS}\n")
    return path


def args(node: KstewardServer, properties: Path, *extra: str) -> argparse.Namespace:
    return build_parser().parse_args(["apply", "state.yaml", "--bootstrap-server", node.bootstrap,
                                      "--command-config", str(properties), *extra])  # fmt: skip


def run(node: KstewardServer, properties: Path, plan: Plan, *extra: str) -> int:
    chosen = (lambda _a, _c: plan, lambda _p: "(the plan)")
    return run_command("apply", lambda: apply(args(node, properties, *extra), planner=chosen))


def live_acls(node: KstewardServer) -> tuple[set[AclBinding], int]:
    with AdminClient(node.bootstrap, sasl_plain=("admin", "admin-secret")) as client:
        listed, offset = client.describe_acls_at(EVERYTHING)
    return {AclBinding(*a) for a in listed}, offset


def acl_plan(offset: int, *, topic: str | None = None) -> Plan:
    plan = Plan(acls=[AclChange(NEW, Action.CREATE, Origin.FILE), AclChange(OLD, Action.DELETE, Origin.FILE)],
                precondition=Precondition(metadata_offset=offset))  # fmt: skip
    if topic:
        plan.topics.append(TopicChange(topic, Action.CREATE, Origin.FILE, partitions_after=2, replication_factor=1))
    return plan


def reset_acls(node: KstewardServer, *acls: AclBinding) -> None:
    with AdminClient(node.bootstrap, sasl_plain=("admin", "admin-secret")) as client:
        listed, _ = client.describe_acls_at(EVERYTHING)
        client.replace_acls(acls, [AclBinding(*a) for a in listed])


def topics(node: KstewardServer) -> set[str]:
    return set(confluent_admin(node.bootstrap, ADMIN).list_topics(timeout=10).topics)


def test_every_kind_of_step(
    node: KstewardServer, properties: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    from confluent_kafka.admin import ConfigResource, NewTopic

    admin = confluent_admin(node.bootstrap, ADMIN)
    for future in admin.create_topics([NewTopic("grow", 1, 1), NewTopic("gone", 1, 1)]).values():
        future.result(timeout=30)
    reset_acls(node, OLD)
    _, offset = live_acls(node)
    monkeypatch.setenv("SVC_PASSWORD", "svc-secret")
    plan = acl_plan(offset, topic="payments")
    plan.topics[0] = TopicChange("payments", Action.CREATE, Origin.FILE, partitions_after=2, replication_factor=1,
                                 configs_set={"retention.ms": "3600000"})  # fmt: skip
    plan.topics += [TopicChange("grow", Action.UPDATE, Origin.FILE, partitions_before=1, partitions_after=3,
                                configs_set={"cleanup.policy": "compact"}),
                    TopicChange("gone", Action.DELETE, Origin.FILE)]  # fmt: skip
    plan.quotas.append(QuotaChange((("user", "svc"),), Action.CREATE, Origin.FILE, set={"producer_byte_rate": 1024.0}))
    plan.scram.append(ScramChange("svc", "SCRAM-SHA-256", Action.CREATE, Origin.FILE, iterations=8192,
                                  password_env="SVC_PASSWORD"))  # fmt: skip
    assert run(node, properties, plan, "--auto-approve", "--output", "json") == 0
    out = json.loads(capsys.readouterr().out)
    assert out["acls"]["mode"] == "atomic" and (out["acls"]["created"], out["acls"]["deleted"]) == (1, 1)
    steps = out["steps"]
    order = [next(i for i, s in enumerate(steps) if s.startswith(p)) for p in
             ("topic payments: created", "topic grow: now 3", "configs of topics grow", "quota user=svc",
              "SCRAM user svc", "ACLs:", "topic gone: deleted")]  # fmt: skip
    assert order == sorted(order), steps
    assert live_acls(node)[0] == {NEW}
    listed = admin.list_topics(timeout=10).topics
    assert "gone" not in listed and len(listed["grow"].partitions) == 3 and len(listed["payments"].partitions) == 2
    resource = ConfigResource(ConfigResource.Type.TOPIC, "payments")
    assert admin.describe_configs([resource])[resource].result(timeout=30)["retention.ms"].value == "3600000"
    scram = admin.describe_user_scram_credentials(["svc"])["svc"].result(timeout=30)
    assert [int(c.iterations) for c in scram.scram_credential_infos] == [8192]


def test_a_stale_plan_changes_nothing_at_all(node: KstewardServer, properties: Path, capsys: Any) -> None:
    reset_acls(node, OLD)
    _, offset = live_acls(node)
    reset_acls(node, OLD, AclBinding("GROUP", "g", "LITERAL", "User:other", "*", "READ", "ALLOW"))  # out of band
    before = live_acls(node)[0]
    assert run(node, properties, acl_plan(offset, topic="never"), "--auto-approve") == 1
    assert "the ACLs changed since the plan" in capsys.readouterr().err
    assert live_acls(node)[0] == before
    assert "never" not in topics(node)  # checked before the first step: not even the topic was created


def test_the_safe_order_when_asked(node: KstewardServer, properties: Path, capsys: Any) -> None:
    reset_acls(node, OLD)
    _, offset = live_acls(node)
    assert run(node, properties, acl_plan(offset), "--auto-approve", "--safe-order", "--output", "json") == 0
    out = json.loads(capsys.readouterr().out)
    assert out["acls"]["mode"] == "safe-order"
    assert [s.split(" (")[0] for s in out["steps"]] == ["ACLs: created 1", "ACLs: deleted 1"]
    assert live_acls(node)[0] == {NEW}


def test_nothing_to_do_says_so(node: KstewardServer, properties: Path, capsys: Any) -> None:
    assert run(node, properties, Plan(), "--auto-approve") == 0
    assert "No changes" in capsys.readouterr().out


def test_a_refused_plan_applies_nothing(node: KstewardServer, properties: Path, capsys: Any) -> None:
    reset_acls(node, OLD)
    plan = acl_plan(-1)
    plan.lockouts.append({"principal": "User:admin", "hosts": ["*"], "allowed_by": []})
    assert run(node, properties, plan, "--auto-approve") == 1
    assert "lockout: User:admin would lose the right to alter ACLs" in capsys.readouterr().err
    assert live_acls(node)[0] == {OLD}


def test_a_missing_password_stops_before_anything(node: KstewardServer, properties: Path, capsys: Any) -> None:
    reset_acls(node, OLD)
    plan = acl_plan(-1)
    plan.scram.append(ScramChange("x", "SCRAM-SHA-512", Action.CREATE, Origin.FILE, password_env="NOT_SET_ANYWHERE"))
    assert run(node, properties, plan, "--auto-approve") == 2
    assert "NOT_SET_ANYWHERE is not set" in capsys.readouterr().err
    assert live_acls(node)[0] == {OLD}


def test_without_a_terminal_it_needs_auto_approve(node: KstewardServer, properties: Path, capsys: Any) -> None:
    reset_acls(node, OLD)
    assert run(node, properties, acl_plan(-1)) == 2
    assert "--auto-approve" in capsys.readouterr().err
    assert live_acls(node)[0] == {OLD}


def test_a_change_between_a_real_plan_and_its_apply_is_refused(
    node: KstewardServer, properties: Path, tmp_path: Path, capsys: Any
) -> None:
    """The plan made by ``ksteward plan``'s own code (read_live: DescribeAcls v4 and its offset), an ACL changed
    by a real client after it, then the apply of that plan: refused, and nothing of it applied."""
    from confluent_kafka.admin import AclBinding as CAcl
    from confluent_kafka.admin import AclOperation, AclPermissionType, ResourcePatternType, ResourceType

    from ksteward.cli.admin_common import connection
    from ksteward.cli.apply import plan_as_ksteward_plan_does

    reset_acls(node, OLD)
    state = tmp_path / "state.yaml"
    assert run_command("export", lambda: _export(node, properties, state)) == 0
    state.write_text(state.read_text().replace("acls: false", "acls: true", 1).replace("LITERAL", "PREFIXED", 1))
    planned_args = build_parser().parse_args(["apply", str(state), "--bootstrap-server", node.bootstrap,
                                              "--command-config", str(properties), "--auto-approve"])  # fmt: skip
    plan = plan_as_ksteward_plan_does(planned_args, connection(planned_args))
    assert plan.precondition.metadata_offset is not None and len(plan.acls) == 2, plan.acls
    out_of_band = CAcl(ResourceType.TOPIC, "elsewhere", ResourcePatternType.LITERAL, "User:x", "*", AclOperation.READ,
                       AclPermissionType.ALLOW)  # fmt: skip
    admin = confluent_admin(node.bootstrap, ADMIN)  # kept: a dropped client cancels its requests
    for future in admin.create_acls([out_of_band]).values():
        future.result(timeout=30)
    before = live_acls(node)
    chosen = (lambda _a, _c: plan, lambda _p: "(the plan)")
    assert run_command("apply", lambda: apply(planned_args, planner=chosen)) == 1
    assert "the ACLs changed since the plan" in capsys.readouterr().err
    assert live_acls(node)[0] == before[0]


def _export(node: KstewardServer, properties: Path, target: Path) -> int:
    from ksteward.cli.main import main

    return main(["state", "export", "--bootstrap-server", node.bootstrap, "--command-config", str(properties),
                 "-o", str(target)])  # fmt: skip
