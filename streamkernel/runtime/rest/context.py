"""What the REST handlers read the cluster through: the :class:`RestContext`.

It holds the DispatcherGateway (jobs' published :class:`JobDetails`, results), the
ResourceManager's gateway (its TaskManager snapshots, with the live task metrics of their
last heartbeats) and the cluster's configuration. Every read is of a published snapshot:
no handler can stall a task or a JobMaster.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Mapping, Optional

from streamkernel.runtime.core.deployment import ExecutionAttemptId

if TYPE_CHECKING:  # pragma: no cover
    from streamkernel.runtime.dispatcher.gateway import DispatcherGateway
    from streamkernel.runtime.jobmaster.job_status import JobDetails, SubtaskDetails
    from streamkernel.runtime.resourcemanager.gateway import ResourceManagerGateway, TaskManagerSnapshot

__all__ = ["RestContext", "now_ms"]


def now_ms() -> int:
    """Wall-clock milliseconds since the epoch."""
    return time.time_ns() // 1_000_000


@dataclass
class RestContext:
    """The cluster as the REST handlers see it.

    ``rest_address`` is the endpoint's ``host:port`` once bound (the endpoint sets it);
    ``started_at`` when the JobManager started (ms since the epoch).
    """

    dispatcher: "DispatcherGateway"
    resource_manager: "ResourceManagerGateway"
    configuration: Mapping[str, str] = field(default_factory=dict)
    rest_address: str = ""
    started_at: int = field(default_factory=now_ms)

    def taskmanagers(self) -> tuple["TaskManagerSnapshot", ...]:
        """The ResourceManager's snapshot of every registered TaskManager."""
        return self.resource_manager.taskmanager_snapshots()

    def live_metrics(self) -> dict[ExecutionAttemptId, tuple[str, Mapping[str, Any]]]:
        """Every running subtask attempt's (TaskManager id, metrics) of the last heartbeats."""
        live: dict[ExecutionAttemptId, tuple[str, Mapping[str, Any]]] = {}
        for tm in self.taskmanagers():
            if tm.last_heartbeat is not None:
                for task in tm.last_heartbeat.tasks:
                    live[task.attempt_id] = (tm.taskmanager_id, task.metrics)
        return live

    def job_configuration(self, details: "JobDetails") -> dict[str, str]:
        """The job's effective configuration: the cluster's keys, overridden by the job's own."""
        own: Mapping[str, Any] = {}
        if details.job_graph is not None:
            own = details.job_graph.stream_graph.configuration
        return {**dict(self.configuration), **{k: str(v) for k, v in own.items()}}


def subtask_metrics(details: "JobDetails", subtask: "SubtaskDetails",
                    live: Mapping[ExecutionAttemptId, tuple[str, Mapping[str, Any]]]) -> Optional[Mapping[str, Any]]:
    """A subtask's metrics: live (last heartbeat) while its attempt runs, else its final ones."""
    attempt = ExecutionAttemptId(details.job_id, subtask.vertex_id, subtask.subtask_index, subtask.attempt_number)
    found = live.get(attempt)
    if found is not None:
        return found[1]
    return subtask.metrics
