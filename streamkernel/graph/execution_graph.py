"""The ExecutionGraph: every job vertex expanded into its parallel subtasks, placed in slots.

An :class:`ExecutionVertex` is one subtask (``Map -> Filter (2/4)``); the graph places
each one into a task slot of a cluster of ``taskmanagers`` x ``slots_per_taskmanager``.
With slot sharing (Flink's default) a slot holds one subtask of every vertex of a slot
sharing group, so a group needs as many slots as its largest parallelism; without it,
every subtask takes a slot of its own, so the job needs the sum of all parallelisms.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from streamkernel.errors import InvalidProgramError, NotEnoughSlotsError
from streamkernel.graph.job_graph import JobGraph
from streamkernel.graph.partitioners import StreamPartitioner

__all__ = ["SlotId", "ExecutionVertex", "ExecutionEdge", "ExecutionGraph", "build_execution_graph", "fit_slots",
           "slots_needed", "subtask_channels"]


@dataclass(frozen=True, order=True)
class SlotId:
    """A task slot: slot ``slot_index`` of TaskManager ``taskmanager_index`` (both from 0)."""

    taskmanager_index: int
    slot_index: int

    def __str__(self) -> str:
        return f"TM{self.taskmanager_index + 1}/slot{self.slot_index + 1}"


@dataclass(frozen=True, eq=False)
class ExecutionVertex:
    """One subtask of a job vertex: what one Task thread runs, and where."""

    job_vertex_id: int
    subtask_index: int
    parallelism: int
    job_vertex_name: str
    slot: Optional[SlotId] = None

    @property
    def name(self) -> str:
        """Flink's task name with subtasks, e.g. ``"Map -> Filter (2/4)"`` (1-based)."""
        return f"{self.job_vertex_name} ({self.subtask_index + 1}/{self.parallelism})"


@dataclass(frozen=True, eq=False)
class ExecutionEdge:
    """A channel from one subtask to another, through the job edge's partitioner."""

    source: tuple[int, int]  # (job vertex id, subtask index)
    target: tuple[int, int]
    partitioner_name: str


@dataclass(frozen=True, eq=False)
class ExecutionGraph:
    """All subtasks of a job with their slots, for a cluster of the given size."""

    job_graph: JobGraph
    vertices: tuple[ExecutionVertex, ...]
    edges: tuple[ExecutionEdge, ...]
    taskmanagers: int
    slots_per_taskmanager: int
    slot_sharing: bool
    slots_needed: int

    @property
    def total_slots(self) -> int:
        """Slots the cluster offers."""
        return self.taskmanagers * self.slots_per_taskmanager

    def subtasks(self, job_vertex_id: int) -> tuple[ExecutionVertex, ...]:
        """The subtasks of one job vertex, by index."""
        return tuple(v for v in self.vertices if v.job_vertex_id == job_vertex_id)

    def in_slot(self, slot: SlotId) -> tuple[ExecutionVertex, ...]:
        """The subtasks placed in ``slot``."""
        return tuple(v for v in self.vertices if v.slot == slot)

    @property
    def used_slots(self) -> tuple[SlotId, ...]:
        """Slots that hold at least one subtask, sorted."""
        return tuple(sorted({v.slot for v in self.vertices if v.slot is not None}))

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict:
        from streamkernel.viz.display import graph_mimebundle  # lazy: layering

        return graph_mimebundle(self)

    def __repr__(self) -> str:
        return (f"ExecutionGraph({self.job_graph.job_name!r}, {len(self.vertices)} subtasks, "
                f"{self.slots_needed} slots needed of {self.total_slots})")


def slots_needed(job_graph: JobGraph, slot_sharing: bool = True) -> int:
    """Slots the job needs: per slot sharing group the max parallelism (sharing), else the sum.

    With slot sharing (Flink's default) one slot holds one subtask of every vertex of a
    slot sharing group, so ``Source -> Map -> key_by -> Window -> Sink`` at parallelism 4
    needs 4 slots; without it every subtask needs its own slot: 4 per vertex.
    """
    if not slot_sharing:
        return sum(v.parallelism for v in job_graph.vertices)
    largest: dict[str, int] = {}
    for v in job_graph.vertices:
        largest[v.slot_sharing_group] = max(largest.get(v.slot_sharing_group, 0), v.parallelism)
    return sum(largest.values())


