"""The four real Kafka clients behind one small interface, for the interoperability tests.

``cluster_views(client, bootstrap, auth)`` connects with that client the way an application would
and returns what the client itself reports about the cluster (``ClusterView`` per source: the
Metadata it bootstrapped from and, for kafka-python, DescribeCluster too). A refusal is raised as
``ClientRefused`` carrying every error the client exposed (exceptions, error callbacks, its log), so
a test can tell an authentication failure from a timeout.

Timeouts and retries are kept small so refusals are fast; none of them is used to synchronise.
"""

from __future__ import annotations

import asyncio
import json
import logging
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CLIENTS = ("confluent-kafka", "kafka-python", "aiokafka", "kafkajs")
MECHANISMS = ("PLAINTEXT", "PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
JS_CLIENT = Path(__file__).resolve().parents[1] / "js" / "client.js"

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Auth:
    """How a client logs in: ``mechanism=None`` means PLAINTEXT (no SASL)."""

    mechanism: str | None = None
    username: str = ""
    password: str = ""

    @property
    def security_protocol(self) -> str:
        return "PLAINTEXT" if self.mechanism is None else "SASL_PLAINTEXT"


@dataclass(frozen=True)
class ClusterView:
    cluster_id: str | None
    controller_id: int | None
    brokers: frozenset[tuple[int, str, int]]  # (node id, host, port)


@dataclass
class ClientRefused(Exception):
    """The client could not get metadata. ``errors`` is everything it told us about why."""

    client: str
    summary: str
    errors: list[str] = field(default_factory=list)
    auth_failure: bool = False  # the client itself reported an authentication failure

    def __str__(self) -> str:
        detail = "\n  ".join(self.errors[:20])
        return (
            f"{self.client} refused ({'authentication failure' if self.auth_failure else 'other'}): "
            f"{self.summary}\n  {detail}"
        )


class _Collect(logging.Handler):
    """Collects WARNING and above from any thread (the clients log from their I/O threads)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.records: list[logging.LogRecord] = []
        self._lock_records = threading.Lock()

    def emit(self, record: logging.LogRecord) -> None:
        with self._lock_records:
            self.records.append(record)


@contextmanager
def _capture(logger_name: str) -> Iterator[_Collect]:
    logger = logging.getLogger(logger_name)
    handler = _Collect()
    old_level = logger.level
    logger.addHandler(handler)
    if logger.getEffectiveLevel() > logging.WARNING:
        logger.setLevel(logging.WARNING)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)
        logger.setLevel(old_level)


def _describe(exc: BaseException) -> str:
    text = str(exc)
    name = type(exc).__name__
    return text if text.startswith(name) else f"{name}: {text}"


def _records_with(handler: _Collect, exc_type: type[BaseException]) -> list[str]:
    """Log records that carry an ``exc_type`` instance among their arguments."""
    found = []
    for r in handler.records:
        args = r.args if isinstance(r.args, tuple) else (r.args,)
        if any(isinstance(a, exc_type) for a in args) or (r.exc_info and isinstance(r.exc_info[1], exc_type)):
            found.append(f"{r.name}: {r.getMessage()}")
    return found


# --- confluent-kafka (librdkafka) ------------------------------------------------------------------


def confluent_config(bootstrap: str, auth: Auth, **extra: Any) -> dict[str, Any]:
    conf: dict[str, Any] = {
        "bootstrap.servers": bootstrap,
        "client.id": "ksteward-confluent-test",
        "socket.timeout.ms": 5000,
        "socket.connection.setup.timeout.ms": 5000,
        "reconnect.backoff.ms": 100,
        "reconnect.backoff.max.ms": 500,
        "logger": logging.getLogger("librdkafka"),
        "security.protocol": auth.security_protocol,
    }
    if auth.mechanism is not None:
        conf.update({"sasl.mechanism": auth.mechanism, "sasl.username": auth.username, "sasl.password": auth.password})
    conf.update(extra)
    return conf


def confluent_admin(bootstrap: str, auth: Auth, errors: list[Any] | None = None, **extra: Any) -> Any:
    """An AdminClient; ``extra`` is more librdkafka configuration."""
    from confluent_kafka.admin import AdminClient

    sink = errors if errors is not None else []
    return AdminClient(confluent_config(bootstrap, auth, error_cb=sink.append, **extra))


def _confluent(bootstrap: str, auth: Auth, timeout: float) -> dict[str, ClusterView]:
    from confluent_kafka import KafkaError, KafkaException

    errors: list[KafkaError] = []
    admin = confluent_admin(bootstrap, auth, errors)
    deadline = time.monotonic() + timeout
    last: KafkaException | None = None
    while True:
        try:
            md = admin.list_topics(timeout=1.0)
            break
        except KafkaException as exc:
            last = exc
        admin.poll(0)  # serves error_cb
        if errors or time.monotonic() >= deadline:
            admin.poll(0.2)
            details = [f"error_cb: {e.name()} ({e.code()}): {e.str()}" for e in errors]
            if last is not None:
                err = last.args[0]
                details.append(f"list_topics: {err.name()} ({err.code()}): {err.str()}")
            auth_failed = any(e.code() == KafkaError._AUTHENTICATION for e in errors) or (
                last is not None and last.args[0].code() == KafkaError._AUTHENTICATION
            )
            raise ClientRefused("confluent-kafka", "list_topics failed", details, auth_failed)
    return {
        "Metadata": ClusterView(
            cluster_id=md.cluster_id,
            controller_id=md.controller_id,
            brokers=frozenset((b.id, b.host, b.port) for b in md.brokers.values()),
        )
    }


# --- kafka-python -------------------------------------------------------------------------------------


def kafka_python_admin(bootstrap: str, auth: Auth, bootstrap_timeout_ms: int = 10000) -> Any:
    from kafka.admin import KafkaAdminClient

    kwargs: dict[str, Any] = {
        "bootstrap_servers": bootstrap,
        "client_id": "ksteward-kafka-python-test",
        "request_timeout_ms": 5000,
        "bootstrap_timeout_ms": bootstrap_timeout_ms,
        "reconnect_backoff_ms": 200,
        "reconnect_backoff_max_ms": 500,
        "security_protocol": auth.security_protocol,
    }
    if auth.mechanism is not None:
        kwargs.update(
            sasl_mechanism=auth.mechanism, sasl_plain_username=auth.username, sasl_plain_password=auth.password
        )
    return KafkaAdminClient(**kwargs)


def _kafka_python(bootstrap: str, auth: Auth, timeout: float) -> dict[str, ClusterView]:
    from kafka.errors import KafkaError, SaslAuthenticationFailedError

    with _capture("kafka") as logs:
        try:
            admin = kafka_python_admin(bootstrap, auth, bootstrap_timeout_ms=int(timeout * 1000))
        except KafkaError as exc:
            auth_errors = _records_with(logs, SaslAuthenticationFailedError)
            raise ClientRefused(
                "kafka-python",
                _describe(exc),
                auth_errors or [r.getMessage() for r in logs.records[-10:]],
                bool(auth_errors),
            ) from exc
    try:
        cluster = admin._manager.cluster  # what it bootstrapped from (Metadata v13): the client's own state
        controller = cluster.controller
        bootstrap_view = ClusterView(
            cluster_id=cluster.cluster_id,
            controller_id=None if controller is None else controller.node_id,
            brokers=frozenset((b.node_id, b.host, b.port) for b in cluster.brokers()),
        )
        described = admin.describe_cluster()  # DescribeCluster v2
        describe_view = ClusterView(
            cluster_id=described["cluster_id"],
            controller_id=described["controller_id"],
            brokers=frozenset(
                (b.get("broker_id", b.get("node_id")), b["host"], b["port"]) for b in described["brokers"]
            ),
        )
    finally:
        admin.close()
    return {"Metadata": bootstrap_view, "DescribeCluster": describe_view}


# --- aiokafka ----------------------------------------------------------------------------------------


def aiokafka_admin(bootstrap: str, auth: Auth) -> Any:
    from aiokafka.admin import AIOKafkaAdminClient

    kwargs: dict[str, Any] = {
        "bootstrap_servers": bootstrap,
        "client_id": "ksteward-aiokafka-test",
        "request_timeout_ms": 5000,
        "security_protocol": auth.security_protocol,
    }
    if auth.mechanism is not None:
        kwargs.update(
            sasl_mechanism=auth.mechanism, sasl_plain_username=auth.username, sasl_plain_password=auth.password
        )
    return AIOKafkaAdminClient(**kwargs)


def _aiokafka(bootstrap: str, auth: Auth, timeout: float) -> dict[str, ClusterView]:
    from aiokafka.errors import KafkaError, SaslAuthenticationFailed

    async def run() -> dict[str, Any]:
        admin = aiokafka_admin(bootstrap, auth)
        try:
            await asyncio.wait_for(admin.start(), timeout)
            return await asyncio.wait_for(admin.describe_cluster(), timeout)
        finally:
            await admin.close()

    with _capture("aiokafka") as logs:
        try:
            described = asyncio.run(run())
        except (KafkaError, TimeoutError) as exc:
            auth_errors = _records_with(logs, SaslAuthenticationFailed)
            raise ClientRefused(
                "aiokafka",
                _describe(exc),
                auth_errors or [r.getMessage() for r in logs.records[-10:]],
                bool(auth_errors),
            ) from exc
    return {
        "Metadata": ClusterView(
            cluster_id=described["cluster_id"],
            controller_id=described["controller_id"],
            brokers=frozenset((b["node_id"], b["host"], b["port"]) for b in described["brokers"]),
        )
    }


# --- kafkajs ------------------------------------------------------------------------------------------


def kafkajs(job: dict[str, Any], timeout: float = 60.0) -> dict[str, Any]:
    """Run tests/js/client.js with ``job``; its one JSON line, parsed ({"ok": ..., "result"|"error": ...})."""
    proc = subprocess.run(
        ["node", str(JS_CLIENT), json.dumps(job)],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=JS_CLIENT.parent,
        check=False,
    )
    lines = [line for line in proc.stdout.splitlines() if line.strip()]
    if len(lines) != 1:
        raise AssertionError(
            f"client.js printed {len(lines)} lines (exit {proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
        )
    result: dict[str, Any] = json.loads(lines[0])
    if result["ok"] != (proc.returncode == 0):
        raise AssertionError(f"client.js exit code {proc.returncode} disagrees with {lines[0]}")
    return result


def kafkajs_auth(auth: Auth) -> dict[str, str] | None:
    if auth.mechanism is None:
        return None
    return {"mechanism": auth.mechanism.lower(), "username": auth.username, "password": auth.password}


def _error_chain(error: dict[str, Any] | None) -> Iterator[dict[str, Any]]:
    while error:
        yield error
        error = error.get("cause")


def _kafkajs(bootstrap: str, auth: Auth, timeout: float) -> dict[str, ClusterView]:
    out = kafkajs({"brokers": [bootstrap], "sasl": kafkajs_auth(auth), "action": "metadata"}, timeout=timeout + 30)
    if not out["ok"]:
        chain = list(_error_chain(out["error"]))
        details = [f"{e['name']}: {e['message']}" for e in chain]
        auth_failed = any(e["name"] == "KafkaJSSASLAuthenticationError" for e in chain)
        raise ClientRefused("kafkajs", details[0], details, auth_failed)
    r = out["result"]
    return {
        "Metadata": ClusterView(
            cluster_id=r["clusterId"],
            controller_id=r["controller"],
            brokers=frozenset((b["nodeId"], b["host"], b["port"]) for b in r["brokers"]),
        )
    }


_DRIVERS = {"confluent-kafka": _confluent, "kafka-python": _kafka_python, "aiokafka": _aiokafka, "kafkajs": _kafkajs}


def cluster_views(client: str, bootstrap: str, auth: Auth, timeout: float = 10.0) -> dict[str, ClusterView]:
    """Connect with ``client`` and return what it reports about the cluster, per source.

    Raises :class:`ClientRefused` if the client gets no metadata within about ``timeout`` seconds.
    """
    return _DRIVERS[client](bootstrap, auth, timeout)
