"""A small synchronous admin client for ksteward's own extensions, such as DeleteTopics v7.

Real Kafka clients cover everything standard; this one exists for what they cannot send:
``delete_topics(..., validate_only=True)`` (KIP-934), and read-your-writes across brokers (a mutation's
response reports a metadata offset; later requests carry it, so a broker answers only once it has applied
that offset: see ``ksteward.protocol.read_your_writes``). It speaks PLAINTEXT or SASL_PLAINTEXT with
PLAIN, negotiates versions with ApiVersions, and raises :class:`AdminError` with Kafka's error
name and message::

    with AdminClient("localhost:9092", sasl_plain=("admin", "admin-secret")) as admin:
        admin.delete_topics(["orders"], validate_only=True)   # {"orders": None} or raises

    with AdminClient("broker-a:9092") as writer:
        writer.request(ApiKey.CREATE_ACLS, {"creations": [...]}, max_version=3)
    with AdminClient("broker-b:9092", min_metadata_offset=writer.metadata_offset) as reader:
        reader.request(ApiKey.DESCRIBE_ACLS, {...}, max_version=3)   # sees the ACL
"""

from __future__ import annotations

import socket
import struct
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from kio.schema.errors import ErrorCode

from ksteward.protocol.apis import ApiKey
from ksteward.protocol.build import build
from ksteward.protocol.codec import decode_response, encode_request, encode_request_header, request_class
from ksteward.protocol.framing import DEFAULT_MAX_FRAME_BYTES, check_frame_size, frame

if TYPE_CHECKING:
    from ksteward.authorizer import AclBinding


class AdminError(Exception):
    """A request failed: ``code`` is Kafka's error code, ``name`` its name."""

    def __init__(self, code: int, message: str | None, topic: str | None = None) -> None:
        self.code = code
        self.name = ErrorCode(code).name.upper() if code in ErrorCode._value2member_map_ else str(code)
        self.topic = topic
        where = f" for topic {topic}" if topic else ""
        super().__init__(f"{self.name}{where}: {message or 'no message'}")


