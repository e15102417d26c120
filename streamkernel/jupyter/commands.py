"""The parsed form of ``%flink`` lines and ``%%flink`` options (IPython's magic_arguments).

Parsers are built with IPython's ``MagicArgumentParser``, whose errors are one-line
``UsageError`` s naming the valid choices instead of tracebacks; subcommands are argparse
subparsers of the same class. Each subcommand has a Python equivalent; the magic only
parses and calls it.
"""

from __future__ import annotations

import argparse
import shlex
from typing import Optional

from IPython.core.error import UsageError
from IPython.core.magic_arguments import MagicArgumentParser

from streamkernel.arguments import nonblank, positive_float, positive_int

__all__ = [
    "BACKENDS", "GRAPH_KINDS", "SHOW_CHOICES", "parallelism", "cell_parser", "line_parser", "parse_cell_options",
    "parse_line", "usage",
]

GRAPH_KINDS = ("stream", "job", "execution")
BACKENDS = ("local", "process", "spark")
SHOW_CHOICES = (*GRAPH_KINDS, "plan")


def parallelism(text: str) -> int:
    """An argparse type: a parallelism, an int from 1 to Flink's upper bound of max parallelism (32768).

    More subtasks than key groups can never run; a typo like ``-p 99999999999`` would
    otherwise expand into that many subtasks when the ExecutionGraph is drawn.
    """
    from streamkernel.graph.keygroups import UPPER_BOUND_MAX_PARALLELISM

    value = positive_int(text)
    if value > UPPER_BOUND_MAX_PARALLELISM:
        raise argparse.ArgumentTypeError(f"expected a parallelism of at most {UPPER_BOUND_MAX_PARALLELISM} "
                                         f"(Flink's upper bound of max parallelism), got {value}")
    return value


def _add_cluster_shape(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--taskmanagers", "-t", type=positive_int, default=None,
                        help="TaskManagers of the cluster the ExecutionGraph is placed on (default 1)")
    parser.add_argument("--slots", "-s", type=positive_int, default=None,
                        help="task slots per TaskManager (default: enough for the job)")
    parser.add_argument("--no-slot-sharing", action="store_true",
                        help="place every subtask in a slot of its own")


def cell_parser() -> MagicArgumentParser:
    """Options of the ``%%flink`` cell magic."""
    parser = MagicArgumentParser(prog="%flink", add_help=False,
                                 description="Run the cell's Python with `env` bound; its operators join the "
                                             "notebook's dataflow, which is then drawn (new operators highlighted).")
    parser.add_argument("--show", choices=(*GRAPH_KINDS, "none"), default="stream",
                        help="which graph to draw after the cell (default: stream)")
    parser.add_argument("--parallelism", "-p", type=parallelism, default=None,
                        help="default parallelism of the operators this cell creates")
    parser.add_argument("--name", "-n", type=nonblank, default=None, help="name of the dataflow (the job name)")
    parser.add_argument("--reset", action="store_true", help="start a new, empty dataflow before the cell")
    parser.add_argument("--submit", action="store_true",
                        help="submit the dataflow after the cell (as env.execute_async); the notebook stays usable")
    _add_cluster_shape(parser)
    return parser


