"""``ksteward acls`` flags: Kafka's ``AclCommand`` checks and its expansion of flags into ACLs, as pure functions.

Everything here follows ``org.apache.kafka.tools.AclCommand`` (Kafka 4.x; docs/cli-acls.md writes the rules
out): ``check_args`` is its ``AclCommandOptions.checkArgs`` (same messages), :func:`resource_filters` its
``getResourceFilter``, :func:`filter_to_entries` its ``getResourceFilterToAcls`` (the ``--producer`` /
``--consumer`` / ``--idempotent`` shortcuts included) and :func:`resource_to_entries` its ``getResourceToAcls``
for ``--add``. Where Kafka iterates a Java ``HashSet`` (no stable order), ksteward keeps the order of the flags.
"""

from __future__ import annotations

import argparse
from typing import NamedTuple

from ksteward.authorizer import (
    CLUSTER_NAME,
    SUPPORTED_OPERATIONS,
    WILDCARD_HOST,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)
from ksteward.cli.admin_common import UsageError

ACTIONS = ("add", "remove", "list")
ANSWERS = ("who_can", "explain")


class Pattern(NamedTuple):
    """Kafka's ``ResourcePattern`` (specific pattern type) or ``ResourcePatternFilter`` (any pattern type)."""

    resource_type: ResourceType
    name: str
    pattern_type: PatternType

    def as_pattern(self) -> str:
        return f"ResourcePattern(resourceType={self.resource_type.name}, name={self.name}, " \
               f"patternType={self.pattern_type.name})"  # fmt: skip

    def as_filter(self) -> str:
        return f"ResourcePatternFilter(resourceType={self.resource_type.name}, name={self.name}, " \
               f"patternType={self.pattern_type.name})"  # fmt: skip


class Entry(NamedTuple):
    """Kafka's ``AccessControlEntry``; ``str()`` is its ``toString``."""

    principal: str
    host: str
    operation: AclOperation
    permission_type: AclPermissionType

    def __str__(self) -> str:
        return f"(principal={self.principal}, host={self.host}, operation={self.operation.name}, " \
               f"permissionType={self.permission_type.name})"  # fmt: skip


CLUSTER_PATTERN = Pattern(ResourceType.CLUSTER, CLUSTER_NAME, PatternType.LITERAL)
Expansion = dict[Pattern, list[Entry]]


def binding(pattern: Pattern, entry: Entry) -> AclBinding:
    return AclBinding(pattern.resource_type, pattern.name, pattern.pattern_type, *entry)


def split(acl: AclBinding) -> tuple[Pattern, Entry]:
    return (Pattern(acl.resource_type, acl.resource_name, acl.pattern_type),
            Entry(acl.principal, acl.host, acl.operation, acl.permission_type))  # fmt: skip


def entry_filter(pattern: Pattern, entry: Entry | None) -> AclBindingFilter:
    """Kafka's ``new AclBindingFilter(filter, acl == null ? AccessControlEntryFilter.ANY : acl.toFilter())``."""
    if entry is None:
        return AclBindingFilter(pattern.resource_type, pattern.name, pattern.pattern_type)
    return AclBindingFilter(pattern.resource_type, pattern.name, pattern.pattern_type, *entry)


# --- flag values ------------------------------------------------------------------------------------


def parse_pattern_type(value: str) -> PatternType:
    """AclCommand's ``PatternTypeConverter``: a case-insensitive enum name, never UNKNOWN."""
    member = PatternType.__members__.get(value.strip().upper())
    if member is None or member is PatternType.UNKNOWN:
        raise argparse.ArgumentTypeError(f"Unknown resource-pattern-type: {value}")
    return member


def parse_operation(name: str) -> AclOperation:
    """Kafka's ``SecurityUtils.operation``: ``Read``, ``IdempotentWrite``, or those upper-cased; else UNKNOWN
    (which ``validate_operations`` then refuses, as Kafka does)."""
    operation = AclOperation.from_display_name(name)
    return operation if not operation.is_unknown else AclOperation.from_display_name(name.upper())


def parse_principal(text: str) -> str:
    """Kafka's ``SecurityUtils.parseKafkaPrincipal`` (then ``toString``): ``Type:name``, split at the first colon."""
    kind, colon, name = text.partition(":")
    if not text or not colon:
        raise UsageError(f"expected a string in format principalType:principalName but got {text}")
    return f"{kind}:{name}"


# --- AclCommandOptions.checkArgs -------------------------------------------------------------------


def _has(args: argparse.Namespace, name: str) -> bool:
    value = getattr(args, name, None)
    return bool(value) if not isinstance(value, list) else len(value) > 0


