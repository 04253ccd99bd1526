"""SCRAM server: RFC 7677's vector, kafka-python's client, Kafka's failure rules, and fuzzing."""

from __future__ import annotations

import base64
import hashlib
import hmac

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka.net.sasl.scram import SaslMechanismScram, ScramClient

from ksteward.protocol.sasl import (
    IllegalSaslStateError,
    SaslAuthenticationError,
    ScramCredential,
    ScramMechanism,
    ScramServer,
    TokenCredential,
    UnsupportedSaslMechanismError,
    credential_from_password,
    credential_from_salted_password,
)

SHA256 = ScramMechanism.SCRAM_SHA_256
SHA512 = ScramMechanism.SCRAM_SHA_512
GENERIC_256 = "Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-256"
AUTHZID_MISMATCH = "Authentication failed: Client requested an authorization id that is different from username"

# RFC 7677 section 3: user "user", password "pencil".
RFC_CLIENT_FIRST = b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
RFC_SERVER_NONCE = "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
RFC_SALT = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
RFC_SERVER_FIRST = b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
RFC_CLIENT_FINAL = (
    b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
)
RFC_SERVER_FINAL = b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="
RFC_CREDENTIAL = credential_from_password(SHA256, "pencil", salt=RFC_SALT, iterations=4096)

# Derived once: PBKDF2 at 4096 iterations is the slow part of every exchange.
CREDENTIALS = {m: {"alice": credential_from_password(m, "alice-secret")} for m in ScramMechanism}


def rfc_server() -> ScramServer:
    return ScramServer(SHA256, {"user": RFC_CREDENTIAL}.get, nonce_factory=lambda: RFC_SERVER_NONCE)


def alice_server(mechanism: ScramMechanism = SHA256) -> ScramServer:
    return ScramServer(mechanism, CREDENTIALS[mechanism].get)


def client_final(
    mechanism: ScramMechanism,
    password: str,
    client_first_bare: bytes,
    server_first: bytes,
    *,
    cbind: bytes = b"biws",
    nonce: bytes | None = None,
) -> bytes:
    """An independent client-final builder (RFC 5802 section 3), used where kafka-python cannot go."""
    fields = dict(part.split(b"=", 1) for part in server_first.split(b","))
    nonce = fields[b"r"] if nonce is None else nonce
    salted = hashlib.pbkdf2_hmac(mechanism.hash_name, password.encode(), base64.b64decode(fields[b"s"]), 4096)
    client_key = hmac.new(salted, b"Client Key", mechanism.hash_name).digest()
    stored_key = hashlib.new(mechanism.hash_name, client_key).digest()
    without_proof = b"c=" + cbind + b",r=" + nonce
    auth_message = client_first_bare + b"," + server_first + b"," + without_proof
    signature = hmac.new(stored_key, auth_message, mechanism.hash_name).digest()
    proof = bytes(a ^ b for a, b in zip(client_key, signature, strict=True))
    return without_proof + b",p=" + base64.b64encode(proof)


def fail_message(server: ScramServer, token: bytes) -> SaslAuthenticationError:
    with pytest.raises(SaslAuthenticationError) as info:
        server.step(token)
    assert not server.complete
    return info.value


# --- mechanism and credentials ---------------------------------------------------------------------


def test_mechanism_wire_codes_names_and_kafka_iteration_bounds() -> None:
    assert int(SHA256) == 1 and int(SHA512) == 2
    assert SHA256.mechanism_name == "SCRAM-SHA-256" and SHA512.mechanism_name == "SCRAM-SHA-512"
    assert (SHA256.hash_name, SHA512.hash_name) == ("sha256", "sha512")
    assert (SHA256.digest_size, SHA512.digest_size) == (32, 64)
    for mechanism in ScramMechanism:
        assert (mechanism.min_iterations, mechanism.max_iterations) == (4096, 16384)
        assert ScramMechanism.from_name(mechanism.mechanism_name) is mechanism


