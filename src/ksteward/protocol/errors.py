"""Protocol-level failures.

Each exception says what the connection must do about it: a :class:`FrameError` or an
:class:`InvalidRequestError` closes the connection (Kafka's ``SocketServer`` does the same for
``InvalidRequestException``), and nothing here ever stops the server.
"""

from __future__ import annotations


class ProtocolError(Exception):
    """Base class: the bytes on a connection do not form a valid Kafka request."""


class FrameError(ProtocolError):
    """The length prefix is negative, zero, or above ``socket.request.max.bytes``."""


class InvalidRequestError(ProtocolError):
    """A frame whose header or body cannot be decoded, or names an API or version not served."""
