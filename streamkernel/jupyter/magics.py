"""The ``%flink`` line magic and ``%%flink`` cell magic.

``%%flink [--show stream|job|execution|none] [--parallelism N] [--name NAME] [--reset]``
runs the cell's Python with ``env`` bound; every cell adds to the same dataflow, which is
drawn afterwards with the operators this cell added highlighted.
``%flink show stream|job|execution|plan`` draws the current dataflow at any time;
``%flink help`` lists every subcommand. Mistakes in the magic's own line are one-line
``UsageError`` s; an exception in the cell's code is the user's, shown at the user's line.
"""

from __future__ import annotations

import argparse
import contextlib
from typing import Any, Iterator, Optional

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_cell_magic, magics_class
from IPython.display import display

from streamkernel.errors import StreamKernelError
from streamkernel.jupyter import commands
from streamkernel.jupyter.cell_runner import run_cell_code
from streamkernel.jupyter.checkpoint_commands import CheckpointCommands
from streamkernel.jupyter.cluster_commands import ClusterCommands
from streamkernel.jupyter.cockpit_commands import CockpitCommands
from streamkernel.jupyter.debug_commands import DebugCommands
from streamkernel.jupyter.display import GraphDisplay, PlanDisplay
from streamkernel.jupyter.session import NotebookSession

__all__ = ["FlinkMagics"]


