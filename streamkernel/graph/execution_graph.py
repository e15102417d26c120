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

from streamkernel.graph.job_graph import JobGraph, JobVertex

__all__ = ["SlotId", "ExecutionVertex", "ExecutionEdge", "ExecutionGraph", "build_execution_graph", "slots_needed"]


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
    """Slots the job needs: per slot sharing group the max parallelism (sharing), else the sum."""
    raise NotImplementedError("being written")


def build_execution_graph(job_graph: JobGraph, taskmanagers: int = 1, slots_per_taskmanager: Optional[int] = None,
                          slot_sharing: bool = True) -> ExecutionGraph:
    """Expand every job vertex into subtasks and place them in slots.

    ``slots_per_taskmanager=None`` sizes a single TaskManager to fit the job. Raises
    NotEnoughSlotsError naming the shortfall when the cluster is too small.
    """
    raise NotImplementedError("being written")
