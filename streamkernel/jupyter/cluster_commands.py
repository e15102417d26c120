"""The cluster and job subcommands of ``%flink``: start, stop, cluster, webui, jobs, submit, cancel, metrics.

Each is a thin call into the public Python API (``MiniCluster``, ``env.execute_async``,
``JobClient.cancel``) plus a display: pandas tables in the notebook, text in a terminal.
The cluster is the in-kernel MiniCluster, or while ``%flink connect`` ed the remote one
(:mod:`.connect_commands`), which offers the same interface.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any, Optional

from IPython.core.error import UsageError

from streamkernel.arguments import parse_dynamic_properties
from streamkernel.common.futures import result_within
from streamkernel.jupyter.connect_commands import ConnectCommands
from streamkernel.errors import InvalidProgramError, StreamKernelError

__all__ = ["ClusterCommands", "matching_jobs"]


def matching_jobs(jobs: list[Any], wanted: str, command: str) -> list[Any]:
    """The jobs (``MiniCluster.jobs()`` rows) ``wanted`` names (``select_jobs``: id, name, else id
    prefix); a blank ``wanted`` is a UsageError for ``%flink command``."""
    from streamkernel.common.job_status import select_jobs

    try:
        return select_jobs(wanted, jobs, lambda j: (str(j.job_id), j.name))
    except InvalidProgramError as exc:
        raise UsageError(f"%flink {command}: {exc}") from None


def _frame(rows: list[dict], columns: Optional[list[str]] = None) -> Any:
    import pandas as pd  # lazy: pandas only when a table is shown

    return pd.DataFrame(rows, columns=columns)


class ClusterCommands:
    """Runs the cluster/job subcommands for a :class:`NotebookSession`."""

    def __init__(self, session: Any, display: Any) -> None:
        self.session = session
        self.display = display
        self.clients: dict[str, Any] = {}
        self.cockpit: Any = None  # the CockpitCommands showing live views, set by the magics
        self.connection = ConnectCommands(session)

    # ------------------------------------------------------------- cluster
    def start(self, args: argparse.Namespace) -> Any:
        """``%flink start``: a MiniCluster that every environment in this kernel submits to."""
        from streamkernel.runtime.minicluster.minicluster import MiniCluster, current_cluster

        if self.connection.remote is not None:
            raise UsageError(f"%flink start: connected to the cluster at {self.connection.remote.rest_url}; "
                             f"%flink disconnect first (start runs a cluster in this kernel)")
        running = current_cluster()
        if running is not None and running.is_running:
            raise UsageError(f"%flink start: a cluster is already running ({running!r}); %flink stop it first")
        spark_session = None
        name = getattr(args, "spark_session", None)
        master = getattr(args, "master", None)
        if (name or master) and args.backend not in (None, "spark"):
            option = "--spark-session" if name else "--master"
            raise UsageError(f"%flink start: {option} is for the spark backend, not --backend {args.backend}")
        if name:
            spark_session = self.session.shell.user_ns.get(name)
            if spark_session is None:
                raise UsageError(f"%flink start: --spark-session {name}: no variable {name!r} in this notebook; "
                                 f"create it first (spark = SparkSession.builder.getOrCreate())")
            if not hasattr(spark_session, "sparkContext"):
                raise UsageError(f"%flink start: --spark-session {name}: {name!r} is a "
                                 f"{type(spark_session).__name__}, not a SparkSession")
        backend = "spark" if spark_session is not None or master else args.backend
        configuration = dynamic_configuration(getattr(args, "dynamic", None) or [])
        if getattr(args, "ha", None):
            configuration = _with_high_availability(args.ha, configuration)
        try:  # the sizes are checked against the backend before anything starts
            cluster = MiniCluster(taskmanagers=args.taskmanagers, slots_per_taskmanager=args.slots, backend=backend,
                                  configuration=configuration, spark_session=spark_session, spark_master=master)
            cluster.start()
        except StreamKernelError as exc:
            raise UsageError(f"%flink start: {_options(exc)}") from None
        self.session.shell.push({"cluster": cluster})
        print(f"Started {cluster!r}; bound to `cluster`. Every env.execute() in this kernel now runs on it.")
        if cluster.rest_url is not None:
            print("Flink's REST API (and Web UI: %flink webui) at")
            print(cluster.rest_url)
        if cluster.leadership is not None:
            _report_leadership(cluster)
        if self.cockpit is not None and self.cockpit.live:
            return self.cockpit.show_cluster(cluster)
        return self.cluster(args)

    def stop(self, args: argparse.Namespace) -> None:
        """``%flink stop``: cancel the jobs, stop the TaskManagers, leave no thread behind."""
        cluster = self.cluster_or_usage("stop")
        cluster.stop()
        if "streamkernel.jupyter.widgets.refresher" in sys.modules:  # the live views take their last picture
            from streamkernel.jupyter.widgets.refresher import refresher_for

            refresher = refresher_for(cluster)
            refresher.refresh_once()
            refresher.stop()
        print(f"Stopped {cluster!r}.")

    def webui(self, args: argparse.Namespace) -> None:
        """``%flink webui``: a link to the cluster's Web UI / REST API, and in a notebook the UI itself."""
        cluster = self.cluster_or_usage("webui")
        url = cluster.rest_url
        if url is None:
            raise UsageError("%flink webui: the cluster serves no REST API (it was started with rest=False)")
        from streamkernel.jupyter.cockpit_commands import widgets_frontend  # lazy: it imports this module

        print(f"Flink's Web UI and REST API: {url}")
        if widgets_frontend(self.session.shell):
            from IPython.display import HTML, IFrame

            self.display(HTML(f'<a href="{url}" target="_blank">Open Flink\'s Web UI ({url})</a>'))
            self.display(IFrame(url, width="100%", height=600))

    def cluster(self, args: argparse.Namespace) -> Any:
        """``%flink cluster``: one row per slot: TaskManager, slot, job and subtasks in it."""
        cluster = self.cluster_or_usage("cluster")
        rows = [{"taskmanager": tm.index + 1, "slot": slot.slot_id.slot_index + 1,
                 "job": slot.job_name or "", "subtasks": ", ".join(slot.tasks)}
                for tm in cluster.inspection.taskmanagers for slot in tm.slots]
        self.display(_frame(rows, ["taskmanager", "slot", "job", "subtasks"]))

    def cluster_or_usage(self, command: str) -> Any:
        """The running cluster (the connected one, else the kernel's), or a UsageError telling to
        ``%flink start`` one; a UsageError naming ``command`` when it cannot work remotely."""
        self.connection.refuse(command)
        cluster = self.active_cluster()
        if cluster is None or not cluster.is_running:
            raise UsageError(f"%flink {command}: no cluster is running; start one with %flink start "
                             f"(or %flink connect HOST:PORT to a running one)")
        return cluster

    def active_cluster(self) -> Any:
        """The connected cluster, else the kernel's current MiniCluster (None: neither)."""
        if self.connection.remote is not None:
            return self.connection.remote
        if "streamkernel.runtime.minicluster.minicluster" not in sys.modules:  # no cluster ever started
            return None
        from streamkernel.runtime.minicluster.minicluster import current_cluster

        return current_cluster()

    def logs(self, args: argparse.Namespace) -> None:
        """``%flink logs [-n N]``: the last lines of the JobManager's log (``cluster.jobmanager_log()``)."""
        cluster = self.cluster_or_usage("logs")
        text = cluster.jobmanager_log()
        where = getattr(cluster, "log_file", None) or f"{cluster.rest_url}/jobmanager/log"
        lines = text.splitlines()
        shown = lines[-args.lines:]
        print(f"{where}: the last {len(shown)} of {len(lines)} lines" if len(shown) < len(lines) else f"{where}:")
        print("\n".join(shown))

    # ---------------------------------------------------------------- jobs
    def jobs(self, args: argparse.Namespace) -> None:
        """``%flink jobs``: id, name, status and duration of every job of the cluster."""
        cluster = self.cluster_or_usage("jobs")
        rows = [{"job_id": str(j.job_id), "name": j.name, "status": j.status.name, "duration_ms": j.duration_ms}
                for j in cluster.jobs()]
        self.display(_frame(rows, ["job_id", "name", "status", "duration_ms"]))

    def submit(self, name: Optional[str]) -> Any:
        """Submit the notebook's dataflow without waiting (``env.execute_async``); returns the JobClient."""
        client = self.session.env.execute_async(name)
        job_id = str(client.get_job_id())
        self.clients[job_id] = client
        self.session.shell.push({"job": client})
        print(f"Submitted job {job_id}; its JobClient is bound to `job` (job.cancel(), "
              f"job.get_job_status().result(), job.get_job_execution_result().result()).")
        if self.cockpit is not None and self.cockpit.live:
            from streamkernel.jupyter.widgets.cockpit import JOB_PARTS

            cluster = self.active_cluster()
            if cluster is not None:
                self.cockpit.show_job(cluster, job_id, JOB_PARTS)
        return client

    def cancel(self, args: argparse.Namespace) -> None:
        """``%flink cancel JOB``: cancel a job by id prefix or name."""
        cluster = self.cluster_or_usage("cancel")
        matches = matching_jobs(cluster.jobs(), args.job, "cancel")
        if len(matches) != 1:
            known = ", ".join(f"{j.job_id} ({j.name})" for j in cluster.jobs()) or "none"
            what = "no job matches" if not matches else "several jobs match"
            raise UsageError(f"%flink cancel: {what} {args.job!r}; jobs: {known}")
        result_within(cluster.get_job(matches[0].job_id).cancel(), 10)
        print(f"Cancelled job {matches[0].job_id} ({matches[0].name}).")

    def kill_taskmanager(self, args: argparse.Namespace) -> None:
        """``%flink kill-taskmanager TM``: the TaskManager dies; its jobs recover by their restart strategy."""
        cluster = self.cluster_or_usage("kill-taskmanager")
        target: Any = args.taskmanager
        if target.isdigit():
            target = f"TM{int(target)}"  # the notebook counts TaskManagers from 1, as the slot table does
        try:
            killed = cluster.failures.kill_taskmanager(target)
        except KeyError as exc:
            raise UsageError(f"%flink kill-taskmanager: {exc.args[0] if exc.args else exc}") from None
        print(_kill_story(cluster.backend, killed, cluster.taskmanager_backend.replaces_lost))
        if args.replace:
            print(f"Started {cluster.failures.add_taskmanager()} as a replacement.")

    def fail(self, args: argparse.Namespace) -> None:
        """``%flink fail OPERATOR``: inject an exception into an operator's running subtasks."""
        from streamkernel.runtime.jobmaster.failure_injection import FailureInjectionError, NoSuchSubtaskError

        cluster = self.cluster_or_usage("fail")
        job = self.running_job(cluster, args.job, "fail")
        subtask = None if args.subtask is None else args.subtask - 1  # the option counts from 1, the API from 0
        try:
            failed = cluster.failures.fail_operator(job.job_id, args.operator, subtask)
        except NoSuchSubtaskError as exc:
            raise UsageError(f"%flink fail: operator {exc.operator!r} of {exc.job} runs {exc.parallelism} "
                             f"subtask(s), 1..{exc.parallelism} (--subtask counts from 1, as subtask names do); "
                             f"there is no subtask {args.subtask}") from None
        except FailureInjectionError as exc:
            raise UsageError(f"%flink fail: {exc}") from None
        print(f"Injected a failure into {', '.join(failed)} of job {job.name!r}; it recovers by its restart "
              f"strategy (or fails if it has none).")

    def running_job(self, cluster: Any, wanted: Optional[str], command: str) -> Any:
        """The one running job matching ``wanted`` (id prefix or name; None: the only one)."""
        jobs = [j for j in cluster.jobs() if not j.status.is_globally_terminal_state()]
        if wanted is not None:
            jobs = matching_jobs(jobs, wanted, command)
        if len(jobs) != 1:
            listing = ", ".join(f"{j.job_id} ({j.name}, {j.status.name})" for j in cluster.jobs()) or "none"
            how = "--job JOB" if command in ("fail", "peek") else "its name or id after the subcommand"
            if jobs:
                what = f"several running jobs match; pick one with {how}"
            elif wanted is None:
                what = "no job is running"
            else:
                what = f"no running job matches {wanted!r}"
            raise UsageError(f"%flink {command}: {what}; jobs: {listing}")
        return jobs[0]

    def metrics(self, args: argparse.Namespace) -> None:
        """``%flink metrics [JOB]``: records, rates, busy/backpressure ratios, watermarks per subtask."""
        from streamkernel.runtime.core.metrics import metric_rows

        cluster = self.cluster_or_usage("metrics")
        if args.job is not None and not matching_jobs(cluster.jobs(), args.job, "metrics"):
            raise UsageError(f"%flink metrics: no job matches {args.job!r} (by id, id prefix or name); "
                             f"jobs: {_listing(cluster.jobs())}")
        self.display(_frame(metric_rows(cluster.inspection.snapshot(), args.job)))


