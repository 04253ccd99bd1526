"""SASL/SCRAM-SHA-256 and SCRAM-SHA-512 server side (RFC 5802, RFC 7677), sans-IO.

    server = ScramServer(ScramMechanism.SCRAM_SHA_256, credentials.get)
    server_first = server.step(client_first)   # b"r=...,s=...,i=4096"
    server_final = server.step(client_final)   # b"v=..." ; server.complete is True
    server.authorization_id                    # the authenticated user name

Kafka's ScramSaslServer is the behaviour reference, with these deliberate differences, each because
Kafka's choice leaks information or deviates from the RFC without benefit to any client:

* An unknown user gets a decoy server-first message (a salt derived from the user name with a
  per-process secret, so it is stable across attempts) and fails at client-final. Kafka fails at
  client-first; the client-visible message is the same either way, but failing later also hides
  existence from anyone who watches *when* the exchange stops.
* An authorization id that differs from the user name is rejected before the credential lookup, so
  that Kafka's specific message for it cannot tell existing users from unknown ones.
* gs2 flag ``y`` (client supports channel binding, thinks the server does not) is accepted as RFC 5802
  requires of a server without SCRAM-PLUS; Kafka accepts only ``n``. ``p=`` is rejected.
* ``c=`` in client-final must be base64 of the gs2 header, and AuthMessage uses the messages' bytes as
  sent; Kafka checks neither and rebuilds both from parsed fields.
* The reserved ``m=`` extension is rejected (RFC 5802: a server that does not support it MUST fail).
* ``tokenauth=true`` (KIP-48) looks the user name up as a delegation token id (``token_lookup``); the
  authenticated user is then the token's owner. An unknown or expired token gets the decoy treatment of an
  unknown user (Kafka fails at client-first with the same generic message). Without ``token_lookup`` (no
  ``delegation.token.secret.key``) every token login fails.
* User names may be any UTF-8 (RFC 5802 saslname); Kafka's pattern admits ASCII only.
"""

from __future__ import annotations

import base64
import binascii
import enum
import hashlib
import hmac
import secrets
from collections.abc import Callable
from dataclasses import dataclass

from ksteward.protocol.sasl.errors import (
    IllegalSaslStateError,
    SaslAuthenticationError,
    UnsupportedSaslMechanismError,
    invalid_credentials_message,
)

__all__ = [
    "ScramCredential",
    "ScramMechanism",
    "ScramServer",
    "TokenCredential",
    "credential_from_password",
    "credential_from_salted_password",
]

# Kafka's ScramMechanism: every mechanism has minIterations 4096 and maxIterations 16384; the controller
# (ScramControlManager) rejects upserts outside that range with "Too few/many iterations".
_MIN_ITERATIONS = 4096
_MAX_ITERATIONS = 16384


class ScramMechanism(enum.IntEnum):
    """SCRAM mechanisms; the values are Kafka's wire codes in Describe/AlterUserScramCredentials."""

    SCRAM_SHA_256 = 1
    SCRAM_SHA_512 = 2

    @property
    def mechanism_name(self) -> str:
        """The SASL mechanism name, e.g. ``"SCRAM-SHA-256"``."""
        return "SCRAM-SHA-256" if self is ScramMechanism.SCRAM_SHA_256 else "SCRAM-SHA-512"

    @property
    def hash_name(self) -> str:
        """The :mod:`hashlib` name of the hash, e.g. ``"sha256"``."""
        return "sha256" if self is ScramMechanism.SCRAM_SHA_256 else "sha512"

    @property
    def digest_size(self) -> int:
        return hashlib.new(self.hash_name).digest_size

    @property
    def min_iterations(self) -> int:
        return _MIN_ITERATIONS

    @property
    def max_iterations(self) -> int:
        return _MAX_ITERATIONS

    @classmethod
    def from_name(cls, name: str) -> ScramMechanism:
        """Look a mechanism up by its exact SASL name (case-sensitive, as Kafka's map is)."""
        for mechanism in cls:
            if mechanism.mechanism_name == name:
                return mechanism
        raise UnsupportedSaslMechanismError(name, tuple(m.mechanism_name for m in cls))

    def hmac(self, key: bytes, message: bytes) -> bytes:
        return hmac.new(key, message, self.hash_name).digest()

    def hash(self, data: bytes) -> bytes:
        return hashlib.new(self.hash_name, data).digest()


