"""The state file: YAML text -> :class:`~ksteward.state.model.DesiredState`, and resources -> YAML text.

The schema is docs/state-files.md (and ``schema.json`` beside this module, for editors). :func:`dump` writes
the YAML itself rather than through a YAML emitter: the output must be byte-stable (sorted keys, one ACL
per line, one quoting rule) and fast for 100,000 ACLs. Every string it writes is either a plain scalar made
only of safe characters or a JSON string (a JSON string is a valid YAML double-quoted scalar).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping
from typing import Any

from ksteward.authorizer import AclBinding, PatternType, ResourceType

from .acltext import AclTextError, acl_text, parse_acl_text, sort_key
from .model import (
    SCRAM_MECHANISMS,
    Deletion,
    DesiredState,
    Ownership,
    QuotaEntity,
    Resources,
    ResourceSelector,
    Role,
    ScramUser,
    TopicSpec,
)
from .roles import RoleError, expand_grant, parse_roles

FORMAT_VERSION = 1
QUOTA_ENTITY_TYPES = ("user", "client-id", "ip")
_TOP_KEYS = {"version", "ownership", "delete", "topics", "acls", "grants", "roles", "quotas", "scram_users"}
_SAFE = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]*\Z")
_YAML_WORDS = {"y", "n", "yes", "no", "on", "off", "true", "false", "null"}


class StateFileError(ValueError):
    """The file is not a state file: the message names where and why."""


# --- reading ---------------------------------------------------------------------------------------------


def load_yaml(text: str) -> Any:
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when present: much faster
    try:
        return yaml.load(text, Loader=loader)
    except yaml.YAMLError as exc:
        raise StateFileError(f"not valid YAML: {exc}") from None


def parse(text: str) -> DesiredState:
    """A state file's text, checked and with its grants expanded."""
    doc = load_yaml(text)
    if doc is None:
        doc = {}
    if not isinstance(doc, dict):
        raise StateFileError("the file must be a YAML mapping (docs/state-files.md)")
    unknown = set(doc) - _TOP_KEYS
    if unknown:
        raise StateFileError(f"unknown section(s): {', '.join(sorted(map(str, unknown)))}")
    if doc.get("version", FORMAT_VERSION) != FORMAT_VERSION:
        raise StateFileError(f"version: this ksteward reads version {FORMAT_VERSION}")
    resources = resources_from_doc(doc)
    acls = set(resources.acls)
    sources: dict[AclBinding, str] = {}
    try:
        role_rules = parse_roles(doc.get("roles"))
        grants = doc.get("grants") or []
        if not isinstance(grants, list):
            raise StateFileError("grants: expected a list")
        for i, grant in enumerate(grants):
            for acl, source in expand_grant(f"grants[{i}]", grant, role_rules):
                acls.add(acl)
                sources.setdefault(acl, source)
    except RoleError as exc:
        raise StateFileError(str(exc)) from None
    return DesiredState(
        resources=Resources(resources.topics, frozenset(acls), resources.quotas, resources.scram_users),
        ownership=_ownership(doc.get("ownership")),
        deletion=_deletion(doc.get("delete")),
        roles={name: Role(name) for name in role_rules},
        acl_sources=sources,
    )


def resources_from_doc(doc: Mapping[str, Any]) -> Resources:
    """The ``topics``, ``acls``, ``quotas`` and ``scram_users`` sections (also the last-apply record's form)."""
    return Resources(
        topics=_topics(doc.get("topics")),
        acls=frozenset(_acls(doc.get("acls"))),
        quotas=_quotas(doc.get("quotas")),
        scram_users=_scram(doc.get("scram_users")),
    )


