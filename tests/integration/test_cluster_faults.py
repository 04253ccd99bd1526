"""Faults across real processes (issue 14): a controller killed under a stream of forwarded mutations, and a
broker stopped during 10,000 ACL changes that catches up by snapshot.

Every kill point comes from a seeded RNG whose seed is printed (``KSTEWARD_FAULT_SEED`` replays it).
``KSTEWARD_FAULT_CYCLES=N`` runs N kill-and-restart cycles of the controller test instead of one; that is the
long run, e.g. ``KSTEWARD_FAULT_CYCLES=20 .venv/bin/python -m pytest tests/integration/test_cluster_faults.py``.
"""

from __future__ import annotations

import dataclasses
import itertools
import logging
import random
import re
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from acl_clients import KafkaPython
from clients import Auth, confluent_admin, kafka_python_admin
from cluster_helpers import ANY_TOPIC_ACL, create_topic_acl, topic_config, topic_partitions
from harness import FAULT_CYCLES, Cluster, ClusterNode, fault_rng, wait_for
from rawkafka import connect

from ksteward.metadata.batch import Batch
from ksteward.metadata.loader import load
from ksteward.metadata.log_files import UnreadableBatch, file_batches, log_files
from ksteward.metadata.records import AccessControlEntryRecord, ConfigRecord, TopicRecord, decode_record
from ksteward.protocol.apis import ApiKey

CLIENT_TIMEOUT_S = 3.0  # each client call's request timeout; the broker itself retries for 60 s
STREAM_THREADS = 4  # thread t bootstraps from broker t % 2
PRINCIPAL = "User:fault"


# --- the controller's durable log, read with ksteward's own readers ---------------------------------------


def segment_records(node: ClusterNode) -> list[Any]:
    """Every data record in ``node``'s metadata log segments (its snapshots left out), in log order. The
    log must still begin at offset 0: a deleted segment would hide records from the count."""
    segments = [p for p in log_files(node.data_dir) if p.suffix == ".log"]
    assert segments and int(segments[0].stem) == 0, f"the log no longer starts at 0: {segments[:1]}"
    records = []
    for path in segments:
        for batch in file_batches(path):
            assert not isinstance(batch, UnreadableBatch), f"{path}: {batch}"
            if isinstance(batch, Batch) and not batch.is_control:  # a running log may end in a torn batch
                records += [decode_record(value) for _, _, _, value in batch.records if value is not None]
    return records


# --- a stream of forwarded mutations, with an account of every call ----------------------------------------


@dataclasses.dataclass
class Call:
    thread: int
    kind: str  # "acl" (CreateAcls of one binding), "topic" (CreateTopics), "config" (IncrementalAlterConfigs SET)
    key: str  # the binding's resource name, the topic name, or the config value set
    bootstrap: str  # the broker the client bootstrapped from; librdkafka may route a call to the other
    client: str
    started: float
    outcome: str | None = None  # "ack", "error" or "timeout"; None while the call runs
    error: str = ""

    def __str__(self) -> str:
        state = self.outcome or f"still running after {time.monotonic() - self.started:.0f}s"
        return f"thread {self.thread} {self.kind} {self.key} ({self.client} of {self.bootstrap}): {state} {self.error}"


def owned_topic(thread: int) -> str:
    return f"own-{thread}"


