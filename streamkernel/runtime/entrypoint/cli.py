"""``streamkernel cluster|jobmanager|taskmanager ...``: the standalone session cluster from the shell.

As Flink's ``bin/start-cluster.sh``, ``stop-cluster.sh``, ``jobmanager.sh`` and ``taskmanager.sh``:

* ``streamkernel cluster start [--dir DIR] [--taskmanagers T] [--slots S] [--backend process|spark] [-D k=v ...]``
* ``streamkernel cluster stop|status [--dir DIR]``
* ``streamkernel jobmanager start|stop [--dir DIR] [-D k=v ...]``
* ``streamkernel taskmanager start|stop [--dir DIR] [-m HOST:PORT] [--slots S] [--secret-file F] [-D k=v ...]``

With the high-availability keys (``-D high-availability.type=zookeeper -D high-availability.zookeeper.quorum=...
-D high-availability.cluster-id=... -D high-availability.storageDir=...``) ``taskmanager start`` needs no ``-m``:
the TaskManager follows the leading JobManager (docs/high-availability.md, "TaskManagers").

A failure is one line on stderr and exit code 1 (2: bad arguments).
"""

from __future__ import annotations

import argparse
import sys
from typing import Sequence

from streamkernel.errors import StreamKernelError
from streamkernel.runtime.entrypoint.cluster_dir import DEFAULT_DIR, ClusterDir, parse_dynamic_properties

__all__ = ["main", "COMMANDS"]

#: The first words of the command line this module handles.
COMMANDS = ("cluster", "jobmanager", "taskmanager")


def _parser(command: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=f"streamkernel {command}",
                                     description=f"Standalone session cluster: the {command} (Flink's "
                                                 f"{'start-cluster.sh' if command == 'cluster' else command + '.sh'}).")
    actions = ("start", "stop", "status") if command == "cluster" else ("start", "stop")
    parser.add_argument("action", choices=actions)
    parser.add_argument("--dir", default=DEFAULT_DIR,
                        help=f"the cluster's directory: logs, pid files, secret (default ./{DEFAULT_DIR})")
    parser.add_argument("-D", dest="dynamic", action="append", default=[], metavar="KEY=VALUE",
                        help="a Flink configuration entry for the started processes; repeatable")
    if command in ("cluster", "jobmanager"):
        parser.add_argument("--backend", default="process", choices=("process", "spark"),
                            help="where TaskManagers run: processes started here (default), or Spark tasks "
                                 "of the JobManager's Spark application")
        parser.add_argument("--taskmanagers", type=int, default=1 if command == "cluster" else 0,
                            help="TaskManagers to start (default 1; jobmanager: spark backend only)")
    parser.add_argument("--slots", type=int, default=1, help="slots per TaskManager (default 1)")
    if command == "taskmanager":
        parser.add_argument("-m", "--jobmanager", default=None, metavar="HOST:PORT",
                            help="the REST address of the JobManager to register with (default: the one of --dir; "
                                 "with -D high-availability.type=zookeeper and the other HA keys: the leader, "
                                 "followed through ZooKeeper)")
        parser.add_argument("--secret-file", default=None,
                            help="the cluster secret (default: the user's registry entry for -m)")
    return parser


def main(argv: Sequence[str]) -> int:
    """Run ``streamkernel COMMAND ACTION ...`` (``argv[0]`` is one of :data:`COMMANDS`); returns the exit status."""
    from streamkernel.runtime.entrypoint import commands

    command, rest = argv[0], list(argv[1:])
    args = _parser(command).parse_args(rest)
    try:
        configuration = parse_dynamic_properties(args.dynamic)
        directory = ClusterDir(args.dir, configuration)
        lines: list[str]
        status = 0
        if command == "cluster" and args.action == "start":
            lines = commands.start_cluster(directory, configuration, args.taskmanagers, args.slots, args.backend)
        elif command == "cluster" and args.action == "stop":
            lines = commands.stop_cluster(directory)
        elif command == "cluster":
            running, lines = commands.cluster_status(directory)
            status = 0 if running else 1
        elif command == "jobmanager" and args.action == "start":
            info = commands.start_jobmanager(directory, configuration, args.backend, max(args.taskmanagers, 1),
                                             args.slots)
            lines = [f"REST {info['rest_url']}", f"pid {info['pid']}"]
            if info.get("high_availability"):
                ha = info["high_availability"]
                lines.append(f"high availability: cluster {ha['cluster_id']}, this JobManager is the {ha['role']}"
                             + (f" (leader: {ha['leader']})" if ha.get("leader") and ha["role"] != "leader" else ""))
        elif command == "jobmanager":
            lines = commands.stop_jobmanager(directory)
        elif args.action == "start":
            started = commands.start_taskmanager(directory, configuration, args.slots, args.jobmanager,
                                                 args.secret_file)
            lines = [f"pid {started.pid} ({started.taskmanager_id})"]
        else:
            lines = commands.stop_taskmanager(directory)
    except (commands.StandaloneClusterError, ValueError, OSError, StreamKernelError) as error:
        print(f"streamkernel {command} {args.action}: {error}".splitlines()[0], file=sys.stderr)
        return 1
    for line in lines:
        print(line)
    return status
