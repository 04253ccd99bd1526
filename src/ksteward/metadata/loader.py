"""Start-up: the newest valid snapshot, then the log after it, as one ``MetadataImage``.

    image, log = load(data_dir, logger)

A snapshot that fails its CRCs, lacks a header or footer, or does not replay is logged and
skipped; the next older one is tried, then the log from offset 0 (which only works while no
segment has been deleted). Log batches at or after the snapshot's end offset are applied whole;
control batches only advance the offset. Metadata transactions (KIP-868) are honoured:
records between BeginTransactionRecord and EndTransactionRecord become visible together, an
AbortTransactionRecord discards them, and a transaction still open at the end of the log is left out.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterable, Iterator

from .batch import Batch
from .delta import MetadataDelta, MetadataReplayError, image_from_records
from .image import EMPTY_IMAGE, MetadataImage
from .log import DEFAULT_SEGMENT_BYTES, CorruptSnapshotError, MetadataLog, read_snapshot
from .records import (
    AbortTransactionRecord,
    BeginTransactionRecord,
    CorruptRecordError,
    EndTransactionRecord,
    MetadataRecord,
    UnknownRecordTypeError,
    decode_record,
)


class MetadataLoadError(Exception):
    """The metadata cannot be rebuilt: a record in a valid batch cannot be decoded or applied,
    or the log does not reach back to any usable snapshot."""


def load(
    metadata_dir: str | os.PathLike[str],
    logger: logging.Logger,
    *,
    read_only: bool = False,
    skip_undecodable: bool = False,
    segment_bytes: int = DEFAULT_SEGMENT_BYTES,
    replay_log: bool = True,
) -> tuple[MetadataImage, MetadataLog]:
    """Open the metadata log under ``metadata_dir`` and rebuild the image; the caller owns the log.

    ``read_only`` changes nothing on disk (for tools). ``skip_undecodable`` skips, with a warning,
    records of unknown (apiKey, version) and records that fail to decode, instead of failing: right
    for a shell, wrong for a controller, which must not serve an image that silently misses changes.
    ``replay_log=False`` stops at the newest snapshot: a voter of a quorum of several does not know at
    start-up how much of its log is committed (an uncommitted tail may be truncated by the next leader), so
    it replays its log only as the high watermark it learns passes it (server.controller_quorum).
    """
    log = MetadataLog.open(metadata_dir, logger=logger, read_only=read_only, segment_bytes=segment_bytes)
    try:
        decoder = _Decoder(logger, skip_undecodable)
        image = _newest_snapshot_image(log, logger, decoder)
        if replay_log:
            image = replay_batches(image, log.read(image.offset + 1), decoder)
    except BaseException:
        log.close()
        raise
    return image, log


def _newest_snapshot_image(log: MetadataLog, logger: logging.Logger, decoder: _Decoder) -> MetadataImage:
    for snapshot in log.snapshots():
        try:
            end_offset, epoch, values = read_snapshot(snapshot.path)
            image = image_from_records(decoder.decode_all(values), offset=end_offset - 1, epoch=epoch)
        except (CorruptSnapshotError, MetadataLoadError, MetadataReplayError, OSError) as exc:
            logger.warning("skipping metadata snapshot %s: %s", snapshot.path, exc)
            continue
        if end_offset < log.log_start_offset:
            raise MetadataLoadError(
                f"snapshot {snapshot.path.name} ends at offset {end_offset} but the log starts at "
                f"{log.log_start_offset}: the records in between are gone"
            )
        logger.info("loaded metadata snapshot %s", snapshot.path.name)
        return image
    if log.log_start_offset > 0:
        raise MetadataLoadError(
            f"no usable snapshot in {log.directory} and the log starts at offset {log.log_start_offset}"
        )
    return EMPTY_IMAGE


class _Decoder:
    def __init__(self, logger: logging.Logger, skip_undecodable: bool) -> None:
        self._logger = logger
        self._skip_undecodable = skip_undecodable
        self._warned: set[tuple[int, int]] = set()

    def decode(self, value: bytes | None, offset: int, where: str = "offset") -> MetadataRecord | None:
        """The record, or None for one that is skipped. ``where`` names what ``offset`` counts."""
        try:
            if value is None:
                raise CorruptRecordError("metadata record without a value")
            record: MetadataRecord = decode_record(value)
        except UnknownRecordTypeError as exc:
            if not self._skip_undecodable:
                raise MetadataLoadError(f"{where} {offset}: {exc}") from exc
            if (exc.api_key, exc.version) not in self._warned:
                self._warned.add((exc.api_key, exc.version))
                self._logger.warning("skipping records of unknown type (apiKey %d, version %d), first at "
                                     "%s %d", exc.api_key, exc.version, where, offset)  # fmt: skip
            return None
        except CorruptRecordError as exc:
            if not self._skip_undecodable:
                raise MetadataLoadError(f"{where} {offset}: {exc}") from exc
            self._logger.warning("skipping undecodable record at %s %d: %s", where, offset, exc)
            return None
        return record

    def decode_all(self, values: Iterable[bytes]) -> Iterator[MetadataRecord]:
        for index, value in enumerate(values):
            record = self.decode(value, index, "snapshot record")
            if record is not None:
                yield record


def replay_batches(
    image: MetadataImage,
    batches: Iterable[Batch],
    decoder: _Decoder | None = None,
    on_record: Callable[[MetadataRecord], None] | None = None,
) -> MetadataImage:
    """Apply log batches to ``image`` in order and return the image after the last whole batch.

    Batches apply whole: the result never holds part of a batch, nor part of a metadata transaction.
    Nobody sees the images in between, so one delta spans all the batches (split only where a
    transaction begins, so that an abort can go back): a delta per batch would copy every touched
    section once per batch, quadratic in a long log of small batches. ``on_record`` sees every record
    read past ``image``'s offset, applied or not (an aborted transaction's too), in log order: a
    superset of what changed, for callers that must not compare whole sections.
    """
    decoder = decoder or _Decoder(logging.getLogger(__name__), False)
    delta = MetadataDelta(image)
    # (offset, epoch, timestamp) of the last batch wholly applied to ``delta``.
    end = (image.offset, image.epoch, image.timestamp_ms)
    in_transaction = False
    for batch in batches:
        if batch.last_offset <= image.offset:
            continue
        if batch.is_control:
            if not in_transaction:
                end = (batch.last_offset, batch.leader_epoch, end[2])
            continue
        for offset, _timestamp, _key, value in batch.records:
            if offset <= image.offset:
                continue
            record = decoder.decode(value, offset)
            if record is None:
                continue
            if on_record is not None:
                on_record(record)
            if isinstance(record, BeginTransactionRecord):
                if in_transaction:
                    raise MetadataLoadError(f"offset {offset}: BeginTransactionRecord inside a transaction")
                # Whatever came before the marker is not part of the transaction.
                image = delta.apply(offset=offset - 1, epoch=batch.leader_epoch, timestamp_ms=batch.timestamp_ms)
                delta = MetadataDelta(image)
                in_transaction = True
            elif isinstance(record, EndTransactionRecord | AbortTransactionRecord):
                if not in_transaction:
                    raise MetadataLoadError(f"offset {offset}: {type(record).__name__} outside a transaction")
                in_transaction = False
                if isinstance(record, AbortTransactionRecord):
                    delta = MetadataDelta(image)
            else:
                try:
                    delta.replay(record)
                except MetadataReplayError as exc:
                    raise MetadataLoadError(f"offset {offset}: {exc}") from exc
        if not in_transaction:
            end = (batch.last_offset, batch.leader_epoch, batch.timestamp_ms)
    if in_transaction:
        return image  # the transaction never ended: leave it out, as Kafka does
    return delta.apply(offset=end[0], epoch=end[1], timestamp_ms=end[2])
