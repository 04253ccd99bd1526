"""No secret in any log line, at any level, nor in what the tools print (issue 12).

- A failing AlterConfigPolicy: the server runs at DEBUG with a policy (``leaky_policies``) that raises with
  the values it saw; real clients send a listener password and a custom broker key; the log names the
  policy, the resource and the exception type, and holds neither value.
- The tools hide what the server hides: a custom broker key (``my.vault.token``) is sensitive for the
  server's DescribeConfigs (Kafka hides keys it cannot type), and so for ``ksteward metadata dump`` and
  ``ksteward metadata shell`` run on the stopped server's data dir. (``ksteward pipeline state`` is tested
  in ``tests/pipeline/test_state_secrets.py``, where the Spark session lives.)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from clients import Auth, confluent_admin, kafka_python_admin
from harness import KstewardServer, ksteward_cli, running, wait_for
from leaky_policies import PASSWORD_KEY, VAULT_KEY

from ksteward.configs.catalog import ConfigResourceType
from ksteward.configs.sensitive import is_sensitive

HERE = Path(__file__).resolve().parent
PLAINTEXT = Auth()
PASSWORD, VAULT_TOKEN = "HUNTER2", "S3CR3T"
SECRETS = (PASSWORD, VAULT_TOKEN)
UNKNOWN_SERVER_ERROR = -1


def assert_no_secret(text: str, where: str) -> None:
    for secret in SECRETS:
        assert secret not in text, f"{secret} in {where}:\n{text[-4000:]}"


def set_broker_secrets(bootstrap: str, configs: dict[str, str]) -> None:
    """IncrementalAlterConfigs SET on BROKER "1" through confluent-kafka; raises the client's exception."""
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

    entries = [ConfigEntry(k, v, incremental_operation=AlterConfigOpType.SET) for k, v in configs.items()]
    resource = ConfigResource(ResourceType.BROKER, "1", incremental_configs=entries)
    admin = confluent_admin(bootstrap, PLAINTEXT)
    admin.incremental_alter_configs([resource], request_timeout=10)[resource].result()


def error_lines(server: KstewardServer) -> list[str]:
    """The policy failures the server logged at ERROR, without the time stamp and logger."""
    marker = " ERROR ksteward.policy.loader: "
    return [line.partition(marker)[2] for line in server.log_text().splitlines() if marker in line]


@pytest.fixture
def policy_on_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """Put ``leaky_policies`` on the server's import path, as an operator installs a policy package."""
    paths = [str(HERE), *filter(None, [os.environ.get("PYTHONPATH")])]
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(paths))


@pytest.mark.usefixtures("policy_on_path")
def test_a_failing_alter_config_policy_logs_no_secret(server_factory: Any) -> None:
    from kafka.admin import ConfigResource
    from kafka.admin import ConfigResourceType as KpType

    overrides = {"alter.config.policy.class.name": "leaky_policies.LeakyAlterConfigPolicy"}
    # --log-level DEBUG: a secret must not reach the log at any level.
    server = server_factory("server", overrides, name="leaky", debug_log=True)
    with running(server):
        # confluent-kafka, IncrementalAlterConfigs: the policy raises KeyError("HUNTER2").
        with pytest.raises(Exception) as failure:  # confluent-kafka raises KafkaException
            set_broker_secrets(server.bootstrap, {PASSWORD_KEY: PASSWORD})
        assert failure.value.args[0].code() == UNKNOWN_SERVER_ERROR, failure.value
        # kafka-python, AlterConfigs: a ValueError whose message holds both values, caused by a KeyError.
        kp = kafka_python_admin(server.bootstrap, PLAINTEXT)
        try:
            change = ConfigResource(KpType.BROKER, "1", configs={PASSWORD_KEY: PASSWORD, VAULT_KEY: VAULT_TOKEN})
            # raise_on_unknown=False: the client would refuse the custom key itself; incremental=False: AlterConfigs.
            result = kp.alter_configs([change], raise_on_unknown=False, incremental=False)
        finally:
            kp.close()
        outcome = result["broker"]["1"]
        assert outcome.startswith(f"[Error {UNKNOWN_SERVER_ERROR}]"), outcome
        assert_no_secret(outcome, "the client's error")  # Kafka sends no message with UNKNOWN_SERVER_ERROR

        # Both failures are logged at ERROR, and nowhere, at any level, with a secret.
        wait_for(lambda: len(error_lines(server)) == 2, 10, "the two policy failures in the log")
        assert_no_secret(server.log_text(), "the server log")
    failed = "Unknown server error in LeakyAlterConfigPolicy.validate for BROKER resource '1': "
    assert error_lines(server) == [
        f"{failed}KeyError (message withheld: it may quote the request or a config value)",
        f"{failed}ValueError (message withheld: it may quote the request or a config value)",
    ]
    assert "caused by:\nKeyError (message withheld)" in server.log_text()  # the DEBUG traceback, chain included
    assert_no_secret(server.log_text(), "the server log")
    # The policy refused both: nothing was written.
    dump = ksteward_cli("metadata", "dump", str(server.data_dir))
    assert dump.returncode == 0 and PASSWORD_KEY not in dump.stdout and VAULT_KEY not in dump.stdout


