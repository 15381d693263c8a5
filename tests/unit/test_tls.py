"""Which user a client certificate names (RabbitMQ's ssl_cert_login_from), from the subject the
ssl module reports."""

from __future__ import annotations

from rabbitish.tls import DISTINGUISHED_NAME, certificate_user

# Subject of `openssl req -subj "/CN=tls-user/O=rabbitish tests"` as getpeercert() gives it.
SUBJECT = ((("commonName", "tls-user"),), (("organizationName", "rabbitish tests"),))


def test_common_name() -> None:
    assert certificate_user({"subject": SUBJECT}) == "tls-user"
    assert certificate_user({"subject": ((("organizationName", "x"),),)}) is None
    assert certificate_user({}) is None


def test_distinguished_name_as_rabbitmq_writes_it() -> None:
    """RabbitMQ 3.10.8 logged this certificate in as the user "O=rabbitish tests,CN=tls-user"."""
    assert certificate_user({"subject": SUBJECT}, DISTINGUISHED_NAME) == (
        "O=rabbitish tests,CN=tls-user"
    )


def test_distinguished_name_escapes_and_multi_valued_rdns() -> None:
    subject = (
        (("commonName", "a,b"), ("userId", "7")),
        (("countryName", "DE"),),
        (("organizationalUnitName", " lead"),),
    )
    assert certificate_user({"subject": subject}, DISTINGUISHED_NAME) == (
        "OU=\\ lead,C=DE,CN=a\\,b+UID=7"
    )
