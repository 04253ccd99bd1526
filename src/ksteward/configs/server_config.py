"""The static server configuration: Kafka's ``server.properties`` keys, typed and validated.

Every key that is read here keeps its Kafka name. Keys ksteward does not interpret are kept as
static broker configs (``ServerConfig.static``), as Kafka keeps them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

from ksteward.configs.quorum_config import QuorumConfig
from ksteward.protocol.framing import DEFAULT_MAX_FRAME_BYTES

STANDARD_AUTHORIZER_NAMES = frozenset(
    {"org.apache.kafka.metadata.authorizer.StandardAuthorizer", "ksteward.authorizer.StandardAuthorizer"}
)
SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
SUPPORTED_SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
DEFAULT_PROTOCOL_MAP = "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL"
_LISTENER = re.compile(r"^(?P<name>[A-Za-z0-9_]+)://(?P<host>\[[0-9a-fA-F:.]+\]|[^:/\[\]]*):(?P<port>\d+)$")
_LISTENER_NAME = re.compile(r"^[A-Za-z0-9_]+$")
_HOST_PORT = re.compile(r"^(?P<host>\[[0-9a-fA-F:.]+\]|[^:/@\[\]]+):(?P<port>\d+)$")


class ConfigError(ValueError):
    """A configuration Kafka would refuse. The message names the key and the problem."""


@dataclass(frozen=True, slots=True)
class Endpoint:
    name: str  # the listener name, upper case (PLAINTEXT, CONTROLLER, ...)
    host: str  # "" binds every interface
    port: int
    security_protocol: str

    @property
    def uses_sasl(self) -> bool:
        return self.security_protocol.startswith("SASL_")

    @property
    def uses_ssl(self) -> bool:
        return self.security_protocol in ("SSL", "SASL_SSL")

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.name}://{host}:{self.port}"


@dataclass(frozen=True, slots=True)
class QuorumVoter:
    """One entry of ``controller.quorum.voters``: ``{id}@{host}:{port}``."""

    node_id: int
    host: str
    port: int


@dataclass(frozen=True, slots=True)
class SslSettings:
    keystore_location: str  # PEM file: private key and certificate chain
    key_password: str | None = field(repr=False)
    truststore_location: str | None
    client_auth: str  # none | requested | required


@dataclass(frozen=True)
class ServerConfig:
    process_roles: frozenset[str]
    node_id: int
    listeners: tuple[Endpoint, ...]
    advertised_listeners: tuple[Endpoint, ...]
    controller_listener_names: tuple[str, ...]
    inter_broker_listener_name: str | None
    metadata_log_dir: Path
    sasl_enabled_mechanisms: tuple[str, ...]
    super_users: frozenset[str]
    authorizer_class_name: str
    allow_everyone_if_no_acl_found: bool
    socket_request_max_bytes: int
    snapshot_bytes: int
    segment_bytes: int
    failed_authentication_delay_ms: int
    connections_max_idle_ms: int
    sasl_server_max_receive_size: int
    audit_log_max_bytes: int
    audit_log_allowed: bool
    audit_log_denied: bool
    static: Mapping[str, str] = field(repr=False)
    broker_session_timeout_ms: int = 9000
    broker_heartbeat_interval_ms: int = 2000
    # KIP-835: how often the active controller appends a NoOpRecord (0: never).
    metadata_max_idle_interval_ms: int = 500
    # KIP-853: advertised.listeners entries for controller listeners; the others advertise their listeners.
    advertised_controller_listeners: tuple[Endpoint, ...] = ()
    # ksteward's read-your-writes extension (ksteward.protocol.read_your_writes).
    read_your_writes_timeout_ms: int = 30_000
    # KIP-595 / KIP-853: the static voter set, and the addresses that only discover the leader.
    quorum_voters: tuple[QuorumVoter, ...] = ()
    quorum_bootstrap_servers: tuple[tuple[str, int], ...] = ()
    # KIP-966: the most partitions one DescribeTopicPartitions response may hold.
    max_request_partition_size_limit: int = 2000
    # Kafka's QuorumConfig: the controller.quorum.* timeouts, read on every node whatever its roles.
    quorum: QuorumConfig = field(default_factory=QuorumConfig)

    @property
    def is_broker_only(self) -> bool:
        return self.process_roles == frozenset({"broker"})

    @property
    def controller_quorum_addresses(self) -> tuple[tuple[str, int], ...]:
        """Where to look for the controller: ``controller.quorum.bootstrap.servers`` when set, else the
        voters' addresses (Kafka's ``KafkaRaftClient`` discovery list)."""
        if self.quorum_bootstrap_servers:
            return self.quorum_bootstrap_servers
        return tuple((v.host, v.port) for v in self.quorum_voters)

    @property
    def quorum_voter_endpoints(self) -> dict[int, tuple[str, int]]:
        """Each static voter's controller listener, by node id (``controller.quorum.voters``)."""
        return {v.node_id: (v.host, v.port) for v in self.quorum_voters}

    @property
    def is_broker(self) -> bool:
        return "broker" in self.process_roles

    def advertised_controller_endpoint(self, name: str) -> tuple[str, int] | None:
        """Where controller listener ``name`` is reached: its entry in ``advertised.listeners`` (KIP-853), else the
        listener itself with an unset host as ``localhost`` (Kafka's ``effectiveAdvertisedControllerListeners``);
        None when no listener has that name."""
        for endpoint in (*self.advertised_controller_listeners, *self.listeners):
            if endpoint.name == name:
                return endpoint.host or "localhost", endpoint.port
        return None

    @property
    def is_controller(self) -> bool:
        return "controller" in self.process_roles

    def listener_props(self, listener: str) -> dict[str, str]:
        """The keys that apply to one listener: ``listener.name.<name>.`` prefixed values win."""
        prefix = f"listener.name.{listener.lower()}."
        merged = {k: v for k, v in self.static.items() if not k.startswith("listener.name.")}
        merged.update({k[len(prefix) :]: v for k, v in self.static.items() if k.startswith(prefix)})
        return merged

    def ssl_settings(self, listener: str) -> SslSettings:
        props = self.listener_props(listener)
        keystore = props.get("ssl.keystore.location", "").strip()
        if not keystore:
            raise ConfigError(f"listener {listener} uses SSL but ssl.keystore.location is not set")
        client_auth = props.get("ssl.client.auth", "none").strip().lower() or "none"
        if client_auth not in ("none", "requested", "required"):
            raise ConfigError(f"ssl.client.auth must be none, requested or required, not {client_auth!r}")
        return SslSettings(
            keystore_location=keystore,
            key_password=props.get("ssl.key.password") or None,
            truststore_location=props.get("ssl.truststore.location") or None,
            client_auth=client_auth,
        )


