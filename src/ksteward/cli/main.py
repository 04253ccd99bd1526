"""``ksteward``: the command-line entry point. Each sub-command lives in its own module."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from ksteward import __version__


def build_parser() -> argparse.ArgumentParser:
    from ksteward.cli import acls, apply, cluster, configs, metadata, pipeline, plan, serve, state, topics

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
    acls.add_parser(sub)
    state.add_parser(sub)
    plan.add_parser(sub)
    apply.add_parser(sub)
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


def entry() -> int:
    """The ``ksteward`` command (and ``python -m ksteward.cli.main``): ``main`` in a process of its own.

    kio registers hypothesis strategies for its types whenever hypothesis can be imported (it comes with the
    dev extras). In a server that costs 0.15 s of CPU per start, and 1.4 s plus a ``.hypothesis/`` directory
    written into the working directory when its cache is not there. Nothing in a command uses them, so the
    process keeps hypothesis out before kio is first imported. (Tests that call ``main`` in-process are not
    affected.)"""
    sys.modules.setdefault("hypothesis", None)  # type: ignore[arg-type]
    return main()


if __name__ == "__main__":
    sys.exit(entry())
