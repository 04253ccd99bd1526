"""ksteward's ACL authorizer: Kafka 4.x StandardAuthorizer semantics as a pure library (no I/O but the audit files).

::

    from ksteward.authorizer import (StandardAuthorizer, AclBinding, AclBindingFilter,
                                     AuthorizationResult, AuthorizerNotReadyError)
    auth = StandardAuthorizer({"super.users": "User:admin;User:ops", "allow.everyone.if.no.acl.found": "false"})
    auth.add_acl(acl_id, AclBinding(resource_type="TOPIC", resource_name="orders", pattern_type="LITERAL",
                                    principal="User:bob", host="*", operation="READ", permission_type="ALLOW"))
    auth.complete_initial_load()
    auth.authorize(principal="User:bob", host="10.0.0.1", operation="READ",
                   resource_type="TOPIC", resource_name="orders")     # AuthorizationResult.ALLOWED
    auth.remove_acl(acl_id)
    auth.load_snapshot({acl_id: binding, ...})    # replaces everything atomically; completes the initial load
    auth.authorize_by_resource_type(principal=..., host=..., operation=..., resource_type=...)
    auth.acls(AclBindingFilter(...))              # iterator of AclBinding

Modules: ``enums`` (wire codes, §1), ``binding`` (AclBinding, AclBindingFilter, §3.1), ``index`` (the lookup
index and its publication rule), ``by_type`` (the index behind authorize_by_resource_type, §2.7),
``standard`` (StandardAuthorizer, Decision), ``audit`` (CloudEvents audit lines and the rotating writer).
Section numbers refer to ``spec/authorizer.md``.
"""

from .audit import AUDIT_EVENT_TYPE, AuditEvent, AuditLogWriter, acl_id_text
from .binding import (
    CLUSTER_NAME,
    WILDCARD_HOST,
    WILDCARD_PRINCIPAL,
    WILDCARD_RESOURCE,
    AclBinding,
    AclBindingFilter,
)
from .enums import SUPPORTED_OPERATIONS, AclOperation, AclPermissionType, PatternType, ResourceType
from .standard import (
    AclId,
    AuthorizationResult,
    AuthorizerNotReadyError,
    Decision,
    Rule,
    StandardAuthorizer,
    authorized_operations_bitfield,
)

__all__ = [
    "AUDIT_EVENT_TYPE",
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
    "AuthorizerNotReadyError",
    "Decision",
    "PatternType",
    "ResourceType",
    "Rule",
    "StandardAuthorizer",
    "acl_id_text",
    "authorized_operations_bitfield",
]
