"""``StandardAuthorizer``: Kafka 4.x's KRaft authorizer (``docs/authorizer.md`` §2, §4.4-4.5) as a library.

::

    auth = StandardAuthorizer(AuthorizerSettings(super_users=frozenset({"User:admin", "User:ops"})))
    auth = StandardAuthorizer.from_config({"super.users": "User:admin;User:ops"})   # Kafka's property strings
    auth.load_snapshot({acl_id: binding, ...})          # or add_acl(...) then complete_initial_load()
    auth.authorize(principal="User:bob", host="10.0.0.1", operation="READ",
                   resource_type="TOPIC", resource_name="orders")          # AuthorizationResult.ALLOWED / DENIED
    auth.authorize_with_reason(...)                                         # Decision(result, rule, acl_id, acl, ...)
    auth.authorize_by_resource_type(principal=..., host=..., operation="WRITE", resource_type="TOPIC")
    auth.acls(AclBindingFilter(resource_type="TOPIC"))                      # iterator of AclBinding

Inputs. ``principal`` is the session principal as ``"Type:name"`` (``User:alice``); ``host`` is the client
address in Java's text form (IPv6 uncompressed, §2.1); enum arguments take the names of §1 or the members.
Settings (§2.2) are an ``AuthorizerSettings``; ``from_config`` reads ``super.users``,
``allow.everyone.if.no.acl.found`` and ``node.id`` from Kafka's strings (``InvalidConfigError`` for a malformed
``super.users``).

Decisions follow §2.3 step by step: super users first (even before the initial load), then readiness
(:class:`AuthorizerNotReadyError`), then the ACLs whose pattern matches the resource; any applicable DENY
wins, then any applicable ALLOW (with the ALLOW-only implications of §1.3); a resource that has ACLs but none
applies is DENIED; only a resource with no matching ACL at all gets the allow-everyone default. Two quirks of
Kafka's snapshot are not copied (§2.6): a stored principal without a colon never matches (no exception), and
a session principal ``User:*`` is an ordinary principal.

``authorize_by_resource_type`` gives the answers of Kafka's default method (probe on ``hardcode``, then the
domination rules of §2.7) from an index instead of a scan; see ``_by_type.py``.

Identity and changes. ACLs are keyed by an id (the metadata record's ``uuid.UUID``, or any hashable).
``add_acl`` and ``load_snapshot`` store what they are given, as Kafka's ``addAcl`` does: the 7-tuple must be
unique across ids (``InvalidAclError``), and ``remove_acl`` of an unknown id raises ``UnknownAclError``. Each change is
O(1) dict work plus one O(log n) sorted insert; ``load_snapshot`` builds a new index aside and swaps it in.
Readers do not block and never act on a half-applied change (see ``_index.py``), and one call sees one state.

``offset=`` on the changes records the metadata offset of the ACL image; decisions report it
(``Decision.image_offset``) so an audit line names the image that decided.
"""

from __future__ import annotations

import enum
import threading
import time
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import TypeVar

from ._binding import AclBinding, AclBindingFilter
from ._enums import SUPPORTED_OPERATIONS, AclOperation, PatternType, ResourceType, parse_enum
from ._errors import AuthorizerNotReadyError, InvalidAclError, UnknownAclError
from ._index import ALLOWED_BY_ACL, DENIED_BY_ACL, DENY_TEST, GRANT, NO_ACLS, AclIndex
from ._settings import DEFAULT_SETTINGS, AuthorizerSettings

__all__ = [
    "AclId",
    "AuthorizationResult",
    "Decision",
    "Rule",
    "StandardAuthorizer",
    "authorized_operations_bitfield",
]

AclId = Hashable
"""An ACL's id: the ``uuid.UUID`` of its AccessControlEntryRecord (any hashable value is accepted)."""

PROBE_RESOURCE_NAME = "hardcode"
"""The LITERAL name Kafka's default ``authorizeByResourceType`` probes first (§2.7 step 2)."""

_OPTIMISTIC_TRIES = 4  # seqlock attempts before a reader falls back to the writers' lock
_T = TypeVar("_T")


class AuthorizationResult(enum.Enum):
    ALLOWED = "ALLOWED"
    DENIED = "DENIED"


ALLOWED = AuthorizationResult.ALLOWED
DENIED = AuthorizationResult.DENIED


