"""``ksteward configs``: Kafka's ``kafka-configs.sh`` (``kafka.admin.ConfigCommand``), same flags and output:
topic, broker and broker-logger configs (DescribeConfigs / IncrementalAlterConfigs), client quotas for users,
clients and ips (DescribeClientQuotas / AlterClientQuotas) and SCRAM credentials
(Describe/AlterUserScramCredentials), plus a lockout guard for SCRAM changes and ``--output json``.
Flags, formats, the JSON schema and what differs from Kafka's tool: docs/cli-topics-configs.md."""

from __future__ import annotations

import argparse
from typing import Any

from ksteward.cli import configs_backend as backend
from ksteward.cli.admin_common import (
    CommandError,
    Connection,
    UsageError,
    add_connection_flags,
    caller_username,
    confirm,
    connection,
    print_json,
    run_command,
    status,
)
from ksteward.cli.configs_entities import (
    BROKER_LOGGERS,
    BROKERS,
    CLIENT_METRICS,
    CLIENTS,
    DEFAULT_FLAGS,
    ENTITY_TYPES,
    GROUPS,
    IPS,
    NAMED_ONLY,
    SPECIFIC_FLAGS,
    TOPICS,
    USERS,
    Entities,
    EntityNameAction,
    check_keys,
    check_options,
    parse_add_config,
    parse_delete_config,
    resolve_entities,
    split_quota_changes,
)
from ksteward.configs.catalog import java_double_str
from ksteward.configs.properties import load_properties

EXAMPLES = """examples:
  ksteward configs --bootstrap-server localhost:9092 --describe --entity-type topics --entity-name orders
  ksteward configs --bootstrap-server localhost:9092 --describe --broker 1 --all
  ksteward configs --bootstrap-server localhost:9092 --alter --topic orders \\
      --add-config 'retention.ms=3600000,cleanup.policy=[compact,delete]'
  ksteward configs --bootstrap-server localhost:9092 --alter --topic orders --delete-config retention.ms --force
  ksteward configs --bootstrap-server localhost:9092 --alter --user alice --client app \\
      --add-config producer_byte_rate=1048576
  ksteward configs --bootstrap-server localhost:9092 --command-config admin.properties --alter --user bob \\
      --add-config 'SCRAM-SHA-256=[iterations=8192,password=bob-secret]'
  ksteward configs --bootstrap-controller localhost:9093 --describe --entity-type brokers --entity-default
  ksteward configs --bootstrap-server localhost:9092 --alter --group orders-app \
      --add-config consumer.session.timeout.ms=50000
  ksteward configs --bootstrap-server localhost:9092 --alter --client-metrics producers \
      --add-config 'metrics=[org.apache.kafka.producer.],interval.ms=60000,match=[client_software_name=.*java.*]'
The lockout guard refuses deleting or replacing the SCRAM credential of the user --command-config logs in as,
or of any --protect-principal User:NAME, unless --force is given.
"""