@pytest.mark.parametrize("name", ["SCRAM-SHA-1", "scram-sha-256", "PLAIN", ""])
def test_from_name_rejects_unknown_and_wrong_case(name: str) -> None:
    with pytest.raises(UnsupportedSaslMechanismError) as info:
        ScramMechanism.from_name(name)
    assert str(info.value) == f"Unsupported SASL mechanism {name}"
    assert info.value.enabled_mechanisms == ("SCRAM-SHA-256", "SCRAM-SHA-512")
    assert info.value.error_code == 33


def test_credential_matches_rfc_5802_definitions() -> None:
    salted = hashlib.pbkdf2_hmac("sha256", b"pencil", RFC_SALT, 4096)
    client_key = hmac.new(salted, b"Client Key", "sha256").digest()
    assert RFC_CREDENTIAL.salt == RFC_SALT
    assert RFC_CREDENTIAL.iterations == 4096
    assert RFC_CREDENTIAL.stored_key == hashlib.sha256(client_key).digest()
    assert RFC_CREDENTIAL.server_key == hmac.new(salted, b"Server Key", "sha256").digest()
    assert credential_from_salted_password(SHA256, RFC_SALT, salted, 4096) == RFC_CREDENTIAL


def test_credential_from_password_uses_a_fresh_kafka_style_salt() -> None:
    first = credential_from_password(SHA512, "pw")
    second = credential_from_password(SHA512, "pw")
    assert first.salt != second.salt
    assert first.stored_key != second.stored_key
    # Like Kafka's ScramFormatter.secureRandomBytes: 130 random bits as a base-36 string.
    assert first.salt.isascii() and first.salt.isalnum() and 20 <= len(first.salt) <= 26
    assert len(first.stored_key) == len(first.server_key) == 64