class MutationStream:
    """STREAM_THREADS client threads (confluent-kafka AdminClient; kafka-python for the ACLs of odd threads),
    each bootstrapped from one broker and with its own topic for config SETs. Values are unique, so each
    record in the log names the call that made it."""

    def __init__(self, brokers: list[ClusterNode], cycle: int, **librdkafka: Any) -> None:
        self.brokers = brokers
        self.cycle = cycle
        self.librdkafka = librdkafka  # more configuration for the confluent-kafka clients
        self.calls: list[Call] = []
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.threads = [threading.Thread(target=self._run, args=(t,), daemon=True) for t in range(STREAM_THREADS)]

    def start(self) -> MutationStream:
        for thread in self.threads:
            thread.start()
        return self

    def count(self, predicate: Callable[[Call], bool]) -> int:
        with self.lock:
            return sum(1 for c in self.calls if predicate(c))

    def in_flight(self) -> bool:
        return self.count(lambda c: c.outcome is None) > 0

    def finish(self, deadline_s: float = 90.0) -> None:
        """Stop issuing calls and wait for every thread; a call that never ended fails the test by name."""
        self.stop.set()
        end = time.monotonic() + deadline_s
        for thread in self.threads:
            thread.join(max(end - time.monotonic(), 0.1))
        with self.lock:
            stuck = [str(c) for c in self.calls if c.outcome is None]
        assert not stuck and not any(t.is_alive() for t in self.threads), f"client calls that never ended: {stuck}"

    def _run(self, thread: int) -> None:
        broker = self.brokers[thread % len(self.brokers)]
        admin = confluent_admin(broker.bootstrap, Auth(), **self.librdkafka)
        # Odd threads create their ACLs with kafka-python (request timeout 5 s, no retries, least loaded broker).
        acl_admin = kafka_python_admin(broker.bootstrap, Auth()) if thread % 2 else None
        try:
            self._stream(thread, broker, admin, acl_admin)
        finally:
            if acl_admin is not None:
                acl_admin.close()

    def _stream(self, thread: int, broker: ClusterNode, admin: Any, acl_admin: Any) -> None:
        for n in itertools.count():
            if self.stop.is_set():
                return
            kind = ("acl", "topic", "config")[n % 3]
            value = 86_400_000 + self.cycle * 1_000_000 + n * STREAM_THREADS + thread  # unique in the test
            key = f"c{self.cycle}-t{thread}-{n}" if kind != "config" else str(value)
            client = "kafka-python" if kind == "acl" and acl_admin is not None else "confluent-kafka"
            call = Call(thread, kind, key, broker.name, client, time.monotonic())
            with self.lock:
                self.calls.append(call)
            if client == "kafka-python":
                outcome, error = self._create_acl_with_kafka_python(acl_admin, key)
            else:
                outcome, error = self._send(admin, thread, kind, key)
            with self.lock:
                call.outcome, call.error = outcome, error

    @staticmethod
    def _send(admin: Any, thread: int, kind: str, key: str) -> tuple[str, str]:
        from confluent_kafka import KafkaError, KafkaException
        from confluent_kafka.admin import (
            AclBinding,
            AclOperation,
            AclPermissionType,
            AlterConfigOpType,
            ConfigEntry,
            ConfigResource,
            NewTopic,
            ResourcePatternType,
            ResourceType,
        )

        try:
            if kind == "acl":
                binding = AclBinding(ResourceType.TOPIC, key, ResourcePatternType.LITERAL, PRINCIPAL, "*",
                                     AclOperation.READ, AclPermissionType.ALLOW)  # fmt: skip
                admin.create_acls([binding], request_timeout=CLIENT_TIMEOUT_S)[binding].result()
            elif kind == "topic":
                futures = admin.create_topics([NewTopic(key, 1, 1)], request_timeout=CLIENT_TIMEOUT_S)
                futures[key].result()
            else:
                entry = ConfigEntry("retention.ms", key, incremental_operation=AlterConfigOpType.SET)
                resource = ConfigResource(ResourceType.TOPIC, owned_topic(thread), incremental_configs=[entry])
                admin.incremental_alter_configs([resource], request_timeout=CLIENT_TIMEOUT_S)[resource].result()
        except KafkaException as exc:
            err = exc.args[0]
            timed_out = err.code() in (KafkaError._TIMED_OUT, KafkaError.REQUEST_TIMED_OUT)
            return ("timeout" if timed_out else "error"), err.name()
        return "ack", ""

    @staticmethod
    def _create_acl_with_kafka_python(admin: Any, key: str) -> tuple[str, str]:
        from kafka.errors import KafkaError

        try:
            result = admin.create_acls([KafkaPython._acl(("TOPIC", key, "LITERAL", PRINCIPAL, "*", "READ", "ALLOW"))])
        except KafkaError as exc:
            name = type(exc).__name__
            return ("timeout" if "Timeout" in name or "TimedOut" in name else "error"), name
        if result["failed"]:
            return "error", repr(result["failed"][0])
        return "ack", ""


