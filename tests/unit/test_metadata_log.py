"""MetadataLog on real files: segments, recovery of torn and corrupt tails, flush, snapshots."""

from __future__ import annotations

import logging
import os
import struct
import threading
from pathlib import Path

import crc32c
import pytest
from kio.schema.k_raft_version_record.v0 import KRaftVersionRecord
from kio.schema.snapshot_footer_record.v0 import SnapshotFooterRecord
from kio.schema.snapshot_header_record.v0 import SnapshotHeaderRecord

from ksteward.metadata.batch import encode_batch, iter_batches
from ksteward.metadata.epochs import OffsetAndEpoch
from ksteward.metadata.log import (
    PARTITION_DIR_NAME,
    SNAPSHOT_BATCH_RECORDS,
    CorruptSnapshotError,
    MetadataLog,
    MetadataLogError,
    OffsetOutOfRangeError,
    read_snapshot,
)
from ksteward.metadata.records.control import ControlRecordType, control_type_id, encode_control_record

LOGGER = logging.getLogger("test.metadata.log")


def values(start: int, n: int) -> list[bytes]:
    return [b"record-%d" % i for i in range(start, start + n)]


def fill(log: MetadataLog, batches: int, per_batch: int = 3) -> None:
    for _ in range(batches):
        log.append(values(log.next_offset, per_batch), timestamp_ms=log.next_offset, leader_epoch=2)


def all_values(log: MetadataLog, start: int = 0) -> list[bytes]:
    return [r[3] or b"" for batch in log.read(start) for r in batch.records if r[0] >= start]


def tree(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir())}


@pytest.fixture
def pdir(tmp_path: Path) -> Path:
    return tmp_path / PARTITION_DIR_NAME


def test_append_read_roll_and_reopen(tmp_path: Path, pdir: Path) -> None:
    with MetadataLog.open(tmp_path, segment_bytes=400, logger=LOGGER) as log:
        assert log.directory == pdir and log.next_offset == 0
        base, last = log.append(values(0, 2), timestamp_ms=5, leader_epoch=1)
        assert (base, last) == (0, 1)
        fill(log, 20)
        assert log.next_offset == 62 and log.last_epoch == 2
        assert all_values(log) == values(0, 62)
        assert all_values(log, 37) == values(37, 25)
        assert list(log.read(62)) == []
    names = sorted(p.name for p in pdir.iterdir())
    assert len(names) > 3 and names[0] == "00000000000000000000.log"
    assert all(n.endswith(".log") and len(n) == 24 for n in names)
    with MetadataLog.open(pdir, segment_bytes=400, logger=LOGGER) as log:  # the partition dir works too
        assert log.next_offset == 62 and log.last_epoch == 2
        assert all_values(log) == values(0, 62)
        fill(log, 1)
        assert all_values(log, 60) == values(60, 5)


def test_segment_file_names_are_base_offsets(tmp_path: Path, pdir: Path) -> None:
    with MetadataLog.open(tmp_path, segment_bytes=300, logger=LOGGER) as log:
        fill(log, 10)
    for path in pdir.glob("*.log"):
        first = next(iter_batches(path.read_bytes()))
        assert first.base_offset == int(path.stem)


def test_torn_tail_is_truncated_and_logged(tmp_path: Path, pdir: Path, caplog: pytest.LogCaptureFixture) -> None:
    with MetadataLog.open(tmp_path, logger=LOGGER) as log:
        fill(log, 3)
    segment = pdir / "00000000000000000000.log"
    good = segment.stat().st_size
    partial = encode_batch(9, values(9, 3), timestamp_ms=0, leader_epoch=2)[:40]
    with open(segment, "ab") as f:
        f.write(partial)
    with caplog.at_level(logging.WARNING), MetadataLog.open(tmp_path, logger=LOGGER) as log:
        assert log.next_offset == 9
        assert segment.stat().st_size == good
        fill(log, 1)
    [warning] = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert str(segment) in warning and f"position {good}" in warning and "torn" in warning
    caplog.clear()
    with caplog.at_level(logging.WARNING), MetadataLog.open(tmp_path, logger=LOGGER) as log:
        assert all_values(log) == values(0, 12)
    assert not caplog.records


