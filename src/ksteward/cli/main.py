"""``ksteward``: the command-line entry point. Each sub-command lives in its own module."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from ksteward import __version__


def build_parser() -> argparse.ArgumentParser:
    from ksteward.cli import cluster, configs, metadata, pipeline, serve, topics

    parser = argparse.ArgumentParser(
        prog="ksteward", description="A Kafka-compatible admin and security control plane."
    )
    parser.add_argument("--version", action="version", version=f"ksteward {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    serve.add_parser(sub)
    metadata.add_parser(sub)
    pipeline.add_parser(sub)
    topics.add_parser(sub)
    configs.add_parser(sub)
    cluster.add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        result: int = args.func(args)
        sys.stdout.flush()
    except BrokenPipeError:
        # The reader went away (``ksteward metadata dump DIR | head``): end quietly, as ``cat`` does. Point
        # stdout at /dev/null so the interpreter's last flush at exit cannot raise again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    return result


if __name__ == "__main__":
    sys.exit(main())
