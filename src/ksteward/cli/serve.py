"""``ksteward serve --config FILE [--override key=value ...]``: run a node until SIGTERM or SIGINT."""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from typing import Any

from ksteward.configs.properties import load_properties, parse_override
from ksteward.configs.server_config import ConfigError, ServerConfig, parse_server_config


def add_parser(sub: Any) -> None:
    p = sub.add_parser("serve", help="run a ksteward node (broker, controller, or both)")
    p.add_argument("--config", required=True, help="a Kafka-style server.properties file")
    p.add_argument(
        "--override", action="append", default=[], metavar="KEY=VALUE", help="override one property (repeatable)"
    )
    p.add_argument("--log-level", default="INFO", choices=["DEBUG", "INFO", "WARNING", "ERROR"])
    p.set_defaults(func=run)


def load_config(path: str, overrides: list[str]) -> ServerConfig:
    try:
        props = load_properties(path)
    except OSError as exc:
        raise ConfigError(f"cannot read config file {path}: {exc.strerror or exc}") from None
    for item in overrides:
        key, value = parse_override(item)
        props[key] = value
    return parse_server_config(props)


def run(args: argparse.Namespace) -> int:
    logging.basicConfig(
        level=getattr(logging, args.log_level),
        format="[%(asctime)s] %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    try:
        config = load_config(args.config, args.override)
    except (ConfigError, ValueError) as exc:
        print(f"ksteward: bad config: {exc}", file=sys.stderr)
        return 2
    from ksteward.server.app import Server, StartupError
    from ksteward.server.broker_server import BrokerServer
    from ksteward.server.combined_quorum import CombinedQuorumServer, is_combined_voter

    async def main() -> int:
        # A broker-only node has no controller inside it: it follows the controller's log and forwards. A
        # combined voter of several shares its voter's log, and forwards to whichever voter leads.
        server: Server
        if config.is_broker_only:
            server = BrokerServer(config)
        elif is_combined_voter(config):
            server = CombinedQuorumServer(config)
        else:
            server = Server(config)
        server.install_signal_handlers()  # before anyone can see the ready line and signal us
        try:
            await server.start()
        except StartupError as exc:
            print(f"ksteward: cannot start: {exc}", file=sys.stderr)
            await server.stop()
            return 1
        print(_ready_lines(config, server.cluster_id), file=sys.stderr, flush=True)
        await server.serve_until_stopped()
        if server.failure is not None:
            print(f"ksteward: stopped: {server.failure}", file=sys.stderr)
            return 1
        return 0

    return asyncio.run(main())


def _ready_lines(config: ServerConfig, cluster_id: str) -> str:
    """What a person (and the tests, by ``is serving on``) reads once the node serves: where, and how to connect.
    A controller-only node has no client listener: admin clients reach it with ``bootstrap.controllers``
    (KIP-919), brokers with ``controller.quorum.bootstrap.servers``."""
    endpoints = config.advertised_listeners or tuple(
        e for e in config.listeners if e.name in config.controller_listener_names
    )
    where = ", ".join(str(e) for e in endpoints)
    addresses = ",".join(f"{e.host}:{e.port}" for e in endpoints)
    if config.advertised_listeners:
        how = f"connect with bootstrap.servers={addresses}"
    else:
        how = (
            f"admin clients connect with bootstrap.controllers={addresses}, "
            f"brokers with controller.quorum.bootstrap.servers={addresses}"
        )
    node = f"node {config.node_id} of cluster {cluster_id}"
    return f"ksteward: {node} is serving on {where}\nksteward: {how}; stop with Ctrl-C"
