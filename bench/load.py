"""A mixed admin load: hundreds of SASL clients in closed loops, with the authorizer and the audit log on.

    .venv/bin/python -m bench.load                  # 200 connections, 60 s, on one combined node
    .venv/bin/python -m bench.load --quick          # 50 connections, 10 s (a smoke test)
    .venv/bin/python -m bench.load --brokers 3      # a controller and 3 brokers, clients spread over them

The mix is the one an outside load probe ran against ksteward (issue 17): 35% Metadata (three topics),
25% DescribeConfigs of one topic, 20% DescribeAcls (a MATCH filter on one topic), and 20% mutations, as
5% each of CreateAcls, DeleteAcls (of an ACL the same connection created), IncrementalAlterConfigs (one
topic's retention.ms) and CreateTopics (a new topic). The node holds 200 topics of 3 partitions and 1,000
ACLs before the clock starts. Each connection logs in with SASL/PLAIN as one of 20 users, none of them a
super user, so every request goes through the StandardAuthorizer, and every decision is written to the
audit log (``audit.log.dir``). Each connection draws its operations from its own seeded random stream.

Prints one table (per-operation count, errors, p50 and p99) and the totals (operations per second, the
server processes' CPU), and writes ``bench/results/load.json`` (``load.cluster.json`` with ``--brokers``).
"""

from __future__ import annotations

import argparse
import asyncio
import random
import struct
import sys
import time
import uuid
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench._harness.cluster import SECURITY, broker_node, controller_node, new_cluster_id
from bench._harness.cpu import client_cpu_seconds
from bench._harness.report import percentile_ms, table, warn
from bench._harness.runner import Benchmark, parser
from bench._harness.server import ServerProcess
from bench._harness.wire import FrameClient, decode_response, encode_request, with_correlation_id
from ksteward.protocol.apis import ApiKey

USERS = 20
PASSWORD = "load-secret"
ADMIN = ("admin", "admin-secret")
TOPICS = 200
PARTITIONS = 3
ACLS = 1_000
MIX: tuple[tuple[str, float], ...] = (
    ("Metadata", 0.35),
    ("DescribeConfigs", 0.25),
    ("DescribeAcls", 0.20),
    ("CreateAcls", 0.05),
    ("DeleteAcls", 0.05),
    ("IncrementalAlterConfigs", 0.05),
    ("CreateTopics", 0.05),
)
API_OF = {
    "Metadata": (ApiKey.METADATA, 12),
    "DescribeConfigs": (ApiKey.DESCRIBE_CONFIGS, 4),
    "DescribeAcls": (ApiKey.DESCRIBE_ACLS, 3),
    "CreateAcls": (ApiKey.CREATE_ACLS, 3),
    "DeleteAcls": (ApiKey.DELETE_ACLS, 3),
    "IncrementalAlterConfigs": (ApiKey.INCREMENTAL_ALTER_CONFIGS, 1),
    "CreateTopics": (ApiKey.CREATE_TOPICS, 7),
}
# Kafka's enum values on the wire.
TOPIC, CLUSTER = 2, 4
LITERAL, PREFIXED, MATCH = 3, 4, 1
ALLOW = 3
OP = {"ALL": 2, "READ": 3, "WRITE": 4, "CREATE": 5, "DELETE": 6, "ALTER": 7, "DESCRIBE": 8, "DESCRIBE_CONFIGS": 10,
      "ALTER_CONFIGS": 11}  # fmt: skip
_SIZE = struct.Struct(">i")


@dataclass(frozen=True)
class Params:
    quick: bool
    connections: int
    seconds: float
    brokers: int  # 0: one combined node
    seed: int

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> Params:
        return cls(
            quick=args.quick,
            connections=args.connections or (50 if args.quick else 200),
            seconds=args.seconds or (10.0 if args.quick else 60.0),
            brokers=args.brokers,
            seed=args.seed,
        )


# --- the nodes ----------------------------------------------------------------------------------------------