def int_setting(props: Mapping[str, str], key: str, default: int | None = None, minimum: int | None = None) -> int:
    """An integer setting: ``default`` when unset or blank (required when None), else a ConfigError that names
    ``key`` for a value that is not an integer or is below ``minimum``."""
    raw = props.get(key)
    if raw is None or raw.strip() == "":
        if default is None:
            raise ConfigError(f"{key} is required")
        return default
    try:
        value = int(raw.strip())
    except ValueError:
        raise ConfigError(f"{key} must be an integer, not {raw!r}") from None
    if minimum is not None and value < minimum:
        raise ConfigError(f"{key} must be at least {minimum}, not {value}")
    return value


def _quorum_config(props: Mapping[str, str]) -> QuorumConfig:
    """The ``controller.quorum.*`` timeouts, Kafka's defaults for those unset or blank, none below 0."""
    defaults = QuorumConfig()

    def ms(key: str, default: int) -> int:
        return int_setting(props, f"controller.quorum.{key}", default, minimum=0)

    return QuorumConfig(
        election_timeout_ms=ms("election.timeout.ms", defaults.election_timeout_ms),
        fetch_timeout_ms=ms("fetch.timeout.ms", defaults.fetch_timeout_ms),
        election_backoff_max_ms=ms("election.backoff.max.ms", defaults.election_backoff_max_ms),
        request_timeout_ms=ms("request.timeout.ms", defaults.request_timeout_ms),
        retry_backoff_ms=ms("retry.backoff.ms", defaults.retry_backoff_ms),
    )


