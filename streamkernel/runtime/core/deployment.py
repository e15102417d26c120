"""What the JobMaster sends a TaskManager to run one subtask: the task deployment descriptor.

A descriptor is plain, picklable data (it crosses process boundaries for the process and
spark backends): which operators to chain, which subtask this is, where its input comes
from and where its output goes, named by :class:`ChannelId` s that the TaskManager's
shuffle environment turns into channels (in-process queues, or TCP connections).
"""

from __future__ import annotations

import enum
import hashlib
from dataclasses import dataclass, field
from typing import Any, Mapping, Optional

from streamkernel.graph.job_graph import JobVertex
from streamkernel.graph.stream_graph import StreamEdge, StreamNode

__all__ = ["ExecutionState", "ChannelId", "InputChannelDescriptor", "OutputDescriptor",
           "TaskDeploymentDescriptor", "ExecutionAttemptId", "hex_id"]


class ExecutionState(enum.Enum):
    """The life of one subtask attempt, as Flink's ExecutionState."""

    CREATED = "CREATED"
    SCHEDULED = "SCHEDULED"
    DEPLOYING = "DEPLOYING"
    INITIALIZING = "INITIALIZING"
    RUNNING = "RUNNING"
    FINISHED = "FINISHED"
    CANCELING = "CANCELING"
    CANCELED = "CANCELED"
    FAILED = "FAILED"

    @property
    def is_terminal(self) -> bool:
        """FINISHED, CANCELED or FAILED."""
        return self in (ExecutionState.FINISHED, ExecutionState.CANCELED, ExecutionState.FAILED)


def hex_id(operator_id: str) -> str:
    """Flink's 32-hex-digit id of an operator (OperatorID) and of the job vertex it heads (JobVertexID):
    the MD5 of its ``operator_id`` (its uid, else its generated id), the same whenever the program runs.

        >>> hex_id("node-1")
        'd50164b9587cab73e417e5ce616bea4e'
    """
    return hashlib.md5(operator_id.encode("utf-8"), usedforsecurity=False).hexdigest()


@dataclass(frozen=True, order=True)
class ExecutionAttemptId:
    """One attempt of one subtask: (job, job vertex, subtask index, attempt number)."""

    job_id: str
    vertex_id: int
    subtask_index: int
    attempt_number: int = 0


@dataclass(frozen=True, order=True)
class ChannelId:
    """One channel: from ``source_subtask`` of the job edge ``edge_index`` to ``target_subtask``.

    ``attempt`` separates the channels of successive job attempts after a restart.
    """

    job_id: str
    edge_index: int
    source_subtask: int
    target_subtask: int
    attempt: int = 0


@dataclass(frozen=True)
class InputChannelDescriptor:
    """An input channel of a task: its id and which input (0, or 1 for the second input of a two-input head)."""

    channel_id: ChannelId
    input_index: int


@dataclass(frozen=True)
class OutputDescriptor:
    """One non-chained out edge of the chain: the StreamEdge (partitioner, side-output tag) and
    its channels, ordered by target subtask (channel i goes to downstream subtask i)."""

    stream_edge: StreamEdge
    channel_ids: tuple[ChannelId, ...]


@dataclass(frozen=True, eq=False)
class TaskDeploymentDescriptor:
    """Everything a TaskManager needs to run one subtask of a job vertex."""

    job_id: str
    job_name: str
    job_vertex: JobVertex
    nodes: tuple[StreamNode, ...]
    chain_edges: tuple[StreamEdge, ...]
    subtask_index: int
    inputs: tuple[InputChannelDescriptor, ...]
    outputs: tuple[OutputDescriptor, ...]
    attempt_number: int = 0
    configuration: Mapping[str, str] = field(default_factory=dict)
    job_parameters: Mapping[str, str] = field(default_factory=dict)
    restored_state: Optional[Mapping[str, Any]] = None
    #: For each output channel whose consumer runs in *another* TaskManager process: the
    #: (host, port) of that TaskManager's data listener. Channels not listed are in-process.
    shuffle_addresses: Mapping[ChannelId, tuple[str, int]] = field(default_factory=dict)

    @property
    def attempt_id(self) -> ExecutionAttemptId:
        """The id of this subtask attempt."""
        return ExecutionAttemptId(self.job_id, self.job_vertex.id, self.subtask_index, self.attempt_number)

    @property
    def parallelism(self) -> int:
        """The job vertex's parallelism."""
        return self.job_vertex.parallelism

    @property
    def name_with_subtask(self) -> str:
        """``"Map -> Filter (2/4)"``."""
        return f"{self.job_vertex.name} ({self.subtask_index + 1}/{self.job_vertex.parallelism})"
