"""Authentication state of one connection, as Kafka's ``SaslServerAuthenticator`` keeps it.

On a SASL listener a connection may send ApiVersions, then SaslHandshake, then SaslAuthenticate
(or, after a v0 handshake, raw SASL tokens with no Kafka header) until the mechanism completes.
Any other request before that is an illegal SASL state and closes the connection. PLAINTEXT and
SSL connections are authenticated from the start.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from ksteward.protocol.sasl import (
    PlainServer,
    SaslAuthenticationError,
    ScramCredential,
    ScramMechanism,
    ScramServer,
)

ANONYMOUS = "User:ANONYMOUS"
API_VERSIONS, SASL_HANDSHAKE, SASL_AUTHENTICATE = 18, 17, 36


class State(enum.Enum):
    HANDSHAKE = "handshake"  # expects ApiVersions or SaslHandshake
    AUTHENTICATE = "authenticate"  # expects SaslAuthenticate
    RAW_TOKENS = "raw_tokens"  # after SaslHandshake v0: bare tokens
    AUTHENTICATED = "authenticated"
    FAILED = "failed"


# What a connection may send before it has logged in, as Kafka's ``SaslServerAuthenticator`` allows it:
# the request header alone decides, so no other request body is ever decoded for an anonymous peer.
ALLOWED_BEFORE_LOGIN: dict[State, tuple[frozenset[int], str]] = {
    State.HANDSHAKE: (frozenset({API_VERSIONS, SASL_HANDSHAKE}), "SASL handshake"),
    State.AUTHENTICATE: (frozenset({SASL_AUTHENTICATE}), "SASL authentication"),
}


class _Mechanism(Protocol):
    @property
    def complete(self) -> bool: ...

    @property
    def username(self) -> str | None: ...

    def step(self, token: bytes) -> bytes: ...


@dataclass(frozen=True, slots=True)
class Credentials:
    """Where a listener's mechanisms look users up."""

    plain_verify: Callable[[str, str], bool]  # from the listener's JAAS config, constant-time
    scram_lookup: Callable[[ScramMechanism, str], ScramCredential | None]
    # Keeps the decoy salt sent for unknown SCRAM users stable across restarts, so a client cannot
    # tell an unknown user from a known one by watching the salt change.
    decoy_secret: bytes


class AuthSession:
    def __init__(
        self,
        *,
        sasl: bool,
        enabled_mechanisms: tuple[str, ...],
        credentials: Credentials | None,
        initial_principal: str = ANONYMOUS,
    ) -> None:
        self.state = State.HANDSHAKE if sasl else State.AUTHENTICATED
        self.principal = initial_principal
        self.enabled = enabled_mechanisms
        self._credentials = credentials
        self._mechanism: _Mechanism | None = None

    @property
    def authenticated(self) -> bool:
        return self.state is State.AUTHENTICATED

    def refusal(self, api_key: int) -> str | None:
        """Why a request of ``api_key`` may not be sent in this state (Kafka's IllegalSaslStateException
        text, with the API's name in place of ``api_key``), or None when it may."""
        rule = ALLOWED_BEFORE_LOGIN.get(self.state)
        if rule is None or api_key in rule[0]:
            return None
        return f"during {rule[1]}"

    def handshake(self, mechanism: str, version: int) -> bool:
        """Select ``mechanism``; False if it is not enabled (the caller answers and closes)."""
        if mechanism not in self.enabled or self._credentials is None:
            self.state = State.FAILED
            return False
        creds = self._credentials
        if mechanism == "PLAIN":
            self._mechanism = PlainServer(creds.plain_verify)
        else:
            scram_mechanism = ScramMechanism.from_name(mechanism)
            self._mechanism = ScramServer(
                scram_mechanism,
                lambda user: creds.scram_lookup(scram_mechanism, user),
                decoy_secret=creds.decoy_secret,
            )
        self.state = State.RAW_TOKENS if version == 0 else State.AUTHENTICATE
        return True

    def authenticate(self, token: bytes) -> bytes:
        """One SASL step. Raises :class:`SaslAuthenticationError` (and enters FAILED) on failure."""
        if self._mechanism is None:
            raise SaslAuthenticationError("SaslAuthenticate before SaslHandshake")
        try:
            challenge = self._mechanism.step(token)
        except SaslAuthenticationError:
            self.state = State.FAILED
            raise
        if self._mechanism.complete:
            self.principal = f"User:{self._mechanism.username}"
            self.state = State.AUTHENTICATED
        return challenge
