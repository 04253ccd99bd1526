"""The ``ksteward acls`` actions: Kafka's add, remove and list (``AclCommand``'s output, line by line), and
ksteward's dry runs, who-can and explain. docs/cli-acls.md documents the output and the JSON schema."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable
from typing import Any

from ksteward.authorizer import (
    WILDCARD_HOST,
    AclBinding,
    AclBindingFilter,
    AuthorizerSettings,
    InvalidConfigError,
    PatternType,
    ResourceType,
)
from ksteward.cli.admin_common import (
    EXIT_ERROR,
    EXIT_OK,
    Connection,
    UsageError,
    confirm,
    connection,
    print_json,
    progress,
    status,
)

from . import answers, options
from .answers import KnownSettings, binding_json, binding_text
from .backend import AclBackend, WireBackend, caller_host, needs_wire, open_backend
from .options import Entry, Pattern

PREFIX = "ksteward acls"


def execute(args: argparse.Namespace) -> int:
    action = options.check_args(args)
    conn = connection(args)
    if action == "add":
        return _add(args, conn, options.resource_to_entries(args))
    if action == "remove":
        return _remove(args, conn, options.filter_to_entries(args))
    if action == "list":
        return _list(args, conn)
    return _answer(args, conn, action)


def _say(kind: str, messages: Iterable[str]) -> None:
    for message in messages:
        print(f"{PREFIX}: {kind}: {message}", file=sys.stderr)


def _text(lines: Iterable[str]) -> None:
    for line in lines:
        print(line)


# --- settings ------------------------------------------------------------------------------------------


def known_settings(args: argparse.Namespace, backend: AclBackend) -> KnownSettings:
    """``super.users`` and ``allow.everyone.if.no.acl.found``: the flags, else DescribeConfigs on a broker, else
    Kafka's defaults (no super users, false), each assumption said in ``notes``."""
    flags = (args.super_users, args.allow_everyone_if_no_acl_found)
    read = backend.broker_configs() if None in flags else {}
    notes: list[str] = []
    super_text = _setting("super.users", args.super_users, read, "empty", "--super-users", notes)
    allow_text = _setting("allow.everyone.if.no.acl.found", args.allow_everyone_if_no_acl_found, read,
                          "false, Kafka's default", "--allow-everyone-if-no-acl-found", notes)  # fmt: skip
    try:  # Kafka's parsing of the two property strings (AuthorizerSettings.from_config)
        settings = AuthorizerSettings.from_config({"super.users": super_text,
                                                   "allow.everyone.if.no.acl.found": allow_text})  # fmt: skip
    except InvalidConfigError as exc:
        raise UsageError(f"super.users: {exc}") from None
    return KnownSettings(settings, notes, allow_text is not None)


def _setting(key: str, flag: str | None, read: dict[str, str | None] | None, assumed: str, option: str,
             notes: list[str]) -> str | None:  # fmt: skip
    """The flag, else the value DescribeConfigs read, else None with a note saying what was assumed and why."""
    if flag is not None:
        return flag
    if read is None:
        why = "DescribeConfigs on the broker failed (it needs DESCRIBE_CONFIGS on the cluster)"
    elif key not in read:
        why = "DescribeConfigs does not return it"
    elif read[key] is None:
        why = "DescribeConfigs hides its value"
    else:
        return read[key]
    notes.append(f"{key}: {why}; assumed {assumed} (give {option})")
    return None


def _settings_json(known: KnownSettings) -> dict[str, Any]:
    s = known.settings
    return {"super_users": sorted(s.super_users), "allow_everyone_if_no_acl_found": s.allow_everyone_if_no_acl_found}


# --- list ----------------------------------------------------------------------------------------------


def group(acls: Iterable[AclBinding]) -> dict[Pattern, list[Entry]]:
    """ACLs grouped by resource pattern, both sorted (Kafka prints a HashMap's order)."""
    grouped: dict[Pattern, list[Entry]] = {}
    for acl in acls:
        pattern, entry = options.split(acl)
        grouped.setdefault(pattern, [])
        if entry not in grouped[pattern]:
            grouped[pattern].append(entry)
    return {p: sorted(grouped[p]) for p in sorted(grouped)}


def listing_lines(grouped: dict[Pattern, list[Entry]]) -> list[str]:
    """AclCommand's ``printResourceAcls``: a header, one tab-indented entry a line, an empty line."""
    lines: list[str] = []
    for pattern, entries in grouped.items():
        lines += [f"Current ACLs for resource `{pattern.as_pattern()}`:", *(f"\t{e}" for e in entries), ""]
    return lines