def _invalid_with(args: argparse.Namespace, used: str, *others: str) -> None:
    """CommandLineUtils.checkInvalidArgs, with its message (joptsimple names an option ``[name]``)."""
    if _has(args, used):
        for other in others:
            if _has(args, other):
                raise UsageError(f'Option "[{_flag(used)}]" can\'t be used with option "[{_flag(other)}]"')


def _flag(dest: str) -> str:
    return dest.replace("_", "-")


def check_args(args: argparse.Namespace) -> str:
    """Kafka's checks, in Kafka's order and words; returns the action (``add``, ``remove``, ``list``,
    ``who_can``, ``explain``). ksteward's answers count as actions too."""
    actions = [a for a in (*ACTIONS, *ANSWERS) if getattr(args, a)]
    if len(actions) != 1:
        raise UsageError("Command must include exactly one action: --list, --add, --remove. "
                         "(ksteward also has --who-can and --explain)")  # fmt: skip
    action = actions[0]
    _invalid_with(args, "list", "producer", "consumer", "allow_host", "allow_principal", "deny_host", "deny_principal")
    _invalid_with(args, "producer", "operation", "deny_principal", "deny_host")
    _invalid_with(args, "consumer", "operation", "deny_principal", "deny_host")
    if _has(args, "principal") and action not in ("list", "explain"):
        raise UsageError("The --principal option is only available if --list is set")
    if args.producer and not args.topic:
        raise UsageError("With --producer you must specify a --topic")
    if args.idempotent and not args.producer:
        raise UsageError("The --idempotent option is only available if --producer is set")
    if args.consumer and (not args.topic or not args.group
                          or (not args.producer and (args.cluster or args.transactional_id))):  # fmt: skip
        raise UsageError("With --consumer you must specify a --topic and a --group and no --cluster or "
                         "--transactional-id option should be specified.")  # fmt: skip
    if args.dry_run and action not in ("add", "remove"):
        raise UsageError("--dry-run is only available with --add or --remove")
    if args.host and action != "explain":
        raise UsageError("--host is only available with --explain")
    if args.audit_dir and not args.dry_run:
        raise UsageError("--audit-dir is only available with --dry-run")
    if action in ANSWERS:
        _check_answer_args(args, action)
    return action


def _check_answer_args(args: argparse.Namespace, action: str) -> None:
    flag = "--who-can" if action == "who_can" else "--explain"
    _invalid_with(args, action, "allow_principal", "deny_principal", "allow_host", "deny_host", "producer", "consumer")
    if len(args.operation or []) != 1:
        raise UsageError(f"{flag} needs exactly one --operation")
    if args.resource_pattern_type is not PatternType.LITERAL:
        raise UsageError(f"{flag} answers for one resource: --resource-pattern-type must be literal")
    if len(resource_filters(args, die_if_none=True)) != 1:
        raise UsageError(f"{flag} answers for one resource: give exactly one of --topic, --group, --cluster, "
                         "--transactional-id, --delegation-token, --user-principal")  # fmt: skip
    if action == "explain" and len(args.principal or []) != 1:
        raise UsageError("--explain needs exactly one --principal (e.g. User:alice)")


# --- the expansion ---------------------------------------------------------------------------------


def resource_filters(args: argparse.Namespace, *, die_if_none: bool) -> list[Pattern]:
    """AclCommand's ``getResourceFilter``: every resource flag with ``--resource-pattern-type``; the cluster only
    when the pattern type is LITERAL (``--cluster`` or ``--idempotent``). Names are trimmed, except transactional
    ids (as Kafka)."""
    pattern_type: PatternType = args.resource_pattern_type
    found: list[Pattern] = [Pattern(ResourceType.TOPIC, t.strip(), pattern_type) for t in args.topic or []]
    if pattern_type is PatternType.LITERAL and (args.cluster or args.idempotent):
        found.append(CLUSTER_PATTERN)
    found += [Pattern(ResourceType.GROUP, g.strip(), pattern_type) for g in args.group or []]
    found += [Pattern(ResourceType.TRANSACTIONAL_ID, t, pattern_type) for t in args.transactional_id or []]
    found += [Pattern(ResourceType.DELEGATION_TOKEN, t.strip(), pattern_type) for t in args.delegation_token or []]
    found += [Pattern(ResourceType.USER, u.strip(), pattern_type) for u in args.user_principal or []]
    if not found and die_if_none:
        raise UsageError("You must provide at least one resource: --topic <topic> or --cluster or --group <group> "
                         "or --delegation-token <Delegation Token ID>")  # fmt: skip
    return list(dict.fromkeys(found))


def _hosts(args: argparse.Namespace, hosts: str, principals: str) -> list[str]:
    """AclCommand's ``getHosts``: the given hosts, trimmed; ``*`` when only principals are given."""
    if getattr(args, hosts):
        return list(dict.fromkeys(h.strip() for h in getattr(args, hosts)))
    return [WILDCARD_HOST] if getattr(args, principals) else []


