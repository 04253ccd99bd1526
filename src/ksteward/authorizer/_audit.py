"""Authorization audit events as CloudEvents 1.0 JSON lines, with Confluent's audit field names.

One line per decision::

    {"specversion":"1.0","id":"<uuid4>","source":"crn:///kafka=<cluster>",
     "type":"io.confluent.kafka.server/authorization","time":"2025-01-31T12:00:00.123Z",
     "datacontenttype":"application/json","subject":"crn:///kafka=<cluster>/topic=orders",
     "data":{"serviceName":"crn:///kafka=<cluster>","methodName":"kafka.Produce",
             "resourceName":"crn:///kafka=<cluster>/topic=orders",
             "authenticationInfo":{"principal":"User:bob"},
             "authorizationInfo":{"granted":true,"operation":"Write","resourceType":"Topic",
                                  "resourceName":"orders","patternType":"LITERAL",
                                  "superUserAuthorization":false,
                                  "aclAuthorization":{"permissionType":"Allow","host":"*"}},
             "requestMetadata":{"clientAddress":"10.0.0.1"},
             "ksteward":{"rule":"acl","imageOffset":42,
                         "acl":{"id":"8xq3...22 chars","resourceType":"Topic","resourceName":"ord",
                                "patternType":"PREFIXED","principal":"User:bob","host":"*",
                                "operation":"Write","permissionType":"Allow"}}}}

The Confluent part follows Confluent Platform's authorization events: ``operation``, ``resourceType`` and
``permissionType`` in Kafka's Pascal-case display names, ``patternType`` upper-case, ``aclAuthorization``
present when an ACL decided, CRNs ``crn:///kafka=<cluster id>[/<type>=<name>]`` for ``source``, ``subject``,
``serviceName`` and ``resourceName``. ksteward's additions live in ``data.ksteward``: ``rule``
(``acl``, ``super_user``, ``allow_everyone_default``, ``no_matching_acl``), ``imageOffset`` (metadata offset
of the ACL image that decided, -1 if unknown) and, for ``acl``, the deciding ACL with its id in Kafka's
22-character URL-safe base64 form, and, for a request a broker forwarded in an Envelope (KIP-590),
``forwardedBy``: the forwarding broker's principal and address, next to the client's principal in
``authenticationInfo``. Nothing else from the request goes into a line: no free-form fields, so
no secret can leak into the log.

:class:`AuditEvent` captures a decision cheaply (a slotted object and a timestamp); the JSON is rendered
later, off the request path, by :class:`AuditLogWriter`. Files: ``<directory>/audit.log`` is the live file;
when a line would take it past ``max_bytes`` it is closed and renamed ``audit-<UTC time>Z.log``
(``audit-20250131T120000.123456Z.log``, microseconds bumped on a clash), so rotated files sort by age and
are never renamed again, and ``audit*.log`` globs everything. ``max_files`` optionally bounds how many
rotated files are kept (oldest deleted first); by default all are kept.
"""

from __future__ import annotations

import base64
import contextlib
import contextvars
import datetime
import functools
import json
import os
import random
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Hashable, Iterator
from dataclasses import dataclass
from json.encoder import encode_basestring
from pathlib import Path
from typing import Any
from urllib.parse import quote

from ._enums import AclOperation, PatternType, ResourceType, parse_enum
from ._standard import AuthorizationResult, Decision, Rule

__all__ = [
    "AUDIT_EVENT_TYPE",
    "AuditEvent",
    "AuditLogWriter",
    "ForwardingBroker",
    "acl_id_text",
    "forwarded_by",
]

AUDIT_EVENT_TYPE = "io.confluent.kafka.server/authorization"
AUDIT_LIVE_FILE_NAME = "audit.log"

_CRN_SEGMENT = {
    ResourceType.TOPIC: "topic",
    ResourceType.GROUP: "group",
    ResourceType.TRANSACTIONAL_ID: "transactional-id",
    ResourceType.DELEGATION_TOKEN: "delegation-token",
    ResourceType.USER: "user",
}


def acl_id_text(acl_id: Hashable) -> str:
    """Kafka's text form of an id: 22 characters of URL-safe base64 without padding, for a UUID."""
    if isinstance(acl_id, uuid.UUID):
        return base64.urlsafe_b64encode(acl_id.bytes).rstrip(b"=").decode("ascii")
    return str(acl_id)


@dataclass(frozen=True, slots=True)
class ForwardingBroker:
    """Who sent the Envelope a forwarded request arrived in: the broker's principal and address."""

    principal: str
    host: str


_FORWARDED_BY: contextvars.ContextVar[ForwardingBroker | None] = contextvars.ContextVar(
    "ksteward_audit_forwarded_by", default=None
)


@contextlib.contextmanager
def forwarded_by(principal: str, host: str) -> Iterator[ForwardingBroker]:
    """Within this block (and the tasks it starts), every :class:`AuditEvent` created without an explicit
    ``forwarded_by`` names this broker. The controller's Envelope handler wraps the inner request's
    handler in it, so the handlers and ``broker.authz`` need not know that a request was forwarded."""
    broker = ForwardingBroker(principal, host)
    token = _FORWARDED_BY.set(broker)
    try:
        yield broker
    finally:
        _FORWARDED_BY.reset(token)


