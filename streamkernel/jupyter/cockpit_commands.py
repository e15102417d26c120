"""The cockpit's ``%flink`` subcommands and when its views appear.

* ``%flink slots``: the cluster view (TaskManager cards, slots and the subtasks in them);
  ``%flink start`` shows it too.
* ``%flink dashboard [JOB]``: the whole job dashboard; a job submitted from the notebook
  (``%%flink --submit``, ``%flink submit``, ``client = env.execute_async()`` in any cell)
  shows it by itself.
* ``%flink metrics --live [JOB]``, ``%flink checkpoints [JOB]``, ``%flink results [JOB]``:
  one part of it (vertex and subtask tables; the checkpoint history with its buttons; the
  last records of the job's collect or pandas sink).

In a kernel (a notebook, JupyterLab) these are live widgets redrawn by the cluster's
refresher; in a terminal IPython they print the same content as text, once.
"""

from __future__ import annotations

import sys
from typing import Any, Callable, Optional, Sequence

from IPython.core.error import UsageError

from streamkernel.jupyter.cluster_commands import matching_jobs

__all__ = ["CockpitCommands", "widgets_frontend"]


def widgets_frontend(shell: Any) -> bool:
    """True when ``shell`` is a kernel a notebook frontend talks to (widgets can show)."""
    return type(shell).__name__ == "ZMQInteractiveShell" or getattr(shell, "kernel", None) is not None


