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

    async def main() -> int:
        # A broker-only node has no controller inside it: it follows the controller's log and forwards.
        server = BrokerServer(config) if config.is_broker_only else Server(config)
        server.install_signal_handlers()  # before anyone can see the ready line and signal us
        try:
            await server.start()
        except StartupError as exc:
            print(f"ksteward: cannot start: {exc}", file=sys.stderr)
            await server.stop()
            return 1
        advertised = ", ".join(str(e) for e in config.advertised_listeners)
        bootstrap = ",".join(f"{e.host}:{e.port}" for e in config.advertised_listeners)
        print(
            f"ksteward: node {config.node_id} of cluster {server.cluster_id} is serving on {advertised}\n"
            f"ksteward: connect with bootstrap.servers={bootstrap}; stop with Ctrl-C",
            file=sys.stderr,
            flush=True,
        )
        await server.serve_until_stopped()
        return 0

    return asyncio.run(main())
