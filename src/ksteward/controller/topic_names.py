"""Topic name rules, as Kafka's ``org.apache.kafka.common.internals.Topic``.

A legal name is 1 to 249 characters of ASCII ``[a-zA-Z0-9._-]``, and neither ``.`` nor ``..``. Two
names *collide* when they are equal after replacing ``.`` with ``_`` (metric names cannot tell them
apart); the controller refuses to create a topic that collides with an existing one.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

MAX_NAME_LENGTH = 249
LEGAL_CHARS = "[a-zA-Z0-9._-]"
GROUP_METADATA_TOPIC_NAME = "__consumer_offsets"
TRANSACTION_STATE_TOPIC_NAME = "__transaction_state"
SHARE_GROUP_STATE_TOPIC_NAME = "__share_group_state"
CLUSTER_METADATA_TOPIC_NAME = "__cluster_metadata"
INTERNAL_TOPICS = frozenset({GROUP_METADATA_TOPIC_NAME, TRANSACTION_STATE_TOPIC_NAME, SHARE_GROUP_STATE_TOPIC_NAME})

_LEGAL = re.compile(r"[a-zA-Z0-9._-]*")


def _java_length(name: str) -> int:
    """``String.length()``: UTF-16 code units, so the length rule reads as Kafka's for any input."""
    return len(name) if name.isascii() else len(name.encode("utf-16-le")) // 2


def invalid_reason(name: str) -> str | None:
    """Why ``name`` is not a legal topic name (Kafka's wording), or None when it is legal."""
    if not name:
        return "the empty string is not allowed"
    if name == ".":
        return "'.' is not allowed"
    if name == "..":
        return "'..' is not allowed"
    if _java_length(name) > MAX_NAME_LENGTH:
        return f"the length of '{name}' is longer than the max allowed length {MAX_NAME_LENGTH}"
    if not _LEGAL.fullmatch(name):
        return f"'{name}' contains one or more characters other than ASCII alphanumerics, '.', '_' and '-'"
    return None


def validation_error(name: str) -> str | None:
    """The INVALID_TOPIC_EXCEPTION message for ``name`` (``Topic name is invalid: <reason>``), or None."""
    reason = invalid_reason(name)
    return None if reason is None else f"Topic name is invalid: {reason}"


def is_internal(name: str) -> bool:
    """Kafka's ``Topic.isInternal``: the consumer offsets, transaction state and share group state topics."""
    return name in INTERNAL_TOPICS


def has_collision_chars(name: str) -> bool:
    return "." in name or "_" in name


def unify_collision_chars(name: str) -> str:
    return name.replace(".", "_")


def collision_index(names: Iterable[str]) -> dict[str, list[str]]:
    """Existing names that contain ``.`` or ``_``, grouped by their unified form."""
    index: dict[str, list[str]] = {}
    for name in names:
        if "." in name or "_" in name:
            index.setdefault(name.replace(".", "_"), []).append(name)
    return index