def test_crc_bad_tail_is_truncated(tmp_path: Path, pdir: Path, caplog: pytest.LogCaptureFixture) -> None:
    with MetadataLog.open(tmp_path, logger=LOGGER) as log:
        fill(log, 4)
    segment = pdir / "00000000000000000000.log"
    data = bytearray(segment.read_bytes())
    last_start = [b.file_position for b in iter_batches(bytes(data))][-1]
    data[-2] ^= 0x40
    segment.write_bytes(bytes(data))
    with caplog.at_level(logging.WARNING), MetadataLog.open(tmp_path, logger=LOGGER) as log:
        assert log.next_offset == 9
    assert segment.stat().st_size == last_start
    assert "CRC mismatch" in caplog.text and f"position {last_start}" in caplog.text


def test_corruption_in_a_middle_segment_drops_the_later_ones(tmp_path: Path, pdir: Path) -> None:
    with MetadataLog.open(tmp_path, segment_bytes=300, logger=LOGGER) as log:
        fill(log, 12)
    segments = sorted(pdir.glob("*.log"))
    assert len(segments) >= 3
    victim = segments[1]
    data = bytearray(victim.read_bytes())
    data[30] ^= 0xFF
    victim.write_bytes(bytes(data))
    (victim.with_suffix(".index")).write_bytes(b"stale")  # as Kafka may have left one
    with MetadataLog.open(tmp_path, segment_bytes=300, logger=LOGGER) as log:
        assert log.next_offset == int(victim.stem)
        assert all_values(log) == values(0, int(victim.stem))
    assert sorted(pdir.glob("*.log")) == segments[:2]
    assert victim.stat().st_size == 0 and not victim.with_suffix(".index").exists()


def test_read_only_open_changes_nothing(tmp_path: Path, pdir: Path) -> None:
    with MetadataLog.open(tmp_path, segment_bytes=300, logger=LOGGER) as log:
        fill(log, 6)
    with open(pdir / "00000000000000000000.log", "ab") as f:
        f.write(b"\x00" * 7)  # not the last segment: a bad tail in the middle
    (pdir / "00000000000000000100-0000000001.checkpoint.part").write_bytes(b"half")
    before = tree(pdir)
    with MetadataLog.open(tmp_path, read_only=True, logger=LOGGER) as log:
        assert log.next_offset < 18
        with pytest.raises(MetadataLogError, match="read-only"):
            log.append([b"x"], timestamp_ms=0)
    assert tree(pdir) == before
    with pytest.raises(FileNotFoundError):
        MetadataLog.open(tmp_path / "nothing-here", read_only=True)


def test_leftover_part_files_are_removed(tmp_path: Path, pdir: Path) -> None:
    MetadataLog.open(tmp_path).close()
    part = pdir / "00000000000000000000-0000000000.checkpoint.part"
    part.write_bytes(b"half")
    MetadataLog.open(tmp_path).close()
    assert not part.exists()