def describe_sensitivity(bootstrap: str, topic: str) -> dict[tuple[ConfigResourceType, str], tuple[bool, Any]]:
    """(is_sensitive, value) of every entry DescribeConfigs returns for BROKER "1", ``topic`` and BROKER_LOGGER
    "1", through kafka-python."""
    from kafka.admin import ConfigResource
    from kafka.admin import ConfigResourceType as KpType

    kinds = {"broker": ConfigResourceType.BROKER, "topic": ConfigResourceType.TOPIC,
             "broker_logger": ConfigResourceType.BROKER_LOGGER}  # fmt: skip
    asked = [ConfigResource(KpType.BROKER, "1"), ConfigResource(KpType.TOPIC, topic),
             ConfigResource(KpType.BROKER_LOGGER, "1")]  # fmt: skip
    kp = kafka_python_admin(bootstrap, PLAINTEXT)
    try:
        described = kp.describe_configs(asked, config_filter="all")
    finally:
        kp.close()
    return {
        (kinds[kind], name): (entry["is_sensitive"], entry["value"])
        for kind, resources in described.items()
        for entries in resources.values()
        for name, entry in entries.items()
    }


def test_the_tools_hide_what_the_server_hides(server_factory: Any) -> None:
    from confluent_kafka.admin import NewTopic

    server = server_factory("server").start()
    admin = confluent_admin(server.bootstrap, PLAINTEXT)
    topic = NewTopic("orders", 1, 1, config={"retention.ms": "123456"})
    admin.create_topics([topic], request_timeout=10)["orders"].result()
    set_broker_secrets(server.bootstrap, {VAULT_KEY: VAULT_TOKEN, PASSWORD_KEY: PASSWORD})

    # The server's DescribeConfigs and the one rule agree on every entry it returns.
    entries = describe_sensitivity(server.bootstrap, "orders")
    assert entries[(ConfigResourceType.BROKER, VAULT_KEY)] == (True, None)
    assert entries[(ConfigResourceType.BROKER, PASSWORD_KEY)] == (True, None)
    assert entries[(ConfigResourceType.TOPIC, "retention.ms")] == (False, "123456")
    assert any(kind is ConfigResourceType.BROKER_LOGGER for kind, _ in entries)
    disagreements = {key: sensitive for key, (sensitive, _) in entries.items() if sensitive != is_sensitive(*key)}
    assert disagreements == {}
    server.stop()  # SIGTERM writes a snapshot: the secrets are in it and in the log segment

    dump = ksteward_cli("metadata", "dump", str(server.data_dir))
    assert dump.returncode == 0, dump.stderr
    assert_no_secret(dump.stdout + dump.stderr, "metadata dump")
    values = [
        (line["payload"]["data"]["name"], line["payload"]["data"]["value"])
        for line in map(json.loads, dump.stdout.splitlines())
        if line.get("payload", {}).get("type") == "CONFIG_RECORD"
    ]
    assert (VAULT_KEY, "[hidden]") in values and (PASSWORD_KEY, "[hidden]") in values
    assert ("retention.ms", "123456") in values  # what is not secret still shows

    script = f"cat /configs/Broker/1/{VAULT_KEY}\ncat /configs/Broker/1/{PASSWORD_KEY}\ntree /\nfind /\n"
    shell = subprocess.run(
        [sys.executable, "-m", "ksteward.cli.main", "metadata", "shell", str(server.data_dir)],
        input=script, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert shell.returncode == 0, shell.stderr
    assert_no_secret(shell.stdout + shell.stderr, "metadata shell")
    assert shell.stdout.startswith("[hidden]\n[hidden]\n"), shell.stdout[:200]
    assert f"{VAULT_KEY}: [hidden]" in shell.stdout and "retention.ms: 123456" in shell.stdout
