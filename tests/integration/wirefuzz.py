"""Structure-aware request mutations: every length field of every served (api, version), made extreme.

For a request schema, :func:`full_request` writes one request in which every array has one element,
every nullable struct is present and every string and bytes field holds one byte, so that every
length field at every depth is on the wire, and it records where each one sits. :func:`mutations`
then rewrites one length at a time with counts no frame could hold (2³²-2, 2³¹-1, 2²⁸, just past
what remains, an over-long varint) and, at each tagged section, plants a huge tag count or a tagged
field whose size runs past the end.

:class:`DrawnValues` fills the same requests with values hypothesis draws instead (a value fuzz): counts,
ids, epochs, offsets and strings, mostly small or the cluster's own, so that requests get past the first checks.

Independent of ``ksteward``'s own schema walker: it reads kio's field declarations itself, so a
mistake in the server's bounds check cannot hide by being on both sides. Its own output is checked
by decoding the unmutated request with kio.
"""

from __future__ import annotations

import dataclasses
import os
import socket
import struct
from collections.abc import Iterator
from dataclasses import dataclass

from hypothesis import strategies as st
from kio.index import load_request_schema
from kio.serial._introspect import (
    EntityField,
    EntityTupleField,
    classify_field,
    get_field_tag,
    get_schema_field_type,
    is_optional,
)

from ksteward.protocol.varint import write_uvarint

_FIXED = {
    "bool": 1,
    "int8": 1,
    "int16": 2,
    "uint16": 2,
    "error_code": 2,
    "int32": 4,
    "timedelta_i32": 4,
    "int64": 8,
    "timedelta_i64": 8,
    "datetime_i64": 8,
    "float64": 8,
    "uuid": 16,
}


@dataclass(frozen=True)
class Site:
    """One length on the wire: ``encoding`` is uvarint, i16 or i32 (or tags, a tagged section's count)."""

    offset: int
    size: int
    encoding: str
    path: str


class Values:
    """What :class:`_Writer` puts in each field. This one: one element per array, every nullable struct present,
    one byte per string and bytes field, zero for every fixed-size field (:func:`full_request`). A subclass draws
    them instead (a value fuzz)."""

    def count(self, path: str) -> int:
        return 1

    def fixed(self, kafka_type: str, size: int, path: str) -> bytes:
        return b"\x00" * size

    def text(self, kafka_type: str, nullable: bool, path: str) -> bytes | None:
        return b"a"


class _Writer:
    def __init__(self, values: Values | None = None) -> None:
        self.out = bytearray()
        self.sites: list[Site] = []
        self.values = values or Values()

    def length(self, value: int, encoding: str, path: str) -> None:
        data = {"uvarint": write_uvarint(value + 1), "i16": struct.pack(">h", value), "i32": struct.pack(">i", value)}[
            encoding
        ]
        self.sites.append(Site(len(self.out), len(data), encoding, path))
        self.out += data

    def entity(self, cls: type, path: str) -> None:
        flexible = bool(getattr(cls, "__flexible__", False))
        for f in dataclasses.fields(cls):
            if get_field_tag(f) is not None:
                continue  # no served request has a known tagged field; planted ones are in mutations()
            kind = classify_field(f)
            nested = kind.type_ if isinstance(kind, EntityField | EntityTupleField) else None
            where = f"{path}.{f.name}"
            if kind.is_array:
                count = self.values.count(where)
                self.length(count, "uvarint" if flexible else "i32", where)
                for i in range(count):
                    self.value(f, nested, flexible, f"{where}[{i}]")
            elif nested is not None and is_optional(f):
                self.out += b"\x01"
                self.value(f, nested, flexible, where)
            else:
                self.value(f, nested, flexible, where)
        if flexible:
            self.sites.append(Site(len(self.out), 1, "tags", path))
            self.out += b"\x00"

    def value(self, f: dataclasses.Field[object], nested: type | None, flexible: bool, path: str) -> None:
        if nested is not None:
            self.entity(nested, path)
            return
        kafka_type = get_schema_field_type(f)
        if kafka_type in _FIXED:
            self.out += self.values.fixed(kafka_type, _FIXED[kafka_type], path)
        elif kafka_type in ("string", "bytes", "records"):
            data = self.values.text(kafka_type, is_optional(f), path)
            short = kafka_type == "string" and not flexible
            size = -1 if data is None else len(data)
            self.length(size, "uvarint" if flexible else ("i16" if short else "i32"), path)
            self.out += data or b""
        else:
            raise AssertionError(f"{path}: no writer for {kafka_type}")


def full_request(
    api_key: int, api_version: int, request_class: type | None = None, values: Values | None = None
) -> tuple[bytes, list[Site]]:
    """A request payload (no size prefix) with every length field present, and where those fields are; ``values``
    fills the fields (:class:`Values` by default)."""
    cls = request_class or load_request_schema(api_key, api_version)
    header_flexible = bool(getattr(cls.__header_schema__, "__flexible__", False))
    writer = _Writer(values)
    writer.out += struct.pack(">hhi", api_key, api_version, 7)
    writer.length(4, "i16", "header.client_id")  # a classic string even in flexible headers
    writer.out += b"fuzz"
    if header_flexible:
        writer.sites.append(Site(len(writer.out), 1, "tags", "header"))
        writer.out += b"\x00"
    writer.entity(cls, cls.__name__)
    return bytes(writer.out), writer.sites