def add_parser(sub: Any) -> None:
    p = sub.add_parser("configs", help="describe or alter configs, quotas and SCRAM users (kafka-configs.sh)",
                       description="Add/remove entity config for a topic, client, user, ip, broker, broker "
                                   "logger, group or client-metrics subscription, as kafka-configs.sh does.",
                       epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    add_connection_flags(p, controller=True)
    p.add_argument("--describe", action="store_true", help="list configs for the given entity")
    p.add_argument("--alter", action="store_true", help="alter the configuration of the entity")
    p.add_argument("--all", action="store_true", help="with --describe: every config, not only dynamic ones")
    p.add_argument("--entity-type", action="append", choices=ENTITY_TYPES, help="the entity's type (repeatable)")
    p.add_argument("--entity-name", action=EntityNameAction, dest="entity_names", help="the entity's name")
    p.add_argument("--entity-default", action=EntityNameAction, dest="entity_names", nargs=0,
                   help="the default entity (users, clients, brokers, ips)")  # fmt: skip
    for dest, _ in SPECIFIC_FLAGS:
        p.add_argument(f"--{dest.replace('_', '-')}", dest=dest, help=f"shorthand: the {dest.replace('_', ' ')}")
    for dest, _ in DEFAULT_FLAGS:
        p.add_argument(f"--{dest.replace('_', '-')}", dest=dest, action="store_true", help="shorthand: the default")
    p.add_argument("--add-config", help="k1=v1,k2=[v1,v2,v2],k3=v3 (SCRAM-SHA-256=[iterations=N,password=P])")
    p.add_argument("--add-config-file", help="a properties file of configs to add")
    p.add_argument("--delete-config", action="append", default=[], help="k1,k2 to remove (repeatable)")
    p.add_argument("--protect-principal", action="append", default=[], metavar="User:NAME",
                   help="lockout guard: never delete or replace this user's SCRAM credential")  # fmt: skip
    p.add_argument("--force", action="store_true", help="override the lockout guard; no confirmation prompt")
    p.set_defaults(func=run, entity_names=None)


def run(args: argparse.Namespace) -> int:
    return run_command("configs", lambda: _run(args))


def _run(args: argparse.Namespace) -> int:
    action = check_options(args)
    entities = resolve_entities(args)
    conn = connection(args)
    protected_users(args, conn)  # a malformed --protect-principal is bad usage whatever the change
    if action == "describe":
        return _describe(args, conn, entities)
    return _alter(args, conn, entities)


# --- describe -------------------------------------------------------------------------------------------


def _dynamic_source(entity_type: str, name: str) -> str:
    if entity_type == TOPICS:
        return "DYNAMIC_TOPIC_CONFIG"
    if entity_type == BROKER_LOGGERS:
        return "DYNAMIC_BROKER_LOGGER_CONFIG"
    if entity_type == GROUPS:
        return "DYNAMIC_GROUP_CONFIG"
    if entity_type == CLIENT_METRICS:
        return "DYNAMIC_CLIENT_METRICS_CONFIG"
    return "DYNAMIC_DEFAULT_BROKER_CONFIG" if name == "" else "DYNAMIC_BROKER_CONFIG"


def _resource_entries(conn: Connection, entity_type: str, name: str, describe_all: bool) -> list[backend.Entry]:
    return _selected(entity_type, name, backend.describe_configs(conn, entity_type, name), describe_all)


def _selected(entity_type: str, name: str, entries: list[backend.Entry], describe_all: bool) -> list[backend.Entry]:
    """ConfigCommand.getResourceConfig: the entity's own dynamic entries (or all with --all), sorted by name."""
    if not describe_all:
        source = _dynamic_source(entity_type, name)
        entries = [e for e in entries if e.source == source]
    return sorted(entries, key=lambda e: e.name)


def _text(value: str | None) -> str:
    return "null" if value is None else value


def entry_line(e: backend.Entry) -> str:
    """``  name=value sensitive=false synonyms={SOURCE:name=value, ...}`` (a sensitive value prints null)."""
    synonyms = ", ".join(f"{s.source}:{s.name}={_text(None if e.sensitive else s.value)}" for s in e.synonyms)
    value = None if e.sensitive else e.value
    return f"  {e.name}={_text(value)} sensitive={str(e.sensitive).lower()} synonyms={{{synonyms}}}"


def header_line(entity_type: str, name: str, describe_all: bool) -> str:
    if entity_type == BROKERS and name == "":
        return f"Default configs for {entity_type} in the cluster are:"
    return f"{'All' if describe_all else 'Dynamic'} configs for {entity_type[:-1]} {name} are:"


def _describe(args: argparse.Namespace, conn: Connection, e: Entities) -> int:
    document: dict[str, Any] = {"action": "describe", "configs": [], "quotas": [], "scram_credentials": []}
    lines: list[str] = []
    if e.type in (TOPICS, BROKERS, BROKER_LOGGERS, *NAMED_ONLY):
        # a group or a subscription is configured whether or not it exists, so it is not looked up
        if e.name is not None and not args.all and e.type not in NAMED_ONLY and not _exists(conn, e.type, e.name):
            # ConfigCommand.describeResourceConfig: a missing entity has no dynamic config (exit 0)
            message = f"The {e.singular()} '{e.name}' doesn't exist and doesn't have dynamic config."
            if args.output == "json":
                print_json({**document, "missing": [{"entity_type": e.type, "entity_name": e.name}]})
            else:
                print(message)
            return 0
        if e.name is not None:
            names = [e.name]
        elif e.type == TOPICS:
            names = backend.topic_names(conn)
        else:
            names = [*backend.node_ids(conn), ""]
        with status(f"describing the configs of {len(names)} {e.type}"):
            described = backend.describe_many(conn, e.type, names)
        for name in names:
            entries = _selected(e.type, name, described[name], args.all)
            lines.append(header_line(e.type, name, args.all))
            lines += [entry_line(x) for x in entries]
            document["configs"].append({"entity_type": e.type, "entity_name": name,
                                        "configs": [_entry_json(x) for x in entries]})  # fmt: skip
    else:
        _describe_quotas_and_scram(conn, e, lines, document)
    if args.output == "json":
        print_json(document)
    else:
        for line in lines:
            print(line)
    return 0


def _exists(conn: Connection, entity_type: str, name: str) -> bool:
    if entity_type == TOPICS:
        return name in backend.topic_names(conn)
    return name == "" or name in backend.node_ids(conn)


def _entry_json(e: backend.Entry) -> dict[str, Any]:
    return {"name": e.name, "value": None if e.sensitive else e.value, "sensitive": e.sensitive, "source": e.source,
            "synonyms": [{"source": s.source, "name": s.name, "value": None if e.sensitive else s.value}
                         for s in e.synonyms]}  # fmt: skip


_ENTITY_WORDS = (("user", "user-principal"), ("client-id", "client-id"), ("ip", "ip"))


def quota_entity_text(entity: dict[str, str | None]) -> str:
    """``user-principal 'u', client-id 'c'``; a default is ``the default user-principal``."""
    parts = []
    for key, word in _ENTITY_WORDS:
        if key in entity:
            name = entity[key]
            parts.append(f"{word} '{name}'" if name is not None else f"the default {word}")
    return ", ".join(parts)


def quota_line(entity: dict[str, str | None], values: dict[str, float]) -> str:
    shown = ", ".join(f"{k}={java_double_str(v)}" for k, v in values.items())
    return f"Quota configs for {quota_entity_text(entity)} are {shown}"


def _describe_quotas_and_scram(conn: Connection, e: Entities, lines: list[str], document: dict[str, Any]) -> None:
    for entity, values in backend.describe_quotas(conn, e.types, e.names):
        lines.append(quota_line(entity, values))
        document["quotas"].append({"entity": entity, "values": values})
    # As ConfigCommand: SCRAM credentials only for users alone, and not for the default user.
    if CLIENTS in e.types or IPS in e.types or "" in e.names:
        return
    users = [n for n in e.names] or None
    for user, result in backend.describe_scram(conn, users).items():
        if isinstance(result, str):
            lines.append(f"Error retrieving SCRAM credential configs for user-principal '{user}': {result}")
            document["scram_credentials"].append({"user": user, "credentials": [], "error": result})
            continue
        text = ", ".join(f"{m}=iterations={i}" for m, i in result)
        lines.append(f"SCRAM credential configs for user-principal '{user}' are {text}")
        document["scram_credentials"].append({"user": user, "error": None, "credentials": [
            {"mechanism": m, "iterations": i} for m, i in result]})  # fmt: skip


# --- alter ----------------------------------------------------------------------------------------------


def _adds(args: argparse.Namespace) -> dict[str, str]:
    if args.add_config is not None:
        return parse_add_config(args.add_config)
    if args.add_config_file is not None:
        try:
            configs = load_properties(args.add_config_file)
        except OSError as exc:
            raise UsageError(f"cannot read --add-config-file {args.add_config_file}: {exc.strerror or exc}") from None
        check_keys(configs)
        return configs
    return {}


def _alter(args: argparse.Namespace, conn: Connection, e: Entities) -> int:
    adds, deletes = _adds(args), parse_delete_config(args.delete_config)
    name = e.name if e.name is not None else ""
    if e.type in (USERS, CLIENTS, IPS):
        changes = split_quota_changes(e, adds, deletes)
        if changes.quota_deletes:  # ConfigCommand.alterQuotaConfigs: only a key that is set can be deleted
            current = backend.describe_quotas(conn, e.types, e.names)
            present = set(current[0][1]) if current else set()
            invalid = [k for k in changes.quota_deletes if k not in present]
            if invalid:
                raise CommandError(f"Invalid config(s): {','.join(invalid)}")
        if changes.scram_upserts or changes.scram_deletes:
            _lockout_guard(args, conn, name, changes)
        _confirm_deletes(args, deletes, e)
        if changes.quota_sets or changes.quota_deletes:
            backend.alter_quotas(conn, e.types, e.names, changes.quota_sets, changes.quota_deletes)
        else:
            backend.alter_scram(conn, name, changes.scram_upserts, changes.scram_deletes)
    else:
        _check_deletable(conn, e.type, name, adds, deletes)
        _confirm_deletes(args, deletes, e)
        backend.incremental_alter(conn, e.type, name, adds, deletes)
    if args.output == "json":
        print_json({"action": "alter", "entity_type": e.types, "entity_name": e.names,
                    "set": list(adds), "deleted": deletes})  # fmt: skip
    elif name == "":
        print(f"Completed updating default config for {e.type} in the cluster.")
    else:
        print(f"Completed updating config for {e.singular()} {name}.")
    return 0


def _check_deletable(conn: Connection, entity_type: str, name: str, adds: dict[str, str], deletes: list[str]) -> None:
    """ConfigCommand's client-side checks: a deleted key must be set at this level; broker loggers must exist."""
    if entity_type == BROKER_LOGGERS:
        known = {x.name for x in backend.describe_configs(conn, entity_type, name, synonyms=False)}
        invalid = [k for k in [*deletes, *adds] if k not in known]
        if invalid:
            raise CommandError(f"Invalid broker logger(s): {','.join(invalid)}")
        return
    if deletes:
        present = {x.name for x in _resource_entries(conn, entity_type, name, describe_all=False)}
        invalid = [k for k in deletes if k not in present]
        if invalid:
            raise CommandError(f"Invalid config(s): {','.join(invalid)}")


def _confirm_deletes(args: argparse.Namespace, deletes: list[str], e: Entities) -> None:
    what = f"{e.singular()} {e.name}" if e.name else f"the default {e.type}"
    if deletes and not confirm(f"Delete {', '.join(deletes)} of {what}?", force=args.force):
        raise CommandError("not confirmed; nothing was changed")


def protected_users(args: argparse.Namespace, conn: Connection) -> dict[str, str]:
    """The users the lockout guard protects, each with why: the caller, and every --protect-principal."""
    protected: dict[str, str] = {}
    for principal in args.protect_principal:
        kind, sep, user = principal.partition(":")
        if kind != "User" or not sep or not user:
            raise UsageError(f"--protect-principal {principal}: expected User:NAME")
        protected[user] = "it is listed with --protect-principal"
    caller = caller_username(conn)
    if caller:
        protected[caller] = "it is the user --command-config logs in as"
    return protected


def _lockout_guard(args: argparse.Namespace, conn: Connection, user: str, changes: Any) -> None:
    """Refuse deleting or replacing a protected user's SCRAM credential (issue 15's lockout guard)."""
    why = protected_users(args, conn).get(user)
    if why is None or args.force:
        return
    existing = backend.describe_scram(conn, [user]).get(user)
    have = {m for m, _ in existing} if isinstance(existing, list) else set()
    replaced = [u.mechanism for u in changes.scram_upserts if u.mechanism in have]
    for verb, mechanisms in (("delete", changes.scram_deletes), ("replace", replaced)):
        if mechanisms:
            raise CommandError(f"refusing to {verb} the {', '.join(mechanisms)} credential of User:{user}: {why} "
                               "(lockout guard); give --force to do it anyway")  # fmt: skip
