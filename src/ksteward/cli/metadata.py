"""``ksteward metadata dump`` and ``ksteward metadata shell``: look inside a KRaft metadata log.

``dump PATH`` prints every record of a ``.log`` segment, a ``.checkpoint`` snapshot, or a whole
directory (data dir or ``__cluster_metadata-0``; snapshots, then segments, each by offset) as one
JSON line, like ``kafka-dump-log --cluster-metadata-decoder``. Secrets never print in clear: SCRAM
salts and keys and sensitive config values show as ``[hidden]``, decided by the server's own rule
(``ksteward.configs.sensitive``: PASSWORD-typed keys, and keys Kafka cannot type, such as a custom broker key).

``shell DIR`` loads the image read-only and lets you browse it as a tree, like
``kafka-metadata-shell``: ``ls``, ``cd``, ``pwd``, ``cat``, ``tree``, ``find``, ``help``, ``exit``.

``quorum describe --status | --replication`` asks a running cluster (``ksteward.cli.metadata_quorum``).
"""

from __future__ import annotations

import argparse
import functools
import json
import logging
import posixpath
import shlex
import sys
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import IO, Any

from ksteward.cli.metadata_quorum import add_quorum_parser
from ksteward.configs.catalog import ConfigResourceType
from ksteward.configs.sensitive import HIDDEN, SECRET_BEARING_RECORD_TYPES, loggable_value, redacted_record_json
from ksteward.metadata.batch import Batch
from ksteward.metadata.image import MetadataImage, PartitionRegistration, TopicImage
from ksteward.metadata.loader import MetadataLoadError, load
from ksteward.metadata.log_files import NotAMetadataLogError, TornTail, UnreadableBatch, file_batches, log_files
from ksteward.metadata.records import CorruptRecordError, UnknownRecordTypeError, decode_record, read_frame
from ksteward.metadata.records.control import (
    ControlRecordType,
    CorruptControlRecordError,
    EndTransactionMarker,
    control_type_id,
    decode_control_record,
)
from ksteward.metadata.records.kafka_json import entity_json, kafka_uuid


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``metadata dump``, ``metadata shell`` and ``metadata quorum`` on ``ksteward``'s subparsers."""
    parser = subparsers.add_parser("metadata", help="inspect a KRaft metadata log and its snapshots, or the quorum")
    commands = parser.add_subparsers(dest="metadata_command", metavar="COMMAND", required=True)
    dump = commands.add_parser("dump", help="print every record as one JSON line")
    dump.add_argument("path", help="a .log segment, a .checkpoint snapshot, or a metadata log directory")
    dump.set_defaults(func=run_dump)
    shell = commands.add_parser("shell", help="browse the metadata image as a tree (read-only)")
    shell.add_argument("dir", help="metadata.log.dir, or its __cluster_metadata-0 directory")
    shell.add_argument("--command", "-c", help="run one command (for example 'ls /') and exit")
    shell.set_defaults(func=run_shell)
    add_quorum_parser(commands)


# --- dump ----------------------------------------------------------------------------------------


def run_dump(args: argparse.Namespace, out: IO[str] | None = None) -> int:
    out = out or sys.stdout
    path = Path(args.path)
    try:
        files = log_files(path)
    except NotAMetadataLogError:
        print(f"metadata dump: {path}: not a .log, a .checkpoint or a directory", file=sys.stderr)
        return 2
    status = 0
    for file in files:
        status |= _dump_file(file, out)
    return status


def _dump_file(path: Path, out: IO[str]) -> int:
    kind = "snapshot" if path.suffix == ".checkpoint" else "segment"
    _emit(out, {"file": str(path), "kind": kind})
    for item in file_batches(path):
        if isinstance(item, TornTail):
            _emit(out, {"warning": "torn batch at the end of the file", "position": item.position})
        elif isinstance(item, UnreadableBatch):
            _emit(out, {"error": str(item.error), "position": item.position})
            return 1
        else:
            for line in _batch_lines(item):
                _emit(out, line)
    return 0


