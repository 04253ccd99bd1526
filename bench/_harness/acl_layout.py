"""The ACL layouts of Kafka's ``AuthorizerBenchmark`` (``jmh-benchmarks``, ``org.apache.kafka.jmh.acl``),
built ACL for ACL as its ``prepareAclCache`` does, as ``AclBinding`` values.

The benchmark's layout: resources ``foo-bar35_resource-<i>`` (every 10th a GROUP, every 5th PREFIXED),
and per resource ``acls_per_resource`` principals ``User:test-user``, ``User:test-user1``, ... with a
READ ALLOW from host ``*``, plus a READ DENY with probability ``deny_pct``; then a TOPIC PREFIXED
``foo-bar35_resource-`` with allows (and random denies) for hosts 127.0.0.0 to 127.0.0.9; then a TOPIC
LITERAL ``*`` with ``resources / 10`` host-specific allows whose hosts (``127.0.0<i>``, no dot) never
match a client. That last "wildcard section" is what makes Kafka's ``testAuthorizer`` slow: every
authorize scans it. The *realistic* layout drops it; everything else is the same.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from ksteward.authorizer import AclBinding, AclOperation, AclPermissionType, PatternType, ResourceType

PREFIX = "foo-bar35_resource-"
PRINCIPAL = "User:test-user"
SEED = 20241025
TOPIC, GROUP = ResourceType.TOPIC, ResourceType.GROUP
LITERAL, PREFIXED = PatternType.LITERAL, PatternType.PREFIXED
READ, ALLOW, DENY = AclOperation.READ, AclPermissionType.ALLOW, AclPermissionType.DENY


@dataclass(frozen=True)
class Layout:
    name: str
    resources: int
    acls_per_resource: int
    deny_pct: float
    wildcard_section: bool  # False: the realistic layout


def build_layout(layout: Layout, seed: int = SEED) -> list[AclBinding]:
    """``AuthorizerBenchmark.prepareAclCache``, ACL for ACL; ``wildcard_section=False`` drops the
    ``resources/10`` host-specific ACLs on TOPIC LITERAL ``*``."""
    rng = random.Random(seed)

    def deny() -> bool:
        return rng.random() * 100.0 - 1e-9 < layout.deny_pct

    principals = [PRINCIPAL] + [f"{PRINCIPAL}{i}" for i in range(1, layout.acls_per_resource)]
    acls: list[AclBinding] = []
    add = acls.append
    for rid in range(layout.resources):
        rt = GROUP if rid % 10 == 0 else TOPIC
        pattern = PREFIXED if rid % 5 == 0 else LITERAL
        name = PREFIX + str(rid)
        for principal in principals:
            add(AclBinding(rt, name, pattern, principal, "*", READ, ALLOW))
            if deny():
                add(AclBinding(rt, name, pattern, principal, "*", READ, DENY))
    for host_id in range(10):
        host = f"127.0.0.{host_id}"
        add(AclBinding(TOPIC, PREFIX, PREFIXED, PRINCIPAL, host, READ, ALLOW))
        if deny():
            add(AclBinding(TOPIC, PREFIX, PREFIXED, PRINCIPAL, host, READ, DENY))
    if layout.wildcard_section:
        for host_id in range(layout.resources // 10):
            host = f"127.0.0{host_id}"  # no dot: never a real address, as in Kafka's benchmark
            add(AclBinding(TOPIC, "*", LITERAL, PRINCIPAL, host, READ, ALLOW))
            if deny():
                add(AclBinding(TOPIC, "*", LITERAL, PRINCIPAL, host, READ, DENY))
    return acls
