"""A small synchronous admin client for ksteward's own extensions, such as DeleteTopics v7.

Real Kafka clients cover everything standard; this one exists for what they cannot send:
``delete_topics(..., validate_only=True)`` (KIP-934). It speaks PLAINTEXT or SASL_PLAINTEXT with
PLAIN, negotiates versions with ApiVersions, and raises :class:`AdminError` with Kafka's error
name and message::

    with AdminClient("localhost:9092", sasl_plain=("admin", "admin-secret")) as admin:
        admin.delete_topics(["orders"], validate_only=True)   # {"orders": None} or raises
"""

from __future__ import annotations

import io
import socket
import struct
from typing import Any

from kio.schema.errors import ErrorCode
from kio.serial import entity_reader, entity_writer

from ksteward.protocol.apis import ApiKey
from ksteward.protocol.build import build
from ksteward.protocol.codec import request_class, response_class
from ksteward.protocol.framing import frame


class AdminError(Exception):
    """A request failed: ``code`` is Kafka's error code, ``name`` its name."""

    def __init__(self, code: int, message: str | None, topic: str | None = None) -> None:
        self.code = code
        self.name = ErrorCode(code).name.upper() if code in ErrorCode._value2member_map_ else str(code)
        self.topic = topic
        where = f" for topic {topic}" if topic else ""
        super().__init__(f"{self.name}{where}: {message or 'no message'}")


class AdminClient:
    def __init__(self, bootstrap: str, *, sasl_plain: tuple[str, str] | None = None, timeout: float = 30.0) -> None:
        host, _, port = bootstrap.rpartition(":")
        self._sock = socket.create_connection((host.strip("[]") or "localhost", int(port)), timeout=timeout)
        self._correlation = 0
        self._versions = self._api_versions()
        if sasl_plain is not None:
            self._login(*sasl_plain)

    def __enter__(self) -> AdminClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._sock.close()

    def _read_exactly(self, n: int) -> bytes:
        buf = bytearray()
        while len(buf) < n:
            chunk = self._sock.recv(n - len(buf))
            if not chunk:
                raise ConnectionError("the server closed the connection")
            buf += chunk
        return bytes(buf)

    def _call(self, api_key: int, version: int, values: dict[str, Any]) -> Any:
        self._correlation += 1
        cls = request_class(api_key, version)
        out = io.BytesIO()
        header_cls = cls.__header_schema__
        header = build(header_cls, {"request_api_key": api_key, "request_api_version": version,
                                    "correlation_id": self._correlation, "client_id": "ksteward-admin"})  # fmt: skip
        entity_writer(header_cls)(out, header)
        entity_writer(cls)(out, build(cls, values))
        self._sock.sendall(frame(out.getvalue()))
        (size,) = struct.unpack(">i", self._read_exactly(4))
        payload = self._read_exactly(size)
        response_cls = response_class(api_key, version)
        _header, header_size = entity_reader(response_cls.__header_schema__)(payload, 0)
        body, _ = entity_reader(response_cls)(payload, header_size)
        return body

    def _api_versions(self) -> dict[int, tuple[int, int]]:
        body = self._call(ApiKey.API_VERSIONS, 3, {"client_software_name": "ksteward", "client_software_version": "0"})
        if body.error_code != ErrorCode.none:
            raise AdminError(int(body.error_code), "ApiVersions failed")
        return {int(k.api_key): (int(k.min_version), int(k.max_version)) for k in body.api_keys}

    def _version(self, api_key: int, highest: int) -> int:
        low, high = self._versions.get(api_key, (0, -1))
        if high < low or min(high, highest) < low:
            raise AdminError(int(ErrorCode.unsupported_version), f"the server does not serve api {api_key}")
        return min(high, highest)

    def _login(self, user: str, password: str) -> None:
        handshake = self._call(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"})
        if handshake.error_code != ErrorCode.none:
            raise AdminError(int(handshake.error_code), "SASL PLAIN is not enabled on this listener")
        token = b"\0" + user.encode() + b"\0" + password.encode()
        auth = self._call(ApiKey.SASL_AUTHENTICATE, 2, {"auth_bytes": token})
        if auth.error_code != ErrorCode.none:
            raise AdminError(int(auth.error_code), auth.error_message)

    def delete_topics(self, topics: list[str], *, validate_only: bool = False, timeout_ms: int = 30_000) -> None:
        """Delete ``topics`` by name; with ``validate_only`` (DeleteTopics v7) check only, deleting nothing.

        Raises :class:`AdminError` for the first topic that failed (after all results are in)."""
        version = self._version(ApiKey.DELETE_TOPICS, 7)
        if validate_only and version < 7:
            raise AdminError(int(ErrorCode.unsupported_version), "the server does not serve DeleteTopics v7")
        values: dict[str, Any] = {"timeout": timeout_ms, "validate_only": validate_only}
        if version >= 6:
            values["topics"] = [{"name": t, "topic_id": None} for t in topics]
        else:
            values["topic_names"] = list(topics)
        body = self._call(ApiKey.DELETE_TOPICS, version, values)
        for r in body.responses:
            if r.error_code != ErrorCode.none:
                raise AdminError(int(r.error_code), getattr(r, "error_message", None), r.name)
