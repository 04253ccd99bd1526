"""The operator commands' shared plumbing: Kafka client properties to librdkafka's, exit codes, terminal manners."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from ksteward.cli.admin_common import (
    EXIT_ERROR,
    EXIT_OK,
    EXIT_USAGE,
    CommandError,
    Connection,
    UsageError,
    add_connection_flags,
    confirm,
    confluent_config,
    connection,
    run_command,
)

JAAS = 'org.apache.kafka.common.security.plain.PlainLoginModule required username="alice" password="alice-secret";'


def test_kafka_client_properties_become_librdkafkas(tmp_path: Path) -> None:
    path = tmp_path / "client.properties"
    path.write_text(
        "security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\n"
        f"sasl.jaas.config={JAAS}\nssl.truststore.location=/ca.pem\nssl.truststore.type=PEM\n"
        "ssl.endpoint.identification.algorithm=\nrequest.timeout.ms=5000\n"
    )
    parser = argparse.ArgumentParser()
    add_connection_flags(parser, controller=True)
    conn = connection(parser.parse_args(["--bootstrap-server", "b:9092", "--command-config", str(path)]))
    assert confluent_config(conn) == {
        "bootstrap.servers": "b:9092",
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.username": "alice",
        "sasl.password": "alice-secret",
        "ssl.ca.location": "/ca.pem",
        "ssl.endpoint.identification.algorithm": "none",
        "socket.timeout.ms": "5000",
    }


@pytest.mark.parametrize(
    ("properties", "message"),
    [
        ({"ssl.truststore.location": "/ts.jks"}, "only PEM files"),
        ({"sasl.jaas.config": "org.apache.kafka.common.security.plain.PlainLoginModule required;"}, "username"),
    ],
)
def test_properties_it_cannot_honour_are_usage_errors(properties: dict[str, str], message: str) -> None:
    with pytest.raises(UsageError, match=message):
        confluent_config(Connection("b:9092", False, properties))


def test_a_missing_command_config_is_a_usage_error(tmp_path: Path) -> None:
    args = argparse.Namespace(bootstrap_server="b:9092", command_config=str(tmp_path / "none"))
    with pytest.raises(UsageError, match="cannot read --command-config"):
        connection(args)


def test_exit_codes_and_one_line_errors(capsys: pytest.CaptureFixture[str]) -> None:
    def fail(exc: Exception) -> int:
        raise exc

    assert run_command("acls", lambda: EXIT_OK) == 0
    assert run_command("acls", lambda: fail(UsageError("give --topic"))) == EXIT_USAGE
    assert run_command("acls", lambda: fail(CommandError("TOPIC_AUTHORIZATION_FAILED: denied"))) == EXIT_ERROR
    assert capsys.readouterr().err.splitlines() == [
        "ksteward acls: give --topic",
        "ksteward acls: TOPIC_AUTHORIZATION_FAILED: denied",
    ]


def test_confirm_asks_only_on_a_terminal() -> None:
    assert confirm("Remove?", force=False)  # pytest's stdin is not a terminal: a script proceeds
    assert confirm("Remove?", force=True)


def _conn(tmp_path: Path, text: str, bootstrap: str = "127.0.0.1:1") -> Connection:
    path = tmp_path / "c.properties"
    path.write_text(text)
    parser = argparse.ArgumentParser()
    add_connection_flags(parser, controller=True)
    return connection(parser.parse_args(["--bootstrap-server", bootstrap, "--command-config", str(path)]))


def test_ksteward_admin_logs_in_with_plain_only_and_says_so(tmp_path: Path) -> None:
    from ksteward.cli.admin_common import caller_username, ksteward_admin

    scram = _conn(
        tmp_path, f"security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-256\nsasl.jaas.config={JAAS}\n"
    )
    with pytest.raises(UsageError, match=r"^sasl.mechanism=SCRAM-SHA-256: this operation logs in with PLAIN only$"):
        ksteward_admin(scram)
    assert caller_username(scram) == "alice"
    with pytest.raises(UsageError, match=r"security.protocol=SSL: this operation supports PLAINTEXT"):
        ksteward_admin(_conn(tmp_path, "security.protocol=SSL\n"))
    assert caller_username(_conn(tmp_path, "")) is None
    nowhere = _conn(tmp_path, "", bootstrap="127.0.0.1:1, 127.0.0.1:2")  # every address tried, each named
    with pytest.raises(CommandError, match=r"^cannot connect to 127\.0\.0\.1:1: .*; 127\.0\.0\.1:2: "):
        ksteward_admin(nowhere)
    assert "alice-secret" not in repr(scram.bootstrap)


def test_status_and_progress_write_nothing_when_the_output_is_piped(capsys: pytest.CaptureFixture[str]) -> None:
    from ksteward.cli.admin_common import progress, status

    with status("running the what-if job"):
        items = list(progress(range(5), 5, "describing ACLs"))
    assert items == [0, 1, 2, 3, 4]
    assert capsys.readouterr() == ("", "")  # pytest's stdout is not a terminal


def test_status_and_progress_show_on_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    import io

    from ksteward.cli.admin_common import progress, status

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    out, err = Terminal(), Terminal()
    monkeypatch.setattr("sys.stdout", out)
    monkeypatch.setattr("sys.stderr", err)
    with status("running the what-if job"):
        assert list(progress(range(3), 3, "describing ACLs")) == [0, 1, 2]
    shown = err.getvalue()
    assert shown.startswith("running the what-if job...") and "describing ACLs: 3/3" in shown
    assert shown.endswith(" s\n") and out.getvalue() == ""
