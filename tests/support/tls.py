"""A throwaway certificate authority for TLS tests, made with the openssl command line: a CA,
a server certificate for localhost / 127.0.0.1 and client certificates whose CN names a user."""

from __future__ import annotations

import shutil
import ssl
import subprocess
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.real_rabbitmq import RealRabbit, real_rabbitmq

_KEY = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True, timeout=60)


@dataclass
class Pair:
    cert: str
    key: str


@dataclass
class ThrowawayCA:
    directory: Path
    cafile: str
    server: Pair

    def client(self, common_name: str) -> Pair:
        """A client certificate signed by this CA with subject CN=`common_name`."""
        name = f"client-{common_name}"
        self._signed(name, f"/CN={common_name}/O=rabbitish tests", "extendedKeyUsage=clientAuth")
        return Pair(str(self.directory / f"{name}.pem"), str(self.directory / f"{name}.key"))

    def _signed(self, name: str, subject: str, extension: str) -> None:
        d = self.directory
        _openssl(
            "req", *_KEY, "-keyout", f"{name}.key", "-out", f"{name}.csr", "-subj", subject, cwd=d
        )
        (d / f"{name}.ext").write_text(extension + "\n")
        _openssl(
            "x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
            "-CAcreateserial", "-out", f"{name}.pem", "-days", "2", "-extfile", f"{name}.ext",
            cwd=d,
        )  # fmt: skip

    def client_context(self, client: Pair | None = None) -> ssl.SSLContext:
        context = ssl.create_default_context(cafile=self.cafile)
        if client is not None:
            context.load_cert_chain(client.cert, client.key)
        return context


def make_ca(directory: Path) -> ThrowawayCA:
    if shutil.which("openssl") is None:
        pytest.skip("the openssl command line is not installed")
    directory.mkdir(parents=True, exist_ok=True)
    _openssl(
        "req", "-x509", *_KEY, "-keyout", "ca.key", "-out", "ca.pem", "-days", "2",
        "-subj", "/CN=rabbitish test CA", cwd=directory,
    )  # fmt: skip
    ca = ThrowawayCA(directory, str(directory / "ca.pem"), Pair("", ""))
    ca._signed(
        "server",
        "/CN=localhost",
        "subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth",
    )
    ca.server = Pair(str(directory / "server.pem"), str(directory / "server.key"))
    return ca


def rabbitmq_with_tls(
    ca: ThrowawayCA, tls_port: int, login_from: str = "common_name"
) -> AbstractContextManager[RealRabbit]:
    """A real RabbitMQ with a TLS listener on `tls_port` (verify_peer, a client certificate
    optional) and rabbitmq_auth_mechanism_ssl enabled (the user named by the certificate's
    `login_from`: common_name or distinguished_name), plus its management API."""

    class TlsRabbit(RealRabbit):
        def _write_config(self) -> None:
            super()._write_config()
            with (self.data_dir / "rabbitmq.conf").open("a") as conf:
                conf.write(
                    f"listeners.ssl.default = 127.0.0.1:{tls_port}\n"
                    f"ssl_options.cacertfile = {ca.cafile}\n"
                    f"ssl_options.certfile = {ca.server.cert}\n"
                    f"ssl_options.keyfile = {ca.server.key}\n"
                    "ssl_options.verify = verify_peer\n"
                    "ssl_options.fail_if_no_peer_cert = false\n"
                    "auth_mechanisms.1 = PLAIN\n"
                    "auth_mechanisms.2 = AMQPLAIN\n"
                    "auth_mechanisms.3 = EXTERNAL\n"
                    f"ssl_cert_login_from = {login_from}\n"
                )
            plugins = self.data_dir / "enabled_plugins"
            plugins.write_text(plugins.read_text().replace("[", "[rabbitmq_auth_mechanism_ssl,"))

    return real_rabbitmq(enable_management=True, node_class=TlsRabbit)
