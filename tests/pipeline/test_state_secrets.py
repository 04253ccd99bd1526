"""``ksteward pipeline state`` hides what the server hides (issue 12): a real server gets a custom broker key
(``my.vault.token``, sensitive because Kafka cannot type it) and a listener password; the state job, in JSON
and in Parquet, and the metadata reader under it show ``[hidden]`` for both, and the secrets nowhere."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integration"))

from clients import Auth, confluent_admin
from harness import KstewardServer

from ksteward.cli.main import main
from ksteward.pipeline.jobs._shared import read_table
from ksteward.pipeline.readers import read_metadata

VAULT_KEY, PASSWORD_KEY = "my.vault.token", "listener.name.plaintext.ssl.key.password"
SECRETS = {VAULT_KEY: "S3CR3T", PASSWORD_KEY: "HUNTER2"}


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A stopped server's data dir whose log and snapshot hold both secrets and one ordinary broker config."""
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

    server = KstewardServer(tmp_path_factory.mktemp("secrets"), "server", name="secrets")
    try:
        server.start()
        configs = {**SECRETS, "log.cleaner.threads": "2"}
        entries = [ConfigEntry(k, v, incremental_operation=AlterConfigOpType.SET) for k, v in configs.items()]
        resource = ConfigResource(ResourceType.BROKER, "1", incremental_configs=entries)
        admin = confluent_admin(server.bootstrap, Auth())
        admin.incremental_alter_configs([resource], request_timeout=10)[resource].result()
        server.stop()
        return server.data_dir
    finally:
        server.kill()


def assert_no_secret(text: str | bytes, where: str) -> None:
    for secret in SECRETS.values():
        found = secret.encode() in text if isinstance(text, bytes) else secret in text
        assert not found, f"{secret} in {where}"


def test_state_hides_what_the_server_hides(
    spark: SparkSession, data_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    payloads = [row.payload for row in read_metadata(spark, data_dir).frame.select("payload").collect()]
    assert_no_secret("\n".join(payloads), "the metadata reader's payloads")

    for fmt in ("json", "parquet"):
        out = tmp_path / fmt
        assert main(["pipeline", "state", "--metadata-dir", str(data_dir), "--out", str(out), "--format", fmt]) == 0
        for file in (f for f in out.rglob("*") if f.is_file()):
            assert_no_secret(file.read_bytes(), str(file))
        rows = read_table(spark, out / "configs", fmt).collect()
        configs = {(r.resource_type, r.resource_name, r.name): r.value for r in rows}
        assert configs == {
            ("BROKER", "1", VAULT_KEY): "[hidden]",
            ("BROKER", "1", PASSWORD_KEY): "[hidden]",
            ("BROKER", "1", "log.cleaner.threads"): "2",
        }, fmt
    output = capsys.readouterr()
    assert_no_secret(output.out + output.err, "the job's output")
