"""Logging in with a delegation token (KIP-48): SCRAM with ``tokenauth=true``, the token id as the user name
and the base64 of the token's HMAC as the password.

Kafka's ``DelegationTokenManager.prepareScramCredentials`` derives one SCRAM credential per mechanism from
that password (a fresh salt, the mechanism's minimum 4096 iterations) whenever a token enters its cache;
``ScramServerCallbackHandler`` then hands the credential and the owner to ``ScramSaslServer``. ksteward
derives the credential at the first login with a token and keeps it in memory (never on disk, never in a log).

Unlike Kafka, which keeps accepting an expired token until the controller's sweep removes it (up to
``delegation.token.expiry.check.interval.ms`` later), a token past its expiry or max timestamp is refused at
once: it fails as an unknown one does.
"""

from __future__ import annotations

import base64
import time
from collections.abc import Callable

from ksteward.controller.delegation_tokens import is_expired, token_hmac
from ksteward.metadata.image import MetadataImage
from ksteward.protocol.sasl import ScramCredential, ScramMechanism, TokenCredential, credential_from_password


class TokenLogins:
    """The SCRAM side of the node's delegation tokens: ``lookup`` is the listeners' ``Credentials.token_lookup``."""

    def __init__(
        self, image: Callable[[], MetadataImage], secret_key: str, clock_ms: Callable[[], int] | None = None
    ) -> None:
        self._image = image
        self._secret_key = secret_key
        self._clock_ms = clock_ms or (lambda: int(time.time() * 1000))
        self._credentials: dict[tuple[str, ScramMechanism], ScramCredential] = {}

    def __repr__(self) -> str:
        return f"TokenLogins(tokens cached={len(self._credentials)}, secret_key=[hidden])"

    def lookup(self, mechanism: ScramMechanism, token_id: str) -> TokenCredential | None:
        """The live token ``token_id`` as SCRAM needs it; None for an unknown or expired one."""
        tokens = self._image().delegation_tokens
        token = tokens.get(token_id)
        if token is None or is_expired(token, self._clock_ms()):
            return None
        key = (token_id, mechanism)
        credential = self._credentials.get(key)
        if credential is None:
            if len(self._credentials) > 2 * len(tokens) + 16:  # forget removed tokens now and then
                self._credentials = {k: v for k, v in self._credentials.items() if k[0] in tokens}
            password = base64.b64encode(token_hmac(token_id, self._secret_key)).decode("ascii")
            credential = credential_from_password(mechanism, password, iterations=mechanism.min_iterations)
            self._credentials[key] = credential
        _, _, owner_name = token.owner.partition(":")
        return TokenCredential(owner=owner_name, requester=token.requester, credential=credential)
