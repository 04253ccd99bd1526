"""Random ids as Kafka's ``Uuid.randomUuid`` draws them: cluster ids, directory ids, topic ids, ACL ids.

Never the zero id ("no id"), never (0, 1) (the metadata topic's id), never a value whose base64 text
starts with ``-`` (it would read as a command-line flag), and never an id already ``taken``.
"""

from __future__ import annotations

import uuid
from collections.abc import Container

_RESERVED = (uuid.UUID(int=0), uuid.UUID(int=1))


def random_uuid(*taken: Container[uuid.UUID | None]) -> uuid.UUID:
    """A fresh id that none of the ``taken`` collections holds."""
    while True:
        candidate = uuid.uuid4()
        if candidate in _RESERVED or (candidate.bytes[0] >> 2) == 62:  # 62 is "-" in URL-safe base64
            continue
        if any(candidate in used for used in taken):
            continue
        return candidate
