"""The public surface of ``ksteward.authorizer``: its names, its one error tree, typed settings, and the
one ALLOW-implication table the index's masks are built from."""

from __future__ import annotations

import pkgutil

import pytest

import ksteward.authorizer as authorizer
from ksteward.authorizer import (
    ALLOW_IMPLICATIONS,
    AclBinding,
    AclOperation,
    AuthorizerError,
    AuthorizerNotReadyError,
    AuthorizerSettings,
    InvalidAclError,
    InvalidConfigError,
    StandardAuthorizer,
    UnknownAclError,
    allow_grants,
    deny_denies,
    validate_new_acl,
)
from ksteward.authorizer._index import DENY_TEST, GRANT


def binding(**changes: str) -> AclBinding:
    fields = {
        "resource_type": "TOPIC",
        "resource_name": "orders",
        "pattern_type": "LITERAL",
        "principal": "User:bob",
        "host": "*",
        "operation": "READ",
        "permission_type": "ALLOW",
    }
    return AclBinding(**{**fields, **changes})


def test_every_public_name_is_exported_and_every_module_is_private() -> None:
    for name in authorizer.__all__:
        assert hasattr(authorizer, name), name
    modules = [m.name for m in pkgutil.iter_modules(authorizer.__path__)]
    assert modules and all(name.startswith("_") for name in modules)


def test_one_error_tree_keeps_the_builtin_bases() -> None:
    assert issubclass(InvalidAclError, AuthorizerError) and issubclass(InvalidAclError, ValueError)
    assert issubclass(InvalidConfigError, AuthorizerError) and issubclass(InvalidConfigError, ValueError)
    assert issubclass(UnknownAclError, AuthorizerError) and issubclass(UnknownAclError, KeyError)
    assert issubclass(AuthorizerNotReadyError, AuthorizerError)


def test_each_error_is_raised_where_documented() -> None:
    auth = StandardAuthorizer()
    with pytest.raises(AuthorizerNotReadyError):
        auth.authorize("User:bob", "h", "READ", "TOPIC", "orders")
    with pytest.raises(UnknownAclError):
        auth.remove_acl("missing")
    with pytest.raises(InvalidAclError):
        binding(operation="ANY")
    with pytest.raises(InvalidAclError):
        binding(operation="NOT_AN_OPERATION")
    auth.add_acl(1, binding())
    with pytest.raises(InvalidAclError):
        auth.add_acl(2, binding())  # the same 7-tuple under another id
    with pytest.raises(InvalidConfigError):
        AuthorizerSettings.from_config({"super.users": "bob"})


def test_settings_are_typed_and_read_from_kafka_strings() -> None:
    settings = AuthorizerSettings.from_config(
        {"super.users": " User:a ; User:b ;", "allow.everyone.if.no.acl.found": " TRUE ", "node.id": "3", "x": "y"}
    )
    assert settings == AuthorizerSettings(frozenset({"User:a", "User:b"}), True, 3)
    assert AuthorizerSettings.from_config({}) == AuthorizerSettings()
    auth = StandardAuthorizer(settings)
    assert auth.settings is settings and auth.super_users == settings.super_users
    assert StandardAuthorizer.from_config({"super.users": "User:a;User:b", "node.id": "3"}).settings == (
        AuthorizerSettings(frozenset({"User:a", "User:b"}), False, 3)
    )


def test_the_implication_table_is_the_one_the_index_uses() -> None:
    assert ALLOW_IMPLICATIONS[AclOperation.DESCRIBE] == {
        AclOperation.READ, AclOperation.WRITE, AclOperation.DELETE, AclOperation.ALTER,
    }  # fmt: skip
    assert ALLOW_IMPLICATIONS[AclOperation.DESCRIBE_CONFIGS] == {AclOperation.ALTER_CONFIGS}
    for acl_operation in AclOperation:
        for requested in AclOperation:
            assert allow_grants(acl_operation, requested) == bool(GRANT[requested] & (1 << acl_operation))
            assert deny_denies(acl_operation, requested) == bool(DENY_TEST[requested] & (1 << (16 + acl_operation)))


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"resource_type": "CLUSTER"}, "The only valid name for the CLUSTER resource is kafka-cluster"),
        ({"resource_name": ""}, "Invalid empty resource name"),
        ({"pattern_type": "UNKNOWN"}, "Invalid patternType UNKNOWN"),
        ({"principal": "bob"}, "Could not parse principal from `bob`: expected principalType:principalName"),
    ],
)
def test_validate_new_acl_uses_kafkas_messages(changes: dict[str, str], message: str) -> None:
    with pytest.raises(InvalidAclError) as caught:
        validate_new_acl(binding(**changes))
    assert str(caught.value) == message


def test_validate_new_acl_accepts_a_valid_acl() -> None:
    validate_new_acl(binding())
    validate_new_acl(binding(resource_type="CLUSTER", resource_name="kafka-cluster", operation="ALTER"))
