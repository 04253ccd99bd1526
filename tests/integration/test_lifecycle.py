"""Starting, refusing to start, stopping and restarting the real server process."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import rawkafka
from clients import Auth, cluster_views, kafka_python_admin
from harness import HOST, REPO, KstewardServer, ServerFactory, read_meta_properties, server_env
from kio.schema.errors import ErrorCode

from ksteward.protocol.apis import ApiKey

CHECKPOINT = re.compile(r"^\d{20}-\d{10}\.checkpoint$")  # Kafka's snapshot file name


def output_lines(text: str) -> list[str]:
    """The run's output, without the harness's own '=====' header line."""
    return [line for line in text.splitlines() if line.strip() and not line.startswith("===== start")]


def assert_one_line_refusal(rc: int, text: str, prefix: str, *mentions: str) -> str:
    """Non-zero exit, no traceback, exactly one ``ksteward: ...`` line, naming what is wrong."""
    assert rc != 0, f"expected a non-zero exit:\n{text}"
    assert "Traceback" not in text, f"a refusal must be one line, not a traceback:\n{text}"
    ours = [line for line in output_lines(text) if line.startswith("ksteward:")]
    assert len(ours) == 1, f"expected exactly one 'ksteward:' line, got {len(ours)}:\n{text}"
    line = ours[0]
    assert line.startswith(prefix), f"expected {prefix!r}, got {line!r}"
    for mention in mentions:
        assert mention in line, f"the line should name {mention!r}: {line!r}"
    return line


def remove_key(config: Path, key: str) -> None:
    lines = config.read_text(encoding="utf-8").splitlines()
    kept = [line for line in lines if not re.match(rf"^\s*{re.escape(key)}\s*[=:]", line)]
    assert len(kept) < len(lines), f"{key} is not in {config}"
    config.write_text("\n".join(kept) + "\n", encoding="utf-8")


def checkpoints(data_dir: Path) -> list[Path]:
    return sorted(p for p in data_dir.rglob("*.checkpoint") if p.is_file())


def cluster_id_over_the_wire(server: KstewardServer) -> str:
    with rawkafka.connect(server.address) as conn:
        metadata = conn.request(ApiKey.METADATA, 12, rawkafka.metadata_body(12, [])).body
        described = conn.request(ApiKey.DESCRIBE_CLUSTER, 0, {"include_cluster_authorized_operations": False}).body
    assert metadata.cluster_id == described.cluster_id
    return str(metadata.cluster_id)


# --- refusing to start ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("template", "overrides", "mention"),
    [
        pytest.param("server", {"node.id": "abc"}, "node.id", id="node.id-not-a-number"),
        pytest.param("server", {"node.id": "-1"}, "node.id", id="node.id-negative"),
        pytest.param("server", {"process.roles": "broker,zookeeper"}, "process.roles", id="unknown-role"),
        pytest.param("server", {"listeners": "PLAINTEXT//127.0.0.1:1"}, "listeners", id="listeners-malformed"),
        pytest.param(
            "server", {"socket.request.max.bytes": "lots"}, "socket.request.max.bytes", id="max-bytes-not-a-number"
        ),
        pytest.param(
            "sasl", {"sasl.enabled.mechanisms": "GSSAPI"}, "sasl.enabled.mechanisms", id="unsupported-mechanism"
        ),
        pytest.param("server", {"super.users": "admin"}, "super.users", id="super-user-without-type"),
    ],
)
def test_bad_config_is_one_line(
    server_factory: ServerFactory, template: str, overrides: dict[str, str], mention: str
) -> None:
    server = server_factory(template, overrides)
    rc, text = server.run_to_exit()
    assert_one_line_refusal(rc, text, "ksteward: bad config:", mention)
    assert len(output_lines(text)) == 1, f"a bad config must print nothing else:\n{text}"


@pytest.mark.parametrize(
    "overrides",
    [{"controller.quota.window.num": "0"}, {"controller.quota.window.size.seconds": "soon"}],
    ids=["window-num-zero", "window-size-not-a-number"],
)
def test_bad_mutation_quota_window_is_one_line(server_factory: ServerFactory, overrides: dict[str, str]) -> None:
    rc, text = server_factory("server", overrides).run_to_exit()
    assert_one_line_refusal(rc, text, "ksteward: cannot start:", "controller.quota.window")


def test_missing_process_roles_is_one_line(server_factory: ServerFactory) -> None:
    server = server_factory()
    remove_key(server.config_path, "process.roles")
    rc, text = server.run_to_exit()
    assert_one_line_refusal(rc, text, "ksteward: bad config:", "process.roles")
    assert len(output_lines(text)) == 1, text


def test_missing_node_id_is_one_line(server_factory: ServerFactory) -> None:
    server = server_factory()
    remove_key(server.config_path, "node.id")
    rc, text = server.run_to_exit()
    assert_one_line_refusal(rc, text, "ksteward: bad config:", "node.id")


def test_missing_config_file_is_one_line(tmp_path: Path) -> None:
    missing = tmp_path / "nope.properties"
    proc = subprocess.run(
        [sys.executable, "-m", "ksteward.cli.main", "serve", "--config", str(missing)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
        env=server_env(),
        check=False,
    )
    assert_one_line_refusal(proc.returncode, proc.stderr, "ksteward: bad config:", str(missing))
    assert proc.stdout == ""


def test_malformed_override_is_one_line(tmp_path: Path) -> None:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "ksteward.cli.main",
            "serve",
            "--config",
            str(REPO / "config/server.properties"),
            "--override",
            "node.id",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
        env=server_env(),
        check=False,
    )
    assert_one_line_refusal(proc.returncode, proc.stderr, "ksteward: bad config:", "node.id")


@pytest.mark.parametrize("which", ["client", "controller"])
def test_port_in_use_is_one_line(server_factory: ServerFactory, which: str) -> None:
    server = server_factory()
    port = server.port if which == "client" else server.controller_port
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as squatter:
        squatter.bind((HOST, port))
        squatter.listen()
        rc, text = server.run_to_exit()
    assert_one_line_refusal(rc, text, "ksteward: cannot start:", str(port))


def test_data_dir_is_a_file(server_factory: ServerFactory, tmp_path: Path) -> None:
    not_a_dir = tmp_path / "data-file"
    not_a_dir.write_text("I am a file\n")
    server = server_factory(overrides={"metadata.log.dir": str(not_a_dir)})
    rc, text = server.run_to_exit()
    assert_one_line_refusal(rc, text, "ksteward: cannot start:", str(not_a_dir))
    assert not_a_dir.read_text() == "I am a file\n"


def test_data_dir_under_a_file(server_factory: ServerFactory, tmp_path: Path) -> None:
    parent = tmp_path / "plain-file"
    parent.write_text("x")
    server = server_factory(overrides={"metadata.log.dir": str(parent / "data")})
    rc, text = server.run_to_exit()
    assert_one_line_refusal(rc, text, "ksteward: cannot start:", str(parent / "data"))


def test_data_dir_not_writable(server_factory: ServerFactory, tmp_path: Path) -> None:
    if os.geteuid() == 0:
        # root may write anywhere permissions allow; /proc/self is a directory no one can create files in.
        target = Path("/proc/self")
    else:
        target = tmp_path / "read-only"
        target.mkdir()
        target.chmod(0o500)
    try:
        server = server_factory(overrides={"metadata.log.dir": str(target)})
        rc, text = server.run_to_exit()
    finally:
        if target.is_relative_to(tmp_path):
            target.chmod(0o700)
    assert_one_line_refusal(rc, text, "ksteward: cannot start:", str(target))


def test_data_dir_of_another_node_is_refused(server_factory: ServerFactory) -> None:
    server = server_factory()
    server.start()
    cluster_id = server.cluster_id
    server.stop()
    server.extra_overrides["node.id"] = "2"
    rc, text = server.run_to_exit()
    line = assert_one_line_refusal(rc, text, "ksteward: cannot start:", "node.id")
    assert "1" in line and "2" in line, line
    meta = read_meta_properties(server.data_dir)
    assert (meta["node.id"], meta["cluster.id"]) == ("1", cluster_id), "a refused start must not touch the data dir"
    # And the rightful node still starts on it.
    del server.extra_overrides["node.id"]
    server.start()
    assert cluster_id_over_the_wire(server) == cluster_id


def test_configured_cluster_id_that_disagrees_is_refused(server_factory: ServerFactory) -> None:
    server = server_factory()
    server.start()
    server.stop()
    server.extra_overrides["cluster.id"] = "AAAAAAAAAAAAAAAAAAAAAA"
    rc, text = server.run_to_exit()
    assert_one_line_refusal(rc, text, "ksteward: cannot start:", "AAAAAAAAAAAAAAAAAAAAAA")


# --- stopping and restarting ----------------------------------------------------------------------


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_signal_stops_cleanly_with_a_snapshot(server_factory: ServerFactory, signum: int) -> None:
    server = server_factory()
    server.start()
    assert checkpoints(server.data_dir) == [], "no snapshot is expected before the first clean stop"
    server.stop(signum)  # asserts exit code 0
    snapshots = checkpoints(server.data_dir)
    assert snapshots, f"no .checkpoint under {server.data_dir} after {signal.Signals(signum).name}"
    for path in snapshots:
        assert CHECKPOINT.match(path.name), f"snapshot name {path.name} is not Kafka's <offset>-<epoch>.checkpoint"
        assert path.parent.name == "__cluster_metadata-0", f"snapshot outside __cluster_metadata-0: {path}"
        assert path.stat().st_size > 0
    assert "Traceback" not in server.run_log(), server.run_log()


def test_sigterm_with_open_connections_exits_zero(server_factory: ServerFactory) -> None:
    server = server_factory("sasl")
    server.start()
    idle = rawkafka.connect(server.address)
    half = rawkafka.connect(server.address)
    authed = rawkafka.connect(server.address)
    try:
        assert authed.sasl_plain("admin", "admin-secret").body.error_code == ErrorCode.none
        half.send_raw(b"\x00\x00\x01\x00\x00\x12")  # a frame that never completes
        server.stop()  # asserts exit code 0 within the deadline
        for conn in (idle, half, authed):
            assert conn.read_until_closed() is not None, "the server exited but a connection is still open?"
    finally:
        for conn in (idle, half, authed):
            conn.close()
    assert checkpoints(server.data_dir)


def test_restart_keeps_cluster_id(server_factory: ServerFactory) -> None:
    server = server_factory()
    server.start()
    first = cluster_id_over_the_wire(server)
    assert first == server.cluster_id
    assert re.fullmatch(r"[A-Za-z0-9_-]{22}", first), f"{first!r} is not a Kafka cluster id (22 chars, base64url)"
    server.restart()
    assert cluster_id_over_the_wire(server) == first
    server.restart(hard=True)  # after SIGKILL too: meta.properties is written once, durably
    assert cluster_id_over_the_wire(server) == first
    assert read_meta_properties(server.data_dir)["cluster.id"] == first


@pytest.mark.parametrize("hard", [False, True], ids=["SIGTERM", "SIGKILL"])
def test_scram_credentials_survive_restart(server_factory: ServerFactory, hard: bool) -> None:
    from kafka.admin import UserScramCredentialUpsertion

    server = server_factory("sasl")
    server.start()
    admin = kafka_python_admin(server.bootstrap, Auth("PLAIN", "admin", "admin-secret"))
    try:
        result = admin.alter_user_scram_credentials(
            [UserScramCredentialUpsertion("durable", "SCRAM-SHA-256", "durable-secret", iterations=4096)]
        )
    finally:
        admin.close()
    assert result == {"durable": None}
    server.restart(hard=hard)  # the reply came after the record was durable, so SIGKILL must not lose it
    views = cluster_views("kafkajs", server.bootstrap, Auth("SCRAM-SHA-256", "durable", "durable-secret"))
    assert {v.cluster_id for v in views.values()} == {server.cluster_id}
    server.restart()  # and again, now from the snapshot written at the clean stop
    views = cluster_views("confluent-kafka", server.bootstrap, Auth("SCRAM-SHA-256", "durable", "durable-secret"))
    assert {v.cluster_id for v in views.values()} == {server.cluster_id}