def _grouped_json(grouped: dict[Pattern, list[Entry]]) -> list[dict[str, Any]]:
    return [{"resource_type": p.resource_type.name, "resource_name": p.name, "pattern_type": p.pattern_type.name,
             "acls": [{"principal": e.principal, "host": e.host, "operation": e.operation.name,
                       "permission_type": e.permission_type.name} for e in entries]}
            for p, entries in grouped.items()]  # fmt: skip


def _describe_all(backend: AclBackend, filters: list[AclBindingFilter]) -> list[AclBinding]:
    found: list[AclBinding] = []
    for f in progress(filters, len(filters), "describing ACLs"):
        found += backend.describe(f)
    return list(dict.fromkeys(found))


def _list(args: argparse.Namespace, conn: Connection) -> int:
    patterns = options.resource_filters(args, die_if_none=False)
    filters = [options.entry_filter(p, None) for p in patterns] or [AclBindingFilter.ANY]
    principals = list(dict.fromkeys(options.parse_principal(p.strip()) for p in args.principal or []))
    backend = open_backend(conn, wire=needs_wire(filters))
    try:
        acls = _describe_all(backend, filters)
    finally:
        backend.close()
    if not principals:
        grouped = group(acls)
        if args.output == "json":
            print_json({"action": "list", "resources": _grouped_json(grouped)})
        else:
            _text(listing_lines(grouped))
        return EXIT_OK
    per_principal = [(p, group(a for a in acls if a.principal == p)) for p in principals]
    if args.output == "json":
        print_json({"action": "list", "principals": [{"principal": p, "resources": _grouped_json(g)}
                                                     for p, g in per_principal]})  # fmt: skip
        return EXIT_OK
    for principal, grouped in per_principal:
        _text([f"ACLs for principal `{principal}`", *listing_lines(grouped)])
    return EXIT_OK


# --- add -----------------------------------------------------------------------------------------------


def _add(args: argparse.Namespace, conn: Connection, expansion: options.Expansion) -> int:
    bindings = [options.binding(p, e) for p, entries in expansion.items() for e in entries]
    backend = open_backend(conn, wire=needs_wire(bindings))
    try:
        existing = {p: backend.describe(AclBindingFilter(p.resource_type, p.name, PatternType.MATCH))
                    for p in expansion}  # fmt: skip
        # The broker settings matter here only for a resource without ACLs (the allow-everyone trap) and for
        # the what-if; otherwise they are not read, and nothing is said about them.
        if args.audit_dir or any(not existing[p] for p in expansion):
            known = known_settings(args, backend)
            if not args.audit_dir:  # super.users plays no part in the warning
                allow_notes = [n for n in known.notes if n.startswith("allow.everyone")]
                known = KnownSettings(known.settings, allow_notes, known.allow_everyone_known)
        else:
            known = KnownSettings(AuthorizerSettings())
        topics = backend.topics() if any(p.resource_type is ResourceType.TOPIC for p in expansion) else None
        new, present, lines = _plan_add(expansion, existing)
        warnings = answers.add_warnings(new, existing, known, topics)
        audit = _audit(args, backend, known, create=new, delete=[]) if args.dry_run else None
        if not args.dry_run:
            backend.create(new)
    finally:
        backend.close()
    _say("note", known.notes)
    _say("warning", [w["message"] for w in warnings])
    if args.output == "json":
        print_json({"action": "add", "dry_run": args.dry_run, "created": [binding_json(b) for b in new],
                    "already_existed": [binding_json(b) for b in present], "warnings": warnings,
                    "assumptions": known.notes, "audit": audit})  # fmt: skip
    elif args.dry_run:
        _text([f"Acl {binding_text(b)} already exists." for b in present])
        _text([f"Dry run: {len(new)} ACL(s) would be created:", *(f"\t{binding_text(b)}" for b in new)])
        _audit_text(audit)
    else:
        _text(lines)
    return EXIT_OK