def _listing(jobs: list[Any]) -> str:
    return ", ".join(f"{j.job_id} ({j.name}, {j.status.name})" for j in jobs) or "none"


def _options(error: BaseException) -> str:
    """A MiniCluster error in the terms of ``%flink start``'s options."""
    from streamkernel.runtime.minicluster.limits import ClusterSizeError

    text = str(error)
    for argument, option in (("taskmanagers =", "--taskmanagers"), ("slots_per_taskmanager =", "--slots")):
        text = text.replace(f"MiniCluster: {argument}", option)
    if isinstance(error, ClusterSizeError) and "raise streamkernel." in text:
        text += " (-D KEY=VALUE sets a key)"
    return text.removeprefix("MiniCluster: ")


def dynamic_configuration(entries: list[str], command: str = "start") -> dict[str, str]:
    """``-D KEY=VALUE`` options of ``%flink COMMAND`` as a configuration dict (UsageError for a malformed one)."""
    try:
        return parse_dynamic_properties(entries, f"%flink {command}: -D")
    except ValueError as error:
        raise UsageError(str(error).replace("expected key=value", "expected KEY=VALUE")) from None


def _kill_story(backend: str, killed: str, replaced_by_resource_manager: bool = True) -> str:
    """What happens after ``%flink kill-taskmanager`` on each backend, for the notebook."""
    restart = "the JobMaster restarts the affected jobs by their restart strategy"
    if backend == "local":
        return (f"Killed {killed}: its tasks stopped without a word; the ResourceManager notices the missed "
                f"heartbeats and {restart}.")
    if backend == "spark":
        replaced = "Spark relaunches its task, which registers as a new TaskManager"
    elif replaced_by_resource_manager:
        replaced = "a new TaskManager process replaces it"
    else:
        replaced = "nothing replaces it (streamkernel.taskmanager.replace-lost is false; `--replace` starts one)"
    return (f"Killed {killed} (SIGKILL to its process): the ResourceManager notices its closed connection at once "
            f"and {restart}; {replaced}.")