def test_flush_fsyncs_segments_and_directory(tmp_path: Path, pdir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    synced: list[str] = []
    real_fsync = os.fsync

    def recording_fsync(fd: int) -> None:
        synced.append(os.readlink(f"/proc/self/fd/{fd}"))
        real_fsync(fd)

    log = MetadataLog.open(tmp_path, segment_bytes=200, logger=LOGGER)
    monkeypatch.setattr(os, "fsync", recording_fsync)
    fill(log, 1)
    assert log.durable_offset == 0
    log.flush()
    assert log.durable_offset == 3
    assert str(pdir / "00000000000000000000.log") in synced and str(pdir) in synced  # a new file: dir too
    synced.clear()
    fill(log, 4)  # rolls to new segments
    log.flush()
    segments = sorted(str(p) for p in pdir.glob("*.log"))
    assert set(segments[1:]) <= set(synced) and str(pdir) in synced
    synced.clear()
    log.append([b"x"], timestamp_ms=0)  # no new file: no directory fsync
    log.flush()
    assert str(pdir) not in synced and log.durable_offset == log.next_offset
    log.close()


def test_flush_from_another_thread_while_appending(tmp_path: Path) -> None:
    log = MetadataLog.open(tmp_path, segment_bytes=2000, logger=LOGGER)
    stop = threading.Event()
    errors: list[BaseException] = []
    durable: list[int] = []

    def flusher() -> None:
        try:
            while not stop.is_set():
                log.flush()
                durable.append(log.durable_offset)
        except BaseException as exc:
            errors.append(exc)

    worker = threading.Thread(target=flusher)
    worker.start()
    try:
        for _ in range(600):
            log.append(values(log.next_offset, 2), timestamp_ms=0, leader_epoch=1)
    finally:
        stop.set()
        worker.join()
    log.flush()
    assert not errors
    assert durable == sorted(durable)
    assert log.durable_offset == log.next_offset == 1200
    log.close()
    with MetadataLog.open(tmp_path, segment_bytes=2000) as reopened:
        assert all_values(reopened) == values(0, 1200)


def test_snapshot_write_read_and_layout(tmp_path: Path, pdir: Path) -> None:
    with MetadataLog.open(tmp_path, logger=LOGGER) as log:
        fill(log, 2)
        assert log.bytes_since_snapshot > 0
        content = values(0, SNAPSHOT_BATCH_RECORDS * 2 + 5)
        path = log.write_snapshot(6, 2, iter(content), last_contained_timestamp_ms=77, timestamp_ms=1000)
        assert path == pdir / "00000000000000000006-0000000002.checkpoint"
        assert log.bytes_since_snapshot == 0
        fill(log, 1)
        assert log.bytes_since_snapshot > 0
    end, epoch, got = read_snapshot(path)
    assert (end, epoch, list(got)) == (6, 2, content)
    batches = list(iter_batches(path.read_bytes()))
    assert batches[0].is_control and batches[-1].is_control
    assert control_type_id(batches[0].records[0][2]) == ControlRecordType.SNAPSHOT_HEADER
    assert control_type_id(batches[-1].records[0][2]) == ControlRecordType.SNAPSHOT_FOOTER
    assert all(len(b.records) <= SNAPSHOT_BATCH_RECORDS for b in batches)
    assert [b.base_offset for b in batches] == sorted(b.base_offset for b in batches) and batches[0].base_offset == 0
    assert {b.leader_epoch for b in batches} == {2}
    assert not list(pdir.glob("*.part"))


def test_snapshots_newest_first_and_pruned(tmp_path: Path) -> None:
    with MetadataLog.open(tmp_path, logger=LOGGER) as log:
        fill(log, 4)
        for end in (3, 6, 9, 12):
            log.write_snapshot(end, 2, [b"v"], last_contained_timestamp_ms=0)
        assert [s.end_offset for s in log.snapshots()] == [12, 9]
        with pytest.raises(FileExistsError):
            log.write_snapshot(12, 2, [], last_contained_timestamp_ms=0)
        with pytest.raises(MetadataLogError):
            log.write_snapshot(13, 2, [], last_contained_timestamp_ms=0)


@pytest.mark.parametrize("damage", ["flip", "cut", "no-footer", "empty"])
def test_corrupt_snapshot_is_detected(tmp_path: Path, damage: str) -> None:
    with MetadataLog.open(tmp_path) as log:
        fill(log, 1)
        path = log.write_snapshot(3, 1, values(0, 50), last_contained_timestamp_ms=0)
    data = bytearray(path.read_bytes())
    if damage == "flip":
        data[len(data) // 2] ^= 0x01
    elif damage == "cut":
        data = data[:-10]
    elif damage == "no-footer":
        footer_start = list(iter_batches(bytes(data)))[-1].file_position
        data = data[:footer_start]
    else:
        data = bytearray()
    path.write_bytes(bytes(data))
    with pytest.raises(CorruptSnapshotError):
        read_snapshot(path)


def test_reads_a_kafka_style_snapshot_header_batch(tmp_path: Path, pdir: Path) -> None:
    # Kafka (kraft.version 1) puts KRaftVersion (and Voters) records after the header.
    pdir.mkdir()
    header = encode_control_record(SnapshotHeaderRecord(version=0, last_contained_log_timestamp=5))
    kraft = encode_control_record(KRaftVersionRecord(version=0, k_raft_version=1))
    footer = encode_control_record(SnapshotFooterRecord(version=0))
    data = (
        encode_batch(0, [header[1], kraft[1]], keys=[header[0], kraft[0]], timestamp_ms=1, leader_epoch=4, control=True)
        + encode_batch(2, [b"a", b"b"], timestamp_ms=1, leader_epoch=4)
        + encode_batch(4, [footer[1]], keys=[footer[0]], timestamp_ms=1, leader_epoch=4, control=True)
    )
    path = pdir / "00000000000000000010-0000000004.checkpoint"
    path.write_bytes(data)
    end, epoch, got = read_snapshot(path)
    assert (end, epoch, list(got)) == (10, 4, [b"a", b"b"])


def test_delete_segments_before_snapshot(tmp_path: Path) -> None:
    with MetadataLog.open(tmp_path, segment_bytes=300, logger=LOGGER) as log:
        fill(log, 12)
        assert log.delete_segments_before(30) == 0  # no snapshot yet
        log.write_snapshot(20, 2, [b"v"], last_contained_timestamp_ms=0)
        deleted = log.delete_segments_before(10**9)
        assert deleted >= 1
        assert log.log_start_offset <= 20
        assert all_values(log, 20) == values(20, 16)
        with pytest.raises(OffsetOutOfRangeError):
            list(log.read(0))
    with MetadataLog.open(tmp_path, segment_bytes=300) as log:
        assert log.log_start_offset > 0 and log.next_offset == 36


def test_log_behind_newest_snapshot_restarts_at_its_end(tmp_path: Path, pdir: Path) -> None:
    with MetadataLog.open(tmp_path) as log:
        fill(log, 2)
        log.write_snapshot(6, 1, [b"v"], last_contained_timestamp_ms=0)
    (pdir / "00000000000000000000.log").unlink()
    with MetadataLog.open(tmp_path) as log:
        assert log.next_offset == 6 and log.log_start_offset == 6
        log.append([b"x"], timestamp_ms=0)
    assert (pdir / "00000000000000000006.log").exists()


def test_snapshot_with_an_unparsable_data_batch(tmp_path: Path) -> None:
    """A data batch whose CRC is right but whose records do not parse: detected while iterating."""
    with MetadataLog.open(tmp_path) as log:
        fill(log, 1)
        path = log.write_snapshot(3, 1, values(0, 5), last_contained_timestamp_ms=0)
    data = bytearray(path.read_bytes())
    batch = list(iter_batches(bytes(data)))[1]
    start, end = batch.file_position, batch.file_position + batch.size
    data[start + 61] = 0x7E  # the first record's length: far too long
    data[start + 17 : start + 21] = struct.pack(">I", crc32c.crc32c(bytes(data[start + 21 : end])))
    path.write_bytes(bytes(data))
    _end, _epoch, got = read_snapshot(path)
    with pytest.raises(CorruptSnapshotError, match="bad records"):
        list(got)


# --- replication: the leader's raw reads, the follower's writes (KRaft, KIP-595 / KIP-630) ---------


def epochs_log(path: Path, layout: list[tuple[int, int]], segment_bytes: int = 1 << 20) -> MetadataLog:
    log = MetadataLog.open(path, segment_bytes=segment_bytes, logger=LOGGER)
    for epoch, count in layout:
        log.append(values(log.next_offset, count), timestamp_ms=log.next_offset, leader_epoch=epoch)
    log.flush()
    return log


def test_epoch_history_is_derived_from_batches_and_survives_reopen(tmp_path: Path) -> None:
    with epochs_log(tmp_path, [(1, 3), (1, 2), (3, 3), (5, 3)], segment_bytes=200) as log:
        assert log.epoch_history.entries() == [(1, 0), (3, 5), (5, 8)]
        assert log.last_fetched_epoch == 5
    with MetadataLog.open(tmp_path, segment_bytes=200, logger=LOGGER) as log:
        history = log.epoch_history
        assert history.entries() == [(1, 0), (3, 5), (5, 8)]
        end = log.next_offset
        found = [history.end_offset_for(e, end) for e in (1, 2, 3, 5, 6)]
        assert [None if f is None else (f.offset, f.epoch) for f in found] == [
            (5, 1), (5, 1), (8, 3), (11, 5), None,
        ]  # fmt: skip
        # Below every epoch: that epoch itself, ending where the first known epoch starts.
        assert history.end_offset_for(0, end) == OffsetAndEpoch(0, 0)


def test_read_raw_returns_whole_stored_batches_within_the_limits(tmp_path: Path) -> None:
    with epochs_log(tmp_path, [(1, 3)] * 10, segment_bytes=300) as log:
        everything = log.read_raw(0, 1 << 20)
        assert [b.base_offset for b in iter_batches(everything)] == list(range(0, 30, 3))
        assert everything == b"".join(
            (log.directory / p.name).read_bytes() for p in sorted(log.directory.glob("*.log"))
        )
        one = log.read_raw(4, 1)  # at least the batch holding offset 4, even over the byte limit
        assert [b.base_offset for b in iter_batches(one)] == [3]
        assert [b.base_offset for b in iter_batches(log.read_raw(0, 1 << 20, end_offset=9))] == [0, 3, 6]
        assert log.read_raw(30, 1 << 20) == b""


def test_read_raw_serves_the_newest_batch_as_stored_and_forgets_it_when_cut(tmp_path: Path) -> None:
    """The newest batch is read from memory (a Raft leader reads it for every follower's Fetch): it must be
    the same bytes as on disk, within the same limits, and never outlive a truncation."""
    with epochs_log(tmp_path / "leader", [(1, 3)] * 3) as log, epochs_log(tmp_path / "f", []) as follower:
        on_disk = log.read_raw(0, 1 << 20)  # from offset 0: read from the segment
        newest = log.read_raw(6, 1 << 20)
        assert [b.base_offset for b in iter_batches(newest)] == [6] and on_disk.endswith(newest)
        assert log.read_raw(7, 1) == log.read_raw(8, 1) == newest  # any offset inside it: the whole batch
        assert log.read_raw(6, 1 << 20, end_offset=8) == b""  # not past the end asked for
        assert log.read_raw(9, 1 << 20) == b""
        log.truncate_to(6)
        assert log.read_raw(6, 1 << 20) == b"" and log.read_raw(0, 1 << 20) == on_disk[: -len(newest)]
        log.append(values(6, 2), timestamp_ms=1, leader_epoch=2)
        replaced = log.read_raw(6, 1 << 20)
        assert [b.base_offset for b in iter_batches(replaced)] == [6] and replaced != newest
        data = log.read_raw(0, 1 << 20)
        assert data.endswith(replaced) and all_values(log) == values(0, 8)
        assert follower.append_raw(data) == (0, 7)
        assert follower.read_raw(0, 1 << 20) == data  # several batches: from the segment
        assert follower.read_raw(7, 1 << 20) == replaced  # the newest one a follower appended


def test_append_raw_keeps_offsets_and_epochs_and_checks_them(tmp_path: Path) -> None:
    with epochs_log(tmp_path / "leader", [(1, 2), (4, 3)]) as leader, epochs_log(tmp_path / "f", []) as follower:
        data = leader.read_raw(0, 1 << 20)
        assert follower.append_raw(data) == (0, 4)
        assert follower.read_raw(0, 1 << 20) == data and follower.epoch_history.entries() == [(1, 0), (4, 2)]
        stale = encode_batch(5, [b"x"], timestamp_ms=1, leader_epoch=3)
        with pytest.raises(MetadataLogError, match="epochs"):
            follower.append_raw(stale)  # an epoch below the last one
        with pytest.raises(MetadataLogError, match="base offset"):
            follower.append_raw(encode_batch(9, [b"x"], timestamp_ms=1, leader_epoch=4))  # a gap
        corrupt = bytearray(encode_batch(5, [b"x"], timestamp_ms=1, leader_epoch=4))
        corrupt[-1] ^= 0xFF
        with pytest.raises(MetadataLogError, match="CRC"):
            follower.append_raw(bytes(corrupt))
        assert follower.next_offset == 5
    with MetadataLog.open(tmp_path / "f", logger=LOGGER) as reopened:
        assert reopened.next_offset == 5 and reopened.last_epoch == 4


def test_truncate_to_cuts_whole_batches_and_segments_durably(tmp_path: Path) -> None:
    with epochs_log(tmp_path, [(1, 3)] * 4 + [(2, 3)] * 4, segment_bytes=250) as log:
        segments_before = len(list(log.directory.glob("*.log")))
        assert log.truncate_to(16) == 15  # offset 16 is inside the batch 15-17: it goes whole
        assert log.next_offset == 15 and log.last_epoch == 2 and log.epoch_history.entries() == [(1, 0), (2, 12)]
        assert log.truncate_to(15) == 15
        assert log.truncate_to(7) == 6 and log.epoch_history.entries() == [(1, 0)] and log.last_epoch == 1
        assert len(list(log.directory.glob("*.log"))) < segments_before
        log.append(values(6, 2), timestamp_ms=1, leader_epoch=3)
        assert all_values(log) == values(0, 8)
    with MetadataLog.open(tmp_path, segment_bytes=250, logger=LOGGER) as log:
        assert log.next_offset == 8 and log.epoch_history.entries() == [(1, 0), (3, 6)]
        with pytest.raises(MetadataLogError):
            log.write_snapshot(8, 3, [b"s"], last_contained_timestamp_ms=1)
            log.delete_segments_before(8)
            log.truncate_to(0)


def test_snapshot_download_is_atomic_and_validated(tmp_path: Path) -> None:
    with epochs_log(tmp_path / "leader", [(2, 5)]) as leader, epochs_log(tmp_path / "f", [(1, 2)]) as follower:
        leader.write_snapshot(5, 2, values(0, 500), last_contained_timestamp_ms=1)
        data = leader.snapshots()[0].path.read_bytes()
        download = follower.begin_snapshot_download(5, 2)
        download.append(0, data[:1000])
        assert follower.snapshots() == []  # nothing visible before the end
        with pytest.raises(ValueError, match="position"):
            download.append(10, data[1000:])
        download.append(1000, data[1000:])
        path = download.complete()
        assert path.read_bytes() == data and not list(follower.directory.glob("*.part"))
        assert follower.truncate_to_latest_snapshot()
        assert (follower.log_start_offset, follower.next_offset, follower.last_fetched_epoch) == (5, 5, 2)
        assert follower.epoch_history.entries() == [] and not list(follower.directory.glob("*.log"))
        follower.append_raw(encode_batch(5, [b"next"], timestamp_ms=1, leader_epoch=2))
        assert follower.last_fetched_epoch == 2 and follower.epoch_history.entries() == [(2, 5)]
        broken = follower.begin_snapshot_download(9, 2)
        broken.append(0, data[:-3])  # cut short: no footer
        with pytest.raises(CorruptSnapshotError):
            broken.complete()
        assert [s.end_offset for s in follower.snapshots()] == [5] and not list(follower.directory.glob("*.part"))
