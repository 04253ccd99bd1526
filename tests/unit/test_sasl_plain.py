"""PLAIN server: RFC 4616 parsing, Kafka's rules and messages, kafka-python's client, fuzzing."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.net.sasl.plain import SaslMechanismPlain

from ksteward.protocol.sasl import (
    IllegalSaslStateError,
    PlainServer,
    SaslAuthenticationError,
    plain_verifier,
)

USERS = {"admin": "admin-secret", "alice": "alice-secret", "ünï": "pässwörd"}
INVALID = "Authentication failed: Invalid username or password"
AUTHZID_MISMATCH = "Authentication failed: Client requested an authorization id that is different from username"


def server() -> PlainServer:
    return PlainServer(plain_verifier(USERS))


def failure(token: bytes, plain: PlainServer | None = None) -> SaslAuthenticationError:
    plain = plain or server()
    with pytest.raises(SaslAuthenticationError) as info:
        plain.step(token)
    assert not plain.complete
    return info.value


def test_valid_credentials_complete_with_empty_reply() -> None:
    plain = server()
    assert plain.step(b"\0alice\0alice-secret") == b""
    assert plain.complete
    assert plain.authorization_id == "alice" and plain.username == "alice"
    assert plain.mechanism_name == "PLAIN"


def test_non_ascii_credentials() -> None:
    plain = server()
    assert plain.step("\0ünï\0pässwörd".encode()) == b""
    assert plain.authorization_id == "ünï"


def test_authzid_equal_to_username_is_accepted() -> None:
    plain = server()
    plain.step(b"alice\0alice\0alice-secret")
    assert plain.authorization_id == "alice"


def test_authzid_different_from_username_is_rejected_with_kafkas_message() -> None:
    assert str(failure(b"admin\0alice\0alice-secret")) == AUTHZID_MISMATCH


def test_authzid_is_checked_only_after_the_password() -> None:
    # Kafka's order: a wrong password wins, so the authzid cannot be used to probe anything.
    assert str(failure(b"admin\0alice\0wrong")) == INVALID


def test_unknown_user_and_wrong_password_read_the_same() -> None:
    wrong = failure(b"\0alice\0wrong")
    unknown = failure(b"\0mallory\0alice-secret")
    assert str(wrong) == str(unknown) == INVALID
    assert wrong.error_code == 58
    assert "wrong" not in str(wrong) and "alice-secret" not in str(unknown)


def test_password_is_case_and_length_sensitive() -> None:
    for password in (b"Alice-secret", b"alice-secre", b"alice-secret ", b"alice-secret\xc3\xa9"):
        assert str(failure(b"\0alice\0" + password)) == INVALID


@pytest.mark.parametrize(
    ("token", "got"),
    [(b"alice", 1), (b"alice\0alice-secret", 2), (b"\0alice\0alice-secret\0", 4), (b"a\0b\0c\0d\0e\0f", 4)],
)
def test_wrong_token_count_uses_kafkas_message(token: bytes, got: int) -> None:
    assert str(failure(token)) == f"Invalid SASL/PLAIN response: expected 3 tokens, got {got}"


def test_empty_username_and_password() -> None:
    assert str(failure(b"\0\0alice-secret")) == "Authentication failed: username not specified"
    assert str(failure(b"\0alice\0")) == "Authentication failed: password not specified"


def test_invalid_utf8_is_invalid_credentials() -> None:
    assert str(failure(b"\0alice\0\xff\xfe")) == INVALID


def test_verifier_exception_is_reported_without_chaining() -> None:
    def verify(username: str, password: str) -> bool:
        raise RuntimeError(f"backend down while checking {password}")

    error = failure(b"\0alice\0alice-secret", PlainServer(verify))
    assert str(error) == "Authentication failed: credentials for user could not be verified"
    assert error.reason == "password verifier raised RuntimeError"
    assert error.__cause__ is None and error.__suppress_context__


def test_custom_verifier_receives_username_and_password() -> None:
    calls: list[tuple[str, str]] = []

    def verify(username: str, password: str) -> bool:
        calls.append((username, password))
        return True

    PlainServer(verify).step(b"\0bob\0pw")
    assert calls == [("bob", "pw")]


def test_plain_verifier_copies_the_mapping() -> None:
    users = {"alice": "one"}
    verify = plain_verifier(users)
    users["alice"] = "two"
    users["bob"] = "three"
    assert verify("alice", "one") and not verify("alice", "two") and not verify("bob", "three")


def test_second_token_is_illegal_after_success_or_failure() -> None:
    done = server()
    done.step(b"\0alice\0alice-secret")
    with pytest.raises(IllegalSaslStateError) as info:
        done.step(b"\0alice\0alice-secret")
    assert info.value.error_code == 34
    failed = server()
    failure(b"\0alice\0wrong", failed)
    with pytest.raises(IllegalSaslStateError):
        failed.step(b"\0alice\0alice-secret")
    assert not failed.complete


def test_authorization_id_requires_completion() -> None:
    plain = server()
    with pytest.raises(RuntimeError):
        _ = plain.authorization_id
    failure(b"\0alice\0wrong", plain)
    with pytest.raises(RuntimeError):
        _ = plain.authorization_id
    assert plain.username == "alice"  # kept for the audit log


def test_repr_never_shows_the_password() -> None:
    plain = server()
    plain.step(b"\0alice\0alice-secret")
    assert "alice-secret" not in repr(plain) and "alice" in repr(plain)


def test_kafka_python_plain_client() -> None:
    client = SaslMechanismPlain(
        sasl_plain_username="alice", sasl_plain_password="alice-secret", security_protocol="SASL_SSL"
    )
    plain = server()
    client.receive(plain.step(client.auth_bytes()))
    assert client.is_done() and client.is_authenticated()
    assert plain.authorization_id == "alice"


NO_NUL = st.text(st.characters(codec="utf-8", exclude_characters="\x00"), max_size=12)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=100))
def test_fuzz_random_bytes_raise_only_authentication_errors(token: bytes) -> None:
    plain = server()
    try:
        assert plain.step(token) == b""
    except SaslAuthenticationError:
        assert not plain.complete
    else:
        assert plain.complete and USERS[plain.authorization_id] == token.split(b"\0")[2].decode()


@settings(max_examples=300, deadline=None)
@given(
    st.one_of(NO_NUL, st.sampled_from(list(USERS))),
    st.one_of(NO_NUL, st.sampled_from(list(USERS))),
    st.one_of(NO_NUL, st.sampled_from(list(USERS.values()))),
)
def test_fuzz_success_iff_kafkas_rules_allow(authzid: str, username: str, password: str) -> None:
    plain = server()
    expected = bool(username) and USERS.get(username) == password and authzid in ("", username)
    try:
        plain.step(f"{authzid}\0{username}\0{password}".encode())
    except SaslAuthenticationError:
        assert not expected
    else:
        assert expected and plain.authorization_id == username
