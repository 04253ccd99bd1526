"""UpdateFeatures (key 57): Kafka's ``ControllerApis.handleUpdateFeatures`` and ``QuorumController.updateFeatures``.

Served where a controller runs (the combined node, a controller listener, and an Envelope from a broker: a
broker-only node forwards it, as KIP-590 says). ALTER on the cluster is required, else the whole request fails
with CLUSTER_AUTHORIZATION_FAILED. The controller's one outcome is the response's top-level error; on success
v0 and v1 also list each requested feature with no error (v2 dropped the per-feature results).
docs/admin-apis.md, "UpdateFeatures".
"""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from ksteward.authorizer import CLUSTER_NAME, AclOperation, ResourceType
from ksteward.broker.authz import CLUSTER_DENIED_MESSAGE, authorize
from ksteward.broker.context import Node, RequestContext
from ksteward.controller.features import FeatureUpdate, UpgradeType
from ksteward.protocol.apis import ApiKey
from ksteward.protocol.build import build
from ksteward.protocol.codec import response_class

# The prefix of the message when one feature's error fails the whole update (Kafka's QuorumController.updateFeatures).
_FAILED_FOR_ALL = "The update failed for all features since the following feature had an error: "


def _updates(request: Any) -> list[FeatureUpdate]:
    """The requested updates. v0 has no UpgradeType; Kafka's controller then reads the field's default, UPGRADE,
    whatever v0's AllowDowngrade says."""
    return [
        FeatureUpdate(u.feature, int(u.max_version_level), UpgradeType.from_code(int(getattr(u, "upgrade_type", 1))))
        for u in request.feature_updates
    ]


async def handle_update_features(node: Node, ctx: RequestContext, request: Any) -> Any:
    cls = response_class(ApiKey.UPDATE_FEATURES, ctx.api_version)
    if not authorize(node, ctx, AclOperation.ALTER, ResourceType.CLUSTER, CLUSTER_NAME):
        values = {"throttle_time": 0, "error_code": ErrorCode.cluster_authorization_failed,
                  "error_message": CLUSTER_DENIED_MESSAGE, "results": []}  # fmt: skip
        return build(cls, values)
    outcome = await node.controller.update_features(
        _updates(request), validate_only=bool(getattr(request, "validate_only", False))
    )
    if outcome.code != ErrorCode.none:
        message = _FAILED_FOR_ALL + (outcome.message or "")
        return build(cls, {"throttle_time": 0, "error_code": outcome.code, "error_message": message, "results": []})
    results = [
        {"feature": u.feature, "error_code": ErrorCode.none, "error_message": None} for u in request.feature_updates
    ]
    return build(cls, {"throttle_time": 0, "error_code": ErrorCode.none, "error_message": None, "results": results})
