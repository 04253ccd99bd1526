"""SSL and SASL_SSL listeners with PEM files, driven by real clients.

Certificates come from the ``openssl`` command into a temporary directory: a CA, a server certificate
for 127.0.0.1 whose key is encrypted (so ``ssl.key.password`` is exercised), and a client certificate.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from harness import HOST, KstewardServer
from rawkafka import ConnectionClosed, RawConnection

KEY_PASSWORD = "server-key-secret"


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("certs")
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem",
             "-days", "2", "-subj", "/CN=ksteward-test-ca", cwd=d)  # fmt: skip
    (d / "san.ext").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    for name, subject in (("server", "/CN=127.0.0.1"), ("client", "/O=ksteward/OU=eng/CN=alice")):
        _openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}.key", "-out", f"{name}.csr",
                 "-subj", subject, cwd=d)  # fmt: skip
        _openssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
                 "-out", f"{name}.crt", "-days", "2", "-extfile", "san.ext", cwd=d)  # fmt: skip
    _openssl("pkey", "-in", "server.key", "-aes256", "-passout", f"pass:{KEY_PASSWORD}", "-out", "server-enc.key",
             cwd=d)  # fmt: skip
    (d / "server.pem").write_text((d / "server-enc.key").read_text() + (d / "server.crt").read_text())
    return d


class TlsServer(KstewardServer):
    """Readiness is checked on the PLAINTEXT controller listener: the client listener speaks TLS."""

    def _api_versions_round_trip(self) -> bool:
        self._check_alive()
        try:
            with RawConnection(HOST, self.controller_port, timeout=5.0) as conn:
                return int(conn.api_versions(3).body.error_code) == 0
        except (OSError, ConnectionClosed):
            return False


def _tls_server(workdir: Path, certs: Path, protocol: str, extra: dict[str, str]) -> TlsServer:
    template = "sasl" if protocol == "SASL_SSL" else "server"
    server = TlsServer(workdir, template, name=protocol.lower())
    prefix = f"listener.name.{protocol.lower()}."
    server.extra_overrides.update(
        {
            "listeners": f"{protocol}://{HOST}:{server.port},CONTROLLER://{HOST}:{server.controller_port}",
            "advertised.listeners": f"{protocol}://{HOST}:{server.port}",
            "listener.security.protocol.map": f"{protocol}:{protocol},CONTROLLER:PLAINTEXT",
            "inter.broker.listener.name": protocol,
            "ssl.keystore.location": str(certs / "server.pem"),
            "ssl.key.password": KEY_PASSWORD,
            "ssl.truststore.location": str(certs / "ca.pem"),
            **{prefix + k: v for k, v in extra.items()},
        }
    )
    if protocol == "SASL_SSL":
        jaas = _template_jaas()
        server.extra_overrides[f"{prefix}plain.sasl.jaas.config"] = jaas
    return server


def _template_jaas() -> str:
    from ksteward.configs.properties import load_properties

    root = Path(__file__).resolve().parents[2]
    return load_properties(root / "config" / "sasl.properties")["listener.name.sasl_plaintext.plain.sasl.jaas.config"]


@pytest.fixture(scope="module")
def ssl_server(tmp_path_factory: pytest.TempPathFactory, certs: Path) -> Iterator[TlsServer]:
    server = _tls_server(tmp_path_factory.mktemp("ssl"), certs, "SSL", {"ssl.client.auth": "required"})
    try:
        yield server.start()  # type: ignore[misc]
    finally:
        server.kill()


def test_confluent_kafka_over_ssl_with_a_client_certificate(ssl_server: TlsServer, certs: Path) -> None:
    from confluent_kafka.admin import AdminClient

    admin = AdminClient(
        {
            "bootstrap.servers": ssl_server.bootstrap,
            "security.protocol": "SSL",
            "ssl.ca.location": str(certs / "ca.pem"),
            "ssl.certificate.location": str(certs / "client.crt"),
            "ssl.key.location": str(certs / "client.key"),
        }
    )
    metadata = admin.list_topics(timeout=15)
    assert metadata.cluster_id == ssl_server.cluster_id
    assert [(b.host, b.port) for b in metadata.brokers.values()] == [(HOST, ssl_server.port)]


def test_kafka_python_over_ssl_with_a_client_certificate(ssl_server: TlsServer, certs: Path) -> None:
    from kafka import KafkaAdminClient

    admin = KafkaAdminClient(
        bootstrap_servers=ssl_server.bootstrap,
        security_protocol="SSL",
        ssl_cafile=str(certs / "ca.pem"),
        ssl_certfile=str(certs / "client.crt"),
        ssl_keyfile=str(certs / "client.key"),
        request_timeout_ms=15_000,
    )
    try:
        assert admin.describe_cluster()["cluster_id"] == ssl_server.cluster_id
    finally:
        admin.close()


def test_ssl_without_a_client_certificate_is_refused(ssl_server: TlsServer, certs: Path) -> None:
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient

    admin = AdminClient(
        {
            "bootstrap.servers": ssl_server.bootstrap,
            "security.protocol": "SSL",
            "ssl.ca.location": str(certs / "ca.pem"),
        }
    )
    with pytest.raises(KafkaException):
        admin.list_topics(timeout=5)
    assert ssl_server.running


def test_sasl_ssl_with_plain(tmp_path: Path, certs: Path) -> None:
    from confluent_kafka.admin import AdminClient

    server = _tls_server(tmp_path, certs, "SASL_SSL", {})
    server.start()
    try:
        admin = AdminClient(
            {
                "bootstrap.servers": server.bootstrap,
                "security.protocol": "SASL_SSL",
                "ssl.ca.location": str(certs / "ca.pem"),
                "sasl.mechanism": "PLAIN",
                "sasl.username": "admin",
                "sasl.password": "admin-secret",
            }
        )
        assert admin.list_topics(timeout=15).cluster_id == server.cluster_id
    finally:
        server.stop()


def test_a_wrong_key_password_stops_the_start_with_one_line(tmp_path: Path, certs: Path) -> None:
    server = _tls_server(tmp_path, certs, "SSL", {})
    server.extra_overrides["ssl.key.password"] = "not-the-password-7Q2"
    code, output = server.run_to_exit()
    assert code != 0
    lines = [line for line in output.splitlines() if line.startswith("ksteward:")]
    assert len(lines) == 1 and "ssl.keystore.location" in lines[0], output
    assert "not-the-password-7Q2" not in output  # the password never reaches the output


def test_the_operator_cli_over_ssl_with_kafkas_pem_client_properties(
    ssl_server: TlsServer, certs: Path, tmp_path: Path
) -> None:
    """``--command-config`` with Kafka's own PEM settings (a trust store, and a key store holding the key and its
    certificate chain), mapped to librdkafka's by ``cli.admin_common``."""
    from harness import ksteward_cli

    keystore = tmp_path / "client.pem"
    keystore.write_text((certs / "client.key").read_text() + (certs / "client.crt").read_text())
    config = tmp_path / "client.properties"
    config.write_text(
        "security.protocol=SSL\n"
        f"ssl.truststore.type=PEM\nssl.truststore.location={certs / 'ca.pem'}\n"
        f"ssl.keystore.type=PEM\nssl.keystore.location={keystore}\n"
    )
    base = ("--bootstrap-server", ssl_server.bootstrap, "--command-config", str(config))
    created = ksteward_cli("topics", *base, "--create", "--topic", "over-tls", "--partitions", "2")
    assert created.returncode == 0, created.stderr
    assert created.stdout.strip() == "Created topic over-tls."
    listed = ksteward_cli("topics", *base, "--list")
    assert listed.returncode == 0 and "over-tls" in listed.stdout.split(), listed.stderr
    described = ksteward_cli("configs", *base, "--describe", "--entity-type", "topics", "--entity-name", "over-tls")
    assert described.returncode == 0, described.stderr
    assert described.stdout.startswith("Dynamic configs for topic over-tls are:")