def _with_high_availability(url: str, configuration: dict[str, str]) -> dict[str, str]:
    """``--ha zookeeper://QUORUM/CLUSTER-ID``: the HA keys of that cluster on top of ``configuration``
    (whose own ``high-availability.storageDir`` wins; else ``$STREAMKERNEL_HOME/ha-storage``)."""
    from streamkernel.runtime.highavailability.zookeeper_url import ZooKeeperUrlError, ha_configuration_from_url
    from streamkernel.runtime.rest.cluster_secret import streamkernel_home

    storage = configuration.get("high-availability.storageDir") or str(streamkernel_home() / "ha-storage")
    try:
        return {**configuration, **ha_configuration_from_url(url, storage)}
    except ZooKeeperUrlError as error:
        raise UsageError(f"%flink start --ha: {error}") from None


def _report_leadership(cluster: Any) -> None:
    """Say whether this kernel's JobManager leads its cluster (and what it recovered), or who does."""
    leadership = cluster.leadership
    leader = leadership.wait_for_leader(10.0)  # decided within a moment when ZooKeeper answers
    if leader is None:
        print("High availability: no JobManager leads yet; this one is a contender (%flink ha shows the election).")
        return
    cluster_id = cluster.configuration.get("high-availability.cluster-id", "/default")
    if leader.address == cluster.rest_url:
        recovered = leadership.recovered_jobs
        print(f"High availability: this kernel's JobManager leads cluster {cluster_id}"
              + (f"; it recovered {len(recovered)} job(s): {', '.join(recovered)}" if recovered else
                 "; no job to recover"))
    else:
        print(f"High availability: this kernel's JobManager is a standby of cluster {cluster_id}; the leader's "
              f"REST API is at {leader.address}")
