"""Ending the ``spark`` backend's TaskManager jobs when asking them through the protocol was not enough.

The fallback of :meth:`SparkTaskManagerLauncher.stop`: cancel the job group (Spark kills
the tasks and, after ``spark.python.task.killTimeout``, SIGKILLs their Python workers),
wait until Spark has ended the jobs — so that a host killed afterwards is not taken for a
failed task to retry — then SIGKILL the hosts still running at once, and wait for the
processes to be gone.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from typing import Any, Callable, Iterable, Sequence

from streamkernel.runtime.taskmanager.spark_host import machine_identity

__all__ = ["active_jobs_of_group", "cancel_and_wait", "wait_until_gone", "pid_alive", "wait_for_python_workers"]

_LOG = logging.getLogger(__name__)


def active_jobs_of_group(spark_context: Any, group: str) -> list[int]:
    """Ids of the jobs of ``group`` that Spark still runs."""
    tracker = spark_context.statusTracker()
    running = []
    for job_id in tracker.getJobIdsForGroup(group):
        info = tracker.getJobInfo(job_id)
        if info is not None and str(info.status) in ("RUNNING", "UNKNOWN"):
            running.append(job_id)
    return running


def cancel_and_wait(spark_context: Any, group: str, threads: Sequence[threading.Thread],
                    running_hosts: Callable[[], Iterable[Any]], kill: Callable[[Any], bool],
                    timeout: float = 10.0) -> None:
    """Cancel ``group``, wait for Spark to end its jobs, kill the hosts still running, join ``threads``."""
    deadline = time.monotonic() + timeout
    spark_context.cancelJobGroup(group)
    while active_jobs_of_group(spark_context, group) and time.monotonic() < deadline:
        time.sleep(0.05)
    for host in running_hosts():
        kill(host)
    for thread in threads:
        thread.join(max(0.0, deadline - time.monotonic()))
    left = [t.name for t in threads if t.is_alive()]
    if left:
        _LOG.error("spark backend: the driver threads %s of cancelled job group %s did not end", left, group)


def pid_alive(pid: int) -> bool:
    """True while process ``pid`` exists and is not a zombie (a zombie has ended: only its parent's wait is missing)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as stat:
            return stat.read().rsplit(")", 1)[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False
    except OSError:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True


def wait_until_gone(hosts: Iterable[Any], timeout: float) -> list[Any]:
    """Wait up to ``timeout`` s until each host's process is gone; returns those still there.

    A host on this machine is gone when its pid is; one elsewhere when its control
    connection closed (the host's handler thread ended).
    """
    deadline = time.monotonic() + timeout
    here = machine_identity()
    left = []
    for host in hosts:
        if host.info.machine == here:
            # a host that reported its TaskManager finished may stay as an idle pooled worker
            # (spark.python.worker.reuse): it no longer hosts anything
            def gone(host: Any) -> bool:
                return host.state == "finished" or not pid_alive(host.info.pid)

            while not gone(host) and time.monotonic() < deadline:
                time.sleep(0.02)
            if not gone(host):
                left.append(host)
        else:
            host.thread.join(max(0.0, deadline - time.monotonic()))
            if host.thread.is_alive():
                left.append(host)
    for host in left:
        _LOG.error("spark backend: the Python worker of TaskManager %s (pid %d on %s) is still running",
                   host.info.taskmanager_id, host.info.pid, host.info.host)
    return left


def _python_workers_under(pid: int) -> list[int]:
    """The pids of PySpark's Python daemon and workers among the descendants of process ``pid``."""
    children: dict[int, list[int]] = {}
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as stat:
                parent = int(stat.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(parent, []).append(int(entry))
    found, todo = [], list(children.get(pid, ()))
    while todo:
        child = todo.pop()
        todo.extend(children.get(child, ()))
        try:
            with open(f"/proc/{child}/cmdline", "rb") as cmdline:
                command = cmdline.read().decode(errors="replace")
        except OSError:
            continue
        if "pyspark" in command and pid_alive(child):
            found.append(child)
    return found


def wait_for_python_workers(jvm_pid: int | None, timeout: float) -> list[int]:
    """After a SparkContext stopped: wait up to ``timeout`` s until the Python daemon and workers its
    JVM (``jvm_pid``, on this machine) started are gone (Spark signals them and does not wait);
    returns the pids still there. None (the JVM is not a child of this process): nothing to wait for."""
    if jvm_pid is None or not os.path.isdir("/proc"):
        return []
    deadline = time.monotonic() + timeout
    left = _python_workers_under(jvm_pid)
    while left and time.monotonic() < deadline:
        time.sleep(0.02)
        left = _python_workers_under(jvm_pid)
    if left:
        _LOG.error("spark backend: Spark's Python workers %s were still running %.0f s after the SparkSession "
                   "stopped", left, timeout)
    return left