class AuditEvent:
    """One decision and the action it answered, captured on the request path; rendered by :meth:`to_json`."""

    __slots__ = (
        "decision",
        "forwarded_by",
        "host",
        "method_name",
        "operation",
        "pattern_type",
        "principal",
        "resource_name",
        "resource_type",
        "timestamp",
    )

    def __init__(
        self,
        decision: Decision,
        *,
        principal: str,
        host: str,
        operation: AclOperation | str,
        resource_type: ResourceType | str,
        resource_name: str,
        method_name: str,
        pattern_type: PatternType | str = PatternType.LITERAL,
        timestamp: float | None = None,
        forwarded_by: ForwardingBroker | None = None,
    ) -> None:
        self.decision = decision
        self.principal = principal
        self.host = host
        self.operation = operation
        self.resource_type = resource_type
        self.resource_name = resource_name
        self.method_name = method_name  # Kafka's API name with Confluent's prefix, e.g. "kafka.Produce"
        self.pattern_type = pattern_type
        self.timestamp = time.time() if timestamp is None else timestamp
        # The broker that forwarded the request, if any: given, or the one of the enclosing forwarded_by block.
        self.forwarded_by = forwarded_by if forwarded_by is not None else _FORWARDED_BY.get()

    @property
    def granted(self) -> bool:
        return self.decision.result is AuthorizationResult.ALLOWED

    def to_json(self, *, cluster_id: str = "ksteward", event_id: str | None = None) -> str:
        """The CloudEvents line (without the newline)."""
        return _render(self, f"crn:///kafka={quote(cluster_id, safe='')}", event_id or _event_id())

    def to_dict(self, *, cluster_id: str = "ksteward", event_id: str | None = None) -> dict[str, Any]:
        result: dict[str, Any] = json.loads(self.to_json(cluster_id=cluster_id, event_id=event_id))
        return result


def _event_id() -> str:
    """A random (version 4) UUID's text. Event ids need uniqueness, not secrecy: one PRNG draw, no urandom."""
    bits = random.getrandbits(128) & ~(0xF000 << 64) & ~(0xC000 << 48) | (0x4000 << 64) | (0x8000 << 48)
    text = f"{bits:032x}"
    return f"{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:]}"


_text: Callable[[str], str] = encode_basestring
"""A JSON string literal for a ``str`` (the C escaper ``json`` itself uses; non-ASCII kept as is)."""


_last_time: list[tuple[int, str]] = [(-1, "")]  # the last (millisecond, text) rendered: a burst shares it


def _time_text(timestamp: float) -> str:
    millis = int(timestamp * 1000)
    cached_millis, text = _last_time[0]  # one tuple read: safe if another thread replaces it
    if cached_millis != millis:
        moment = datetime.datetime.fromtimestamp(millis / 1000, datetime.UTC)
        text = moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")
        _last_time[0] = (millis, text)
    return text


@functools.lru_cache(maxsize=1 << 16)
def _crn(service: str, resource_type: ResourceType, name: str) -> str:
    segment = _CRN_SEGMENT.get(resource_type)
    if segment is None:  # CLUSTER (the service itself) and anything without a CRN segment
        return service
    return f"{service}/{segment}={quote(name, safe='')}"


def _render(event: AuditEvent, service: str, event_id: str) -> str:
    decision = event.decision
    rt = parse_enum(ResourceType, event.resource_type)
    op = parse_enum(AclOperation, event.operation)
    pattern = parse_enum(PatternType, event.pattern_type)
    crn = _text(_crn(service, rt, event.resource_name))
    service_text = _text(service)
    granted = "true" if decision.result is AuthorizationResult.ALLOWED else "false"
    super_user = "true" if decision.rule is Rule.SUPER_USER else "false"
    acl = decision.acl
    acl_authorization = ""
    ksteward = f'{{"rule":{_text(str(decision.rule))},"imageOffset":{int(decision.image_offset)}'
    if acl is not None:
        acl_authorization = (
            f',"aclAuthorization":{{"permissionType":{_text(acl.permission_type.display_name)},'
            f'"host":{_text(acl.host)}}}'
        )
        ksteward += (
            f',"acl":{{"id":{_text(acl_id_text(decision.acl_id))},'
            f'"resourceType":{_text(acl.resource_type.display_name)},'
            f'"resourceName":{_text(acl.resource_name)},"patternType":{_text(acl.pattern_type.name)},'
            f'"principal":{_text(acl.principal)},"host":{_text(acl.host)},'
            f'"operation":{_text(acl.operation.display_name)},'
            f'"permissionType":{_text(acl.permission_type.display_name)}}}'
        )
    forwarder = event.forwarded_by
    if forwarder is not None:
        ksteward += (
            f',"forwardedBy":{{"principal":{_text(forwarder.principal)},"clientAddress":{_text(forwarder.host)}}}'
        )
    ksteward += "}"
    return (
        f'{{"specversion":"1.0","id":{_text(event_id)},"source":{service_text},'
        f'"type":"{AUDIT_EVENT_TYPE}","time":"{_time_text(event.timestamp)}",'
        f'"datacontenttype":"application/json","subject":{crn},'
        f'"data":{{"serviceName":{service_text},"methodName":{_text(event.method_name)},"resourceName":{crn},'
        f'"authenticationInfo":{{"principal":{_text(event.principal)}}},'
        f'"authorizationInfo":{{"granted":{granted},"operation":{_text(op.display_name)},'
        f'"resourceType":{_text(rt.display_name)},"resourceName":{_text(event.resource_name)},'
        f'"patternType":{_text(pattern.name)},"superUserAuthorization":{super_user}{acl_authorization}}},'
        f'"requestMetadata":{{"clientAddress":{_text(event.host)}}},'
        f'"ksteward":{ksteward}}}}}'
    )