@dataclass(frozen=True, repr=False)
class ScramCredential:
    """What the server stores for a SCRAM user: never the password, nor the salted password."""

    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int

    def __repr__(self) -> str:
        # Salt and keys are offline-attack material: they stay out of logs and tracebacks.
        return f"ScramCredential(iterations={self.iterations}, salt=<hidden>, stored_key=<hidden>, server_key=<hidden>)"

    __str__ = __repr__


@dataclass(frozen=True, repr=False)
class TokenCredential:
    """A delegation token as SCRAM sees it (Kafka's ``DelegationTokenCache``): the credential derived from
    the token's HMAC, and who the login becomes."""

    owner: str  # the owner's principal name: the session is User:<owner> (Kafka's DelegationTokenCache.owner)
    requester: str  # "User:admin": who created the token, for the login's log line
    credential: ScramCredential

    def __repr__(self) -> str:
        return f"TokenCredential(owner={self.owner!r}, requester={self.requester!r}, credential=<hidden>)"

    __str__ = __repr__


def credential_from_password(
    mechanism: ScramMechanism,
    password: str,
    *,
    salt: bytes | None = None,
    iterations: int = _MIN_ITERATIONS,
) -> ScramCredential:
    """Derive a credential from a clear password (no SASLprep: Kafka and its clients use raw UTF-8)."""
    _check_iterations(mechanism, iterations)
    if salt is None:
        salt = _random_salt()
    # Hi() of RFC 5802 is PBKDF2 with HMAC and one block of output.
    salted_password = hashlib.pbkdf2_hmac(mechanism.hash_name, password.encode("utf-8"), salt, iterations)
    return credential_from_salted_password(mechanism, salt, salted_password, iterations)


def credential_from_salted_password(
    mechanism: ScramMechanism, salt: bytes, salted_password: bytes, iterations: int
) -> ScramCredential:
    """Derive a credential from what AlterUserScramCredentials carries (salt and SaltedPassword)."""
    _check_iterations(mechanism, iterations)
    client_key = mechanism.hmac(salted_password, b"Client Key")
    return ScramCredential(
        salt=bytes(salt),
        stored_key=mechanism.hash(client_key),
        server_key=mechanism.hmac(salted_password, b"Server Key"),
        iterations=iterations,
    )


def _check_iterations(mechanism: ScramMechanism, iterations: int) -> None:
    # Kafka's controller texts for UNACCEPTABLE_CREDENTIAL.
    if iterations < mechanism.min_iterations:
        raise ValueError("Too few iterations")
    if iterations > mechanism.max_iterations:
        raise ValueError("Too many iterations")


def _base36(value: int) -> str:
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    if value == 0:
        return "0"
    out: list[str] = []
    while value:
        value, digit = divmod(value, 36)
        out.append(digits[digit])
    return "".join(reversed(out))


def _random_token() -> str:
    # Kafka's ScramFormatter.secureRandomString: 130 random bits written in base 36. Used for server
    # nonces and salts, so ksteward's credentials look like Kafka's and decoy salts look like both.
    return _base36(secrets.randbits(130))


def _random_salt() -> bytes:
    return _random_token().encode("ascii")


# Keys the decoy salts of unknown users. Per process unless the caller passes a persistent secret.
_DECOY_SECRET = secrets.token_bytes(32)


class _Malformed(Exception):
    """A message does not follow the grammar; carries a reason for the server log only."""


def _decode(token: bytes) -> str:
    try:
        text = token.decode("utf-8")
    except UnicodeDecodeError:
        raise _Malformed("message is not UTF-8") from None
    if "\0" in text:
        raise _Malformed("message contains NUL")
    return text