def _bool(props: Mapping[str, str], key: str, default: bool) -> bool:
    raw = props.get(key)
    if raw is None or raw.strip() == "":
        return default
    value = raw.strip().lower()
    if value not in ("true", "false"):
        raise ConfigError(f"{key} must be true or false, not {raw!r}")
    return value == "true"


def _csv(raw: str | None) -> list[str]:
    return [p.strip() for p in (raw or "").split(",") if p.strip()]


def _protocol_map(props: Mapping[str, str], controller_names: list[str]) -> dict[str, str]:
    raw = props.get("listener.security.protocol.map", DEFAULT_PROTOCOL_MAP)
    mapping: dict[str, str] = {}
    for entry in _csv(raw):
        name, sep, proto = entry.partition(":")
        name, proto = name.strip().upper(), proto.strip().upper()
        if not sep or not _LISTENER_NAME.match(name) or proto not in SECURITY_PROTOCOLS:
            raise ConfigError(
                f"listener.security.protocol.map entry {entry!r} must be NAME:PROTOCOL with a protocol "
                f"among {', '.join(SECURITY_PROTOCOLS)}"
            )
        mapping[name] = proto
    for name in controller_names:  # KRaft maps an unmapped controller listener to PLAINTEXT
        mapping.setdefault(name, "PLAINTEXT")
    return mapping


def _endpoints(key: str, raw: str, protocols: Mapping[str, str]) -> tuple[Endpoint, ...]:
    endpoints = []
    seen: set[str] = set()
    for entry in _csv(raw):
        m = _LISTENER.match(entry)
        if not m:
            raise ConfigError(f"{key} entry {entry!r} must look like NAME://host:port")
        name = m["name"].upper()
        port = int(m["port"])
        if port > 65535:
            raise ConfigError(f"{key} entry {entry!r} has port {port}, above 65535")
        if name not in protocols:
            raise ConfigError(f"{key} names listener {name}, which listener.security.protocol.map does not map")
        if name in seen:
            raise ConfigError(f"{key} names listener {name} twice")
        seen.add(name)
        endpoints.append(Endpoint(name, m["host"].strip("[]"), port, protocols[name]))
    return tuple(endpoints)


def _process_roles(props: Mapping[str, str]) -> frozenset[str]:
    roles = frozenset(_csv(props.get("process.roles")))
    if not roles:
        raise ConfigError("process.roles is required: broker, controller, or broker,controller")
    if not roles <= {"broker", "controller"}:
        raise ConfigError(f"process.roles has unknown roles: {', '.join(sorted(roles - {'broker', 'controller'}))}")
    return roles


def _listeners(
    props: Mapping[str, str], roles: frozenset[str]
) -> tuple[list[str], tuple[Endpoint, ...], dict[str, str]]:
    """``controller.listener.names``, ``listeners`` and the protocol map; a controller's listener names
    must be among its listeners."""
    controller_names = [n.upper() for n in _csv(props.get("controller.listener.names"))]
    if "controller" in roles and not controller_names:
        raise ConfigError("controller.listener.names is required when process.roles includes controller")
    raw_listeners = props.get("listeners", "PLAINTEXT://:9092")
    for entry in _csv(raw_listeners):
        if not _LISTENER.match(entry):
            raise ConfigError(f"listeners entry {entry!r} must look like NAME://host:port")
    raw_names = {entry.partition("://")[0].strip().upper() for entry in _csv(raw_listeners)}
    missing = [n for n in controller_names if n not in raw_names]
    if "controller" in roles and missing:
        raise ConfigError(f"controller.listener.names names {', '.join(missing)}, which listeners does not define")
    protocols = _protocol_map(props, controller_names)
    listeners = _endpoints("listeners", raw_listeners, protocols)
    if not listeners:
        raise ConfigError("listeners must name at least one listener")
    names = {e.name for e in listeners}
    if "controller" in roles:
        missing = [n for n in controller_names if n not in names]
        if missing:
            raise ConfigError(f"controller.listener.names names {', '.join(missing)}, which listeners does not define")
    return controller_names, listeners, protocols


