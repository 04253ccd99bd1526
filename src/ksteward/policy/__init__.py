"""Admin policies: Kafka's CreateTopicPolicy (KIP-108) and AlterConfigPolicy (KIP-133), plus the
DeleteTopicPolicy of KIP-934, with their loader and built-in implementations.

A policy is a Python class named by dotted path in the controller's configuration::

    create.topic.policy.class.name=mycompany.policies.Naming        # or mycompany.policies:Naming
    delete.topic.policy.class.name=ksteward.policy.builtin.ProtectInternalTopics
    alter.config.policy.class.name=mycompany.policies.Retention

::

    from ksteward.policy import AlterConfigPolicy, PolicyViolation

    class Retention(AlterConfigPolicy):
        def configure(self, configs):            # once, with every server property
            self.max_ms = int(configs.get("retention.policy.max.ms", "604800000"))

        def validate(self, request_metadata):    # per resource; raise to refuse
            value = request_metadata.resulting_configs.get("retention.ms")
            if value is not None and int(value) > self.max_ms:
                raise PolicyViolation(f"retention.ms {value} is above {self.max_ms}")

Modules: ``interfaces`` (the three interfaces, their request metadata, ``PolicyViolation``),
``loader`` (``load_policy``, ``Policies``, ``PolicyLoadError``), ``builtin`` (``ProtectInternalTopics``,
``TopicNamingPolicy``).
"""

from .interfaces import (
    AlterConfigPolicy,
    AlterConfigRequestMetadata,
    ConfigResource,
    ConfigResourceType,
    CreateTopicPolicy,
    CreateTopicRequestMetadata,
    DeleteTopicPolicy,
    DeleteTopicRequestMetadata,
    PolicyViolation,
)
from .loader import Policies, PolicyLoadError, load_policy, policy_error

__all__ = [
    "AlterConfigPolicy",
    "AlterConfigRequestMetadata",
    "ConfigResource",
    "ConfigResourceType",
    "CreateTopicPolicy",
    "CreateTopicRequestMetadata",
    "DeleteTopicPolicy",
    "DeleteTopicRequestMetadata",
    "Policies",
    "PolicyLoadError",
    "PolicyViolation",
    "load_policy",
    "policy_error",
]
