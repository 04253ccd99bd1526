"""Principals on the wire: Kafka's ``KafkaPrincipalSerde`` as ``DefaultKafkaPrincipalBuilder`` implements it.

A broker that forwards a request in an Envelope (KIP-590) puts the client's principal in the envelope's
``RequestPrincipal`` bytes, and the controller reads it back with its own serde. Kafka's default
encoding (``DefaultKafkaPrincipalBuilder.serialize`` / ``deserialize``) is ``MessageUtil``'s
version-prefixed form of the ``DefaultPrincipalData`` message:

- an int16 version, big-endian (0, the only version);
- then ``DefaultPrincipalData`` v0, which is flexible: ``Type`` and ``Name`` as compact strings,
  ``TokenAuthenticated`` as a boolean, then an empty tagged-field section.

Deserialising refuses any other version (Kafka's "Invalid principal data version N"); bytes after the
message are ignored, as Kafka's generated reader ignores them. Errors are :class:`PrincipalSerdeError`
(Kafka's ``SerializationException``); the controller answers them with PRINCIPAL_DESERIALIZATION_FAILURE.
"""

from __future__ import annotations

import io
import struct
from dataclasses import dataclass

from kio.schema.default_principal_data.v0 import DefaultPrincipalData
from kio.serial import entity_reader, entity_writer
from kio.serial.errors import BufferUnderflow, DecodeError

from ksteward.protocol.errors import InvalidRequestError
from ksteward.protocol.schema_walk import check_message

__all__ = [
    "PRINCIPAL_DATA_VERSION",
    "KafkaPrincipal",
    "PrincipalSerdeError",
    "deserialize_principal",
    "serialize_principal",
]

PRINCIPAL_DATA_VERSION = 0  # DefaultPrincipalData's only version (lowest = highest)
_VERSION = struct.Struct(">h")
_write_data = entity_writer(DefaultPrincipalData)
_read_data = entity_reader(DefaultPrincipalData)


class PrincipalSerdeError(Exception):
    """The bytes are not a principal this serde wrote (Kafka's ``SerializationException``)."""


@dataclass(frozen=True, slots=True)
class KafkaPrincipal:
    """Kafka's ``KafkaPrincipal``: a type (``User``), a name, and whether a delegation token authenticated it."""

    principal_type: str
    name: str
    token_authenticated: bool = False

    @classmethod
    def parse(cls, text: str, *, token_authenticated: bool = False) -> KafkaPrincipal:
        """``"User:alice"`` as a principal; the type ends at the first colon (Kafka's
        ``SecurityUtils.parseKafkaPrincipal``)."""
        principal_type, sep, name = text.partition(":")
        if not sep or not principal_type:
            raise ValueError("a principal is written TYPE:NAME")
        return cls(principal_type, name, token_authenticated)

    def __str__(self) -> str:
        return f"{self.principal_type}:{self.name}"


def serialize_principal(principal: KafkaPrincipal) -> bytes:
    """``DefaultKafkaPrincipalBuilder.serialize``: the version prefix, then ``DefaultPrincipalData`` v0."""
    out = io.BytesIO()
    out.write(_VERSION.pack(PRINCIPAL_DATA_VERSION))
    _write_data(
        out,
        DefaultPrincipalData(
            type_=principal.principal_type,
            name=principal.name,
            token_authenticated=principal.token_authenticated,
        ),
    )
    return out.getvalue()


def deserialize_principal(data: bytes) -> KafkaPrincipal:
    """``DefaultKafkaPrincipalBuilder.deserialize``. Raises :class:`PrincipalSerdeError`."""
    if len(data) < _VERSION.size:
        raise PrincipalSerdeError("principal data is too short for its version")
    (version,) = _VERSION.unpack_from(data, 0)
    if version != PRINCIPAL_DATA_VERSION:
        raise PrincipalSerdeError(f"Invalid principal data version {version}")
    try:
        # Every declared length is bounded by the bytes present before kio's reader sees them.
        check_message(data, _VERSION.size, (DefaultPrincipalData,))
        principal, _ = _read_data(data, _VERSION.size)
    except (InvalidRequestError, DecodeError, BufferUnderflow, ValueError, KeyError, UnicodeDecodeError) as exc:
        raise PrincipalSerdeError(f"cannot decode DefaultPrincipalData: {type(exc).__name__}") from None
    if principal.type_ is None or principal.name is None:  # kio reads a null compact string as None
        raise PrincipalSerdeError("cannot decode DefaultPrincipalData: a null type or name")
    return KafkaPrincipal(principal.type_, principal.name, bool(principal.token_authenticated))
