"""The checkpoint subcommands of ``%flink``: checkpoint, savepoint, restore, checkpoints.

Thin calls into the cluster's public API (``MiniCluster.checkpoints.trigger_checkpoint``,
``trigger_savepoint``, ``stop_with_savepoint``, ``checkpoint_history``) and into the
environment (restoring is submitting the dataflow with ``execution.state-recovery.path``).

``%flink restore`` checks before it submits what the job would otherwise only find out
in the background, after the cell has returned: that the path holds a valid checkpoint
(metadata and checksums) and that its state fits the dataflow at the new parallelism
(every operator's state has a matching uid, no parallelism above a max parallelism). The
check is the restore's own assignment (``assign_restored_state``), run once more up front.
"""

from __future__ import annotations

import argparse
import datetime
import functools
import os
from typing import Any

from IPython.core.error import UsageError

from streamkernel.common.configuration import Configuration
from streamkernel.jupyter.cluster_commands import matching_jobs

__all__ = ["CheckpointCommands", "HISTORY_COLUMNS", "ACK_COLUMNS"]

RECOVERY_PATH = "execution.state-recovery.path"

HISTORY_COLUMNS = ["job", "id", "type", "status", "trigger_time", "duration_ms", "state_size", "unaligned",
                   "persisted_data", "acknowledged", "path", "failure"]
"""The columns of the ``%flink checkpoints`` table (one row per checkpoint, newest first)."""
ACK_COLUMNS = ["job", "checkpoint", "task", "subtask", "ack_after_ms", "state_size", "unaligned", "persisted_data"]
"""The columns of the acknowledgement table of ``%flink checkpoints`` (one row per subtask)."""


class CheckpointCommands:
    """Runs the checkpoint subcommands for the notebook (uses the cluster commands' helpers).

    A checkpoint's or savepoint's path is bound to ``checkpoint`` / ``savepoint`` in the
    user's namespace, so the next line can say ``%flink restore {savepoint}``.
    """

    def __init__(self, cluster_commands: Any) -> None:
        self.cluster_commands = cluster_commands

    def checkpoint(self, args: argparse.Namespace) -> None:
        """``%flink checkpoint [JOB]``: take a checkpoint now and wait for it."""
        cluster = self.cluster_commands.cluster_or_usage("checkpoint")
        job = self.cluster_commands.running_job(cluster, args.job, "checkpoint")
        path = self._call(cluster.checkpoints.trigger_checkpoint, "checkpoint", job.job_id)
        self.cluster_commands.session.shell.push({"checkpoint": path})
        print(f"Checkpoint of job {job.name!r} completed: {path} (bound to `checkpoint`)")

    def savepoint(self, args: argparse.Namespace) -> None:
        """``%flink savepoint [JOB] [--dir D] [--stop [--drain]]``: take a savepoint (and stop the job)."""
        cluster = self.cluster_commands.cluster_or_usage("savepoint")
        if args.drain and not args.stop:
            raise UsageError("%flink savepoint: --drain needs --stop (it drains a job that stops)")
        job = self.cluster_commands.running_job(cluster, args.job, "savepoint")
        call: Any = (functools.partial(cluster.checkpoints.stop_with_savepoint, drain=args.drain) if args.stop
                     else cluster.checkpoints.trigger_savepoint)
        path = self._call(call, "savepoint", job.job_id, args.dir)
        self.cluster_commands.session.shell.push({"savepoint": path})
        stopped = " and stopped the job" if args.stop else ""
        print(f"Savepoint of job {job.name!r} written to {path}{stopped} (bound to `savepoint`). "
              f"Restore it with: %flink restore {{savepoint}}")

    # ------------------------------------------------------------------ restore
    def restore(self, args: argparse.Namespace) -> Any:
        """``%flink restore PATH [--parallelism N]``: submit the dataflow starting from PATH's state.

        The recovery path and the parallelism apply to this submission only, as
        ``flink run -s PATH -p N`` does: the notebook's environment keeps its settings.
        """
        env = self.cluster_commands.session.env
        if not env.transformations:
            raise UsageError("%flink restore: the dataflow is empty; build it again (the same program, with the "
                             "same uids) in a %%flink cell first, then restore")
        remote = self.cluster_commands.connection.remote
        # connected: a path only the cluster's machine can read is checked there, when the job starts
        completed = None if remote is not None and not os.path.exists(args.path) else _load(args.path)
        saved_default = env.get_parallelism()
        saved_parallelism = [(t, t.parallelism) for t in env.transformations]
        saved_path = env.to_configuration_dict().get(RECOVERY_PATH)
        env.configure(Configuration.from_dict({RECOVERY_PATH: str(args.path)}))
        submitted = False
        try:
            if args.parallelism is not None:
                env.override_parallelism(args.parallelism)
            at = f" at parallelism {args.parallelism}" if args.parallelism is not None else ""
            if completed is not None:
                self._check_assignment(env, completed, args)
                kind = "savepoint" if completed.is_savepoint else "checkpoint"
                print(f"Restoring {kind} {completed.checkpoint_id} ({completed.path}){at}.")
            else:
                print(f"Restoring {args.path}{at} on the cluster at {remote.rest_url} (not readable from this "
                      f"kernel: the cluster checks it when the job starts).")
            client = self.cluster_commands.submit(args.name)
            submitted = True
            return client
        finally:
            env.configure(Configuration.from_dict({RECOVERY_PATH: saved_path or ""}))
            env.set_parallelism(saved_default)
            if not submitted:  # the dataflow stays as it was, ready for another try
                for transformation, parallelism in saved_parallelism:
                    transformation.parallelism = parallelism

    @staticmethod
    def _check_assignment(env: Any, completed: Any, args: argparse.Namespace) -> None:
        from streamkernel.errors import InvalidProgramError
        from streamkernel.runtime.checkpoint.metadata import operator_key
        from streamkernel.runtime.checkpoint.restore import assign_restored_state

        graph = env.get_stream_graph()
        for node in graph.nodes:
            recorded = completed.metadata.operators.get(operator_key(node))
            if recorded is not None and recorded.max_parallelism and node.parallelism > recorded.max_parallelism:
                raise UsageError(
                    f"%flink restore: operator {node.name!r} would run at parallelism {node.parallelism}, above "
                    f"the max parallelism {recorded.max_parallelism} it had in {args.path} (keyed state is split "
                    f"into that many key groups, and a key group is never split); choose a parallelism of at "
                    f"most {recorded.max_parallelism}")
        try:
            assign_restored_state(completed, graph)
        except InvalidProgramError as exc:
            raise UsageError(f"%flink restore: {exc}") from None

    # ------------------------------------------------------------------ history
    def checkpoints(self, args: argparse.Namespace) -> None:
        """``%flink checkpoints [JOB]``: the checkpoint history as a table, then the
        per-subtask acknowledgements of each job's newest completed checkpoint."""
        cluster = self.cluster_commands.cluster_or_usage("checkpoints")
        everything = cluster.jobs()
        if not everything:
            raise UsageError("%flink checkpoints: no job has run on this cluster yet; submit one with %flink submit")
        jobs = everything if args.job is None else matching_jobs(everything, args.job, "checkpoints")
        if not jobs:
            raise UsageError(f"%flink checkpoints: no job matches {args.job!r}; jobs: {_listing(everything)}")
        import pandas as pd  # lazy: pandas only when a table is shown

        rows, acks = [], []
        for job in jobs:
            history = cluster.checkpoints.checkpoint_history(job.job_id)
            rows += [history_row(job.name, row) for row in history]
            latest = next((row for row in history if row["status"] == "COMPLETED"), None)
            if latest is not None:
                vertices = cluster.get_job(job.job_id).get_job_details().vertices
                acks += ack_rows(job.name, latest, {v.vertex_id: (v.name, v.parallelism) for v in vertices})
        if not rows:
            print("No checkpoints yet: enable them with env.enable_checkpointing(interval_ms), "
                  "or take one now with %flink checkpoint.")
            return
        self.cluster_commands.display(pd.DataFrame(rows, columns=HISTORY_COLUMNS))
        if acks:
            print("Acknowledgements of the newest completed checkpoint (or savepoint), one row per subtask "
                  "(ack_after_ms: from the trigger to the subtask's acknowledgement):")
            self.cluster_commands.display(pd.DataFrame(acks, columns=ACK_COLUMNS))

    @staticmethod
    def _call(function: Any, command: str, *args: Any) -> Any:
        from streamkernel.runtime.rest.client import ClusterUnreachableError, RestClientError

        try:
            return function(*args)
        except (ValueError, TimeoutError, RuntimeError, OSError, RestClientError, ClusterUnreachableError) as exc:
            raise UsageError(f"%flink {command}: {exc}") from None


