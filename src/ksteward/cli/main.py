"""``ksteward``: the command-line entry point. Each sub-command lives in its own module."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from ksteward import __version__


def build_parser() -> argparse.ArgumentParser:
    from ksteward.cli import cluster, metadata, pipeline, serve, topics

    parser = argparse.ArgumentParser(
        prog="ksteward", description="A Kafka-compatible admin and security control plane."
    )
    parser.add_argument("--version", action="version", version=f"ksteward {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    serve.add_parser(sub)
    metadata.add_parser(sub)
    pipeline.add_parser(sub)
    topics.add_parser(sub)
    cluster.add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    result: int = args.func(args)
    return result


if __name__ == "__main__":
    sys.exit(main())
