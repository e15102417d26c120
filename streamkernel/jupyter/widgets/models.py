"""What the cockpit shows, as plain immutable data computed from a cluster snapshot.

One model, two renderers (STYLE.md): the widgets (:mod:`.cockpit`) and the text/HTML
fallback (:mod:`.html`, :mod:`.text`) draw the same models, and tests assert on the models
directly. Everything here is a pure function of a :meth:`MiniCluster.inspection.snapshot` (plain
dicts) and, for rates, a :class:`~.history.MetricsHistory` fed by earlier snapshots.

* :class:`ClusterModel`: one card per TaskManager (backend, host, pid, heartbeat age) with
  its slots, each slot listing the subtasks it holds; a subtask's colour belongs to its job
  vertex, so a pipeline's subtasks share a colour across slots.
* :class:`JobModel`: a job's header (status, duration, restarts), its vertices (rates and
  backpressure level as Flink's UI: the busiest subtask's backpressured share, OK <= 10%,
  LOW <= 50%, HIGH above), a row per subtask (counts, rates, busy and backpressured
  shares, watermark, latency, a rate series for a sparkline) and the checkpoint history.
"""

from __future__ import annotations

import re
import statistics
from dataclasses import dataclass
from typing import Any, Mapping, Optional

from streamkernel.common.job_status import select_jobs
from streamkernel.jupyter.widgets.history import MetricsHistory, Rates
from streamkernel.runtime.core.metrics import backpressure_level

__all__ = ["PALETTE", "BACKPRESSURE_COLOURS", "TaskChip", "SlotCell", "TaskManagerCard", "ClusterModel",
           "VertexRow", "SubtaskRow", "CheckpointRow", "JobModel", "vertex_colour", "cluster_model", "job_model",
           "find_job"]

#: Colours of job vertices, in vertex order (pastel, readable under black text).
PALETTE = ("#a5d6a7", "#90caf9", "#ffcc80", "#ce93d8", "#80deea", "#f48fb1", "#e6ee9c", "#bcaaa4",
           "#b0bec5", "#ffab91")

#: Fill of a job vertex per backpressure level (Flink's web UI: green, amber, red).
BACKPRESSURE_COLOURS = {"OK": "#c8e6c9", "LOW": "#ffe082", "HIGH": "#ef9a9a"}

_MIN_WATERMARK = -(2 ** 63)
_SUBTASK_SUFFIX = re.compile(r"^(?P<name>.*) \((?P<index>\d+)/(?P<parallelism>\d+)\)$")


def vertex_colour(position: int) -> str:
    """The colour of the job vertex at ``position`` (0-based order of the job's vertices)."""
    return PALETTE[position % len(PALETTE)]


@dataclass(frozen=True)
class TaskChip:
    """One subtask in a slot: ``Map (1/2)`` of job ``name``, in its vertex's colour."""

    job_id: str
    job_name: str
    vertex: str
    subtask: int  # 1-based, as Flink names subtasks
    parallelism: int
    colour: str

    @property
    def label(self) -> str:
        """``vertex (subtask/parallelism)``, Flink's subtask name."""
        return f"{self.vertex} ({self.subtask}/{self.parallelism})"


@dataclass(frozen=True)
class SlotCell:
    """One task slot: free, or the job holding it and the subtasks running in it."""

    name: str  # "TM1/slot2"
    job_id: Optional[str]
    job_name: Optional[str]
    chips: tuple[TaskChip, ...]

    @property
    def free(self) -> bool:
        """True when no job holds the slot."""
        return self.job_id is None


@dataclass(frozen=True)
class TaskManagerCard:
    """One TaskManager: where it runs and its slots."""

    id: str
    name: str  # "TM1"
    backend: str
    host: str
    pid: Optional[int]
    heartbeat_age_s: Optional[float]
    slots: tuple[SlotCell, ...]
    memory: Optional[MemoryLine] = None