# --- 1. the controller is killed in the middle of the stream, then restarted --------------------------------


def kill_and_restart_the_controller(cluster: Cluster, rng: random.Random, cycle: int) -> list[Call]:
    stream = MutationStream(cluster.brokers, cycle).start()
    try:
        kill_after = rng.randint(3, 30)  # acknowledged mutations before the kill
        print(f"cycle {cycle}: kill -9 the controller after {kill_after} acknowledged mutations")

        def kill_point() -> bool:  # enough acknowledged, and a call on the wire right now
            return stream.count(lambda c: c.outcome == "ack") >= kill_after and stream.in_flight()

        wait_for(kill_point, 60.0, f"{kill_after} acknowledged calls")
        cluster.controller.kill()
        killed = time.monotonic()
        # Keep it down until a call sent after the kill has ended: with no controller, only by its client giving
        # up, while its request stays queued on a broker and may be applied after the restart, unacknowledged.
        wait_for(lambda: stream.count(lambda c: c.started > killed and c.outcome), 30.0, "a call sent after the kill")
        cluster.controller.spawn()
        cluster.controller.wait_ready()
        restarted = time.monotonic()

        def acked_after_restart(t: int) -> int:
            return stream.count(lambda c: c.thread == t and c.started > restarted and c.outcome == "ack")

        wait_for(lambda: all(acked_after_restart(t) >= 3 for t in range(STREAM_THREADS)), 60.0, "the stream after")
    finally:
        stream.finish()
    return stream.calls


def cluster_state_from_log(records: list[Any], topics: list[str]) -> tuple[set[str], set[str], dict[str, str]]:
    """The stream's ACL names, topic names and owned-topic retention.ms as the controller's log leaves them
    (the stream never deletes, so the last record of each wins)."""
    acls = {r.resource_name for r in records if isinstance(r, AccessControlEntryRecord) and r.principal == PRINCIPAL}
    names = {r.name for r in records if isinstance(r, TopicRecord)}
    configs = {r.resource_name: r.value for r in records if isinstance(r, ConfigRecord) and r.name == "retention.ms"}
    return acls, names, {t: configs[t] for t in topics if t in configs}


def broker_state(node: ClusterNode, topics: list[str]) -> tuple[set[str], set[str], dict[str, str | None]]:
    filter_ = {"resource_type_filter": 2, "resource_name_filter": None, "pattern_type_filter": 1,
               "principal_filter": PRINCIPAL, "host_filter": None, "operation": 1, "permission_type": 1}  # fmt: skip
    with connect(node.address) as conn:
        body = conn.request(ApiKey.DESCRIBE_ACLS, 3, filter_).body
    assert int(body.error_code) == 0, body
    configs = {t: topic_config(node, t, "retention.ms") for t in topics}
    return {r.resource_name for r in body.resources}, set(topic_partitions(node)), configs


def assert_converges(node: ClusterNode, view: Callable[[], Any], expected: Any, timeout: float = 30.0) -> None:
    """Wait until ``view()`` equals ``expected``; at the deadline, fail showing what still differs."""
    try:
        wait_for(lambda: view() == expected, timeout, f"{node.name} to converge to the controller's state")
    except AssertionError as exc:
        seen = view()
        diff = [(sorted(e - s) if isinstance(e, set) else e, sorted(s - e) if isinstance(s, set) else s)
                for e, s in zip(expected, seen, strict=True) if e != s]  # fmt: skip
        raise AssertionError(f"{exc}; (missing, extra) per part that differs: {diff}") from None


