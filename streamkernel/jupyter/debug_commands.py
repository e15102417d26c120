"""The debugging subcommands of ``%flink``: look at what a running job does, without stopping it.

* ``%flink peek OPERATOR [--job JOB] [-n N] [--seconds S]``: the last records an operator
  emits (every running subtask, for a moment: :meth:`MiniCluster.inspection.peek`), as a DataFrame
  with the subtask, the record and its timestamp.
* ``%flink state [JOB] OPERATOR [--key K] [--state NAME]``: the operator's keyed state as a
  DataFrame, read from a savepoint taken for the purpose (a consistent snapshot of every
  subtask, as Flink's State Processor API reads savepoints) and deleted afterwards. ``--key``
  keeps one key (compared as a Python literal when it parses as one, else as text).
"""

from __future__ import annotations

import argparse
import ast
import shutil
import tempfile
from typing import Any, Callable

from IPython.core.error import UsageError

__all__ = ["DebugCommands"]


def _same_key(wanted: str) -> Callable[[Any], bool]:
    try:
        literal = ast.literal_eval(wanted)
    except (ValueError, SyntaxError):
        literal = wanted
    return lambda key: key == literal or str(key) == wanted


class DebugCommands:
    """Runs ``peek`` and ``state`` for the notebook (with the cluster commands' helpers)."""

    def __init__(self, cluster_commands: Any, display: Callable[[Any], None]) -> None:
        self.cluster_commands = cluster_commands
        self.display = display

    def peek(self, args: argparse.Namespace) -> Any:
        """``%flink peek OPERATOR``: a DataFrame of the records the operator emits right now."""
        import pandas as pd

        cluster = self.cluster_commands.cluster_or_usage("peek")
        job = self.cluster_commands.running_job(cluster, args.job, "peek")
        try:
            rows = cluster.inspection.peek(job.job_id, args.operator, args.n, args.seconds)
        except ValueError as error:
            raise UsageError(f"%flink peek: {error}") from None
        frame = pd.DataFrame([{"subtask": name, "record": record, "timestamp": ts} for name, record, ts in rows],
                             columns=["subtask", "record", "timestamp"])
        if frame.empty:
            print(f"{args.operator!r} of job {job.name!r} emitted nothing in {args.seconds} s.")
        self.display(frame)
        return frame

    def state(self, args: argparse.Namespace) -> Any:
        """``%flink state [JOB] OPERATOR``: the operator's keyed state, from a fresh savepoint."""
        from streamkernel.state import read_checkpoint

        if len(args.names) > 2:
            raise UsageError(f"%flink state: expected [JOB] OPERATOR, got {' '.join(args.names)!r}")
        wanted_job, operator = (None, args.names[0]) if len(args.names) == 1 else args.names
        cluster = self.cluster_commands.cluster_or_usage("state")
        job = self.cluster_commands.running_job(cluster, wanted_job, "state")
        directory = tempfile.mkdtemp(prefix="streamkernel-state-")
        try:
            try:
                path = cluster.checkpoints.trigger_savepoint(job.job_id, directory)
            except (RuntimeError, TimeoutError, ValueError) as error:
                raise UsageError(f"%flink state: could not snapshot job {job.name!r}: {error}") from None
            view = read_checkpoint(path)
            try:
                frame = view.keyed_state(operator, args.state)
            except KeyError as error:
                raise UsageError(f"%flink state: {error.args[0] if error.args else error}") from None
        finally:
            shutil.rmtree(directory, ignore_errors=True)
        if args.key is not None:
            frame = frame[frame["key"].map(_same_key(args.key))].reset_index(drop=True)
        self.display(frame)
        return frame
