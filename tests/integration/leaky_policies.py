"""Policies that fail the worst way for secrets: they raise with the values they saw in the message.

``test_secrets_never_logged`` names them in ``alter.config.policy.class.name``; the server finds this module
through ``PYTHONPATH`` (the test puts this directory there, as an operator installs a policy package).
"""

from __future__ import annotations

from ksteward.policy import AlterConfigPolicy, AlterConfigRequestMetadata

PASSWORD_KEY = "listener.name.plaintext.ssl.key.password"
VAULT_KEY = "my.vault.token"


class LeakyAlterConfigPolicy(AlterConfigPolicy):
    """``KeyError(value)`` when the request sets only the password; with the custom vault key as well, a
    ``ValueError`` whose message holds both values, caused by a ``KeyError`` of the password."""

    def validate(self, request_metadata: AlterConfigRequestMetadata) -> None:
        configs = request_metadata.configs
        if VAULT_KEY not in configs:
            raise KeyError(configs[PASSWORD_KEY])
        try:
            raise KeyError(configs[PASSWORD_KEY])
        except KeyError as exc:
            raise ValueError(f"bad vault token {configs[VAULT_KEY]} in {dict(configs)}") from exc