def assert_each_mutation_applied_at_most_once(calls: list[Call], records: list[Any]) -> Counter[str]:
    applied: Counter[tuple[str, str]] = Counter()
    for r in records:
        if isinstance(r, AccessControlEntryRecord) and r.principal == PRINCIPAL:
            applied["acl", r.resource_name] += 1
        elif isinstance(r, TopicRecord):
            applied["topic", r.name] += 1
        elif isinstance(r, ConfigRecord) and r.name == "retention.ms":
            applied["config", r.value or ""] += 1
    tally: Counter[str] = Counter()
    for call in calls:
        times = applied[call.kind, call.key]
        if call.outcome == "ack":
            assert times == 1, f"acknowledged, applied {times} times: {call}"
        elif call.kind == "topic" and call.error == "TOPIC_ALREADY_EXISTS":
            # Forwarding's one ambiguity (docs/forwarding.md, "Never twice"): the answer to the first attempt
            # was lost, the retry found the topic. Unacknowledged, applied once.
            assert times == 1, f"TOPIC_ALREADY_EXISTS for a name only this call used, applied {times} times: {call}"
        elif call.kind == "config" and times == 2:
            assert_retried_set_was_overtaken(call, records)
        else:
            assert times <= 1, f"unacknowledged, applied {times} times: {call}"
        tally[f"{call.outcome}/applied {times}x"] += 1
    return tally


def assert_retried_set_was_overtaken(call: Call, records: list[Any]) -> None:
    """The same ambiguity for a config SET: a SET is a no-op when the value is already there, so a retry after
    a lost answer writes a second record only if another value landed in between. That happens: a client's
    calls do not all go through one broker (librdkafka sends IncrementalAlterConfigs to the broker Metadata
    names controller, a random live one in KRaft), and a call it gave up on may still be queued on a broker
    while its next call is applied through the other."""
    topic = owned_topic(call.thread)
    values = [r.value for r in records if isinstance(r, ConfigRecord) and r.resource_name == topic]
    first, last = values.index(call.key), len(values) - 1 - values[::-1].index(call.key)
    assert any(v != call.key for v in values[first:last]), f"unacknowledged, applied twice in a row: {call}"


def test_a_controller_killed_under_forwarded_mutations_applies_each_at_most_once(tmp_path: Path) -> None:
    from confluent_kafka.admin import NewTopic

    rng = fault_rng("controller kill")
    cluster = Cluster(tmp_path).start()
    try:
        owned = [owned_topic(t) for t in range(STREAM_THREADS)]
        admin = confluent_admin(cluster.brokers[0].bootstrap, Auth())
        for _name, future in admin.create_topics([NewTopic(t, 1, 1) for t in owned]).items():
            future.result(30)
        calls: list[Call] = []
        for cycle in range(FAULT_CYCLES):
            calls += kill_and_restart_the_controller(cluster, rng, cycle)
        # A broker forwards in FIFO order, one at a time: once a later request through it is answered, every
        # request it still held (for a client that had given up) has been applied or expired.
        for broker in cluster.brokers:
            create_topic_acl(broker, f"barrier-{broker.name}")
        records = segment_records(cluster.controller)
        tally = assert_each_mutation_applied_at_most_once(calls, records)
        print(f"{len(calls)} calls over {FAULT_CYCLES} cycle(s): {dict(tally)}")
        print(f"by client and outcome: {dict(Counter((c.client, c.kind, c.outcome) for c in calls))}")
        assert sum(n for outcome, n in tally.items() if outcome.startswith("timeout/")) > 0
        expected = cluster_state_from_log(records, owned)
        for broker in cluster.brokers:
            assert_converges(broker, lambda b=broker: broker_state(b, list(expected[2])), expected)
    finally:
        cluster.kill()


# --- 2. a broker stopped during 10,000 ACL changes catches up by snapshot; a reader sees whole prefixes -----

