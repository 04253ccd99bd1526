"""Where a listener's SASL mechanisms look users up, and the mechanism server a SaslHandshake selects."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ksteward.protocol.sasl.plain import PLAIN_MECHANISM, PlainServer
from ksteward.protocol.sasl.scram import ScramCredential, ScramMechanism, ScramServer, TokenCredential


@dataclass(frozen=True, slots=True)
class Credentials:
    """Where a listener's mechanisms look users up."""

    plain_verify: Callable[[str, str], bool]  # from the listener's JAAS config, constant-time
    scram_lookup: Callable[[ScramMechanism, str], ScramCredential | None]
    # Keeps the decoy salt sent for unknown SCRAM users stable across restarts, so a client cannot
    # tell an unknown user from a known one by watching the salt change.
    decoy_secret: bytes
    # Delegation tokens by id (KIP-48, SCRAM with tokenauth=true); None: tokens are disabled on this node.
    token_lookup: Callable[[ScramMechanism, str], TokenCredential | None] | None = None


def mechanism_server(mechanism: str, credentials: Credentials) -> PlainServer | ScramServer:
    """A fresh server for one exchange of ``mechanism`` (PLAIN or a SCRAM name).

    Raises :class:`~ksteward.protocol.sasl.UnsupportedSaslMechanismError` for any other name.
    """
    if mechanism == PLAIN_MECHANISM:
        return PlainServer(credentials.plain_verify)
    scram = ScramMechanism.from_name(mechanism)
    tokens = credentials.token_lookup
    return ScramServer(
        scram,
        lambda user: credentials.scram_lookup(scram, user),
        decoy_secret=credentials.decoy_secret,
        token_lookup=None if tokens is None else lambda token_id: tokens(scram, token_id),
    )