def line_parser() -> MagicArgumentParser:
    """Subcommands of the ``%flink`` line magic."""
    parser = MagicArgumentParser(prog="flink", add_help=False,
                                 description="Show and control the notebook's dataflow.")
    sub = parser.add_subparsers(dest="subcommand", parser_class=MagicArgumentParser, metavar="SUBCOMMAND")
    show = sub.add_parser("show", add_help=False, help="draw a graph of the current dataflow, or its plan JSON")
    show.add_argument("what", nargs="?", choices=SHOW_CHOICES, default="stream",
                      help="stream | job | execution | plan (default: stream)")
    _add_cluster_shape(show)
    sub.add_parser("help", add_help=False, help="list every subcommand with its options")
    reset = sub.add_parser("reset", add_help=False, help="start a new, empty dataflow bound to `env`")
    reset.add_argument("--name", "-n", type=nonblank, default=None, help="name of the new dataflow (the job name)")
    start = sub.add_parser("start", add_help=False, help="start a cluster: a JobManager and TaskManagers")
    start.add_argument("--taskmanagers", "-t", type=positive_int, default=1, help="number of TaskManagers (default 1)")
    start.add_argument("--slots", "-s", type=positive_int, default=2, help="task slots per TaskManager (default 2)")
    start.add_argument("--backend", "-b", choices=BACKENDS, default=None,
                       help="where TaskManagers run: local = threads in this kernel (default), process = one "
                            "child process each, spark = long-running Spark tasks")
    start.add_argument("--master", "-m", type=nonblank, default=None,
                       help="spark backend: the Spark master (local[N,F], spark://host:7077, yarn, k8s://...)")
    start.add_argument("--spark-session", type=nonblank, default=None, metavar="NAME",
                       help="spark backend: the notebook variable holding the SparkSession to use")
    start.add_argument("-D", dest="dynamic", action="append", default=[], metavar="KEY=VALUE",
                       help="a configuration key of the cluster (repeatable), e.g. "
                            "-D streamkernel.minicluster.max-taskmanager-processes=32")
    start.add_argument("--ha", type=nonblank, default=None, metavar="zookeeper://QUORUM/CLUSTER-ID",
                       help="high availability: this kernel's JobManager joins the leader election of that cluster "
                            "and recovers its persisted jobs once it leads (storage: -D high-availability.storageDir"
                            "=DIR, default $STREAMKERNEL_HOME/ha-storage)")
    sub.add_parser("stop", add_help=False, help="stop the cluster: cancel its jobs, end every TaskManager")
    connect = sub.add_parser("connect", add_help=False,
                             help="use a running cluster through its REST API: jobs submit there, the other "
                                  "subcommands read and control it")
    connect.add_argument("address", type=nonblank,
                         help="the cluster's REST address: http://HOST:PORT or HOST:PORT; or a highly available "
                              "cluster's zookeeper://HOST:PORT[,HOST:PORT...]/CLUSTER-ID (its leader, followed)")
    connect.add_argument("--secret-file", type=nonblank, default=None, metavar="FILE",
                         help="the file holding the cluster's secret (default: found from the address on this "
                              "machine, or $STREAMKERNEL_SECRET_FILE)")
    connect.add_argument("-D", dest="dynamic", action="append", default=[], metavar="KEY=VALUE",
                         help="with zookeeper://: a high-availability key (repeatable), e.g. "
                              "-D high-availability.storageDir=DIR (where the cluster's secret is)")
    sub.add_parser("disconnect", add_help=False,
                   help="stop using the connected cluster; it and its jobs keep running")
    sub.add_parser("cluster", add_help=False, help="the cluster's TaskManagers and what runs in each slot")
    sub.add_parser("ha", add_help=False,
                   help="a highly available cluster: ZooKeeper connection, leader, contenders, persisted jobs")
    sub.add_parser("webui", add_help=False,
                   help="a link to the cluster's Flink Web UI and REST API (and the UI itself, in a notebook)")
    sub.add_parser("jobs", add_help=False, help="the jobs of the cluster with their status")
    logs = sub.add_parser("logs", add_help=False,
                          help="the last lines of the JobManager's log file (the engine's INFO lines go there, not to "
                               "the notebook)")
    logs.add_argument("-n", "--lines", type=positive_int, default=50, help="how many of the last lines (default 50)")
    submit = sub.add_parser("submit", add_help=False, help="submit the current dataflow (env.execute_async)")
    submit.add_argument("--name", "-n", type=nonblank, default=None, help="job name")
    cancel = sub.add_parser("cancel", add_help=False, help="cancel a job")
    cancel.add_argument("job", type=nonblank, help="job id (or its first characters) or job name")
    checkpoint = sub.add_parser("checkpoint", add_help=False, help="take a checkpoint of a running job now")
    checkpoint.add_argument("job", nargs="?", type=nonblank, default=None, help="job id prefix or name (default: the only running job)")
    savepoint = sub.add_parser("savepoint", add_help=False, help="take a savepoint of a running job")
    savepoint.add_argument("job", nargs="?", type=nonblank, default=None,
                           help="job id prefix or name (default: the only running job)")
    savepoint.add_argument("--dir", "-d", type=nonblank, default=None,
                           help="target directory (default: execution.checkpointing.savepoint-dir or ./savepoints)")
    savepoint.add_argument("--stop", action="store_true",
                           help="stop the job with the savepoint (stop-with-savepoint: the job ends FINISHED)")
    savepoint.add_argument("--drain", action="store_true",
                           help="with --stop: emit MAX_WATERMARK first, so event-time windows and timers fire")
    restore = sub.add_parser("restore", add_help=False, help="submit the dataflow starting from a checkpoint or savepoint")
    restore.add_argument("path", type=nonblank, help="a savepoint or chk-N checkpoint directory")
    restore.add_argument("--parallelism", "-p", type=parallelism, default=None,
                         help="run at this parallelism (operators without an explicit one)")
    restore.add_argument("--name", "-n", type=nonblank, default=None, help="job name")
    history = sub.add_parser("checkpoints", add_help=False,
                             help="checkpoint history: id, status, duration, size, acks (live, with controls, in a notebook)")
    history.add_argument("job", nargs="?", type=nonblank, default=None, help="only this job (id prefix or name)")
    kill = sub.add_parser("kill-taskmanager", add_help=False,
                          help="kill a TaskManager as if its process died (failure injection)")
    kill.add_argument("taskmanager", type=nonblank, help="TaskManager number (1, 2 ...) or id (taskmanager-2, TM2)")
    kill.add_argument("--replace", action="store_true", help="start a replacement TaskManager afterwards")
    fail = sub.add_parser("fail", add_help=False, help="make an operator's running subtasks fail (failure injection)")
    fail.add_argument("operator", type=nonblank, help="operator name, uid or chain name")
    fail.add_argument("--job", "-j", type=nonblank, default=None, help="job id prefix or name (default: the only running job)")
    fail.add_argument("--subtask", type=positive_int, default=None, help="only this subtask (1-based)")
    metrics = sub.add_parser("metrics", add_help=False, help="metrics per subtask as a table")
    metrics.add_argument("job", nargs="?", type=nonblank, default=None, help="only this job (id prefix or name)")
    metrics.add_argument("--live", "-l", action="store_true",
                         help="a live view of one job: rates, busy and backpressure per vertex and subtask")
    sub.add_parser("slots", add_help=False, help="the cluster view: TaskManagers, slots and the subtasks in them (live)")
    dashboard = sub.add_parser("dashboard", add_help=False,
                               help="a job's live dashboard: graph, metrics, checkpoints with controls, results")
    dashboard.add_argument("job", nargs="?", type=nonblank, default=None, help="job id prefix or name (default: the running job)")
    peek = sub.add_parser("peek", add_help=False, help="the records an operator of a running job emits right now")
    peek.add_argument("operator", type=nonblank, help="operator uid or name (or a chain's name)")
    peek.add_argument("--job", "-j", type=nonblank, default=None, help="job id prefix or name (default: the only running job)")
    peek.add_argument("-n", type=positive_int, default=20, help="records per subtask (default 20)")
    peek.add_argument("--seconds", "-s", type=positive_float, default=1.0,
                      help="how long to look at most, in seconds > 0 (default 1)")
    state = sub.add_parser("state", add_help=False,
                           help="the keyed state of a running job's operator as a table (from a savepoint)")
    state.add_argument("names", nargs="+", type=nonblank, metavar="[JOB] OPERATOR",
                       help="job id prefix or name (default: the only running job), then the operator's uid or name")
    state.add_argument("--key", "-k", default=None, help="only this key")
    state.add_argument("--state", type=nonblank, default=None, help="only this state (its descriptor's name)")
    results = sub.add_parser("results", add_help=False, help="the last records of a job's collect or pandas sink (live)")
    results.add_argument("job", nargs="?", type=nonblank, default=None, help="job id prefix or name (default: the running job)")
    return parser


