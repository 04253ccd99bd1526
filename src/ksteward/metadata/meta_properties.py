"""``meta.properties``: which cluster and node a data directory belongs to, as Kafka writes it.

Written once, at the first start (Kafka's ``kafka-storage format``). A later start with another
``node.id``, or with directories that disagree on ``cluster.id``, is refused: mixing two clusters'
metadata loses data.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

from ksteward.metadata.ids import random_uuid
from ksteward.metadata.records.kafka_json import kafka_uuid

FILE_NAME = "meta.properties"


class MetaPropertiesError(Exception):
    """The directory belongs to another cluster or node, or cannot be used."""


def random_uuid_text() -> str:
    """A random id in Kafka's text form: 22 characters of URL-safe base64, no padding."""
    return kafka_uuid(random_uuid())


@dataclass(frozen=True, slots=True)
class MetaProperties:
    cluster_id: str
    node_id: int
    directory_id: str


def _parse(path: Path) -> dict[str, str]:
    props = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if line and not line.startswith("#") and "=" in line:
            k, _, v = line.partition("=")
            props[k.strip()] = v.strip()
    return props


def read_meta_properties(directory: Path) -> dict[str, str]:
    """The keys of ``meta.properties`` in ``directory``; OSError when it cannot be read."""
    return _parse(directory / FILE_NAME)


def _write(path: Path, meta: MetaProperties) -> None:
    text = (
        f"#\n#{time.strftime('%a %b %d %H:%M:%S %Z %Y')}\n"
        f"node.id={meta.node_id}\ndirectory.id={meta.directory_id}\nversion=1\ncluster.id={meta.cluster_id}\n"
    )
    tmp = path.with_suffix(".properties.tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def ensure_meta_properties(dirs: list[Path], node_id: int, cluster_id: str | None = None) -> str:
    """Check (or, on first start, write) ``meta.properties`` in every directory; return the cluster id."""
    found: dict[Path, dict[str, str]] = {}
    for d in dirs:
        if d.exists() and not d.is_dir():
            raise MetaPropertiesError(f"data directory {d} is not a directory")
        try:
            d.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise MetaPropertiesError(f"cannot use data directory {d}: {exc.strerror or exc}") from None
        if not d.is_dir():
            raise MetaPropertiesError(f"data directory {d} is not a directory")
        if not os.access(d, os.W_OK | os.X_OK):
            raise MetaPropertiesError(f"data directory {d} is not writable")
        f = d / FILE_NAME
        if f.exists():
            try:
                found[d] = _parse(f)
            except (OSError, UnicodeDecodeError) as exc:
                raise MetaPropertiesError(f"cannot read {f}: {exc}") from None
    cluster_ids = {p.get("cluster.id") for p in found.values()}
    if len(cluster_ids) > 1:
        listing = ", ".join(f"{d} has {p.get('cluster.id')}" for d, p in found.items())
        raise MetaPropertiesError(f"data directories belong to different clusters: {listing}")
    for d, p in found.items():
        if p.get("node.id") != str(node_id):
            raise MetaPropertiesError(
                f"{d / FILE_NAME} belongs to node.id={p.get('node.id')}, but this server is node.id={node_id}"
            )
    existing = next(iter(cluster_ids)) if cluster_ids else None
    if existing is not None and cluster_id is not None and existing != cluster_id:
        raise MetaPropertiesError(f"data directories belong to cluster {existing}, not the configured {cluster_id}")
    cluster = existing or cluster_id or random_uuid_text()
    for d in dirs:
        if d not in found:
            try:
                _write(d / FILE_NAME, MetaProperties(cluster, node_id, random_uuid_text()))
            except OSError as exc:
                raise MetaPropertiesError(f"cannot write {d / FILE_NAME}: {exc.strerror or exc}") from None
    return cluster
