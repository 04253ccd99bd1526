"""Loading policies by dotted path: the happy paths, and one clear line for every way it can fail."""

from __future__ import annotations

import logging

import policy_samples
import pytest

from ksteward.policy import (
    AlterConfigPolicy,
    CreateTopicPolicy,
    DeleteTopicPolicy,
    Policies,
    PolicyLoadError,
    load_policy,
)
from ksteward.policy.builtin import ProtectInternalTopics

CREATE_KEY = "create.topic.policy.class.name"
CREATE_CLASS = "ksteward.policy.CreateTopicPolicy"


@pytest.fixture(autouse=True)
def _reset_closed() -> None:
    policy_samples.closed.clear()


@pytest.mark.parametrize("path", ["policy_samples.Create", "policy_samples:Create", "  policy_samples.Create  "])
def test_load_by_dotted_or_colon_path(path: str) -> None:
    policy = load_policy(path, CreateTopicPolicy, {"a": "1"})
    assert type(policy) is policy_samples.Create
    assert policy.configs == {"a": "1"}


def test_builtin_loads_by_its_documented_path() -> None:
    policy = load_policy("ksteward.policy.builtin.ProtectInternalTopics", DeleteTopicPolicy, {})
    assert isinstance(policy, ProtectInternalTopics)


def load_error(path: str, base: type = CreateTopicPolicy) -> str:
    with pytest.raises(PolicyLoadError) as info:
        load_policy(path, base, {})
    message = str(info.value)
    assert "\n" not in message
    return message


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("NoDots", "expected a Python class path such as 'package.module.ClassName' or 'package.module:ClassName'"),
        ("policy_samples.", "expected a Python class path"),
        ("org.apache.kafka.Some$Policy", "expected a Python class path"),
        ("nowhere_at_all.Policy", "module 'nowhere_at_all' not found"),
        ("policy_samples.sub.Policy", "module 'policy_samples.sub' not found"),
        ("policy_broken_module.Policy", "importing module 'policy_broken_module' failed: RuntimeError: boom at import"),
        ("policy_missing_dependency.Policy",
         "importing module 'policy_missing_dependency' failed: ModuleNotFoundError: "
         "No module named 'ksteward_nonexistent_dependency'"),
        ("policy_samples.Missing", "module 'policy_samples' has no attribute 'Missing'"),
        ("policy_samples.NotAPolicy", f"'policy_samples.NotAPolicy' is not a subclass of {CREATE_CLASS}"),
        ("policy_samples.NOT_A_CLASS", f"'policy_samples.NOT_A_CLASS' is not a subclass of {CREATE_CLASS}"),
        ("policy_samples.Delete", f"'policy_samples.Delete' is not a subclass of {CREATE_CLASS}"),
        ("policy_samples.Abstract", "could not instantiate the class: TypeError: Can't instantiate abstract class"),
        ("policy_samples.ConstructorFails", "could not instantiate the class: RuntimeError: no database"),
    ],
)  # fmt: skip
def test_load_failures_name_key_class_and_reason(path: str, reason: str) -> None:
    message = load_error(path)
    assert message.startswith(f"Invalid value {path.strip()} for configuration {CREATE_KEY}: {reason}")


def test_configure_failure_is_one_line_with_the_key_of_the_interface() -> None:
    message = load_error("policy_samples.ConfigureFails", AlterConfigPolicy)
    assert message == (
        "Invalid value policy_samples.ConfigureFails for configuration alter.config.policy.class.name: "
        "configure() failed: ValueError: Invalid value 'x' for retention.policy.max.ms: expected an integer"
    )


def test_delete_key_in_messages() -> None:
    assert "delete.topic.policy.class.name" in load_error("policy_samples.Create", DeleteTopicPolicy)


def test_policies_from_config_loads_each_configured_policy() -> None:
    static = {
        "create.topic.policy.class.name": "policy_samples.Create",
        "delete.topic.policy.class.name": "policy_samples:Delete",
        "alter.config.policy.class.name": "policy_samples.Alter",
        "custom.setting": "x",
    }
    policies = Policies.from_config(static)
    assert isinstance(policies.create_topic, policy_samples.Create)
    assert isinstance(policies.delete_topic, policy_samples.Delete)
    assert isinstance(policies.alter_config, policy_samples.Alter)
    assert policies.create_topic.configs == static  # every server property, as Kafka's configure gets
    policies.close()
    assert policy_samples.closed == ["create", "delete", "alter"]


def test_unset_or_blank_keys_load_nothing() -> None:
    assert Policies.from_config({}) == Policies()
    assert Policies.from_config({CREATE_KEY: "  ", "delete.topic.policy.class.name": ""}) == Policies()
    Policies().close()


def test_a_failure_closes_the_policies_already_loaded() -> None:
    static = {CREATE_KEY: "policy_samples.Create", "delete.topic.policy.class.name": "policy_samples.Missing"}
    with pytest.raises(PolicyLoadError, match=r"delete\.topic\.policy\.class\.name"):
        Policies.from_config(static)
    assert policy_samples.closed == ["create"]


def test_close_continues_past_a_failing_close(caplog: pytest.LogCaptureFixture) -> None:
    policies = Policies.from_config(
        {
            "delete.topic.policy.class.name": "policy_samples.CloseFails",
            "alter.config.policy.class.name": "policy_samples.Alter",
        }
    )
    with caplog.at_level(logging.ERROR, logger="ksteward.policy.loader"):
        policies.close()
    assert policy_samples.closed == ["alter"]
    assert "closing CloseFails failed" in caplog.text
