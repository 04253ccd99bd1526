"""Read-your-writes across brokers (ksteward.protocol.read_your_writes, docs/forwarding.md): a mutation's
response carries the controller's committed metadata offset in its header, and a read that carries it is
answered only once the broker has applied it. Without it, a broker answers from what it has, as Kafka's do
(KAFKA-15713).

The controller advertises its listener through a proxy (KIP-853 ``advertised.listeners`` on a controller), so
the brokers reach it only through the proxy, and pausing it holds their replication still while the test
writes straight to the controller (KIP-919)."""

from __future__ import annotations

import select
from collections.abc import Iterator
from pathlib import Path

import pytest
from harness import Cluster, ClusterNode
from pausable_proxy import PausableProxy
from rawkafka import connect, decode_response

from ksteward.cli.admin_client import AdminClient
from ksteward.protocol.apis import ApiKey

SLOW_READS = "60000"  # broker 2 waits this long for an offset: longer than any pause below
FAST_READS = "500"  # broker 3 gives up after this long

ACL_FILTER = {"resource_type_filter": 2, "resource_name_filter": None, "pattern_type_filter": 1,
              "principal_filter": None, "host_filter": None, "operation": 1, "permission_type": 1}  # fmt: skip


def _creation(topic: str) -> dict[str, object]:
    return {"resource_type": 2, "resource_name": topic, "resource_pattern_type": 3, "principal": "User:alice",
            "host": "*", "operation": 3, "permission_type": 3}  # fmt: skip


@pytest.fixture
def proxied(tmp_path: Path) -> Iterator[tuple[Cluster, PausableProxy]]:
    made = Cluster(tmp_path, brokers=2, overrides={"broker.session.timeout.ms": "120000"})
    proxy = PausableProxy(made.controller.port)
    made.controller.extra_overrides["advertised.listeners"] = f"CONTROLLER://127.0.0.1:{proxy.port}"
    made.brokers[0].extra_overrides["ksteward.read.your.writes.timeout.ms"] = SLOW_READS
    made.brokers[1].extra_overrides["ksteward.read.your.writes.timeout.ms"] = FAST_READS
    try:
        yield made.start(), proxy
    finally:
        proxy.resume()
        made.kill()
        proxy.close()


def _create_acl(node: ClusterNode, topic: str) -> int:
    """Create an ACL through ``node``, asking for the offset (-1: nothing to wait for), and return the metadata
    offset its response carries."""
    with connect(node.address) as conn:
        response = conn.request(ApiKey.CREATE_ACLS, 3, {"creations": [_creation(topic)]}, min_offset=-1)
    assert [int(r.error_code) for r in response.body.results] == [0], response.body
    assert response.metadata_offset is not None, "a mutation's response must carry the committed offset"
    return response.metadata_offset


def test_only_a_client_that_asks_gets_the_offset_tag(proxied: tuple[Cluster, PausableProxy]) -> None:
    """A request without the tag gets an answer without tagged fields, from the controller itself and through a
    broker (which drops the tag the controller's Envelope answer carries): kafkajs 2.2 misreads any tag there."""
    cluster, _ = proxied
    for n, node in enumerate((cluster.controller, cluster.brokers[1])):
        with connect(node.address) as conn:
            response = conn.request(ApiKey.CREATE_ACLS, 3, {"creations": [_creation(f"untagged-{n}")]})
            assert [int(r.error_code) for r in response.body.results] == [0], response.body
            assert response.metadata_offset is None
            assert response.raw[4:5] == b"\x00"  # after the correlation id: an empty tagged-field section


def _acl_names(body: object) -> set[str]:
    assert int(body.error_code) == 0, body  # type: ignore[attr-defined]
    return {r.resource_name for r in body.resources}  # type: ignore[attr-defined]


