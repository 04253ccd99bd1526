"""The real client libraries as the benchmarks drive them: blocking calls, which the benchmarks make in
a worker thread (``cpu.timed_in_thread``) so that the event loop keeps draining the servers' logs."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from bench._harness.wire import REQUEST_TIMEOUT_S


def confluent_admin(bootstrap: str, *, sasl_plain: tuple[str, str] | None = None) -> Any:
    """A confluent-kafka ``AdminClient``; with ``sasl_plain`` = (user, password), over SASL_PLAINTEXT."""
    from confluent_kafka.admin import AdminClient

    conf: dict[str, Any] = {
        "bootstrap.servers": bootstrap, "client.id": "ksteward-bench-confluent",
        "socket.timeout.ms": int(REQUEST_TIMEOUT_S * 1000), "logger": logging.getLogger("librdkafka"),
    }  # fmt: skip
    if sasl_plain is not None:
        user, password = sasl_plain
        conf |= {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN", "sasl.username": user,
                 "sasl.password": password}  # fmt: skip
    return AdminClient(conf)


def wait_all(futures: Mapping[Any, Any]) -> tuple[int, list[str]]:
    """(succeeded, distinct errors) of confluent-kafka's per-entry futures, once every one is done."""
    ok, errors = 0, set()
    for future in futures.values():
        try:
            future.result()
            ok += 1
        except Exception as exc:  # each entry's future carries its own error
            errors.add(repr(exc))
    return ok, sorted(errors)


def client_versions(*, kafka_python: bool = False) -> dict[str, str]:
    """The versions of the client libraries a benchmark drives."""
    import confluent_kafka

    version: Any = confluent_kafka.version()  # a (str, int) tuple in older releases, a str in newer ones
    out = {"confluent-kafka": str(version[0] if isinstance(version, tuple) else version),
           "librdkafka": str(confluent_kafka.libversion()[0])}  # fmt: skip
    if kafka_python:
        import kafka

        out = {"kafka-python": str(kafka.__version__), **out}
    return out
