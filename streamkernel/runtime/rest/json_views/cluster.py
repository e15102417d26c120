"""The cluster as Flink's REST API shows it: ``/config`` (the dashboard's), ``/overview``,
``/taskmanagers`` and one TaskManager, ``/jobmanager/config`` and ``/jobmanager/metrics``.

Where streamkernel has no such thing (a JVM's heap, JMX, Flink's memory model) the fields
carry Flink's own "unknown" values (-1, 0 or empty), as Flink's do for a TaskManager that
does not report them.
"""

from __future__ import annotations

import os
import re
import time
from typing import Iterable, Mapping, Optional

from streamkernel.common.options import WebOptions
from streamkernel.runtime.jobmaster.job_status import JobDetails
from streamkernel.runtime.metrics.flink_metrics import heartbeat_memory, jobmanager_metric_values, taskmanager_metric_values
from streamkernel.runtime.resourcemanager.gateway import TaskManagerSnapshot

__all__ = ["FLINK_VERSION", "dashboard_config", "cluster_overview", "taskmanager_info", "taskmanager_details",
           "taskmanager_metric_values", "jobmanager_config", "jobmanager_metric_values", "jobmanager_environment", "thread_dump"]

#: The Flink version the API is compatible with (the dashboard compares it with its own).
FLINK_VERSION = "2.3.0"

_SECRET = re.compile(r"password|secret|token|key$|credential", re.IGNORECASE)


def _revision() -> str:
    from streamkernel import __version__  # lazy: the package's version only

    return f"streamkernel {__version__}"


def dashboard_config(configuration: Mapping[str, str]) -> dict:
    """Flink's DashboardConfiguration: refresh interval, time zone, version, features.

    ``web-submit`` is False whatever ``web.submit.enable`` says: the dashboard's submit page
    uploads jars, which streamkernel cannot run (it runs Python programs).
    """
    offset = -time.altzone if time.localtime().tm_isdst > 0 else -time.timezone
    return {"refresh-interval": WebOptions.REFRESH_INTERVAL.get(configuration),
            "timezone-name": time.tzname[time.localtime().tm_isdst > 0], "timezone-offset": offset * 1000,
            "flink-version": FLINK_VERSION, "flink-revision": _revision(),
            "features": {"web-submit": False, "web-cancel": bool(WebOptions.CANCEL_ENABLE.get(configuration)),
                         "web-rescale": False, "web-history": False}}


def cluster_overview(taskmanagers: Iterable[TaskManagerSnapshot], jobs: Iterable[JobDetails]) -> dict:
    """Flink's ClusterOverviewWithVersion."""
    tms = list(taskmanagers)
    statuses = [d.status.name for d in jobs]
    return {"taskmanagers": len(tms), "slots-total": sum(t.number_of_slots for t in tms),
            "slots-available": sum(t.free_slots for t in tms),
            "taskmanagers-blocked": 0, "slots-free-and-blocked": 0,
            "jobs-running": sum(1 for s in statuses if s not in ("FINISHED", "CANCELED", "FAILED")),
            "jobs-finished": statuses.count("FINISHED"), "jobs-cancelled": statuses.count("CANCELED"),
            "jobs-failed": statuses.count("FAILED"), "flink-version": FLINK_VERSION, "flink-commit": _revision()}


def _resource(cpu: float = 0.0, memory: Optional[Mapping[str, int]] = None, share: float = 1.0) -> dict:
    """Flink's ResourceProfileInfo: memory in MiB (``share`` of the TaskManager's, e.g. its free slots');
    0 (Flink's unknown) without the TaskManager's memory configuration."""
    def mib(key: str) -> int:
        return int((memory or {}).get(key, 0) * share) >> 20

    return {"cpuCores": cpu, "taskHeapMemory": mib("taskHeap"), "taskOffHeapMemory": mib("taskOffHeap"),
            "managedMemory": mib("managedMemory"), "networkMemory": mib("networkMemory"), "extendedResources": {}}


_MEMORY_CONFIGURATION = ("frameworkHeap", "taskHeap", "frameworkOffHeap", "taskOffHeap", "networkMemory",
                         "managedMemory", "jvmMetaspace", "jvmOverhead", "totalFlinkMemory", "totalProcessMemory")


def _physical_memory() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        return -1


def taskmanager_info(tm: TaskManagerSnapshot, now: int) -> dict:
    """Flink's TaskManagerInfo of one TaskManager (the ResourceManager's snapshot of it).

    ``timeSinceLastHeartbeat`` is, as in Flink, the time of the last heartbeat (ms since the
    epoch). Ports and JMX are Flink's unknowns (-1): a streamkernel TaskManager has no data port
    of its own to show and no JVM. Its memory configuration is Flink's (computed from the cluster's
    ``taskmanager.memory.*`` keys as Flink computes it, reported by its heartbeats).
    """
    configured = heartbeat_memory(tm).get("configuration") or {}
    free_share = tm.free_slots / tm.number_of_slots if tm.number_of_slots else 0.0
    return {
        "id": tm.taskmanager_id, "path": f"streamkernel://{tm.taskmanager_id}", "dataPort": -1, "jmxPort": -1,
        "timeSinceLastHeartbeat": now - tm.heartbeat_age_ms, "slotsNumber": tm.number_of_slots,
        "freeSlots": tm.free_slots,
        "assignedTasks": len(tm.last_heartbeat.tasks) if tm.last_heartbeat is not None else 0,
        "totalResource": _resource(memory=configured), "freeResource": _resource(memory=configured, share=free_share),
        # the machine's cores and memory (every backend but a remote Spark executor runs here)
        "hardware": {"cpuCores": os.cpu_count() or -1, "physicalMemory": _physical_memory(), "freeMemory": -1,
                     "managedMemory": int(configured.get("managedMemory", 0))},
        # Flink's TaskExecutorMemoryConfiguration, computed as Flink computes it (docs/memory.md)
        "memoryConfiguration": {k: int(configured.get(k, 0)) for k in _MEMORY_CONFIGURATION},
        "blocked": False,
    }


