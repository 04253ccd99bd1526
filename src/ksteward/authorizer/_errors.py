"""The authorizer's one exception tree, as httpx keeps one in ``_exceptions.py``::

    AuthorizerError
    ├── InvalidAclError (ValueError)     an ACL, filter or action field the authorizer cannot take
    ├── InvalidConfigError (ValueError)  a malformed ``super.users``
    ├── UnknownAclError (KeyError)       ``remove_acl`` of an id that is not stored
    └── AuthorizerNotReadyError          a decision asked before the initial ACL load completed

The built-in bases stay, so ``except ValueError`` and ``except KeyError`` keep working. A value handed in
with the wrong Python type (an int where a principal string belongs) is still a plain ``TypeError``, and the
audit writer's misuse (a non-positive ``max_bytes``, a write after ``close``) a plain ``ValueError``.
"""

from __future__ import annotations

__all__ = [
    "AuthorizerError",
    "AuthorizerNotReadyError",
    "InvalidAclError",
    "InvalidConfigError",
    "UnknownAclError",
]


class AuthorizerError(Exception):
    """Base of every error the authorizer raises on purpose."""


class InvalidAclError(AuthorizerError, ValueError):
    """An ACL, filter or action the authorizer cannot take: an unrecognised enum name, ANY where a concrete
    value is needed (Kafka's IllegalArgumentException), or a 7-tuple or id that is already stored."""


class InvalidConfigError(AuthorizerError, ValueError):
    """A setting the authorizer cannot read, such as a ``super.users`` entry without ``Type:`` (Kafka's
    ``StandardAuthorizer.getConfiguredSuperUsers``)."""


class UnknownAclError(AuthorizerError, KeyError):
    """No ACL is stored under the id given to ``remove_acl``."""


class AuthorizerNotReadyError(AuthorizerError):
    """Kafka's retriable AuthorizerNotReadyException: the initial ACL load has not completed (KIP-801).

    On the wire it becomes UNKNOWN_SERVER_ERROR (-1): Kafka has no AUTHORIZER_NOT_READY error code."""
