"""The pure parts of ``ksteward configs``, as Kafka's ``kafka.admin.ConfigCommand`` has them: which entity the
flags name (generic ``--entity-type/--entity-name/--entity-default`` or the specific ``--topic``, ``--user``
... flags), the ``--add-config`` grammar (``k=v,k2=[a,b]``), SCRAM credential values, and the option rules
with Kafka's messages. No I/O here, and no secret in any message."""

from __future__ import annotations

import argparse
import ipaddress
import re
from dataclasses import dataclass
from typing import Any

from ksteward.cli.admin_common import UsageError

TOPICS, CLIENTS, USERS, BROKERS, BROKER_LOGGERS, IPS = "topics", "clients", "users", "brokers", "broker-loggers", "ips"
GROUPS, CLIENT_METRICS = "groups", "client-metrics"
ENTITY_TYPES = (TOPICS, CLIENTS, USERS, BROKERS, BROKER_LOGGERS, IPS, CLIENT_METRICS, GROUPS)
# The resource types configured by name only: no default entity, no listing here (that needs ListConfigResources).
NAMED_ONLY = (GROUPS, CLIENT_METRICS)
# ConfigCommandOptions' specific flags, in its order (entityFlags, then entityDefaultsFlags).
SPECIFIC_FLAGS = (("topic", TOPICS), ("client", CLIENTS), ("user", USERS), ("broker", BROKERS),
                  ("broker_logger", BROKER_LOGGERS), ("ip", IPS), ("client_metrics", CLIENT_METRICS),
                  ("group", GROUPS))  # fmt: skip
DEFAULT_FLAGS = (("client_defaults", CLIENTS), ("user_defaults", USERS), ("broker_defaults", BROKERS),
                 ("ip_defaults", IPS))  # fmt: skip
# QuotaConfig's client/user quota keys and the ip one; ScramMechanism's names.
CLIENT_QUOTA_KEYS = frozenset({"producer_byte_rate", "consumer_byte_rate", "request_percentage",
                               "controller_mutation_rate"})  # fmt: skip
IP_QUOTA_KEYS = frozenset({"connection_creation_rate"})
SCRAM_MECHANISMS = {"SCRAM-SHA-256": 1, "SCRAM-SHA-512": 2}
SCRAM_MIN_ITERATIONS, SCRAM_DEFAULT_ITERATIONS, SCRAM_MAX_ITERATIONS = 4096, 4096, 16384
ACTION_RULE = "Command must include exactly one action: --describe, --alter"


class EntityNameAction(argparse.Action):
    """``--entity-name X`` / ``--entity-default``: one list in command-line order, "" for a default
    (ConfigCommandOptions.entityNames)."""

    def __call__(
        self, parser: Any, namespace: argparse.Namespace, values: Any, option_string: str | None = None
    ) -> None:
        names = list(getattr(namespace, "entity_names", None) or [])
        names.append("" if values is None or values == [] else str(values))
        namespace.entity_names = names


@dataclass(frozen=True)
class Entities:
    """The entity types and names, paired by position (``--entity-type users --entity-name u --entity-type
    clients --entity-name c``); a name of "" is the default entity."""

    types: list[str]
    names: list[str]

    @property
    def type(self) -> str:
        return self.types[0]

    @property
    def name(self) -> str | None:
        return self.names[0] if self.names else None

    def singular(self) -> str:
        return self.type[:-1]  # Kafka drops the trailing "s": "broker-loggers" -> "broker-logger"


def resolve_entities(args: argparse.Namespace) -> Entities:
    """ConfigCommandOptions.checkArgs, entityTypes and entityNames, with Kafka's messages."""
    generic = bool(args.entity_type or args.entity_names)
    specific = [(t, getattr(args, d)) for d, t in SPECIFIC_FLAGS if getattr(args, d) is not None]
    specific += [(t, "") for d, t in DEFAULT_FLAGS if getattr(args, d)]
    if generic and specific:
        raise UsageError("--entity-{type,name,default} should not be used in conjunction with specific entity flags")
    types = list(args.entity_type or []) + [t for t, _ in specific]
    names = list(args.entity_names or []) + [n for _, n in specific]
    duplicates = list(dict.fromkeys(t for i, t in enumerate(types) if t in types[:i]))
    if duplicates:
        raise UsageError(f"Duplicate entity type(s) specified: {','.join(duplicates)}")
    for t in types:
        if t not in ENTITY_TYPES:
            raise UsageError(f"Invalid entity type {t}, the entity type must be one of {', '.join(ENTITY_TYPES)} "
                             "with a --bootstrap-server or --bootstrap-controller argument")  # fmt: skip
    if not types:
        raise UsageError("At least one entity type must be specified")
    if len(types) > 1 and set(types) != {USERS, CLIENTS}:
        raise UsageError(f"Only '{USERS}' and '{CLIENTS}' entity types may be specified together")
    entities = Entities(types, names)
    _check_names(args, entities)
    return entities


