"""TLS for SSL and SASL_SSL listeners, with PEM files, through Python's ``ssl`` module.

``ssl.keystore.location`` is a PEM file holding the private key and the certificate chain (Kafka's
``ssl.keystore.type=PEM``); ``ssl.key.password`` decrypts the key; ``ssl.truststore.location`` holds
the CA certificates used to verify client certificates when ``ssl.client.auth`` asks for them.
"""

from __future__ import annotations

import ssl
from typing import Any

from ksteward.configs.server_config import ConfigError, SslSettings


def server_context(settings: SslSettings) -> ssl.SSLContext:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    try:
        ctx.load_cert_chain(settings.keystore_location, password=settings.key_password)
    except (OSError, ssl.SSLError) as exc:
        # The message names the file, never the password.
        raise ConfigError(f"cannot load ssl.keystore.location {settings.keystore_location}: {exc}") from None
    if settings.client_auth != "none":
        if not settings.truststore_location:
            raise ConfigError(f"ssl.client.auth={settings.client_auth} needs ssl.truststore.location")
        try:
            ctx.load_verify_locations(settings.truststore_location)
        except (OSError, ssl.SSLError) as exc:
            raise ConfigError(f"cannot load ssl.truststore.location {settings.truststore_location}: {exc}") from None
        ctx.verify_mode = ssl.CERT_REQUIRED if settings.client_auth == "required" else ssl.CERT_OPTIONAL
    return ctx


def _rfc2253_escape(value: str) -> str:
    out = []
    for i, ch in enumerate(value):
        if ch in ',+"\\<>;' or (ch == "#" and i == 0) or (ch == " " and i in (0, len(value) - 1)):
            out.append("\\" + ch)
        else:
            out.append(ch)
    return "".join(out)


_SHORT = {
    "commonName": "CN",
    "countryName": "C",
    "localityName": "L",
    "stateOrProvinceName": "ST",
    "organizationName": "O",
    "organizationalUnitName": "OU",
    "streetAddress": "STREET",
    "domainComponent": "DC",
    "userId": "UID",
}


def subject_dn(peercert: dict[str, Any]) -> str | None:
    """The certificate subject in RFC 2253 form, as Java's ``X500Principal.getName()``.

    RFC 2253 lists the most specific RDN first, the reverse of the certificate's own order.
    """
    subject = peercert.get("subject")
    if not subject:
        return None
    rdns = []
    for rdn in reversed(subject):
        rdns.append("+".join(f"{_SHORT.get(k, k)}={_rfc2253_escape(v)}" for k, v in rdn))
    return ",".join(rdns)
