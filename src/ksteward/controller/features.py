"""Feature levels this node supports and writes at bootstrap.

``metadata.version`` 25 is Kafka 4.0-IV3, the level a fresh Kafka 4.0 cluster is formatted at; the
record versions ksteward writes are the ones Kafka writes at that level. The minimum readable level
is 7 (3.3-IV3), the oldest Kafka 4.x still reads.
"""

from __future__ import annotations

METADATA_VERSION = "metadata.version"
METADATA_VERSION_LEVEL = 25
METADATA_VERSION_MIN = 7

SUPPORTED_FEATURES: dict[str, tuple[int, int]] = {
    METADATA_VERSION: (METADATA_VERSION_MIN, METADATA_VERSION_LEVEL),
}
