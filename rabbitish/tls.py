"""TLS settings turned into an ssl.SSLContext for the AMQP TLS listener and the management API:
the broker's certificate chain and key, and, with a CA bundle, client certificates (asked for,
or required with verify_peer, as RabbitMQ's ssl_options.verify / fail_if_no_peer_cert)."""

from __future__ import annotations

import ssl
from typing import Any

from rabbitish.config import Config

COMMON_NAME = "common_name"
DISTINGUISHED_NAME = "distinguished_name"
LOGIN_FROM = (COMMON_NAME, DISTINGUISHED_NAME)
# Attribute types as RabbitMQ writes them in a distinguished name; others keep the ssl
# module's name.
_SHORT_NAMES = {
    "commonName": "CN",
    "organizationName": "O",
    "organizationalUnitName": "OU",
    "localityName": "L",
    "stateOrProvinceName": "ST",
    "countryName": "C",
    "domainComponent": "DC",
    "userId": "UID",
    "streetAddress": "STREET",
}
_ESCAPED = ',+"\\<>;'


def certificate_user(cert: dict[str, Any], login_from: str = COMMON_NAME) -> str | None:
    """The user name a verified client certificate stands for (RabbitMQ's
    ssl_cert_login_from): the subject's first CN, or the whole subject DN written as RabbitMQ
    writes it (RFC 4514: the last RDN first, "O=Example,CN=alice")."""
    subject = cert.get("subject", ())
    if login_from == COMMON_NAME:
        names = [value for rdn in subject for key, value in rdn if key == "commonName"]
        return names[0] if names else None
    if not subject:
        return None
    return ",".join(
        "+".join(f"{_SHORT_NAMES.get(key, key)}={_escape(value)}" for key, value in rdn)
        for rdn in reversed(subject)
    )


def _escape(value: str) -> str:
    escaped = "".join(f"\\{c}" if c in _ESCAPED else c for c in value)
    if escaped.startswith(("#", " ")):
        escaped = "\\" + escaped
    if escaped.endswith(" ") and len(escaped) > 1:
        escaped = escaped[:-1] + "\\ "
    return escaped


class TlsConfigError(ValueError):
    """The TLS options do not fit together or their files cannot be read; one line."""


def server_context(config: Config) -> ssl.SSLContext:
    if not config.certfile or not config.keyfile:
        raise TlsConfigError("TLS needs --certfile and --keyfile")
    if config.ssl_cert_login_from not in LOGIN_FROM:
        raise TlsConfigError(f"--ssl-cert-login-from must be one of {', '.join(LOGIN_FROM)}")
    if config.verify_peer and not config.cafile:
        raise TlsConfigError("--verify-peer needs --cafile (the CA that signs client certificates)")
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    try:
        context.load_cert_chain(config.certfile, config.keyfile)
        if config.cafile:
            context.load_verify_locations(config.cafile)
    except (OSError, ssl.SSLError) as err:
        raise TlsConfigError(f"cannot load the TLS certificate, key or CA file: {err}") from err
    if config.cafile:
        # A client certificate is checked against the CA when one is presented; EXTERNAL
        # needs one. verify_peer refuses clients without one.
        context.verify_mode = ssl.CERT_REQUIRED if config.verify_peer else ssl.CERT_OPTIONAL
    return context
