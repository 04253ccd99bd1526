"""JAAS config parsing (Kafka's JaasConfig grammar) and the broker's property lookup."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ksteward.protocol.sasl import (
    PLAIN_LOGIN_MODULE,
    SCRAM_LOGIN_MODULE,
    JaasEntry,
    jaas_config_for,
    parse_jaas_config,
    parse_server_jaas_config,
    plain_users,
)

BRIEF_EXAMPLE = (
    "org.apache.kafka.common.security.plain.PlainLoginModule required "
    'username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";'
)
SECRET = "s3cr3t-Value"


def test_kafka_documentation_example() -> None:
    entry = parse_server_jaas_config(BRIEF_EXAMPLE)
    assert entry == JaasEntry(
        login_module=PLAIN_LOGIN_MODULE,
        control_flag="required",
        options={
            "username": "admin",
            "password": "admin-secret",
            "user_admin": "admin-secret",
            "user_alice": "alice-secret",
        },
    )
    assert plain_users(entry.options) == {"admin": "admin-secret", "alice": "alice-secret"}


def test_multiple_entries_whitespace_newlines_and_comments() -> None:
    text = f"""
        // the PLAIN users
        {PLAIN_LOGIN_MODULE}   REQUIRED
            user_bob = "b"   /* inline
                                 comment */
            user_carol="c" ;
        {SCRAM_LOGIN_MODULE} optional
        ;
        com.example.Module Sufficient key=value
        ;
    """
    entries = parse_jaas_config(text)
    assert [(e.login_module, e.control_flag) for e in entries] == [
        (PLAIN_LOGIN_MODULE, "required"),
        (SCRAM_LOGIN_MODULE, "optional"),
        ("com.example.Module", "sufficient"),
    ]
    assert entries[0].options == {"user_bob": "b", "user_carol": "c"}
    assert entries[1].options == {}
    assert entries[2].options == {"key": "value"}


def test_quoting_and_escapes() -> None:
    text = (
        r'M requisite a="say \"hi\"" b='
        "'single \"quoted\"'"
        r' c="back\\slash" d="tab\tnew\nline" e="oct\101\0" f="unknown\q" g="" h=with-dash_and.dots$;'
    )
    (entry,) = parse_jaas_config(text)
    assert entry.control_flag == "requisite"
    assert entry.options == {
        "a": 'say "hi"',
        "b": 'single "quoted"',
        "c": "back\\slash",
        "d": "tab\tnew\nline",
        "e": "octA\0",
        "f": "unknownq",
        "g": "",
        "h": "with-dash_and.dots$",
    }


def test_later_duplicate_option_wins() -> None:
    (entry,) = parse_jaas_config('M required k="1" k="2";')
    assert entry.options == {"k": "2"}


def test_plain_users_ignores_other_options_and_empty_names() -> None:
    assert plain_users({"user_": "x", "username": "admin", "user_a_b": "y", "users_c": "z"}) == {"a_b": "y"}


def test_entry_repr_hides_option_values() -> None:
    entry = parse_server_jaas_config(BRIEF_EXAMPLE)
    text = repr(entry) + str(entry)
    assert "admin-secret" not in text and "alice-secret" not in text
    assert "user_alice" in text and PLAIN_LOGIN_MODULE in text


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "Login module not specified in JAAS config"),
        ("  // only a comment\n", "Login module not specified in JAAS config"),
        ("M", "Login module control flag not specified in JAAS config"),
        ("M required", "JAAS config entry not terminated by semi-colon"),
        ('M required k="v"', "JAAS config entry not terminated by semi-colon"),
        ("M mandatory;", "Invalid login module control flag 'mandatory' at line 1, column 3"),
        ("M 42;", "Login module control flag is not available in the JAAS config at line 1, column 3"),
        ("; M required;", "Login module name expected at line 1, column 1"),
        ("M required k=;", "Value not specified for key 'k' in JAAS config"),
        ("M required k=", "Value not specified for key 'k' in JAAS config"),
        ("M required iterations=4096;", "Value not specified for key 'iterations' in JAAS config (quote values"),
        ('M required "k"=;', "Value not specified for key at line 1, column 12 in JAAS config"),
        ("M required k v;", "Expected '=' after the option name at line 1, column 12"),
        ("M required\n  =v;", "Option name expected at line 2, column 3"),
        ('M required k="v;\n', "Unterminated quoted string at line 1, column 14"),
        ("M required /* k=v;", "Unterminated /* comment at line 1, column 12"),
    ],
)
def test_errors_name_the_problem(text: str, message: str) -> None:
    with pytest.raises(ValueError) as info:
        parse_jaas_config(text)
    assert str(info.value).startswith(message)


@pytest.mark.parametrize(
    "text",
    [
        f'M required password="{SECRET}"',  # no semicolon
        f'M required password="{SECRET};',  # unterminated quote
        f'M required password="{SECRET}\n";',  # quote broken by a newline
        f"M required password=admin {SECRET};",  # unquoted value with a space: the tail looks like a key
        f'M required username="admin" "{SECRET}";',  # forgotten key
        f'M required username="admin" "{SECRET}" = ;',
        f'M "{SECRET}" password="x";',  # forgotten control flag, quoted
        f'M required password = "x" {SECRET}',
        f"M required password=9{SECRET};",
    ],
)
def test_errors_never_quote_secrets(text: str) -> None:
    with pytest.raises(ValueError) as info:
        parse_jaas_config(text)
    assert SECRET not in str(info.value)
    assert SECRET not in repr(info.value)


def test_server_config_must_have_exactly_one_module() -> None:
    with pytest.raises(ValueError, match="contains 2 login modules, should be 1 module"):
        parse_server_jaas_config("A required; B required;")


def test_jaas_config_for_uses_kafkas_listener_and_mechanism_prefix() -> None:
    props = {
        "listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config": "scram",
        "listener.name.sasl_ssl.plain.sasl.jaas.config": "plain",
        "listener.name.internal.sasl.jaas.config": "listener without mechanism",
        "sasl.jaas.config": "bare",
    }
    assert jaas_config_for(props, "SASL_SSL", "SCRAM-SHA-256") == "scram"
    assert jaas_config_for(props, "sasl_ssl", "PLAIN") == "plain"
    # Kafka's broker ignores both of these (with a warning): no fallback to them.
    assert jaas_config_for(props, "INTERNAL", "PLAIN") is None
    assert jaas_config_for(props, "SASL_SSL", "SCRAM-SHA-512") is None


KEYS = st.from_regex(r"[A-Za-z_$][A-Za-z0-9_$.\-]{0,10}", fullmatch=True)
VALUES = st.text(st.characters(codec="utf-8"), max_size=20)


def quote(value: str) -> str:
    escaped = value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\r", "\\r")
    return f'"{escaped}"'


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(KEYS, VALUES, max_size=6), st.sampled_from(["required", "Optional", "SUFFICIENT"]))
def test_fuzz_rendered_options_parse_back(options: dict[str, str], flag: str) -> None:
    rendered = " \n".join(f"{key}={quote(value)}" for key, value in options.items())
    (entry,) = parse_jaas_config(f"{PLAIN_LOGIN_MODULE} {flag}\n{rendered};")
    assert entry.control_flag == flag.lower()
    assert entry.options == options


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=80))
def test_fuzz_arbitrary_text_raises_only_value_error(text: str) -> None:
    try:
        entries = parse_jaas_config(text)
    except ValueError:
        return
    assert entries and all(entry.login_module for entry in entries)