@dataclass(frozen=True)
class MemoryLine:
    """A TaskManager's memory (MiB): its configured process size, managed memory (and per slot) and network
    memory (Flink's calculation, docs/memory.md), and its resident set now."""

    process_mib: int
    rss_mib: int
    managed_mib: int
    managed_per_slot_mib: int
    network_mib: int
    #: per slot (1-based) the MiB its RocksDB instances use of its managed share, for slots that have any
    rocksdb_used_mib: tuple[tuple[int, int], ...] = ()
    #: its network buffers: how many, and how many hold data now (None: not reported)
    network_buffers: Optional[tuple[int, int]] = None
    #: the MiB its RocksDB instances use of the memory all its slots share (fixed-per-tm), None: none shared
    rocksdb_taskmanager_used_mib: Optional[int] = None
    #: per slot (1-based) the MiB BATCH sorters hold now, have reserved, and the runs they spilled
    sorting_mib: tuple[tuple[int, int, int, int], ...] = ()
    #: the task heap in use, estimated (the watchdog's: RSS minus the baseline and the managed and network in use)
    task_heap_used_mib: Optional[int] = None

    def describe(self) -> str:
        """``process 1728 MiB (RSS 45 MiB, task heap ~3 MiB), managed 543 MiB (271 MiB per slot), network
        135 MiB`` and, when RocksDB runs, ``; RocksDB uses slot 1: 12 MiB, slot 2: 3 MiB`` (``TaskManager-wide:
        15 MiB`` for the memory all slots share, ``state.backend.rocksdb.memory.fixed-per-tm``); while BATCH
        sorters run, ``; sorters hold slot 1: 3 of 13 MiB (4 runs spilled)`` (what they hold of what they
        reserved)."""
        heap = "" if self.task_heap_used_mib is None else f", task heap ~{self.task_heap_used_mib} MiB"
        text = (f"process {self.process_mib} MiB (RSS {self.rss_mib} MiB{heap}), managed {self.managed_mib} MiB "
                f"({self.managed_per_slot_mib} MiB per slot), network {self.network_mib} MiB")
        if self.network_buffers is not None:
            text += f" ({self.network_buffers[0]} buffers, {self.network_buffers[1]} in use)"
        parts = [f"slot {slot}: {used} MiB" for slot, used in self.rocksdb_used_mib]
        if self.rocksdb_taskmanager_used_mib is not None:
            parts.append(f"TaskManager-wide: {self.rocksdb_taskmanager_used_mib} MiB")
        if parts:
            text += "; RocksDB uses " + ", ".join(parts)
        if self.sorting_mib:
            text += "; sorters hold " + ", ".join(
                f"slot {slot}: {used} of {reserved} MiB" + (f" ({runs} runs spilled)" if runs else "")
                for slot, used, reserved, runs in self.sorting_mib)
        return text


