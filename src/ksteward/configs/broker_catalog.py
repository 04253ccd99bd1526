"""Broker configs (resource BROKER): the dynamic ones of Kafka 4.x (``DynamicBrokerConfig``) and the static
ones that shape admin behaviour (docs/topics-and-configs.md), plus the static keys ksteward itself reads and the
synonyms the log defaults have.

A key is dynamic when its :class:`~.catalog.UpdateMode` is per-broker or cluster-wide; every other key
is read-only. Keys not in this catalog are "custom" broker configs: tolerated in AlterConfigs, reported
with type UNKNOWN and, as Kafka does for a key it cannot type, as sensitive.

``validate_broker_configs`` is the broker-side check of a BROKER alter (docs/topics-and-configs.md, "Dynamic broker
configs"): its failures are INVALID_REQUEST, not INVALID_CONFIG (KAFKA-13609)::

    >>> validate_broker_configs({"log.retention.hours": "1"}, cluster_default=True).message
    'Cannot update these configs dynamically: Set(log.retention.hours)'
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Final

from kio.schema.errors import ErrorCode

from ksteward.protocol.api_error import ApiError

from .catalog import (
    ConfigKey,
    ConfigType,
    Importance,
    InvalidValue,
    Range,
    UpdateMode,
    Validator,
    ValidList,
    ValidString,
)
from .server_config import DEFAULT_PROTOCOL_MAP, SUPPORTED_SASL_MECHANISMS
from .topic_catalog import COMPRESSION_TYPES, GZIP_LEVEL, LONG_MAX

__all__ = [
    "BROKER_CONFIGS",
    "BROKER_QUOTA_CONFIGS",
    "DYNAMIC_SECURITY_CONFIGS",
    "UNIT_MS",
    "broker_config_key",
    "broker_synonyms",
    "dynamic_layer",
    "listener_base",
    "validate_broker_configs",
    "validate_broker_reconfiguration",
]

T = ConfigType
HIGH, MEDIUM, LOW = Importance.HIGH, Importance.MEDIUM, Importance.LOW
RO, PB, CW = UpdateMode.READ_ONLY, UpdateMode.PER_BROKER, UpdateMode.CLUSTER_WIDE
INT_MAX: Final = str(2**31 - 1)
DEFAULT_PRINCIPAL_BUILDER: Final = "org.apache.kafka.common.security.authenticator.DefaultKafkaPrincipalBuilder"


def _k(
    name: str, type_: ConfigType, default: str | None, validator: Validator | None, importance: Importance,
    mode: UpdateMode, doc: str,
) -> ConfigKey:  # fmt: skip
    return ConfigKey(name, type_, default, validator, importance, doc, mode)


def _ge(n: int) -> Range:
    return Range.at_least(n)


_KEYS: Final = (
    # Log defaults: the first broker synonym of each topic config (``ServerTopicConfigSynonyms``), all cluster-wide.
    _k("log.segment.bytes", T.INT, "1073741824", _ge(1048576), HIGH, CW, "The maximum size of a single log file."),
    _k("log.roll.ms", T.LONG, None, None, HIGH, CW,
       "The maximum time before a new log segment is rolled out (in milliseconds)."),
    _k("log.roll.jitter.ms", T.LONG, None, None, HIGH, CW,
       "The maximum jitter to subtract from logRollTimeMillis (in milliseconds)."),
    _k("log.index.size.max.bytes", T.INT, "10485760", _ge(4), MEDIUM, CW,
       "The maximum size in bytes of the offset index."),
    _k("log.flush.interval.messages", T.LONG, LONG_MAX, _ge(1), HIGH, CW,
       "The number of messages accumulated on a log partition before messages are flushed to disk."),
    _k("log.flush.interval.ms", T.LONG, None, None, HIGH, CW,
       "The maximum time in ms that a message in any topic is kept in memory before flushed to disk."),
    _k("log.retention.bytes", T.LONG, "-1", None, HIGH, CW, "The maximum size of the log before deleting it."),
    _k("log.retention.ms", T.LONG, None, None, HIGH, CW,
       "The number of milliseconds to keep a log file before deleting it; if not set, log.retention.minutes is used."),
    _k("message.max.bytes", T.INT, "1048588", _ge(0), HIGH, CW,
       "The largest record batch size allowed by Kafka (after compression if compression is enabled)."),
    _k("log.index.interval.bytes", T.INT, "4096", _ge(0), MEDIUM, CW,
       "The interval with which we add an entry to the offset index."),
    _k("log.cleaner.delete.retention.ms", T.LONG, "86400000", _ge(0), MEDIUM, CW,
       "The amount of time to retain tombstone message markers for log compacted topics."),
    _k("log.cleaner.min.compaction.lag.ms", T.LONG, "0", _ge(0), MEDIUM, CW,
       "The minimum time a message will remain uncompacted in the log."),
    _k("log.cleaner.max.compaction.lag.ms", T.LONG, LONG_MAX, _ge(1), MEDIUM, CW,
       "The maximum time a message will remain ineligible for compaction in the log."),
    _k("log.segment.delete.delay.ms", T.LONG, "60000", _ge(0), HIGH, CW,
       "The amount of time to wait before deleting a file from the filesystem."),
    _k("log.cleaner.min.cleanable.ratio", T.DOUBLE, "0.5", Range.between(0, 1), MEDIUM, CW,
       "The minimum ratio of dirty log to total log for a log to eligible for cleaning."),
    _k("log.cleanup.policy", T.LIST, "delete", ValidList(("compact", "delete")), MEDIUM, CW,
       "The default cleanup policy for segments beyond the retention window."),
    _k("unclean.leader.election.enable", T.BOOLEAN, "false", None, HIGH, CW,
       "Indicates whether to enable replicas not in the ISR set to be elected as leader as a last resort."),
    _k("min.insync.replicas", T.INT, "1", _ge(1), HIGH, CW,
       "The minimum number of replicas that must acknowledge a write when a producer sets acks to \"all\"."),
    _k("compression.type", T.STRING, "producer", ValidString(COMPRESSION_TYPES), HIGH, CW,
       "Specify the final compression type for a given topic."),
    _k("compression.gzip.level", T.INT, "-1", GZIP_LEVEL, MEDIUM, CW,
       "The compression level to use if compression.type is set to gzip."),
    _k("compression.lz4.level", T.INT, "9", Range.between(1, 17), MEDIUM, CW,
       "The compression level to use if compression.type is set to lz4."),
    _k("compression.zstd.level", T.INT, "3", Range.between(-131072, 22), MEDIUM, CW,
       "The compression level to use if compression.type is set to zstd."),
    _k("log.preallocate", T.BOOLEAN, "false", None, MEDIUM, CW, "Should pre allocate file when create new segment?"),
    _k("log.message.timestamp.type", T.STRING, "CreateTime", ValidString(("CreateTime", "LogAppendTime")), MEDIUM, CW,
       "Define whether the timestamp in the message is message create time or log append time."),
    _k("log.message.timestamp.before.max.ms", T.LONG, LONG_MAX, _ge(0), MEDIUM, CW,
       "The allowable timestamp difference between the broker's timestamp and an earlier message timestamp."),
    _k("log.message.timestamp.after.max.ms", T.LONG, "3600000", _ge(0), MEDIUM, CW,
       "The allowable timestamp difference between a later message timestamp and the broker's timestamp."),
    _k("log.local.retention.ms", T.LONG, "-2", _ge(-2), MEDIUM, CW,
       "The number of milliseconds to keep the local log segments before it gets eligible for deletion."),
    _k("log.local.retention.bytes", T.LONG, "-2", _ge(-2), MEDIUM, CW,
       "The maximum size of local log segments that can grow for a partition before it gets eligible for deletion."),
    # Log cleaner
    _k("log.cleaner.threads", T.INT, "1", _ge(0), MEDIUM, CW,
       "The number of background threads to use for log cleaning."),
    _k("log.cleaner.dedupe.buffer.size", T.LONG, "134217728", None, MEDIUM, CW,
       "The total memory used for log deduplication across all cleaner threads."),
    _k("log.cleaner.io.buffer.load.factor", T.DOUBLE, "0.9", None, MEDIUM, CW,
       "Log cleaner dedupe buffer load factor."),
    _k("log.cleaner.io.buffer.size", T.INT, "524288", _ge(0), MEDIUM, CW,
       "The total memory used for log cleaner I/O buffers across all cleaner threads."),
    _k("log.cleaner.io.max.bytes.per.second", T.DOUBLE, "1.7976931348623157E308", None, MEDIUM, CW,
       "The log cleaner will be throttled so that the sum of its read and write i/o will be less than this value."),
    _k("log.cleaner.backoff.ms", T.LONG, "15000", _ge(0), MEDIUM, CW,
       "The amount of time to sleep when there are no logs to clean."),
    # Thread pools
    _k("num.io.threads", T.INT, "8", _ge(1), HIGH, CW,
       "The number of threads that the server uses for processing requests."),
    _k("num.replica.fetchers", T.INT, "1", None, HIGH, CW,
       "Number of fetcher threads used to replicate records from each source broker."),
    _k("num.recovery.threads.per.data.dir", T.INT, "1", _ge(1), HIGH, CW,
       "The number of threads per data directory to be used for log recovery at startup and flushing at shutdown."),
    _k("background.threads", T.INT, "10", _ge(1), HIGH, CW,
       "The number of threads to use for various background processing tasks."),
    _k("num.network.threads", T.INT, "3", _ge(1), HIGH, CW,
       "The number of threads that the server uses for receiving requests from the network and sending responses."),
    # Connections
    _k("max.connections", T.INT, INT_MAX, _ge(0), MEDIUM, CW,
       "The maximum number of connections we allow in the broker at any time."),
    _k("max.connection.creation.rate", T.INT, INT_MAX, _ge(0), MEDIUM, CW,
       "The maximum connection creation rate we allow in the broker at any time."),
    _k("max.connections.per.ip", T.INT, INT_MAX, _ge(0), MEDIUM, CW,
       "The maximum number of connections we allow from each ip address."),
    _k("max.connections.per.ip.overrides", T.STRING, "", None, MEDIUM, CW,
       "A comma-separated list of per-ip or hostname overrides to the default maximum number of connections."),
    # Listeners and security: per-broker only. advertised.listeners is read-only since Kafka 4.0 (KAFKA-18405
    # removed it from DynamicListenerConfig.ReconfigurableConfigs): it is listed with the static keys below.
    _k("listeners", T.STRING, "PLAINTEXT://:9092", None, HIGH, PB,
       "Listener List - Comma-separated list of URIs we will listen on and the listener names."),
    _k("listener.security.protocol.map", T.STRING, DEFAULT_PROTOCOL_MAP, None, LOW, PB,
       "Map between listener names and security protocols."),
    _k("principal.builder.class", T.CLASS, DEFAULT_PRINCIPAL_BUILDER, None, MEDIUM, PB,
       "The fully qualified name of a class that implements the KafkaPrincipalBuilder interface."),
    _k("ssl.keystore.type", T.STRING, "JKS", None, MEDIUM, PB, "The file format of the key store file."),
    _k("ssl.keystore.location", T.STRING, None, None, MEDIUM, PB, "The location of the key store file."),
    _k("ssl.keystore.password", T.PASSWORD, None, None, MEDIUM, PB, "The store password for the key store file."),
    _k("ssl.key.password", T.PASSWORD, None, None, MEDIUM, PB,
       "The password of the private key in the key store file or the PEM key specified in 'ssl.keystore.key'."),
    _k("ssl.keystore.certificate.chain", T.PASSWORD, None, None, MEDIUM, PB,
       "Certificate chain in the format specified by 'ssl.keystore.type'."),
    _k("ssl.keystore.key", T.PASSWORD, None, None, MEDIUM, PB,
       "Private key in the format specified by 'ssl.keystore.type'."),
    _k("ssl.truststore.type", T.STRING, "JKS", None, MEDIUM, PB, "The file format of the trust store file."),
    _k("ssl.truststore.location", T.STRING, None, None, MEDIUM, PB, "The location of the trust store file."),
    _k("ssl.truststore.password", T.PASSWORD, None, None, MEDIUM, PB, "The password for the trust store file."),
    _k("ssl.truststore.certificates", T.PASSWORD, None, None, MEDIUM, PB,
       "Trusted certificates in the format specified by 'ssl.truststore.type'."),
    _k("ssl.protocol", T.STRING, "TLSv1.3", None, MEDIUM, PB, "The SSL protocol used to generate the SSLContext."),
    _k("ssl.provider", T.STRING, None, None, MEDIUM, PB, "The name of the security provider used for SSL connections."),
    _k("ssl.cipher.suites", T.LIST, "", None, MEDIUM, PB, "A list of cipher suites."),
    _k("ssl.enabled.protocols", T.LIST, "TLSv1.2,TLSv1.3", None, MEDIUM, PB,
       "The list of protocols enabled for SSL connections."),
    _k("ssl.keymanager.algorithm", T.STRING, "SunX509", None, MEDIUM, PB,
       "The algorithm used by key manager factory for SSL connections."),
    _k("ssl.trustmanager.algorithm", T.STRING, "PKIX", None, MEDIUM, PB,
       "The algorithm used by trust manager factory for SSL connections."),
    _k("ssl.endpoint.identification.algorithm", T.STRING, "https", None, LOW, PB,
       "The endpoint identification algorithm to validate server hostname using server certificate."),
    _k("ssl.secure.random.implementation", T.STRING, None, None, LOW, PB,
       "The SecureRandom PRNG implementation to use for SSL cryptography operations."),
    _k("ssl.client.auth", T.STRING, "none", ValidString(("required", "requested", "none")), MEDIUM, PB,
       "Configures kafka broker to request client authentication."),
    _k("ssl.engine.factory.class", T.CLASS, None, None, LOW, PB,
       "The class of type org.apache.kafka.common.security.auth.SslEngineFactory to provide SSLEngine objects."),
    _k("sasl.mechanism.inter.broker.protocol", T.STRING, "GSSAPI", None, MEDIUM, PB,
       "SASL mechanism used for inter-broker communication."),
    _k("sasl.jaas.config", T.PASSWORD, None, None, MEDIUM, PB,
       "JAAS login context parameters for SASL connections in the format used by JAAS configuration files."),
    # ksteward's default (Kafka's is GSSAPI, which ksteward does not implement)
    _k("sasl.enabled.mechanisms", T.LIST, ",".join(SUPPORTED_SASL_MECHANISMS), None, MEDIUM, PB,
       "The list of SASL mechanisms enabled in the Kafka server."),
    _k("sasl.kerberos.service.name", T.STRING, None, None, MEDIUM, PB,
       "The Kerberos principal name that Kafka runs as."),
    _k("sasl.kerberos.kinit.cmd", T.STRING, "/usr/bin/kinit", None, MEDIUM, PB, "Kerberos kinit command path."),
    _k("sasl.kerberos.ticket.renew.window.factor", T.DOUBLE, "0.8", None, MEDIUM, PB,
       "Login thread will sleep until the specified window factor of time from last refresh to ticket's expiry."),
    _k("sasl.kerberos.ticket.renew.jitter", T.DOUBLE, "0.05", None, MEDIUM, PB,
       "Percentage of random jitter added to the renewal time."),
    _k("sasl.kerberos.min.time.before.relogin", T.LONG, "60000", None, MEDIUM, PB,
       "Login thread sleep time between refresh attempts."),
    _k("sasl.kerberos.principal.to.local.rules", T.LIST, "DEFAULT", None, MEDIUM, PB,
       "A list of rules for mapping from principal names to short names (typically operating system usernames)."),
    _k("sasl.login.refresh.window.factor", T.DOUBLE, "0.8", None, MEDIUM, PB,
       "Login refresh thread will sleep until this window factor of the credential's lifetime has been reached."),
    _k("sasl.login.refresh.window.jitter", T.DOUBLE, "0.05", None, MEDIUM, PB,
       "The maximum random jitter relative to the credential's lifetime added to the login refresh sleep time."),
    _k("sasl.login.refresh.min.period.seconds", T.SHORT, "60", None, MEDIUM, PB,
       "The desired minimum time for the login refresh thread to wait before refreshing a credential, in seconds."),
    _k("sasl.login.refresh.buffer.seconds", T.SHORT, "300", None, MEDIUM, PB,
       "The amount of buffer time before credential expiration to maintain when refreshing a credential, in seconds."),
    # Other dynamic keys
    _k("metric.reporters", T.LIST, "", None, LOW, CW, "A list of classes to use as metrics reporters."),
    _k("producer.id.expiration.ms", T.INT, "86400000", _ge(1), LOW, CW,
       "The time in ms that a topic partition leader will wait before expiring producer IDs."),
    _k("transaction.partition.verification.enable", T.BOOLEAN, "true", None, LOW, CW,
       "Enable verification that the partition has been added to the transaction before transactional writes."),
    _k("remote.log.index.file.cache.total.size.bytes", T.LONG, "1073741824", _ge(1), LOW, CW,
       "The total size of the space allocated to store index files fetched from remote storage in the local storage."),
    _k("remote.fetch.max.wait.ms", T.INT, "500", _ge(1), MEDIUM, CW,
       "The maximum amount of time the server will wait before answering the remote fetch request."),
    _k("remote.log.manager.copy.max.bytes.per.second", T.LONG, LONG_MAX, _ge(1), MEDIUM, CW,
       "The maximum number of bytes that can be copied from local storage to remote storage per second."),
    _k("remote.log.manager.fetch.max.bytes.per.second", T.LONG, LONG_MAX, _ge(1), MEDIUM, CW,
       "The maximum number of bytes that can be fetched from remote storage to local storage per second."),
    _k("remote.list.offsets.request.timeout.ms", T.LONG, "30000", _ge(1), MEDIUM, CW,
       "The maximum time the server waits for a remote list offsets request to complete."),
    # Remote log thread pools: dynamic since Kafka 4.0 (KAFKA-17928), checked like the other thread pools
    _k("remote.log.manager.copier.thread.pool.size", T.INT, "10", _ge(1), MEDIUM, CW,
       "Size of the thread pool used in scheduling tasks to copy segments."),
    _k("remote.log.manager.expiration.thread.pool.size", T.INT, "10", _ge(1), MEDIUM, CW,
       "Size of the thread pool used in scheduling tasks to clean up the expired remote log segments."),
    _k("remote.log.reader.threads", T.INT, "10", _ge(1), MEDIUM, CW,
       "Size of the thread pool that is allocated for handling remote log reads."),
    # Broker quotas: dynamic only, not in server.properties (DynamicConfig.Broker)
    _k("leader.replication.throttled.rate", T.LONG, LONG_MAX, _ge(0), MEDIUM, CW,
       "A long representing the upper bound (bytes/sec) on replication traffic for leaders enumerated in the "
       "leader.replication.throttled.replicas topic config."),
    _k("follower.replication.throttled.rate", T.LONG, LONG_MAX, _ge(0), MEDIUM, CW,
       "A long representing the upper bound (bytes/sec) on replication traffic for followers enumerated in the "
       "follower.replication.throttled.replicas topic config."),
    _k("replica.alter.log.dirs.io.max.bytes.per.second", T.LONG, LONG_MAX, _ge(0), MEDIUM, CW,
       "A long representing the upper bound (bytes/sec) on disk IO used for moving replica between log directories."),
    # Static (read-only): the controller-side settings of docs/topics-and-configs.md, the synonyms of the log
    # defaults, and the keys ksteward reads at start-up
    _k("num.partitions", T.INT, "1", _ge(1), MEDIUM, RO, "The default number of log partitions per topic."),
    _k("default.replication.factor", T.INT, "1", None, MEDIUM, RO,
       "The replication factor for automatically created topics, and for topics created with -1 as the "
       "replication factor."),
    _k("delete.topic.enable", T.BOOLEAN, "true", None, HIGH, RO, "Enables delete topic."),
    _k("auto.create.topics.enable", T.BOOLEAN, "true", None, HIGH, RO, "Enable auto creation of topic on the server."),
    _k("create.topic.policy.class.name", T.CLASS, None, None, LOW, RO,
       "The create topic policy class that should be used for validation."),
    _k("alter.config.policy.class.name", T.CLASS, None, None, LOW, RO,
       "The alter configs policy class that should be used for validation."),
    _k("controller.socket.timeout.ms", T.INT, "30000", None, MEDIUM, RO,
       "The socket timeout for controller-to-broker channels."),
    _k("request.timeout.ms", T.INT, "30000", None, HIGH, RO,
       "The maximum amount of time the client will wait for the response of a request."),
    _k("controller.listener.names", T.STRING, None, None, HIGH, RO,
       "A comma-separated list of the names of the listeners used by the controller."),
    _k("advertised.listeners", T.STRING, None, None, HIGH, RO,
       "Listeners to publish for clients to use, if different than the listeners config property."),
    _k("controller.quorum.voters", T.LIST, "", None, HIGH, RO,
       "Map of id/endpoint information for the set of voters in a comma-separated list of {id}@{host}:{port} "
       "entries."),
    _k("controller.quorum.bootstrap.servers", T.LIST, "", None, HIGH, RO,
       "List of endpoints to use for bootstrapping the cluster metadata. The endpoints are specified in "
       "comma-separated list of {host}:{port} entries."),
    _k("log.roll.hours", T.INT, "168", _ge(1), HIGH, RO,
       "The maximum time before a new log segment is rolled out (in hours), secondary to log.roll.ms property."),
    _k("log.roll.jitter.hours", T.INT, "0", _ge(0), HIGH, RO,
       "The maximum jitter to subtract from logRollTimeMillis (in hours), secondary to log.roll.jitter.ms property."),
    _k("log.retention.minutes", T.INT, None, None, HIGH, RO,
       "The number of minutes to keep a log file before deleting it, secondary to log.retention.ms property."),
    _k("log.retention.hours", T.INT, "168", None, HIGH, RO,
       "The number of hours to keep a log file before deleting it, tertiary to log.retention.ms property."),
    _k("log.flush.scheduler.interval.ms", T.LONG, LONG_MAX, None, HIGH, RO,
       "The frequency in ms that the log flusher checks whether any log needs to be flushed to disk."),
    _k("remote.log.storage.system.enable", T.BOOLEAN, "false", None, MEDIUM, RO,
       "Whether to enable tiered storage functionality in a broker or not."),
    _k("process.roles", T.LIST, "", ValidList(("broker", "controller")), HIGH, RO,
       "The roles that this process plays: 'broker', 'controller', or 'broker,controller' if it is both."),
    _k("node.id", T.INT, "-1", None, HIGH, RO, "The node ID associated with the roles this process is playing."),
    _k("inter.broker.listener.name", T.STRING, None, None, MEDIUM, RO,
       "Name of listener used for communication between brokers."),
    _k("metadata.log.dir", T.STRING, None, None, HIGH, RO,
       "This configuration determines where we put the metadata log for clusters in KRaft mode."),
    _k("log.dirs", T.STRING, None, None, HIGH, RO,
       "A comma-separated list of the directories where the log data is stored."),
    _k("log.dir", T.STRING, "/tmp/kafka-logs", None, HIGH, RO,
       "The directory in which the log data is kept (supplemental for log.dirs property)."),
    _k("authorizer.class.name", T.STRING, "", None, LOW, RO,
       "The fully qualified name of a class that implements the Authorizer interface, used for authorization."),
    _k("socket.request.max.bytes", T.INT, "104857600", _ge(1), HIGH, RO,
       "The maximum number of bytes in a socket request."),
    _k("metadata.log.max.record.bytes.between.snapshots", T.LONG, "20971520", _ge(1), HIGH, RO,
       "The maximum number of bytes in the log between the latest snapshot and the high-watermark before a "
       "new snapshot."),
    _k("metadata.log.segment.bytes", T.INT, "1073741824", _ge(12), HIGH, RO,
       "The maximum size of a single metadata log file."),
    _k("metadata.max.idle.interval.ms", T.INT, "500", _ge(0), LOW, RO,
       "This configuration controls how often the active controller should write no-op records to the metadata "
       "partition. If the value is 0, no-op records are not appended to the metadata partition. The default value "
       "is 500"),
    _k("connection.failed.authentication.delay.ms", T.INT, "100", _ge(0), LOW, RO,
       "Connection close delay on failed authentication, in milliseconds."),
    _k("connections.max.idle.ms", T.LONG, "600000", None, MEDIUM, RO,
       "Idle connections timeout: the server socket processor threads close the connections that idle more "
       "than this."),
    # Delegation tokens (KIP-48; Kafka's DelegationTokenManagerConfigs): read-only, as in Kafka.
    _k("delegation.token.secret.key", T.PASSWORD, None, None, MEDIUM, RO,
       "Secret key to generate and verify delegation tokens. The same key must be configured across all the "
       "brokers and controllers. If the key is not set or set to empty string, delegation token support is disabled."),
    _k("delegation.token.max.lifetime.ms", T.LONG, "604800000", _ge(1), MEDIUM, RO,
       "The token has a maximum lifetime beyond which it cannot be renewed anymore. Default value 7 days."),
    _k("delegation.token.expiry.time.ms", T.LONG, "86400000", _ge(1), MEDIUM, RO,
       "The token validity time in milliseconds before the token needs to be renewed. Default value 1 day."),
    _k("delegation.token.expiry.check.interval.ms", T.LONG, "3600000", _ge(1), LOW, RO,
       "Scan interval to remove expired delegation tokens."),
    _k("sasl.server.max.receive.size", T.INT, "524288", None, MEDIUM, RO,
       "The maximum receive size allowed before and during initial SASL authentication."),
    _k("broker.session.timeout.ms", T.INT, "9000", None, HIGH, RO,
       "The length of time in milliseconds that a broker lease lasts if no heartbeats are made. Used when "
       "running in KRaft mode. Only applies to controllers."),
    _k("broker.heartbeat.interval.ms", T.INT, "2000", None, MEDIUM, RO,
       "The length of time in milliseconds between broker heartbeats. Used when running in KRaft mode."),
    _k("max.request.partition.size.limit", T.INT, "2000", _ge(1), LOW, RO,
       "The maximum number of partitions can be served in one request."),
)  # fmt: skip

BROKER_CONFIGS: Final[Mapping[str, ConfigKey]] = MappingProxyType({k.name: k for k in _KEYS})
"""Broker configs by name."""

BROKER_QUOTA_CONFIGS: Final = frozenset(
    {
        "leader.replication.throttled.rate",
        "follower.replication.throttled.rate",
        "replica.alter.log.dirs.io.max.bytes.per.second",
    }
)
"""Dynamic-only keys outside ``KafkaConfig``: no built-in default is reported, and they are listed only when set."""

DYNAMIC_SECURITY_CONFIGS: Final = frozenset(
    # SslConfigs.RECONFIGURABLE_CONFIGS: dynamic only with a listener prefix
    {
        "ssl.keystore.type", "ssl.keystore.location", "ssl.keystore.password", "ssl.key.password",
        "ssl.truststore.type", "ssl.truststore.location", "ssl.truststore.password",
        "ssl.keystore.certificate.chain", "ssl.keystore.key", "ssl.truststore.certificates",
    }
)  # fmt: skip
_CLUSTER_LEVEL_LISTENER_CONFIGS: Final = frozenset(
    {"max.connections", "max.connection.creation.rate", "num.network.threads"}
)
_PER_BROKER_CONFIGS: Final = frozenset(k.name for k in _KEYS if k.update_mode is PB)
# Listener configs that are also scoped by SASL mechanism: listener.name.<l>.<mechanism>.<config>
_LISTENER_MECHANISM_CONFIGS: Final = (
    "sasl.jaas.config", "sasl.login.callback.handler.class", "sasl.login.class",
    "sasl.server.callback.handler.class", "connections.max.reauth.ms",
)  # fmt: skip
_LISTENER_CONFIG = re.compile(r"listener\.name\.[^.]*\.(.*)", re.DOTALL)
_VARIANTS: Final = (
    ("log.roll.ms", "log.roll.hours"),
    ("log.roll.jitter.ms", "log.roll.jitter.hours"),
    ("log.retention.ms", "log.retention.minutes", "log.retention.hours"),
)

UNIT_MS: Final[Mapping[str, int]] = MappingProxyType(
    {"log.roll.hours": 3_600_000, "log.roll.jitter.hours": 3_600_000, "log.retention.minutes": 60_000,
     "log.retention.hours": 3_600_000}
)  # fmt: skip
"""Broker keys in hours or minutes, and their factor to milliseconds."""


def listener_base(name: str) -> str | None:
    """``<config>`` of a ``listener.name.<listener>.<config>`` key; None for any other key."""
    m = _LISTENER_CONFIG.fullmatch(name)
    return m[1] if m else None


def broker_synonyms(name: str) -> tuple[str, ...]:
    """Kafka's ``brokerConfigSynonyms(name, matchListenerOverride=true)``: the names that set the same
    config, highest priority first, ``name`` included."""
    for variants in _VARIANTS:
        if name in variants:
            return variants
    if name == "log.flush.interval.ms":  # falls back to the scheduler interval
        return (name, "log.flush.scheduler.interval.ms")
    base = listener_base(name)
    if base is not None:
        mechanism_config = next((c for c in _LISTENER_MECHANISM_CONFIGS if base.endswith(c)), None)
        return (name, mechanism_config or base)
    return (name,)


def broker_config_key(name: str) -> ConfigKey | None:
    """The definition that types ``name``: its own, else its listener base's (``KafkaConfig.configType``)."""
    key = BROKER_CONFIGS.get(name)
    if key is None:
        key = next((BROKER_CONFIGS[s] for s in broker_synonyms(name) if s in BROKER_CONFIGS), None)
    return key