def _batch_lines(batch: Batch) -> Iterator[dict[str, Any]]:
    info = {
        "baseOffset": batch.base_offset, "lastOffset": batch.last_offset, "count": len(batch.records),
        "partitionLeaderEpoch": batch.leader_epoch, "isControl": batch.is_control,
        "position": batch.file_position, "size": batch.size,
    }  # fmt: skip
    for offset, timestamp, key, value in batch.records:
        payload = _control_payload(key, value) if batch.is_control else _record_payload(value)
        yield {"offset": offset, "timestamp": timestamp, "batch": info, "payload": payload}


def _record_payload(value: bytes | None) -> dict[str, Any]:
    if value is None:
        return {"error": "record without a value"}
    try:
        return redacted_record_json(decode_record(value))
    except UnknownRecordTypeError as exc:
        return {
            "apiKey": exc.api_key,
            "version": exc.version,
            "error": "unknown record type",
            **_hex(exc.api_key, value),
        }
    except CorruptRecordError as exc:
        try:
            api_key, version, _ = read_frame(value)
        except CorruptRecordError:
            return {"error": str(exc), **_hex(None, value)}
        return {"apiKey": api_key, "version": version, "error": str(exc), **_hex(api_key, value)}


def _hex(api_key: int | None, value: bytes) -> dict[str, Any]:
    # Undecodable bytes of a record that may hold a secret are not printed as hex either.
    if api_key is None or api_key in SECRET_BEARING_RECORD_TYPES:
        return {"hex": HIDDEN, "size": len(value)}
    return {"hex": value.hex()}


def _control_payload(key: bytes | None, value: bytes | None) -> dict[str, Any]:
    try:
        control_type, message = decode_control_record(key, value)
    except CorruptControlRecordError as exc:
        return {"controlType": "UNKNOWN", "error": str(exc), "hex": (value or b"").hex()}
    except ValueError:
        type_id = control_type_id(key)
        return {"controlType": "UNKNOWN", "typeId": type_id, "hex": (value or b"").hex()}
    if isinstance(message, EndTransactionMarker):
        return {"controlType": control_type.name, "coordinatorEpoch": message.coordinator_epoch}
    return {"controlType": ControlRecordType(control_type).name, "data": entity_json(message)}


def _emit(out: IO[str], obj: Mapping[str, Any]) -> None:
    out.write(json.dumps(obj, separators=(",", ":")) + "\n")


# --- shell ---------------------------------------------------------------------------------------


class _Node:
    """A directory (children built on first use: the image may hold a million partitions) or a leaf."""

    def __init__(self, text: str | None = None, children: Callable[[], dict[str, _Node]] | None = None) -> None:
        self.text = text
        self._make = children
        self._children: dict[str, _Node] | None = None

    @property
    def is_dir(self) -> bool:
        return self._make is not None

    def children(self) -> dict[str, _Node]:
        if self._children is None:
            self._children = self._make() if self._make is not None else {}
        return self._children


def _leaf(value: Any) -> _Node:
    return _Node(text=value if isinstance(value, str) else json.dumps(value, separators=(",", ":")))


def _dir(make: Callable[[], dict[str, _Node]]) -> _Node:
    return _Node(children=make)


def _fixed_dir(children: dict[str, _Node]) -> _Node:
    return _Node(children=lambda: children)


def _leaves_dir(values: Mapping[str, Any], render: Callable[[str, Any], Any] = lambda _k, v: v) -> _Node:
    """A directory with one leaf per entry of ``values``, built when first listed."""
    return _dir(lambda: {_name(k): _leaf(render(k, v)) for k, v in values.items()})


def _record_leaf(record: Any) -> _Node:
    """A record of the image (a broker or controller registration, an ACL) as its Kafka-JSON data."""
    return _leaf(redacted_record_json(record)["data"])


def _name(text: str) -> str:
    """A path component: '/' cannot appear in one."""
    return text.replace("%", "%25").replace("/", "%2F") if text else "<default>"


_CONFIG_TYPES = {2: "Topic", 4: "Broker", 8: "BrokerLogger", 16: "ClientMetrics", 32: "Group"}
_SCRAM_MECHANISMS = {1: "SCRAM-SHA-256", 2: "SCRAM-SHA-512"}


