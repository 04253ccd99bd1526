"""Errors raised by the SASL mechanisms.

The message of a :class:`SaslAuthenticationError` is what the client sees in the SaslAuthenticate
response, so it must never say *which* part of the credentials was wrong (that would let an
unauthenticated client probe for user names) and never carry a secret. The ``reason`` attribute is for
the server's own log and audit trail: a short fixed phrase, also free of secrets.
"""

from __future__ import annotations

from typing import ClassVar

__all__ = [
    "IllegalSaslStateError",
    "SaslAuthenticationError",
    "UnsupportedSaslMechanismError",
    "invalid_credentials_message",
]

# Kafka's error codes (org.apache.kafka.common.protocol.Errors), so the connection code can map an
# exception to a response without a lookup table of its own.
_UNSUPPORTED_SASL_MECHANISM = 33
_ILLEGAL_SASL_STATE = 34
_SASL_AUTHENTICATION_FAILED = 58


def invalid_credentials_message(mechanism_name: str, *, reauthentication: bool = False) -> str:
    """Kafka's one message for every SCRAM failure, whatever the cause.

    Kafka's SaslServerAuthenticator replaces the text of any ``SaslException`` with this, because the
    original text may reveal whether the user exists.
    """
    phase = "re-authentication" if reauthentication else "authentication"
    return f"Authentication failed during {phase} due to invalid credentials with SASL mechanism {mechanism_name}"


class SaslAuthenticationError(Exception):
    """Authentication failed; ``str(error)`` is safe to send to the client.

    ``reason`` says what went wrong for the server's log (e.g. ``"unknown user"``); never send it to the
    client.
    """

    error_code: ClassVar[int] = _SASL_AUTHENTICATION_FAILED

    def __init__(self, message: str, *, reason: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.reason = reason or message


class IllegalSaslStateError(SaslAuthenticationError):
    """A token arrived after the exchange had already completed or failed (Kafka: ILLEGAL_SASL_STATE)."""

    error_code: ClassVar[int] = _ILLEGAL_SASL_STATE


class UnsupportedSaslMechanismError(Exception):
    """The client asked for a mechanism that is not enabled (Kafka: UNSUPPORTED_SASL_MECHANISM)."""

    error_code: ClassVar[int] = _UNSUPPORTED_SASL_MECHANISM

    def __init__(self, mechanism: str, enabled_mechanisms: tuple[str, ...] = ()) -> None:
        # Kafka's wording; the mechanism name is the client's own input and not a secret.
        super().__init__(f"Unsupported SASL mechanism {mechanism}")
        self.mechanism = mechanism
        self.enabled_mechanisms = enabled_mechanisms