def _check_names(args: argparse.Namespace, e: Entities) -> None:
    has_name = any(n != "" for n in e.names)
    has_default = any(n == "" for n in e.names)
    if has_name and e.type in (BROKERS, BROKER_LOGGERS):
        for n in e.names:
            if not re.fullmatch(r"-?[0-9]+", n):
                raise UsageError(f"The entity name for {e.type} must be a valid integer broker id, but it is: {n}")
    if has_name and e.type == IPS:
        for n in e.names:
            if not _valid_ip_entity(n):
                raise UsageError(f"The entity name for {e.type} must be a valid IP or resolvable host, but it is: {n}")
    quota_like = {USERS, CLIENTS, BROKERS, IPS}
    if args.describe:
        if has_default and not set(e.types) & quota_like:
            raise UsageError(f"--entity-default must not be specified with --describe of {','.join(e.types)}")
        if e.type in (BROKER_LOGGERS, *NAMED_ONLY) and not has_name:
            raise UsageError(f"An entity name must be specified with --describe of {','.join(e.types)}")
    if args.alter:
        if set(e.types) & quota_like:
            if not has_name and not has_default:
                raise UsageError("An entity-name or default entity must be specified with --alter of users, "
                                 "clients, brokers or ips")  # fmt: skip
        elif not has_name:
            raise UsageError(f"An entity name must be specified with --alter of {','.join(e.types)}")
        if len(e.types) != len(e.names):
            raise UsageError("An entity name must be specified for every entity type")
        if has_default and e.type in (TOPICS, BROKER_LOGGERS, *NAMED_ONLY):
            raise UsageError(f"--entity-default is not allowed with --alter of {e.type}")


def _valid_ip_entity(name: str) -> bool:
    """An IP literal (Kafka also accepts a resolvable host name; ksteward does not resolve: see the docs)."""
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def check_options(args: argparse.Namespace) -> str:
    """The action and the alter-input rules (ConfigCommandOptions.checkArgs)."""
    if int(args.describe) + int(args.alter) != 1:
        raise UsageError(ACTION_RULE)
    if args.alter and args.all:
        raise UsageError('Option "[all]" can\'t be used with option "[alter]"')
    if args.describe:
        for flag in ("add_config", "add_config_file", "delete_config"):
            if getattr(args, flag):
                raise UsageError(f'Option "[describe]" can\'t be used with option "[{flag.replace("_", "-")}]"')
    if args.alter:
        if args.add_config is not None and args.add_config_file is not None:
            raise UsageError("Only one of --add-config or --add-config-file must be specified")
        if args.add_config is None and args.add_config_file is None and not args.delete_config:
            raise UsageError("At least one of --add-config, --add-config-file, or --delete-config must be specified "
                             "with --alter")  # fmt: skip
    return "describe" if args.describe else "alter"


# --- alter inputs ---------------------------------------------------------------------------------------

_OUTSIDE_BRACKETS = r"(?=[^\]]*(?:\[|$))"  # a separator not inside [...]
_KEY = re.compile(r"[$a-zA-Z0-9._-]*")  # '$' for loggers of inner classes (ConfigCommand.validatePropsKey)
FORMAT_RULE = ('Invalid entity config: all configs to be added must be in the format "key=val" or  "key=[val1,val2]" '
               "to group values which contain commas.")  # fmt: skip


def parse_add_config(text: str) -> dict[str, str]:
    """``--add-config 'k1=v1,k2=[a,b,c],k3='``: split on commas outside brackets, each pair on its first ``=``
    outside brackets; brackets are stripped from values; empty values are kept (ConfigCommand.parseConfigsToBeAdded)."""
    configs: dict[str, str] = {}
    for item in re.split("," + _OUTSIDE_BRACKETS, text):
        pair = re.split(r"\s*=\s*" + _OUTSIDE_BRACKETS, item, maxsplit=1)
        if len(pair) != 2 or re.search(r"\s*=\s*" + _OUTSIDE_BRACKETS, pair[1]):
            raise UsageError(FORMAT_RULE)
        configs[pair[0].strip()] = re.sub(r"[\[\]]", "", pair[1]).strip()
    check_keys(configs)
    return configs


def check_keys(configs: dict[str, str]) -> None:
    """ConfigCommand.validatePropsKey, for --add-config and --add-config-file alike."""
    for key in configs:
        if not _KEY.fullmatch(key):
            raise UsageError(f"Invalid character found for config key: {key}")


