"""TLS settings turned into an ssl.SSLContext for the AMQP TLS listener and the management API:
the broker's certificate chain and key, and, with a CA bundle, client certificates (asked for,
or required with verify_peer, as RabbitMQ's ssl_options.verify / fail_if_no_peer_cert)."""

from __future__ import annotations

import ssl

from rabbitish.config import Config


class TlsConfigError(ValueError):
    """The TLS options do not fit together or their files cannot be read; one line."""


def server_context(config: Config) -> ssl.SSLContext:
    if not config.certfile or not config.keyfile:
        raise TlsConfigError("TLS needs --certfile and --keyfile")
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
