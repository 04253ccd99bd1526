"""Reading a live cluster into :class:`~ksteward.state.model.Resources`: what ``state export`` writes and what
``plan`` compares a file with. Works against ksteward and any Kafka (docs/state-files.md §Reading a cluster):

- topics: confluent-kafka's Metadata (partition count; the replication factor is partition 0's replica count),
  internal topics (``__...``) left out;
- topic configs: DescribeConfigs, keeping the entries whose source is DYNAMIC_TOPIC_CONFIG (the topic's own
  overrides, what ``kafka-configs.sh --describe`` lists as non-default); a sensitive one (value hidden) is
  left out with a note;
- ACLs: DescribeAcls with the match-everything filter (``ksteward.cli.acls.backend``, :func:`_acls`);
- client quotas: DescribeClientQuotas (api 48) with no filter, through ksteward's own client because
  confluent-kafka has no quota calls; on a connection that client cannot make (TLS, SCRAM, GSSAPI) the
  section is not read, and a note says so;
- SCRAM users: DescribeUserScramCredentials (names, mechanisms and iterations; Kafka never returns more).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ksteward.authorizer import AclBinding, AclBindingFilter
from ksteward.cli.acls.backend import WireBackend, open_backend
from ksteward.cli.admin_common import CommandError, Connection, UsageError
from ksteward.state.model import QuotaEntity, Resources, ScramUser, TopicSpec
from ksteward.state.ownership import is_internal_topic

TIMEOUT = 30.0


@dataclass
class LiveState:
    resources: Resources
    cluster_id: str | None
    #: False when a section could not be read: a plan then changes nothing in it.
    quotas_read: bool = True
    scram_read: bool = True
    notes: list[str] = field(default_factory=list)
    #: The metadata offset the ACLs were read at (DescribeAcls v4, ksteward only): ``apply``'s precondition.
    acls_read_at: int | None = None


def read_live(conn: Connection) -> LiveState:
    """Everything a state file covers, as the cluster has it now."""
    if conn.to_controller:
        raise UsageError("a state needs --bootstrap-server (controllers serve no Metadata, KIP-919)")
    from ksteward.cli.configs_backend import _confluent

    admin = _confluent(conn)
    cluster_id = admin.describe_cluster(request_timeout=TIMEOUT).result(TIMEOUT + 5).cluster_id
    notes: list[str] = []
    topics = _topics(conn, admin, notes)
    acls, read_at = _acls(conn, notes)
    quotas, quotas_read = _quotas(conn, notes)
    scram, scram_read = _scram(conn, notes)
    return LiveState(Resources(topics, acls, quotas, scram), cluster_id, quotas_read, scram_read, notes, read_at)


_EVERY_ACL = {"resource_type_filter": 1, "resource_name_filter": None, "pattern_type_filter": 1,
              "principal_filter": None, "host_filter": None, "operation": 1, "permission_type": 1}  # fmt: skip


def _acls(conn: Connection, notes: list[str]) -> tuple[frozenset[AclBinding], int | None]:
    """Every ACL, and on ksteward the metadata offset they were read at (DescribeAcls v4, docs/acl-transactions.md):
    through ksteward's own client when the connection allows it (PLAINTEXT, SASL PLAIN), which reads 100,000 ACLs
    about twice as fast as confluent-kafka's describe_acls plus the conversion of its objects; through
    confluent-kafka otherwise (TLS, SCRAM, GSSAPI). A cluster without an authorizer (SECURITY_DISABLED) has no
    ACLs: an empty set, with a note."""
    from confluent_kafka import KafkaException

    from ksteward.cli.admin_client import AdminError

    try:
        backend: Any = WireBackend(conn)
    except UsageError:
        backend = open_backend(conn)
    try:
        client = getattr(backend, "client", None)
        if client is not None and client.serves_acl_transactions():
            listed, offset = client.describe_acls_at(_EVERY_ACL)
            return frozenset(AclBinding(*a) for a in listed), offset
        return frozenset(backend.describe(AclBindingFilter.ANY)), None
    except (CommandError, KafkaException, AdminError) as exc:
        if "SECURITY_DISABLED" not in str(exc).upper():
            raise
        notes.append("the cluster has no authorizer (SECURITY_DISABLED): no ACLs")
        return frozenset(), None
    finally:
        backend.close()


def _topics(conn: Connection, admin: object, notes: list[str]) -> dict[str, TopicSpec]:
    from ksteward.cli.configs_backend import describe_many
    from ksteward.cli.configs_entities import TOPICS

    metadata = admin.list_topics(timeout=TIMEOUT)  # type: ignore[attr-defined]
    names = sorted(n for n in metadata.topics if not is_internal_topic(n))
    configs = describe_many(conn, TOPICS, names, synonyms=False) if names else {}
    out: dict[str, TopicSpec] = {}
    for name in names:
        t = metadata.topics[name]
        if t.error is not None:
            raise CommandError(f"topic {name}: {t.error}")
        first = t.partitions.get(0)
        rf = len(first.replicas) if first is not None else None
        dynamic: dict[str, str] = {}
        for e in configs.get(name, []):
            if e.source != "DYNAMIC_TOPIC_CONFIG":
                continue
            if e.value is None:
                notes.append(f"topic {name}: config {e.name} is sensitive; its value is not exported")
                continue
            dynamic[e.name] = e.value
        out[name] = TopicSpec(name, len(t.partitions), rf, dynamic)
    return out


def _quotas(conn: Connection, notes: list[str]) -> tuple[dict[QuotaEntity, dict[str, float]], bool]:
    from ksteward.cli.admin_client import AdminError
    from ksteward.cli.admin_common import ksteward_admin
    from ksteward.protocol.apis import ApiKey

    try:
        with ksteward_admin(conn) as wire:
            body = wire.request(ApiKey.DESCRIBE_CLIENT_QUOTAS, {"components": [], "strict": False}, max_version=1)
    except UsageError as exc:
        notes.append(f"client quotas not read: {exc} (confluent-kafka has no DescribeClientQuotas)")
        return {}, False
    except AdminError as exc:
        notes.append(f"client quotas not read: {exc}")
        return {}, False
    if int(body.error_code) != 0:
        notes.append(f"client quotas not read: {AdminError(int(body.error_code), body.error_message)}")
        return {}, False
    out: dict[QuotaEntity, dict[str, float]] = {}
    for entry in body.entries or ():
        entity = tuple(sorted((str(e.entity_type), e.entity_name) for e in entry.entity))
        out[entity] = {str(v.key): float(v.value) for v in entry.values}
    return out, True


def _scram(conn: Connection, notes: list[str]) -> tuple[dict[str, ScramUser], bool]:
    from confluent_kafka import KafkaException

    from ksteward.cli.admin_common import describe_kafka_error
    from ksteward.cli.configs_backend import describe_scram

    try:
        described = describe_scram(conn, None)
    except KafkaException as exc:
        notes.append(f"SCRAM users not read: {describe_kafka_error(exc)}")
        return {}, False
    out: dict[str, ScramUser] = {}
    for user, infos in described.items():
        if isinstance(infos, str):
            notes.append(f"SCRAM user {user} not read: {infos}")
            continue
        if infos:
            out[user] = ScramUser(user, dict(sorted(infos)))
    return out, True