def parse_delete_config(items: list[str]) -> list[str]:
    """``--delete-config k1,k2`` (repeatable)."""
    return [k.strip() for item in items for k in item.split(",") if k.strip()]


@dataclass(frozen=True)
class ScramUpsert:
    mechanism: str
    iterations: int
    password: str

    def __repr__(self) -> str:  # never the password, even in a traceback
        return f"ScramUpsert({self.mechanism}, iterations={self.iterations})"


_CREDENTIAL = re.compile(r"(?:iterations=(-?[0-9]*),)?password=(.*)", re.DOTALL)


def parse_scram(mechanism: str, value: str) -> ScramUpsert:
    """``iterations=8192,password=secret`` (brackets already stripped) for ``mechanism``; the error names the
    mechanism, never the value (Kafka's own message quotes it, password and all)."""
    match = _CREDENTIAL.fullmatch(value)
    if match is None:
        raise UsageError(f"Invalid credential property {mechanism}: expected [iterations=N,]password=... "
                         "(the value is not shown)")  # fmt: skip
    raw = match.group(1)
    iterations = int(raw) if raw not in (None, "", "-1") else SCRAM_DEFAULT_ITERATIONS
    if iterations < SCRAM_MIN_ITERATIONS:
        raise UsageError(f"Iterations {iterations} is less than the minimum {SCRAM_MIN_ITERATIONS} required for "
                         f"{mechanism}")  # fmt: skip
    return ScramUpsert(mechanism, iterations, match.group(2))


@dataclass(frozen=True)
class UserChanges:
    """An alter of users/clients/ips split as ConfigCommand splits it: quota keys or SCRAM credentials."""

    quota_sets: dict[str, float]
    quota_deletes: list[str]
    scram_upserts: list[ScramUpsert]
    scram_deletes: list[str]


def split_quota_changes(e: Entities, adds: dict[str, str], deletes: list[str]) -> UserChanges:
    """ConfigCommand.alterConfig's users/clients/ips branch: which keys are allowed where, with its messages."""
    quota_keys = IP_QUOTA_KEYS if e.type == IPS else CLIENT_QUOTA_KEYS
    scram_adds = {k: v for k, v in adds.items() if k in SCRAM_MECHANISMS}
    scram_deletes = [k for k in deletes if k in SCRAM_MECHANISMS]
    unknown_adds = [k for k in adds if k not in quota_keys and k not in SCRAM_MECHANISMS]
    unknown_deletes = [k for k in deletes if k not in quota_keys and k not in SCRAM_MECHANISMS]
    if e.type == IPS:
        unknown = [k for k in [*adds, *deletes] if k not in quota_keys]
        if unknown:
            raise UsageError(f"Only connection quota configs can be added for '{IPS}' using --bootstrap-server. "
                             f"Unexpected config names: {', '.join(unknown)}")  # fmt: skip
    elif e.type == CLIENTS or len(e.types) == 2:
        if unknown_adds or scram_adds:
            raise UsageError(f"Only quota configs can be added for '{CLIENTS}' using --bootstrap-server. "
                             f"Unexpected config names: {','.join(unknown_adds + list(scram_adds))}")  # fmt: skip
        if unknown_deletes or scram_deletes:
            raise UsageError(f"Only quota configs can be deleted for '{CLIENTS}' using --bootstrap-server. "
                             f"Unexpected config names: {','.join(unknown_deletes + scram_deletes)}")  # fmt: skip
    else:
        if unknown_adds:
            raise UsageError(f"Only quota and SCRAM credential configs can be added for '{USERS}' using "
                             f"--bootstrap-server. Unexpected config names: {','.join(unknown_adds)}")  # fmt: skip
        if unknown_deletes:
            raise UsageError(f"Only quota and SCRAM credential configs can be deleted for '{USERS}' using "
                             f"--bootstrap-server. Unexpected config names: {','.join(unknown_deletes)}")  # fmt: skip
    quota_sets = {}
    for k, v in adds.items():
        if k in quota_keys:
            try:
                quota_sets[k] = float(v)
            except ValueError:
                raise UsageError(f"Cannot parse quota configuration value for {k}: {v}") from None
    quota_deletes = [k for k in deletes if k in quota_keys]
    if scram_adds or scram_deletes:
        if "" in e.names:
            raise UsageError("The use of --entity-default or --user-defaults is not allowed with User SCRAM "
                             "Credentials using --bootstrap-server.")  # fmt: skip
        if quota_sets or quota_deletes:
            raise UsageError(f"Cannot alter both quota and SCRAM credential configs simultaneously for '{USERS}' "
                             "using --bootstrap-server.")  # fmt: skip
    upserts = [parse_scram(k, v) for k, v in scram_adds.items()]
    return UserChanges(quota_sets, quota_deletes, upserts, scram_deletes)
