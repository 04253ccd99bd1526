"""Delegation tokens on the controller (KIP-48 in KRaft): Kafka's ``DelegationTokenControlManager``.

Pure: given the image, the caller's principal, the request and the wall-clock time, return the records and
the response. The rules (docs/delegation-tokens.md):

- Tokens are enabled only with ``delegation.token.secret.key`` set and non-empty; otherwise every call is
  DELEGATION_TOKEN_AUTH_DISABLED.
- A token's HMAC is HmacSHA512 of its id (UTF-8) keyed with the secret key (UTF-8); it is never stored: the
  metadata log holds a ``DelegationTokenRecord`` of owner, requester, renewers, timestamps and id only, and
  every node that knows the key derives the HMAC again.
- Create: the owner is the request's (v3) or the caller; renewers must be ``User`` principals
  (INVALID_PRINCIPAL_TYPE); max timestamp = now + min(``delegation.token.max.lifetime.ms``, the request's
  positive max lifetime); expiry = min(max, now + ``delegation.token.expiry.time.ms``).
- Renew and expire find the token by its HMAC (DELEGATION_TOKEN_NOT_FOUND), and only its owner or a renewer
  may call them (DELEGATION_TOKEN_OWNER_MISMATCH). Renew refuses an expired token (DELEGATION_TOKEN_EXPIRED)
  and moves the expiry to min(max, now + min(expiry time, a positive period)). Expire with a negative period
  removes the token at once; otherwise an expired token is DELEGATION_TOKEN_EXPIRED and a live one expires at
  min(max, now + period).
- The sweep (every ``delegation.token.expiry.check.interval.ms``) writes a ``RemoveDelegationTokenRecord`` for
  every token past its expiry or max timestamp.
"""

from __future__ import annotations

import hashlib
import hmac
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from kio.schema.errors import ErrorCode
from kio.static.primitive import i64

from ksteward.controller.result import ControllerResult
from ksteward.metadata.image import MetadataImage
from ksteward.metadata.records import DelegationTokenRecord, RemoveDelegationTokenRecord

__all__ = [
    "ERROR_TIMESTAMP",
    "CreatedToken",
    "DelegationTokenControlManager",
    "DelegationTokenSettings",
    "TokenExpiry",
    "describable",
    "is_expired",
    "token_hmac",
]

SECRET_KEY: Final = "delegation.token.secret.key"
MAX_LIFETIME: Final = "delegation.token.max.lifetime.ms"
EXPIRY_TIME: Final = "delegation.token.expiry.time.ms"
EXPIRY_CHECK_INTERVAL: Final = "delegation.token.expiry.check.interval.ms"
_LONG_MAX: Final = 2**63 - 1
ERROR_TIMESTAMP: Final = -1  # Kafka's DelegationTokenManager.ErrorTimestamp
USER_TYPE: Final = "User"  # KafkaPrincipal.USER_TYPE