def _decode_saslname(value: str) -> str:
    """RFC 5802 saslname: ``,`` and ``=`` arrive as ``=2C`` and ``=3D``; any other ``=`` is invalid."""
    if not value:
        raise _Malformed("empty saslname")
    out: list[str] = []
    i = 0
    while i < len(value):
        ch = value[i]
        if ch == "=":
            code = value[i + 1 : i + 3]
            if code == "2C":
                out.append(",")
            elif code == "3D":
                out.append("=")
            else:
                raise _Malformed("invalid escape in saslname")
            i += 3
        else:
            out.append(ch)
            i += 1
    return "".join(out)


def _is_printable_nonce(nonce: str) -> bool:
    # RFC 5802 printable: %x21-2B / %x2D-7E (any visible ASCII but the comma).
    return bool(nonce) and all("\x21" <= ch <= "\x7e" and ch != "," for ch in nonce)


def _parse_extensions(fields: list[str]) -> dict[str, str]:
    extensions: dict[str, str] = {}
    for field in fields:
        key, sep, value = field.partition("=")
        if not sep or not key.isascii() or not key.isalpha() or not value:
            raise _Malformed("invalid extension")
        extensions[key] = value
    return extensions


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _b64decode(text: str) -> bytes:
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise _Malformed("invalid base64") from None


class _State(enum.Enum):
    CLIENT_FIRST = "awaiting client-first"
    CLIENT_FINAL = "awaiting client-final"
    COMPLETE = "complete"
    FAILED = "failed"


CredentialLookup = Callable[[str], ScramCredential | None]
TokenLookup = Callable[[str], TokenCredential | None]

# Kafka sends this one verbatim (a SaslAuthenticationException in ScramSaslServer); it is decided
# from the message alone, so it reveals nothing about the user.
_AUTHZID_MISMATCH = "Authentication failed: Client requested an authorization id that is different from username"