def _plan_add(expansion: options.Expansion, existing: dict[Pattern, list[AclBinding]]) -> tuple[
        list[AclBinding], list[AclBinding], list[str]]:  # fmt: skip
    """AclCommand's ``addAcls``: per resource, "Acl ... already exists." for each binding already there, then
    "Adding ACLs for resource `...`: " and the new entries. Returns (new, present, the lines)."""
    new: list[AclBinding] = []
    present: list[AclBinding] = []
    lines: list[str] = []
    for pattern, entries in expansion.items():
        there = set(existing[pattern])
        adding = []
        for entry in entries:
            acl = options.binding(pattern, entry)
            if acl in there:
                present.append(acl)
                lines.append(f"Acl {binding_text(acl)} already exists.")
            else:
                adding.append(entry)
                new.append(acl)
        if adding:
            body = [f"\t{e}" for e in adding]
            body[0] = " " + body[0]
            lines += [f"Adding ACLs for resource `{pattern.as_pattern()}`: ", *body, ""]
    return new, present, lines


# --- remove --------------------------------------------------------------------------------------------


def _remove(args: argparse.Namespace, conn: Connection, expansion: options.Expansion) -> int:
    filters = options.delete_filters(expansion)
    backend = open_backend(conn, wire=needs_wire(filters))
    try:
        matched = _describe_all(backend, filters)
        if needs_wire(matched) and not isinstance(backend, WireBackend):  # confluent-kafka cannot name them
            backend.close()
            backend = open_backend(conn, wire=True)
        known: KnownSettings | None = None
        refused: list[dict[str, Any]] = []
        protected: dict[str, list[str]] = {}
        if not args.force and any(a.resource_type is ResourceType.CLUSTER for a in matched):
            protected = _protected(args, conn)  # only a CLUSTER ACL can carry ALTER on the cluster
            known = known_settings(args, backend)
            cluster = backend.describe(AclBindingFilter(ResourceType.CLUSTER))
            refused = answers.lockouts(cluster, matched, known.settings, protected)
        audit = None
        if args.dry_run and args.audit_dir:
            known = known or known_settings(args, backend)
            audit = _audit(args, backend, known, create=[], delete=matched)
        deleted = matched if args.dry_run or refused else _confirm_and_delete(args, backend, expansion)
    finally:
        backend.close()
    notes = known.notes if known else []
    _say("note", notes)
    _say("refused", [f"this removal would take away {r['principal']}'s right to alter ACLs (ALTER on CLUSTER) from "
                     f"host {', '.join(r['hosts'])} (afterwards: {r['after']}); give --force to remove anyway"
                     for r in refused])  # fmt: skip
    if args.output == "json":
        print_json({"action": "remove", "dry_run": args.dry_run,
                    "filters": [_filter_json(f) for f in filters],
                    "deleted": [binding_json(b) for b in deleted] if not refused else [],
                    "would_delete": [binding_json(b) for b in matched],
                    "lockout": {"protected": sorted(protected), "refused": refused, "forced": args.force},
                    "warnings": [], "assumptions": notes, "audit": audit})  # fmt: skip
    elif args.dry_run:
        _text([f"Dry run: {len(matched)} ACL(s) would be deleted:", *(f"\t{binding_text(b)}" for b in matched)])
        _audit_text(audit)
    return EXIT_ERROR if refused else EXIT_OK


def _confirm_and_delete(args: argparse.Namespace, backend: AclBackend, expansion: options.Expansion) -> list[
        AclBinding]:  # fmt: skip
    """AclCommand's ``removeAcls``: Kafka's question per resource filter (on a terminal, unless ``--force``),
    then one DeleteAcls with the filters of every confirmed resource."""
    chosen: list[AclBindingFilter] = []
    for pattern, entries in expansion.items():
        if entries:
            listed = "\n".join(f"\t{e}" for e in entries)
            question = (f"Are you sure you want to remove ACLs: \n {listed}\n from resource filter "
                        f"`{pattern.as_filter()}`?")  # fmt: skip
        else:
            question = f"Are you sure you want to delete all ACLs for resource filter `{pattern.as_filter()}`?"
        if confirm(question, force=args.force):
            chosen += options.delete_filters({pattern: entries})
    return backend.delete(chosen)


def _protected(args: argparse.Namespace, conn: Connection) -> dict[str, list[str]]:
    """The principals whose right to alter ACLs the guard keeps: the caller and ``--protect-principal``."""
    hosts = [h for h in [caller_host(conn)] if h]
    out: dict[str, list[str]] = {}
    caller = caller_principal(conn)
    if caller:
        out[caller] = hosts
    else:
        _say("note", ["the caller's principal cannot be known from --command-config (TLS certificate, Kerberos or "
                      "OAuth): the lockout guard protects only the --protect-principal principals"])  # fmt: skip
    for p in args.protect_principal or []:
        out.setdefault(options.parse_principal(p.strip()), [])
    return out