class AdminClient:
    def __init__(
        self,
        bootstrap: str,
        *,
        sasl_plain: tuple[str, str] | None = None,
        timeout: float = 30.0,
        min_metadata_offset: int | None = None,
    ) -> None:
        #: Read-your-writes (ksteward.protocol.read_your_writes): the highest metadata offset a response has
        #: reported, sent with every request so the node answers only once it has applied it. Pass another
        #: client's ``metadata_offset`` as ``min_metadata_offset`` to read its writes on any broker.
        self.metadata_offset = min_metadata_offset
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

    def _call(self, api_key: int, version: int, values: dict[str, Any], *, encoded_body: bytes | None = None) -> Any:
        """Send one request (``values``, or a body already encoded) and return the response body."""
        self._correlation += 1
        # -1 until a write has been answered: no wait, but the answers carry the committed offset.
        offset = -1 if self.metadata_offset is None else self.metadata_offset
        if encoded_body is None:
            body = build(request_class(api_key, version), values)
            payload = encode_request(api_key, version, self._correlation, "ksteward-admin", body,
                                     min_offset=offset)  # fmt: skip
        else:
            header = encode_request_header(api_key, version, self._correlation, "ksteward-admin", min_offset=offset)
            payload = header + encoded_body
        self._sock.sendall(frame(payload))
        (size,) = struct.unpack(">i", self._read_exactly(4))
        check_frame_size(size, DEFAULT_MAX_FRAME_BYTES, "the response size limit")
        response = decode_response(api_key, version, self._read_exactly(size))
        if response.metadata_offset is not None:
            self.metadata_offset = max(self.metadata_offset or -1, response.metadata_offset)
        return response.body

    def request(self, api_key: int, values: dict[str, Any], *, max_version: int) -> Any:
        """Send one request at the highest version both sides serve, at most ``max_version``; return the
        response body (a kio entity). ``values`` must suit every version it may be sent at."""
        return self._call(api_key, self._version(api_key, max_version), values)

    def _api_versions(self) -> dict[int, tuple[int, int]]:
        body = self._call(ApiKey.API_VERSIONS, 3, {"client_software_name": "ksteward", "client_software_version": "0"})
        if body.error_code != ErrorCode.none:
            raise AdminError(int(body.error_code), "ApiVersions failed")
        return {int(k.api_key): (int(k.min_version), int(k.max_version)) for k in body.api_keys}

    def max_version(self, api_key: int) -> int:
        """The highest version of ``api_key`` the server serves, or -1 when it serves none."""
        low, high = self._versions.get(api_key, (0, -1))
        return high if high >= low else -1

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

    # --- CreateAcls v4 / DescribeAcls v4: the atomic ACL change (ksteward.protocol.acl_transactions) -------------

    def serves_acl_transactions(self) -> bool:
        """True when the server serves CreateAcls v4 and DescribeAcls v4 (ksteward's extension)."""
        return self.max_version(ApiKey.CREATE_ACLS) >= 4 and self.max_version(ApiKey.DESCRIBE_ACLS) >= 4

    def describe_acls_at(self, acl_filter: dict[str, Any]) -> tuple[list[tuple[Any, ...]], int]:
        """DescribeAcls v4: the ACLs matching ``acl_filter`` (DescribeAcls request fields) as 7-tuples of wire
        codes (resource type, name, pattern type, principal, host, operation, permission), and the metadata
        offset they were read at."""
        body = self._call(ApiKey.DESCRIBE_ACLS, self._version(ApiKey.DESCRIBE_ACLS, 4), acl_filter)
        if body.error_code != ErrorCode.none:
            raise AdminError(int(body.error_code), body.error_message)
        acls = [(int(r.resource_type), r.resource_name, int(r.pattern_type), a.principal, a.host, int(a.operation),
                 int(a.permission_type)) for r in body.resources for a in r.acls]  # fmt: skip
        return acls, int(getattr(body, "metadata_offset", -1))

    def acl_transaction(
        self,
        creations: list[dict[str, Any]],
        deletions: list[dict[str, Any]],
        *,
        unchanged_since: int = -1,
        validate_only: bool = False,
    ) -> tuple[int, int, int]:
        """CreateAcls v4: create and delete in one atomic metadata batch, only if no ACL changed after
        ``unchanged_since`` (-1: always). Returns (created, deleted, offset of the last ACL change); raises
        :class:`AdminError` when nothing was applied, naming the first failed entries."""
        values = {"creations": creations, "deletions": deletions, "acls_unchanged_since": unchanged_since,
                  "validate_only": validate_only}  # fmt: skip
        return self._acl_transaction(values, None)

    def replace_acls(
        self, create: Sequence[AclBinding], delete: Sequence[AclBinding], *, unchanged_since: int = -1,
        validate_only: bool = False,
    ) -> tuple[int, int, int]:  # fmt: skip
        """:meth:`acl_transaction` with whole bindings: ``delete`` as filters that match exactly each one. The
        body is encoded directly (``protocol.fast_acl_transactions``): kio takes seconds for 10^5 entries."""
        from ksteward.protocol.fast_acl_transactions import encode_acl_transaction_body

        body = encode_acl_transaction_body(create, delete, unchanged_since, validate_only)
        return self._acl_transaction({}, body)

    def _acl_transaction(self, values: dict[str, Any], encoded_body: bytes | None) -> tuple[int, int, int]:
        if self.max_version(ApiKey.CREATE_ACLS) < 4:
            raise AdminError(int(ErrorCode.unsupported_version), "the server does not serve CreateAcls v4")
        body = self._call(ApiKey.CREATE_ACLS, 4, values, encoded_body=encoded_body)
        if body.error_code != ErrorCode.none:
            failed = [f"creation {e.index}: {e.error_message}" for e in body.creation_errors[:3]]
            failed += [f"deletion {e.index}: {e.error_message}" for e in body.deletion_errors[:3]]
            detail = f" ({'; '.join(failed)})" if failed else ""
            raise AdminError(int(body.error_code), f"{body.error_message}{detail}")
        return int(body.created), int(body.deleted), int(body.acls_changed_at)