class Rule(enum.StrEnum):
    """Why a decision came out as it did (Kafka's audit rule names in brackets)."""

    SUPER_USER = "super_user"  # SuperUser
    ACL = "acl"  # MatchingAcl(acl=...)
    ALLOW_EVERYONE_DEFAULT = "allow_everyone_default"  # DefaultAllow
    NO_MATCHING_ACL = "no_matching_acl"  # DefaultDeny: no ACL applied (the resource may or may not have ACLs)


@dataclass(frozen=True, slots=True)
class Decision:
    """A decision and its reason. ``acl_id``/``acl`` name the deciding ACL when ``rule`` is ``Rule.ACL``:
    the first applicable DENY in Kafka's scan order, else the last applicable ALLOW (§2.4)."""

    result: AuthorizationResult
    rule: Rule
    acl_id: AclId | None = None
    acl: AclBinding | None = None
    image_offset: int = -1
    """Metadata offset of the ACL image that decided (-1 when the changes carried no offset)."""

    @property
    def allowed(self) -> bool:
        return self.result is ALLOWED


def _code_table(cls: type[enum.IntEnum], exclude: tuple[enum.IntEnum, ...] = ()) -> dict[object, int]:
    table: dict[object, int] = {}
    for member in cls:
        if member not in exclude:
            table[member.name] = int(member)
            table[int(member)] = int(member)  # members hash and compare as their ints, so they hit too
    return table


_OP_CODES = _code_table(AclOperation)
_TYPE_CODES = _code_table(ResourceType, exclude=(ResourceType.ANY,))
_LITERAL = PatternType.LITERAL


def _op_code(value: object) -> int:
    code = _OP_CODES.get(value)
    return code if code is not None else int(parse_enum(AclOperation, value))


def _type_code(value: object) -> int:
    code = _TYPE_CODES.get(value)
    if code is not None:
        return code
    resource_type = parse_enum(ResourceType, value)
    if resource_type is ResourceType.ANY:
        raise InvalidAclError("an action's resource type cannot be ANY")
    return int(resource_type)


def _check_literal(pattern_type: object) -> None:
    if pattern_type is not _LITERAL and parse_enum(PatternType, pattern_type) is not _LITERAL:
        raise InvalidAclError(f"only LITERAL resource patterns can be authorized, not {pattern_type}")