def jaas() -> str:
    users = " ".join(f'user_u{i}="{PASSWORD}"' for i in range(USERS))
    return (f'org.apache.kafka.common.security.plain.PlainLoginModule required username="{ADMIN[0]}" '
            f'password="{ADMIN[1]}" user_{ADMIN[0]}="{ADMIN[1]}" {users};')  # fmt: skip


def sasl_settings(workdir: Path, name: str) -> dict[str, str]:
    """SASL/PLAIN with the load's users, the StandardAuthorizer and the audit log."""
    return {
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": jaas(),
        "sasl.enabled.mechanisms": "PLAIN",
        "audit.log.dir": str(workdir / f"{name}-audit"),
    }


async def start_nodes(p: Params, workdir: Path) -> tuple[list[ServerProcess], list[ServerProcess]]:
    """(every node, the nodes clients connect to)."""
    if not p.brokers:
        node = ServerProcess(workdir, "combined", sasl=True, overrides=sasl_settings(workdir, "combined"))
        await node.start()
        return [node], [node]
    cluster_id = new_cluster_id()
    # The controller authorizes forwarded requests as the client (KIP-590): admin is a super user there too.
    controller = controller_node(workdir, "controller", cluster_id,
                                 overrides={"audit.log.dir": str(workdir / "controller-audit"),
                                            "super.users": f"{SECURITY['super.users']};User:{ADMIN[0]}"})  # fmt: skip
    await controller.start()
    brokers = []
    for i in range(p.brokers):
        name = f"broker{i + 2}"
        broker = broker_node(workdir, name, cluster_id, controller, i + 2)
        port = broker.port
        broker.extra.update(sasl_settings(workdir, name))
        broker.extra.update({
            "listeners": f"SASL_PLAINTEXT://127.0.0.1:{port}",
            "advertised.listeners": f"SASL_PLAINTEXT://127.0.0.1:{port}",
            "listener.security.protocol.map": "SASL_PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT",
            "inter.broker.listener.name": "SASL_PLAINTEXT",
            "super.users": f"{SECURITY['super.users']};User:{ADMIN[0]}",
        })  # fmt: skip
        brokers.append(broker)
    await asyncio.gather(*(b.start() for b in brokers))
    return [controller, *brokers], brokers


# --- the wire -----------------------------------------------------------------------------------------------


