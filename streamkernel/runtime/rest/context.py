"""What the REST handlers read the cluster through: the :class:`RestContext`.

It holds the DispatcherGateway (jobs' published :class:`JobDetails`, results), the
ResourceManager's gateway (its TaskManager snapshots, with the live task metrics of their
last heartbeats) and the cluster's configuration. Every read is of a published snapshot:
no handler can stall a task or a JobMaster.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Mapping, Optional

from streamkernel.common.options import RestOptions, WebOptions
from streamkernel.runtime.core.deployment import ExecutionAttemptId
from streamkernel.runtime.core.metric_sampler import RECENT_WINDOW_NS, MetricSampler
from streamkernel.runtime.rest.async_operations import AsyncOperations
from streamkernel.runtime.rest.job_signature import ReplayGuard

if TYPE_CHECKING:  # pragma: no cover
    from streamkernel.runtime.dispatcher.gateway import DispatcherGateway
    from streamkernel.runtime.jobmaster.job_status import JobDetails, SubtaskDetails
    from streamkernel.runtime.resourcemanager.gateway import ResourceManagerGateway, TaskManagerSnapshot

__all__ = ["RestContext", "now_ms", "subtask_metrics", "RECENT_WINDOW_NS"]


#: The longest a snapshot's answer is reused (seconds), whatever ``web.refresh-interval`` says:
#: a client polling for a change that is no status change (a checkpoint count, records) sees it
#: within a second (Flink's cache lets it age the whole interval).
MAX_ANSWER_AGE_S = 1


def now_ms() -> int:
    """Wall-clock milliseconds since the epoch."""
    return time.time_ns() // 1_000_000


@dataclass
class RestContext:
    """The cluster as the REST handlers see it.

    ``rest_address`` is the endpoint's ``host:port`` once bound (the endpoint sets it);
    ``started_at`` when the JobManager started (ms since the epoch). ``shutdown_cluster``
    stops the whole cluster (``DELETE /cluster``; None: the cluster cannot be shut down that
    way); it is called from a thread of its own, never the endpoint's. ``operations`` holds
    the savepoints and checkpoints triggered through the API (kept ``rest.async.store-duration``).
    ``log_file`` is the JobManager's log file (None: the configuration's ``log.file``, if any).
    ``cluster_secret`` is the key job submissions are signed with (:mod:`.job_signature`; empty:
    none accepted). ``answer_max_age`` is how many seconds a snapshot's answer may be reused
    (``Cache-Control: max-age``, honoured by the front process): ``min(web.refresh-interval,
    1 s)`` in whole seconds (Flink's handlers reuse a job's execution graph for the whole
    ``web.refresh-interval``); 0 (never reused) when the interval is under a second.
    """

    dispatcher: "DispatcherGateway"
    resource_manager: "ResourceManagerGateway"
    configuration: Mapping[str, str] = field(default_factory=dict)
    rest_address: str = ""
    started_at: int = field(default_factory=now_ms)
    shutdown_cluster: Optional[Callable[[], None]] = None
    operations: Optional[AsyncOperations] = None
    cluster_secret: bytes = field(default=b"", repr=False)
    replay_guard: ReplayGuard = field(default_factory=ReplayGuard, repr=False)
    log_file: Optional[str] = None
    answer_max_age: int = field(init=False, default=0)
    sampler: MetricSampler = field(default_factory=MetricSampler, repr=False)

    def __post_init__(self) -> None:
        self.answer_max_age = min(MAX_ANSWER_AGE_S, WebOptions.REFRESH_INTERVAL.get(self.configuration) // 1000)
        if self.operations is None:
            duration = RestOptions.ASYNC_OPERATION_STORE_DURATION.get(self.configuration)
            self.operations = AsyncOperations(duration.to_milliseconds() / 1000.0)

    def taskmanagers(self) -> tuple["TaskManagerSnapshot", ...]:
        """The ResourceManager's snapshot of every registered TaskManager."""
        return self.resource_manager.taskmanager_snapshots()

    def live_metrics(self) -> dict[ExecutionAttemptId, tuple[str, Mapping[str, Any]]]:
        """Every running subtask attempt's (TaskManager id, metrics) of the last heartbeats.

        Metrics carry their counters' growth since about a second ago (or since the previous
        request, when that is longer ago) under ``"recent"``, once an earlier request saw the
        attempt (:class:`~streamkernel.runtime.core.metric_sampler.MetricSampler`): rates and
        the busy / idle / backpressured ratios are then recent ones, as Flink's.
        """
        live: dict[ExecutionAttemptId, tuple[str, Mapping[str, Any]]] = {}
        for tm in self.taskmanagers():
            if tm.last_heartbeat is not None:
                for task in tm.last_heartbeat.tasks:
                    live[task.attempt_id] = (tm.taskmanager_id, task.metrics)
        self.sampler.forget_all_but(live)
        return {attempt: (tm, self.sampler.with_recent(attempt, metrics)) for attempt, (tm, metrics) in live.items()}

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
