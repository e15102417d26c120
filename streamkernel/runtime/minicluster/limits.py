"""How big a MiniCluster may be: TaskManager and slot counts checked before anything starts.

Every way of sizing a cluster (``MiniCluster(taskmanagers, slots_per_taskmanager)``, the
configuration's ``minicluster.number-of-taskmanagers`` / ``taskmanager.numberOfTaskSlots``,
``streamkernel run --taskmanagers/--slots``, ``%flink start``) goes through
:func:`check_cluster_size` at the start of ``MiniCluster.__init__``. Without it a typo spawns
processes without bound (``--backend process --taskmanagers 100000``), or builds slot lists
until memory runs out (``--slots 99999999999999999999``). The check compares integers
only: a huge count is refused without allocating anything.

The limits, each a configuration key a user may raise when the machine can take more:

* :data:`MAX_TASKMANAGERS` (``streamkernel.minicluster.max-taskmanagers``, default 256):
  TaskManagers of the ``local`` backend (objects and directories in this process).
* :data:`MAX_TASKMANAGER_PROCESSES` (``streamkernel.minicluster.max-taskmanager-processes``,
  default 4 x ``os.cpu_count()``, at least 4): TaskManagers that are Python processes on
  this machine: the ``process`` backend, and the ``spark`` backend on a local master
  (each is a Spark task in a Python worker process of its own).
* :data:`MAX_SLOTS_PER_TASKMANAGER` (``streamkernel.minicluster.max-slots-per-taskmanager``,
  default 256) and :data:`MAX_TOTAL_SLOTS` (``streamkernel.minicluster.max-total-slots``,
  default 1024), every backend: a slot runs its subtasks as threads of the TaskManager's
  Python process.

The ``spark`` backend also refuses, up front, more TaskManagers than an explicit local
master has task slots (``local[2]`` hosts 2); on a Spark cluster or a given SparkSession
the launcher counts the executors' free task slots when it launches
(:mod:`.taskmanager.spark_resources`).
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from typing import Any, Mapping, Optional

from streamkernel.common.config_options import ConfigOption
from streamkernel.common.options import BackendOptions, MiniClusterOptions
from streamkernel.errors import IllegalConfigurationError, InvalidProgramError

__all__ = ["ClusterSizeError", "ClusterLimits", "cluster_limits", "check_cluster_size", "count_value",
           "configured_count", "MAX_TASKMANAGERS", "MAX_TASKMANAGER_PROCESSES", "MAX_SLOTS_PER_TASKMANAGER", "MAX_TOTAL_SLOTS",
           "LIMIT_KEYS"]

#: Key: TaskManagers of the ``local`` backend (default 256).
MAX_TASKMANAGERS = MiniClusterOptions.MAX_TASKMANAGERS.key()
#: Key: TaskManager processes on this machine (``process``; ``spark`` on a local master); default 4 x cores.
MAX_TASKMANAGER_PROCESSES = MiniClusterOptions.MAX_TASKMANAGER_PROCESSES.key()
#: Key: task slots of one TaskManager, every backend (default 256).
MAX_SLOTS_PER_TASKMANAGER = MiniClusterOptions.MAX_SLOTS_PER_TASKMANAGER.key()
#: Key: task slots of the whole cluster, every backend (default 1024).
MAX_TOTAL_SLOTS = MiniClusterOptions.MAX_TOTAL_SLOTS.key()

_PROCESSES_PER_CORE = 4

#: Every key of this module with a description of its default (for docs and a configuration registry).
LIMIT_KEYS = {
    MAX_TASKMANAGERS: f"{MiniClusterOptions.MAX_TASKMANAGERS.default_value()}",
    MAX_TASKMANAGER_PROCESSES: f"{_PROCESSES_PER_CORE} x os.cpu_count(), at least {_PROCESSES_PER_CORE}",
    MAX_SLOTS_PER_TASKMANAGER: f"{MiniClusterOptions.MAX_SLOTS_PER_TASKMANAGER.default_value()}",
    MAX_TOTAL_SLOTS: f"{MiniClusterOptions.MAX_TOTAL_SLOTS.default_value()}",
}

# More digits than this is refused as text: never turned into an int (Python refuses 4300+
# digits with an unrelated message) and certainly above every limit.
_MAX_DIGITS = 18


class ClusterSizeError(InvalidProgramError, IllegalConfigurationError):
    """A MiniCluster asked for more TaskManagers or slots than its backend can host, or a
    count that is not an int >= 1. Raised by ``MiniCluster(...)`` before anything starts;
    the message names the argument or configuration key, the limit and the key raising it."""


@dataclass(frozen=True)
class ClusterLimits:
    """The most TaskManagers, slots per TaskManager and slots in all a backend may start.

    ``taskmanagers_key`` names the configuration key that raises ``taskmanagers``;
    ``taskmanagers_what`` says what a TaskManager is on the backend (for messages).
    """

    taskmanagers: int
    taskmanagers_key: str
    taskmanagers_what: str
    slots_per_taskmanager: int
    total_slots: int


def count_value(value: Any, where: str) -> int:
    """``value`` as a count (an int >= 1, or its decimal digits), else :class:`ClusterSizeError`
    naming ``where`` (an argument or a configuration key). Refuses more than 18 digits as text."""
    if isinstance(value, str):
        text = value.strip()
        if text.isascii() and text.isdigit():
            if len(text.lstrip("0")) > _MAX_DIGITS:
                raise ClusterSizeError(f"MiniCluster: {where} = {_shorten(text)} is far too large; "
                                       f"expected an int >= 1 within the cluster limits")
            value = int(text)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ClusterSizeError(f"MiniCluster: {where} must be an int >= 1, got {_shorten(repr(value))}")
    return value


def _shorten(text: str, at: int = 40) -> str:
    return text if len(text) <= at else f"{text[:at]}... ({len(text)} characters)"


def configured_count(option: ConfigOption[int], configuration: Mapping[str, Any],
                     default: Optional[int] = None) -> int:
    """The count ``option`` sets in ``configuration`` (else ``default``, else the option's
    default), checked by :func:`count_value` naming the configuration key."""
    if option.key() not in configuration:
        value = default if default is not None else option.default_value()
        return count_value(value, f"configuration key {option.key()}")
    return count_value(configuration[option.key()], f"configuration key {option.key()}")


def _limit(configuration: Mapping[str, str], option: ConfigOption[int], default: Optional[int] = None) -> int:
    try:
        return configured_count(option, configuration, default)
    except ClusterSizeError as error:
        raise ClusterSizeError(f"{error} (a limit on the cluster's size)") from None


def cluster_limits(backend: str, configuration: Mapping[str, str], *, local_processes: bool = False,
                   cpu_count: Optional[int] = None) -> ClusterLimits:
    """The limits of ``backend`` under ``configuration`` (see the module docstring).

    ``local_processes`` says that the ``spark`` backend's TaskManagers will be processes on
    this machine (a local master); ``cpu_count`` replaces ``os.cpu_count()`` (tests).
    """
    per_taskmanager = _limit(configuration, MiniClusterOptions.MAX_SLOTS_PER_TASKMANAGER)
    total = _limit(configuration, MiniClusterOptions.MAX_TOTAL_SLOTS)
    if backend == "local":
        return ClusterLimits(_limit(configuration, MiniClusterOptions.MAX_TASKMANAGERS), MAX_TASKMANAGERS,
                             "TaskManagers in this process", per_taskmanager, total)
    if backend == "process" or local_processes:
        cores = cpu_count if cpu_count is not None else (os.cpu_count() or 1)
        default = max(_PROCESSES_PER_CORE, _PROCESSES_PER_CORE * cores)
        what = (f"TaskManager processes on this machine ({_PROCESSES_PER_CORE} per core x {cores} cores by default)")
        return ClusterLimits(_limit(configuration, MiniClusterOptions.MAX_TASKMANAGER_PROCESSES, default),
                             MAX_TASKMANAGER_PROCESSES,
                             what, per_taskmanager, total)
    # spark on a cluster or a given session: Spark's free task slots are counted at launch
    return ClusterLimits(sys.maxsize, "", "", per_taskmanager, total)


def check_cluster_size(backend: str, taskmanagers: Any, slots_per_taskmanager: Any,
                       configuration: Mapping[str, str], *, taskmanagers_from: str = "taskmanagers",
                       slots_from: str = "slots_per_taskmanager", spark_master: Optional[str] = None,
                       spark_session: Any = None, cpu_count: Optional[int] = None) -> tuple[int, int]:
    """Check the counts of a cluster of ``backend``; returns them as ints.

    ``taskmanagers_from`` / ``slots_from`` name where each count came from (the argument,
    or the configuration key it was read from). ``spark_master`` / ``spark_session`` are
    the ``spark`` backend's (a local master's task slots are checked here, without Spark).
    Raises :class:`ClusterSizeError` naming the count, the limit and the key raising it.
    """
    count = count_value(taskmanagers, taskmanagers_from)
    slots = count_value(slots_per_taskmanager, slots_from)
    master, on_this_machine = (_spark_master(configuration, spark_master, spark_session) if backend == "spark"
                               else (None, False))
    limits = cluster_limits(backend, configuration, local_processes=on_this_machine, cpu_count=cpu_count)
    if count > limits.taskmanagers:
        raise ClusterSizeError(
            f"MiniCluster: {taskmanagers_from} = {count} is more than the {backend} backend hosts: at most "
            f"{limits.taskmanagers} {limits.taskmanagers_what} ({limits.taskmanagers_key}). Ask for fewer "
            f"TaskManagers, or raise {limits.taskmanagers_key} if this machine can take them.")
    if slots > limits.slots_per_taskmanager:
        raise ClusterSizeError(
            f"MiniCluster: {slots_from} = {slots} is more than one TaskManager hosts: at most "
            f"{limits.slots_per_taskmanager} slots per TaskManager ({MAX_SLOTS_PER_TASKMANAGER}; each slot runs its "
            f"subtasks as threads of one Python process). Ask for fewer slots or more TaskManagers, or raise "
            f"{MAX_SLOTS_PER_TASKMANAGER}.")
    if count * slots > limits.total_slots:
        raise ClusterSizeError(
            f"MiniCluster: {count} TaskManagers x {slots} slots = {count * slots} slots is more than a cluster "
            f"hosts: at most {limits.total_slots} slots in all ({MAX_TOTAL_SLOTS}). Ask for fewer TaskManagers or "
            f"slots, or raise {MAX_TOTAL_SLOTS}.")
    if master is not None:
        _check_local_master(master, count, configuration, cpu_count)
    return count, slots


def _spark_master(configuration: Mapping[str, str], spark_master: Optional[str],
                  spark_session: Any) -> tuple[Optional[str], bool]:
    """(the local master the spark backend will use, if one is named; whether its TaskManagers
    are processes on this machine), known without starting Spark. The master is the given one,
    else the running SparkContext's, else ``spark.master``; with none of them the launcher
    creates a default local master (sized for the TaskManagers). A given SparkSession or a
    cluster master: (None, False); the launcher counts their executors' slots."""
    from streamkernel.runtime.taskmanager.spark_resources import is_local_master  # pure; imports no pyspark

    if spark_session is not None:
        return None, False
    pyspark = sys.modules.get("pyspark")
    active = getattr(getattr(pyspark, "SparkContext", None), "_active_spark_context", None)
    master = spark_master or (active.master if active is not None else None) or BackendOptions.SPARK_MASTER.get(configuration)
    if not master:
        return None, True
    master = str(master)
    return (master, True) if is_local_master(master) else (None, False)


def _check_local_master(master: str, taskmanagers: int, configuration: Mapping[str, str],
                        cpu_count: Optional[int]) -> None:
    """A named ``local[N]`` master hosts N // spark.task.cpus TaskManagers: refuse more now
    (Spark would wait silently for the rest)."""
    from streamkernel.runtime.taskmanager.spark_resources import (
        check_task_slots,
        local_master_threads,
        spark_task_slots,
    )

    threads = local_master_threads(master, cpu_count or os.cpu_count() or 1)
    if threads is None:  # local-cluster[...]: the launcher counts its executors
        return
    task_cpus = BackendOptions.SPARK_TASK_CPUS.get(configuration)
    try:
        check_task_slots(taskmanagers, spark_task_slots(master, [threads], task_cpus))
    except Exception as error:  # SparkTaskSlotsError: the same message, raised before Spark starts
        raise ClusterSizeError(str(error)) from None