def _advertised_listeners(
    props: Mapping[str, str], protocols: Mapping[str, str], names: set[str], client_listeners: tuple[Endpoint, ...]
) -> tuple[Endpoint, ...]:
    """``advertised.listeners``, or the client listeners with ``localhost`` for an empty host."""
    if "advertised.listeners" not in props:
        return tuple(Endpoint(e.name, e.host or "localhost", e.port, e.security_protocol) for e in client_listeners)
    advertised = _endpoints("advertised.listeners", props["advertised.listeners"], protocols)
    for e in advertised:
        if e.name not in names:
            raise ConfigError(f"advertised.listeners names {e.name}, which listeners does not define")
        if not e.host:
            raise ConfigError(f"advertised.listeners entry {e} needs a host clients can reach")
    return advertised


def _inter_broker_listener(
    props: Mapping[str, str], roles: frozenset[str], names: set[str], client_listeners: tuple[Endpoint, ...]
) -> str | None:
    """``inter.broker.listener.name``; a broker without one uses its first PLAINTEXT client listener,
    else its first client listener."""
    inter_broker = props.get("inter.broker.listener.name", "").strip().upper() or None
    if inter_broker is None and "broker" in roles:
        inter_broker = next((e.name for e in client_listeners if e.security_protocol == "PLAINTEXT"), None)
        inter_broker = inter_broker or client_listeners[0].name
    if inter_broker is not None and inter_broker not in names:
        raise ConfigError(f"inter.broker.listener.name {inter_broker} is not among listeners")
    return inter_broker


def _metadata_log_dir(props: Mapping[str, str]) -> str:
    """``metadata.log.dir``, else the first of ``log.dirs``, else ``log.dir``, as Kafka falls back."""
    log_dir = props.get("metadata.log.dir", "").strip() or (_csv(props.get("log.dirs")) or [""])[0]
    log_dir = log_dir or props.get("log.dir", "").strip()
    if not log_dir:
        raise ConfigError("metadata.log.dir (or log.dirs) is required")
    return log_dir


def _sasl_mechanisms(props: Mapping[str, str], listeners: tuple[Endpoint, ...]) -> tuple[str, ...]:
    mechanisms = tuple(
        m.upper() for m in _csv(props.get("sasl.enabled.mechanisms", ",".join(SUPPORTED_SASL_MECHANISMS)))
    )
    unsupported = [m for m in mechanisms if m not in SUPPORTED_SASL_MECHANISMS]
    if unsupported:
        raise ConfigError(
            f"sasl.enabled.mechanisms has {', '.join(unsupported)}; ksteward supports "
            f"{', '.join(SUPPORTED_SASL_MECHANISMS)}"
        )
    if any(e.uses_sasl for e in listeners) and not mechanisms:
        raise ConfigError("a SASL listener needs at least one mechanism in sasl.enabled.mechanisms")
    return mechanisms


def _super_users(props: Mapping[str, str]) -> frozenset[str]:
    super_users = frozenset(p.strip() for p in props.get("super.users", "").split(";") if p.strip())
    for principal in super_users:
        if ":" not in principal:
            raise ConfigError(f"super.users entry {principal!r} must be a principal such as User:admin")
    return super_users


def _authorizer_class_name(props: Mapping[str, str]) -> str:
    authorizer = props.get("authorizer.class.name", "").strip()
    if authorizer and authorizer not in STANDARD_AUTHORIZER_NAMES:
        raise ConfigError(
            f"authorizer.class.name {authorizer!r} is not supported; use "
            "org.apache.kafka.metadata.authorizer.StandardAuthorizer or leave it empty"
        )
    return authorizer


def _host_port(key: str, entry: str) -> tuple[str, int]:
    m = _HOST_PORT.match(entry)
    if not m or int(m["port"]) > 65535:
        raise ConfigError(f"{key} entry {entry!r} must look like host:port")
    return m["host"].strip("[]"), int(m["port"])


def _quorum_voters(props: Mapping[str, str]) -> tuple[QuorumVoter, ...]:
    """``controller.quorum.voters``: ``{id}@{host}:{port},...`` (Kafka's ``QuorumConfig.parseVoterConnections``)."""
    voters: list[QuorumVoter] = []
    for entry in _csv(props.get("controller.quorum.voters")):
        node, sep, address = entry.partition("@")
        if not sep or not node.strip().isdigit():
            raise ConfigError(f"controller.quorum.voters entry {entry!r} must look like id@host:port")
        host, port = _host_port("controller.quorum.voters", address.strip())
        if any(v.node_id == int(node) for v in voters):
            raise ConfigError(f"controller.quorum.voters names node {int(node)} twice")
        voters.append(QuorumVoter(int(node), host, port))
    return tuple(voters)