def _scala_set(names: Iterable[str]) -> str:
    return "Set(" + ", ".join(names) + ")"


def _per_broker_only(name: str) -> bool:
    base = listener_base(name)
    return name in _PER_BROKER_CONFIGS or (base is not None and base not in _CLUSTER_LEVEL_LISTENER_CONFIGS)


def validate_broker_configs(configs: Mapping[str, str], *, cluster_default: bool) -> ApiError | None:
    """The broker's check of a BROKER resource's resulting dynamic configs (``DynamicBrokerConfig.validate``):
    no read-only keys, security keys only listener-prefixed, values of their type, no per-broker keys on the
    cluster default (resource ``""``). Unknown keys are custom configs and pass. Failures are INVALID_REQUEST."""

    def invalid(message: str) -> ApiError:
        return ApiError(ErrorCode.invalid_request, message)

    read_only = [n for n in configs if n in BROKER_CONFIGS and not BROKER_CONFIGS[n].is_dynamic]
    if read_only:
        return invalid(f"Cannot update these configs dynamically: {_scala_set(read_only)}")
    unprefixed = [n for n in configs if n in DYNAMIC_SECURITY_CONFIGS]
    if unprefixed:
        return invalid(
            "These security configs can be dynamically updated only per-listener using the listener prefix: "
            + _scala_set(unprefixed)
        )
    for name, value in configs.items():
        key = BROKER_CONFIGS.get(listener_base(name) or name)
        if key is not None and key.is_dynamic:
            try:
                key.parse(value)
            except InvalidValue as e:
                return invalid(e.message)
    per_broker = [n for n in configs if _per_broker_only(n)]
    if cluster_default and per_broker:
        return invalid(
            "Cannot update these configs at default cluster level, broker id must be specified: "
            + _scala_set(per_broker)
        )
    return None