@magics_class
class FlinkMagics(Magics):
    """The ``flink`` magic in both forms; holds the notebook's :class:`NotebookSession`."""

    def __init__(self, shell: Any) -> None:
        super().__init__(shell)
        self.session = NotebookSession(shell)
        self.cluster_commands = ClusterCommands(self.session, lambda obj: display(obj))
        self.checkpoint_commands = CheckpointCommands(self.cluster_commands)
        self.cockpit = CockpitCommands(self.cluster_commands, lambda obj: display(obj))
        self.cluster_commands.cockpit = self.cockpit
        self.debug_commands = DebugCommands(self.cluster_commands, lambda obj: display(obj))

    @line_cell_magic
    def flink(self, line: str, cell: Optional[str] = None) -> None:
        """Build and inspect a Flink-style dataflow from the notebook.

        Cell magic: ``%%flink [--show stream|job|execution|none] [--parallelism N]
        [--name NAME] [--reset] [--taskmanagers T] [--slots S] [--no-slot-sharing]``
        runs the cell with ``env`` bound and draws the dataflow, new operators highlighted.

        Line magic: ``%flink show [stream|job|execution|plan]``, ``%flink reset``,
        ``%flink start [--taskmanagers N] [--slots S]``, ``%flink stop``, ``%flink cluster``,
        ``%flink connect HOST:PORT|zookeeper://HOST:PORT/CLUSTER-ID [--secret-file FILE]``, ``%flink disconnect``,
        ``%flink ha``,
        ``%flink jobs``, ``%flink logs [-n N]``, ``%flink submit``, ``%flink cancel JOB``, ``%flink metrics [JOB]``,
        ``%flink kill-taskmanager TM``, ``%flink fail OPERATOR``, ``%flink checkpoint [JOB]``,
        ``%flink savepoint [JOB] [--dir D] [--stop [--drain]]``, ``%flink restore PATH [--parallelism N]``,
        ``%flink checkpoints [JOB]``, ``%flink slots``, ``%flink dashboard [JOB]``,
        ``%flink metrics --live [JOB]``, ``%flink results [JOB]``, ``%flink peek OPERATOR``,
        ``%flink state [JOB] OPERATOR [--key K]``,
        ``%flink help`` (every subcommand with its options).
        """
        __tracebackhide__ = True  # noqa: F841 - hide this frame from the user's tracebacks
        if cell is None:
            self._line(line)
        else:
            self._cell(line, cell)

    # ---------------------------------------------------------------- cell
    def _cell(self, line: str, cell: str) -> None:
        __tracebackhide__ = True  # noqa: F841
        options = commands.parse_cell_options(line)
        if options.reset:
            self.session.reset(options.name)
        elif options.name:
            self.session.set_job_name(options.name)
        before = self.session.node_ids()
        env = self.session.env
        saved_parallelism = env.get_config().get_parallelism()
        if options.parallelism is not None:
            env.set_parallelism(options.parallelism)
        try:
            run_cell_code(self.shell, cell)
        finally:
            # --parallelism applies to this cell's operators only: restore the environment.
            if options.parallelism is not None and env is self.session.env:
                env.get_config().set_parallelism(saved_parallelism)
        if options.show != "none":
            new = self.session.node_ids() - before
            self._show(options.show, options, highlight=new)
        if options.submit:
            with self._remote_errors("%%flink --submit"):
                self.cluster_commands.submit(self.session.job_name())

    # ---------------------------------------------------------------- line
    def _line(self, line: str) -> None:
        args = commands.parse_line(line)
        with self._remote_errors(f"%flink {args.subcommand}"):
            self._dispatch(args)

    @contextlib.contextmanager
    def _remote_errors(self, command: str) -> Iterator[None]:
        """While connected, the REST client's errors (the cluster gone, a request refused) as one line."""
        try:
            yield
        except StreamKernelError as exc:
            if self.cluster_commands.connection.remote is None:
                raise
            from streamkernel.runtime.highavailability.leader_follower import NoLeaderError
            from streamkernel.runtime.rest.client import ClusterUnreachableError, RestClientError

            if not isinstance(exc, (ClusterUnreachableError, RestClientError, NoLeaderError)):
                raise
            raise UsageError(f"{command}: {exc}") from None

    def _dispatch(self, args: argparse.Namespace) -> None:
        if args.subcommand == "help":
            print(commands.usage())
        elif args.subcommand == "reset":
            self.session.reset(args.name)
        elif args.subcommand == "show":
            if args.what == "plan":
                display(PlanDisplay(self._env_or_usage().get_execution_plan()))
            else:
                self._show(args.what, args)
        elif args.subcommand == "submit":
            self._env_or_usage()
            self.cluster_commands.submit(args.name)
        elif args.subcommand == "checkpoints" and self.cockpit.live:
            self.cockpit.checkpoints(args)
        elif args.subcommand == "metrics" and args.live:
            self.cockpit.metrics_live(args)
        elif args.subcommand in ("slots", "dashboard", "results"):
            getattr(self.cockpit, args.subcommand)(args)
        elif args.subcommand in ("peek", "state"):
            getattr(self.debug_commands, args.subcommand)(args)
        elif args.subcommand in ("checkpoint", "savepoint", "restore", "checkpoints"):
            getattr(self.checkpoint_commands, args.subcommand)(args)
        elif args.subcommand == "ha":
            from streamkernel.jupyter.ha_commands import show_ha

            show_ha(self.cluster_commands)
        elif args.subcommand in ("connect", "disconnect"):
            getattr(self.cluster_commands.connection, args.subcommand)(args)
        elif args.subcommand in ("start", "stop", "cluster", "webui", "jobs", "cancel", "metrics", "kill-taskmanager",
                                 "fail", "logs"):
            getattr(self.cluster_commands, args.subcommand.replace("-", "_"))(args)
        else:  # pragma: no cover - argparse restricts the choices
            raise UsageError(f"%flink: unknown subcommand {args.subcommand!r}")

    # ------------------------------------------------------------- display
    def _env_or_usage(self) -> Any:
        env = self.session.env
        if not env.transformations:
            raise UsageError("%flink: the dataflow is empty; add a source in a %%flink cell first")
        return env

    def _show(self, what: str, options: argparse.Namespace, highlight: frozenset[int] = frozenset()) -> None:
        env = self.session.env
        if not env.transformations:
            print("The dataflow is empty: add a source, e.g. env.from_collection([...]).")
            return
        try:
            graph = self._graph(env, what, options)
        except StreamKernelError as exc:
            raise UsageError(f"%flink show {what}: {exc}") from None
        display(GraphDisplay(graph, highlight=highlight))

    def _graph(self, env: Any, what: str, options: argparse.Namespace) -> Any:
        if what == "stream":
            return env.get_stream_graph()
        if what == "job":
            return env.get_job_graph()
        return env.get_execution_graph(taskmanagers=options.taskmanagers or 1,
                                       slots_per_taskmanager=options.slots,
                                       slot_sharing=not options.no_slot_sharing)


# ``%flink?`` shows the magic's docstring: end it with every subcommand and its options, as
# ``%flink help`` prints them (IPython's magic_arguments parsers, formatted once at import).
FlinkMagics.flink.__doc__ = (FlinkMagics.flink.__doc__ or "") + "\n" + commands.usage()
