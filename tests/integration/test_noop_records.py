"""KIP-835: the active controller appends a NoOpRecord every ``metadata.max.idle.interval.ms``, so the high
watermark moves on a cluster nobody writes to (Kafka's QuorumControllerTest#testNoOpRecordWriteAfterTimeout).
The interval is lowered here so that the test waits for two of them, not for Kafka's default 500 ms."""

from __future__ import annotations

from harness import ServerFactory, wait_for
from kio.schema.errors import ErrorCode
from rawkafka import RawConnection, connect, describe_quorum


def high_watermark(conn: RawConnection) -> int:
    (partition,) = describe_quorum(conn).topics[0].partitions
    assert partition.error_code == ErrorCode.none
    return int(partition.high_watermark)


def test_the_high_watermark_moves_with_no_client_writes(server_factory: ServerFactory) -> None:
    server = server_factory(overrides={"metadata.max.idle.interval.ms": "20"}).start()
    with connect(("127.0.0.1", server.controller_port)) as conn:
        first = high_watermark(conn)
        # Twice past the first: the first move could still be the start-up's own records.
        wait_for(lambda: high_watermark(conn) >= first + 2, 20.0, "two NoOpRecords committed")


def test_a_zero_interval_is_accepted_and_a_negative_one_refused(server_factory: ServerFactory) -> None:
    server_factory(overrides={"metadata.max.idle.interval.ms": "0"}).start().stop()
    refused = server_factory(overrides={"metadata.max.idle.interval.ms": "-1"})
    code, output = refused.run_to_exit()
    assert code != 0
    assert "metadata.max.idle.interval.ms" in output