def _mapping(where: str, value: Any) -> dict[Any, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise StateFileError(f"{where}: expected a mapping")
    return value


def _int(where: str, value: Any, *, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise StateFileError(f"{where}: expected an integer >= {minimum}")
    return value


def _topics(section: Any) -> dict[str, TopicSpec]:
    out: dict[str, TopicSpec] = {}
    for name, body in _mapping("topics", section).items():
        where = f"topics.{name}"
        body = _mapping(where, body)
        extra = set(body) - {"partitions", "replication_factor", "configs"}
        if extra:
            raise StateFileError(f"{where}: unknown key(s) {', '.join(sorted(map(str, extra)))}")
        if "partitions" not in body:
            raise StateFileError(f"{where}: partitions is required")
        rf = body.get("replication_factor")
        configs = {str(k): _config_value(f"{where}.configs.{k}", v)
                   for k, v in _mapping(f"{where}.configs", body.get("configs")).items()}  # fmt: skip
        out[str(name)] = TopicSpec(
            str(name),
            _int(f"{where}.partitions", body["partitions"], minimum=1),
            None if rf is None else _int(f"{where}.replication_factor", rf, minimum=1),
            configs,
        )
    return out


def _config_value(where: str, value: Any) -> str:
    """Kafka configs are strings; YAML may read ``1000`` or ``true`` as a number or bool: give Kafka's text."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float, str)):
        return str(value)
    raise StateFileError(f"{where}: expected a string, number or boolean")


def _acls(section: Any) -> list[AclBinding]:
    out: list[AclBinding] = []
    for principal, lines in _mapping("acls", section).items():
        if not isinstance(principal, str) or ":" not in principal:
            raise StateFileError(f"acls: {principal!r} is not a principal (Type:name, e.g. User:alice)")
        if not isinstance(lines, list):
            raise StateFileError(f"acls.{principal}: expected a list of ACL lines")
        try:
            out += [parse_acl_text(principal, line) for line in lines]
        except AclTextError as exc:
            raise StateFileError(f"acls.{principal}: {exc}") from None
    return out


def _entity(where: str, raw: Any) -> QuotaEntity:
    raw = _mapping(where, raw)
    if not raw or set(raw) - set(QUOTA_ENTITY_TYPES):
        raise StateFileError(f"{where}: an entity maps {', '.join(QUOTA_ENTITY_TYPES)} to a name (null: default)")
    if any(v is not None and not isinstance(v, str) for v in raw.values()):
        raise StateFileError(f"{where}: entity names are strings, or null for the default")
    return tuple(sorted((str(k), v) for k, v in raw.items()))


def _quotas(section: Any) -> dict[QuotaEntity, dict[str, float]]:
    if section is None:
        return {}
    if not isinstance(section, list):
        raise StateFileError("quotas: expected a list of {entity, values}")
    out: dict[QuotaEntity, dict[str, float]] = {}
    for i, item in enumerate(section):
        where = f"quotas[{i}]"
        item = _mapping(where, item)
        entity = _entity(f"{where}.entity", item.get("entity"))
        values = _mapping(f"{where}.values", item.get("values"))
        if entity in out:
            raise StateFileError(f"{where}: entity listed twice")
        for k, v in values.items():
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
                raise StateFileError(f"{where}.values.{k}: expected a number")
        out[entity] = {str(k): float(v) for k, v in values.items()}
    return out


def _scram(section: Any) -> dict[str, ScramUser]:
    out: dict[str, ScramUser] = {}
    for user, body in _mapping("scram_users", section).items():
        where = f"scram_users.{user}"
        body = _mapping(where, body)
        if set(body) - {"mechanisms", "password_env"}:
            raise StateFileError(f"{where}: expected mechanisms and optionally password_env")
        mechanisms = _mapping(f"{where}.mechanisms", body.get("mechanisms"))
        for m, n in mechanisms.items():
            if m not in SCRAM_MECHANISMS:
                raise StateFileError(f"{where}.mechanisms: {m!r} is not one of {', '.join(SCRAM_MECHANISMS)}")
            _int(f"{where}.mechanisms.{m}", n, minimum=4096)  # Kafka's ScramMechanism minimum iterations
        env = body.get("password_env")
        if env is not None and not isinstance(env, str):
            raise StateFileError(f"{where}.password_env: expected an environment variable's name")
        out[str(user)] = ScramUser(str(user), {str(m): int(n) for m, n in mechanisms.items()}, env)
    return out


def _ownership(section: Any) -> Ownership:
    body = _mapping("ownership", section)
    extra = set(body) - {"all", "topic_prefixes", "principals", "resources", "quota_entities"}
    if extra:
        raise StateFileError(f"ownership: unknown key(s) {', '.join(sorted(map(str, extra)))}")
    prefixes = body.get("topic_prefixes") or []
    principals = body.get("principals") or []
    if not isinstance(prefixes, list) or not all(isinstance(p, str) for p in prefixes):
        raise StateFileError("ownership.topic_prefixes: expected a list of strings")
    if not isinstance(principals, list) or not all(isinstance(p, str) and ":" in p for p in principals):
        raise StateFileError("ownership.principals: expected a list of principals (User:name)")
    selectors = []
    for i, raw in enumerate(body.get("resources") or []):
        where = f"ownership.resources[{i}]"
        raw = _mapping(where, raw)
        rtype = ResourceType.__members__.get(str(raw.get("resource_type", "")).upper())
        pattern = PatternType.__members__.get(str(raw.get("pattern_type", "LITERAL")).upper())
        if rtype in (None, ResourceType.ANY, ResourceType.UNKNOWN) or not isinstance(raw.get("name"), str):
            raise StateFileError(f"{where}: expected resource_type and name")
        if pattern not in (PatternType.LITERAL, PatternType.PREFIXED):
            raise StateFileError(f"{where}: pattern_type must be LITERAL or PREFIXED")
        principal = raw.get("principal")
        if principal is not None and not isinstance(principal, str):
            raise StateFileError(f"{where}.principal: expected a principal")
        selectors.append(ResourceSelector(rtype, raw["name"], pattern, principal))
    entities = frozenset(_entity(f"ownership.quota_entities[{i}]", e)
                         for i, e in enumerate(body.get("quota_entities") or []))  # fmt: skip
    return Ownership(bool(body.get("all", False)), tuple(prefixes), frozenset(principals), tuple(selectors), entities)


def _deletion(section: Any) -> Deletion:
    body = _mapping("delete", section)
    fields = ("topics", "configs", "acls", "quotas", "scram_users")
    extra = set(body) - set(fields)
    if extra:
        raise StateFileError(f"delete: unknown key(s) {', '.join(sorted(map(str, extra)))}")
    if any(not isinstance(v, bool) for v in body.values()):
        raise StateFileError("delete: each section is true or false")
    return Deletion(**{k: bool(body.get(k, False)) for k in fields})


# --- writing ---------------------------------------------------------------------------------------------


def scalar(value: str) -> str:
    """A string as a YAML scalar: plain when that is unambiguous, else a JSON (double-quoted) string."""
    if _SAFE.match(value) and value.lower() not in _YAML_WORDS:
        return value
    return json.dumps(value, ensure_ascii=False)


def number(value: float) -> str:
    return str(int(value)) if value.is_integer() and abs(value) < 2**53 else repr(value)


def dump(resources: Resources, ownership: Ownership, deletion: Deletion, *, header: str = "") -> str:
    """The file for ``resources``: sorted throughout, so the same resources give the same bytes."""
    out: list[str] = [f"# {line}" if line else "#" for line in header.splitlines()]
    out.append(f"version: {FORMAT_VERSION}")
    out += _ownership_lines(ownership)
    out.append("delete:")
    out += [f"  {k}: {'true' if getattr(deletion, k) else 'false'}"
            for k in ("topics", "configs", "acls", "quotas", "scram_users")]  # fmt: skip
    out += resources_lines(resources)
    return "\n".join(out) + "\n"


def _ownership_lines(o: Ownership) -> list[str]:
    out = ["ownership:", f"  all: {'true' if o.all else 'false'}"]
    if o.topic_prefixes:
        out += ["  topic_prefixes:", *(f"    - {scalar(p)}" for p in sorted(o.topic_prefixes))]
    if o.principals:
        out += ["  principals:", *(f"    - {scalar(p)}" for p in sorted(o.principals))]
    if o.resources:
        out.append("  resources:")
        for s in o.resources:
            who = f", principal: {scalar(s.principal)}" if s.principal else ""
            out.append(f"    - {{resource_type: {s.resource_type.name}, pattern_type: {s.pattern_type.name}, "
                       f"name: {scalar(s.name)}{who}}}")  # fmt: skip
    if o.quota_entities:
        out += ["  quota_entities:", *(f"    - {_entity_text(e)}" for e in sorted(o.quota_entities, key=_entity_key))]
    return out


def _entity_key(entity: QuotaEntity) -> tuple[tuple[str, str], ...]:
    return tuple((t, "" if n is None else f"={n}") for t, n in entity)


def _entity_text(entity: QuotaEntity) -> str:
    return "{" + ", ".join(f"{t}: {'null' if n is None else scalar(n)}" for t, n in entity) + "}"


def resources_lines(r: Resources) -> list[str]:
    """The four resource sections, sorted (also what the last-apply record holds, as YAML)."""
    out = ["topics:" + ("" if r.topics else " {}")]
    for name in sorted(r.topics):
        t = r.topics[name]
        out.append(f"  {scalar(name)}:")
        out.append(f"    partitions: {t.partitions}")
        if t.replication_factor is not None:
            out.append(f"    replication_factor: {t.replication_factor}")
        if t.configs:
            out.append("    configs:")
            out += [f"      {scalar(k)}: {scalar(t.configs[k])}" for k in sorted(t.configs)]
    out += _acl_lines(r.acls)
    out.append("quotas:" + ("" if r.quotas else " []"))
    for entity in sorted(r.quotas, key=_entity_key):
        values = r.quotas[entity]
        out.append(f"  - entity: {_entity_text(entity)}")
        out.append("    values: {" + ", ".join(f"{scalar(k)}: {number(values[k])}" for k in sorted(values)) + "}")
    out.append("scram_users:" + ("" if r.scram_users else " {}"))
    for user in sorted(r.scram_users):
        u = r.scram_users[user]
        mechanisms = ", ".join(f"{m}: {u.mechanisms[m]}" for m in sorted(u.mechanisms))
        env = f", password_env: {scalar(u.password_env)}" if u.password_env else ""
        out.append(f"  {scalar(user)}: {{mechanisms: {{{mechanisms}}}{env}}}")
    return out


def _acl_lines(acls: Iterable[AclBinding]) -> list[str]:
    ordered = sorted(acls, key=sort_key)
    out = ["acls:" + ("" if ordered else " {}")]
    principal = None
    for acl in ordered:
        if acl.principal != principal:
            principal = acl.principal
            out.append(f"  {scalar(principal)}:")
        out.append(f"    - {scalar(acl_text(acl))}")
    return out


def resources_to_doc(r: Resources) -> dict[str, Any]:
    """The four sections as plain data in the file's form (the last-apply record stores this as JSON, which
    :func:`resources_from_doc` reads back)."""
    acls: dict[str, list[str]] = {}
    for acl in sorted(r.acls, key=sort_key):
        acls.setdefault(acl.principal, []).append(acl_text(acl))
    topics: dict[str, Any] = {}
    for name in sorted(r.topics):
        t = r.topics[name]
        body: dict[str, Any] = {"partitions": t.partitions}
        if t.replication_factor is not None:
            body["replication_factor"] = t.replication_factor
        if t.configs:
            body["configs"] = {k: t.configs[k] for k in sorted(t.configs)}
        topics[name] = body
    quotas = [{"entity": dict(e), "values": {k: r.quotas[e][k] for k in sorted(r.quotas[e])}}
              for e in sorted(r.quotas, key=_entity_key)]  # fmt: skip
    scram: dict[str, Any] = {}
    for user in sorted(r.scram_users):
        u = r.scram_users[user]
        scram[user] = {"mechanisms": {m: u.mechanisms[m] for m in sorted(u.mechanisms)}}
        if u.password_env:
            scram[user]["password_env"] = u.password_env
    return {"topics": topics, "acls": acls, "quotas": quotas, "scram_users": scram}