def subtask_channels(partitioner: StreamPartitioner, upstream_parallelism: int,
                     downstream_parallelism: int) -> tuple[tuple[int, int], ...]:
    """The (upstream subtask, downstream subtask) pairs a job edge connects, sorted.

    Pointwise partitioners (FORWARD, RESCALE) connect as Flink's POINTWISE distribution
    pattern: with equal parallelism subtask *i* to subtask *i*; with more upstream
    subtasks each downstream subtask reads a contiguous block of them; with fewer, each
    upstream subtask writes to a contiguous block of downstream subtasks. Every other
    partitioner connects all to all.

    >>> from streamkernel.graph.partitioners import RescalePartitioner
    >>> subtask_channels(RescalePartitioner(), 4, 2)
    ((0, 0), (1, 0), (2, 1), (3, 1))
    """
    p_u, p_d = upstream_parallelism, downstream_parallelism
    if p_u < 1 or p_d < 1:
        raise InvalidProgramError(f"parallelism must be >= 1, got upstream {p_u} and downstream {p_d}")
    if not partitioner.is_pointwise:
        return tuple((u, d) for u in range(p_u) for d in range(p_d))
    if p_u == p_d:
        return tuple((i, i) for i in range(p_u))
    pairs: list[tuple[int, int]] = []
    if p_u > p_d:
        for d in range(p_d):
            pairs.extend((u, d) for u in range(d * p_u // p_d, (d + 1) * p_u // p_d))
    else:
        for u in range(p_u):
            start = (u * p_d + p_u - 1) // p_u
            end = ((u + 1) * p_d + p_u - 1) // p_u
            pairs.extend((u, d) for d in range(start, end))
    return tuple(sorted(pairs))


def build_execution_graph(job_graph: JobGraph, taskmanagers: int = 1, slots_per_taskmanager: Optional[int] = None,
                          slot_sharing: bool = True) -> ExecutionGraph:
    """Expand every job vertex into subtasks and place them in slots.

    ``slots_per_taskmanager=None`` sizes the TaskManagers to fit the job: one
    TaskManager with exactly :func:`slots_needed` slots by default (with several, the
    needed slots spread evenly, rounded up). Placement follows Flink's default: slots
    fill TaskManager 1 first, then TaskManager 2 ... With slot sharing, subtask *i* of
    every vertex of a group goes into the group's *i*-th slot and groups take consecutive
    slots; without it, subtasks take slots in vertex (topological) order, then by index.
    Raises NotEnoughSlotsError naming the shortfall when the cluster is too small.
    """
    slots_per_taskmanager = fit_slots(job_graph, taskmanagers, slots_per_taskmanager, slot_sharing)
    needed = slots_needed(job_graph, slot_sharing)

    def slot(index: int) -> SlotId:
        return SlotId(index // slots_per_taskmanager, index % slots_per_taskmanager)

    vertices: list[ExecutionVertex] = []
    group_offset: dict[str, int] = {}
    next_slot = 0
    for jv in job_graph.vertices:
        if slot_sharing:
            if jv.slot_sharing_group not in group_offset:
                group_offset[jv.slot_sharing_group] = next_slot
                next_slot += _group_width(job_graph, jv.slot_sharing_group)
            first = group_offset[jv.slot_sharing_group]
        else:
            first, next_slot = next_slot, next_slot + jv.parallelism
        vertices.extend(ExecutionVertex(jv.id, i, jv.parallelism, jv.name, slot(first + i))
                        for i in range(jv.parallelism))
    edges = tuple(
        ExecutionEdge((je.source_vertex_id, u), (je.target_vertex_id, d), je.partitioner.name)
        for je in job_graph.edges
        for u, d in subtask_channels(je.partitioner, job_graph.vertex(je.source_vertex_id).parallelism,
                                     job_graph.vertex(je.target_vertex_id).parallelism)
    )
    return ExecutionGraph(job_graph=job_graph, vertices=tuple(vertices), edges=edges, taskmanagers=taskmanagers,
                          slots_per_taskmanager=slots_per_taskmanager, slot_sharing=slot_sharing,
                          slots_needed=needed)


def fit_slots(job_graph: JobGraph, taskmanagers: int = 1, slots_per_taskmanager: Optional[int] = None,
              slot_sharing: bool = True) -> int:
    """The slots per TaskManager of a cluster of ``taskmanagers`` that runs the job.

    ``slots_per_taskmanager=None`` sizes the TaskManagers to fit the job (the needed slots
    spread evenly, rounded up). Raises NotEnoughSlotsError naming the shortfall when the
    cluster is too small: the check of :func:`build_execution_graph`, without placing subtasks.
    """
    _check_count("taskmanagers", taskmanagers)
    needed = slots_needed(job_graph, slot_sharing)
    if slots_per_taskmanager is None:
        slots_per_taskmanager = max(1, -(-needed // taskmanagers))
    _check_count("slots_per_taskmanager", slots_per_taskmanager)
    if needed > taskmanagers * slots_per_taskmanager:
        raise NotEnoughSlotsError(_shortfall_message(job_graph.job_name, needed, slot_sharing, taskmanagers,
                                                     slots_per_taskmanager))
    return slots_per_taskmanager


def _group_width(job_graph: JobGraph, group: str) -> int:
    """Slots a slot sharing group takes: its largest parallelism."""
    return max(v.parallelism for v in job_graph.vertices if v.slot_sharing_group == group)


def _check_count(argument: str, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidProgramError(f"{argument} must be an int >= 1, got {value!r}")
    if value < 1:
        raise InvalidProgramError(f"{argument} must be >= 1, got {value}")


def _plural(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def _shortfall_message(job_name: str, needed: int, slot_sharing: bool, taskmanagers: int,
                       slots_per_taskmanager: int) -> str:
    rule = ("slot sharing on: the largest parallelism per slot sharing group" if slot_sharing
            else "slot sharing off: one slot per subtask, the sum of all parallelisms")
    available = taskmanagers * slots_per_taskmanager
    return (f"job {job_name!r} needs {_plural(needed, 'task slot')} ({rule}) but the cluster has "
            f"{_plural(taskmanagers, 'TaskManager')} x {_plural(slots_per_taskmanager, 'slot')} = {available}; "
            f"{_plural(needed - available, 'slot')} short. Add TaskManagers or slots, or lower the parallelism.")
