"""Spark task slots: does a Spark application have room for the TaskManagers it should host?

Each TaskManager of the ``spark`` backend occupies one Spark task slot for as long as it
runs (a slot: ``spark.task.cpus`` cores of an executor). Spark never says it lacks slots: a
job with more tasks than slots simply waits (FIELD-NOTES.md). So before launching, the
launcher counts them, ``sum(executor cores // spark.task.cpus)``, subtracts the tasks
already running (earlier TaskManagers, the user's own jobs) and fails with a clear error
when the TaskManagers would not all fit.

The arithmetic and the master-URL parsing are pure functions (tested without Spark);
:func:`executor_cores` reads the live executors of a SparkContext through py4j. Nothing
here imports pyspark.
"""

from __future__ import annotations

import logging
import os
import re
from dataclasses import dataclass
from typing import Any, Optional, Sequence

from streamkernel.errors import StreamKernelError

__all__ = [
    "SparkTaskSlotsError",
    "SparkTaskSlots",
    "local_master_threads",
    "is_local_master",
    "default_local_master",
    "spark_task_slots",
    "check_task_slots",
    "executor_cores",
    "running_spark_tasks",
]

_LOG = logging.getLogger(__name__)

_LOCAL = re.compile(r"^local(?:\[\s*(\*|\d+)\s*(?:,\s*(\d+)\s*)?\])?$")
_LOCAL_CLUSTER = re.compile(r"^local-cluster\[\s*(\d+)\s*,\s*(\d+)\s*,\s*(\d+)\s*\]$")


class SparkTaskSlotsError(StreamKernelError):
    """A Spark application has too few free task slots to host the requested TaskManagers.

    Spark would wait silently for slots that never come; the message names what is needed,
    what Spark offers (executors x cores / ``spark.task.cpus``) and how to get more.
    """


def local_master_threads(master: str, cpu_count: int = 1) -> Optional[int]:
    """The worker threads of a local master URL, or None for any other master.

    ``local`` -> 1, ``local[4]`` and ``local[4,8]`` -> 4, ``local[*]`` -> ``cpu_count``.

        >>> local_master_threads("local[2,4]"), local_master_threads("spark://h:7077")
        (2, None)
    """
    match = _LOCAL.match(master.strip())
    if not match:
        return None
    threads = match.group(1)
    if threads is None:
        return 1
    return cpu_count if threads == "*" else int(threads)


def is_local_master(master: str) -> bool:
    """True for masters whose executors run on this machine: ``local...`` and ``local-cluster[...]``."""
    text = master.strip()
    return _LOCAL.match(text) is not None or _LOCAL_CLUSTER.match(text) is not None


def default_local_master(taskmanagers: int, max_failures: int, spare_threads: int) -> str:
    """``local[N,F]``: N = TaskManagers + spare threads for the session's other Spark jobs,
    F = tries per task. ``local[N]`` would never retry a killed TaskManager host.

        >>> default_local_master(2, 8, 2)
        'local[4,8]'
    """
    return f"local[{taskmanagers + spare_threads},{max_failures}]"


@dataclass(frozen=True)
class SparkTaskSlots:
    """The task slots of a Spark application: per-executor cores, ``spark.task.cpus``, tasks running.

    ``cores`` holds one entry per executor (the driver itself in local mode).
    """

    master: str
    cores: tuple[int, ...]
    task_cpus: int
    running_tasks: int = 0

    @property
    def total(self) -> int:
        """Task slots in all: ``sum(cores // task_cpus)``."""
        return sum(c // self.task_cpus for c in self.cores)

    @property
    def free(self) -> int:
        """Task slots not taken by a running task."""
        return max(0, self.total - self.running_tasks)

    def describe(self) -> str:
        """``"4 task slots (2 executors x 2 cores / spark.task.cpus=1), 1 running"``."""
        if len(set(self.cores)) <= 1:
            shape = f"{len(self.cores)} executor{'s' if len(self.cores) != 1 else ''} x {self.cores[0] if self.cores else 0} cores"
        else:
            shape = f"executors with {' + '.join(map(str, self.cores))} cores"
        return (f"{self.total} task slot{'s' if self.total != 1 else ''} ({shape} / spark.task.cpus="
                f"{self.task_cpus}), {self.running_tasks} taken by running tasks")


def spark_task_slots(master: str, executor_core_counts: Sequence[int], task_cpus: int,
                     running_tasks: int = 0) -> SparkTaskSlots:
    """Build a :class:`SparkTaskSlots` (``task_cpus`` below 1 counts as 1)."""
    return SparkTaskSlots(master, tuple(int(c) for c in executor_core_counts), max(1, int(task_cpus)),
                          max(0, int(running_tasks)))


def check_task_slots(needed: int, slots: SparkTaskSlots) -> None:
    """Raise :class:`SparkTaskSlotsError` unless ``needed`` TaskManagers fit in the free slots."""
    if needed <= slots.free:
        return
    if local_master_threads(slots.master) is not None:
        remedy = (f"start the cluster with a larger local master, e.g. master='local[{needed + slots.running_tasks},4]' "
                  f"(or --master \"local[{needed + slots.running_tasks},4]\")")
    else:
        remedy = ("give the Spark application more executors or cores (spark.executor.instances, "
                  "spark.executor.cores, spark.cores.max) or lower spark.task.cpus")
    raise SparkTaskSlotsError(
        f"Spark cannot host {needed} more TaskManager{'s' if needed != 1 else ''}: each runs as one long Spark task, "
        f"and the application at {slots.master} has {slots.describe()}, so only {slots.free} "
        f"{'is' if slots.free == 1 else 'are'} free. Spark would wait for slots silently. To fix: {remedy}, "
        f"or ask for fewer TaskManagers.")


def executor_cores(spark_context: Any) -> list[int]:
    """The cores of every live executor of ``spark_context`` (in local mode: the driver's threads).

    Reads Spark's status store through py4j (the data behind the UI's Executors tab, kept
    even when the UI is off). The driver is left out on a cluster, where it runs no tasks.
    """
    master = str(spark_context.master)
    threads = local_master_threads(master, _cpu_count())
    if threads is not None:
        return [threads]
    summaries = spark_context._jsc.sc().statusStore().executorList(True)
    cores = []
    for i in range(summaries.size()):
        summary = summaries.apply(i)
        if str(summary.id()) == "driver":
            continue
        cores.append(int(summary.totalCores()))
    return cores


def running_spark_tasks(spark_context: Any) -> int:
    """Tasks running right now in every active stage of ``spark_context``."""
    tracker = spark_context.statusTracker()
    running = 0
    for stage_id in tracker.getActiveStageIds():
        info = tracker.getStageInfo(stage_id)
        if info is not None:
            running += int(info.numActiveTasks)
    return running


def _cpu_count() -> int:
    return os.cpu_count() or 1
