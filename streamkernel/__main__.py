"""The ``streamkernel`` command (also ``python -m streamkernel``).

* ``demo [--out DIR] [-p N]``: the word-count dataflow, its three graphs as SVG, a run;
* ``run job.py [-p N] [--backend B] [--detached] ...``: run a job script, as ``flink run``
  does (:mod:`streamkernel.run_command`);
* ``install-kernel [--user | --sys-prefix | --prefix P]``: the Jupyter kernel
  "Python 3 (streamkernel)" (:mod:`streamkernel.kernelspec`);
* ``memory taskmanager|jobmanager [-D k=v ...] [--json]``: a process's memory breakdown, as Flink
  computes it (:mod:`streamkernel.runtime.entrypoint.memory_cli`);
* ``cluster start|stop|status``, ``jobmanager start|stop``, ``taskmanager start|stop``: a standalone
  session cluster, as Flink's ``start-cluster.sh`` (:mod:`streamkernel.runtime.entrypoint.cli`).
"""

from __future__ import annotations

import argparse
import sys
from typing import Optional, Sequence

__all__ = ["main"]


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Entry point of the ``streamkernel`` command; returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["run"]:
        from streamkernel.run_command import main as run_main

        return run_main(argv[1:])
    if argv[:1] == ["memory"]:
        from streamkernel.runtime.entrypoint.memory_cli import main as memory_main

        return memory_main(argv[1:])
    if argv[:1] in (["cluster"], ["jobmanager"], ["taskmanager"]):
        from streamkernel.runtime.entrypoint.cli import main as cluster_main

        return cluster_main(argv)
    parser = argparse.ArgumentParser(prog="streamkernel", description="streamkernel command line")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    demo = sub.add_parser("demo", help="build the word-count dataflow, draw its three graphs, run it when possible")
    demo.add_argument("--out", default="out/demo", help="directory for the SVG files (default: out/demo)")
    demo.add_argument("--parallelism", "-p", type=int, default=2, help="parallelism of the dataflow (default 2)")
    sub.add_parser("memory", add_help=False, help="memory breakdown: memory taskmanager|jobmanager [-D k=v ...] "
                                                   "[--json] (streamkernel memory --help)")
    sub.add_parser("run", add_help=False, help="run a job script, as `flink run` does (streamkernel run --help)")
    for name in ("cluster", "jobmanager", "taskmanager"):
        actions = "start|stop|status" if name == "cluster" else "start|stop"
        sub.add_parser(name, add_help=False, help=f"standalone session cluster: {name} {actions} (streamkernel "
                                                  f"{name} --help)")
    kernel = sub.add_parser("install-kernel", help='install the Jupyter kernel "Python 3 (streamkernel)"')
    where = kernel.add_mutually_exclusive_group()
    where.add_argument("--user", action="store_true", help="for this user (the user's Jupyter data directory)")
    where.add_argument("--sys-prefix", action="store_true", help="in this Python environment (sys.prefix)")
    where.add_argument("--prefix", default=None, help="under another prefix (PREFIX/share/jupyter/kernels)")
    kernel.add_argument("--name", default=None, help="the kernelspec's name (default: streamkernel)")
    kernel.add_argument("--display-name", default=None, help='the name Jupyter shows (default: "Python 3 (streamkernel)")')
    args = parser.parse_args(argv)
    if args.command == "demo":
        from streamkernel.demo import run_demo

        return run_demo(args.out, args.parallelism)
    if args.command == "install-kernel":
        from streamkernel.kernelspec import DISPLAY_NAME, KERNEL_NAME, install_kernel

        try:
            path = install_kernel(user=args.user, sys_prefix=args.sys_prefix, prefix=args.prefix,
                                  kernel_name=args.name or KERNEL_NAME, display_name=args.display_name or DISPLAY_NAME)
        except PermissionError as error:
            print(f"streamkernel install-kernel: {error}; use --user or --sys-prefix", file=sys.stderr)
            return 1
        print(f"Installed kernelspec {args.name or KERNEL_NAME} ({args.display_name or DISPLAY_NAME}) in {path}")
        return 0
    return 2  # pragma: no cover - argparse enforces the choices


if __name__ == "__main__":
    sys.exit(main())
