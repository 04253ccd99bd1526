"""The ACL state of a small local metadata log, rebuilt on the driver in plain Python: no JVM, no Spark job.

    acls = local_acls("/var/lib/ksteward/data", offset=None, timestamp=None)   # None: use the Spark plan

A question about one resource (``pipeline who-can``) on a log of a few megabytes spends nearly all of its time
starting Spark and warming it up: 4 s for the session and 16 short jobs for 262 ACLs (bench/pipeline_cold.py).
This module answers the same question's input, the ACL table of :mod:`ksteward.pipeline.state`, from the same
decoded rows (``readers.metadata.decode_content``, what each Spark task runs) with the same semantics: the
newest snapshot at or before the target, the log records after it up to the target, metadata transactions
counted only once ended, the last record per ACL id. The errors are the same (``StateUnavailableError`` with
the same words). ``tests/pipeline/test_local_state.py`` checks the rows equal the Spark plan's on the same logs.

It declines (returns None, and the caller runs the Spark plan) whenever the Spark plan has more to say: a
file on another file system, a log larger than ``max_bytes``, and any reject or damage (a corrupt batch, a
torn tail, a bad snapshot): rejects are reported, and damage is a ``PartialLogError`` unless
``--allow-partial``, by the Spark reader alone.
"""

from __future__ import annotations

import datetime
import functools
import os
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from ksteward.authorizer import AclOperation, AclPermissionType, PatternType, ResourceType
from ksteward.metadata.records.kafka_json import kafka_uuid
from ksteward.pipeline.readers.metadata import SNAPSHOT, decode_content, metadata_files
from ksteward.pipeline.state import StateUnavailableError, Target, starting_point

__all__ = ["DEFAULT_MAX_BYTES", "AclRow", "local_acls"]

#: The largest log (segments and snapshots together) read on the driver: about 400,000 ACLs.
DEFAULT_MAX_BYTES = 64 << 20

_SEGMENT_NAME = re.compile(r"(\d{20})\.log$")
_ACL_TYPES = ("AccessControlEntryRecord", "RemoveAccessControlEntryRecord")
_TRANSACTION_TYPES = ("BeginTransactionRecord", "EndTransactionRecord", "AbortTransactionRecord")
_OPEN = 2**62

# The decoded row's fields (readers.metadata._DECODED_SCHEMA), by position.
_FILE, _KIND, _OFFSET, _TIME, _TYPE, _PAYLOAD, _REASON, _NOTE = 0, 1, 2, 4, 6, 8, 10, 12
_END = "end"


class _Record(NamedTuple):
    """A decoded record row's fields that the state needs (``payload``: the decoded record)."""

    source_file: str
    snapshot: bool
    offset: int
    batch_timestamp: datetime.datetime
    record_type: str
    payload: Any


def _keep(record: Any) -> Any:
    return record


class AclRow(NamedTuple):
    """One row of ``state``'s ``acls`` table (``ACL_SCHEMA``): enum columns hold the enums' names."""

    acl_id: str
    resource_type: str
    resource_name: str
    pattern_type: str
    principal: str
    host: str
    operation: str
    permission_type: str


