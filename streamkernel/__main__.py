"""The ``streamkernel`` command: ``python -m streamkernel demo [--out DIR]``."""

from __future__ import annotations

import argparse
import sys
from typing import Optional, Sequence

__all__ = ["main"]


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Entry point of the ``streamkernel`` command; returns the exit status."""
    parser = argparse.ArgumentParser(prog="streamkernel", description="streamkernel command line")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    demo = sub.add_parser("demo", help="build the word-count dataflow, draw its three graphs, run it when possible")
    demo.add_argument("--out", default="out/demo", help="directory for the SVG files (default: out/demo)")
    demo.add_argument("--parallelism", "-p", type=int, default=2, help="parallelism of the dataflow (default 2)")
    args = parser.parse_args(argv)
    if args.command == "demo":
        from streamkernel.demo import run_demo

        return run_demo(args.out, args.parallelism)
    return 2  # pragma: no cover - argparse enforces the choices


if __name__ == "__main__":
    sys.exit(main())