def taskmanager_details(tm: TaskManagerSnapshot, now: int) -> dict:
    """Flink's TaskManagerDetailsInfo: the info, its allocated slots and its (JVM) metrics."""
    body = taskmanager_info(tm, now)
    in_slot: dict[int, int] = {}
    for task in (tm.last_heartbeat.tasks if tm.last_heartbeat is not None else ()):
        in_slot[task.slot_index] = in_slot.get(task.slot_index, 0) + 1
    body["allocatedSlots"] = [{"jobId": job, "resource": _resource(), "assignedTasks": in_slot.get(index, 0)}
                              for index, job in enumerate(tm.allocated) if job is not None]
    # no JVM: heap, direct and mapped memory and GC are unknown (0 / empty); the network buffers are the TaskManager's
    body["metrics"] = {name: 0 for name in (
        "heapUsed", "heapCommitted", "heapMax", "nonHeapUsed", "nonHeapCommitted", "nonHeapMax", "directCount",
        "directUsed", "directMax", "mappedCount", "mappedUsed", "mappedMax", "memorySegmentsAvailable",
        "memorySegmentsTotal", "nettyShuffleMemorySegmentsAvailable", "nettyShuffleMemorySegmentsUsed",
        "nettyShuffleMemorySegmentsTotal", "nettyShuffleMemoryAvailable", "nettyShuffleMemoryUsed",
        "nettyShuffleMemoryTotal")}
    body["metrics"]["garbageCollectors"] = []
    memory = heartbeat_memory(tm)
    if memory:  # the JVM heap is the framework and task heaps; its use here is the watchdog's estimate
        configured = memory.get("configuration") or {}
        body["metrics"]["heapMax"] = int(configured.get("frameworkHeap", 0)) + int(configured.get("taskHeap", 0))
        body["metrics"]["heapUsed"] = int(memory.get("task_heap_used_estimate", 0))
        body["metrics"]["heapCommitted"] = int(memory.get("rss", 0))
    netty = getattr(tm.last_heartbeat, "metrics", None) or {}  # the TaskManager's network buffers
    for field, metric in _NETTY_SHUFFLE_METRICS.items():
        if metric in netty:
            body["metrics"][field] = int(netty[metric])
    return body


#: REST fields of Flink's TaskManagerMetricsInfo and the TaskManager metrics they show (its network buffers)
_NETTY_SHUFFLE_METRICS = {
    f"nettyShuffle{field}": f"Status.Shuffle.Netty.{metric}" for field, metric in (
        ("MemorySegmentsAvailable", "AvailableMemorySegments"), ("MemorySegmentsUsed", "UsedMemorySegments"),
        ("MemorySegmentsTotal", "TotalMemorySegments"), ("MemoryAvailable", "AvailableMemory"),
        ("MemoryUsed", "UsedMemory"), ("MemoryTotal", "TotalMemory"))}


def jobmanager_config(configuration: Mapping[str, str], extra: Optional[Mapping[str, str]] = None) -> list[dict]:
    """Flink's ClusterConfigurationInfo: ``[{"key", "value"}]``, sorted, secrets hidden as Flink hides them."""
    merged = {**dict(configuration), **dict(extra or {})}
    return [{"key": k, "value": "******" if _SECRET.search(k) else str(v)} for k, v in sorted(merged.items())]


def jobmanager_environment() -> dict:
    """Flink's EnvironmentInfo of the JobManager's process: here the Python interpreter (as
    ``jvm``: version, machine architecture, interpreter options ``-X``/``-W``) and ``sys.path``
    (as ``classpath``: where the JobManager loads code from)."""
    import platform
    import sys

    options = [f"-X{k}" if v is True else f"-X{k}={v}" for k, v in sys._xoptions.items()]
    options += [f"-W{w}" for w in sys.warnoptions]
    if sys.flags.optimize:
        options.append("-" + "O" * sys.flags.optimize)
    version = f"{platform.python_implementation()} {platform.python_version()} ({sys.executable})"
    return {"jvm": {"version": version, "arch": platform.machine(), "options": options},
            "classpath": [p for p in sys.path if p]}


def thread_dump() -> dict:
    """Flink's ThreadDumpInfo of this process: each thread's name and its stack, innermost call
    last (Python's order), as ``"name" Id=... daemon`` and the frames."""
    import sys
    import threading
    import traceback

    frames = sys._current_frames()
    infos = []
    for thread in sorted(threading.enumerate(), key=lambda t: t.name):
        frame = frames.get(thread.ident) if thread.ident is not None else None
        header = f'"{thread.name}" Id={thread.ident}{" daemon" if thread.daemon else ""}\n'
        stack = "".join(traceback.format_stack(frame)) if frame is not None else ""
        infos.append({"threadName": thread.name, "stringifiedThreadInfo": header + stack})
    return {"threadInfos": infos}