async def login(port: int, user: str, password: str) -> FrameClient:
    client = await FrameClient.connect(port)
    hs = encode_request(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"}, correlation_id=1)
    _, body = decode_response(ApiKey.SASL_HANDSHAKE, 1, await client.request(hs))
    assert int(body.error_code) == 0, body
    token = b"\0" + user.encode() + b"\0" + password.encode()
    auth = encode_request(ApiKey.SASL_AUTHENTICATE, 2, {"auth_bytes": token}, correlation_id=2)
    _, body = decode_response(ApiKey.SASL_AUTHENTICATE, 2, await client.request(auth))
    assert int(body.error_code) == 0, f"login as {user} failed: {body.error_message}"
    return client


def acl(resource_type: int, name: str, pattern: int, principal: str, operation: str) -> dict[str, Any]:
    return {"resource_type": resource_type, "resource_name": name, "resource_pattern_type": pattern,
            "principal": principal, "host": "*", "operation": OP[operation], "permission_type": ALLOW}  # fmt: skip


def user_acls(user: str) -> list[dict[str, Any]]:
    """What a load user may do: describe and configure the load's topics, create topics and ACLs."""
    principal = f"User:{user}"
    acls = [
        acl(TOPIC, prefix, PREFIXED, principal, op)
        for prefix in ("t", "load-")
        for op in ("DESCRIBE", "DESCRIBE_CONFIGS", "ALTER_CONFIGS", "CREATE")
    ]
    acls += [acl(CLUSTER, "kafka-cluster", LITERAL, principal, op) for op in ("ALTER", "DESCRIBE")]
    return acls  # fmt: skip


def setup_acls() -> list[dict[str, Any]]:
    """The 1,000 ACLs: the users' grants, and READ grants of other principals on the topics."""
    acls = [a for i in range(USERS) for a in user_acls(f"u{i}")]
    filler = ACLS - len(acls)
    acls += [acl(TOPIC, topic_name(i % TOPICS), LITERAL, f"User:reader{i}", "READ") for i in range(filler)]
    return acls


def topic_name(i: int) -> str:
    return f"t{i:03d}"


async def setup(port: int) -> None:
    admin = await login(port, *ADMIN)
    try:
        topics = [{"name": topic_name(i), "num_partitions": PARTITIONS, "replication_factor": 1, "assignments": [],
                   "configs": []} for i in range(TOPICS)]  # fmt: skip
        frame = encode_request(ApiKey.CREATE_TOPICS, 7, {"topics": topics, "timeout_ms": 30_000,
                                                         "validate_only": False}, correlation_id=3)  # fmt: skip
        _, body = decode_response(ApiKey.CREATE_TOPICS, 7, await admin.request(frame))
        bad = [t for t in body.topics if int(t.error_code) not in (0, 36)]  # 36: TOPIC_ALREADY_EXISTS
        assert not bad, bad[:3]
        acls = setup_acls()
        for start in range(0, len(acls), 250):
            frame = encode_request(ApiKey.CREATE_ACLS, 3, {"creations": acls[start : start + 250]}, correlation_id=4)
            _, body = decode_response(ApiKey.CREATE_ACLS, 3, await admin.request(frame))
            bad = [r for r in body.results if int(r.error_code)]
            assert not bad, bad[:3]
    finally:
        await admin.aclose()


class Mix:
    """One connection's operations: read frames are encoded once per topic, mutations as they are drawn."""

    _reads: dict[tuple[str, int], bytes] = {}

    def __init__(self, conn: int, user: str, seed: int) -> None:
        self.conn = conn
        self.user = user
        self.rng = random.Random(seed * 100_003 + conn)
        self.names = [name for name, _ in MIX]
        self.weights = [w for _, w in MIX]
        self.created: list[str] = []  # this connection's ACLs (resource names), for DeleteAcls
        self.count = 0

    def next(self) -> tuple[str, bytes]:
        name = self.rng.choices(self.names, self.weights)[0]
        self.count += 1
        return name, getattr(self, "_" + name)()

    @classmethod
    def _read(cls, name: str, topic: int, values: dict[str, Any]) -> bytes:
        frame = cls._reads.get((name, topic))
        if frame is None:
            frame = cls._reads[(name, topic)] = encode_request(*API_OF[name], values)
        return frame

    def _topic(self) -> int:
        return self.rng.randrange(TOPICS)

    def _Metadata(self) -> bytes:
        first = self._topic()
        topics = [{"name": topic_name((first + k) % TOPICS), "topic_id": uuid.UUID(int=0)} for k in range(3)]
        values = {"topics": topics, "allow_auto_topic_creation": False, "include_topic_authorized_operations": False}
        return self._read("Metadata", first, values)

    def _DescribeConfigs(self) -> bytes:
        topic = self._topic()
        resource = {"resource_type": TOPIC, "resource_name": topic_name(topic), "configuration_keys": None}
        values = {"resources": [resource], "include_synonyms": False, "include_documentation": False}
        return self._read("DescribeConfigs", topic, values)

    def _DescribeAcls(self) -> bytes:
        topic = self._topic()
        values = {"resource_type_filter": TOPIC, "resource_name_filter": topic_name(topic),
                  "pattern_type_filter": MATCH, "principal_filter": None, "host_filter": None, "operation": 1,
                  "permission_type": 1}  # fmt: skip
        return self._read("DescribeAcls", topic, values)

    def _CreateAcls(self) -> bytes:
        name = f"load-acl-{self.conn}-{self.count}"
        self.created.append(name)
        return encode_request(*API_OF["CreateAcls"], {"creations": [self._acl(name)]})

    def _DeleteAcls(self) -> bytes:
        name = self.created.pop(0) if self.created else f"load-acl-{self.conn}-none"
        entry = self._acl(name)
        filt = {"resource_type_filter": TOPIC, "resource_name_filter": name, "pattern_type_filter": LITERAL,
                "principal_filter": entry["principal"], "host_filter": "*", "operation": entry["operation"],
                "permission_type": ALLOW}  # fmt: skip
        return encode_request(*API_OF["DeleteAcls"], {"filters": [filt]})

    def _IncrementalAlterConfigs(self) -> bytes:
        config = {"name": "retention.ms", "config_operation": 0, "value": str(self.rng.randrange(3_600_000, 10**9))}
        resource = {"resource_type": TOPIC, "resource_name": topic_name(self._topic()), "configs": [config]}
        return encode_request(*API_OF["IncrementalAlterConfigs"], {"resources": [resource], "validate_only": False})

    def _CreateTopics(self) -> bytes:
        topic = {"name": f"load-{self.conn}-{self.count}", "num_partitions": 1, "replication_factor": 1,
                 "assignments": [], "configs": []}  # fmt: skip
        return encode_request(
            *API_OF["CreateTopics"], {"topics": [topic], "timeout_ms": 30_000, "validate_only": False}
        )

    def _acl(self, name: str) -> dict[str, Any]:
        return acl(TOPIC, name, LITERAL, f"User:{self.user}", "READ")


# --- the run ------------------------------------------------------------------------------------------------


@dataclass
class Sample:
    op: str
    latency_ns: int
    payload: bytes


async def run_connection(client: FrameClient, mix: Mix, go: asyncio.Event, stop_ns: list[int],
                         out: list[Sample]) -> None:  # fmt: skip
    clock = time.perf_counter_ns
    await go.wait()
    cid = 100
    while clock() < stop_ns[0]:
        op, frame = mix.next()
        cid += 1
        frame = with_correlation_id(frame, cid)
        started = clock()
        payload = await client.send(frame)
        out.append(Sample(op, clock() - started, payload))


def error_codes(op: str, payload: bytes) -> list[int]:
    """The response's error codes, top level and per entry (0 for success)."""
    _, body = decode_response(*API_OF[op], payload)
    codes = [int(body.error_code)] if hasattr(body, "error_code") else []
    for field in ("topics", "results", "responses", "filter_results"):
        for entry in getattr(body, field, ()) or ():
            if hasattr(entry, "error_code"):
                codes.append(int(entry.error_code))
    return codes


OP_COLUMNS = [("operation", "op"), ("count", "count"), ("share", "share"), ("errors", "errors"),
              ("p50 ms", "p50_ms"), ("p99 ms", "p99_ms"), ("max ms", "max_ms")]  # fmt: skip


async def section_load(p: Params, workdir: Path) -> dict[str, Any]:
    nodes, serving = await start_nodes(p, workdir)
    await setup(serving[0].port)
    if p.brokers:  # every broker has the setup before the clock starts
        await asyncio.gather(*(wait_for_topics(b.port) for b in serving))
    clients = []
    mixes = []
    for conn in range(p.connections):
        user = f"u{conn % USERS}"
        clients.append(await login(serving[conn % len(serving)].port, user, PASSWORD))
        mixes.append(Mix(conn, user, p.seed))
    samples: list[list[Sample]] = [[] for _ in clients]
    go = asyncio.Event()
    stop_ns = [0]
    work = zip(clients, mixes, samples, strict=True)
    tasks = [asyncio.create_task(run_connection(c, m, go, stop_ns, s)) for c, m, s in work]
    cpu0 = [n.cpu_seconds() for n in nodes]
    client0 = client_cpu_seconds()
    began = time.perf_counter()
    stop_ns[0] = time.perf_counter_ns() + int(p.seconds * 1e9)
    go.set()
    await asyncio.gather(*tasks)
    wall = time.perf_counter() - began
    cpu = [n.cpu_seconds() - c for n, c in zip(nodes, cpu0, strict=True)]
    client_cpu = client_cpu_seconds() - client0
    for c in clients:
        await c.aclose()
    by_op: dict[str, list[Sample]] = defaultdict(list)
    for s in (s for conn in samples for s in conn):
        by_op[s.op].append(s)
    total = sum(len(v) for v in by_op.values())
    rows = []
    for op, _ in MIX:
        got = by_op.get(op, [])
        lat = [s.latency_ns for s in got]
        errors = sum(1 for s in got if any(error_codes(op, s.payload)))
        rows.append({"op": op, "count": len(got), "share": f"{len(got) / max(total, 1):.0%}", "errors": errors,
                     "p50_ms": round(percentile_ms(lat, 50), 2), "p99_ms": round(percentile_ms(lat, 99), 2),
                     "max_ms": round(max(lat) / 1e6, 2) if lat else 0.0})  # fmt: skip
    for n in nodes:
        await n.stop()
    per_s = total / wall
    cores = [round(c / wall, 3) for c in cpu]
    print()
    where = f"{p.brokers} brokers and a controller" if p.brokers else "one combined node"
    print(table(f"Mixed load: {p.connections} SASL connections, {p.seconds:.0f} s, {where}", OP_COLUMNS, rows))
    print(f"\n  {total:,} operations in {wall:.1f} s: {per_s:,.0f} operations/s; server CPU "
          f"{' + '.join(f'{c:.2f}' for c in cores)} cores ({', '.join(n.name for n in nodes)}); "
          f"load generator {client_cpu / wall:.2f} cores")  # fmt: skip
    worst_p99 = max((r["p99_ms"] for r in rows), default=0.0)
    print(f"  goal: >= 2,500 operations/s with every p99 <= 250 ms: {per_s:,.0f}/s, worst p99 {worst_p99} ms")
    problems = [f"{r['op']}: {r['errors']} responses with an error" for r in rows if r["errors"]]
    problems += [f"{n.name} log: {line}" for n in nodes for line in n.log_errors()]
    warn(problems)
    return {"operations": total, "wall_s": round(wall, 2), "operations_per_s": round(per_s, 1),
            "worst_p99_ms": worst_p99, "server_cores": dict(zip((n.name for n in nodes), cores, strict=True)),
            "server_cpu_ms_per_op": round(sum(cpu) / max(total, 1) * 1000, 3),
            "client_cores": round(client_cpu / wall, 3), "operations_by_type": rows, "problems": problems}  # fmt: skip


async def wait_for_topics(port: int) -> None:
    """Wait until a broker's Metadata shows the setup's topics (it follows the controller's log)."""
    client = await login(port, *ADMIN)
    values = {"topics": None, "allow_auto_topic_creation": False, "include_topic_authorized_operations": False}
    frame = encode_request(ApiKey.METADATA, 12, values)
    try:
        for attempt in range(600):
            _, body = decode_response(ApiKey.METADATA, 12, await client.request(with_correlation_id(frame, attempt)))
            if len(body.topics) >= TOPICS:
                return
            await asyncio.sleep(0.05)  # polling a condition, not synchronising on time
        raise RuntimeError(f"broker on port {port} never showed the {TOPICS} topics")
    finally:
        await client.aclose()


# --- main ---------------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    p = Params.from_args(args)
    name = "load.cluster" if p.brokers else "load"
    benchmark = Benchmark(name, "mixed-load", section_timeout_s=None)
    return benchmark.main(args, p, {"load": section_load})


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    out = parser(__doc__, "load", "50 connections for 10 seconds")
    add = out.add_argument
    add("--connections", type=int, help="client connections (default 200, quick 50)")
    add("--seconds", type=float, help="length of the run (default 60, quick 10)")
    add("--brokers", type=int, default=0, help="run a controller and this many brokers instead of one node")
    add("--seed", type=int, default=17, help="seed of the operation draws (default 17)")
    args = out.parse_args(argv)
    if args.brokers and args.out.name == "load.json":
        args.out = args.out.with_name("load.cluster.json")
    return args


if __name__ == "__main__":
    sys.exit(main())