ACL_REQUESTS = 100  # 90 CreateAcls of 100 bindings, and 10 DeleteAcls each removing 100: 10,000 changes
ACLS_PER_REQUEST = 100
READ_PHASE = 20  # the last requests, sent while a reader polls the restarted broker
# The controller snapshots every ~4 requests and, with one batch per segment, drops the segments a snapshot
# covers: its log start passes a stopped broker's end, which must then fetch a snapshot (docs/raft.md).
SNAPSHOTTING = {"metadata.log.max.record.bytes.between.snapshots": "32768", "metadata.log.segment.bytes": "1024"}

AclEntry = tuple[str, str]  # (resource name, principal): every other field is the same for all


def change_request(j: int) -> tuple[int, dict[str, Any]]:
    """Request ``j``: DeleteAcls of the resource created five requests before, every tenth; else CreateAcls
    of ACLS_PER_REQUEST bindings on its own resource ``r<j>``."""
    if j % 10 == 9:
        filter_ = {"resource_type_filter": 2, "resource_name_filter": f"r{j - 5}", "pattern_type_filter": 3,
                   "principal_filter": None, "host_filter": None, "operation": 1, "permission_type": 1}  # fmt: skip
        return ApiKey.DELETE_ACLS, {"filters": [filter_]}
    creations = [{"resource_type": 2, "resource_name": f"r{j}", "resource_pattern_type": 3, "principal": f"User:p{i}",
                  "host": "*", "operation": 3, "permission_type": 3} for i in range(ACLS_PER_REQUEST)]  # fmt: skip
    return ApiKey.CREATE_ACLS, {"creations": creations}


def prefix_names() -> list[frozenset[str]]:
    """names[k]: the resources holding ACLs after the first k requests (S_k); every request changes it."""
    names: list[frozenset[str]] = [frozenset()]
    for j in range(ACL_REQUESTS):
        current = set(names[-1])
        current.symmetric_difference_update({f"r{j - 5}" if j % 10 == 9 else f"r{j}"})
        names.append(frozenset(current))
    return names


def entries(names: frozenset[str]) -> set[AclEntry]:
    return {(name, f"User:p{i}") for name in names for i in range(ACLS_PER_REQUEST)}


def send_change(conn: Any, j: int) -> None:
    api_key, body = change_request(j)
    response = conn.request(api_key, 3, body).body
    results = response.results if api_key == ApiKey.CREATE_ACLS else response.filter_results
    assert {int(r.error_code) for r in results} == {0}, f"request {j}: {response}"
    if api_key == ApiKey.DELETE_ACLS:
        assert len(results[0].matching_acls) == ACLS_PER_REQUEST, f"request {j} deleted {results[0]}"


def described_acls(conn: Any) -> set[AclEntry]:
    body = conn.request(ApiKey.DESCRIBE_ACLS, 3, ANY_TOPIC_ACL).body
    assert int(body.error_code) == 0, body
    seen = set()
    for resource in body.resources:
        for acl in resource.acls:
            assert (int(resource.pattern_type), acl.host, int(acl.operation), int(acl.permission_type)) == (
                3,
                "*",
                3,
                3,
            )
            seen.add((resource.resource_name, acl.principal))
    return seen


class PrefixReader:
    """Polls DescribeAcls on one broker; each answer must be S_k for some k, with k never decreasing."""

    def __init__(self, node: ClusterNode, names: list[frozenset[str]]) -> None:
        self.node = node
        self.by_names = {n: k for k, n in enumerate(names)}
        self.observed: list[int] = []
        self.violation = ""
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        try:
            with connect(self.node.address, timeout=30.0) as conn:
                while not self.stop.is_set() and not self.violation:
                    self._check(described_acls(conn))
        except Exception as exc:  # reported by finish(), and ends the writer's wait for the next poll
            self.violation = f"the reader failed: {exc!r}"

    def _check(self, seen: set[AclEntry]) -> None:
        names = frozenset(name for name, _ in seen)
        k = self.by_names.get(names)
        if k is None or seen != entries(names):
            partial = sorted(n for n in names if sum(1 for m, _ in seen if m == n) != ACLS_PER_REQUEST)
            self.violation = f"not S_k for any k: {len(seen)} ACLs on {len(names)} resources, partial {partial}"
        elif self.observed and k < self.observed[-1]:
            self.violation = f"went back from S_{self.observed[-1]} to S_{k}"
        else:
            self.observed.append(k)

    def polls(self) -> int:
        return len(self.observed) + (1 if self.violation else 0)

    def finish(self) -> None:
        self.stop.set()
        self.thread.join(60.0)
        assert not self.thread.is_alive(), "the DescribeAcls reader is stuck"
        assert not self.violation, self.violation


