"""KafkaPrincipalSerde as DefaultKafkaPrincipalBuilder implements it: an int16 version, then
DefaultPrincipalData v0 (compact strings, a boolean, an empty tagged-field section)."""

from __future__ import annotations

import contextlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ksteward.protocol.principal import (
    KafkaPrincipal,
    PrincipalSerdeError,
    deserialize_principal,
    serialize_principal,
)


def test_the_bytes_of_user_alice() -> None:
    data = serialize_principal(KafkaPrincipal("User", "alice"))
    # version 0 | compact string "User" (length + 1) | compact string "alice" | false | no tagged fields
    assert data == b"\x00\x00" + b"\x05User" + b"\x06alice" + b"\x00" + b"\x00"


def test_token_authenticated_is_carried() -> None:
    data = serialize_principal(KafkaPrincipal("User", "bob", token_authenticated=True))
    assert data[-2:] == b"\x01\x00"
    assert deserialize_principal(data) == KafkaPrincipal("User", "bob", True)


@given(
    principal_type=st.text(min_size=1, max_size=40),
    name=st.text(max_size=200),
    token_authenticated=st.booleans(),
)
def test_round_trip(principal_type: str, name: str, token_authenticated: bool) -> None:
    principal = KafkaPrincipal(principal_type, name, token_authenticated)
    assert deserialize_principal(serialize_principal(principal)) == principal


def test_parse_splits_at_the_first_colon() -> None:
    assert KafkaPrincipal.parse("User:CN=a,O=b:c") == KafkaPrincipal("User", "CN=a,O=b:c")
    assert str(KafkaPrincipal.parse("Group:ops")) == "Group:ops"
    with pytest.raises(ValueError):
        KafkaPrincipal.parse("alice")


def test_trailing_bytes_are_ignored_as_kafka_ignores_them() -> None:
    data = serialize_principal(KafkaPrincipal("User", "alice")) + b"junk"
    assert deserialize_principal(data) == KafkaPrincipal("User", "alice")


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"\x00",
        b"\x00\x01\x05User\x06alice\x00\x00",  # an unknown version
        b"\xff\xff\x05User\x06alice\x00\x00",  # a negative one
        b"\x00\x00\x05User\x06alice",  # truncated before the boolean
        b"\x00\x00\x05Us",  # a string longer than the bytes left
        b"\x00\x00\xff\xff\xff\xff\x0f",  # a length no buffer can hold
        b"\x00\x00\x00\x06alice\x00\x00",  # a null type
        b"\x00\x00\x05User\x00\x00\x00",  # a null name
        b"\x00\x00\x02\xff\x06alice\x00\x00",  # not UTF-8
    ],
)
def test_malformed_bytes_are_a_serde_error(data: bytes) -> None:
    with pytest.raises(PrincipalSerdeError):
        deserialize_principal(data)


@given(st.binary(max_size=64))
def test_any_bytes_give_a_principal_or_a_serde_error(data: bytes) -> None:
    with contextlib.suppress(PrincipalSerdeError):
        deserialize_principal(data)
