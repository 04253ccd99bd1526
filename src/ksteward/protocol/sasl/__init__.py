"""SASL mechanisms for ksteward's listeners, sans-IO: bytes in, bytes out.

The connection (``ksteward.protocol.connection``) feeds each SaslAuthenticate token to ``server.step(token)``
and sends back what it returns; a :class:`SaslAuthenticationError` ends the exchange, and ``str(error)`` is
the message for the response (``error.reason`` is for the server's log only).

    server = mechanism_server(mechanism, Credentials(plain_verify, scram_lookup, decoy_secret))
"""

from __future__ import annotations

from typing import Protocol

from ksteward.protocol.sasl.credentials import Credentials, mechanism_server
from ksteward.protocol.sasl.errors import (
    IllegalSaslStateError,
    SaslAuthenticationError,
    UnsupportedSaslMechanismError,
    invalid_credentials_message,
)
from ksteward.protocol.sasl.jaas import (
    PLAIN_LOGIN_MODULE,
    SCRAM_LOGIN_MODULE,
    JaasEntry,
    jaas_config_for,
    parse_jaas_config,
    parse_server_jaas_config,
    plain_users,
)
from ksteward.protocol.sasl.plain import PLAIN_MECHANISM, PlainServer, plain_verifier
from ksteward.protocol.sasl.scram import (
    ScramCredential,
    ScramMechanism,
    ScramServer,
    TokenCredential,
    credential_from_password,
    credential_from_salted_password,
)

__all__ = [
    "PLAIN_LOGIN_MODULE",
    "PLAIN_MECHANISM",
    "SCRAM_LOGIN_MODULE",
    "Credentials",
    "IllegalSaslStateError",
    "JaasEntry",
    "PlainServer",
    "SaslAuthenticationError",
    "SaslServer",
    "ScramCredential",
    "ScramMechanism",
    "ScramServer",
    "TokenCredential",
    "UnsupportedSaslMechanismError",
    "credential_from_password",
    "credential_from_salted_password",
    "invalid_credentials_message",
    "jaas_config_for",
    "mechanism_server",
    "parse_jaas_config",
    "parse_server_jaas_config",
    "plain_users",
    "plain_verifier",
]


class SaslServer(Protocol):
    """What the connection code needs from any mechanism (PlainServer and ScramServer both fit)."""

    @property
    def mechanism_name(self) -> str: ...

    @property
    def complete(self) -> bool: ...

    @property
    def username(self) -> str | None: ...

    @property
    def authorization_id(self) -> str: ...

    def step(self, token: bytes) -> bytes: ...