def local_acls(
    path: str | os.PathLike[str],
    *,
    offset: int | None = None,
    timestamp: datetime.datetime | None = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> list[AclRow] | None:
    """The ACLs at ``offset`` or ``timestamp`` (the latest when both are None), or None when the Spark plan
    must answer (see the module docstring). Raises ``InputError`` for a path that is not a metadata log and
    ``StateUnavailableError`` as ``state.resolve_target`` does."""
    text = os.fspath(path)
    if "://" in text and not text.startswith("file://"):
        return None
    files = metadata_files(text.removeprefix("file://"))
    if sum(f.stat().st_size for f in files) > max_bytes:
        return None
    # The records themselves as payloads: the ACL fields are read from them, not from their JSON.
    rows = [row for f in files for row in decode_content(str(f), f.read_bytes(), _keep)]
    if any(row[_REASON] is not None for row in rows):
        return None  # rejects and damage: the Spark reader reports them
    records = [
        _Record(row[_FILE], row[_KIND] == SNAPSHOT, row[_OFFSET], row[_TIME], row[_TYPE], row[_PAYLOAD])
        for row in rows if row[_NOTE] is None
    ]  # fmt: skip
    ends = [int(row[_OFFSET]) for row in rows if row[_NOTE] == _END]
    target = _resolve_target(files, records, ends, offset, timestamp)
    return _acls(_without_unfinished_transactions(_applied(records, target)))


def _resolve_target(
    files: Sequence[Path],
    records: Sequence[_Record],
    segment_ends: Sequence[int],
    offset: int | None,
    timestamp: datetime.datetime | None,
) -> Target:
    """``state.resolve_target`` on the driver, for a log without damage."""
    if offset is not None and timestamp is not None:
        raise ValueError("give an offset or a timestamp, not both")
    if offset is not None and offset < 0:
        raise StateUnavailableError(f"offset {offset}: offsets start at 0")
    if timestamp is not None and timestamp.tzinfo is None:
        timestamp = timestamp.replace(tzinfo=datetime.UTC)
    snapshots = sorted({(r.offset, r.source_file) for r in records if r.snapshot})
    log = [r for r in records if not r.snapshot]
    log_last = max((r.offset for r in log), default=None)
    starts = [int(m.group(1)) for r in log if (m := _SEGMENT_NAME.search(r.source_file))]
    log_start = min(starts, default=None)
    latest = max([s for s, _ in snapshots] + ([log_last] if log_last is not None else []), default=-1)
    if offset is not None:
        target = offset
    elif timestamp is not None:
        in_time = [r.offset for r in records if r.batch_timestamp <= timestamp]
        if not in_time:
            raise StateUnavailableError(f"no metadata record at or before {timestamp.isoformat()}")
        target = max(in_time)
    else:
        target = latest
    end = _last_offset(files, records, segment_ends)
    if offset is not None and offset > end:
        held = f"its last offset is {end}" if end >= 0 else "it holds no batch"
        raise StateUnavailableError(f"offset {offset} is past the end of the metadata log: {held}")
    return starting_point(snapshots, target, log_start)


def _last_offset(files: Sequence[Path], records: Sequence[_Record], segment_ends: Sequence[int]) -> int:
    """``readers.metadata._last_offset`` for a log without rejects: a snapshot's last contained offset (when it
    holds a record), a segment's end less one; -1 when no file holds a batch."""
    from ksteward.metadata.log_files import parse_snapshot_name

    seen = {r.source_file for r in records if r.snapshot}
    ends = [-1] + [end - 1 for end in segment_ends]
    for f in files:
        snapshot = parse_snapshot_name(f.name)
        if snapshot is not None and str(f) in seen:
            ends.append(snapshot[0] - 1)
    return max(ends)


def _applied(records: Iterable[_Record], target: Target) -> list[_Record]:
    """The records the state at ``target`` is made of: its snapshot's, and the log's after it up to it."""
    after = target.snapshot_offset if target.snapshot_offset is not None and target.snapshot_file else -1
    return [
        r for r in records
        if (r.snapshot and r.source_file == target.snapshot_file)
        or (not r.snapshot and after < r.offset <= target.offset)
    ]  # fmt: skip


def _without_unfinished_transactions(records: list[_Record]) -> list[_Record]:
    """``state._without_unfinished_transactions``: each Begin with the first End or Abort after it; the
    records of an aborted or still open transaction (its markers included) are left out."""
    markers = sorted((r.offset, r.record_type) for r in records if r.record_type in _TRANSACTION_TYPES)
    if not markers:
        return records
    ends = [(o, t) for o, t in markers if t != "BeginTransactionRecord"]
    spans = []
    for lo, kind in markers:
        if kind != "BeginTransactionRecord":
            continue
        end = next(((o, t) for o, t in ends if o > lo), None)
        if end is None or end[1] == "AbortTransactionRecord":
            spans.append((lo, _OPEN if end is None else end[0]))
    return [r for r in records if not any(lo <= r.offset <= hi for lo, hi in spans)]


def _acls(records: Iterable[_Record]) -> list[AclRow]:
    """The last ACL record per id, by offset, when it creates the ACL (``state._acls``; ids in Kafka's text)."""
    latest: dict[str, _Record] = {}
    for r in records:
        if r.record_type not in _ACL_TYPES:
            continue
        acl_id = kafka_uuid(r.payload.id)
        seen = latest.get(acl_id)
        if seen is None or r.offset >= seen.offset:
            latest[acl_id] = r
    rows = []
    for acl_id, r in latest.items():
        if r.record_type == "AccessControlEntryRecord":
            acl = r.payload
            rows.append(AclRow(
                acl_id, _name(ResourceType, acl.resource_type), acl.resource_name, _name(PatternType, acl.pattern_type),
                acl.principal, acl.host, _name(AclOperation, acl.operation),
                _name(AclPermissionType, acl.permission_type),
            ))  # fmt: skip
    return rows


@functools.cache
def _name(enum: type[ResourceType | PatternType | AclOperation | AclPermissionType], code: Any) -> str:
    """``state._enum_name``: the member's name, UNKNOWN for a code that is not one."""
    try:
        return enum(int(code)).name
    except (TypeError, ValueError):
        return "UNKNOWN"