def image_tree(image: MetadataImage) -> _Node:
    """The browsable tree of an image (see the module docstring for its layout)."""

    def topic_node(topic: TopicImage) -> _Node:
        def children() -> dict[str, _Node]:
            nodes = {"id": _leaf(kafka_uuid(topic.id)), "name": _leaf(topic.name)}
            for pid, partition in topic.partitions.items():
                nodes[str(pid)] = partition_node(partition)
            return nodes

        return _dir(children)

    def partition_node(p: PartitionRegistration) -> _Node:
        fields = {
            "replicas": list(p.replicas), "isr": list(p.isr), "removingReplicas": list(p.removing_replicas),
            "addingReplicas": list(p.adding_replicas), "leader": p.leader,
            "leaderRecoveryState": p.leader_recovery_state, "leaderEpoch": p.leader_epoch,
            "partitionEpoch": p.partition_epoch, "directories": [kafka_uuid(d) for d in p.directories],
            "eligibleLeaderReplicas": list(p.elr), "lastKnownElr": list(p.last_known_elr),
        }  # fmt: skip
        return _leaves_dir(fields)

    def configs() -> dict[str, _Node]:
        by_type: dict[str, dict[str, _Node]] = {}
        for (rtype, rname), values in image.configs.items():
            node = _leaves_dir(values, functools.partial(loggable_value, ConfigResourceType.from_code(rtype)))
            by_type.setdefault(_CONFIG_TYPES.get(rtype, str(rtype)), {})[_name(rname)] = node
        return {t: _fixed_dir(names) for t, names in by_type.items()}

    def quotas() -> dict[str, _Node]:
        nodes = {}
        for entity, values in image.client_quotas.items():
            label = "_".join(f"{t}({n if n is not None else '<default>'})" for t, n in entity)
            nodes[_name(label)] = _leaves_dir(values)
        return nodes

    def scram() -> dict[str, _Node]:
        by_mechanism: dict[str, dict[str, _Node]] = {}
        for (mechanism, user), credential in image.scram.items():
            # Only the iteration count: salt and keys never leave the process in clear.
            leaf = _leaf({"iterations": int(credential.iterations)})
            by_mechanism.setdefault(_SCRAM_MECHANISMS.get(mechanism, str(mechanism)), {})[_name(user)] = leaf
        return {m: _fixed_dir(users) for m, users in by_mechanism.items()}

    root = {
        "features": _leaves_dir(image.features),
        "cluster": _dir(lambda: {str(k): _record_leaf(v) for k, v in image.cluster.items()}),
        "controllers": _dir(lambda: {str(k): _record_leaf(v) for k, v in image.controllers.items()}),
        "topics": _dir(lambda: {_name(t.name): topic_node(t) for t in image.topics.by_name.values()}),
        "topicIds": _dir(lambda: {kafka_uuid(t.id): topic_node(t) for t in image.topics.by_id.values()}),
        "configs": _dir(configs),
        "client-quotas": _dir(quotas),
        "acl": _dir(lambda: {"id": _dir(lambda: {kafka_uuid(k): _record_leaf(v) for k, v in image.acls.items()})}),
        "scram": _dir(scram),
        "producerIds": _leaf(image.producer_ids),
    }  # fmt: skip
    return _dir(lambda: root)


def _sort_key(name: str) -> tuple[int, int, str]:
    return (0, int(name), "") if name.isdigit() else (1, 0, name)