def _quorum_bootstrap_servers(props: Mapping[str, str]) -> tuple[tuple[str, int], ...]:
    """``controller.quorum.bootstrap.servers``: ``{host}:{port},...`` (KIP-853)."""
    return tuple(
        _host_port("controller.quorum.bootstrap.servers", e)
        for e in _csv(props.get("controller.quorum.bootstrap.servers"))
    )


def _check_quorum(
    roles: frozenset[str],
    node_id: int,
    voters: tuple[QuorumVoter, ...],
    bootstrap: tuple[tuple[str, int], ...],
    controller_names: list[str],
    listeners: tuple[Endpoint, ...],
    advertised_controllers: tuple[Endpoint, ...] = (),
) -> None:
    """Kafka's ``KafkaConfig.validateValues`` for the quorum keys. A broker-only node must know where the
    controllers are, may not be a voter itself, and must not listen on a controller listener. A node with the
    controller role that lists voters must be one of them. (ksteward's single controller does not require
    either key: without them it is its own quorum, as before these keys were read.)

    A node with the controller role and ``controller.quorum.bootstrap.servers`` but no voters would, in Kafka
    4.x, take its voters from the log (KIP-853, ``kraft.version`` 1: ``kafka-storage format
    --initial-controllers``, or ``--no-initial-controllers`` and AddRaftVoter later). ksteward's voters are
    static, so only the form of Kafka's ``--standalone`` runs: the one bootstrap server is this node's own
    controller listener, a quorum of one. Anything else is refused here: each such controller would otherwise
    lead a log of its own."""
    voter_ids = {v.node_id for v in voters}
    if roles == frozenset({"broker"}):
        if not voters and not bootstrap:
            raise ConfigError(
                "a broker-only node needs controller.quorum.bootstrap.servers or controller.quorum.voters"
            )
        if node_id in voter_ids:
            raise ConfigError(f"node.id {node_id} is in controller.quorum.voters, but process.roles is broker only")
        if not controller_names:
            raise ConfigError("controller.listener.names is required: a broker reaches the controller through it")
        shared = [e.name for e in listeners if e.name in controller_names]
        if shared:
            raise ConfigError(f"listeners names the controller listener {shared[0]}, but process.roles is broker only")
    elif voters and node_id not in voter_ids:
        raise ConfigError(f"node.id {node_id} must be in controller.quorum.voters when process.roles has controller")
    elif not voters and bootstrap:
        own = tuple(e for e in (*listeners, *advertised_controllers) if e.name in controller_names)
        others = [f"{host}:{port}" for host, port in bootstrap if not _names_listener((host, port), own)]
        if len(bootstrap) > 1 or others:
            raise ConfigError(
                f"controller.quorum.bootstrap.servers names {', '.join(others) or 'several controllers'} but "
                "controller.quorum.voters is empty: voters taken from the metadata log (KIP-853, kraft.version 1) "
                "are not supported. List the voters in controller.quorum.voters (id@host:port,...), or name only "
                "this node's controller listener for a quorum of one"
            )


_ANY_HOST = frozenset({"", "0.0.0.0", "::"})  # a listener bound to every interface


def _names_listener(address: tuple[str, int], listeners: tuple[Endpoint, ...]) -> bool:
    """Whether ``host:port`` reaches one of ``listeners``: the same port, and the same host, a listener bound to
    every interface, or two loopback names."""
    host, port = address
    return any(
        e.port == port and (e.host in _ANY_HOST or e.host == host or (_loopback(e.host) and _loopback(host)))
        for e in listeners
    )


def _loopback(host: str) -> bool:
    return host == "localhost" or host == "::1" or host.startswith("127.")