def test_a_read_with_the_offset_waits_for_the_write_and_one_without_does_not(
    proxied: tuple[Cluster, PausableProxy],
) -> None:
    cluster, proxy = proxied
    broker = cluster.brokers[0]
    proxy.pause()  # the brokers hear nothing more from the controller
    offset = _create_acl(cluster.controller, "written")  # KIP-919: straight to the controller's own listener

    with connect(broker.address) as waiting, connect(broker.address) as plain:
        cid = waiting.send_request(ApiKey.DESCRIBE_ACLS, 3, ACL_FILTER, min_offset=offset)
        # A read without the offset, sent after the one with it, is answered at once, without the write...
        assert "written" not in _acl_names(plain.request(ApiKey.DESCRIBE_ACLS, 3, ACL_FILTER).body)
        # ...while the read with it is still unanswered: the broker cannot apply the record through a paused proxy.
        assert select.select([waiting.sock], [], [], 0)[0] == []
        proxy.resume()
        response = decode_response(ApiKey.DESCRIBE_ACLS, 3, waiting.read_frame())
    assert response.correlation_id == cid
    assert "written" in _acl_names(response.body)


def test_a_read_whose_offset_never_arrives_times_out(proxied: tuple[Cluster, PausableProxy]) -> None:
    cluster, _ = proxied
    offset = _create_acl(cluster.brokers[1], "through-3")
    with connect(cluster.brokers[1].address) as conn:
        assert "through-3" in _acl_names(conn.request(ApiKey.DESCRIBE_ACLS, 3, ACL_FILTER, min_offset=offset).body)
        late = conn.request(ApiKey.DESCRIBE_ACLS, 3, ACL_FILTER, min_offset=offset + 1_000_000).body
        assert int(late.error_code) == 7, late  # REQUEST_TIMED_OUT, after ksteward.read.your.writes.timeout.ms
        assert conn.request(ApiKey.DESCRIBE_ACLS, 3, ACL_FILTER).body.error_code == 0  # the connection stays usable


def test_the_ksteward_client_reads_its_write_on_the_other_broker(proxied: tuple[Cluster, PausableProxy]) -> None:
    """The option of ksteward's own client: the offset a forwarded write reported, carried to another broker."""
    cluster, _ = proxied
    writes_through, reads_from = cluster.brokers[1], cluster.brokers[0]
    with AdminClient(writes_through.bootstrap) as writer:
        writer.request(ApiKey.CREATE_ACLS, {"creations": [_creation("forwarded")]}, max_version=3)
        offset = writer.metadata_offset
    assert offset is not None, "the broker must pass the controller's offset through"
    with AdminClient(reads_from.bootstrap, min_metadata_offset=offset) as reader:
        assert "forwarded" in _acl_names(reader.request(ApiKey.DESCRIBE_ACLS, ACL_FILTER, max_version=3))


def test_a_config_change_rewritten_by_the_broker_still_carries_the_controllers_offset(
    proxied: tuple[Cluster, PausableProxy],
) -> None:
    """IncrementalAlterConfigs is preprocessed and reassembled by the broker, not passed through: the answer it
    builds must still carry the controller's offset, and a read with it on the other broker sees the value."""
    cluster, _ = proxied
    writes_through, reads_from = cluster.brokers[1], cluster.brokers[0]
    config = {"name": "log.retention.ms", "config_operation": 0, "value": "4242000"}  # SET the cluster default
    alter = {"resources": [{"resource_type": 4, "resource_name": "", "configs": [config]}], "validate_only": False}
    with connect(writes_through.address) as conn:
        response = conn.request(ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, alter, min_offset=-1)
    assert [int(r.error_code) for r in response.body.responses] == [0], response.body
    assert response.metadata_offset is not None
    describe = {"resources": [{"resource_type": 4, "resource_name": "", "configuration_keys": ["log.retention.ms"]}],
                "include_synonyms": False, "include_documentation": False}  # fmt: skip
    with connect(reads_from.address) as conn:
        body = conn.request(ApiKey.DESCRIBE_CONFIGS, 4, describe, min_offset=response.metadata_offset).body
    assert [(c.name, c.value) for c in body.results[0].configs] == [("log.retention.ms", "4242000")]
