"""The record of the last apply, kept beside the state file (``FILE.applied.json``, docs/state-files.md).

It holds, per cluster id, the owned resources the last successful apply of the file made true, and the
metadata offset it ended at. ``ksteward plan`` reads it to tell an in-file change from drift; ``ksteward
apply`` writes it (:func:`save_record`) once everything succeeded. Meant to be committed next to the file, as
a lock file is. It holds no secret: SCRAM users appear by name, mechanism and iterations only.
"""

from __future__ import annotations

import json
import os
from typing import Any

from .fileformat import StateFileError, resources_from_doc, resources_to_doc
from .model import AppliedRecord, record_path

RECORD_VERSION = 1


def load_record(state_file: str, cluster_id: str) -> AppliedRecord | None:
    """The record for ``cluster_id``, or None when the file has never been applied to that cluster."""
    path = record_path(state_file)
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise StateFileError(f"{path}: not a last-apply record: {exc}") from None
    entry = _clusters(path, doc).get(cluster_id)
    if entry is None:
        return None
    try:
        resources = resources_from_doc(entry)
    except StateFileError as exc:
        raise StateFileError(f"{path}: {exc}") from None
    offset = entry.get("metadata_offset")
    return AppliedRecord(cluster_id, resources, offset if isinstance(offset, int) else None)


def _clusters(path: str, doc: Any) -> dict[str, Any]:
    if not isinstance(doc, dict) or doc.get("version") != RECORD_VERSION or not isinstance(doc.get("clusters"), dict):
        raise StateFileError(f"{path}: not a version {RECORD_VERSION} last-apply record")
    return doc["clusters"]


def save_record(state_file: str, record: AppliedRecord) -> str:
    """Write ``record`` (replacing that cluster's entry, keeping the others) atomically; returns the path."""
    path = record_path(state_file)
    try:
        with open(path, encoding="utf-8") as f:
            clusters = _clusters(path, json.load(f))
    except (FileNotFoundError, ValueError, StateFileError):
        clusters = {}
    entry = resources_to_doc(record.resources)
    entry["metadata_offset"] = record.metadata_offset
    clusters[record.cluster_id] = entry
    text = json.dumps({"version": RECORD_VERSION, "clusters": dict(sorted(clusters.items()))}, indent=1,
                      sort_keys=False, ensure_ascii=False)  # fmt: skip
    tmp = f"{path}.tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text + "\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    return path