def _positive_long(static: Mapping[str, str], key: str, default: int) -> int:
    raw = static.get(key, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ValueError(f"{key}: {raw!r} is not a number") from None
    if not 1 <= value <= _LONG_MAX:
        raise ValueError(f"{key}: {value} must be at least 1")  # Kafka's atLeast(1)
    return value


@dataclass(frozen=True, slots=True)
class DelegationTokenSettings:
    """The four ``delegation.token.*`` keys (Kafka's ``DelegationTokenManagerConfigs``); Kafka's defaults."""

    secret_key: str | None = field(default=None, repr=False)
    max_lifetime_ms: int = 7 * 24 * 3600 * 1000
    expiry_time_ms: int = 24 * 3600 * 1000
    expiry_check_interval_ms: int = 3600 * 1000

    @property
    def enabled(self) -> bool:
        """Kafka's ``tokenAuthEnabled``: a secret key is set and not empty."""
        return bool(self.secret_key)

    @classmethod
    def from_config(cls, static: Mapping[str, str]) -> DelegationTokenSettings:
        """Read server.properties; ValueError (naming the key, never the secret) for a bad value."""
        defaults = cls()
        return cls(
            secret_key=static.get(SECRET_KEY) or None,
            max_lifetime_ms=_positive_long(static, MAX_LIFETIME, defaults.max_lifetime_ms),
            expiry_time_ms=_positive_long(static, EXPIRY_TIME, defaults.expiry_time_ms),
            expiry_check_interval_ms=_positive_long(static, EXPIRY_CHECK_INTERVAL, defaults.expiry_check_interval_ms),
        )

    def __repr__(self) -> str:
        key = "[hidden]" if self.secret_key else None
        return (
            f"DelegationTokenSettings(secret_key={key}, max_lifetime_ms={self.max_lifetime_ms}, "
            f"expiry_time_ms={self.expiry_time_ms}, expiry_check_interval_ms={self.expiry_check_interval_ms})"
        )


def token_hmac(token_id: str, secret_key: str) -> bytes:
    """Kafka's ``DelegationTokenManager.createHmac``: HmacSHA512 of the token id, keyed with the secret key."""
    return hmac.new(secret_key.encode("utf-8"), token_id.encode("utf-8"), hashlib.sha512).digest()


def _sum(now: int, duration: int) -> int:
    """now + duration, saturating at Long.MAX_VALUE as Kafka's ``sum`` does."""
    return min(now + duration, _LONG_MAX)


def is_expired(token: DelegationTokenRecord, now_ms: int) -> bool:
    """Kafka's test everywhere: past its max timestamp or its expiry timestamp."""
    return token.max_timestamp < now_ms or token.expiration_timestamp < now_ms


def may_renew(token: DelegationTokenRecord, principal: str) -> bool:
    """Kafka's ``allowedToRenew``: the owner or a renewer (not the requester)."""
    return token.owner == principal or principal in token.renewers


@dataclass(frozen=True, slots=True)
class CreatedToken:
    """CreateDelegationToken's answer (Kafka's ``CreateDelegationTokenResponseData``)."""

    error: ErrorCode
    owner: str
    requester: str
    issue_timestamp_ms: int = ERROR_TIMESTAMP
    expiry_timestamp_ms: int = ERROR_TIMESTAMP
    max_timestamp_ms: int = ERROR_TIMESTAMP
    token_id: str = ""
    hmac: bytes = field(default=b"", repr=False)


@dataclass(frozen=True, slots=True)
class TokenExpiry:
    """RenewDelegationToken's and ExpireDelegationToken's answer."""

    error: ErrorCode
    expiry_timestamp_ms: int = ERROR_TIMESTAMP


def _principal_text(principal_type: str, name: str) -> str:
    return f"{principal_type}:{name}"


class DelegationTokenControlManager:
    """Token mutations and the expiry sweep; ``clock_ms`` is the wall clock in ms (tests pass a fake one)."""

    def __init__(
        self, settings: DelegationTokenSettings | None = None, clock_ms: Callable[[], int] | None = None
    ) -> None:
        self.settings = settings or DelegationTokenSettings()
        self.clock_ms = clock_ms or (lambda: int(time.time() * 1000))
        # HMAC -> token id of the image's tokens, rebuilt when the image's token section changes; the HMACs
        # themselves are kept per token id (ids are random UUIDs, never reused).
        self._hmacs: dict[str, bytes] = {}
        self._index: tuple[object, dict[bytes, str]] = (None, {})

    def token_for_hmac(self, image: MetadataImage, token_hmac_bytes: bytes) -> DelegationTokenRecord | None:
        """Kafka's ``DelegationTokenCache.tokenForHmac``."""
        tokens = image.delegation_tokens
        if self._index[0] is not tokens:
            key = self.settings.secret_key or ""
            self._hmacs = {tid: self._hmacs.get(tid) or token_hmac(tid, key) for tid in tokens}
            self._index = (tokens, {mac: tid for tid, mac in self._hmacs.items()})
        token_id = self._index[1].get(bytes(token_hmac_bytes))
        return None if token_id is None else tokens.get(token_id)

    def create(self, principal: str, request: Any) -> ControllerResult[CreatedToken]:
        """CreateDelegationToken for caller ``principal`` ("User:alice")."""
        now = self.clock_ms()
        owner_name = getattr(request, "owner_principal_name", None)
        owner_type = getattr(request, "owner_principal_type", None)
        owner = principal
        if owner_name:
            if not owner_type:
                # Kafka's KafkaPrincipal refuses a null type with an exception (UNKNOWN_SERVER_ERROR); say what it is.
                return ControllerResult([], CreatedToken(ErrorCode.invalid_principal_type, "", principal))
            owner = _principal_text(owner_type, owner_name)
        refused = CreatedToken(ErrorCode.none, owner, principal)
        if not self.settings.enabled:
            return ControllerResult([], _with_error(refused, ErrorCode.delegation_token_auth_disabled))
        if any(r.principal_type != USER_TYPE for r in request.renewers):
            return ControllerResult([], _with_error(refused, ErrorCode.invalid_principal_type))
        max_lifetime = self.settings.max_lifetime_ms
        requested = _millis(request.max_lifetime)
        if requested > 0:
            max_lifetime = min(max_lifetime, requested)
        max_timestamp = _sum(now, max_lifetime)
        expiry = min(max_timestamp, _sum(now, self.settings.expiry_time_ms))
        token_id = str(uuid.uuid4())
        record = DelegationTokenRecord(
            owner=owner,
            requester=principal,
            renewers=tuple(_principal_text(r.principal_type, r.principal_name) for r in request.renewers),
            issue_timestamp=i64(now),
            max_timestamp=i64(max_timestamp),
            expiration_timestamp=i64(expiry),
            token_id=token_id,
        )
        assert self.settings.secret_key is not None
        created = CreatedToken(
            ErrorCode.none, owner, principal, now, expiry, max_timestamp, token_id,
            token_hmac(token_id, self.settings.secret_key),
        )  # fmt: skip
        return ControllerResult([record], created)

    def renew(
        self, image: MetadataImage, principal: str, token_hmac_bytes: bytes, period_ms: int
    ) -> ControllerResult[TokenExpiry]:
        now = self.clock_ms()
        token, error = self._owned_token(image, principal, token_hmac_bytes)
        if token is None:
            return ControllerResult([], TokenExpiry(error))
        if is_expired(token, now):
            return ControllerResult([], TokenExpiry(ErrorCode.delegation_token_expired))
        renew_lifetime = self.settings.expiry_time_ms
        if period_ms > 0:
            renew_lifetime = min(renew_lifetime, period_ms)
        expiry = min(int(token.max_timestamp), _sum(now, renew_lifetime))
        return ControllerResult([_with_expiry(token, expiry)], TokenExpiry(ErrorCode.none, expiry))

    def expire(
        self, image: MetadataImage, principal: str, token_hmac_bytes: bytes, period_ms: int
    ) -> ControllerResult[TokenExpiry]:
        now = self.clock_ms()
        token, error = self._owned_token(image, principal, token_hmac_bytes)
        if token is None:
            return ControllerResult([], TokenExpiry(error))
        if period_ms < 0:  # expire immediately
            return ControllerResult(
                [RemoveDelegationTokenRecord(token_id=token.token_id)], TokenExpiry(ErrorCode.none, now)
            )
        if is_expired(token, now):
            return ControllerResult([], TokenExpiry(ErrorCode.delegation_token_expired))
        expiry = min(int(token.max_timestamp), _sum(now, period_ms))
        return ControllerResult([_with_expiry(token, expiry)], TokenExpiry(ErrorCode.none, expiry))

    def _owned_token(
        self, image: MetadataImage, principal: str, token_hmac_bytes: bytes
    ) -> tuple[DelegationTokenRecord | None, ErrorCode]:
        """The token a renew or expire names, if ``principal`` may change it; else None and the error."""
        if not self.settings.enabled:
            return None, ErrorCode.delegation_token_auth_disabled
        token = self.token_for_hmac(image, token_hmac_bytes)
        if token is None:
            return None, ErrorCode.delegation_token_not_found
        if not may_renew(token, principal):
            return None, ErrorCode.delegation_token_owner_mismatch
        return token, ErrorCode.none

    def sweep(self, image: MetadataImage) -> ControllerResult[list[str]]:
        """Kafka's ``sweepExpiredDelegationTokens``: a removal for each expired token; the ids removed."""
        now = self.clock_ms()
        expired = sorted(tid for tid, token in image.delegation_tokens.items() if is_expired(token, now))
        return ControllerResult([RemoveDelegationTokenRecord(token_id=tid) for tid in expired], expired)


def _millis(value: Any) -> int:
    """A kio timedelta field (``max_lifetime``, ``renew_period``) as whole milliseconds; ints pass through."""
    if isinstance(value, int):
        return value
    return round(value.total_seconds() * 1000)


def _with_error(created: CreatedToken, error: ErrorCode) -> CreatedToken:
    return CreatedToken(error, created.owner, created.requester)


def _with_expiry(token: DelegationTokenRecord, expiry_ms: int) -> DelegationTokenRecord:
    return DelegationTokenRecord(
        owner=token.owner, requester=token.requester, renewers=token.renewers, issue_timestamp=token.issue_timestamp,
        max_timestamp=token.max_timestamp, expiration_timestamp=i64(expiry_ms), token_id=token.token_id,
    )  # fmt: skip


def describable(
    tokens: Sequence[DelegationTokenRecord],
    principal: str,
    owners: Sequence[str] | None,
    may_describe_token: Callable[[str], bool],
    may_describe_owner: Callable[[str], bool],
) -> list[DelegationTokenRecord]:
    """Kafka's ``DelegationTokenManager.filterToken`` over ``tokens``: those of the asked ``owners`` (None: all;
    a token matches an owner who owns, requested or may renew it) that the caller owns, requested or may
    renew, or has DESCRIBE on (DELEGATION_TOKEN) or DESCRIBE_TOKENS on its owner (USER)."""
    out = []
    for token in tokens:
        if owners is not None and not any(_owner_or_renewer(token, o) for o in owners):
            continue
        if _owner_or_renewer(token, principal) or may_describe_token(token.token_id) or may_describe_owner(token.owner):
            out.append(token)
    return out


def _owner_or_renewer(token: DelegationTokenRecord, principal: str) -> bool:
    """Kafka's ``TokenInformation.ownerOrRenewer``: the owner, the requester or a renewer."""
    return token.owner == principal or token.requester == principal or principal in token.renewers