def caller_principal(conn: Connection) -> str | None:
    """The principal the brokers see: ``User:<username>`` of sasl.jaas.config, ``User:ANONYMOUS`` on PLAINTEXT,
    None when it cannot be known here (an SSL certificate's name, Kerberos, OAuth)."""
    protocol = conn.properties.get("security.protocol", "PLAINTEXT").strip().upper()
    if protocol == "PLAINTEXT":
        return "User:ANONYMOUS"
    mechanism = conn.properties.get("sasl.mechanism", "GSSAPI").strip().upper()
    if protocol.startswith("SASL") and (mechanism == "PLAIN" or mechanism.startswith("SCRAM")):
        from ksteward.cli.admin_common import confluent_config

        username = confluent_config(conn).get("sasl.username")
        return f"User:{username}" if username else None
    return None


def _filter_json(f: AclBindingFilter) -> dict[str, Any]:
    return {"resource_type": f.resource_type.name, "resource_name": f.resource_name,
            "pattern_type": f.pattern_type.name, "principal": f.principal, "host": f.host,
            "operation": f.operation.name, "permission_type": f.permission_type.name}  # fmt: skip


# --- the audit what-if ------------------------------------------------------------------------------------


def _audit(args: argparse.Namespace, backend: AclBackend, known: KnownSettings, *, create: list[AclBinding],
           delete: list[AclBinding]) -> dict[str, Any] | None:  # fmt: skip
    if not args.audit_dir:
        return None
    from .audit_whatif import MISSING, audit_flips

    live = backend.describe(AclBindingFilter.ANY)
    with status(f"running the what-if job on {args.audit_dir} (Spark)"):
        summary = audit_flips(args.audit_dir, live, known.settings, create, delete)
    if summary is None:
        _say("note", [MISSING])
    return summary


def _audit_text(summary: dict[str, Any] | None) -> None:
    if summary is not None:
        from .audit_whatif import flips_text

        _text(flips_text(summary))


# --- who-can and explain -----------------------------------------------------------------------------------


def _answer(args: argparse.Namespace, conn: Connection, action: str) -> int:
    pattern = options.resource_filters(args, die_if_none=True)[0]
    operation = options.cli_operations(args)[0]
    options.validate_operations({pattern: [Entry("User:x", WILDCARD_HOST, operation, answers.ALLOW)]})
    on_resource = AclBindingFilter(pattern.resource_type, pattern.name, PatternType.MATCH)
    backend = open_backend(conn, wire=needs_wire([on_resource]) or pattern.resource_type in (
        ResourceType.DELEGATION_TOKEN, ResourceType.USER))  # fmt: skip
    try:
        acls = backend.describe(on_resource)
        known = known_settings(args, backend)
    finally:
        backend.close()
    auth = answers.authorizer(acls, known.settings)
    _say("note", known.notes)
    base = {"action": action, "operation": operation.name,
            "resource": {"resource_type": pattern.resource_type.name, "resource_name": pattern.name},
            "settings": _settings_json(known), "assumptions": known.notes}  # fmt: skip
    if action == "explain":
        principal = options.parse_principal(args.principal[0].strip())
        result = answers.explain(auth, principal, (args.host or WILDCARD_HOST).strip(), operation, pattern)
        if args.output == "json":
            print_json({**base, **result})
        else:
            _text([f"{result['decision']}: {principal} {operation.name} {pattern.resource_type.name} "
                   f"`{pattern.name}` from host {result['host']}", f"rule: {result['rule']}",
                   f"because: {result['reason']}"])  # fmt: skip
        return EXIT_OK
    rows = answers.who_can(auth, operation, pattern)
    if args.output == "json":
        print_json({**base, "principals": rows})
        return EXIT_OK
    lines = [f"Principals allowed {operation.name} on `{pattern.as_pattern()}`:"]
    for row in rows:
        lines.append(f"\t{row['principal']}\t{row['host']}\t{row['rule']}\t{row['reason']}")
        lines += [f"\t\texcept: DENY ACL {binding_text(_binding(d))}" for d in row["narrowed_by"]]
    _text(lines)
    return EXIT_OK


def _binding(fields: dict[str, str]) -> AclBinding:
    return AclBinding(**fields)