def memory_line(memory: Optional[Mapping[str, Any]], slots: int) -> Optional[MemoryLine]:
    """The :class:`MemoryLine` of a snapshot's TaskManager ``memory`` entry (None without its configuration)."""
    configured = (memory or {}).get("configuration")
    if not configured:
        return None
    managed = int(configured.get("managedMemory", 0))
    slots_memory = dict((memory or {}).get("slots") or {})
    shared = (slots_memory.pop("taskmanager", None) or {}).get("rocksdb")  # TaskExecutor's TASKMANAGER_WIDE
    rocksdb = tuple(sorted((int(index) + 1, int(usage["rocksdb"].get("used", 0)) >> 20)
                           for index, usage in slots_memory.items() if usage.get("rocksdb")))
    sorting = tuple(sorted((int(index) + 1, int(usage["operator"].get("used", 0)) >> 20,
                            int(usage["operator"].get("reserved", 0)) >> 20, int(usage["operator"].get("spilled_runs", 0)))
                           for index, usage in slots_memory.items() if usage.get("operator")))
    metrics = (memory or {}).get("metrics") or {}
    total = metrics.get("Status.Shuffle.Netty.TotalMemorySegments")
    buffers = None if total is None else (int(total), int(metrics.get("Status.Shuffle.Netty.UsedMemorySegments", 0)))
    heap = (memory or {}).get("task_heap_used_estimate")
    return MemoryLine(int(configured.get("totalProcessMemory", 0)) >> 20, int((memory or {}).get("rss", 0)) >> 20,
                      managed >> 20, (managed // max(slots, 1)) >> 20, int(configured.get("networkMemory", 0)) >> 20,
                      rocksdb, buffers, None if not shared else int(shared.get("used", 0)) >> 20, sorting,
                      None if heap is None else int(heap) >> 20)


@dataclass(frozen=True)
class ClusterModel:
    """The cluster widget's content."""

    running: bool
    backend: str
    cards: tuple[TaskManagerCard, ...]
    total_slots: int
    free_slots: int
    pending_requests: tuple[tuple[str, int], ...]  # (job, slots wanted)
    jobs: tuple[tuple[str, str, str], ...]  # (job id, name, status), newest first

    @property
    def occupied_slots(self) -> int:
        """Slots some job holds."""
        return self.total_slots - self.free_slots


def _vertex_positions(snapshot: Mapping[str, Any]) -> dict[tuple[str, str], int]:
    """(job id, vertex name) -> the vertex's position in its job."""
    return {(job["job_id"], vertex["name"]): position for job in snapshot.get("jobs", ())
            for position, vertex in enumerate(job.get("vertices", ()))}


def _chip(task: str, job_id: str, job_name: str, positions: Mapping[tuple[str, str], int]) -> TaskChip:
    match = _SUBTASK_SUFFIX.match(task)
    vertex, index, parallelism = (match["name"], int(match["index"]), int(match["parallelism"])) if match else (task, 1, 1)
    return TaskChip(job_id, job_name, vertex, index, parallelism, vertex_colour(positions.get((job_id, vertex), 0)))


def cluster_model(snapshot: Mapping[str, Any]) -> ClusterModel:
    """The :class:`ClusterModel` of a cluster snapshot."""
    positions = _vertex_positions(snapshot)
    cards = []
    for tm in sorted(snapshot.get("taskmanagers", ()), key=lambda t: t["index"]):
        placement = tm.get("placement") or {}
        slots = tuple(
            SlotCell(slot["slot"], slot.get("job_id"), slot.get("job_name"),
                     tuple(sorted((_chip(task, slot["job_id"], slot.get("job_name") or "", positions)
                                   for task in slot.get("tasks", ()) if slot.get("job_id")),
                                  key=lambda c: positions.get((c.job_id, c.vertex), 0))))
            for slot in sorted(tm.get("slots", ()), key=lambda s: s["index"]))
        age = tm.get("heartbeat_age_ms")
        cards.append(TaskManagerCard(tm["id"], f"TM{tm['index'] + 1}", str(placement.get("backend", snapshot.get("backend", ""))),
                                     str(placement.get("host", "")), placement.get("pid"),
                                     None if age is None else age / 1000.0, slots,
                                     memory_line(tm.get("memory"), len(slots))))
    totals = snapshot.get("slots") or {}
    jobs = sorted(snapshot.get("jobs", ()), key=lambda j: j.get("start_time") or 0, reverse=True)
    return ClusterModel(bool(snapshot.get("running")), str(snapshot.get("backend", "")), tuple(cards),
                        int(totals.get("total", 0)), int(totals.get("free", 0)),
                        tuple(sorted((str(k), int(v)) for k, v in (snapshot.get("pending_slot_requests") or {}).items())),
                        tuple((j["job_id"], j["name"], j["status"]) for j in jobs))


# ------------------------------------------------------------------------------- jobs
@dataclass(frozen=True)
class SubtaskRow:
    """One subtask of a job vertex, with live figures."""

    vertex_id: int
    vertex: str
    subtask: int  # 1-based
    state: str
    taskmanager: Optional[str]
    slot: Optional[str]
    records_in: int
    records_out: int
    rates: Rates
    input_watermark: Optional[int]
    latency_ms: Optional[float]  # median of the latest samples at a sink
    rate_series: tuple[float, ...]  # records out per second (in, for a subtask ending in a sink), oldest first


@dataclass(frozen=True)
class VertexRow:
    """One job vertex: totals over its subtasks and its backpressure level."""

    id: int
    name: str
    parallelism: int
    states: tuple[tuple[str, int], ...]
    records_in_per_s: float
    records_out_per_s: float
    backpressured: float  # the most backpressured subtask's share (Flink's UI shows the maximum)
    busy: float  # the busiest subtask's share
    colour: str

    @property
    def backpressure_level(self) -> str:
        """OK, LOW or HIGH (Flink's thresholds)."""
        return backpressure_level(self.backpressured)


@dataclass(frozen=True)
class CheckpointRow:
    """One checkpoint or savepoint of the job's history."""

    id: int
    type: str
    status: str
    trigger_timestamp: Optional[int]
    duration_ms: Optional[int]
    state_size: Optional[int]
    acknowledged: str
    path: Optional[str]
    failure: Optional[str]
    unaligned: bool = False
    persisted_data: int = 0


@dataclass(frozen=True)
class JobModel:
    """The job dashboard's content."""

    job_id: str
    name: str
    status: str
    duration_ms: int
    num_restarts: int
    failure: Optional[str]
    vertices: tuple[VertexRow, ...]
    subtasks: tuple[SubtaskRow, ...]
    checkpoints: tuple[CheckpointRow, ...]
    checkpoint_counts: tuple[tuple[str, int], ...]
    latest_restored: Optional[str]

    @property
    def ended(self) -> bool:
        """True in a globally terminal state (FINISHED, FAILED, CANCELED)."""
        return self.status in ("FINISHED", "FAILED", "CANCELED")


def find_job(snapshot: Mapping[str, Any], job: Optional[str] = None) -> Optional[Mapping[str, Any]]:
    """The job ``job`` (its id, its name, else an id prefix: ``select_jobs``) of a snapshot; None: the
    newest job. Of several jobs of that name (a restored job keeps it), the newest."""
    jobs = sorted(snapshot.get("jobs", ()), key=lambda j: j.get("start_time") or 0, reverse=True)
    if job is None:
        return jobs[0] if jobs else None
    matches = select_jobs(job, jobs, lambda j: (j["job_id"], j["name"]))
    exact = bool(matches) and job in (matches[0]["job_id"], matches[0]["name"])  # then all of them are
    return matches[0] if len(matches) == 1 or exact else None


def job_model(job: Mapping[str, Any], history: Optional[MetricsHistory] = None) -> JobModel:
    """The :class:`JobModel` of one job of a snapshot (``find_job``), rates from ``history``."""
    history = history or MetricsHistory()
    vertices, rows = [], []
    for position, vertex in enumerate(job.get("vertices", ())):
        subtask_rates = []
        for sub in vertex.get("subtasks", ()):
            key = (job["job_id"], vertex["id"], sub["subtask"])
            rates = history.rates(key)
            subtask_rates.append(rates)
            metrics = sub.get("metrics") or {}
            emits = int(metrics.get("records_out", 0)) > 0 or not metrics.get("records_in")  # a sink only takes in
            watermark = metrics.get("input_watermark")
            latency = metrics.get("latency_ms") or []
            rows.append(SubtaskRow(
                vertex["id"], vertex["name"], sub["subtask"] + 1, sub.get("state", ""), sub.get("taskmanager"),
                sub.get("slot"), int(metrics.get("records_in", 0)), int(metrics.get("records_out", 0)), rates,
                None if watermark is None or watermark <= _MIN_WATERMARK else int(watermark),
                float(statistics.median(latency)) if latency else None,
                tuple(history.series(key, "records_out_per_s" if emits else "records_in_per_s"))))
        vertices.append(VertexRow(
            vertex["id"], vertex["name"], int(vertex.get("parallelism", 0)),
            tuple(sorted((vertex.get("states") or {}).items())),
            sum(r.records_in_per_s for r in subtask_rates), sum(r.records_out_per_s for r in subtask_rates),
            max((r.backpressured for r in subtask_rates), default=0.0),
            max((r.busy for r in subtask_rates), default=0.0), vertex_colour(position)))
    stats = job.get("checkpoints") or {}
    checkpoints = tuple(CheckpointRow(
        int(c["id"]), str(c.get("type", "checkpoint")), str(c.get("status", "")), c.get("trigger_timestamp"),
        c.get("duration_ms"), c.get("state_size"), str(c.get("acknowledged", "")), c.get("path"), c.get("failure"),
        bool(c.get("unaligned")), int(c.get("persisted_data") or 0))
        for c in stats.get("history") or ())
    restored = stats.get("latest_restored")
    return JobModel(
        job["job_id"], job["name"], job["status"], int(job.get("duration_ms") or 0), int(job.get("num_restarts") or 0),
        job.get("failure"), tuple(vertices), tuple(rows), checkpoints,
        tuple(sorted((str(k), int(v)) for k, v in (stats.get("counts") or {}).items())),
        None if not restored else f"{restored['type']} {restored['id']} ({restored.get('path')})")
