"""Snapshots for the benchmarks: a realistic mix of metadata records, and a data directory whose
newest snapshot holds them, written with ``MetadataLog.write_snapshot`` as the server would read it."""

from __future__ import annotations

import asyncio
import itertools
import logging
import random
import time
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from kio.schema.types import BrokerId, TopicName
from kio.static.primitive import i8, i32

from bench._harness.server import ServerProcess
from ksteward.metadata.loader import load
from ksteward.metadata.records import (
    AccessControlEntryRecord,
    ConfigRecord,
    MetadataRecord,
    NoOpRecord,
    PartitionRecord,
    TopicRecord,
    encode_record,
)

log = logging.getLogger("bench")


def topic_name(index: int) -> str:
    return f"bench-topic-{index:07d}"


def generated_records(
    topics: int, configs: int, acls: int, seed: int = 7, principals: int = 1000
) -> Iterator[MetadataRecord]:
    """A realistic mix in Kafka's snapshot order: each TopicRecord followed by its three
    PartitionRecords, then TOPIC ConfigRecords (three keys per topic), then topic ACLs (READ, WRITE,
    DESCRIBE; one in ten PREFIXED) for ``principals`` principals. With few principals, ACLs repeat once
    the (topic, principal, operation) cycle wraps; ``principals >= acls`` makes every one distinct."""
    rng = random.Random(seed)
    leader, isr = BrokerId(1), (i32(1),)
    for t in range(topics):
        topic_id = uuid.UUID(int=rng.getrandbits(128), version=4)
        yield TopicRecord(name=TopicName(topic_name(t)), topic_id=topic_id)
        for p in range(3):
            yield PartitionRecord(partition_id=i32(p), topic_id=topic_id, replicas=(leader,), isr=isr,
                                  leader=leader, leader_epoch=i32(0), partition_epoch=i32(0))  # fmt: skip
    keys = (("cleanup.policy", "delete"), ("min.insync.replicas", "1"), ("retention.ms", "604800000"))
    for c in range(configs):
        key, value = keys[c % 3]
        name = topic_name(c // 3 % max(topics, 1))
        yield ConfigRecord(resource_type=i8(2), resource_name=name, name=key, value=value)
    for a in range(acls):
        prefixed = a % 10 == 9
        name = topic_name(a // 3 % max(topics, 1))
        yield AccessControlEntryRecord(
            id=uuid.UUID(int=rng.getrandbits(128), version=4),
            resource_type=i8(2),  # TOPIC
            resource_name=name[:14] if prefixed else name,
            pattern_type=i8(4 if prefixed else 3),  # PREFIXED, LITERAL
            principal=f"User:app-{a % principals:04d}",
            host="*",
            operation=i8((3, 4, 8)[a % 3]),  # READ, WRITE, DESCRIBE
            permission_type=i8(3),  # ALLOW
        )


@dataclass
class SnapshotBuild:
    data_dir: Path
    path: Path
    records: int
    bytes: int
    seconds: float
    end_offset: int


async def build_snapshot_dir(
    workdir: Path, name: str, ports: tuple[int, int], topics: int, configs: int, acls: int, principals: int = 1000
) -> SnapshotBuild:
    """A data directory whose newest snapshot holds the server's own records plus generated ones.

    A first start (on ``ports``) creates ``meta.properties``, finalizes metadata.version and
    registers the broker; later starts must use the same ports, or the broker registers again (a
    new record, and a new snapshot at shutdown). Then ``append_snapshot`` writes the snapshot.
    """
    server = ServerProcess(workdir, f"{name}-bootstrap", data_dir=workdir / name, ports=ports)
    await bootstrap(server)
    generated = generated_records(topics, configs, acls, principals=principals)
    return await asyncio.to_thread(append_snapshot, server.data_dir, generated)


async def bootstrap(server: ServerProcess) -> None:
    """Start ``server`` on its empty data directory and stop it: it formats the directory and writes what a
    first start writes (metadata.version, registrations) and a shutdown snapshot."""
    try:
        await server.start()
        await server.stop()
    finally:
        server.kill()


def append_snapshot(data_dir: Path, generated: Iterable[MetadataRecord]) -> SnapshotBuild:
    """With the server stopped, one NoOpRecord moves the log end past the server's own shutdown snapshot,
    and ``MetadataLog.write_snapshot`` writes a new snapshot at that end offset: the image's own records
    (metadata.version first), then ``generated``. The segments it covers stay."""
    image, metadata_log = load(data_dir, log)
    try:
        base = list(image.records())
        epoch = max(metadata_log.last_epoch, 1)
        now = int(time.time() * 1000)
        metadata_log.append([encode_record(NoOpRecord())], timestamp_ms=now, leader_epoch=epoch)
        metadata_log.flush()
        end_offset = metadata_log.next_offset
        count = 0

        def values() -> Iterator[bytes]:
            nonlocal count
            for record in itertools.chain(base, generated):
                count += 1
                yield encode_record(record)

        started = time.perf_counter()
        path = metadata_log.write_snapshot(end_offset, epoch, values(), last_contained_timestamp_ms=now)
        seconds = time.perf_counter() - started
    finally:
        metadata_log.close()
    return SnapshotBuild(data_dir, path, count, path.stat().st_size, seconds, end_offset)
