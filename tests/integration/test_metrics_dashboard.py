"""Every series that deploy/grafana/ksteward.json queries is served by a live cluster (docs/metrics.md):
the dashboard reads only what the endpoint really has."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from acl_clients import acl_client
from clients import Auth, confluent_admin
from harness import Cluster, free_port
from test_metrics import scrape

DASHBOARD = Path(__file__).resolve().parents[2] / "deploy" / "grafana" / "ksteward.json"
SERIES = re.compile(r"\b(?:kafka|ksteward)_[a-z0-9_]+")


def dashboard_series() -> set[str]:
    dashboard = json.loads(DASHBOARD.read_text())
    return {
        name for panel in dashboard["panels"] for target in panel["targets"] for name in SERIES.findall(target["expr"])
    }


def test_the_dashboard_has_a_query_in_every_panel() -> None:
    assert len(dashboard_series()) >= 15
    dashboard = json.loads(DASHBOARD.read_text())
    assert all(target["expr"].strip() for panel in dashboard["panels"] for target in panel["targets"])


def test_every_series_the_dashboard_queries_is_served(tmp_path: Path) -> None:
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import NewTopic

    policy = {
        "create.topic.policy.class.name": "ksteward.policy.builtin.TopicNamingPolicy",
        "topic.naming.policy.regex": "team-[a-z]+",
    }
    cluster = Cluster(tmp_path, brokers=1, overrides=policy)
    ports = [free_port(), free_port()]
    for node, port in zip(cluster.nodes, ports, strict=True):
        node.extra_overrides["metrics.port"] = str(port)
    try:
        cluster.start()
        bootstrap = cluster.brokers[0].bootstrap
        admin = confluent_admin(bootstrap, Auth())
        admin.create_topics([NewTopic("team-a", 1, 1)], request_timeout=10)["team-a"].result()
        with pytest.raises(KafkaException):
            admin.create_topics([NewTopic("Not_A_Team", 1, 1)], request_timeout=10)["Not_A_Team"].result()
        acl_client("confluent-kafka", bootstrap).describe(Auth(), (None,) * 7)
        served = {name for port in ports for name, _ in scrape(port)}
        missing = dashboard_series() - served
        assert not missing, f"the dashboard queries series no node serves: {sorted(missing)}"
    finally:
        cluster.kill()
