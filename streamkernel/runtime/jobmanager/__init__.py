"""The JobManager: a Dispatcher, a ResourceManager and one JobMaster per job (Flink's architecture).

* :class:`Dispatcher` accepts jobs and starts a :class:`JobMaster` for each (session mode).
* :class:`ResourceManager` keeps the registry of every TaskManager's task slots and hands
  them to jobs.
* :class:`JobMaster` runs one job: ExecutionGraph -> slots -> deployed subtasks -> a
  terminal state. Its decisions are the pure :class:`JobStateMachine`; :mod:`.scheduler`
  writes the task deployment descriptors; :mod:`.restart` holds the restart strategies
  (none, fixed delay, failure rate, exponential delay) that decide whether a failed job
  restarts; :mod:`.failure_injection` resolves ``MiniCluster.fail_operator`` targets.
* :class:`JobCheckpointing` drives a job's CheckpointCoordinator for its JobMaster
  (periodic checkpoints, savepoints on request, statistics); :class:`StateRecovery` chooses
  the checkpoint each job attempt starts from and assigns its state to the subtasks.
"""

from __future__ import annotations

from streamkernel.runtime.jobmanager.checkpointing import CheckpointRequest, JobCheckpointing
from streamkernel.runtime.jobmanager.dispatcher import Dispatcher, UnknownJobError
from streamkernel.runtime.jobmanager.job_state_machine import JobStateMachine
from streamkernel.runtime.jobmanager.failure_injection import FailureInjectionError
from streamkernel.runtime.jobmanager.job_status import (
    ExceptionHistoryEntry,
    JobDetails,
    JobResult,
    SubtaskDetails,
    VertexDetails,
)
from streamkernel.runtime.jobmanager.jobmaster import DEFAULT_SLOT_REQUEST_TIMEOUT_MS, JobMaster
from streamkernel.runtime.jobmanager.resource_manager import (
    ResourceManager,
    ResourceManagerStoppedError,
    SlotInfo,
    SlotRequestCancelledError,
    TaskManagerLostError,
)
from streamkernel.runtime.jobmanager.restart import (
    ExponentialDelayRestartStrategy,
    FailureRateRestartStrategy,
    FixedDelayRestartStrategy,
    NoRestartStrategy,
    RestartStrategy,
    create_restart_strategy,
)
from streamkernel.runtime.jobmanager.scheduler import assign_slots, build_deployment_descriptors
from streamkernel.runtime.jobmanager.state_recovery import RecoveryChoice, StateRecovery

__all__ = [
    "Dispatcher",
    "UnknownJobError",
    "ResourceManager",
    "ResourceManagerStoppedError",
    "SlotInfo",
    "SlotRequestCancelledError",
    "TaskManagerLostError",
    "JobMaster",
    "DEFAULT_SLOT_REQUEST_TIMEOUT_MS",
    "JobStateMachine",
    "JobDetails",
    "JobResult",
    "SubtaskDetails",
    "VertexDetails",
    "ExceptionHistoryEntry",
    "RestartStrategy",
    "NoRestartStrategy",
    "FixedDelayRestartStrategy",
    "FailureRateRestartStrategy",
    "ExponentialDelayRestartStrategy",
    "create_restart_strategy",
    "FailureInjectionError",
    "assign_slots",
    "build_deployment_descriptors",
    "JobCheckpointing",
    "CheckpointRequest",
    "StateRecovery",
    "RecoveryChoice",
]
