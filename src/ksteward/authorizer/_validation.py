"""``validate_new_acl``: may this binding be created? Kafka's rules, in Kafka's order and words.

Kafka checks a new ACL in two places, and this function runs both, first the broker's then the controller's:

- ``AclApis.handleCreateAcls`` (broker): a CLUSTER ACL must name ``kafka-cluster``; the name must not be empty.
- ``AclControlManager.validateNewAcl`` (controller): the resource type is concrete (not UNKNOWN), the pattern
  LITERAL or PREFIXED, the operation and the permission concrete; and since KAFKA-18051 (Kafka 4.0) the
  principal must split into ``Type:name``.

A binding cannot hold ANY or MATCH at all (the constructor raises, as Kafka's ``CreateAclsRequest`` fails
the whole request then), so what is left to refuse here is UNKNOWN, names and principals.
"""

from __future__ import annotations

from ._binding import CLUSTER_NAME, AclBinding
from ._enums import AclOperation, AclPermissionType, PatternType, ResourceType
from ._errors import InvalidAclError

__all__ = ["validate_new_acl"]


def validate_new_acl(acl: AclBinding) -> None:
    """Raise :class:`InvalidAclError` with Kafka's message if ``acl`` may not be created."""
    if acl.resource_type is ResourceType.CLUSTER and acl.resource_name != CLUSTER_NAME:
        raise InvalidAclError(f"The only valid name for the CLUSTER resource is {CLUSTER_NAME}")
    if acl.resource_name == "":
        raise InvalidAclError("Invalid empty resource name")
    if acl.resource_type in (ResourceType.UNKNOWN, ResourceType.ANY):
        raise InvalidAclError(f"Invalid resourceType {acl.resource_type.name}")
    if acl.pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
        raise InvalidAclError(f"Invalid patternType {acl.pattern_type.name}")
    if acl.operation in (AclOperation.UNKNOWN, AclOperation.ANY):
        raise InvalidAclError(f"Invalid operation {acl.operation.name}")
    if acl.permission_type not in (AclPermissionType.ALLOW, AclPermissionType.DENY):
        raise InvalidAclError(f"Invalid permissionType {acl.permission_type.name}")
    principal_type, colon, _ = acl.principal.partition(":")
    if not colon or not principal_type:
        raise InvalidAclError(f"Could not parse principal from `{acl.principal}`: expected principalType:principalName")