def entries(args: argparse.Namespace, operations: list[AclOperation]) -> list[Entry]:
    """AclCommand's ``getAcl``: every (principal, operation, host) for the ALLOW flags, then the DENY flags."""
    out: list[Entry] = []
    for permission, principals, hosts in ((AclPermissionType.ALLOW, "allow_principal", "allow_host"),
                                          (AclPermissionType.DENY, "deny_principal", "deny_host")):  # fmt: skip
        names = list(dict.fromkeys(parse_principal(p.strip()) for p in getattr(args, principals) or []))
        for principal in names:
            for operation in operations:
                out += [Entry(principal, host, operation, permission) for host in _hosts(args, hosts, principals)]
    return list(dict.fromkeys(out))


def cli_operations(args: argparse.Namespace) -> list[AclOperation]:
    """``--operation`` values (default ``All``), read as ``SecurityUtils.operation`` reads them."""
    return list(dict.fromkeys(parse_operation(o.strip()) for o in (args.operation or ["All"])))


def filter_to_entries(args: argparse.Namespace) -> Expansion:
    """AclCommand's ``getResourceFilterToAcls``: the flags as resource filters, each with its entries."""
    result: Expansion = {}
    if not args.producer and not args.consumer:
        acls = entries(args, cli_operations(args))
        result.update({pattern: list(acls) for pattern in resource_filters(args, die_if_none=True)})
    if args.producer:
        result.update(_producer(args))
    if args.consumer:
        for pattern, acls in _consumer(args).items():
            result[pattern] = list(dict.fromkeys([*result.get(pattern, []), *acls]))
    validate_operations(result)
    return result


def _producer(args: argparse.Namespace) -> Expansion:
    """WRITE, DESCRIBE, CREATE on the topics; WRITE, DESCRIBE on the transactional ids; with ``--idempotent``
    IDEMPOTENT_WRITE on the cluster (AclCommand's ``getProducerResourceFilterToAcls``)."""
    op = AclOperation
    found = resource_filters(args, die_if_none=True)
    result: Expansion = {}
    for pattern in found:
        if pattern.resource_type is ResourceType.TOPIC:
            result[pattern] = entries(args, [op.WRITE, op.DESCRIBE, op.CREATE])
        elif pattern.resource_type is ResourceType.TRANSACTIONAL_ID:
            result[pattern] = entries(args, [op.WRITE, op.DESCRIBE])
    if args.idempotent:
        result[CLUSTER_PATTERN] = entries(args, [op.IDEMPOTENT_WRITE])
    return result


def _consumer(args: argparse.Namespace) -> Expansion:
    """READ, DESCRIBE on the topics; READ on the groups (AclCommand's ``getConsumerResourceFilterToAcls``)."""
    result: Expansion = {}
    for pattern in resource_filters(args, die_if_none=True):
        if pattern.resource_type is ResourceType.TOPIC:
            result[pattern] = entries(args, [AclOperation.READ, AclOperation.DESCRIBE])
        elif pattern.resource_type is ResourceType.GROUP:
            result[pattern] = entries(args, [AclOperation.READ])
    return result


def validate_operations(expansion: Expansion) -> None:
    """AclCommand's ``validateOperation``: each resource type takes its supported operations and ALL."""
    for pattern, acls in expansion.items():
        valid = [AclOperation.ALL, *SUPPORTED_OPERATIONS.get(pattern.resource_type, ())]
        if any(acl.operation not in valid for acl in acls):
            names = ", ".join(o.name for o in sorted(valid))
            raise UsageError(f"ResourceType {pattern.resource_type.name} only supports operations [{names}]")


def resource_to_entries(args: argparse.Namespace) -> Expansion:
    """AclCommand's ``getResourceToAcls`` (``--add``): specific pattern types only, and entries for every
    resource."""
    pattern_type: PatternType = args.resource_pattern_type
    if not pattern_type.is_specific:
        raise UsageError(f"A '--resource-pattern-type' value of '{pattern_type.name}' is not valid when adding acls.")
    expansion = filter_to_entries(args)
    if any(not acls for acls in expansion.values()):
        raise UsageError("You must specify one of: --allow-principal, --deny-principal when trying to add ACLs.")
    return expansion


def delete_filters(expansion: Expansion) -> list[AclBindingFilter]:
    """AclCommand's ``removeAcls``: per resource filter, one filter per entry, or one matching every entry
    when the flags name no principal."""
    out: list[AclBindingFilter] = []
    for pattern, acls in expansion.items():
        out += [entry_filter(pattern, e) for e in acls] if acls else [entry_filter(pattern, None)]
    return list(dict.fromkeys(out))
