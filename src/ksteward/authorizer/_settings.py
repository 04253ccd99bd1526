"""``AuthorizerSettings``: the broker settings besides the ACLs that change a decision, typed.

::

    AuthorizerSettings(super_users=frozenset({"User:admin"}), allow_everyone_if_no_acl_found=False)
    AuthorizerSettings.from_config({"super.users": "User:admin;User:ops", "allow.everyone.if.no.acl.found": "true"})

``from_config`` reads Kafka's property strings as ``StandardAuthorizer.configure`` does: ``super.users`` is
split on ``;``, each piece trimmed as Java's ``String.trim`` trims and empties dropped, and every piece must
be ``Type:name`` (:class:`InvalidConfigError` otherwise); ``allow.everyone.if.no.acl.found`` is Java's
``Boolean.parseBoolean`` of the trimmed value (absent: false); ``node.id`` is read when it is an integer
(-1 otherwise). Other keys are ignored, so a whole ``server.properties`` may be passed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ._errors import InvalidConfigError

__all__ = ["DEFAULT_SETTINGS", "AuthorizerSettings", "parse_allow_everyone", "parse_super_users"]

SUPER_USERS_CONFIG = "super.users"
ALLOW_EVERYONE_CONFIG = "allow.everyone.if.no.acl.found"
NODE_ID_CONFIG = "node.id"

_JAVA_WHITESPACE = "".join(chr(c) for c in range(33))  # what Java's String.trim() removes


def _java_trim(value: str) -> str:
    return value.strip(_JAVA_WHITESPACE)


def parse_super_users(value: object) -> frozenset[str]:
    """Kafka's ``super.users``: split on ``;``, trim, drop empties; every piece needs a colon. Kept as strings."""
    if value is None:
        return frozenset()
    users = set()
    for piece in str(value).split(";"):
        piece = _java_trim(piece)
        if not piece:
            continue
        if ":" not in piece:
            raise InvalidConfigError(f"expected a string in format principalType:principalName but got {piece}")
        users.add(piece)
    return frozenset(users)


def parse_allow_everyone(value: object) -> bool:
    """Kafka's ``allow.everyone.if.no.acl.found``: ``Boolean.parseBoolean`` of the trimmed value; absent is false."""
    return value is not None and _java_trim(str(value)).lower() == "true"


def _parse_node_id(value: object) -> int:
    try:
        return int(_java_trim(str(value)))
    except ValueError:
        return -1


@dataclass(frozen=True, slots=True)
class AuthorizerSettings:
    """What configures a ``StandardAuthorizer``; the defaults are Kafka's (no super users, deny by default)."""

    super_users: frozenset[str] = frozenset()
    allow_everyone_if_no_acl_found: bool = False
    node_id: int = -1
    """This node's id, as Kafka's authorizer knows it; it does not change a decision."""

    @classmethod
    def from_config(cls, props: Mapping[str, object]) -> AuthorizerSettings:
        """Read Kafka's property strings (see the module docstring); InvalidConfigError for a bad ``super.users``."""
        return cls(
            super_users=parse_super_users(props.get(SUPER_USERS_CONFIG)),
            allow_everyone_if_no_acl_found=parse_allow_everyone(props.get(ALLOW_EVERYONE_CONFIG)),
            node_id=_parse_node_id(props.get(NODE_ID_CONFIG, -1)),
        )


DEFAULT_SETTINGS = AuthorizerSettings()
