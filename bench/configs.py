"""Config administration benchmarks against a real server over PLAINTEXT.

    .venv/bin/python -m bench.configs            # 7 timed requests per measure (about a minute on 2 cores)
    .venv/bin/python -m bench.configs --quick    # 3 per measure

One fresh server gets 1,000 topics (one CreateTopics; every other topic carries a ``retention.ms``
override). Then, each request pre-encoded with kio before the clock starts and timed from sending it to
having its whole response on one connection:

1. ``describe``: one DescribeConfigs v4 naming all 1,000 topics, without and with synonyms (every
   topic's 33 configs: 33,000 entries per response). Every result must be error 0 with 33 entries.
2. ``describe (confluent-kafka)``: the same through confluent-kafka's ``AdminClient.describe_configs``,
   end to end, its own decoding included (librdkafka asks without synonyms).
3. ``alter``: one IncrementalAlterConfigs v1 of 1,000 TOPIC resources, each a SET of ``retention.ms``
   to a value new in that round, so every round writes 1,000 ConfigRecords, acknowledged only after they
   are fsynced (the server replies after the batch is durable). Every result must be error 0, and a
   DescribeConfigs afterwards must show the last round's values.

4. ``encode``: offline, no server: the same 1,000-topic response encoded by kio (the generic path the
   handler used first) and by ``protocol.fast_describe_configs`` (the one it uses), side by side in the
   same run, with the ratio. The two must be byte-identical.

Reported as latency (median, min, max) and as entries (or resources) per second. Prints a table and
writes ``bench/results/configs.json``.
"""

from __future__ import annotations

import asyncio
import shutil
import sys
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

from bench._harness.report import median, table, write_document
from bench._harness.runner import Benchmark, parser
from bench._harness.server import ServerProcess, kill_all_servers
from bench._harness.wire import FrameClient, decode_response, encode_request
from ksteward.protocol.apis import ApiKey

TOPIC = 2
TOPICS = 1_000
TOPIC_KEYS = 33  # every topic config of Kafka 4.x that ksteward's catalog lists


def topic_names() -> list[str]:
    return [f"bench-configs-{i:04d}" for i in range(TOPICS)]


def create_frame() -> bytes:
    topics = [
        {
            "name": name,
            "num_partitions": 1,
            "replication_factor": 1,
            "assignments": [],
            "configs": [{"name": "retention.ms", "value": "86400000"}] if i % 2 else [],
        }
        for i, name in enumerate(topic_names())
    ]
    return encode_request(
        ApiKey.CREATE_TOPICS, 7, {"topics": topics, "timeout": timedelta(seconds=60), "validate_only": False}
    )


def describe_frame(synonyms: bool) -> bytes:
    resources = [{"resource_type": TOPIC, "resource_name": n, "configuration_keys": None} for n in topic_names()]
    body = {"resources": resources, "include_synonyms": synonyms, "include_documentation": False}
    return encode_request(ApiKey.DESCRIBE_CONFIGS, 4, body)


def alter_frame(round_: int) -> bytes:
    resources = [
        {
            "resource_type": TOPIC,
            "resource_name": name,
            "configs": [{"name": "retention.ms", "config_operation": 0, "value": str(3_600_000 + round_ * 1000 + i)}],
        }
        for i, name in enumerate(topic_names())
    ]
    return encode_request(ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, {"resources": resources, "validate_only": False})


async def timed(client: FrameClient, frame: bytes) -> tuple[float, bytes]:
    started = time.perf_counter()
    payload = await client.request(frame, timeout=300)
    return time.perf_counter() - started, payload


def check_describe(payload: bytes) -> int:
    _, body = decode_response(ApiKey.DESCRIBE_CONFIGS, 4, payload)
    assert len(body.results) == TOPICS, len(body.results)
    entries = 0
    for result in body.results:
        assert int(result.error_code) == 0, result
        assert len(result.configs) == TOPIC_KEYS, (result.resource_name, len(result.configs))
        entries += len(result.configs)
    return entries


def check_alter(payload: bytes) -> None:
    _, body = decode_response(ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, payload)
    assert len(body.responses) == TOPICS
    assert all(int(r.error_code) == 0 for r in body.responses), [r for r in body.responses if r.error_code][:3]


def summarize(name: str, seconds: list[float], units: int, unit: str, extra: dict[str, Any]) -> dict[str, Any]:
    mid = median(seconds)
    return {
        "measure": name,
        "requests": len(seconds),
        "median_ms": round(mid * 1000, 1),
        "min_ms": round(min(seconds) * 1000, 1),
        "max_ms": round(max(seconds) * 1000, 1),
        f"{unit}_per_request": units,
        f"{unit}_per_s": round(units / mid),
        **extra,
    }


