"""SASL/PLAIN server side (RFC 4616), sans-IO, with Kafka's PlainSaslServer rules and messages.

    server = PlainServer(plain_verifier({"alice": "alice-secret"}))
    server.step(b"\\0alice\\0alice-secret")   # -> b"" ; server.complete is True
    server.authorization_id                  # -> "alice"

Kafka sends PLAIN's failure messages to the client verbatim (they are ``SaslAuthenticationException``),
and they are already generic: an unknown user and a wrong password both read
"Authentication failed: Invalid username or password".
"""

from __future__ import annotations

import hmac
from collections.abc import Callable, Mapping

from ksteward.protocol.sasl.errors import IllegalSaslStateError, SaslAuthenticationError

__all__ = ["PLAIN_MECHANISM", "PlainServer", "plain_verifier"]

PLAIN_MECHANISM = "PLAIN"

# Kafka's exact texts (PlainSaslServer.evaluateResponse).
_INVALID_CREDENTIALS = "Authentication failed: Invalid username or password"
_NO_USERNAME = "Authentication failed: username not specified"
_NO_PASSWORD = "Authentication failed: password not specified"
_VERIFY_FAILED = "Authentication failed: credentials for user could not be verified"
_AUTHZID_MISMATCH = "Authentication failed: Client requested an authorization id that is different from username"

PasswordVerifier = Callable[[str, str], bool]


def plain_verifier(users: Mapping[str, str]) -> PasswordVerifier:
    """A verifier over ``{username: password}``, as Kafka's ``user_NAME="password"`` JAAS options give.

    The comparison is constant-time, and an unknown user costs the same comparison as a known one, so
    response timing does not tell the two apart.
    """
    # Copy so that later changes to the caller's mapping cannot change who may log in mid-flight.
    table = {name: password.encode("utf-8") for name, password in users.items()}

    def verify(username: str, password: str) -> bool:
        given = password.encode("utf-8")
        expected = table.get(username)
        if expected is None:
            hmac.compare_digest(given, given)
            return False
        return hmac.compare_digest(given, expected)

    return verify


class PlainServer:
    """One PLAIN exchange: a single client token, an empty reply on success."""

    mechanism_name = PLAIN_MECHANISM

    def __init__(self, verify: PasswordVerifier) -> None:
        self._verify = verify
        self._complete = False
        self._failed = False
        self._username: str | None = None

    def __repr__(self) -> str:
        state = "complete" if self._complete else "failed" if self._failed else "initial"
        return f"PlainServer(state={state}, username={self._username!r})"

    @property
    def complete(self) -> bool:
        return self._complete

    @property
    def username(self) -> str | None:
        """The user the client claimed, once a token has been parsed (set on failure too, for audit)."""
        return self._username

    @property
    def authorization_id(self) -> str:
        """The authenticated user; Kafka's principal builder turns it into ``User:<id>``."""
        if not self._complete or self._username is None:
            raise RuntimeError("Authentication exchange has not completed")
        return self._username

    def step(self, token: bytes) -> bytes:
        """Evaluate the client's ``[authzid] NUL authcid NUL passwd`` token; ``b""`` on success."""
        if self._complete or self._failed:
            raise IllegalSaslStateError(
                "Unexpected SASL/PLAIN token: the exchange has already "
                + ("completed" if self._complete else "failed"),
                reason="token after end of exchange",
            )
        try:
            self._evaluate(token)
        except SaslAuthenticationError:
            self._failed = True
            raise
        self._complete = True
        return b""

    def _evaluate(self, token: bytes) -> None:
        try:
            text = token.decode("utf-8")
        except UnicodeDecodeError:
            # Kafka decodes with replacement characters, which then fail the password check; say the
            # same thing without pretending the bytes were text.
            raise SaslAuthenticationError(_INVALID_CREDENTIALS, reason="token is not UTF-8") from None
        parts = text.split("\0")
        if len(parts) != 3:
            # Kafka stops counting at 4 tokens, so its message never says more than "got 4".
            got = min(len(parts), 4)
            raise SaslAuthenticationError(
                f"Invalid SASL/PLAIN response: expected 3 tokens, got {got}", reason="malformed token"
            )
        authzid, username, password = parts
        if not username:
            raise SaslAuthenticationError(_NO_USERNAME, reason="empty username")
        self._username = username
        if not password:
            raise SaslAuthenticationError(_NO_PASSWORD, reason="empty password")
        try:
            ok = self._verify(username, password)
        except Exception as exc:
            # Not chained: a verifier's exception text could quote what it was given.
            raise SaslAuthenticationError(
                _VERIFY_FAILED, reason=f"password verifier raised {type(exc).__name__}"
            ) from None
        if not ok:
            raise SaslAuthenticationError(_INVALID_CREDENTIALS, reason="invalid username or password")
        # Kafka checks the authorization id only after the password, so a client with a wrong password
        # learns nothing from choosing an authzid.
        if authzid and authzid != username:
            raise SaslAuthenticationError(_AUTHZID_MISMATCH, reason="authorization id differs from username")