def history_row(job_name: str, row: dict) -> dict:
    """One line of the ``%flink checkpoints`` table from a ``checkpoint_history`` row."""
    trigger = datetime.datetime.fromtimestamp(row["trigger_timestamp"] / 1000).strftime("%H:%M:%S.%f")[:-3]
    return {"job": job_name, "id": row["id"], "type": row["type"], "status": row["status"], "trigger_time": trigger,
            "duration_ms": row["duration_ms"], "state_size": row["state_size"],
            "unaligned": row.get("unaligned", False), "persisted_data": row.get("persisted_data", 0),
            "acknowledged": row["acknowledged"],
            "path": row["path"] or "", "failure": row["failure"] or ""}


def ack_rows(job_name: str, row: dict, vertices: dict[int, tuple[str, int]]) -> list[dict]:
    """One line per acknowledging subtask of a ``checkpoint_history`` row; ``vertices`` maps
    vertex ids to (name, parallelism). Subtasks count from 1, as in task names."""
    out = []
    for ack in row["subtasks"]:
        name, parallelism = vertices.get(ack["vertex_id"], (f"vertex {ack['vertex_id']}", None))
        out.append({"job": job_name, "checkpoint": row["id"], "task": name,
                    "subtask": f"{ack['subtask'] + 1}/{parallelism}" if parallelism else str(ack["subtask"] + 1),
                    "ack_after_ms": ack["duration_ms"], "state_size": ack["state_size"],
                    "unaligned": ack.get("unaligned", False), "persisted_data": ack.get("persisted_data", 0)})
    return out


def _load(path: str) -> Any:
    from streamkernel.errors import CheckpointCorruptedError
    from streamkernel.runtime.checkpoint.storage import load_checkpoint

    try:
        return load_checkpoint(path)
    except FileNotFoundError as exc:
        raise UsageError(f"%flink restore: {exc}; give a savepoint directory (the path %flink savepoint "
                         "printed) or a retained checkpoint (chk-N)") from None
    except CheckpointCorruptedError as exc:
        raise UsageError(f"%flink restore: {exc}; it cannot be restored: pick another savepoint or an "
                         "older checkpoint") from None


def _listing(jobs: list[Any]) -> str:
    return ", ".join(f"{j.job_id} ({j.name}, {j.status.name})" for j in jobs) or "none"

