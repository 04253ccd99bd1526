"""No transient denial (issue 19): while a real client is authorized continuously against the ACL being
replaced, an atomic apply (CreateAcls v4, docs/acl-transactions.md) and the safe order (create, then delete,
through confluent-kafka as on real Kafka) deny it nothing, and a naive delete-then-create in the same test does,
which proves the test can see a denial.

The client is alice, through confluent-kafka: a Metadata request for the topic ``orders`` every turn, which
Kafka's authorizer answers with the topic only while alice may DESCRIBE it (TOPIC_AUTHORIZATION_FAILED otherwise).
Her right is replaced back and forth between a LITERAL ACL on ``orders`` and a PREFIXED ACL on ``ord``."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Iterator

import pytest
from clients import Auth, confluent_admin
from harness import KstewardServer, wait_for

from ksteward.authorizer import AclBinding
from ksteward.cli.acl_apply import AclDelta, apply_atomically, apply_in_safe_order
from ksteward.cli.acls.backend import ConfluentBackend
from ksteward.cli.admin_client import AdminClient
from ksteward.cli.admin_common import Connection

ADMIN = Auth("PLAIN", "admin", "admin-secret")
ALICE = Auth("PLAIN", "alice", "alice-secret")
LITERAL = AclBinding("TOPIC", "orders", "LITERAL", "User:alice", "*", "DESCRIBE", "ALLOW")
PREFIXED = AclBinding("TOPIC", "ord", "PREFIXED", "User:alice", "*", "DESCRIBE", "ALLOW")
ALICES_TOPIC_ACLS = {"resource_type_filter": 2, "resource_name_filter": None, "pattern_type_filter": 1,
                     "principal_filter": "User:alice", "host_filter": None, "operation": 1,
                     "permission_type": 1}  # fmt: skip
CYCLES = 40  # replacements per way; the naive way stops at its first observed denial
NAIVE_CYCLES_AT_MOST = 400
ADMIN_PROPERTIES = {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
                    "sasl.jaas.config": 'org.apache.kafka.common.security.plain.PlainLoginModule required '
                                        'username="admin" password="admin-secret";'}  # fmt: skip


class Reader:
    """alice's client, asking for the topic's metadata in a loop; each answer counted under the phase that was
    current both when it was asked and when it came back (an answer that straddles two phases is not counted)."""

    def __init__(self, bootstrap: str) -> None:
        self.client = confluent_admin(bootstrap, ALICE)
        self.phase = "setup"
        self.allowed: Counter[str] = Counter()
        self.denied: Counter[str] = Counter()
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self.stop.is_set():
            phase = self.phase
            topic = self.client.list_topics(topic="orders", timeout=10).topics.get("orders")
            if phase != self.phase:
                continue
            if topic is not None and topic.error is None:
                self.allowed[phase] += 1
            else:
                self.denied[phase] += 1

    def enter(self, phase: str) -> None:
        """Start ``phase`` once alice is allowed (one allowed answer in it)."""
        self.phase = phase
        wait_for(lambda: self.allowed[phase] > 0, 30, f"alice allowed at the start of {phase}")


@pytest.fixture
def setup(server_factory: Callable[..., KstewardServer]) -> Iterator[tuple[KstewardServer, Reader]]:
    node = server_factory("sasl").start()
    from confluent_kafka.admin import NewTopic

    admin = confluent_admin(node.bootstrap, ADMIN)
    for future in admin.create_topics([NewTopic("orders", 1, 1)]).values():
        future.result(timeout=30)
    with AdminClient(node.bootstrap, sasl_plain=("admin", "admin-secret")) as client:
        apply_atomically(client, AclDelta(create=(LITERAL,)), lambda _: None)
    reader = Reader(node.bootstrap)
    reader.thread.start()
    try:
        yield node, reader
    finally:
        reader.stop.set()
        reader.thread.join(timeout=30)


def _swap(current: AclBinding) -> tuple[AclBinding, AclBinding]:
    return current, PREFIXED if current == LITERAL else LITERAL


def test_atomic_and_safe_order_deny_nothing_where_delete_then_create_does(
    setup: tuple[KstewardServer, Reader],
) -> None:
    node, reader = setup
    current = LITERAL
    reader.enter("atomic")
    with AdminClient(node.bootstrap, sasl_plain=("admin", "admin-secret")) as client:
        for _ in range(CYCLES):
            old, current = _swap(current)
            _, planned_at = client.describe_acls_at(ALICES_TOPIC_ACLS)
            apply_atomically(client, AclDelta((current,), (old,), planned_at), lambda _: None)
    atomic_reads = reader.allowed["atomic"] + reader.denied["atomic"]

    reader.enter("safe-order")
    backend = ConfluentBackend(Connection(node.bootstrap, False, ADMIN_PROPERTIES))
    for _ in range(CYCLES):
        old, current = _swap(current)
        apply_in_safe_order(backend, AclDelta((current,), (old,)), lambda _: None)
    safe_reads = reader.allowed["safe-order"] + reader.denied["safe-order"]

    reader.enter("naive")
    for _ in range(NAIVE_CYCLES_AT_MOST):
        old, current = _swap(current)
        assert backend.delete([old.to_filter()]) == [old]
        backend.create([current])
        if reader.denied["naive"]:
            break

    assert reader.denied["naive"] > 0, "a delete-then-create must show a denial, or this test cannot see one"
    assert (reader.denied["atomic"], reader.denied["safe-order"]) == (0, 0)
    # both ways ran while alice was asking, many times over
    assert atomic_reads >= CYCLES and safe_reads >= CYCLES, (atomic_reads, safe_reads)