class StandardAuthorizer:
    """Kafka's StandardAuthorizer semantics over an in-memory ACL index. Thread-safe; readers do not lock
    (unless a read keeps colliding with a burst of changes, see ``_read``)."""

    def __init__(self, settings: AuthorizerSettings = DEFAULT_SETTINGS) -> None:
        self.settings = settings
        self.super_users: frozenset[str] = settings.super_users
        self.allow_everyone_if_no_acl_found: bool = settings.allow_everyone_if_no_acl_found
        self.node_id: int = settings.node_id
        self._default = ALLOWED if self.allow_everyone_if_no_acl_found else DENIED
        self._index = AclIndex()
        self._ready = False
        self._lock = threading.Lock()  # serialises writers; readers use the index's sequence counter

    @classmethod
    def from_config(cls, config: Mapping[str, object]) -> StandardAuthorizer:
        """An authorizer configured from Kafka's property strings (see ``AuthorizerSettings.from_config``)."""
        return cls(AuthorizerSettings.from_config(config))

    # --- readiness and changes -------------------------------------------------------------------

    @property
    def is_ready(self) -> bool:
        return self._ready

    def complete_initial_load(self, *, offset: int | None = None) -> None:
        """Mark the initial ACL load complete (§4.5); from now on everyone is authorized, not only super users."""
        with self._lock:
            if offset is not None:
                self._index.offset = offset
            self._ready = True

    def add_acl(self, acl_id: AclId, acl: AclBinding, *, offset: int | None = None) -> None:
        """Store ``acl`` under ``acl_id``; InvalidAclError if the id exists or the 7-tuple is stored under another."""
        with self._lock:
            index = self._index
            index.check_new(acl_id, acl)
            index.version += 1
            try:
                index.insert(acl_id, acl)
                if offset is not None:
                    index.offset = offset
            finally:
                index.version += 1

    def remove_acl(self, acl_id: AclId, *, offset: int | None = None) -> AclBinding:
        """Remove and return the ACL stored under ``acl_id``; UnknownAclError if there is none."""
        with self._lock:
            index = self._index
            if acl_id not in index.by_id:
                raise UnknownAclError(f"no ACL with id {acl_id!r}")
            index.version += 1
            try:
                acl = index.delete(acl_id)
                if offset is not None:
                    index.offset = offset
            finally:
                index.version += 1
            return acl

    def load_snapshot(
        self,
        acls: Mapping[AclId, AclBinding] | Iterable[tuple[AclId, AclBinding]],
        *,
        offset: int | None = None,
    ) -> None:
        """Replace every ACL with ``acls`` at once and complete the initial load.

        The new index is built aside and published by one reference swap, so a concurrent reader sees
        either the old ACLs or the new ones. A repeated 7-tuple raises InvalidAclError and publishes nothing."""
        items = acls.items() if isinstance(acls, Mapping) else acls
        with self._lock:
            index = AclIndex.build(items, self._index.offset if offset is None else offset)
            self._index = index
            self._ready = True

    def acl_count(self) -> int:
        """The number of stored ACLs (ids), as Kafka's ``aclCount`` for metrics."""
        return len(self._index.by_id)

    @property
    def image_offset(self) -> int:
        """Metadata offset of the current ACL image (-1 if the changes carried none)."""
        return self._index.offset

    # --- reads -----------------------------------------------------------------------------------

    def _read(self, fn: Callable[[AclIndex], _T]) -> _T:
        """Run ``fn`` on one complete ACL state: retry if a change overlapped it (see ``_index.py``).

        A read that keeps overlapping changes (a long read during a burst of them) takes the writers' lock
        after ``_OPTIMISTIC_TRIES`` attempts, so it cannot starve."""
        for _ in range(_OPTIMISTIC_TRIES):
            index = self._index
            version = index.version
            if version & 1:
                time.sleep(0)  # a writer is mid-change: let it finish
                continue
            try:
                result = fn(index)
            except Exception:
                if index.version == version:
                    raise
                continue  # a concurrent change broke the read; the retry sees a complete state
            if index.version == version:
                return result
        with self._lock:
            return fn(self._index)

    def authorize(
        self,
        principal: str,
        host: str,
        operation: AclOperation | str,
        resource_type: ResourceType | str,
        resource_name: str,
        pattern_type: PatternType | str = _LITERAL,
    ) -> AuthorizationResult:
        """§2.3 for one action. InvalidAclError for a non-LITERAL pattern; AuthorizerNotReadyError before the load."""
        if pattern_type is not _LITERAL:
            _check_literal(pattern_type)
        if principal in self.super_users:
            return ALLOWED
        if not self._ready:
            raise AuthorizerNotReadyError("the authorizer has not completed its initial ACL load")
        op = _OP_CODES.get(operation)
        if op is None:
            op = _op_code(operation)
        rt = _TYPE_CODES.get(resource_type)
        if rt is None:
            rt = _type_code(resource_type)
        for _ in range(_OPTIMISTIC_TRIES):  # _read, inlined on the hot path
            index = self._index
            version = index.version
            if version & 1:
                time.sleep(0)
                continue
            try:
                outcome = index.evaluate(rt, resource_name, principal, host, op)
            except Exception:
                if index.version == version:
                    raise
                continue
            if index.version == version:
                break
        else:
            with self._lock:
                outcome = self._index.evaluate(rt, resource_name, principal, host, op)
        if outcome == ALLOWED_BY_ACL:
            return ALLOWED
        if outcome == NO_ACLS:
            return self._default
        return DENIED

    def authorize_with_reason(
        self,
        principal: str,
        host: str,
        operation: AclOperation | str,
        resource_type: ResourceType | str,
        resource_name: str,
        pattern_type: PatternType | str = _LITERAL,
    ) -> Decision:
        """Like :meth:`authorize`, and say why: the rule, the deciding ACL and the image offset."""
        if pattern_type is not _LITERAL:
            _check_literal(pattern_type)
        if principal in self.super_users:
            return Decision(ALLOWED, Rule.SUPER_USER, image_offset=self._index.offset)
        if not self._ready:
            raise AuthorizerNotReadyError("the authorizer has not completed its initial ACL load")
        op, rt = _op_code(operation), _type_code(resource_type)
        for _ in range(_OPTIMISTIC_TRIES):  # _read, inlined: the audit path calls this per request
            index = self._index
            version = index.version
            if version & 1:
                time.sleep(0)
                continue
            try:
                outcome, acl_id, acl = index.explain(rt, resource_name, principal, host, op)
            except Exception:
                if index.version == version:
                    raise
                continue
            if index.version == version:
                offset = index.offset
                break
        else:
            with self._lock:
                index = self._index
                outcome, acl_id, acl = index.explain(rt, resource_name, principal, host, op)
                offset = index.offset
        if outcome == DENIED_BY_ACL:
            return Decision(DENIED, Rule.ACL, acl_id, acl, offset)
        if outcome == ALLOWED_BY_ACL:
            return Decision(ALLOWED, Rule.ACL, acl_id, acl, offset)
        if outcome == NO_ACLS and self.allow_everyone_if_no_acl_found:
            return Decision(ALLOWED, Rule.ALLOW_EVERYONE_DEFAULT, image_offset=offset)
        return Decision(DENIED, Rule.NO_MATCHING_ACL, image_offset=offset)

    def authorize_by_resource_type(
        self,
        principal: str,
        host: str,
        operation: AclOperation | str,
        resource_type: ResourceType | str,
    ) -> AuthorizationResult:
        """§2.7: is the caller allowed ``operation`` on at least one resource of this type?

        InvalidAclError for an ANY or UNKNOWN type or operation; then the probe on LITERAL ``hardcode`` with every
        rule of §2.3 (super users, readiness, implication, the default); then the domination rules."""
        op = parse_enum(AclOperation, operation)
        rt = parse_enum(ResourceType, resource_type)
        if rt is ResourceType.ANY or rt is ResourceType.UNKNOWN:
            raise InvalidAclError(f"authorize_by_resource_type needs a concrete resource type, not {rt.name}")
        if op is AclOperation.ANY or op is AclOperation.UNKNOWN:
            raise InvalidAclError(f"authorize_by_resource_type needs a concrete operation, not {op.name}")
        if principal in self.super_users:
            return ALLOWED
        if not self._ready:
            raise AuthorizerNotReadyError("the authorizer has not completed its initial ACL load")
        default_allows = self.allow_everyone_if_no_acl_found
        rt_code, op_code = int(rt), int(op)

        def decide(index: AclIndex) -> bool:
            probe = index.evaluate(rt_code, PROBE_RESOURCE_NAME, principal, host, op_code)
            if probe == ALLOWED_BY_ACL or (probe == NO_ACLS and default_allows):
                return True
            return index.by_type.any_undominated_allow(rt_code, principal, host, op_code)

        return ALLOWED if self._read(decide) else DENIED

    def authorized_operations(
        self, principal: str, host: str, resource_type: ResourceType | str, resource_name: str
    ) -> int:
        """Kafka's authorized-operations bitfield for one resource: bit ``1 << op`` for each operation of
        ``SUPPORTED_OPERATIONS[resource_type]`` (§1.6) that :meth:`authorize` would allow. One index pass."""
        rt = parse_enum(ResourceType, resource_type)
        supported = SUPPORTED_OPERATIONS.get(rt, ())
        if principal in self.super_users:
            return _bits(supported)
        if not self._ready:
            raise AuthorizerNotReadyError("the authorizer has not completed its initial ACL load")
        has_acls, mask = self._read(lambda index: index.union_masks(int(rt), resource_name, principal, host))
        allowed = []
        for op in supported:
            if mask & DENY_TEST[op]:
                continue
            if mask & GRANT[op] or (not has_acls and self.allow_everyone_if_no_acl_found):
                allowed.append(op)
        return _bits(allowed)

    def acls(self, acl_filter: AclBindingFilter = AclBindingFilter.ANY) -> Iterator[AclBinding]:
        """The stored ACLs that ``acl_filter`` matches (§3.1), from one consistent state, in no set order."""
        if acl_filter.is_any:
            return iter(self._read(AclIndex.bindings))
        return (acl for _, acl in self._read(lambda index: index.matching_items(acl_filter)))

    def acls_with_ids(self, acl_filter: AclBindingFilter = AclBindingFilter.ANY) -> Iterator[tuple[AclId, AclBinding]]:
        """Like :meth:`acls`, with each ACL's id."""
        if acl_filter.is_any:
            return iter(self._read(AclIndex.items))
        return iter(self._read(lambda index: index.matching_items(acl_filter)))


def _bits(operations: Iterable[AclOperation]) -> int:
    field = 0
    for op in operations:
        field |= 1 << op
    return field


def authorized_operations_bitfield(
    auth: StandardAuthorizer, principal: str, host: str, resource_type: ResourceType | str, name: str
) -> int:
    """The 32-bit authorized-operations field of Metadata and DescribeCluster for one resource."""
    return auth.authorized_operations(principal, host, resource_type, name)
