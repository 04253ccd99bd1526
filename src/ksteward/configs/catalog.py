"""Config definitions as Kafka's ``ConfigDef`` has them: types, defaults, validators, parsing.

A :class:`ConfigKey` is one defined config: its name, its ConfigDef type, its default as Kafka writes it
(``None`` when Kafka's default is null), its validator and its one-line documentation. The two catalogs
built from it are :mod:`.topic_catalog` (every topic config) and :mod:`.broker_catalog` (the dynamic
broker configs and the static ones DescribeConfigs reports)::

    >>> from ksteward.configs.topic_catalog import TOPIC_CONFIGS
    >>> key = TOPIC_CONFIGS["min.cleanable.dirty.ratio"]
    >>> key.canonical(" 1 ")              # parsed, then written back as Kafka writes a double
    '1.0'
    >>> key.check("2").message
    'Invalid value 2.0 for configuration min.cleanable.dirty.ratio: Value must be no more than 1'

Parsing follows ``ConfigDef.parseType``: strings are trimmed as Java's ``String.trim`` does, booleans are
case-insensitive, numbers parse as Java ints, shorts, longs and doubles, and a list splits on commas with
optional whitespace around them (an empty string is the empty list). Messages use Kafka's wording,
``Invalid value V for configuration K: rule``; a PASSWORD-typed key's value is never in them.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import Final, Protocol

from kio.schema.errors import ErrorCode

from ksteward.protocol.api_error import ApiError

__all__ = [
    "HIDDEN",
    "ConfigKey",
    "ConfigResourceType",
    "ConfigSource",
    "ConfigType",
    "Importance",
    "InvalidValue",
    "LambdaValidator",
    "NonEmptyString",
    "Range",
    "ThrottledReplicaList",
    "UpdateMode",
    "ValidList",
    "ValidString",
    "Validator",
    "java_double_str",
    "java_split",
]


HIDDEN: Final = "[hidden]"
"""What is shown instead of a secret value (Kafka's ``Password.HIDDEN``). Which values are secret is
decided in one place, :func:`ksteward.configs.sensitive.is_sensitive`."""


class ConfigResourceType(enum.IntEnum):
    """``ConfigResource.Type``: the int8 resource type of the config RPCs and of ConfigRecord."""

    UNKNOWN = 0
    TOPIC = 2
    BROKER = 4
    BROKER_LOGGER = 8
    CLIENT_METRICS = 16
    GROUP = 32

    @classmethod
    def from_code(cls, code: int) -> ConfigResourceType:
        """The member for ``code``; UNKNOWN for any id not in the table, as Kafka decodes it."""
        try:
            return cls(code)
        except ValueError:
            return cls.UNKNOWN


class ConfigSource(enum.IntEnum):
    """DescribeConfigs' ConfigSource. Wire names; ``DYNAMIC_TOPIC_CONFIG`` is the admin-client name of 1."""

    UNKNOWN = 0
    TOPIC_CONFIG = 1
    DYNAMIC_TOPIC_CONFIG = 1
    DYNAMIC_BROKER_CONFIG = 2
    DYNAMIC_DEFAULT_BROKER_CONFIG = 3
    STATIC_BROKER_CONFIG = 4
    DEFAULT_CONFIG = 5
    DYNAMIC_BROKER_LOGGER_CONFIG = 6
    CLIENT_METRICS_CONFIG = 7
    GROUP_CONFIG = 8


class ConfigType(enum.IntEnum):
    """ConfigDef's types, valued as DescribeConfigs v3+ ``ConfigType``; UNKNOWN for an undefined key."""

    UNKNOWN = 0
    BOOLEAN = 1
    STRING = 2
    INT = 3
    SHORT = 4
    LONG = 5
    DOUBLE = 6
    LIST = 7
    CLASS = 8
    PASSWORD = 9


class Importance(enum.Enum):
    HIGH = "high"
    MEDIUM = "medium"
    LOW = "low"


class UpdateMode(enum.Enum):
    """How a broker config may change, in the words of Kafka's broker config docs."""

    READ_ONLY = "read-only"  # server.properties only
    PER_BROKER = "per-broker"  # dynamic, only on BROKER "<id>"
    CLUSTER_WIDE = "cluster-wide"  # dynamic, on BROKER "<id>" or the cluster default BROKER ""


class InvalidValue(Exception):
    """Kafka's ``ConfigException(name, value, message)``: ``Invalid value V for configuration K: rule``.

    ``value`` is already rendered as Kafka renders it (``[hidden]`` for a secret)."""

    def __init__(self, name: str, value: str, rule: str | None) -> None:
        self.name, self.value, self.rule = name, value, rule
        super().__init__(f"Invalid value {value} for configuration {name}" + (f": {rule}" if rule else ""))

    @property
    def message(self) -> str:
        return str(self)


# Java's String.trim() removes every char <= ' ', not Unicode whitespace.
_JAVA_TRIM: Final = "".join(chr(c) for c in range(33))
_INTEGER = re.compile(r"[+-]?[0-9]+")
# Double.parseDouble's decimal grammar (hexadecimal floats are not accepted here).
_DOUBLE = re.compile(r"[+-]?(?:NaN|Infinity|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)[fFdD]?")
_LIST_SEPARATOR = re.compile(r"\s*,\s*")
_CLASS_NAME = re.compile(r"[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*")
_BOUNDS: Final = {
    ConfigType.INT: (-(2**31), 2**31 - 1),
    ConfigType.SHORT: (-(2**15), 2**15 - 1),
    ConfigType.LONG: (-(2**63), 2**63 - 1),
}


def java_int(text: str) -> int | None:
    """Java's ``Integer.parseInt`` (Scala's ``toInt``): an optional sign and ASCII digits within int32, no
    whitespace; None where Java throws NumberFormatException."""
    if _INTEGER.fullmatch(text) is None:
        return None
    value = int(text)
    low, high = _BOUNDS[ConfigType.INT]
    return value if low <= value <= high else None


def java_split(value: str, separator: str = ",") -> list[str]:
    """Java's ``String.split`` with a literal separator: trailing empty strings are dropped."""
    if separator not in value:
        return [value]  # "" gives [""], as in Java
    parts = value.split(separator)
    while parts and parts[-1] == "":
        parts.pop()
    return parts


def java_double_str(value: float) -> str:
    """Java's ``Double.toString``: ``0.5``, ``1.0``, ``1.0E7``, ``1.7976931348623157E308``, ``NaN``."""
    if value != value:
        return "NaN"
    if value in (float("inf"), float("-inf")):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "-0.0" if str(value).startswith("-") else "0.0"
    if 1e-3 <= abs(value) < 1e7:
        text = repr(value)
        return text if "." in text else text + ".0"
    _, digit_tuple, exponent = Decimal(repr(abs(value))).normalize().as_tuple()
    digits = "".join(map(str, digit_tuple))
    assert isinstance(exponent, int)
    sign = "-" if value < 0 else ""
    return f"{sign}{digits[0]}.{digits[1:] or '0'}E{len(digits) - 1 + exponent}"


def _java_str(value: object) -> str:
    """A parsed value as Java's ``toString`` prints it in a ConfigException."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return java_double_str(value)
    if isinstance(value, list):
        return "[" + ", ".join(map(str, value)) + "]"
    return str(value)


def _number_str(value: int | float) -> str:
    return java_double_str(value) if isinstance(value, float) else str(value)


class Validator(Protocol):
    """Kafka's ``ConfigDef.Validator``: checks a parsed value, and says what is valid in ``str()``."""

    def ensure_valid(self, name: str, value: object) -> None:
        """Raise :class:`InvalidValue` when ``value`` (already parsed) breaks the rule."""
        ...


@dataclass(frozen=True, slots=True)
class Range:
    """``ConfigDef.Range``: inclusive bounds on a number (``at_least`` or ``between``)."""

    min: int | float | None = None
    max: int | float | None = None

    @classmethod
    def at_least(cls, minimum: int | float) -> Range:
        return cls(minimum, None)

    @classmethod
    def between(cls, minimum: int | float, maximum: int | float) -> Range:
        return cls(minimum, maximum)

    def ensure_valid(self, name: str, value: object) -> None:
        assert isinstance(value, int | float)
        if self.min is not None and value < self.min:
            raise InvalidValue(name, _java_str(value), f"Value must be at least {_number_str(self.min)}")
        if self.max is not None and value > self.max:
            raise InvalidValue(name, _java_str(value), f"Value must be no more than {_number_str(self.max)}")

    def __str__(self) -> str:
        low = "" if self.min is None else _number_str(self.min)
        high = "" if self.max is None else _number_str(self.max)
        if self.max is None:
            return f"[{low},...]" if low else "[...]"
        return f"[{low},...,{high}]" if low else f"[...,{high}]"


@dataclass(frozen=True, slots=True)
class ValidString:
    """``ConfigDef.ValidString``: one of a set of strings, case-sensitive."""

    valid: tuple[str, ...]

    def ensure_valid(self, name: str, value: object) -> None:
        if value not in self.valid:
            raise InvalidValue(name, _java_str(value), "String must be one of: " + ", ".join(self.valid))

    def __str__(self) -> str:
        return "[" + ", ".join(self.valid) + "]"


@dataclass(frozen=True, slots=True)
class ValidList:
    """``ConfigDef.ValidList``: every item of a list is one of a set of strings (the empty list passes)."""

    valid: tuple[str, ...]

    def ensure_valid(self, name: str, value: object) -> None:
        assert isinstance(value, list)
        for item in value:
            ValidString(self.valid).ensure_valid(name, item)

    def __str__(self) -> str:
        return str(ValidString(self.valid))


@dataclass(frozen=True, slots=True)
class NonEmptyString:
    """``ConfigDef.NonEmptyString``: the trimmed string is not empty."""

    def ensure_valid(self, name: str, value: object) -> None:
        if value == "":
            raise InvalidValue(name, "", "String must be non-empty")

    def __str__(self) -> str:
        return "non-empty string"


@dataclass(frozen=True, slots=True)
class ThrottledReplicaList:
    """Kafka's ``ThrottledReplicaListValidator``: the literal ``*``, or items ``partitionId:brokerId``."""

    _ITEM = re.compile(r"(?:[0-9]+:[0-9]+)?")

    def ensure_valid(self, name: str, value: object) -> None:
        assert isinstance(value, list)
        items = [str(item).strip() for item in value]
        if not (all(self._ITEM.fullmatch(item) for item in items) or "".join(items) == "*"):
            raise InvalidValue(
                name,
                _java_str(value),
                f"{name} must be the literal '*' or a list of replicas in the following format: "
                "[partitionId]:[brokerId],[partitionId]:[brokerId],...",
            )

    def __str__(self) -> str:
        return "[partitionId]:[brokerId],[partitionId]:[brokerId],..."


@dataclass(frozen=True, slots=True)
class LambdaValidator:
    """``ConfigDef.LambdaValidator``: a custom rule. ``rule`` returns the failure text, or None when valid."""

    rule: Callable[[object], str | None]
    description: str

    def ensure_valid(self, name: str, value: object) -> None:
        failure = self.rule(value)
        if failure is not None:
            raise InvalidValue(name, _java_str(value), failure)

    def __str__(self) -> str:
        return self.description


@dataclass(frozen=True, slots=True)
class ConfigKey:
    """One defined config, as a ``ConfigDef.ConfigKey``.

    ``default`` is the default as Kafka writes it (``ConfigDef.convertToString``); ``None`` when the
    default is null. ``update_mode`` is for broker configs (None on topic configs, which are all
    alterable). ``synonyms`` lists, for a topic config, its broker configs in priority order
    (``ServerTopicConfigSynonyms``)."""

    name: str
    type: ConfigType
    default: str | None
    validator: Validator | None = None
    importance: Importance = Importance.MEDIUM
    doc: str = ""
    update_mode: UpdateMode | None = None
    synonyms: tuple[str, ...] = ()

    @property
    def is_list(self) -> bool:
        return self.type is ConfigType.LIST

    @property
    def is_sensitive(self) -> bool:
        return self.type is ConfigType.PASSWORD

    @property
    def is_dynamic(self) -> bool:
        """A broker config that DescribeConfigs reports as not read-only and AlterConfigs accepts."""
        return self.update_mode is not None and self.update_mode is not UpdateMode.READ_ONLY

    def parse(self, raw: str) -> object:
        """``ConfigDef.parseType`` then the validator; raises :class:`InvalidValue`."""
        value = self._parse_type(raw)
        if self.validator is not None:
            try:
                self.validator.ensure_valid(self.name, value)
            except InvalidValue as e:
                if self.is_sensitive:
                    raise InvalidValue(self.name, HIDDEN, e.rule) from None
                raise
        return value

    def check(self, raw: str) -> ApiError | None:
        """None when ``raw`` is a valid value, else INVALID_CONFIG with Kafka's message."""
        try:
            self.parse(raw)
        except InvalidValue as e:
            return ApiError(ErrorCode.invalid_config, e.message)
        return None

    def canonical(self, raw: str) -> str:
        """``raw`` as Kafka reports a parsed value (``" TRUE "`` -> ``true``, ``"a , b"`` -> ``a,b``).
        A value that does not parse is returned unchanged."""
        try:
            return self.to_string(self._parse_type(raw))
        except InvalidValue:
            return raw

    def to_string(self, value: object) -> str:
        """``ConfigDef.convertToString`` of a parsed value of this key's type."""
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, float):
            return java_double_str(value)
        if isinstance(value, list):
            return ",".join(map(str, value))
        return str(value)

    def _parse_type(self, raw: str) -> object:
        shown = HIDDEN if self.is_sensitive else raw
        trimmed = raw.strip(_JAVA_TRIM)
        t = self.type
        if t is ConfigType.BOOLEAN:
            if trimmed.lower() not in ("true", "false"):
                raise InvalidValue(self.name, shown, "Expected value to be either true or false")
            return trimmed.lower() == "true"
        if t in _BOUNDS:
            low, high = _BOUNDS[t]
            if not _INTEGER.fullmatch(trimmed) or not low <= int(trimmed) <= high:
                raise InvalidValue(self.name, shown, f"Not a number of type {t.name}")
            return int(trimmed)
        if t is ConfigType.DOUBLE:
            if not _DOUBLE.fullmatch(trimmed):
                raise InvalidValue(self.name, shown, f"Not a number of type {t.name}")
            return float(trimmed.rstrip("fFdD").replace("Infinity", "inf"))
        if t is ConfigType.LIST:
            return _LIST_SEPARATOR.split(trimmed) if trimmed else []
        if t is ConfigType.CLASS and not _CLASS_NAME.fullmatch(trimmed):
            # Kafka loads the class; ksteward can only tell that the name cannot be a class name.
            raise InvalidValue(self.name, shown, f"Class {shown} could not be found.")
        return trimmed  # STRING, PASSWORD, CLASS