class AuditLogWriter:
    """Buffered, size-rotated audit log files (see the module docstring for names).

    ``write`` is O(1) on the request path: it filters by result (``allowed``/``denied``) and appends to a
    deque. A background thread renders and writes the queue when it holds ``flush_events`` events or every
    ``flush_interval`` seconds; ``flush()`` does it at once in the caller's thread; ``close()`` flushes and
    stops the thread. Lines reach the OS at each flush (no fsync: an audit line may be lost in a crash).
    """

    def __init__(
        self,
        directory: str | os.PathLike[str],
        *,
        max_bytes: int,
        allowed: bool = True,
        denied: bool = True,
        cluster_id: str = "ksteward",
        max_files: int | None = None,
        flush_events: int = 1024,
        flush_interval: float = 1.0,
    ) -> None:
        if max_bytes <= 0:
            raise ValueError("max_bytes must be positive")
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.max_bytes = max_bytes
        self.allowed = allowed
        self.denied = denied
        self.max_files = max_files
        self._service = f"crn:///kafka={quote(cluster_id, safe='')}"
        self._flush_events = flush_events
        self._flush_interval = flush_interval
        self._queue: deque[AuditEvent] = deque()
        self._io_lock = threading.Lock()
        self._drained = threading.Condition(self._io_lock)  # notified after every drain (tests wait on it)
        self._wake = threading.Event()
        self._closed = False
        self._path = self.directory / AUDIT_LIVE_FILE_NAME
        self._file = open(self._path, "ab")  # noqa: SIM115 - held open until close()
        self._size = self._file.tell()
        self._thread = threading.Thread(target=self._run, name="ksteward-audit-writer", daemon=True)
        self._thread.start()

    @property
    def path(self) -> Path:
        """The live file."""
        return self._path

    def write(self, event: AuditEvent) -> None:
        """Queue ``event`` (dropped if its result is not logged). Cheap: no rendering, no I/O."""
        if self._closed:
            raise ValueError("the audit log writer is closed")
        if not (self.allowed if event.decision.result is AuthorizationResult.ALLOWED else self.denied):
            return
        queue = self._queue
        queue.append(event)
        if len(queue) >= self._flush_events and not self._wake.is_set():
            self._wake.set()

    def flush(self) -> None:
        """Render and write everything queued so far, and hand it to the OS."""
        self._drain()

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._wake.set()
        self._thread.join()
        self._drain()
        with self._io_lock:
            self._file.close()

    def __enter__(self) -> AuditLogWriter:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # --- the writer thread -------------------------------------------------------------------------

    def _run(self) -> None:
        while not self._closed:
            self._wake.wait(self._flush_interval)
            self._wake.clear()
            self._drain()

    def _drain(self) -> None:
        with self._io_lock:
            if self._file.closed:
                return
            queue = self._queue
            pending: list[bytes] = []
            pending_size = 0
            for _ in range(len(queue)):
                line = (_render(queue.popleft(), self._service, _event_id()) + "\n").encode()
                if self._size + pending_size + len(line) > self.max_bytes and self._size + pending_size > 0:
                    self._file.write(b"".join(pending))
                    pending, pending_size = [], 0
                    self._rotate()
                pending.append(line)
                pending_size += len(line)
            if pending:
                self._file.write(b"".join(pending))
                self._size += pending_size
            self._file.flush()
            self._drained.notify_all()

    def _rotate(self) -> None:
        self._file.close()
        moment = datetime.datetime.now(datetime.UTC)
        target = self.directory / f"audit-{moment:%Y%m%dT%H%M%S.%f}Z.log"
        while target.exists():  # two rotations in one microsecond: take the next free one, keeping the order
            moment += datetime.timedelta(microseconds=1)
            target = self.directory / f"audit-{moment:%Y%m%dT%H%M%S.%f}Z.log"
        os.replace(self._path, target)
        self._file = open(self._path, "ab")  # noqa: SIM115
        self._size = 0
        if self.max_files is not None:
            rotated = sorted(p for p in self.directory.glob("audit-*.log"))
            for old in rotated[: max(0, len(rotated) - self.max_files)]:
                with contextlib.suppress(FileNotFoundError):
                    old.unlink()