def _replacements(site: Site, remaining: int) -> Iterator[tuple[str, bytes, bool]]:
    """(what, encoding, whether the frame cannot hold it) for one site; ``remaining`` is the number
    of bytes after the site. A negative length other than -1 means null in Kafka's parsers, so it is
    sent too but is not a length the server must refuse."""
    if site.encoding in ("uvarint", "tags"):
        bias = 1 if site.encoding == "uvarint" else 0
        for count in (2**32 - 2, 2**31 - 1, 2**28, remaining + 1):
            yield f"count {count}", write_uvarint(count + bias), True
        yield "6-byte varint", b"\xff\xff\xff\xff\xff\x0f", True
        if site.encoding == "tags":
            yield "tag past the end", b"\x01" + write_uvarint(3) + write_uvarint(2**31 - 1), True
            yield "tag just past the end", b"\x01" + write_uvarint(3) + write_uvarint(remaining + 1), True
    elif site.encoding == "i32":
        for count in (2**31 - 1, 2**30, remaining + 1):
            yield f"count {count}", struct.pack(">i", count), True
        yield "count -2", struct.pack(">i", -2), False
    else:
        for count in (0x7FFF, remaining + 1):
            yield f"length {count}", struct.pack(">h", count), True
        yield "length -2", struct.pack(">h", -2), False


@dataclass(frozen=True)
class Mutation:
    what: str
    payload: bytes
    oversized: bool  # a length no frame of this size could hold: the server must refuse it


def mutations(payload: bytes, sites: list[Site]) -> Iterator[Mutation]:
    """Every site, rewritten with every extreme value."""
    for site in sites:
        end = site.offset + site.size
        for what, data, oversized in _replacements(site, len(payload) - end):
            mutated = payload[: site.offset] + data + payload[end:]
            yield Mutation(f"{site.path} ({site.encoding}): {what}", mutated, oversized)


def throw(address: tuple[str, int], data: bytes, timeout: float = 10.0) -> None:
    """Send ``data`` (frames, whole or not) on a connection of its own, end the writing side so that the server
    sees EOF instead of waiting for bytes that never come, and read until it closes. A server that closes first,
    or sends nothing within ``timeout`` (a parked Fetch), ends the throw too."""
    sock = socket.create_connection(address, timeout=timeout)
    try:
        try:
            sock.sendall(data)
            sock.shutdown(socket.SHUT_WR)
        except OSError:
            return  # the server already closed on us
        try:
            while sock.recv(65536):
                pass
        except (ConnectionResetError, TimeoutError):
            pass
    finally:
        sock.close()


#: Examples per drawn-value fuzz test: 300 in ``make test``; ``make test-slow`` sets KSTEWARD_FUZZ_EXAMPLES=6000.
FUZZ_EXAMPLES = int(os.environ.get("KSTEWARD_FUZZ_EXAMPLES", "300"))

#: Kafka's ``Uuid.METADATA_TOPIC_ID``, the topic id of ``__cluster_metadata`` (Fetch v13+ names topics by id).
METADATA_TOPIC_ID = (1).to_bytes(16, "big")


class DrawnValues(Values):
    """Field values drawn by hypothesis. Ids, epochs and offsets are mostly small, and a cluster id or a topic name
    is mostly the cluster's own or the metadata topic's, so that many requests get past the first checks (the
    cluster id, the voter's own id, the epoch) into the Raft state machine; extremes and random values the rest."""

    def __init__(self, data: st.DataObject, cluster_id: str) -> None:
        self.data = data
        self.cluster_id = cluster_id.encode()

    def count(self, path: str) -> int:
        return self.data.draw(st.one_of(st.just(1), st.just(1), st.just(1), st.integers(0, 2)), label=f"{path} count")

    def fixed(self, kafka_type: str, size: int, path: str) -> bytes:
        if kafka_type == "bool":
            return self.data.draw(st.sampled_from([b"\x00", b"\x01"]), label=path)
        if kafka_type == "uuid":  # the metadata topic's id (Kafka's Uuid.METADATA_TOPIC_ID) often: Fetch v13+
            return self.data.draw(st.one_of(st.just(METADATA_TOPIC_ID), st.binary(min_size=size, max_size=size)),
                                  label=path)  # fmt: skip
        bits = size * 8
        low, high = -(2 ** (bits - 1)), 2 ** (bits - 1) - 1
        if "epoch" in path.rsplit(".", 1)[-1]:
            high -= 2**16  # an epoch near the largest leaves no room for elections (test_fuzz_quorum.py)
        small = st.integers(-1, 5)
        value = self.data.draw(st.one_of(small, small, small, st.sampled_from([low, high]), st.integers(low, high)),
                               label=path)  # fmt: skip
        if kafka_type == "uint16":
            return struct.pack(">H", value % 2**16)
        return value.to_bytes(size, "big", signed=True)

    def text(self, kafka_type: str, nullable: bool, path: str) -> bytes | None:
        if kafka_type != "string":
            return self.data.draw(st.binary(max_size=8), label=path)
        name = path.rsplit(".", 1)[-1].split("[")[0]
        usual = self.cluster_id if "cluster_id" in name else b"__cluster_metadata" if "topic" in name else None
        words = st.text(st.characters(codec="utf-8"), max_size=6).map(str.encode)
        if usual is not None:
            words = st.one_of(st.just(usual), st.just(usual), st.just(usual), words)
        return self.data.draw(st.one_of(words, st.none()) if nullable else words, label=path)