class ScramServer:
    """One SCRAM exchange: client-first -> server-first, client-final -> server-final."""

    def __init__(
        self,
        mechanism: ScramMechanism,
        lookup: CredentialLookup,
        *,
        nonce_factory: Callable[[], str] | None = None,
        reauthentication: bool = False,
        decoy_secret: bytes | None = None,
        token_lookup: TokenLookup | None = None,
    ) -> None:
        """
        ``lookup`` returns the stored credential for a user name, or None for an unknown user.
        ``nonce_factory`` makes the server's part of the nonce (tests pass a fixed one).
        ``reauthentication`` only changes the wording of the failure message, as in Kafka.
        ``decoy_secret`` keys the decoy salts shown to unknown users; pass a persistent secret to keep
        them stable across restarts.
        ``token_lookup`` returns a live delegation token by id (``tokenauth=true``), None for an unknown or
        expired one; None itself: delegation tokens are disabled.
        """
        self._mechanism = mechanism
        self._lookup = lookup
        self._token_lookup = token_lookup
        # Who a token login becomes, and who created the token; set once a live token is found.
        self._token_owner: str | None = None
        self._token_requester: str | None = None
        self._nonce_factory = nonce_factory or _random_token
        self._failure_message = invalid_credentials_message(mechanism.mechanism_name, reauthentication=reauthentication)
        self._decoy_secret = decoy_secret if decoy_secret is not None else _DECOY_SECRET
        self._state = _State.CLIENT_FIRST
        self._username: str | None = None
        self._authorization_id: str | None = None
        # Exchange state between the two steps; dropped as soon as the exchange ends.
        self._credential: ScramCredential | None = None
        self._unknown_user = False
        self._token_auth = False  # the client asked for a delegation token login (tokenauth=true)
        self._gs2_header = ""
        self._client_first_bare = b""
        self._server_first = b""
        self._nonce = ""

    def __repr__(self) -> str:
        return (
            f"ScramServer({self._mechanism.mechanism_name}, state={self._state.value!r}, username={self._username!r})"
        )

    @property
    def mechanism(self) -> ScramMechanism:
        return self._mechanism

    @property
    def mechanism_name(self) -> str:
        return self._mechanism.mechanism_name

    @property
    def complete(self) -> bool:
        return self._state is _State.COMPLETE

    @property
    def username(self) -> str | None:
        """The user the client claimed, once client-first has been parsed (set on failure too)."""
        return self._username

    @property
    def authorization_id(self) -> str:
        """The authenticated user; only after the exchange has completed."""
        if self._authorization_id is None:
            raise RuntimeError("Authentication exchange has not completed")
        return self._authorization_id

    @property
    def token_authenticated(self) -> bool:
        """Whether the completed login used a delegation token (Kafka's ``KafkaPrincipal.tokenAuthenticated``)."""
        return self._token_owner is not None and self._state is _State.COMPLETE

    @property
    def token_requester(self) -> str | None:
        """Who created the token of a completed token login."""
        return self._token_requester if self.token_authenticated else None

    def step(self, token: bytes) -> bytes:
        """Evaluate one client message and return the server's reply.

        Raises :class:`SaslAuthenticationError` (message safe for the client) on any failure, after
        which the exchange is over.
        """
        if self._state in (_State.COMPLETE, _State.FAILED):
            raise IllegalSaslStateError(
                f"Unexpected SASL/{self.mechanism_name} token: the exchange is {self._state.value}",
                reason="token after end of exchange",
            )
        try:
            if self._state is _State.CLIENT_FIRST:
                reply = self._receive_client_first(token)
                self._state = _State.CLIENT_FINAL
            else:
                reply = self._receive_client_final(token)
                self._state = _State.COMPLETE
                self._clear()
            return reply
        except _Malformed as exc:
            self._abort()
            raise SaslAuthenticationError(self._failure_message, reason=str(exc)) from None
        except SaslAuthenticationError:
            self._abort()
            raise

    def _fail(self, reason: str) -> SaslAuthenticationError:
        return SaslAuthenticationError(self._failure_message, reason=reason)

    def _abort(self) -> None:
        self._state = _State.FAILED
        self._clear()

    def _clear(self) -> None:
        self._credential = None
        self._client_first_bare = b""
        self._server_first = b""

    def _receive_client_first(self, token: bytes) -> bytes:
        text = _decode(token)
        # gs2-header = gs2-cbind-flag "," [authzid] ","
        if text.startswith("p="):
            raise _Malformed("client requires channel binding")
        if not (text.startswith("n,") or text.startswith("y,")):
            raise _Malformed("invalid gs2 header")
        end = text.find(",", 2)
        if end < 0:
            raise _Malformed("invalid gs2 header")
        authzid_field = text[2:end]
        authzid: str | None = None
        if authzid_field:
            if not authzid_field.startswith("a="):
                raise _Malformed("invalid gs2 header")
            authzid = _decode_saslname(authzid_field[2:])
        gs2_header = text[: end + 1]
        bare = text[end + 1 :]

        # client-first-message-bare = [reserved-mext ","] username "," nonce ["," extensions]
        fields = bare.split(",")
        if fields[0].startswith("m="):
            raise _Malformed("mandatory extension not supported")
        if len(fields) < 2 or not fields[0].startswith("n=") or not fields[1].startswith("r="):
            raise _Malformed("invalid client-first message")
        username = _decode_saslname(fields[0][2:])
        client_nonce = fields[1][2:]
        if not _is_printable_nonce(client_nonce):
            raise _Malformed("invalid client nonce")
        extensions = _parse_extensions(fields[2:])
        self._username = username

        if authzid is not None and authzid != username:
            raise SaslAuthenticationError(_AUTHZID_MISMATCH, reason="authorization id differs from username")
        # Kafka reads tokenauth with Boolean.parseBoolean: "true" in any case. Other extensions are
        # ignored, as Kafka ignores them.
        credential = self._credential_for(username, extensions.get("tokenauth", "").lower() == "true")
        if credential is None:
            credential = self._decoy_credential(username)
            self._unknown_user = True
        elif credential.iterations < self._mechanism.min_iterations:
            raise self._fail("stored credential has fewer iterations than the mechanism minimum")

        server_nonce = self._nonce_factory()
        if not _is_printable_nonce(server_nonce):
            raise ValueError("nonce_factory must return printable ASCII without commas")
        self._nonce = client_nonce + server_nonce
        self._gs2_header = gs2_header
        self._client_first_bare = bare.encode("utf-8")
        self._credential = credential
        self._server_first = f"r={self._nonce},s={_b64(credential.salt)},i={credential.iterations}".encode("ascii")
        return self._server_first

    def _credential_for(self, username: str, token_auth: bool) -> ScramCredential | None:
        """The stored credential of a user, or of a delegation token (``token_auth``); None when unknown."""
        self._token_auth = token_auth
        if token_auth and self._token_lookup is None:
            raise self._fail("delegation token authentication is not enabled")
        try:
            if not token_auth:
                return self._lookup(username)
            assert self._token_lookup is not None
            token = self._token_lookup(username)
        except Exception as exc:
            # Not chained: the lookup's exception is for the server log and is summarised in reason.
            raise self._fail(f"credential lookup raised {type(exc).__name__}") from None
        if token is None:
            return None
        self._token_owner, self._token_requester = token.owner, token.requester
        return token.credential

    def _decoy_credential(self, username: str) -> ScramCredential:
        # Stable per user name, so that repeated probes see the same salt, as they would for a real
        # user; shaped like _random_salt() (130 bits in base 36). The keys are random: no proof matches.
        digest = hmac.new(
            self._decoy_secret,
            f"{self.mechanism_name}\0{username}".encode(),
            "sha256",
        ).digest()
        salt = _base36(int.from_bytes(digest[:17], "big") >> 6).encode("ascii")
        size = self._mechanism.digest_size
        return ScramCredential(
            salt=salt,
            stored_key=secrets.token_bytes(size),
            server_key=secrets.token_bytes(size),
            iterations=self._mechanism.min_iterations,
        )

    def _receive_client_final(self, token: bytes) -> bytes:
        credential = self._credential
        assert credential is not None and self._username is not None  # set by client-first
        text = _decode(token)
        # client-final-message = channel-binding "," nonce ["," extensions] "," proof
        without_proof, sep, proof_field = text.rpartition(",")
        if not sep or not proof_field.startswith("p="):
            raise _Malformed("invalid client-final message")
        fields = without_proof.split(",")
        if len(fields) < 2 or not fields[0].startswith("c=") or not fields[1].startswith("r="):
            raise _Malformed("invalid client-final message")
        _parse_extensions(fields[2:])
        if fields[0][2:] != _b64(self._gs2_header.encode("utf-8")):
            raise self._fail("channel binding data does not match the gs2 header")
        if fields[1][2:] != self._nonce:
            raise self._fail("nonce does not match server-first")
        proof = _b64decode(proof_field[2:])
        if len(proof) != self._mechanism.digest_size:
            raise _Malformed("client proof has the wrong length")

        auth_message = b",".join((self._client_first_bare, self._server_first, without_proof.encode("utf-8")))
        # ClientKey = ClientProof XOR HMAC(StoredKey, AuthMessage); the client knows the password iff
        # H(ClientKey) == StoredKey.
        client_signature = self._mechanism.hmac(credential.stored_key, auth_message)
        client_key = bytes(p ^ s for p, s in zip(proof, client_signature, strict=True))
        proof_ok = hmac.compare_digest(self._mechanism.hash(client_key), credential.stored_key)
        if self._unknown_user:
            raise self._fail("unknown or expired delegation token" if self._token_auth else "unknown user")
        if not proof_ok:
            raise self._fail("invalid client proof")

        server_signature = self._mechanism.hmac(credential.server_key, auth_message)
        # A token login is its owner (Kafka's ScramSaslServer: authorizationId = tokenCallback.tokenOwner()).
        self._authorization_id = self._token_owner if self._token_owner is not None else self._username
        return b"v=" + _b64(server_signature).encode("ascii")
