"""Loading the policy classes that the controller's configuration names.

::

    policies = Policies.from_config(server_config.static)   # PolicyLoadError stops the server
    ...
    policies.close()                                         # at shutdown

A class is named by dotted path, ``pkg.module.ClassName`` or ``pkg.module:ClassName``, and must
subclass the matching interface of :mod:`ksteward.policy.interfaces`. It is built without arguments
and ``configure``\\ d once with every static server property, as Kafka's ``getConfiguredInstance``
does. Any failure raises :class:`PolicyLoadError` with one line in Kafka's ``ConfigException`` form:
``Invalid value <class> for configuration <key>: <reason>``.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from kio.schema.errors import ErrorCode

from ksteward.protocol.api_error import ApiError
from ksteward.safe_log import log_failure

from .interfaces import (
    AlterConfigPolicy,
    AlterConfigRequestMetadata,
    CreateTopicPolicy,
    CreateTopicRequestMetadata,
    DeleteTopicPolicy,
    DeleteTopicRequestMetadata,
    PolicyViolation,
)

log = logging.getLogger(__name__)

P = TypeVar("P", CreateTopicPolicy, DeleteTopicPolicy, AlterConfigPolicy)


class PolicyLoadError(Exception):
    """A policy class that cannot be loaded; the message is one line naming the key, the class and why."""


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _split(dotted_path: str) -> tuple[str, str] | None:
    if ":" in dotted_path:
        module, _, name = dotted_path.partition(":")
    else:
        module, _, name = dotted_path.rpartition(".")
    if not module or not name or ":" in name or not all(part.isidentifier() for part in (*module.split("."), name)):
        return None
    return module, name


def load_policy(dotted_path: str, base_class: Callable[..., P], configs: Mapping[str, str]) -> P:
    """Import ``dotted_path``, check that it subclasses ``base_class`` (one of the three interfaces),
    build it and configure it. (``base_class`` is typed as a callable only so that mypy accepts the
    abstract interface classes as arguments.)"""
    path = dotted_path.strip()
    base: Any = base_class
    key = base.CONFIG_KEY

    def fail(reason: str) -> PolicyLoadError:
        return PolicyLoadError(f"Invalid value {path} for configuration {key}: {reason}")

    parts = _split(path)
    if parts is None:
        raise fail("expected a Python class path such as 'package.module.ClassName' or 'package.module:ClassName'")
    module_name, class_name = parts
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        missing = exc.name or ""
        if missing and (module_name == missing or module_name.startswith(missing + ".")):
            raise fail(f"module '{module_name}' not found") from exc
        raise fail(f"importing module '{module_name}' failed: {_one_line(exc)}") from exc
    except Exception as exc:
        raise fail(f"importing module '{module_name}' failed: {_one_line(exc)}") from exc
    cls = getattr(module, class_name, None)
    if cls is None:
        raise fail(f"module '{module_name}' has no attribute '{class_name}'")
    expected = f"ksteward.policy.{base.__name__}"
    if not isinstance(cls, type) or not issubclass(cls, base):
        raise fail(f"'{module_name}.{class_name}' is not a subclass of {expected}")
    try:
        instance: P = cls()
    except Exception as exc:
        raise fail(f"could not instantiate the class: {_one_line(exc)}") from exc
    try:
        instance.configure(configs)
    except Exception as exc:
        raise fail(f"configure() failed: {_one_line(exc)}") from exc
    return instance


@dataclass(frozen=True, slots=True)
class Policies:
    """The controller's configured policies; each is None when its ``*.policy.class.name`` is unset."""

    create_topic: CreateTopicPolicy | None = None
    delete_topic: DeleteTopicPolicy | None = None
    alter_config: AlterConfigPolicy | None = None

    @classmethod
    def from_config(cls, static: Mapping[str, str]) -> Policies:
        """Load every policy that ``static`` names. On failure the policies already loaded are closed."""
        loaded: list[CreateTopicPolicy | DeleteTopicPolicy | AlterConfigPolicy] = []
        try:
            create = _maybe_load(static, CreateTopicPolicy, loaded)
            delete = _maybe_load(static, DeleteTopicPolicy, loaded)
            alter = _maybe_load(static, AlterConfigPolicy, loaded)
        except PolicyLoadError:
            Policies._close_all(loaded)
            raise
        return cls(create_topic=create, delete_topic=delete, alter_config=alter)

    def close(self) -> None:
        """Close every policy; a failing ``close`` is logged and does not stop the others."""
        self._close_all([p for p in (self.create_topic, self.delete_topic, self.alter_config) if p is not None])

    @staticmethod
    def _close_all(policies: list[CreateTopicPolicy | DeleteTopicPolicy | AlterConfigPolicy]) -> None:
        for policy in policies:
            try:
                policy.close()
            except Exception as exc:
                _log_failure(f"closing {type(policy).__qualname__} failed", exc)


#: PolicyViolations raised per policy class (``module.QualName``) since the process started: one node a process.
#: Read by the metrics endpoint (``ksteward_policy_rejections_total``); Kafka has no such metric.
REJECTIONS: dict[str, int] = {}


def policy_error(
    policy: CreateTopicPolicy | DeleteTopicPolicy | AlterConfigPolicy, metadata: object
) -> ApiError | None:
    """Run ``policy.validate(metadata)``: None if it passes, POLICY_VIOLATION with the policy's message if it
    raises PolicyViolation, UNKNOWN_SERVER_ERROR (logged without its message, and withheld from the client)
    if it raises anything else."""
    try:
        policy.validate(metadata)  # type: ignore[arg-type]
    except PolicyViolation as exc:
        name = f"{type(policy).__module__}.{type(policy).__qualname__}"
        REJECTIONS[name] = REJECTIONS.get(name, 0) + 1
        return ApiError(ErrorCode.policy_violation, str(exc) or None)
    except Exception as exc:
        _log_failure(f"Unknown server error in {type(policy).__qualname__}.validate for {_subject(metadata)}", exc)
        return ApiError(ErrorCode.unknown_server_error)
    return None


def _subject(metadata: object) -> str:
    """What a request metadata is about, for a log line: the resource type and name, or the topic. Never
    the metadata itself, whose configs are no business of the log."""
    if isinstance(metadata, AlterConfigRequestMetadata):
        return f"{metadata.resource.type.name} resource {metadata.resource.name!r}"
    if isinstance(metadata, CreateTopicRequestMetadata | DeleteTopicRequestMetadata):
        return f"topic {metadata.topic!r}"
    return type(metadata).__name__


def _log_failure(what: str, exc: BaseException) -> None:
    """The ERROR line names the policy, the resource and the exception's type, enough to find the policy
    that broke; the DEBUG line adds where it broke. Never the message: a policy's exception is text written
    by third-party code from whatever ``validate`` (or ``close``) saw, secrets included (``safe_log``)."""
    log_failure(log, what, exc)


def _maybe_load(
    static: Mapping[str, str],
    base_class: Callable[..., P],
    loaded: list[CreateTopicPolicy | DeleteTopicPolicy | AlterConfigPolicy],
) -> P | None:
    key: str = getattr(base_class, "CONFIG_KEY")  # noqa: B009 - typed as a callable, see load_policy
    path = (static.get(key) or "").strip()
    if not path:
        return None
    policy = load_policy(path, base_class, static)
    loaded.append(policy)
    return policy
