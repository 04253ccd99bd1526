"""Readers: files in, DataFrames out, with every line or batch they could not parse set aside.

Each reader returns a :class:`ReadResult`: ``frame`` in the schema the reader documents (a schema from
``ksteward.pipeline.schemas``) and ``rejects`` in ``REJECTS_SCHEMA`` (file, line or byte position, reason,
raw text when it is safe to keep). Nothing bad is silently dropped and nothing bad crashes a read::

    from ksteward.pipeline.readers import read_audit, read_metadata

    records, rejects = read_metadata(spark, "/var/lib/ksteward/data")
    events, bad_lines = read_audit(spark, ["/var/log/ksteward/audit"])
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


class ReadResult(NamedTuple):
    """What a reader returns: the parsed rows and the rejected input (``REJECTS_SCHEMA``)."""

    frame: DataFrame
    rejects: DataFrame


class InputError(ValueError):
    """Input a reader or job cannot use at all; the message names the file (and line, when there is one).

    ``ksteward pipeline`` prints it on one line and exits 2. Bad *lines* are not errors: they are rejects.
    """


from .metadata import read_metadata  # noqa: E402  (ReadResult must exist first: the readers import it)

__all__ = ["InputError", "ReadResult", "read_metadata"]
