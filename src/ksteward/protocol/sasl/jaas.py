"""Kafka's ``sasl.jaas.config`` property: where a listener's value lives, and how to parse it.

    text = jaas_config_for(props, "SASL_PLAINTEXT", "PLAIN")
    entry = parse_server_jaas_config(text)
    users = plain_users(entry.options)        # {"admin": "admin-secret", "alice": "alice-secret"}

The grammar is Kafka's JaasConfig, which runs java.io.StreamTokenizer over
``<loginModuleClass> <controlFlag> (<optionName>=<optionValue>)*;`` with ``//`` and ``/* */`` comments.
This parser follows the tokenizer's rules, including the one that surprises people: an unquoted value
that starts with a digit, ``.`` or ``-`` is a *number* token, which Kafka rejects ("Value not specified
for key"). It is stricter in one place: an unterminated quoted string or comment is an error here,
where Java would quietly end the token at the end of the line or text.

Option values are often passwords, so no error message ever quotes a value, nor any token whose role
(key or value) is in doubt; messages give the line and column instead.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

__all__ = [
    "PLAIN_LOGIN_MODULE",
    "SCRAM_LOGIN_MODULE",
    "JaasEntry",
    "jaas_config_for",
    "parse_jaas_config",
    "parse_server_jaas_config",
    "plain_users",
]

PLAIN_LOGIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
SCRAM_LOGIN_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"

_CONTROL_FLAGS = frozenset({"required", "requisite", "sufficient", "optional"})
_PLAIN_USER_PREFIX = "user_"


@dataclass(frozen=True, repr=False)
class JaasEntry:
    """One login module entry. ``control_flag`` is lower case: required, requisite, sufficient, optional."""

    login_module: str
    control_flag: str
    options: dict[str, str] = field(default_factory=dict)

    def __repr__(self) -> str:
        # Values are commonly passwords (password=, user_NAME=): show the option names only.
        names = ", ".join(sorted(self.options))
        return (
            f"JaasEntry(login_module={self.login_module!r}, control_flag={self.control_flag!r}, "
            f"options=<values hidden: {names}>)"
        )

    __str__ = __repr__


def jaas_config_for(props: Mapping[str, str], listener: str, mechanism: str) -> str | None:
    """The JAAS text a broker uses for ``mechanism`` on ``listener``, or None if there is none.

    Kafka's broker reads only ``listener.name.<listener>.<mechanism>.sasl.jaas.config`` (both parts lower
    case). A bare ``sasl.jaas.config`` is *ignored* on the server (Kafka logs "should be prefixed with
    SASL mechanism name, ignoring config") and so is a listener-prefixed one without the mechanism;
    when the prefixed property is absent Kafka falls back to the static JAAS file
    (``java.security.auth.login.config``), not to another property.
    """
    return props.get(f"listener.name.{listener.lower()}.{mechanism.lower()}.sasl.jaas.config")


def plain_users(options: Mapping[str, str]) -> dict[str, str]:
    """``{name: password}`` from PlainLoginModule's ``user_NAME="password"`` options.

    Kafka's PlainServerCallbackHandler reads these only from entries whose login module is
    :data:`PLAIN_LOGIN_MODULE`; the caller picks the entry.
    """
    return {
        key[len(_PLAIN_USER_PREFIX) :]: value
        for key, value in options.items()
        if key.startswith(_PLAIN_USER_PREFIX) and len(key) > len(_PLAIN_USER_PREFIX)
    }


def parse_server_jaas_config(text: str) -> JaasEntry:
    """Parse a broker's JAAS property, which Kafka requires to hold exactly one login module."""
    entries = parse_jaas_config(text)
    if len(entries) != 1:
        raise ValueError(f"JAAS config property contains {len(entries)} login modules, should be 1 module")
    return entries[0]


def parse_jaas_config(text: str) -> list[JaasEntry]:
    """Parse ``<module> <flag> (<name>=<value>)*;`` entries; raises ValueError naming the problem."""
    tokens = _Tokenizer(text)
    entries: list[JaasEntry] = []
    token = tokens.next()
    while token.kind != "eof":
        entries.append(_parse_entry(token, tokens))
        token = tokens.next()
    if not entries:
        raise ValueError("Login module not specified in JAAS config")
    return entries


def _parse_entry(first: _Token, tokens: _Tokenizer) -> JaasEntry:
    if first.text is None:
        raise ValueError(f"Login module name expected at {first.where} in JAAS config")
    login_module = first.text

    flag = tokens.next()
    if flag.kind == "eof":
        raise ValueError("Login module control flag not specified in JAAS config")
    if flag.text is None:
        raise ValueError(f"Login module control flag is not available in the JAAS config at {flag.where}")
    control_flag = flag.text.lower()
    if control_flag not in _CONTROL_FLAGS:
        # An unquoted word here is almost always a forgotten flag followed by an option name; a quoted
        # string could be anything, so it is not repeated back.
        shown = f"'{flag.text}' " if flag.kind == "word" else ""
        raise ValueError(f"Invalid login module control flag {shown}at {flag.where} in JAAS config")

    options: dict[str, str] = {}
    token = tokens.next()
    while token.kind != "eof" and not token.is_symbol(";"):
        if token.text is None:
            raise ValueError(f"Option name expected at {token.where} in JAAS config")
        key = token.text
        equals = tokens.next()
        if not equals.is_symbol("="):
            # Not echoing the would-be key: after a mistake earlier in the line it may be part of a value.
            raise ValueError(f"Expected '=' after the option name at {token.where} in JAAS config")
        value = tokens.next()
        if value.kind == "eof" or value.text is None:
            hint = " (quote values that start with a digit, '.' or '-')" if value.kind == "number" else ""
            # A quoted "key" is more often a value whose key was forgotten: name only unquoted keys.
            name = f"'{key}'" if token.kind == "word" else f"at {token.where}"
            raise ValueError(f"Value not specified for key {name} in JAAS config{hint}")
        # Later duplicates win, as in Kafka's HashMap.
        options[key] = value.text
        token = tokens.next()
    if token.kind == "eof":
        raise ValueError("JAAS config entry not terminated by semi-colon")
    return JaasEntry(login_module=login_module, control_flag=control_flag, options=options)


_Kind = Literal["word", "quoted", "number", "symbol", "eof"]


@dataclass(frozen=True, repr=False)
class _Token:
    kind: _Kind
    # The string a word or quoted token carries (StreamTokenizer's sval); None for the other kinds.
    text: str | None
    line: int
    column: int
    symbol: str = ""

    @property
    def where(self) -> str:
        return f"line {self.line}, column {self.column}"

    def is_symbol(self, char: str) -> bool:
        return self.kind == "symbol" and self.symbol == char

    def __repr__(self) -> str:
        # Tokens hold option values; keep them out of debug output too.
        return f"_Token({self.kind}, {self.where})"


# java.io.StreamTokenizer's escapes inside quoted strings.
_ESCAPES = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v"}


def _is_word_start(ch: str) -> bool:
    # Default StreamTokenizer word characters (a-z, A-Z, U+00A0..U+00FF, and everything above U+00FF)
    # plus Kafka's additions '_' and '$'. '-' is a word character too, but, like '.' and the digits,
    # it starts a number.
    code = ord(ch)
    return (ch.isascii() and (ch.isalpha() or ch in "_$")) or code >= 0xA0


def _is_word_part(ch: str) -> bool:
    return _is_word_start(ch) or (ch.isascii() and (ch.isdigit() or ch in ".-"))


class _Tokenizer:
    """The subset of StreamTokenizer behaviour JaasConfig relies on, with line/column tracking."""

    def __init__(self, text: str) -> None:
        self._text = text
        self._pos = 0
        self._line = 1
        self._line_start = 0

    def _column(self, pos: int) -> int:
        return pos - self._line_start + 1

    def _peek(self, offset: int = 0) -> str:
        index = self._pos + offset
        return self._text[index] if index < len(self._text) else ""

    def _advance(self) -> str:
        ch = self._text[self._pos]
        self._pos += 1
        if ch == "\n" or (ch == "\r" and self._peek() != "\n"):
            self._line += 1
            self._line_start = self._pos
        return ch

    def _skip_blanks_and_comments(self) -> None:
        while self._pos < len(self._text):
            ch = self._peek()
            if ch <= " ":
                self._advance()
            elif ch == "/" and self._peek(1) == "*":
                line, column = self._line, self._column(self._pos)
                self._advance()
                self._advance()
                while not (self._peek() == "*" and self._peek(1) == "/"):
                    if self._pos >= len(self._text):
                        raise ValueError(f"Unterminated /* comment at line {line}, column {column} in JAAS config")
                    self._advance()
                self._advance()
                self._advance()
            elif ch == "/":
                # Both "//" and, as StreamTokenizer's default comment character, a lone "/" comment out
                # the rest of the line.
                while self._pos < len(self._text) and self._peek() not in "\r\n":
                    self._advance()
            else:
                return

    def next(self) -> _Token:
        self._skip_blanks_and_comments()
        line, column = self._line, self._column(self._pos)
        if self._pos >= len(self._text):
            return _Token("eof", None, line, column)
        ch = self._peek()
        if ch in "\"'":
            return _Token("quoted", self._quoted(ch, line, column), line, column)
        if ch.isascii() and (ch.isdigit() or ch == "." or (ch == "-" and self._starts_number(1))):
            self._number()
            return _Token("number", None, line, column)
        if _is_word_start(ch) or ch == "-":
            # '-' not followed by a digit: StreamTokenizer returns it as an ordinary character.
            if ch == "-":
                self._advance()
                return _Token("symbol", None, line, column, symbol="-")
            start = self._pos
            while self._pos < len(self._text) and _is_word_part(self._peek()):
                self._advance()
            return _Token("word", self._text[start : self._pos], line, column)
        self._advance()
        return _Token("symbol", None, line, column, symbol=ch)

    def _starts_number(self, offset: int) -> bool:
        nxt = self._peek(offset)
        return nxt == "." or (nxt.isascii() and nxt.isdigit())

    def _number(self) -> None:
        if self._peek() == "-":
            self._advance()
        seen_dot = False
        while True:
            ch = self._peek()
            if ch == "." and not seen_dot:
                seen_dot = True
            elif not (ch.isascii() and ch.isdigit()):
                return
            self._advance()

    def _quoted(self, quote: str, line: int, column: int) -> str:
        self._advance()
        out: list[str] = []
        while True:
            ch = self._peek()
            if ch in ("", "\n", "\r"):
                raise ValueError(f"Unterminated quoted string at line {line}, column {column} in JAAS config")
            self._advance()
            if ch == quote:
                return "".join(out)
            if ch != "\\":
                out.append(ch)
                continue
            ch = self._peek()
            if ch == "":
                raise ValueError(f"Unterminated quoted string at line {line}, column {column} in JAAS config")
            self._advance()
            if "0" <= ch <= "7":
                # Octal escape: up to three digits, the third only if the first is 0-3 (a byte).
                digits = ch
                max_len = 3 if ch <= "3" else 2
                while len(digits) < max_len and "0" <= self._peek() <= "7":
                    digits += self._advance()
                out.append(chr(int(digits, 8)))
            else:
                out.append(_ESCAPES.get(ch, ch))