def parse_server_config(props: Mapping[str, str]) -> ServerConfig:
    """Validate ``props`` (a parsed properties file plus overrides) into a :class:`ServerConfig`.

    The steps run in this order, and the first problem found is the ConfigError raised."""
    roles = _process_roles(props)
    node_id = int_setting(props, "node.id", minimum=0)
    controller_names, listeners, protocols = _listeners(props, roles)
    names = {e.name for e in listeners}
    client_listeners = tuple(e for e in listeners if e.name not in controller_names)
    if "broker" in roles and not client_listeners:
        raise ConfigError("a broker needs at least one listener that is not a controller listener")
    advertised_all = _advertised_listeners(props, protocols, names, client_listeners)
    # KIP-853: a controller may advertise its controller listeners in advertised.listeners too; brokers
    # register, and Metadata lists, only the others.
    advertised = tuple(e for e in advertised_all if e.name not in controller_names)
    advertised_controllers = tuple(e for e in advertised_all if e.name in controller_names)
    inter_broker = _inter_broker_listener(props, roles, names, client_listeners)
    log_dir = _metadata_log_dir(props)
    mechanisms = _sasl_mechanisms(props, listeners)
    super_users = _super_users(props)
    authorizer = _authorizer_class_name(props)
    voters = _quorum_voters(props)
    bootstrap = _quorum_bootstrap_servers(props)
    _check_quorum(roles, node_id, voters, bootstrap, controller_names, listeners, advertised_controllers)
    quorum = _quorum_config(props)
    return ServerConfig(
        process_roles=roles,
        node_id=node_id,
        listeners=listeners,
        advertised_listeners=advertised,
        advertised_controller_listeners=advertised_controllers,
        controller_listener_names=tuple(controller_names),
        inter_broker_listener_name=inter_broker,
        metadata_log_dir=Path(log_dir),
        sasl_enabled_mechanisms=mechanisms,
        super_users=super_users,
        authorizer_class_name=authorizer,
        allow_everyone_if_no_acl_found=_bool(props, "allow.everyone.if.no.acl.found", False),
        socket_request_max_bytes=int_setting(props, "socket.request.max.bytes", DEFAULT_MAX_FRAME_BYTES, minimum=1),
        snapshot_bytes=int_setting(
            props, "metadata.log.max.record.bytes.between.snapshots", 20 * 1024 * 1024, minimum=1
        ),
        segment_bytes=int_setting(props, "metadata.log.segment.bytes", 1024 * 1024 * 1024, minimum=1024),
        # KIP-306: hold a failed login's connection open this long, so the client reads the error
        # before the close (and password guessing slows down).
        failed_authentication_delay_ms=int_setting(props, "connection.failed.authentication.delay.ms", 100, minimum=0),
        # Kafka's Selector closes connections idle this long; ksteward also closes one that has not
        # authenticated within this time of connecting.
        connections_max_idle_ms=int_setting(props, "connections.max.idle.ms", 600_000, minimum=1),
        # Kafka's cap on a frame before and during SASL authentication (BrokerSecurityConfigs
        # .SASL_SERVER_MAX_RECEIVE_SIZE_CONFIG, read by SaslServerAuthenticator): an anonymous peer
        # cannot make the server buffer socket.request.max.bytes.
        sasl_server_max_receive_size=int_setting(props, "sasl.server.max.receive.size", 524_288, minimum=1),
        audit_log_max_bytes=int_setting(props, "audit.log.max.bytes", 100 * 1024 * 1024, minimum=1024),
        audit_log_allowed=_bool(props, "audit.log.allowed", True),
        audit_log_denied=_bool(props, "audit.log.denied", True),
        static=MappingProxyType(dict(props)),
        # KRaft broker sessions (Kafka's KafkaConfig): a broker silent this long is fenced by the controller.
        broker_session_timeout_ms=int_setting(props, "broker.session.timeout.ms", 9000, minimum=1),
        broker_heartbeat_interval_ms=int_setting(props, "broker.heartbeat.interval.ms", 2000, minimum=1),
        metadata_max_idle_interval_ms=int_setting(props, "metadata.max.idle.interval.ms", 500, minimum=0),
        # How long a request carrying a metadata offset waits for this node to apply it (an extension).
        read_your_writes_timeout_ms=int_setting(props, "ksteward.read.your.writes.timeout.ms", 30_000, minimum=0),
        quorum_voters=voters,
        quorum_bootstrap_servers=bootstrap,
        max_request_partition_size_limit=int_setting(props, "max.request.partition.size.limit", 2000, minimum=1),
        quorum=quorum,
    )