def _split(line: str) -> list[str]:
    try:
        return shlex.split(line)
    except ValueError as exc:
        raise UsageError(f"%flink: cannot parse {line!r}: {exc}") from None


def _parse(parser: MagicArgumentParser, args: list[str], prefix: str) -> argparse.Namespace:
    try:
        return parser.parse_args(args)
    except UsageError as exc:
        raise UsageError(f"{prefix}: {exc}") from None


def parse_cell_options(line: str) -> argparse.Namespace:
    """Parse the ``%%flink`` line; a mistake raises a one-line UsageError."""
    return _parse(cell_parser(), _split(line), "%%flink")


def parse_line(line: str) -> argparse.Namespace:
    """Parse a ``%flink`` line; an unknown subcommand or option raises a one-line UsageError."""
    args = _split(line)
    if not args:
        return argparse.Namespace(subcommand="help")
    return _parse(line_parser(), args, "%flink")


def usage(subcommand: Optional[str] = None) -> str:
    """The help text of every subcommand and of the cell magic's options."""
    parts = [line_parser().format_help()]
    sub_actions = [a for a in line_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    for action in sub_actions:
        for name, sub in action.choices.items():
            if subcommand in (None, name):
                parts.append(sub.format_help())
    if subcommand is None:
        parts.append(cell_parser().format_help())
    return "\n".join(parts)