class CockpitCommands:
    """Shows the cockpit's views for a :class:`ClusterCommands` (its session and display)."""

    def __init__(self, cluster_commands: Any, display: Callable[[Any], None],
                 live: Optional[Callable[[], bool]] = None) -> None:
        self.cluster_commands = cluster_commands
        self.display = display
        self._live = live or (lambda: widgets_frontend(cluster_commands.session.shell))
        self._shown_jobs: set[str] = set()
        self._jobs_before: set[str] = set()

    @property
    def live(self) -> bool:
        """Whether views are widgets (a kernel) or printed text (a terminal)."""
        return self._live()

    # -------------------------------------------------------------- the views
    def show_cluster(self, cluster: Any) -> Any:
        """The cluster view: a live widget, or text."""
        from streamkernel.jupyter.widgets.models import cluster_model
        from streamkernel.jupyter.widgets.text import cluster_text

        if not self.live:
            print(cluster_text(cluster_model(cluster.inspection.snapshot())))
            return None
        from streamkernel.jupyter.widgets.cockpit import ClusterView
        from streamkernel.jupyter.widgets.refresher import refresher_for

        view = ClusterView(cluster)
        refresher_for(cluster).add(view)
        self.display(view)
        return view

    def show_job(self, cluster: Any, job_id: str, parts: Sequence[str]) -> Any:
        """A job dashboard with ``parts`` (a live widget), or the same content as text."""
        from streamkernel.jupyter.widgets.models import find_job, job_model

        self._shown_jobs.add(job_id)
        if not self.live:
            from streamkernel.jupyter.widgets.cockpit import results_frame
            from streamkernel.jupyter.widgets.text import checkpoints_frame, job_text

            job = find_job(cluster.inspection.snapshot(), job_id)
            if job is None:  # the callers resolved job_id on this cluster: it cannot be gone
                raise UsageError(f"%flink: the cluster has no job {job_id!r}")
            model = job_model(job)
            if "results" in parts and len(parts) == 1:
                found = results_frame(cluster, job_id)
                print("No collect or pandas sink in this job." if found is None
                      else f"{found[1]:,} records; the last {len(found[0])}:\n{found[0].to_string(index=False)}")
            elif "checkpoints" in parts and "subtasks" not in parts:
                print(checkpoints_frame(model).to_string(index=False) if model.checkpoints else "No checkpoint yet.")
            else:
                print(job_text(model))
            return None
        from streamkernel.jupyter.widgets.cockpit import JobDashboard
        from streamkernel.jupyter.widgets.refresher import refresher_for

        dashboard = JobDashboard(cluster, job_id, parts,
                                 on_restored=lambda client: self._shown_jobs.add(str(client.get_job_id())))
        refresher_for(cluster).add(dashboard)
        self.display(dashboard)
        return dashboard

    # ------------------------------------------------------------ subcommands
    def slots(self, args: Any) -> Any:
        """``%flink slots``."""
        return self.show_cluster(self.cluster_commands.cluster_or_usage("slots"))

    def dashboard(self, args: Any) -> Any:
        """``%flink dashboard [JOB]``."""
        from streamkernel.jupyter.widgets.cockpit import JOB_PARTS

        cluster = self.cluster_commands.cluster_or_usage("dashboard")
        return self.show_job(cluster, self._job(cluster, args.job, "dashboard"), JOB_PARTS)

    def metrics_live(self, args: Any) -> Any:
        """``%flink metrics --live [JOB]``."""
        cluster = self.cluster_commands.cluster_or_usage("metrics")
        return self.show_job(cluster, self._job(cluster, args.job, "metrics"), ("header", "vertices", "subtasks"))

    def checkpoints(self, args: Any) -> Any:
        """``%flink checkpoints [JOB]`` as the checkpoint panel."""
        cluster = self.cluster_commands.cluster_or_usage("checkpoints")
        return self.show_job(cluster, self._job(cluster, args.job, "checkpoints"), ("header", "checkpoints"))

    def results(self, args: Any) -> Any:
        """``%flink results [JOB]``."""
        cluster = self.cluster_commands.cluster_or_usage("results")
        return self.show_job(cluster, self._job(cluster, args.job, "results"), ("results",))

    @staticmethod
    def _job(cluster: Any, wanted: Optional[str], command: str) -> str:
        """The job ``wanted`` (id prefix or name), else the running one, else the newest."""
        jobs = sorted(cluster.jobs(), key=lambda j: j.start_time, reverse=True)
        if not jobs:
            raise UsageError(f"%flink {command}: the cluster has no job yet; submit one (%%flink --submit)")
        if wanted is None:
            running = [j for j in jobs if not j.status.is_globally_terminal_state()]
            return str((running or jobs)[0].job_id)
        matches = matching_jobs(jobs, wanted, command)
        if len(matches) != 1:
            listing = ", ".join(f"{j.job_id} ({j.name}, {j.status.name})" for j in jobs)
            what = "no job matches" if not matches else "several jobs match"
            raise UsageError(f"%flink {command}: {what} {wanted!r}; jobs: {listing}")
        return str(matches[0].job_id)

    # ---------------------------------------------- dashboards for submissions
    def before_cell(self, *_: Any) -> None:
        """IPython ``pre_run_cell``: remember the jobs that exist before the cell (of a connected
        cluster only when views are live: that costs a request; an unreachable one counts as none)."""
        remote = self.cluster_commands.connection.remote
        if remote is not None and not self.live:
            self._jobs_before = set()
            return
        cluster = self.cluster_commands.active_cluster()  # None when no job ran yet: nothing imported
        try:
            self._jobs_before = {str(j.job_id) for j in cluster.jobs()} if cluster is not None else set()
        except Exception:  # noqa: BLE001 - never break the user's cell for a view (a remote cluster gone)
            self._jobs_before = set()

    def after_cell(self, *_: Any) -> None:
        """IPython ``post_run_cell``: a job the cell submitted and left running gets its dashboard
        when the notebook holds its JobClient (``client = env.execute_async()``, or the cell's
        value), unless one is shown already. Jobs a cell submits for itself (a collect loop on
        a thread, a helper function's own client) do not."""
        cluster = self.cluster_commands.active_cluster()
        if cluster is None or not self.live:
            return
        from streamkernel.common.job_client import JobClient
        from streamkernel.jupyter.widgets.cockpit import JOB_PARTS

        held = {str(value.get_job_id()) for value in list(self.cluster_commands.session.shell.user_ns.values())
                if isinstance(value, JobClient)}
        try:
            jobs = cluster.jobs()
        except Exception as error:  # noqa: BLE001 - never break the user's cell for a view
            print(f"streamkernel: could not list the jobs of {cluster!r}: {error}", file=sys.stderr)
            return
        for job in jobs:
            job_id = str(job.job_id)
            if (job_id in held and job_id not in self._jobs_before and job_id not in self._shown_jobs
                    and not job.status.is_globally_terminal_state()):
                try:
                    self.show_job(cluster, job_id, JOB_PARTS)
                except Exception as error:  # noqa: BLE001 - never break the user's cell for a view
                    print(f"streamkernel: could not show the dashboard of job {job_id}: {error}", file=sys.stderr)