def restart_in_background(node: ClusterNode) -> threading.Event:
    """Start ``node`` again; the returned event is set once it serves clients (after it caught up)."""
    ready = threading.Event()

    def start() -> None:
        node.spawn()
        node.wait_ready(60.0)
        ready.set()

    threading.Thread(target=start, daemon=True).start()
    return ready


def run_acl_changes(cluster: Cluster, reader: PrefixReader, kill_at: int, restart_at: int) -> None:
    """Send every change through the second broker; kill -9 the first before request ``kill_at`` and start
    it before ``restart_at``. The last READ_PHASE requests wait for the reader to answer once more before
    each, so the reads on the restarted broker really interleave with the changes."""
    stopped, writer = cluster.brokers
    ready = threading.Event()
    with connect(writer.address, timeout=60.0) as conn:
        for j in range(ACL_REQUESTS):
            if j == kill_at:
                stopped.kill()
            elif j == restart_at:
                ready = restart_in_background(stopped)
            elif j == ACL_REQUESTS - READ_PHASE:
                wait_for(ready.is_set, 60.0, "the restarted broker to open its client listener")
                reader.thread.start()
            if j >= ACL_REQUESTS - READ_PHASE:
                polls = reader.polls()
                wait_for(lambda p=polls: reader.polls() > p or reader.violation, 60.0, "the reader's next answer")
            send_change(conn, j)


def test_a_broker_stopped_during_10000_acl_changes_catches_up_by_snapshot(tmp_path: Path) -> None:
    rng = fault_rng("broker stop")
    kill_at, restart_at = rng.randint(2, 10), rng.randint(55, ACL_REQUESTS - READ_PHASE - 5)
    print(f"kill -9 the first broker before request {kill_at}, restart it before request {restart_at}")
    names = prefix_names()
    cluster = Cluster(tmp_path, overrides=SNAPSHOTTING).start()
    stopped = cluster.brokers[0]
    reader = PrefixReader(stopped, names)
    try:
        run_acl_changes(cluster, reader, kill_at, restart_at)
        wait_for(lambda: reader.violation or reader.observed[-1:] == [ACL_REQUESTS], 60.0, "the reader to see S_100")
        reader.finish()
        image, log = load(cluster.controller.data_dir, logging.getLogger("test"), read_only=True)
        log.close()
        controller = {(b.resource_name, b.principal) for b in image.acls.by_binding}
        assert controller == entries(names[-1])
        with connect(stopped.address) as conn:
            assert described_acls(conn) == controller
    finally:
        reader.stop.set()
        cluster.kill()
    print(f"the reader saw S_k for k in {sorted(set(reader.observed))}")
    resumed = re.search(r"resuming the metadata log at offset (\d+)", stopped.run_log())
    assert resumed, "the restarted broker did not say where its log ended"
    segments = [p for p in log_files(cluster.controller.data_dir) if p.suffix == ".log"]
    assert int(segments[0].stem) > int(resumed[1]), "the controller's log still reaches back to the broker's end"
    assert "installed metadata snapshot" in stopped.run_log(), "the restarted broker did not fetch a snapshot"
    assert len(set(reader.observed)) > 1, "the reader saw no change happen"
