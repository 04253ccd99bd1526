"""What must never be printed in clear: secret config values and SCRAM key material.

``SENSITIVE_KEY`` decides whether a config key holds a secret. Kafka decides it from the config's
declared type (PASSWORD); ksteward's dump and shell have no config catalog at hand, so this errs
on the side of hiding: any key containing ``password``, any (listener-prefixed) JAAS config, and the
other PASSWORD-typed keys of Kafka's broker and client configs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

HIDDEN: Final = "[hidden]"

# Suffixes, so that listener- and mechanism-prefixed forms (``listener.name.x.ssl.key.password``,
# ``listener.name.x.scram-sha-256.sasl.jaas.config``) are caught too.
SENSITIVE_KEY_SUFFIXES: Final[tuple[str, ...]] = (
    "sasl.jaas.config",
    "ssl.keystore.key",
    "ssl.keystore.certificate.chain",
    "ssl.truststore.certificates",
    "sasl.oauthbearer.client.credentials.client.secret",
    "sasl.oauthbearer.assertion.private.key.passphrase",
    "delegation.token.master.key",
    "delegation.token.secret.key",
    "password.encoder.secret",
    "password.encoder.old.secret",
)

# Metadata apiKeys whose records carry secrets (see ``redact_record_json``).
_CONFIG_RECORD: Final = 4
_USER_SCRAM_CREDENTIAL_RECORD: Final = 11
_SCRAM_SECRET_FIELDS: Final = ("salt", "storedKey", "serverKey")


def is_sensitive_key(key: str) -> bool:
    """True when the config ``key`` may hold a secret and its value must be hidden."""
    lowered = key.lower()
    return "password" in lowered or lowered.endswith(SENSITIVE_KEY_SUFFIXES)


# The name other modules import; a predicate, not a constant.
SENSITIVE_KEY: Final[Callable[[str], bool]] = is_sensitive_key


def redact_config_value(key: str, value: str | None) -> str | None:
    """``value``, or ``HIDDEN`` when ``key`` is sensitive (a null value stays null: it is a delete)."""
    if value is not None and SENSITIVE_KEY(key):
        return HIDDEN
    return value


def redact_record_json(api_key: int, data: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of a record's Kafka-JSON ``data`` with secrets replaced by ``HIDDEN``."""
    out = dict(data)
    if api_key == _USER_SCRAM_CREDENTIAL_RECORD:
        for name in _SCRAM_SECRET_FIELDS:
            if name in out:
                out[name] = HIDDEN
    elif api_key == _CONFIG_RECORD and isinstance(out.get("name"), str):
        out["value"] = redact_config_value(out["name"], out.get("value"))
    return out
