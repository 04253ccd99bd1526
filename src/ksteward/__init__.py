"""ksteward: a Kafka-compatible admin and security control plane."""

__version__ = "0.1.0"
