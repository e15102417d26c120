"""The checkpoint subcommands of ``%flink``: checkpoint, savepoint, restore, checkpoints.

Thin calls into the cluster's public API (``MiniCluster.trigger_checkpoint``,
``trigger_savepoint``, ``stop_with_savepoint``, ``checkpoint_history``) and into the
environment (restoring is submitting the dataflow with ``execution.state-recovery.path``).
"""

from __future__ import annotations

import argparse
from typing import Any

from IPython.core.error import UsageError

from streamkernel.common.configuration import Configuration

__all__ = ["CheckpointCommands"]


class CheckpointCommands:
    """Runs the checkpoint subcommands for the notebook (uses the cluster commands' helpers)."""

    def __init__(self, cluster_commands: Any) -> None:
        self.cluster_commands = cluster_commands

    def checkpoint(self, args: argparse.Namespace) -> None:
        """``%flink checkpoint [JOB]``: take a checkpoint now and wait for it."""
        cluster = self.cluster_commands.cluster_or_usage("checkpoint")
        job = self.cluster_commands.running_job(cluster, args.job, "checkpoint")
        path = self._call(cluster.trigger_checkpoint, "checkpoint", job.job_id)
        print(f"Checkpoint of job {job.name!r} completed: {path}")

    def savepoint(self, args: argparse.Namespace) -> None:
        """``%flink savepoint [JOB] [--dir D] [--stop]``: take a savepoint (and stop the job)."""
        cluster = self.cluster_commands.cluster_or_usage("savepoint")
        job = self.cluster_commands.running_job(cluster, args.job, "savepoint")
        call = cluster.stop_with_savepoint if args.stop else cluster.trigger_savepoint
        path = self._call(call, "savepoint", job.job_id, args.dir)
        stopped = " and stopped the job" if args.stop else ""
        print(f"Savepoint of job {job.name!r} written to {path}{stopped}. Restore it with: %flink restore {path}")

    def restore(self, args: argparse.Namespace) -> Any:
        """``%flink restore PATH [--parallelism N]``: submit the dataflow starting from PATH's state."""
        session = self.cluster_commands.session
        env = session.env
        if not env.transformations:
            raise UsageError("%flink restore: the dataflow is empty; build it (with the same uids) in %%flink cells first")
        env.configure(Configuration.from_dict({"execution.state-recovery.path": args.path}))
        if args.parallelism is not None:
            env.override_parallelism(args.parallelism)
        return self.cluster_commands.submit(args.name)

    def checkpoints(self, args: argparse.Namespace) -> None:
        """``%flink checkpoints [JOB]``: the checkpoint history as a table."""
        cluster = self.cluster_commands.cluster_or_usage("checkpoints")
        jobs = [j for j in cluster.jobs() if args.job is None or str(j.job_id).startswith(args.job) or j.name == args.job]
        if not jobs:
            raise UsageError(f"%flink checkpoints: no job matches {args.job!r}")
        import pandas as pd  # lazy: pandas only when a table is shown

        rows = [dict(row, job=job.name) for job in jobs for row in cluster.checkpoint_history(job.job_id)]
        self.cluster_commands.display(pd.DataFrame(rows))

    @staticmethod
    def _call(function: Any, command: str, *args: Any) -> Any:
        try:
            return function(*args)
        except (ValueError, TimeoutError, RuntimeError) as exc:
            raise UsageError(f"%flink {command}: {exc}") from None
