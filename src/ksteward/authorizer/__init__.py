"""ksteward's ACL authorizer: Kafka 4.x's ``StandardAuthorizer`` (KIP-801) as a pure library.

No I/O but the audit files. Everything a user or the rest of ksteward needs is imported from here; the
modules behind it (``_binding``, ``_enums``, ...) are private and may change::

    from ksteward.authorizer import AclBinding, AclBindingFilter, AuthorizerSettings, StandardAuthorizer

    auth = StandardAuthorizer(AuthorizerSettings(super_users=frozenset({"User:admin"})))
    # or, from Kafka's property strings: StandardAuthorizer.from_config({"super.users": "User:admin;User:ops"})
    auth.add_acl(acl_id, AclBinding(resource_type="TOPIC", resource_name="orders", pattern_type="LITERAL",
                                    principal="User:bob", host="*", operation="READ", permission_type="ALLOW"))
    auth.complete_initial_load()
    auth.authorize(principal="User:bob", host="10.0.0.1", operation="READ",
                   resource_type="TOPIC", resource_name="orders")     # AuthorizationResult.ALLOWED
    auth.remove_acl(acl_id)
    auth.load_snapshot({acl_id: binding, ...})    # replaces everything atomically; completes the initial load
    auth.authorize_by_resource_type(principal=..., host=..., operation=..., resource_type=...)
    auth.acls(AclBindingFilter(...))              # iterator of AclBinding
    validate_new_acl(binding)                     # InvalidAclError unless Kafka would create it

Errors (see ``_errors.py``): :class:`AuthorizerError` is the base of :class:`InvalidAclError` (a
``ValueError``), :class:`InvalidConfigError` (a ``ValueError``), :class:`UnknownAclError` (a ``KeyError``) and
:class:`AuthorizerNotReadyError`. The rules the library follows are written out in ``docs/authorizer.md``.
"""

from ._audit import (
    AUDIT_EVENT_TYPE,
    AUDIT_LIVE_FILE_NAME,
    AuditEvent,
    AuditLogWriter,
    ForwardingBroker,
    acl_id_text,
    forwarded_by,
)
from ._binding import (
    CLUSTER_NAME,
    WILDCARD_HOST,
    WILDCARD_PRINCIPAL,
    WILDCARD_RESOURCE,
    AclBinding,
    AclBindingFilter,
)
from ._enums import (
    ALLOW_IMPLICATIONS,
    SUPPORTED_OPERATIONS,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
    allow_grants,
    deny_denies,
    parse_enum,
)
from ._errors import (
    AuthorizerError,
    AuthorizerNotReadyError,
    InvalidAclError,
    InvalidConfigError,
    UnknownAclError,
)
from ._settings import AuthorizerSettings
from ._standard import (
    AclId,
    AuthorizationResult,
    Decision,
    Rule,
    StandardAuthorizer,
    authorized_operations_bitfield,
)
from ._validation import validate_new_acl

__all__ = [
    "ALLOW_IMPLICATIONS",
    "AUDIT_EVENT_TYPE",
    "AUDIT_LIVE_FILE_NAME",
    "CLUSTER_NAME",
    "SUPPORTED_OPERATIONS",
    "WILDCARD_HOST",
    "WILDCARD_PRINCIPAL",
    "WILDCARD_RESOURCE",
    "AclBinding",
    "AclBindingFilter",
    "AclId",
    "AclOperation",
    "AclPermissionType",
    "AuditEvent",
    "AuditLogWriter",
    "AuthorizationResult",
    "AuthorizerError",
    "AuthorizerNotReadyError",
    "AuthorizerSettings",
    "Decision",
    "ForwardingBroker",
    "InvalidAclError",
    "InvalidConfigError",
    "PatternType",
    "ResourceType",
    "Rule",
    "StandardAuthorizer",
    "UnknownAclError",
    "acl_id_text",
    "allow_grants",
    "authorized_operations_bitfield",
    "deny_denies",
    "forwarded_by",
    "parse_enum",
    "validate_new_acl",
]