@pytest.mark.parametrize(("iterations", "message"), [(4095, "Too few iterations"), (16385, "Too many iterations")])
def test_credential_iterations_outside_kafka_bounds_are_rejected(iterations: int, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        credential_from_password(SHA256, "pw", salt=b"salt", iterations=iterations)
    with pytest.raises(ValueError, match=message):
        credential_from_salted_password(SHA256, b"salt", b"x" * 32, iterations)
    assert credential_from_password(SHA256, "pw", salt=b"salt", iterations=16384).iterations == 16384


def test_credential_repr_hides_salt_and_keys() -> None:
    text = repr(RFC_CREDENTIAL) + str(RFC_CREDENTIAL)
    for secret in (RFC_CREDENTIAL.salt, RFC_CREDENTIAL.stored_key, RFC_CREDENTIAL.server_key):
        assert base64.b64encode(secret).decode() not in text
        assert repr(secret) not in text
        assert secret.hex() not in text
    assert "iterations=4096" in text


# --- successful exchanges ---------------------------------------------------------------------------


def test_rfc_7677_vector() -> None:
    server = rfc_server()
    assert server.step(RFC_CLIENT_FIRST) == RFC_SERVER_FIRST
    assert server.username == "user" and not server.complete
    assert server.step(RFC_CLIENT_FINAL) == RFC_SERVER_FINAL
    assert server.complete
    assert server.authorization_id == "user"


@pytest.mark.parametrize("mechanism", list(ScramMechanism))
def test_kafka_python_scram_client(mechanism: ScramMechanism) -> None:
    client = ScramClient("alice", "alice-secret", mechanism.mechanism_name)
    server = alice_server(mechanism)
    client.process_server_first_message(server.step(client.first_message()))
    server_final = server.step(client.final_message())
    # Raises ValueError if the server signature is not the one the client computed.
    client.process_server_final_message(server_final)
    assert server.complete and server.authorization_id == "alice"


@pytest.mark.parametrize("mechanism", list(ScramMechanism))
def test_kafka_python_sasl_mechanism_state_machine(mechanism: ScramMechanism) -> None:
    # The object kafka-python's connection actually drives, token by token.
    client = SaslMechanismScram(
        sasl_plain_username="alice",
        sasl_plain_password="alice-secret",
        sasl_mechanism=mechanism.mechanism_name,
        security_protocol="SASL_SSL",
    )
    server = alice_server(mechanism)
    while not client.is_done():
        client.receive(server.step(client.auth_bytes()))
    assert client.is_authenticated() and server.complete
    assert server.authorization_id == "alice"


@pytest.mark.parametrize("mechanism", list(ScramMechanism))
def test_kafka_python_client_with_wrong_password_fails_with_generic_message(mechanism: ScramMechanism) -> None:
    client = ScramClient("alice", "wrong", mechanism.mechanism_name)
    server = alice_server(mechanism)
    client.process_server_first_message(server.step(client.first_message()))
    error = fail_message(server, client.final_message())
    assert str(error) == (
        "Authentication failed during authentication due to invalid credentials with SASL mechanism "
        + mechanism.mechanism_name
    )
    assert error.reason == "invalid client proof"
    assert error.error_code == 58
    assert "wrong" not in str(error) and "alice-secret" not in str(error)


def test_gs2_flag_y_is_accepted_with_matching_channel_binding() -> None:
    server = alice_server()
    server_first = server.step(b"y,,n=alice,r=abc")
    final = client_final(SHA256, "alice-secret", b"n=alice,r=abc", server_first, cbind=b"eSws")
    assert server.step(final).startswith(b"v=")
    assert server.complete


def test_authzid_equal_to_username_is_accepted() -> None:
    server = alice_server()
    server_first = server.step(b"n,a=alice,n=alice,r=abc")
    cbind = base64.b64encode(b"n,a=alice,")
    assert server.step(client_final(SHA256, "alice-secret", b"n=alice,r=abc", server_first, cbind=cbind))
    assert server.authorization_id == "alice"


def test_escaped_username_is_decoded() -> None:
    name = "a,b=c"
    server = ScramServer(SHA256, {name: CREDENTIALS[SHA256]["alice"]}.get)
    server_first = server.step(b"n,,n=a=2Cb=3Dc,r=abc")
    assert server.username == name
    server.step(client_final(SHA256, "alice-secret", b"n=a=2Cb=3Dc,r=abc", server_first))
    assert server.authorization_id == name


def test_unsupported_extensions_are_ignored_and_kept_in_auth_message() -> None:
    server = alice_server()
    server_first = server.step(b"n,,n=alice,r=abc,tokenauth=false,foo=bar")
    final = client_final(SHA256, "alice-secret", b"n=alice,r=abc,tokenauth=false,foo=bar", server_first)
    assert server.step(final).startswith(b"v=")


def test_server_nonce_is_fresh_and_extends_the_client_nonce() -> None:
    nonces = set()
    for _ in range(3):
        reply = alice_server().step(b"n,,n=alice,r=client-nonce")
        nonce = reply.split(b",")[0][2:]
        assert nonce.startswith(b"client-nonce") and len(nonce) > len(b"client-nonce") + 16
        nonces.add(nonce)
    assert len(nonces) == 3


# --- failures ---------------------------------------------------------------------------------------


def test_unknown_user_fails_at_client_final_with_the_wrong_password_message() -> None:
    wrong_password = alice_server()
    server_first = wrong_password.step(b"n,,n=alice,r=abc")
    wrong = fail_message(wrong_password, client_final(SHA256, "nope", b"n=alice,r=abc", server_first))

    unknown = alice_server()
    decoy_first = unknown.step(b"n,,n=mallory,r=abc")
    # The decoy looks like a real server-first: same shape, a salt, Kafka's default iterations.
    fields = dict(part.split(b"=", 1) for part in decoy_first.split(b","))
    assert sorted(fields) == [b"i", b"r", b"s"]
    assert fields[b"i"] == b"4096" and base64.b64decode(fields[b"s"])
    missing = fail_message(unknown, client_final(SHA256, "nope", b"n=mallory,r=abc", decoy_first))

    assert str(missing) == str(wrong) == GENERIC_256
    assert missing.reason == "unknown user"


def test_unknown_user_decoy_salt_is_stable_per_user_and_secret() -> None:
    def salt(user: str, secret: bytes | None = None) -> bytes:
        server = ScramServer(SHA256, {}.get, decoy_secret=secret)
        return server.step(f"n,,n={user},r=abc".encode()).split(b",s=")[1].split(b",")[0]

    assert salt("mallory") == salt("mallory")
    assert salt("mallory") != salt("trudy")
    assert salt("mallory", b"k1") == salt("mallory", b"k1") != salt("mallory", b"k2")


def test_unknown_user_fails_even_with_a_proof_computed_from_the_decoy_salt() -> None:
    server = ScramServer(SHA256, {}.get)
    client = ScramClient("mallory", "anything", "SCRAM-SHA-256")
    client.process_server_first_message(server.step(client.first_message()))
    assert fail_message(server, client.final_message()).reason == "unknown user"


def test_tampered_nonce_is_rejected() -> None:
    server = rfc_server()
    server.step(RFC_CLIENT_FIRST)
    tampered = RFC_CLIENT_FINAL.replace(b"k0,p=", b"k1,p=")
    error = fail_message(server, tampered)
    assert str(error) == GENERIC_256 and error.reason == "nonce does not match server-first"


def test_tampered_proof_is_rejected() -> None:
    server = rfc_server()
    server.step(RFC_CLIENT_FIRST)
    error = fail_message(server, RFC_CLIENT_FINAL.replace(b"p=dHz", b"p=dHy"))
    assert str(error) == GENERIC_256 and error.reason == "invalid client proof"


def test_channel_binding_must_match_the_gs2_header() -> None:
    server = alice_server()
    server_first = server.step(b"n,,n=alice,r=abc")
    # A valid proof over c=eSws ("y,,") while the client said "n": a downgrade attempt.
    final = client_final(SHA256, "alice-secret", b"n=alice,r=abc", server_first, cbind=b"eSws")
    assert fail_message(server, final).reason == "channel binding data does not match the gs2 header"


@pytest.mark.parametrize(
    "client_first",
    [
        b"p=tls-unique,,n=user,r=abc",  # channel binding required: ksteward offers no SCRAM-PLUS
        b"x,,n=user,r=abc",
        b"n=user,r=abc",  # no gs2 header at all
        b",,n=user,r=abc",
        b"n,b=user,n=user,r=abc",
        b"n,a=,n=user,r=abc",
        b"n,,m=ext,n=user,r=abc",  # mandatory extension
        b"n,,r=abc,n=user",
        b"n,,n=user",
        b"n,,n=,r=abc",
        b"n,,n=user,r=",
        b"n,,n=us=41er,r=abc",  # '=' not followed by 2C or 3D
        b"n,,n=user=,r=abc",
        b"n,,n=user,r=a\x7fb",
        b"n,,n=user,r=abc,",
        b"n,,n=user,r=abc,9=x",
        b"n,,n=user,r=abc,ext=",
        b"n,,n=us\x00er,r=abc",
        b"n,,n=\xff\xfe,r=abc",
        b"",
    ],
)
def test_malformed_client_first_fails_with_generic_message(client_first: bytes) -> None:
    server = rfc_server()
    error = fail_message(server, client_first)
    assert str(error) == GENERIC_256
    # The exchange is over: no second chance on the same server.
    with pytest.raises(IllegalSaslStateError):
        server.step(RFC_CLIENT_FIRST)


@pytest.mark.parametrize(
    "client_final_message",
    [
        RFC_CLIENT_FINAL.replace(b"c=biws", b"c=bi!s"),
        RFC_CLIENT_FINAL.replace(b",p=", b",q="),
        RFC_CLIENT_FINAL.replace(b"c=biws,", b""),
        RFC_CLIENT_FINAL + b",x=y",
        RFC_CLIENT_FINAL[:-2],  # proof with broken padding
        RFC_CLIENT_FINAL.replace(b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=", b"p=dHzb"),
        RFC_CLIENT_FINAL.replace(b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=", b"p="),
        b"",
        b"\xff",
    ],
)
def test_malformed_client_final_fails_with_generic_message(client_final_message: bytes) -> None:
    server = rfc_server()
    server.step(RFC_CLIENT_FIRST)
    assert str(fail_message(server, client_final_message)) == GENERIC_256


def test_authzid_mismatch_gets_kafkas_message_whether_or_not_the_user_exists() -> None:
    for user in ("alice", "mallory"):
        server = alice_server()
        error = fail_message(server, f"n,a=admin,n={user},r=abc".encode())
        assert str(error) == AUTHZID_MISMATCH


@pytest.mark.parametrize(
    ("client_first", "reason"),
    [
        (b"n,,m=ext,n=user,r=abc", "mandatory extension not supported"),
        (b"p=tls-unique,,n=user,r=abc", "client requires channel binding"),
        (b"n,,n=us=41er,r=abc", "invalid escape in saslname"),
    ],
)
def test_failure_reasons_for_the_server_log(client_first: bytes, reason: str) -> None:
    assert fail_message(rfc_server(), client_first).reason == reason


@pytest.mark.parametrize("value", ["true", "TRUE", "True"])
def test_delegation_token_authentication_is_refused_when_tokens_are_disabled(value: str) -> None:
    server = alice_server()
    error = fail_message(server, f"n,,n=alice,r=abc,tokenauth={value}".encode())
    assert str(error) == GENERIC_256
    assert error.reason == "delegation token authentication is not enabled"


TOKEN_PASSWORD = base64.b64encode(b"h" * 64).decode()  # a token's password: the base64 of its HMAC
TOKEN = TokenCredential(
    owner="alice", requester="User:admin", credential=credential_from_password(SHA256, TOKEN_PASSWORD)
)


def token_server() -> ScramServer:
    return ScramServer(SHA256, CREDENTIALS[SHA256].get, token_lookup={"token-1": TOKEN}.get)


def test_a_token_login_becomes_its_owner_and_is_marked() -> None:
    server = token_server()
    first_bare = b"n=token-1,r=abc,tokenauth=true"
    server_first = server.step(b"n,," + first_bare)
    assert server.step(client_final(SHA256, TOKEN_PASSWORD, first_bare, server_first)).startswith(b"v=")
    assert server.complete and server.authorization_id == "alice" and server.username == "token-1"
    assert server.token_authenticated and server.token_requester == "User:admin"
    assert "h" * 8 not in repr(TOKEN) and TOKEN_PASSWORD not in repr(TOKEN)


def test_a_user_login_on_a_token_enabled_server_is_not_a_token_login() -> None:
    server = token_server()
    server_first = server.step(b"n,,n=alice,r=abc")
    assert server.step(client_final(SHA256, "alice-secret", b"n=alice,r=abc", server_first)).startswith(b"v=")
    assert server.authorization_id == "alice" and not server.token_authenticated and server.token_requester is None


@pytest.mark.parametrize(("user", "password"), [("token-2", TOKEN_PASSWORD), ("token-1", "wrong"),
                                                ("alice", "alice-secret")])  # fmt: skip
def test_an_unknown_token_a_wrong_hmac_or_a_user_name_fails_at_client_final(user: str, password: str) -> None:
    server = token_server()
    first_bare = f"n={user},r=abc,tokenauth=true".encode()
    server_first = server.step(b"n,," + first_bare)  # a decoy for an unknown token, as for an unknown user
    error = fail_message(server, client_final(SHA256, password, first_bare, server_first))
    assert str(error) == GENERIC_256 and not server.token_authenticated


def test_stored_credential_below_minimum_iterations_is_refused() -> None:
    weak = ScramCredential(salt=b"s", stored_key=b"k" * 32, server_key=b"k" * 32, iterations=4095)
    server = ScramServer(SHA256, {"alice": weak}.get)
    error = fail_message(server, b"n,,n=alice,r=abc")
    assert str(error) == GENERIC_256 and "iterations" in error.reason


def test_lookup_failure_is_generic_and_not_chained() -> None:
    def lookup(name: str) -> ScramCredential | None:
        raise OSError("store unavailable: password=hunter2")

    error = fail_message(ScramServer(SHA256, lookup), b"n,,n=alice,r=abc")
    assert str(error) == GENERIC_256
    assert error.reason == "credential lookup raised OSError"
    assert error.__cause__ is None and error.__suppress_context__


def test_reauthentication_wording() -> None:
    server = ScramServer(SHA512, {}.get, reauthentication=True)
    error = fail_message(server, b"garbage")
    assert str(error) == (
        "Authentication failed during re-authentication due to invalid credentials with SASL mechanism SCRAM-SHA-512"
    )


def test_steps_after_completion_are_illegal() -> None:
    server = rfc_server()
    server.step(RFC_CLIENT_FIRST)
    server.step(RFC_CLIENT_FINAL)
    with pytest.raises(IllegalSaslStateError) as info:
        server.step(RFC_CLIENT_FINAL)
    assert info.value.error_code == 34
    assert server.complete and server.authorization_id == "user"


def test_authorization_id_is_unavailable_until_complete() -> None:
    server = rfc_server()
    with pytest.raises(RuntimeError):
        _ = server.authorization_id
    server.step(RFC_CLIENT_FIRST)
    with pytest.raises(RuntimeError):
        _ = server.authorization_id
    fail_message(server, b"c=biws")
    with pytest.raises(RuntimeError):
        _ = server.authorization_id


def test_server_repr_shows_no_credential_material() -> None:
    server = rfc_server()
    server.step(RFC_CLIENT_FIRST)
    text = repr(server)
    assert "user" in text
    for secret in (RFC_CREDENTIAL.stored_key, RFC_CREDENTIAL.server_key):
        assert base64.b64encode(secret).decode() not in text and repr(secret) not in text


# --- fuzzing ----------------------------------------------------------------------------------------

FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def mutate(data: bytes, edits: list[tuple[int, int, int]]) -> bytes:
    """Apply (kind, position, byte) edits: 0 replaces, 1 inserts, 2 deletes."""
    out = bytearray(data)
    for kind, position, value in edits:
        index = position % (len(out) + 1)
        if kind == 0 and index < len(out):
            out[index] = value
        elif kind == 1:
            out.insert(index, value)
        elif kind == 2 and index < len(out):
            del out[index]
    return bytes(out)


EDITS = st.lists(
    st.tuples(st.integers(0, 2), st.integers(0, 200), st.integers(0, 255)),
    min_size=1,
    max_size=4,
)


@FUZZ
@given(st.binary(max_size=200))
def test_fuzz_client_first_random_bytes(token: bytes) -> None:
    server = alice_server()
    try:
        reply = server.step(token)
    except SaslAuthenticationError:
        assert not server.complete
    else:
        assert reply.startswith(b"r=")


@FUZZ
@given(st.binary(max_size=200))
def test_fuzz_client_final_random_bytes(token: bytes) -> None:
    server = rfc_server()
    server.step(RFC_CLIENT_FIRST)
    with pytest.raises(SaslAuthenticationError):
        server.step(token)
    assert not server.complete


@FUZZ
@given(EDITS)
def test_fuzz_mutated_client_first(edits: list[tuple[int, int, int]]) -> None:
    server = rfc_server()
    try:
        reply = server.step(mutate(RFC_CLIENT_FIRST, edits))
    except SaslAuthenticationError:
        return
    assert reply.startswith(b"r=")


@FUZZ
@given(EDITS)
def test_fuzz_mutated_client_final_never_authenticates(edits: list[tuple[int, int, int]]) -> None:
    token = mutate(RFC_CLIENT_FINAL, edits)
    server = rfc_server()
    server.step(RFC_CLIENT_FIRST)
    try:
        reply = server.step(token)
    except SaslAuthenticationError:
        assert not server.complete
        return
    # Only a different spelling of the same proof (base64 padding bits) may still succeed.
    assert token.rpartition(b",")[0] == RFC_CLIENT_FINAL.rpartition(b",")[0]
    assert base64.b64decode(token.rpartition(b",p=")[2]) == base64.b64decode(RFC_CLIENT_FINAL.rpartition(b",p=")[2])
    assert reply == RFC_SERVER_FINAL


SASLNAME_TEXT = st.text(st.characters(codec="utf-8", exclude_characters="\x00"), min_size=1)
NONCE_TEXT = st.text(st.characters(min_codepoint=0x21, max_codepoint=0x7E, exclude_characters=","), min_size=1)


@FUZZ
@given(SASLNAME_TEXT, NONCE_TEXT)
def test_fuzz_any_username_and_nonce_round_trip(username: str, nonce: str) -> None:
    saslname = username.replace("=", "=3D").replace(",", "=2C")
    seen: list[str] = []

    def lookup(name: str) -> ScramCredential | None:
        seen.append(name)
        return RFC_CREDENTIAL

    server = ScramServer(SHA256, lookup)
    reply = server.step(f"n,,n={saslname},r={nonce}".encode())
    assert seen == [username] and server.username == username
    assert reply.startswith(f"r={nonce}".encode())