class MetadataShell:
    """Runs shell commands against one image; output goes to ``out``, errors to ``err``."""

    def __init__(self, image: MetadataImage, out: IO[str], err: IO[str]) -> None:
        self.root = image_tree(image)
        self.cwd = "/"
        self.out = out
        self.err = err
        self.exited = False

    def resolve(self, path: str) -> tuple[str, _Node | None]:
        full = posixpath.normpath(posixpath.join(self.cwd, path)) if path else self.cwd
        full = "/" + full.lstrip("/")
        node: _Node | None = self.root
        for part in [p for p in full.split("/") if p]:
            if node is None or not node.is_dir:
                return full, None
            node = node.children().get(part)
        return full, node

    def run_line(self, line: str) -> int:
        """Run one command line; returns 0, or 1 when the command failed."""
        try:
            words = shlex.split(line)
        except ValueError as exc:
            print(f"error: {exc}", file=self.err)
            return 1
        if not words:
            return 0
        command, args = words[0], words[1:]
        handler = self._COMMANDS.get(command)
        if handler is None:
            print(f"unknown command {command!r}; type 'help'", file=self.err)
            return 1
        return handler(self, args)

    def _ls(self, args: list[str]) -> int:
        status = 0
        for path in args or [""]:
            full, node = self.resolve(path)
            if node is None:
                print(f"ls: {full}: no such file or directory", file=self.err)
                status = 1
            elif node.is_dir:
                for name in sorted(node.children(), key=_sort_key):
                    print(name, file=self.out)
            else:
                print(posixpath.basename(full), file=self.out)
        return status

    def _cd(self, args: list[str]) -> int:
        full, node = self.resolve(args[0] if args else "/")
        if node is None or not node.is_dir:
            print(f"cd: {full}: not a directory", file=self.err)
            return 1
        self.cwd = full
        return 0

    def _pwd(self, args: list[str]) -> int:
        print(self.cwd, file=self.out)
        return 0

    def _cat(self, args: list[str]) -> int:
        status = 0
        for path in args:
            full, node = self.resolve(path)
            if node is None:
                print(f"cat: {full}: no such file or directory", file=self.err)
                status = 1
            elif node.is_dir:
                print(f"cat: {full}: is a directory", file=self.err)
                status = 1
            else:
                print(node.text, file=self.out)
        return status or (0 if args else self._usage("cat PATH..."))

    def _tree(self, args: list[str]) -> int:
        full, node = self.resolve(args[0] if args else "")
        if node is None:
            print(f"tree: {full}: no such file or directory", file=self.err)
            return 1
        self._print_tree(full, node, 0)
        return 0

    def _print_tree(self, name: str, node: _Node, depth: int) -> None:
        pad = "  " * depth
        if not node.is_dir:
            print(f"{pad}{name}: {node.text}", file=self.out)
            return
        print(f"{pad}{name}:", file=self.out)
        for child in sorted(node.children(), key=_sort_key):
            self._print_tree(child, node.children()[child], depth + 1)

    def _find(self, args: list[str]) -> int:
        full, node = self.resolve(args[0] if args else "")
        if node is None:
            print(f"find: {full}: no such file or directory", file=self.err)
            return 1
        stack = [(full, node)]
        while stack:
            path, current = stack.pop()
            print(path, file=self.out)
            if current.is_dir:
                for child in sorted(current.children(), key=_sort_key, reverse=True):
                    stack.append((posixpath.join(path, child), current.children()[child]))
        return 0

    def _help(self, args: list[str]) -> int:
        print(
            "ls [PATH...]     list a directory\n"
            "cd [PATH]        change directory (default /)\n"
            "pwd              print the current directory\n"
            "cat PATH...      print a value\n"
            "tree [PATH]      print a subtree with its values\n"
            "find [PATH]      print every path under PATH\n"
            "help             this text\n"
            "exit             leave the shell\n"
            "Top level: features cluster controllers topics topicIds configs client-quotas acl scram producerIds",
            file=self.out,
        )
        return 0

    def _exit(self, args: list[str]) -> int:
        self.exited = True
        return 0

    def _usage(self, text: str) -> int:
        print(f"usage: {text}", file=self.err)
        return 1

    _COMMANDS: dict[str, Callable[[MetadataShell, list[str]], int]] = {
        "ls": _ls, "cd": _cd, "pwd": _pwd, "cat": _cat, "tree": _tree, "find": _find, "help": _help,
        "exit": _exit, "quit": _exit,
    }  # fmt: skip


def run_shell(args: argparse.Namespace, stdin: IO[str] | None = None, out: IO[str] | None = None) -> int:
    stdin, out = stdin or sys.stdin, out or sys.stdout
    try:
        image, log = load(args.dir, logging.getLogger("ksteward.metadata"), read_only=True, skip_undecodable=True)
    except (OSError, MetadataLoadError) as exc:
        print(f"metadata shell: {exc}", file=sys.stderr)
        return 2
    log.close()
    shell = MetadataShell(image, out, sys.stderr)
    if args.command is not None:
        return shell.run_line(args.command)
    interactive = stdin.isatty()
    failed = 0
    while not shell.exited:
        if interactive:
            out.write(">> ")
            out.flush()
        line = stdin.readline()
        if not line:
            break
        failed |= shell.run_line(line)
    return 0 if interactive else failed