def dynamic_layer(configs: Mapping[str, str], *, cluster_default: bool) -> dict[str, str]:
    """The stored dynamic configs a broker applies (``fromPersistentProps``): read-only keys, unprefixed
    security keys and, on the cluster default, per-broker keys are ignored; custom keys are kept."""
    return {
        name: value
        for name, value in configs.items()
        if not (name in BROKER_CONFIGS and not BROKER_CONFIGS[name].is_dynamic)
        and name not in DYNAMIC_SECURITY_CONFIGS
        and not (cluster_default and _per_broker_only(name))
    }


_THREAD_POOLS: Final = (
    "num.io.threads", "num.replica.fetchers", "num.recovery.threads.per.data.dir", "background.threads",
    "remote.log.manager.copier.thread.pool.size", "remote.log.manager.expiration.thread.pool.size",
    "remote.log.reader.threads",
)  # fmt: skip
_CLEANER_CONFIGS: Final = (
    "log.cleaner.threads", "log.cleaner.dedupe.buffer.size", "log.cleaner.io.buffer.load.factor",
    "log.cleaner.io.buffer.size", "log.cleaner.io.max.bytes.per.second", "log.cleaner.backoff.ms",
)  # fmt: skip


def validate_broker_reconfiguration(current: Mapping[str, str], proposed: Mapping[str, str]) -> ApiError | None:
    """The component checks a broker runs on a change (``DynamicThreadPool.validateReconfiguration``): the
    thread pools and the log cleaner may shrink to half and grow to double. ``current`` and ``proposed``
    are the node's effective values (``ConfigResolver.broker_values``) before and after. The failure is
    INVALID_REQUEST, in the shape Kafka's wrapping ``ConfigException("Invalid dynamic configuration", e)``
    gives it."""

    def value(values: Mapping[str, str], name: str) -> int:
        key = BROKER_CONFIGS[name]
        try:
            parsed = key.parse(values.get(name, key.default or ""))
        except InvalidValue:
            parsed = key.parse(key.default or "")
        assert isinstance(parsed, int)
        return parsed

    def failed(message: str) -> ApiError:
        return ApiError(
            ErrorCode.invalid_request,
            f"Invalid value org.apache.kafka.common.config.ConfigException: {message} "
            "for configuration Invalid dynamic configuration",
        )

    for name in _THREAD_POOLS:
        old, new = value(current, name), value(proposed, name)
        if new != old:
            prefix = f"Dynamic thread count update validation failed for {name}={new}"
            if new <= 0:
                return failed(f"{prefix}, value should be at least 1")
            if new < old // 2:
                return failed(f"{prefix}, value should be at least half the current value {old}")
            if new > old * 2:
                return failed(f"{prefix}, value should not be greater than double the current value {old}")
    if any(current.get(n) != proposed.get(n) for n in _CLEANER_CONFIGS):
        old, new = value(current, "log.cleaner.threads"), value(proposed, "log.cleaner.threads")
        if new < 1:
            return failed("Log cleaner threads should be at least 1")
        if new < old // 2:
            return failed(f"Log cleaner threads cannot be reduced to less than half the current value {old}")
        if new > old * 2:
            return failed(f"Log cleaner threads cannot be increased to more than double the current value {old}")
    return None