def encoder_rows(rounds: int) -> list[dict[str, Any]]:
    """kio's generic encoder against the direct one, on the server's own views of 1,000 topics."""
    from kio.schema.errors import ErrorCode

    from ksteward.configs.resolve import ConfigResolver
    from ksteward.protocol.build import build
    from ksteward.protocol.codec import encode_response, response_class
    from ksteward.protocol.fast_describe_configs import encode_describe_configs_response

    resolver = ConfigResolver()
    rows = [
        (ErrorCode.none, "", TOPIC, name, resolver.describe_topic({"retention.ms": "86400000"} if i % 2 else {}))
        for i, name in enumerate(topic_names())
    ]

    def kio() -> bytes:
        results = [
            {"error_code": code, "error_message": message, "resource_type": rtype, "resource_name": name,
             "configs": [{"name": v.name, "value": v.value, "read_only": v.read_only,
                          "config_source": int(v.source), "is_sensitive": v.is_sensitive, "synonyms": [],
                          "config_type": int(v.config_type), "documentation": None} for v in views]}
            for code, message, rtype, name, views in rows
        ]  # fmt: skip
        frame = encode_response(
            ApiKey.DESCRIBE_CONFIGS, 4, 7, build(response_class(ApiKey.DESCRIBE_CONFIGS, 4), {"results": results})
        )
        return frame

    def direct() -> bytes:
        return encode_describe_configs_response(4, 7, rows)

    assert kio() == direct(), "the direct encoder is not byte-identical to kio"
    out = []
    medians = {}
    for label, fn in (("kio", kio), ("direct", direct)):
        seconds = []
        for _ in range(rounds):
            started = time.perf_counter()
            fn()
            seconds.append(time.perf_counter() - started)
        medians[label] = median(seconds)
        out.append(summarize(f"encode 1,000-topic reply: {label}", seconds, TOPICS * TOPIC_KEYS, "entries", {}))
    out[-1]["speedup_vs_kio"] = round(medians["kio"] / medians["direct"], 1)
    return out


def confluent_describe(bootstrap: str, rounds: int) -> list[float]:
    from confluent_kafka.admin import AdminClient, ConfigResource, ResourceType

    admin = AdminClient({"bootstrap.servers": bootstrap, "client.id": "ksteward-bench"})
    resources = [ConfigResource(ResourceType.TOPIC, n) for n in topic_names()]
    seconds = []
    for _ in range(rounds):
        started = time.perf_counter()
        futures = admin.describe_configs(resources, request_timeout=120)
        described = [f.result() for f in futures.values()]
        seconds.append(time.perf_counter() - started)
        assert len(described) == TOPICS and all(len(d) == TOPIC_KEYS for d in described)
    return seconds


async def run(workdir: Path, rounds: int) -> list[dict[str, Any]]:
    server = ServerProcess(workdir, "configs")
    await server.start()
    rows: list[dict[str, Any]] = []
    try:
        client = await FrameClient.connect(server.port)
        _, created = await timed(client, create_frame())
        _, body = decode_response(ApiKey.CREATE_TOPICS, 7, created)
        assert all(int(t.error_code) == 0 for t in body.topics)
        for synonyms in (False, True):
            frame = describe_frame(synonyms)
            await timed(client, frame)  # warm-up: the first describe builds the shared entry views
            seconds, size, entries = [], 0, 0
            for _ in range(rounds):
                elapsed, payload = await timed(client, frame)
                seconds.append(elapsed)
                size, entries = len(payload), check_describe(payload)
            label = f"DescribeConfigs 1,000 topics, {'with' if synonyms else 'no'} synonyms"
            rows.append(summarize(label, seconds, entries, "entries", {"response_bytes": size}))
        seconds = []
        for round_ in range(rounds):
            frame = alter_frame(round_)
            elapsed, payload = await timed(client, frame)
            check_alter(payload)
            seconds.append(elapsed)
        _, payload = await timed(client, describe_frame(False))
        _, body = decode_response(ApiKey.DESCRIBE_CONFIGS, 4, payload)
        last = {r.resource_name: {c.name: c.value for c in r.configs}["retention.ms"] for r in body.results}
        expected = {n: str(3_600_000 + (rounds - 1) * 1000 + i) for i, n in enumerate(topic_names())}
        assert last == expected, "the last IncrementalAlterConfigs round is not what DescribeConfigs shows"
        rows.append(
            summarize(
                "IncrementalAlterConfigs 1,000 topics, durable", seconds, TOPICS, "resources", {"records": TOPICS}
            )
        )
        await client.aclose()
        bootstrap = f"127.0.0.1:{server.port}"
        seconds = await asyncio.to_thread(confluent_describe, bootstrap, rounds)
        rows.append(summarize("DescribeConfigs 1,000 topics via confluent-kafka", seconds, TOPICS * TOPIC_KEYS,
                              "entries", {}))  # fmt: skip
        errors = server.log_errors()
        if errors:
            raise AssertionError(f"server logged errors: {errors[:3]}")
    finally:
        await server.stop()
    return rows


def main(argv: list[str] | None = None) -> int:
    args = parser(__doc__, "configs", "3 timed requests per measure instead of 7").parse_args(argv)
    rounds = 3 if args.quick else 7
    bench = Benchmark("configs", "config")
    facts = bench.header(args.quick)
    workdir = bench.workdir()
    began = time.perf_counter()
    try:
        rows = asyncio.run(run(workdir, rounds))
    finally:
        kill_all_servers()
        if args.keep:
            print(f"kept {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    rows += encoder_rows(rounds)
    columns = [("measure", "measure"), ("median ms", "median_ms"), ("min ms", "min_ms"), ("max ms", "max_ms")]
    columns += [("entries/s", "entries_per_s"), ("resources/s", "resources_per_s"), ("bytes", "response_bytes")]
    columns += [("x kio", "speedup_vs_kio")]
    print(table("\nConfig RPCs, one request at a time on one connection", columns, rows))
    total_s = round(time.perf_counter() - began, 1)
    write_document(args.out, "configs", {"machine": facts, "rounds": rounds, "total_s": total_s, "results": rows})
    print(f"\nwrote {args.out} ({total_s}s in all)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
